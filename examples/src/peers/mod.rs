//! Peer baselines: the same benchmarks as rill's, written as each peer's own
//! documentation advises, so that rill's figures can be read as ratios.
//!
//! - [`threads`]: one OS thread per task, `crossbeam_channel::bounded` channels.
//! - [`tokio_rt`]: one tokio task per task on a multi-thread runtime,
//!   `tokio::sync::mpsc` bounded channels.
//!
//! - [`wordcount`]: the word count network on both.
//! - [`sieve`]: the prime sieve, a chain of filters that grows while it
//!   runs, on both.
//!
//! [`threads::Threads`] and [`tokio_rt::Tokio`] are the two peers as
//! [`crate::engines::Engine`]s; their word count is in [`wordcount`], their
//! sieve in [`sieve`].

pub mod sieve;
pub mod threads;
pub mod tokio_rt;
pub mod wordcount;
