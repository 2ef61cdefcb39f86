//! LPEL's ring (100 tasks, 20,000 hops) on rill, threads and tokio.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rill_benches::{total, ENGINES};
use rill_examples::bench::{BenchOpts, Placement, RingParams};
use rill_examples::engines::Bench;

fn ring(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring");
    g.sample_size(10);
    let p = RingParams {
        size: 100,
        hops: 20_000,
        capacity: 16,
        opts: BenchOpts::on(2),
        placement: Placement::Parts,
        mapping: None,
    };
    g.throughput(Throughput::Elements(p.hops));
    for e in ENGINES {
        g.bench_with_input(BenchmarkId::from_parameter(e.name()), &p, |b, p| {
            b.iter_custom(|iters| total(iters, || p.run(e)))
        });
    }
    g.finish();
}

criterion_group!(benches, ring);
criterion_main!(benches);
