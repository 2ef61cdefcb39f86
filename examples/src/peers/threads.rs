//! The OS-threads peer: one `std::thread` per task, `crossbeam_channel::bounded`
//! channels between them, every thread joined at the end. The pipe, the ring
//! and the rows that move messages are [`crate::nets`] on [`ThreadNet`];
//! the rest of the micro rows are the threads' own.
//!
//! Worker counts and placements do not apply (the kernel schedules the threads);
//! they are recorded but otherwise ignored.

use std::thread;
use std::time::Instant;

use anyhow::Result;
use crossbeam_channel::bounded;

use crate::bench::{measure_idle_cpu, Measurement, MicroRow, VerifyError, MICRO_CAPACITY};
use crate::net::{join_thread as join, spawn_thread as spawn, NetSpec, ThreadNet};
use crate::nets;

/// One micro row on OS threads.
///
/// - `yield`: one thread calls `std::thread::yield_now` `ops` times.
/// - `spawn`: `std::thread::spawn` of an empty closure, then `join`, `ops`
///   times.
/// - `handoff`: two threads, one `bounded(MICRO_CAPACITY)` channel,
///   `ops` messages.
/// - `cross_worker_roundtrip`: two threads, a ping and a pong channel,
///   `ops` round trips.
/// - `idle_cpu`: one thread blocked on an empty channel.
pub fn micro(row: MicroRow, ops: u64) -> Result<Measurement> {
    micro_ops(row, ops)
}

/// The network of a micro row with `workers` tasks' worth of threads.
fn spec(workers: usize) -> NetSpec<'static> {
    NetSpec {
        bench: "micro",
        workers,
        capacity: MICRO_CAPACITY,
        mapping: None,
        names: &[],
        manual: rill::ManualTable::new(),
        monitor: None,
        logs: None,
    }
}

/// Row `row` with `ops` operations on `workers` workers.
fn micro_ops(row: MicroRow, ops: u64) -> Result<Measurement> {
    match row {
        MicroRow::Yield => {
            let h = spawn("yield".into(), move || {
                let start = Instant::now();
                for _ in 0..ops {
                    thread::yield_now();
                }
                start.elapsed()
            })?;
            Ok(Measurement::new(join(h)?, ops))
        }
        MicroRow::Spawn => {
            let start = Instant::now();
            for _ in 0..ops {
                join(spawn("empty".into(), || {})?)?;
            }
            Ok(Measurement::new(start.elapsed(), ops))
        }
        MicroRow::Handoff => Ok(nets::handoff::<ThreadNet>(ops, MICRO_CAPACITY, &spec(1))?.0),
        MicroRow::CrossWorkerRoundtrip => {
            Ok(nets::roundtrip::<ThreadNet>(ops, MICRO_CAPACITY, &spec(2))?.0)
        }
        MicroRow::IdleCpu => {
            let (tx, rx) = bounded::<u64>(1);
            let idle = spawn("idle".into(), move || rx.recv().is_err())?;
            let m = measure_idle_cpu();
            drop(tx);
            let disconnected = join(idle)?;
            if !disconnected {
                return Err(VerifyError("the idle thread received a message".into()).into());
            }
            m
        }
    }
}
