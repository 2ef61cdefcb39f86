//! Peer baselines: the same benchmarks as rill's, written as each peer's own
//! documentation advises, so that rill's figures can be read as ratios.
//!
//! - [`threads`]: one OS thread per task, `crossbeam_channel::bounded` channels.
//! - [`tokio_rt`]: one tokio task per task on a multi-thread runtime,
//!   `tokio::sync::mpsc` bounded channels.
//!
//! - [`wordcount`]: the word count network on both.
//!
//! `threads` and `tokio_rt` offer `pipe`, `ring` and `micro` with the same
//! signatures as [`crate::rill_engine`]; `wordcount` offers `threads` and
//! `tokio`.

pub mod threads;
pub mod tokio_rt;
pub mod wordcount;
