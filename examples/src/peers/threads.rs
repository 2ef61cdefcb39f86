//! The OS-threads peer: one `std::thread` per task, `crossbeam_channel::bounded`
//! channels between them, every thread joined at the end.
//!
//! Worker counts and placements do not apply (the kernel schedules the threads);
//! they are recorded but otherwise ignored.

use std::thread::{self, JoinHandle};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use crossbeam_channel::{bounded, Receiver, Sender};

use crate::bench::{
    busy_work, measure_idle_cpu, verify_ring, Measurement, MicroParams, MicroRow, PipeParams,
    RingParams, SequenceCheck, SieveParams, VerifyError, WordcountParams, MICRO_CAPACITY,
};
use crate::engines::Engine;

/// Yields timed by the `yield` row.
pub const YIELD_OPS: u64 = 200_000;
/// Threads spawned and joined by the `spawn` row.
pub const SPAWN_OPS: u64 = 2_000;
/// Messages sent by the `handoff` row.
pub const HANDOFF_OPS: u64 = 500_000;
/// Round trips made by the `cross_worker_roundtrip` row.
pub const ROUNDTRIP_OPS: u64 = 20_000;

/// Spawns a named thread.
pub(crate) fn spawn<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .with_context(|| format!("spawning thread {name}"))
}

/// Joins a thread, its panic an error naming it.
pub(crate) fn join<T>(h: JoinHandle<T>) -> Result<T> {
    let name = h.thread().name().unwrap_or("?").to_string();
    h.join()
        .map_err(|p| anyhow!("thread {name} panicked: {}", panic_text(&p)))
}

/// The text of a panic payload, when it is a string.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Joins every handle, then returns the first error, if any.
fn join_all<T>(handles: Vec<JoinHandle<Result<T>>>) -> Result<Vec<T>> {
    let results: Vec<Result<T>> = handles
        .into_iter()
        .map(|h| join(h).and_then(|r| r))
        .collect();
    results.into_iter().collect()
}

/// Pipe: a source thread, `depth - 2` relay threads and a sink thread;
/// relay `k` (thread `pipe-relay-{k+1}`, stage k+1) does the busy work of
/// rill's `pipe/relay/k`.
pub fn pipe(p: &PipeParams) -> Result<Measurement> {
    let d = p.depth;
    let m = p.messages;
    let steps = p.relay_steps();
    // Channel k connects stage k to stage k + 1.
    let mut senders: Vec<Option<Sender<u64>>> = Vec::with_capacity(d - 1);
    let mut receivers: Vec<Option<Receiver<u64>>> = Vec::with_capacity(d - 1);
    for _ in 0..d - 1 {
        let (tx, rx) = bounded(p.capacity);
        senders.push(Some(tx));
        receivers.push(Some(rx));
    }

    let start = Instant::now();
    let mut stages: Vec<JoinHandle<Result<()>>> = Vec::with_capacity(d - 1);
    let mut spawn_error = None;
    for k in 0..d - 1 {
        let tx = senders[k].take().expect("each sender is taken once");
        let spawned = if k == 0 {
            spawn("pipe-source".into(), move || {
                for v in 0..m {
                    // A send fails only when the sink ended early; it reports why.
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                Ok(())
            })
        } else {
            let rx = receivers[k - 1]
                .take()
                .expect("each receiver is taken once");
            let work = steps[k - 1];
            spawn(format!("pipe-relay-{k}"), move || {
                for v in rx {
                    if work > 0 {
                        busy_work(work);
                    }
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                Ok(())
            })
        };
        match spawned {
            Ok(h) => stages.push(h),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    let sink = match spawn_error {
        Some(e) => Err(e),
        None => {
            let rx = receivers[d - 2].take().expect("the sink's receiver");
            spawn("pipe-sink".into(), move || -> Result<()> {
                let mut check = SequenceCheck::new();
                for v in rx {
                    check.push(v)?;
                }
                check.finish(m)?;
                Ok(())
            })
        }
    };
    // Drop the ends no thread took (only after a failed spawn), so that every
    // started thread sees its channels close and ends.
    drop(senders);
    drop(receivers);
    let sink_result = sink.and_then(join).and_then(|r| r);
    let stages_result = join_all(stages);
    let wall = start.elapsed();
    // A stage fails only by panicking, which the sink then sees as missing
    // messages: report the panic, the cause.
    stages_result?;
    sink_result?;
    Ok(Measurement::new(wall, p.channel_hops()).with("threads", d as u64))
}

/// Ring: `size` threads passing one token (see [`RingParams`] for the protocol).
pub fn ring(p: &RingParams) -> Result<Measurement> {
    let s = p.size;
    let hops = p.hops;
    let mut senders: Vec<Option<Sender<u64>>> = Vec::with_capacity(s);
    let mut receivers: Vec<Option<Receiver<u64>>> = Vec::with_capacity(s);
    for _ in 0..s {
        let (tx, rx) = bounded(p.capacity);
        senders.push(Some(tx));
        receivers.push(Some(rx));
    }
    let inject = senders[0].clone().expect("channel 0");

    let start = Instant::now();
    let mut tasks: Vec<JoinHandle<Result<RingTaskResult>>> = Vec::with_capacity(s);
    let mut spawn_error = None;
    for i in 0..s {
        let rx = receivers[i].take().expect("each receiver is taken once");
        let tx = senders[(i + 1) % s]
            .take()
            .expect("each sender is taken once");
        match spawn(format!("ring-{i}"), move || Ok(ring_task(rx, tx, hops))) {
            Ok(h) => tasks.push(h),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    drop(senders);
    drop(receivers);
    if spawn_error.is_none() {
        inject
            .send(0)
            .map_err(|_| anyhow!("ring task 0 ended before the token"))?;
    }
    drop(inject);
    let results = join_all(tasks);
    let wall = start.elapsed();
    if let Some(e) = spawn_error {
        return Err(e);
    }
    let results = results?;
    let reads = results.iter().map(|r| r.0).sum();
    let final_token = results.iter().find_map(|r| r.1);
    verify_ring(final_token, reads, hops)?;
    Ok(Measurement::new(wall, hops).with("threads", s as u64))
}

/// What a ring task saw: the tokens it read, and the final token if it read it.
type RingTaskResult = (u64, Option<u64>);

fn ring_task(rx: Receiver<u64>, tx: Sender<u64>, hops: u64) -> RingTaskResult {
    let mut reads = 0;
    // The loop ends when the previous task ended (its sender dropped).
    for t in rx {
        reads += 1;
        if t >= hops {
            return (reads, Some(t));
        }
        if tx.send(t + 1).is_err() {
            break;
        }
    }
    (reads, None)
}

/// One micro row on OS threads.
///
/// - `yield`: one thread calls `std::thread::yield_now` [`YIELD_OPS`] times.
/// - `spawn`: `std::thread::spawn` of an empty closure, then `join`, [`SPAWN_OPS`]
///   times.
/// - `handoff`: two threads, one `bounded(MICRO_CAPACITY)` channel,
///   [`HANDOFF_OPS`] messages, timed from the first send to the last receive.
/// - `cross_worker_roundtrip`: two threads, a ping and a pong channel,
///   [`ROUNDTRIP_OPS`] round trips.
/// - `idle_cpu`: one thread blocked on an empty channel.
pub fn micro(p: &MicroParams) -> Result<Measurement> {
    let row = p.row;
    let ops = p.ops.unwrap_or(match row {
        MicroRow::Yield => YIELD_OPS,
        MicroRow::Spawn => SPAWN_OPS,
        MicroRow::Handoff => HANDOFF_OPS,
        MicroRow::CrossWorkerRoundtrip => ROUNDTRIP_OPS,
        MicroRow::IdleCpu => 0,
    });
    micro_ops(row, p.workers, ops)
}

/// Row `row` with `ops` operations on `workers` workers.
pub(crate) fn micro_ops(row: MicroRow, _workers: usize, ops: u64) -> Result<Measurement> {
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
        MicroRow::Handoff => {
            let (tx, rx) = bounded::<u64>(MICRO_CAPACITY);
            let consumer = spawn("handoff-rx".into(), move || -> Result<Instant> {
                let mut check = SequenceCheck::new();
                for v in rx {
                    check.push(v)?;
                }
                check.finish(ops)?;
                Ok(Instant::now())
            })?;
            let producer = spawn("handoff-tx".into(), move || {
                let start = Instant::now();
                for v in 0..ops {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                start
            })?;
            let start = join(producer)?;
            let end = join(consumer)??;
            Ok(Measurement::new(end - start, ops))
        }
        MicroRow::CrossWorkerRoundtrip => {
            let (ping_tx, ping_rx) = bounded::<u64>(MICRO_CAPACITY);
            let (pong_tx, pong_rx) = bounded::<u64>(MICRO_CAPACITY);
            let echo = spawn("pong".into(), move || {
                for v in ping_rx {
                    if pong_tx.send(v).is_err() {
                        break;
                    }
                }
            })?;
            let pinger = spawn("ping".into(), move || -> Result<std::time::Duration> {
                let start = Instant::now();
                for v in 0..ops {
                    ping_tx
                        .send(v)
                        .map_err(|_| anyhow!("pong thread ended early"))?;
                    let back = pong_rx
                        .recv()
                        .map_err(|_| anyhow!("pong thread ended early"))?;
                    if back != v {
                        return Err(VerifyError(format!("sent {v}, got {back} back")).into());
                    }
                }
                Ok(start.elapsed())
            })?;
            let wall = join(pinger)?;
            join(echo)?;
            Ok(Measurement::new(wall?, ops))
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

/// Peer: one OS thread per task, connected by `crossbeam_channel::bounded`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Threads;

impl Engine for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn about(&self) -> &'static str {
        "one OS thread per task, crossbeam-channel bounded channels"
    }

    fn pipe(&self, p: &PipeParams) -> Result<Measurement> {
        pipe(p)
    }

    fn ring(&self, p: &RingParams) -> Result<Measurement> {
        ring(p)
    }

    fn micro(&self, p: &MicroParams) -> Result<Measurement> {
        micro(p)
    }

    fn wordcount(&self, p: &WordcountParams) -> Result<Measurement> {
        super::wordcount::threads(p)
    }

    fn sieve(&self, p: &SieveParams) -> Result<Measurement> {
        super::sieve::threads(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_small_verifies() {
        for depth in [2, 3, 7] {
            let p = PipeParams {
                depth,
                messages: 1000,
                capacity: 4,
                ..PipeParams::default()
            };
            let m = pipe(&p).unwrap();
            assert_eq!(m.ops, 1000 * (depth as u64 - 1));
        }
    }

    #[test]
    fn pipe_capacity_one() {
        let p = PipeParams {
            depth: 5,
            messages: 200,
            capacity: 1,
            ..PipeParams::default()
        };
        pipe(&p).unwrap();
    }

    #[test]
    fn ring_small_verifies() {
        for (size, hops) in [(2, 1), (2, 2), (3, 100), (10, 1000)] {
            let p = RingParams {
                size,
                hops,
                capacity: 2,
                ..RingParams::default()
            };
            let m = ring(&p).unwrap();
            assert_eq!(m.ops, hops);
        }
    }

    #[test]
    fn ring_task_counts() {
        // A lone task whose output feeds its input: the token goes round it.
        let (tx, rx) = bounded(1);
        tx.send(0).unwrap();
        let (reads, last) = ring_task(rx, tx, 5);
        assert_eq!((reads, last), (6, Some(5)));
    }

    #[test]
    fn micro_rows_run() {
        for row in MicroRow::ALL {
            let m = micro_ops(row, 2, 100).unwrap();
            if row == MicroRow::IdleCpu {
                let share = m.cpu_share().unwrap();
                assert!((0.0..=2.0).contains(&share), "{share}");
            } else {
                assert!(m.ns_per_op().unwrap() > 0.0);
            }
        }
    }
}
