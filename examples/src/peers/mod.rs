//! Peer baselines: what of the benchmarks is each peer's own, written as
//! the peer's documentation advises, so that rill's figures can be read as
//! ratios. The networks that are the same on every blocking engine are
//! written once over [`crate::net::Net`] ([`crate::nets`],
//! [`crate::apps::wordcount::network`]) and run on OS threads as
//! [`crate::net::ThreadNet`]; what is left here:
//!
//! - [`threads`]: the micro rows that are the threads' own (`yield`,
//!   `spawn`, `idle_cpu`).
//! - [`tokio_rt`]: tokio's async copies of the pipe, the ring and the micro
//!   rows: one tokio task per task on a multi-thread runtime,
//!   `tokio::sync::mpsc` bounded channels.
//! - [`wordcount`]: the word count on tokio.
//! - [`sieve`]: the prime sieve, a chain of filters that grows while it
//!   runs, on OS threads and on tokio.

pub mod sieve;
pub mod threads;
pub mod tokio_rt;
pub mod wordcount;
