//! The tokio peer: one `tokio::spawn`ed task per task on a runtime built with
//! `Builder::new_multi_thread().worker_threads(W)`, `tokio::sync::mpsc::channel(C)`
//! between tasks, every task's `JoinHandle` awaited at the end.
//!
//! tokio places tasks itself (work stealing, and a task woken by another goes to
//! the waker's worker first), so a pipe's placement is recorded but not applied.
//! The runtime is built before the clock starts and dropped after it stops.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use tokio::runtime::{Builder, Runtime};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::bench::{
    busy_work, measure_idle_cpu, verify_ring, Measurement, MicroRow, PipeParams, RingParams,
    SequenceCheck, SumCheck, VerifyError, MICRO_CAPACITY,
};
use crate::net::panic_text;

/// A multi-thread runtime with `workers` workers, as tokio's docs build one.
pub(crate) fn multi_thread(workers: usize) -> Result<Runtime> {
    Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("tokio-peer")
        .build()
        .context("building the tokio runtime")
}

/// Awaits a task and turns a panic or cancellation into an error.
pub(crate) async fn join<T>(what: &str, h: JoinHandle<T>) -> Result<T> {
    h.await.map_err(|e| {
        if e.is_panic() {
            anyhow!(
                "tokio task {what} panicked: {}",
                panic_text(&e.into_panic())
            )
        } else {
            anyhow!("tokio task {what} was cancelled")
        }
    })
}

/// Pipe: a source task, `depth - 2` relay tasks and a sink task; relay `k`
/// does the busy work of rill's `pipe/relay/k` (in the task, blocking its
/// tokio worker meanwhile, as rill's relay blocks its worker).
pub fn pipe(p: &PipeParams) -> Result<Measurement> {
    let rt = multi_thread(p.opts.workers)?;
    let d = p.depth;
    let m = p.messages;
    let capacity = p.capacity;
    let steps = p.relay_steps();
    rt.block_on(async move {
        let start = Instant::now();
        let (tx, mut rx) = mpsc::channel::<u64>(capacity);
        let mut stages = Vec::with_capacity(d - 1);
        stages.push(tokio::spawn(async move {
            for v in 0..m {
                // A send fails only when the sink ended early; it reports why.
                if tx.send(v).await.is_err() {
                    break;
                }
            }
        }));
        for &work in &steps {
            let (tx, next_rx) = mpsc::channel::<u64>(capacity);
            let mut input = std::mem::replace(&mut rx, next_rx);
            stages.push(tokio::spawn(async move {
                while let Some(v) = input.recv().await {
                    // Blocks this tokio worker for the work, as rill's
                    // relay blocks its worker.
                    if work > 0 {
                        busy_work(work);
                    }
                    if tx.send(v).await.is_err() {
                        break;
                    }
                }
            }));
        }
        let sink = tokio::spawn(async move {
            let mut check = SequenceCheck::new();
            while let Some(v) = rx.recv().await {
                check.push(v)?;
            }
            check.finish(m)
        });
        let sink_result = join("pipe-sink", sink).await;
        let mut stages_result = Ok(());
        for h in stages {
            let r = join("pipe-stage", h).await;
            stages_result = stages_result.and(r);
        }
        let wall = start.elapsed();
        // A stage fails only by panicking, which the sink then sees as missing
        // messages: report the panic, the cause.
        stages_result?;
        sink_result??;
        Ok(Measurement::new(wall, p.channel_hops()).with(|f| f.tasks = Some(d as u64)))
    })
}

/// Ring: `size` tasks passing one token (see [`RingParams`] for the protocol).
pub fn ring(p: &RingParams) -> Result<Measurement> {
    let rt = multi_thread(p.opts.workers)?;
    let s = p.size;
    let hops = p.hops;
    let capacity = p.capacity;
    rt.block_on(async move {
        let start = Instant::now();
        // Task i reads channel i and writes channel (i + 1) mod size.
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..s).map(|_| mpsc::channel::<u64>(capacity)).unzip();
        let inject = senders[0].clone();
        let mut senders: Vec<Option<mpsc::Sender<u64>>> = senders.into_iter().map(Some).collect();
        let mut tasks = Vec::with_capacity(s);
        for (i, rx) in receivers.into_iter().enumerate() {
            let tx = senders[(i + 1) % s]
                .take()
                .expect("each sender is taken once");
            tasks.push(tokio::spawn(ring_task(rx, tx, hops)));
        }
        inject
            .send(0)
            .await
            .map_err(|_| anyhow!("ring task 0 ended before the token"))?;
        drop(inject);
        let mut finals = Vec::with_capacity(s);
        for h in tasks {
            finals.push(join("ring", h).await?);
        }
        let wall = start.elapsed();
        verify_ring(&finals, hops)?;
        Ok(Measurement::new(wall, hops).with(|f| f.tasks = Some(s as u64)))
    })
}

/// Ring task: the protocol of [`crate::nets::ring`]'s, awaiting where that
/// blocks; the final token, if this task read it.
async fn ring_task(mut rx: mpsc::Receiver<u64>, tx: mpsc::Sender<u64>, hops: u64) -> Option<u64> {
    // The loop ends when the previous task ended (its sender dropped).
    while let Some(t) = rx.recv().await {
        if t >= hops {
            return Some(t);
        }
        if tx.send(t + 1).await.is_err() {
            break;
        }
    }
    None
}

/// One micro row on tokio.
///
/// - `yield`: one spawned task calls `tokio::task::yield_now().await`
///   `ops` times, on a multi-thread runtime with `workers` workers.
/// - `spawn`: from inside a task, `tokio::spawn(async {})` then await its
///   `JoinHandle`, `ops` times, on `workers` workers.
/// - `handoff`: a current-thread runtime (one worker), two tasks, one
///   `mpsc::channel(MICRO_CAPACITY)`, `ops` messages.
/// - `cross_worker_roundtrip`: a multi-thread runtime with 2 workers, a ping and a
///   pong task, `ops` round trips. tokio decides where the two tasks
///   run (a woken task goes to its waker's worker first), as it would for any
///   program.
/// - `idle_cpu`: a multi-thread runtime with 1 worker and one task waiting on an
///   empty channel.
pub fn micro(row: MicroRow, workers: usize, ops: u64) -> Result<Measurement> {
    micro_ops(row, workers, ops)
}

/// Row `row` with `ops` operations on `workers` workers.
fn micro_ops(row: MicroRow, workers: usize, ops: u64) -> Result<Measurement> {
    let workers = row.workers(workers);
    match row {
        MicroRow::Yield => {
            let rt = multi_thread(workers)?;
            let wall = rt.block_on(async move {
                let task = tokio::spawn(async move {
                    let start = Instant::now();
                    for _ in 0..ops {
                        tokio::task::yield_now().await;
                    }
                    start.elapsed()
                });
                join("yield", task).await
            })?;
            Ok(Measurement::new(wall, ops))
        }
        MicroRow::Spawn => {
            let rt = multi_thread(workers)?;
            let wall = rt.block_on(async move {
                let task = tokio::spawn(async move {
                    let start = Instant::now();
                    for _ in 0..ops {
                        join("empty", tokio::spawn(async {})).await?;
                    }
                    Ok::<Duration, anyhow::Error>(start.elapsed())
                });
                join("spawner", task).await?
            })?;
            Ok(Measurement::new(wall, ops))
        }
        MicroRow::Handoff => {
            let rt = Builder::new_current_thread()
                .build()
                .context("building the tokio runtime")?;
            let wall = rt.block_on(async move {
                let start = Instant::now();
                let (tx, mut rx) = mpsc::channel::<u64>(MICRO_CAPACITY);
                let consumer = tokio::spawn(async move {
                    let mut check = SumCheck::default();
                    while let Some(v) = rx.recv().await {
                        check.push(v);
                    }
                    check.finish(ops)
                });
                let producer = tokio::spawn(async move {
                    for v in 0..ops {
                        if tx.send(v).await.is_err() {
                            break;
                        }
                    }
                });
                join("handoff-tx", producer).await?;
                join("handoff-rx", consumer).await??;
                Ok::<Duration, anyhow::Error>(start.elapsed())
            })?;
            Ok(Measurement::new(wall, ops))
        }
        MicroRow::CrossWorkerRoundtrip => {
            let rt = multi_thread(workers)?;
            let wall = rt.block_on(async move {
                let (ping_tx, mut ping_rx) = mpsc::channel::<u64>(MICRO_CAPACITY);
                let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(MICRO_CAPACITY);
                let echo = tokio::spawn(async move {
                    while let Some(v) = ping_rx.recv().await {
                        if pong_tx.send(v).await.is_err() {
                            break;
                        }
                    }
                });
                let pinger = tokio::spawn(async move {
                    let start = Instant::now();
                    for v in 0..ops {
                        ping_tx
                            .send(v)
                            .await
                            .map_err(|_| anyhow!("pong task ended early"))?;
                        let back = pong_rx
                            .recv()
                            .await
                            .ok_or_else(|| anyhow!("pong task ended early"))?;
                        if back != v {
                            return Err(VerifyError(format!("sent {v}, got {back} back")).into());
                        }
                    }
                    Ok::<Duration, anyhow::Error>(start.elapsed())
                });
                let wall = join("ping", pinger).await;
                join("pong", echo).await?;
                wall?
            })?;
            Ok(Measurement::new(wall, ops))
        }
        MicroRow::IdleCpu => {
            let rt = multi_thread(workers)?;
            let (tx, mut rx) = mpsc::channel::<u64>(1);
            let idle = rt.spawn(async move { rx.recv().await.is_none() });
            let m = measure_idle_cpu();
            drop(tx);
            let closed = rt.block_on(join("idle", idle))?;
            if !closed {
                return Err(VerifyError("the idle task received a message".into()).into());
            }
            m
        }
    }
}
