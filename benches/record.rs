//! The cost of recording one event, beside the same loop with monitoring off:
//!
//! * `record_event/period`: a task yielding on one worker, where every yield
//!   ends a dispatch and so writes one period record in `full` mode. The
//!   difference per yield is the cost of one recorded period (one clock read,
//!   which is most of it in a VM, and the encoding into the mapped log).
//! * `record_event/message`: a task writing a message to a stream and reading
//!   it back, yielding every [`ROUND`] messages: periods of `2 * ROUND`
//!   message events, as a busy stage has. The difference per event (the
//!   throughput counts messages and periods) is the cost of recording one
//!   event in a typical mix.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rill::{MonitorConfig, MonitorFlags, Runtime};

const YIELDS: u64 = 200_000;

/// Runs `body` as the only task of a 1-worker runtime monitored with
/// `flags`, and returns the time the task measured around it.
fn timed_task(
    flags: MonitorFlags,
    dir: &std::path::Path,
    name: &'static str,
    body: impl FnOnce() + Send + 'static,
) -> Duration {
    let mut rt = Runtime::builder()
        .workers(1)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .expect("runtime");
    let out = std::sync::Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let o = out.clone();
    rt.spawn(name, move || {
        let t0 = Instant::now();
        body();
        *o.lock().unwrap() = t0.elapsed();
    });
    rt.run().expect("run");
    let d = *out.lock().unwrap();
    d
}

fn run(flags: MonitorFlags, dir: &std::path::Path) -> Duration {
    timed_task(flags, dir, "record/yield", || {
        for _ in 0..YIELDS {
            rill::yield_now();
        }
    })
}

const MESSAGES: u64 = 1_000_000;
/// Messages written and read per dispatch in `record_event/message`.
const ROUND: u64 = 64;

fn run_messages(flags: MonitorFlags, dir: &std::path::Path) -> Duration {
    timed_task(flags, dir, "record/message", || {
        // Made inside the task, so monitoring records its opening; one
        // stream against a million messages does not move the timing.
        let (mut w, mut r) = rill::stream::<u64>(1);
        for i in 0..MESSAGES {
            w.write(i).expect("reader alive");
            std::hint::black_box(r.read());
            if i % ROUND == ROUND - 1 {
                rill::yield_now();
            }
        }
    })
}

fn record(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("rill-record-bench-{}", std::process::id()));
    let modes = [("off", MonitorFlags::OFF), ("full", MonitorFlags::FULL)];
    let mut g = c.benchmark_group("record_event/period");
    g.sample_size(10);
    g.throughput(Throughput::Elements(YIELDS));
    for (name, flags) in modes {
        g.bench_with_input(BenchmarkId::from_parameter(name), &flags, |b, &flags| {
            b.iter_custom(|iters| (0..iters).map(|_| run(flags, &dir)).sum())
        });
    }
    g.finish();
    let mut g = c.benchmark_group("record_event/message");
    g.sample_size(10);
    // Two message events (a write and a read) per loop, a period per round.
    g.throughput(Throughput::Elements(2 * MESSAGES + MESSAGES / ROUND));
    for (name, flags) in modes {
        g.bench_with_input(BenchmarkId::from_parameter(name), &flags, |b, &flags| {
            b.iter_custom(|iters| (0..iters).map(|_| run_messages(flags, &dir)).sum())
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, record);
criterion_main!(benches);
