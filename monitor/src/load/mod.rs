//! Loading a run.

pub(crate) mod aggregate;
pub(crate) mod bytes;
pub(crate) mod chunks;
#[cfg(test)]
pub(crate) mod chunky_logs;
pub(crate) mod files;
pub(crate) mod groups;
pub(crate) mod ids;
pub(crate) mod merge_files;
pub(crate) mod model;
pub(crate) mod open;
pub(crate) mod pool;
pub(crate) mod ranks;
pub(crate) mod raw_latency;
pub(crate) mod sampled;
pub(crate) mod samples;
pub mod scan;
pub(crate) mod scan_file;
pub(crate) mod worker_log;
