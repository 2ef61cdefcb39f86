//! The cost of recording one event: a task yielding on one worker, where every
//! yield ends a dispatch and so writes one period record in `full` mode, beside
//! the same loop with monitoring off. The difference per yield is the cost of
//! one recorded event (two clock reads and the encoding into the mapped log).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rill::{MonitorConfig, MonitorFlags, Runtime};

const YIELDS: u64 = 200_000;

fn run(flags: MonitorFlags, dir: &std::path::Path) -> Duration {
    let mut rt = Runtime::builder()
        .workers(1)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .expect("runtime");
    let out = std::sync::Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let o = out.clone();
    rt.spawn("record/yield", move || {
        let t0 = Instant::now();
        for _ in 0..YIELDS {
            rill::yield_now();
        }
        *o.lock().unwrap() = t0.elapsed();
    });
    rt.run().expect("run");
    let d = *out.lock().unwrap();
    d
}

fn record(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("rill-record-bench-{}", std::process::id()));
    let mut g = c.benchmark_group("record_event");
    g.sample_size(10);
    g.throughput(Throughput::Elements(YIELDS));
    for (name, flags) in [("off", MonitorFlags::OFF), ("full", MonitorFlags::FULL)] {
        g.bench_with_input(BenchmarkId::from_parameter(name), &flags, |b, &flags| {
            b.iter_custom(|iters| (0..iters).map(|_| run(flags, &dir)).sum())
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, record);
criterion_main!(benches);
