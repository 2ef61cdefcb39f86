//! The engine abstraction, in four parts:
//!
//! - [`Engine`]: which engine a run is on (rill, OS threads, tokio, or the
//!   word count's sequential loop): a name, nothing more.
//! - [`Bench`]: one benchmark's parameters, validated, run on an engine.
//!   Each benchmark implements it in its own file ([`crate::nets`] for the
//!   pipe and the ring, [`crate::micro`], [`crate::wordcount_bench`],
//!   [`crate::sieve_bench`]); its parameters are its command line too
//!   (`clap::Args`, with the options every benchmark shares flattened in:
//!   [`crate::bench::BenchOpts`]).
//! - [`Job`]: one configuration of a benchmark, its parameters shared.
//! - [`Jobs`]: a benchmark's command line as the jobs it asks for (one,
//!   for parameters that are their own command line; a job per row for
//!   `micro`; the word count makes its text first).
//!
//! Adding a benchmark touches its own file (its parameters, their `Bench`
//! and their arguments) and one registration: its variant of
//! [`crate::cli::Command`] and that variant's line in
//! [`crate::cli::Command::bench`].
//!
//! Where a benchmark is the same network on every blocking engine (the
//! pipe, the ring, the hand-off and the round trip, the word count), its
//! network is one generic function over [`crate::net::Net`], which is what
//! differs between rill and OS threads: a bounded channel, a named spawn, a
//! join (and a merge of several inputs). Each engine instantiates it, so
//! rill's hot loops are monomorphised, with no `dyn` on a per-message path.
//! tokio is not a `Net`: its tasks are futures, and blocking inside them
//! would measure something no tokio program does; its copies are async
//! and share the rest: the parameters, the per-message protocol and its
//! checks ([`crate::bench::verify_ring`], [`crate::bench::SequenceCheck`],
//! [`crate::bench::SumCheck`]), the word count's splitting
//! ([`crate::kernels::wordcount::Words`]), and the measurement ([`crate::bench::Measurement`], rendered by
//! [`crate::report::Record`]); the sieve's tokio copy shares the filter's
//! step ([`crate::kernels::sieve::Filter`]).
//!
//! [`crate::registry::run`] runs a job on an engine.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use serde::Serialize;

use crate::bench::{Measurement, ParamError, Params};

/// An engine a benchmark runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// rill's lightweight tasks and streams.
    Rill,
    /// One OS thread per task, `crossbeam_channel::bounded` channels.
    Threads,
    /// tokio tasks on a multi-thread runtime, `tokio::sync::mpsc` channels.
    Tokio,
    /// No network: the plain sequential loop (the word count only).
    Sequential,
}

impl Engine {
    /// Every engine that runs a network, rill first (the order in which the
    /// command line runs them).
    pub const NETWORKS: [Engine; 3] = [Engine::Rill, Engine::Threads, Engine::Tokio];

    /// The engines of the word count: the networks, then the sequential loop.
    pub const WORDCOUNT: [Engine; 4] = [
        Engine::Rill,
        Engine::Threads,
        Engine::Tokio,
        Engine::Sequential,
    ];

    /// The engine's name as the command line and the JSON output spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Engine::Rill => "rill",
            Engine::Threads => "threads",
            Engine::Tokio => "tokio",
            Engine::Sequential => "sequential",
        }
    }

    /// What the engine is, in a line (for `--help`).
    pub const fn about(self) -> &'static str {
        match self {
            Engine::Rill => "rill's lightweight tasks and streams",
            Engine::Threads => "one OS thread per task, crossbeam-channel bounded channels",
            Engine::Tokio => "tokio tasks on a multi-thread runtime, tokio mpsc bounded channels",
            Engine::Sequential => "the plain sequential loop, no network (wordcount only)",
        }
    }

    /// The engine called `name`, if there is one.
    pub fn by_name(name: &str) -> Option<Engine> {
        Engine::WORDCOUNT.into_iter().find(|e| e.name() == name)
    }

    /// The error of a benchmark this engine does not run.
    pub fn lacks(self, bench: &str) -> anyhow::Error {
        anyhow!("{bench} has no {} engine", self.name())
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One benchmark, its parameters given: what it is called, whether it can
/// run with them, and a run on one engine (verified, measured). A benchmark
/// an engine does not have is an error ([`Engine::lacks`]).
pub trait Bench: AsAny {
    /// The benchmark's name (`pipe`, `ring`...), as the JSON spells it.
    fn name(&self) -> &'static str;

    /// Checks that the benchmark can run with these parameters.
    fn validate(&self) -> Result<(), ParamError>;

    /// Runs the benchmark once on `engine`, parameters already validated.
    fn run(&self, engine: Engine) -> Result<Measurement>;

    /// What `ops` counts.
    fn op_name(&self) -> &'static str {
        "op"
    }

    /// The parameters as a run's record has them.
    fn params(&self) -> Params;

    /// The parameters in one line, for a table's title.
    fn title(&self) -> String;

    /// A short label for progress lines.
    fn label(&self) -> String {
        self.name().to_string()
    }

    /// Whether the tables show the wall time in milliseconds rather than
    /// ns per operation.
    fn shows_wall_ms(&self) -> bool {
        false
    }

    /// The unit of the figure the tables show.
    fn unit(&self) -> &'static str {
        if self.shows_wall_ms() {
            "ms"
        } else {
            "ns/op"
        }
    }

    /// The figure the tables show for a run.
    fn figure(&self, m: &Measurement) -> Option<f64> {
        if self.shows_wall_ms() {
            Some(m.wall.as_secs_f64() * 1e3)
        } else {
            m.ns_per_op()
        }
    }

    /// Whether a rill run may cross workers (then the tables print the
    /// machine's floor under a hop beside it).
    fn crosses_workers(&self) -> bool {
        false
    }

    /// What tells this configuration apart from the benchmark's others in
    /// `rill-bench all` (the pipe's placement, the word count's format of
    /// words, the sieve's mapping), as a name and a value.
    fn variant(&self) -> Option<(&'static str, String)> {
        None
    }

    /// Where rill puts the tasks, in words: the mapping's name, or a
    /// placement's (`-` where rill places nothing itself).
    fn rill_mapping(&self) -> String {
        "-".into()
    }
}

/// A benchmark's parameters as [`Any`], so that a [`Job`] hands them back
/// as their type ([`Job::params`]).
pub trait AsAny {
    /// `self` as `Any`.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The monitoring mode as the record spells it.
pub fn monitor_name(m: Option<rill::MonitorFlags>) -> Option<String> {
    m.map(|f| f.to_string())
}

/// One benchmark configuration, run on each engine: a benchmark's
/// parameters, shared.
#[derive(Clone)]
pub struct Job(Arc<dyn Bench + Send + Sync>);

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Job").field(&self.0.title()).finish()
    }
}

impl Job {
    /// The job of benchmark `b`.
    pub fn new(b: impl Bench + Send + Sync + 'static) -> Job {
        Job(Arc::new(b))
    }

    /// The job's benchmark.
    pub fn bench(&self) -> &dyn Bench {
        &*self.0
    }

    /// Whether `other` is this job (a clone of it).
    pub fn is(&self, other: &Job) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The job's parameters when they are a `P` (for tests and callers
    /// that know the benchmark).
    pub fn params<P: Bench + 'static>(&self) -> Option<&P> {
        // Through the `dyn Bench`, not the `Arc`, which is `Any` itself.
        let any: &dyn Any = self.bench().as_any();
        any.downcast_ref()
    }

    /// The benchmark's name: `pipe`, `ring`, `wordcount`, `sieve` or `micro`.
    pub fn name(&self) -> &'static str {
        self.bench().name()
    }

    /// Checks the job's parameters.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.bench().validate()
    }

    /// What `ops` counts: `word` for the word count, `prime` for the
    /// sieve, `op` otherwise.
    pub fn op_name(&self) -> &'static str {
        self.bench().op_name()
    }

    /// A short label for progress lines: the benchmark, or the micro row.
    pub fn label(&self) -> String {
        self.bench().label()
    }
}

/// A benchmark's command line (the parameters its subcommand parses) as
/// the jobs it asks for. A benchmark's parameters are their own command
/// line ([`Bench`] and `clap::Args`: one job); a command line that asks for
/// several jobs, or makes its parameters from what it parses, says how.
pub trait Jobs: fmt::Debug {
    /// The benchmark's name.
    fn name(&self) -> &'static str;

    /// The jobs, each validated.
    fn jobs(&self) -> Result<Vec<Job>, ParamError>;

    /// Every engine the benchmark runs on (`--engine all`).
    fn engines(&self) -> &'static [Engine] {
        &Engine::NETWORKS
    }
}

impl<P: Bench + Clone + fmt::Debug + Send + Sync + 'static> Jobs for P {
    fn name(&self) -> &'static str {
        Bench::name(self)
    }

    fn jobs(&self) -> Result<Vec<Job>, ParamError> {
        self.validate()?;
        Ok(vec![Job::new(self.clone())])
    }
}
