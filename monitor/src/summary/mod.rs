//! [`summarize`](crate::summarize): a run's totals, throughput, latency and
//! jitter. Imports `render/`, `load/` and `replay/`.
//!
//! | module | what |
//! |--------|------|
//! | `latency` | per-input latency as the summary reports it, from the latency replay's result |
//! | `summarize` | the [`Summary`](crate::Summary), its making and its text |

pub(crate) mod latency;
pub(crate) mod summarize;
