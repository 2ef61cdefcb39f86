//! Passes over all workers' periods merged in time order, and what they
//! measure. Imports `render/` and `load/`; within, lowest first (tests
//! aside: `merge`'s load a run with `load_run`):
//!
//! | module | what |
//! |--------|------|
//! | `merge` | the periods (and worker waits) of all logs in time order |
//! | `wakeups` | wake-ups matched to the waits they end |
//! | `grid` | the run's span cut into windows, per-window sums |
//! | `activity_model` | what the activity pass measures (busy, ready, blocked time per task, stream, worker) |
//! | `sampled_activity` | the same from a sample-mode run's windows |
//! | `activity` | the activity pass |
//! | `latency_feed` | a log's periods in a compact form, fed to the latency replay by the load's scan |
//! | `latency` | the latency replay |
//! | `load_run` | [`load_run`](crate::load_run): the loader with the latency replay beside its scans |
//! | `chunky_logs` | (tests) a run with several chunks per log |
//! | `crossing` | the delays of crossing workers and ranks ([`CrossingDelays`](crate::CrossingDelays)) |

pub(crate) mod activity;
pub(crate) mod activity_model;
#[cfg(test)]
pub(crate) mod chunky_logs;
pub(crate) mod crossing;
pub(crate) mod grid;
pub(crate) mod latency;
pub(crate) mod latency_feed;
pub(crate) mod load_run;
pub(crate) mod merge;
pub(crate) mod sampled_activity;
pub(crate) mod wakeups;
