//! Replays.

pub(crate) mod activity;
pub(crate) mod activity_model;
pub(crate) mod crossing;
pub(crate) mod grid;
pub(crate) mod latency;
pub(crate) mod load_run;
pub(crate) mod merge;
pub(crate) mod sampled_activity;
pub(crate) mod wakeups;
