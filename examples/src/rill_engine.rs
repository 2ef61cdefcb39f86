//! The rill engine: the benchmarks on rill's own tasks and streams.
//!
//! Not wired yet: the runtime's author replaces these bodies. Each function gets
//! parameters that the command line has already validated, must verify its result
//! (use [`crate::bench::SequenceCheck`] and [`crate::bench::verify_ring`], and for
//! `idle_cpu` [`crate::bench::measure_idle_cpu`]), and must return an error, not
//! panic, when something goes wrong. See [`crate::bench`] for what `wall` covers
//! and [`crate::bench::Placement::worker_of`] for where each pipe stage goes.

use anyhow::{anyhow, Result};

use crate::bench::{Measurement, MicroRow, PipeParams, RingParams};

/// Pipe on rill: a source, `depth - 2` relays and a sink, connected by streams of
/// `capacity`, placed on `workers` workers by `placement`.
pub fn pipe(p: &PipeParams) -> Result<Measurement> {
    let _ = p;
    Err(anyhow!("rill engine not wired yet"))
}

/// Ring on rill: `size` tasks passing one token for `hops` hops.
pub fn ring(p: &RingParams) -> Result<Measurement> {
    let _ = p;
    Err(anyhow!("rill engine not wired yet"))
}

/// One micro row on rill, with `workers` workers where the row does not fix its
/// own count ([`MicroRow::workers`]).
pub fn micro(row: MicroRow, workers: usize) -> Result<Measurement> {
    let _ = (row, workers);
    Err(anyhow!("rill engine not wired yet"))
}
