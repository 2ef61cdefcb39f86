//! [`summarize`](crate::summarize): a run's totals, throughput, latency and
//! jitter. Imports `render/`, `load/` and `replay/`.
//!
//! | module | what |
//! |--------|------|
//! | `latency` | per-input latency as the summary reports it, from the latency replay's result |
//! | `outlier` | a task group's busiest member when it is far over the group's median ([`GroupOutlier`](crate::GroupOutlier)) |
//! | `model` | the [`Summary`](crate::Summary) and its rows |
//! | `summarize` | its making from the run's totals and the latency replay |
//! | `text` | its text |

pub(crate) mod latency;
pub(crate) mod model;
pub(crate) mod outlier;
pub(crate) mod summarize;
pub(crate) mod text;
