//! Stream benchmarks on rill and their peer baselines, and the `rill-bench`
//! command that runs them side by side.
//!
//! - [`bench`](mod@bench): parameters, measurements and verifiers shared by every engine.
//! - [`engines`]: the [`Engine`](engines::Engine) trait every engine
//!   implements, and [`engines::run`], which runs a job on one.
//! - [`rill_engine`]: the rill engine, on the networks of [`rill_runs`].
//! - [`rill_runs`]: the rill networks themselves.
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
pub mod engines;
pub mod kernels;
pub mod line;
pub mod peers;
pub mod report;
pub mod rill_engine;
pub mod rill_runs;
pub mod suite;
pub mod table;
