//! Stream benchmarks on rill (skeleton).
pub mod rill_runs;
