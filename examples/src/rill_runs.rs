//! The pipe, ring and micro benchmarks as rill networks, run by the `rill`
//! engine ([`crate::rill_engine`]). Each takes the benchmark's parameters,
//! already validated, and the monitoring setting, and returns the run's
//! figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rill::{ManualTable, Mapping, MonitorConfig, Runtime};

use crate::apps::{mapping_for, MappingChoice};
use crate::bench::{
    busy_work, measure_idle_cpu, Measurement, MicroRow, PipeParams, Placement, RingParams,
};

fn runtime(workers: usize, capacity: usize, mon: &MonitorConfig) -> Result<Runtime> {
    mapped_runtime(workers, capacity, mon, Mapping::RoundRobin)
}

fn mapped_runtime(
    workers: usize,
    capacity: usize,
    mon: &MonitorConfig,
    mapping: Mapping,
) -> Result<Runtime> {
    Ok(Runtime::builder()
        .workers(workers)
        .capacity(capacity)
        .mapping(mapping)
        .monitor(mon.clone())
        .profile_planner(rill_monitor::profile_planner)
        .build()?)
}

/// The runtime of a pipe or ring whose tasks are `names` in creation
/// order, and how each task is placed: `Some(worker)` from `placement`
/// (the worker of task `i` of `names`) when no `--mapping` is given, `None`
/// (the runtime's mapping policy) when one is.
fn net_runtime(
    workers: usize,
    capacity: usize,
    mon: &MonitorConfig,
    mapping: Option<&MappingChoice>,
    names: &[String],
    placement: impl Fn(usize) -> usize,
) -> Result<(Runtime, Vec<Option<usize>>)> {
    match mapping {
        None => Ok((
            runtime(workers, capacity, mon)?,
            (0..names.len()).map(|i| Some(placement(i))).collect(),
        )),
        Some(m) => {
            // The pipe and the ring have no manual table (validate() refuses
            // `manual`); `parts` cuts the creation order.
            let mapping = mapping_for(m, ManualTable::new(), names.to_vec())?;
            Ok((
                mapped_runtime(workers, capacity, mon, mapping)?,
                vec![None; names.len()],
            ))
        }
    }
}

/// Adds task `name` to `rt`, on `worker` when given, else where the
/// runtime's mapping puts it.
fn add_task<F>(rt: &mut Runtime, worker: Option<usize>, name: String, f: F) -> Result<()>
where
    F: FnOnce() + Send + 'static,
{
    match worker {
        Some(w) => {
            rt.try_spawn_on(w, name, f)?;
        }
        None => {
            rt.spawn(name, f);
        }
    }
    Ok(())
}

/// What a monitored benchmark run produced besides its time.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Wall time of the run.
    pub wall: Duration,
    /// Bytes of monitoring log written.
    pub log_bytes: u64,
    /// Task dispatches.
    pub dispatches: u64,
    /// Times a worker parked (went to sleep after spinning).
    pub parks: u64,
    /// Time the workers spent idle (spinning or parked), summed.
    pub idle: Duration,
}

impl RunInfo {
    /// The figures of a run that took `wall`, from its statistics.
    pub fn of(wall: Duration, stats: &rill::RunStats) -> RunInfo {
        RunInfo {
            wall,
            log_bytes: stats.log_bytes,
            dispatches: stats.dispatches,
            parks: stats.workers.iter().map(|w| w.parks).sum(),
            idle: stats.workers.iter().map(|w| w.idle).sum(),
        }
    }
}

/// The pipe's task names in creation order: `pipe/source`,
/// `pipe/relay/0` to `pipe/relay/{depth-3}`, `pipe/sink`.
pub fn pipe_task_names(depth: usize) -> Vec<String> {
    let mut v = vec!["pipe/source".to_string()];
    v.extend((0..depth.saturating_sub(2)).map(|k| format!("pipe/relay/{k}")));
    v.push("pipe/sink".into());
    v
}

/// LPEL's pipe: a source, `depth - 2` relays and a sink. Without
/// `--mapping` the placement follows LPEL's test rather than
/// [`Placement::worker_of`]: the source runs on worker 0 and the sink on
/// worker 1 (when there are two workers); `const` puts every relay on
/// worker 0, `rr` puts relay `k` on worker `(k + 1) mod W`, `parts` cuts
/// the relays into two contiguous halves on the source's and the sink's
/// workers; each task is spawned on its worker. With `--mapping` every task
/// is spawned without a worker and the mapping places it (a file by task
/// name). Relay `k` does [`PipeParams::work_of`]`(k)` nanoseconds of
/// [`busy_work`] per message (calibrated before the clock starts). Fails if
/// the sink did not get exactly `0..messages` in order.
pub fn pipe(p: &PipeParams, mon: &MonitorConfig) -> Result<RunInfo> {
    let (workers, messages, capacity) = (p.workers, p.messages, p.capacity);
    let relays = p.relays();
    let last = workers.min(2) - 1;
    let placement = p.placement;
    // Task i of the names: 0 the source, 1..=relays the relays, then the sink.
    let place = move |i: usize| -> usize {
        if i == 0 {
            return 0;
        }
        if i > relays {
            return last;
        }
        let k = i - 1;
        match placement {
            Placement::Const => 0,
            Placement::Rr => (k + 1) % workers,
            Placement::Parts => {
                if k < relays / 2 {
                    0
                } else {
                    last
                }
            }
        }
    };
    let names = pipe_task_names(p.depth);
    let (mut rt, at) = net_runtime(workers, capacity, mon, p.mapping.as_ref(), &names, place)?;
    let steps = p.relay_steps();
    // The sink reports through an atomic, not a stream, so that it stays a
    // pure sink in the monitoring logs (latency is measured at sinks).
    let ok = Arc::new(AtomicU64::new(0));
    let (mut w, mut r) = rill::stream::<u64>(capacity);
    add_task(&mut rt, at[0], names[0].clone(), move || {
        for i in 0..messages {
            if w.write(i).is_err() {
                return;
            }
        }
    })?;
    for k in 0..relays {
        let (mut w2, r2) = rill::stream::<u64>(capacity);
        let mut rin = std::mem::replace(&mut r, r2);
        let work = steps[k];
        add_task(&mut rt, at[k + 1], names[k + 1].clone(), move || {
            while let Some(v) = rin.read() {
                if work > 0 {
                    busy_work(work);
                }
                if w2.write(v).is_err() {
                    return;
                }
            }
        })?;
    }
    let ok2 = ok.clone();
    add_task(
        &mut rt,
        at[relays + 1],
        names[relays + 1].clone(),
        move || {
            let mut expect = 0u64;
            let mut good = true;
            while let Some(v) = r.read() {
                good &= v == expect;
                expect += 1;
            }
            ok2.store(u64::from(good && expect == messages), Ordering::Relaxed);
        },
    )?;
    let t0 = Instant::now();
    let stats = rt.run().context("pipe run failed")?;
    let wall = t0.elapsed();
    if ok.load(Ordering::Relaxed) != 1 {
        bail!("pipe: the sink did not receive 0..{messages} in order");
    }
    Ok(RunInfo::of(wall, &stats))
}

/// LPEL's ring: one token passed around `size` tasks for `hops` hops in total.
/// Task i reads stream i and writes stream i+1 (mod size); the token counts
/// its hops, and the task that receives it after the last hop stops, which
/// closes the ring task by task. Task i (`ring/i`) runs on
/// [`Placement::worker_of`]`(i, size, workers)`, or where `--mapping`
/// puts it when one is given.
pub fn ring(p: &RingParams, mon: &MonitorConfig) -> Result<RunInfo> {
    let (size, hops) = (p.size, p.hops);
    let names: Vec<String> = (0..size).map(|i| format!("ring/{i}")).collect();
    let (placement, workers) = (p.placement, p.workers);
    let (mut rt, at) = net_runtime(
        p.workers,
        p.capacity,
        mon,
        p.mapping.as_ref(),
        &names,
        |i| placement.worker_of(i, size, workers),
    )?;
    let mut writers: Vec<Option<rill::Writer<u64>>> = Vec::new();
    let mut readers: Vec<Option<rill::Reader<u64>>> = Vec::new();
    for _ in 0..size {
        let (w, r) = rill::stream::<u64>(p.capacity);
        writers.push(Some(w));
        readers.push(Some(r));
    }
    let result = Arc::new(AtomicU64::new(0));
    for i in 0..size {
        let mut rin = readers[i].take().expect("each reader is taken once");
        let mut wout = writers[(i + 1) % size]
            .take()
            .expect("each writer is taken once");
        let result = result.clone();
        add_task(&mut rt, at[i], names[i].clone(), move || {
            if i == 0 && wout.write(0).is_err() {
                return;
            }
            while let Some(h) = rin.read() {
                if h >= hops {
                    result.store(h, Ordering::Relaxed);
                    return;
                }
                if wout.write(h + 1).is_err() {
                    return;
                }
            }
        })?;
    }
    let t0 = Instant::now();
    let res = rt.run();
    let wall = t0.elapsed();
    let stats = res.context("ring run failed")?;
    let got = result.load(Ordering::Relaxed);
    if got != hops {
        bail!("ring: expected the token to make {hops} hops, it made {got}");
    }
    Ok(RunInfo::of(wall, &stats))
}

/// A value a task fills in and the caller reads after the run.
type Shared<T> = Arc<Mutex<Option<T>>>;

fn take<T>(slot: &Shared<T>, what: &str) -> Result<T> {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| anyhow!("{what}: the timing task did not finish"))
}

/// Runs micro row `row` with `n` operations: `yield`, `spawn` and `handoff`
/// on one worker, `cross_worker_roundtrip` on two, and `idle_cpu` on two
/// (worker 0 blocked in the OS by a task that measures with
/// [`measure_idle_cpu`], worker 1 idle; `n` does not apply). Returns the
/// measurement (`n` operations in the time the row times) and the run's
/// figures.
pub fn micro(row: MicroRow, n: u64, mon: &MonitorConfig) -> Result<(Measurement, RunInfo)> {
    let timed =
        |d: Duration, stats: &rill::RunStats| (Measurement::new(d, n), RunInfo::of(d, stats));
    match row {
        MicroRow::Yield => {
            let mut rt = runtime(1, 16, mon)?;
            let t: Shared<Duration> = Shared::default();
            let t2 = t.clone();
            rt.spawn("micro/yield", move || {
                let t0 = Instant::now();
                for _ in 0..n {
                    rill::yield_now();
                }
                *t2.lock().unwrap() = Some(t0.elapsed());
            });
            let stats = rt.run()?;
            Ok(timed(take(&t, "yield")?, &stats))
        }
        MicroRow::Spawn => {
            let mut rt = runtime(1, 16, mon)?;
            let t: Shared<Duration> = Shared::default();
            let t2 = t.clone();
            let done = Arc::new(AtomicU64::new(0));
            let d2 = done.clone();
            rt.spawn("micro/spawner", move || {
                let t0 = Instant::now();
                let batch = 64;
                let mut spawned = 0;
                while spawned < n {
                    for _ in 0..batch.min(n - spawned) {
                        let d = d2.clone();
                        rill::spawn("micro/empty", move || {
                            d.fetch_add(1, Ordering::Relaxed);
                        });
                        spawned += 1;
                    }
                    rill::yield_now();
                }
                while d2.load(Ordering::Relaxed) < n {
                    rill::yield_now();
                }
                *t2.lock().unwrap() = Some(t0.elapsed());
            });
            let stats = rt.run()?;
            if done.load(Ordering::Relaxed) != n {
                bail!("spawn: {} of {n} tasks ran", done.load(Ordering::Relaxed));
            }
            Ok(timed(take(&t, "spawn")?, &stats))
        }
        MicroRow::Handoff => {
            let mut rt = runtime(1, 16, mon)?;
            let (mut w, mut r) = rill::stream::<u64>(16);
            rt.spawn("micro/writer", move || {
                for i in 0..n {
                    w.write(i).unwrap();
                }
            });
            let sum = Arc::new(AtomicU64::new(0));
            let s2 = sum.clone();
            rt.spawn("micro/reader", move || {
                let mut s = 0u64;
                while let Some(v) = r.read() {
                    s = s.wrapping_add(v);
                }
                s2.store(s, Ordering::Relaxed);
            });
            let t0 = Instant::now();
            let stats = rt.run()?;
            let d = t0.elapsed();
            if sum.load(Ordering::Relaxed) != n * (n.saturating_sub(1)) / 2 {
                bail!("handoff: wrong sum");
            }
            Ok(timed(d, &stats))
        }
        MicroRow::CrossWorkerRoundtrip => {
            let mut rt = runtime(2, 1, mon)?;
            let (mut pw, mut pr) = rill::stream::<u64>(1);
            let (mut qw, mut qr) = rill::stream::<u64>(1);
            let t: Shared<Duration> = Shared::default();
            let t2 = t.clone();
            rt.try_spawn_on(0, "micro/ping", move || {
                let t0 = Instant::now();
                for i in 0..n {
                    pw.write(i).unwrap();
                    let v = qr.read().unwrap();
                    assert_eq!(v, i);
                }
                *t2.lock().unwrap() = Some(t0.elapsed());
            })?;
            rt.try_spawn_on(1, "micro/pong", move || {
                while let Some(v) = pr.read() {
                    if qw.write(v).is_err() {
                        return;
                    }
                }
            })?;
            let stats = rt.run()?;
            Ok(timed(take(&t, "cross_worker_roundtrip")?, &stats))
        }
        MicroRow::IdleCpu => {
            let mut rt = runtime(2, 16, mon)?;
            let m: Shared<Result<Measurement>> = Shared::default();
            let m2 = m.clone();
            // Worker 1 has nothing to do; this task blocks worker 0 in the OS.
            rt.try_spawn_on(0, "micro/sleeper", move || {
                *m2.lock().unwrap() = Some(measure_idle_cpu());
            })?;
            let t0 = Instant::now();
            let stats = rt.run()?;
            let d = t0.elapsed();
            Ok((take(&m, "idle_cpu")??, RunInfo::of(d, &stats)))
        }
    }
}
