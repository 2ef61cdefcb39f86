//! The pipe, ring and micro benchmarks on rill, with plain parameters. The
//! `rill-bench` engine layer wraps these.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rill::{MonitorConfig, Runtime};

/// Where the relays of a pipe go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipePlacement {
    /// Every relay on worker 0.
    Const,
    /// Relays alternate over the workers.
    Rr,
    /// Relays cut into two contiguous halves, on workers 0 and 1.
    Parts,
}

fn runtime_mon(workers: usize, capacity: usize, mon: &MonitorConfig) -> Result<Runtime> {
    Ok(Runtime::builder()
        .workers(workers)
        .capacity(capacity)
        .monitor(mon.clone())
        .build()?)
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

/// LPEL's pipe: a source, `depth - 2` relays and a sink. Returns the wall time
/// of the run; fails if the sink did not get exactly 0..messages in order.
pub fn pipe(
    depth: usize,
    messages: u64,
    capacity: usize,
    workers: usize,
    placement: PipePlacement,
) -> Result<Duration> {
    Ok(pipe_mon(
        depth,
        messages,
        capacity,
        workers,
        placement,
        &MonitorConfig::off(),
    )?
    .wall)
}

/// [`pipe`] with monitoring.
pub fn pipe_mon(
    depth: usize,
    messages: u64,
    capacity: usize,
    workers: usize,
    placement: PipePlacement,
    mon: &MonitorConfig,
) -> Result<RunInfo> {
    if depth < 2 {
        bail!("pipe depth must be at least 2 (a source and a sink)");
    }
    let mut rt = runtime_mon(workers, capacity, mon)?;
    let relays = depth - 2;
    let last = workers.min(2) - 1;
    let place = move |k: usize| -> usize {
        match placement {
            PipePlacement::Const => 0,
            PipePlacement::Rr => (k + 1) % workers,
            PipePlacement::Parts => {
                if k < relays / 2 {
                    0
                } else {
                    last
                }
            }
        }
    };
    // The sink reports through an atomic, not a stream, so that it stays a
    // pure sink in the monitoring logs (latency is measured at sinks).
    let ok = Arc::new(AtomicU64::new(0));
    let (mut w, mut r) = rill::stream::<u64>(capacity);
    rt.try_spawn_on(0, "pipe/source", move || {
        for i in 0..messages {
            if w.write(i).is_err() {
                return;
            }
        }
    })?;
    for k in 0..relays {
        let (mut w2, r2) = rill::stream::<u64>(capacity);
        let mut rin = std::mem::replace(&mut r, r2);
        rt.try_spawn_on(place(k), format!("pipe/relay/{k}"), move || {
            while let Some(v) = rin.read() {
                if w2.write(v).is_err() {
                    return;
                }
            }
        })?;
    }
    let ok2 = ok.clone();
    rt.try_spawn_on(last, "pipe/sink", move || {
        let mut expect = 0u64;
        let mut good = true;
        while let Some(v) = r.read() {
            good &= v == expect;
            expect += 1;
        }
        ok2.store(u64::from(good && expect == messages), Ordering::Relaxed);
    })?;
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
/// closes the ring task by task.
pub fn ring(size: usize, hops: u64, capacity: usize, workers: usize) -> Result<Duration> {
    Ok(ring_mon(
        size,
        hops,
        capacity,
        workers,
        PipePlacement::Rr,
        &MonitorConfig::off(),
    )?
    .wall)
}

/// [`ring`] with monitoring.
pub fn ring_mon(
    size: usize,
    hops: u64,
    capacity: usize,
    workers: usize,
    placement: PipePlacement,
    mon: &MonitorConfig,
) -> Result<RunInfo> {
    if size < 2 {
        bail!("ring size must be at least 2");
    }
    let mut rt = runtime_mon(workers, capacity, mon)?;
    let mut writers: Vec<Option<rill::Writer<u64>>> = Vec::new();
    let mut readers: Vec<Option<rill::Reader<u64>>> = Vec::new();
    for _ in 0..size {
        let (w, r) = rill::stream::<u64>(capacity);
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
        let worker = match placement {
            PipePlacement::Const => 0,
            PipePlacement::Rr => i % workers,
            PipePlacement::Parts => i * workers / size,
        };
        rt.try_spawn_on(worker, format!("ring/{i}"), move || {
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

/// Micro-benchmark rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Micro {
    /// One task yielding on one worker.
    Yield,
    /// Spawn, run and exit of an empty task.
    Spawn,
    /// One message between two tasks on one worker.
    Handoff,
    /// Ping-pong between tasks on two workers.
    CrossWorkerRoundtrip,
    /// CPU share of an idle worker after 10 ms with nothing to do.
    IdleCpu,
}

/// Runs a micro row with `n` operations. Returns (wall time, operations); for
/// `IdleCpu` the second value is the CPU share in parts per million.
pub fn micro(row: Micro, n: u64) -> Result<(Duration, u64)> {
    micro_mon(row, n, &MonitorConfig::off()).map(|(d, ops, _)| (d, ops))
}

/// [`micro`] with monitoring; also returns the run's statistics.
pub fn micro_mon(row: Micro, n: u64, mon: &MonitorConfig) -> Result<(Duration, u64, RunInfo)> {
    let runtime = |workers, capacity| runtime_mon(workers, capacity, mon);
    match row {
        Micro::Yield => {
            let mut rt = runtime(1, 16)?;
            let t = Arc::new(std::sync::Mutex::new(Duration::ZERO));
            let t2 = t.clone();
            rt.spawn("micro/yield", move || {
                let t0 = Instant::now();
                for _ in 0..n {
                    rill::yield_now();
                }
                *t2.lock().unwrap() = t0.elapsed();
            });
            let stats = rt.run()?;
            let d = *t.lock().unwrap();
            Ok((d, n, RunInfo::of(d, &stats)))
        }
        Micro::Spawn => {
            let mut rt = runtime(1, 16)?;
            let t = Arc::new(std::sync::Mutex::new(Duration::ZERO));
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
                *t2.lock().unwrap() = t0.elapsed();
            });
            let stats = rt.run()?;
            if done.load(Ordering::Relaxed) != n {
                bail!("spawn: {} of {n} tasks ran", done.load(Ordering::Relaxed));
            }
            let d = *t.lock().unwrap();
            Ok((d, n, RunInfo::of(d, &stats)))
        }
        Micro::Handoff => {
            let mut rt = runtime(1, 16)?;
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
            Ok((d, n, RunInfo::of(d, &stats)))
        }
        Micro::CrossWorkerRoundtrip => {
            let mut rt = runtime(2, 1)?;
            let (mut pw, mut pr) = rill::stream::<u64>(1);
            let (mut qw, mut qr) = rill::stream::<u64>(1);
            let t = Arc::new(std::sync::Mutex::new(Duration::ZERO));
            let t2 = t.clone();
            rt.try_spawn_on(0, "micro/ping", move || {
                let t0 = Instant::now();
                for i in 0..n {
                    pw.write(i).unwrap();
                    let v = qr.read().unwrap();
                    assert_eq!(v, i);
                }
                *t2.lock().unwrap() = t0.elapsed();
            })?;
            rt.try_spawn_on(1, "micro/pong", move || {
                while let Some(v) = pr.read() {
                    if qw.write(v).is_err() {
                        return;
                    }
                }
            })?;
            let stats = rt.run()?;
            let d = *t.lock().unwrap();
            Ok((d, n, RunInfo::of(d, &stats)))
        }
        Micro::IdleCpu => {
            let mut rt = runtime(2, 16)?;
            let share = Arc::new(AtomicU64::new(0));
            let s2 = share.clone();
            rt.try_spawn_on(0, "micro/sleeper", move || {
                // Worker 1 has nothing to do; this task blocks worker 0 in the OS.
                std::thread::sleep(Duration::from_millis(10));
                let c0 = process_cpu();
                let w0 = Instant::now();
                std::thread::sleep(Duration::from_millis(50));
                let c1 = process_cpu();
                let wall = w0.elapsed();
                let ppm = (c1.saturating_sub(c0)).as_secs_f64() / wall.as_secs_f64() * 1e6;
                s2.store(ppm as u64, Ordering::Relaxed);
            })?;
            let t0 = Instant::now();
            let stats = rt.run()?;
            let d = t0.elapsed();
            Ok((d, share.load(Ordering::Relaxed), RunInfo::of(d, &stats)))
        }
    }
}

/// CPU time of the whole process (user + system).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we pass; a zeroed rusage is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
