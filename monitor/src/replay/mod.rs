//! Replays.

pub(crate) mod activity;
pub(crate) mod crossing;
pub(crate) mod latency;
pub(crate) mod load_run;
pub(crate) mod merge;
pub(crate) mod wakeups;
