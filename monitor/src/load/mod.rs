//! Loading a run.

#[cfg(test)]
pub(crate) mod chunky_logs;
pub(crate) mod groups;
pub(crate) mod ranks;
pub(crate) mod run_log;
pub(crate) mod sampled;
pub mod scan;
