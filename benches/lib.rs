//! Shared helpers for the criterion benches: every bench times rill beside its
//! peers (OS threads with crossbeam-channel, and tokio) in the same group, so
//! criterion's report reads as a ratio.

use std::time::Duration;

use rill_examples::bench::Measurement;
use rill_examples::engines::Engine;

/// The engines every bench compares.
pub const ENGINES: [Engine; 3] = Engine::NETWORKS;

/// Runs `f` `iters` times and returns the summed wall time it measured itself
/// (the engines time their own runs; set-up is excluded).
pub fn total(iters: u64, mut f: impl FnMut() -> anyhow::Result<Measurement>) -> Duration {
    let mut sum = Duration::ZERO;
    for _ in 0..iters {
        sum += f().expect("benchmark run failed").wall;
    }
    sum
}
