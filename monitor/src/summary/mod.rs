//! Summary.

pub(crate) mod latency;
pub(crate) mod summarize;
