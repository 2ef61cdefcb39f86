//! Stream benchmarks on rill and their peer baselines, and the `rill-bench`
//! command that runs them side by side.
//!
//! - [`bench`](mod@bench): parameters, measurements and verifiers shared by every engine.
//! - [`engines`]: the engine abstraction: [`Engine`](engines::Engine) (which
//!   engine), [`Bench`](engines::Bench) (a benchmark run on an engine, its
//!   parameters its command line), [`Job`](engines::Job) (a configuration
//!   of one) and [`Jobs`](engines::Jobs) (a command line's jobs);
//!   [`registry`]: [`registry::run`], which runs a job on an engine. The
//!   registration of every benchmark is its subcommand,
//!   [`cli::Command::bench`].
//! - [`net`]: what differs between the blocking engines (a bounded
//!   channel, spawning a task, the join), and [`nets`]: the pipe, the ring
//!   and the hand-off written once over it.
//! - [`nets`], [`micro`], [`wordcount_bench`], [`sieve_bench`]: each
//!   benchmark's [`Bench`](engines::Bench) (its run on each engine).
//! - [`mapping`]: `--mapping` and what it means for a network;
//!   [`dist_place`]: what it means across ranks (`parts` as a cut of the
//!   network's stream graph).
//! - [`kernels`]: the applications' computations (DES, MC, RT, ANT), runtime-free.
//! - [`apps`]: the applications as stream networks of named tasks on rill.
//! - [`peers`]: the same benchmarks on OS threads and on tokio.
//! - [`cli`], [`report`] and [`suite`]: the command line and its output;
//!   `suite` runs the applications, `compare` and `all`; [`table`] prints
//!   their tables.
//! - [`line`](mod@line): the machine's floor under a hop between workers (a cache
//!   line's round trip between two cores).
//! - [`ab`]: `rill-bench ab`, A/B measurements of builds and monitoring
//!   modes.

pub mod ab;
pub mod apps;
pub mod bench;
pub mod cli;
pub mod dist_place;
pub mod engines;
pub mod kernels;
pub mod line;
pub mod mapping;
pub mod micro;
pub mod net;
pub mod nets;
pub mod peers;
pub mod registry;
pub mod report;
pub mod sieve_bench;
pub mod suite;
pub mod table;
pub mod wordcount_bench;
