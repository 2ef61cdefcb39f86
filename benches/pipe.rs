//! LPEL's pipe (depth 100, 10,000 messages, capacity 16) on rill, threads and
//! tokio, for each placement.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rill_benches::{total, ENGINES};
use rill_examples::bench::{BenchOpts, PipeParams, Placement};
use rill_examples::engines::Bench;

fn pipe(c: &mut Criterion) {
    for placement in [Placement::Const, Placement::Rr, Placement::Parts] {
        let mut g = c.benchmark_group(format!("pipe/{placement}"));
        g.sample_size(10);
        let p = PipeParams {
            depth: 100,
            messages: 10_000,
            capacity: 16,
            opts: BenchOpts::on(2),
            placement,
            ..PipeParams::default()
        };
        g.throughput(Throughput::Elements(p.messages * (p.depth as u64 - 1)));
        for e in ENGINES {
            g.bench_with_input(BenchmarkId::from_parameter(e.name()), &p, |b, p| {
                b.iter_custom(|iters| total(iters, || p.run(e)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, pipe);
criterion_main!(benches);
