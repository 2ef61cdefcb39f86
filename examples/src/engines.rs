//! The engines a benchmark runs on, behind one trait: [`Engine`], implemented
//! by rill ([`crate::rill_engine::Rill`]), its two peers
//! ([`crate::peers::threads::Threads`], [`crate::peers::tokio_rt::Tokio`]) and
//! the word count's sequential loop ([`Sequential`]); and [`Job`], one
//! benchmark configuration. [`crate::registry`] lists the engines and runs
//! a job on one.

use std::fmt;

use anyhow::{anyhow, Result};

use crate::bench::{
    Measurement, MicroParams, MicroRow, ParamError, PipeParams, RingParams, SieveParams,
    WordcountParams,
};
use crate::kernels::wordcount;

/// Something that runs the benchmarks: each method runs one benchmark once,
/// on parameters already validated, verifies the result and returns what it
/// measured. A benchmark an engine does not have returns an error (the
/// default).
pub trait Engine: Sync {
    /// The engine's name as the command line and the JSON output spell it.
    fn name(&self) -> &'static str;

    /// What the engine is, in a line (for `--help`).
    fn about(&self) -> &'static str;

    /// The pipe ([`PipeParams`]).
    fn pipe(&self, _p: &PipeParams) -> Result<Measurement> {
        Err(lacks(self.name(), "pipe"))
    }

    /// The ring ([`RingParams`]).
    fn ring(&self, _p: &RingParams) -> Result<Measurement> {
        Err(lacks(self.name(), "ring"))
    }

    /// One micro row ([`MicroParams`]).
    fn micro(&self, _p: &MicroParams) -> Result<Measurement> {
        Err(lacks(self.name(), "micro"))
    }

    /// The word count ([`WordcountParams`]).
    fn wordcount(&self, _p: &WordcountParams) -> Result<Measurement> {
        Err(lacks(self.name(), "wordcount"))
    }

    /// The prime sieve ([`SieveParams`]).
    fn sieve(&self, _p: &SieveParams) -> Result<Measurement> {
        Err(lacks(self.name(), "sieve"))
    }
}

fn lacks(engine: &str, bench: &str) -> anyhow::Error {
    anyhow!("{bench} has no {engine} engine")
}

impl fmt::Debug for dyn Engine + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for dyn Engine + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Engines are the same when their names are.
impl PartialEq for dyn Engine + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// No network: the plain sequential loop ([`wordcount::count_words`]) on
/// the calling thread. Only the word count has one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequential;

impl Engine for Sequential {
    fn name(&self) -> &'static str {
        "sequential"
    }

    fn about(&self) -> &'static str {
        "the plain sequential loop, no network (wordcount only)"
    }

    fn wordcount(&self, p: &WordcountParams) -> Result<Measurement> {
        let start = std::time::Instant::now();
        let counts = wordcount::count_words(p.corpus.text());
        let wall = start.elapsed();
        Ok(p.measured(wall, &counts)?)
    }
}

/// One benchmark configuration, run on each engine.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    /// A pipe run.
    Pipe(PipeParams),
    /// A ring run.
    Ring(RingParams),
    /// A word count run.
    Wordcount(WordcountParams),
    /// A prime sieve run.
    Sieve(SieveParams),
    /// A micro row.
    Micro(MicroParams),
}

impl Job {
    /// The benchmark's name: `pipe`, `ring`, `wordcount`, `sieve` or `micro`.
    pub fn bench(&self) -> &'static str {
        match self {
            Job::Pipe(_) => "pipe",
            Job::Ring(_) => "ring",
            Job::Wordcount(_) => "wordcount",
            Job::Sieve(_) => "sieve",
            Job::Micro(_) => "micro",
        }
    }

    /// Checks the job's parameters (the `validate` of each parameter set).
    pub fn validate(&self) -> Result<(), ParamError> {
        match self {
            Job::Pipe(p) => p.validate(),
            Job::Ring(p) => p.validate(),
            Job::Wordcount(p) => p.validate(),
            Job::Sieve(p) => p.validate(),
            Job::Micro(p) => p.validate(),
        }
    }

    /// What `ops` counts: `word` for the word count, `prime` for the
    /// sieve, `op` otherwise.
    pub fn op_name(&self) -> &'static str {
        match self {
            Job::Wordcount(_) => "word",
            Job::Sieve(_) => "prime",
            _ => "op",
        }
    }

    /// A short label for progress lines: the benchmark, or the micro row.
    pub fn label(&self) -> String {
        match self {
            Job::Micro(p) => format!("micro {}", p.row),
            _ => self.bench().to_string(),
        }
    }

    /// Whether the job's figure is a CPU share rather than ns per operation.
    pub fn is_cpu_share(&self) -> bool {
        matches!(self, Job::Micro(p) if p.row == MicroRow::IdleCpu)
    }
}
