//! The engine abstraction, in three parts:
//!
//! - [`Engine`]: which engine a run is on (rill, OS threads, tokio, or the
//!   word count's sequential loop): a name, nothing more.
//! - [`Bench`]: one benchmark's parameters, validated, run on an engine.
//!   Each benchmark implements it in its own file ([`crate::nets`] for the
//!   pipe and the ring, [`crate::micro`], [`crate::wordcount_bench`],
//!   [`crate::sieve_bench`]).
//! - [`Job`]: the registration: one variant per benchmark, and the one
//!   match ([`Job::bench`]) that hands out its [`Bench`].
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
//! [`crate::report::Record`]). The sieve, whose chain of filters grows from
//! inside running tasks, is still written per engine.
//!
//! [`crate::registry::run`] runs a job on an engine.

use std::fmt;

use anyhow::{anyhow, Result};
use serde::Serialize;

use crate::bench::{
    Measurement, MicroParams, ParamError, Params, PipeParams, RingParams, SieveParams,
    WordcountParams,
};

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
pub trait Bench {
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
}

/// The monitoring mode as the record spells it.
pub fn monitor_name(m: Option<rill::MonitorFlags>) -> Option<String> {
    m.map(|f| f.to_string())
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
    /// The job's benchmark: the registration of every benchmark.
    pub fn bench(&self) -> &dyn Bench {
        match self {
            Job::Pipe(p) => p,
            Job::Ring(p) => p,
            Job::Wordcount(p) => p,
            Job::Sieve(p) => p,
            Job::Micro(p) => p,
        }
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
