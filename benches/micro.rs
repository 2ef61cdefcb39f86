//! Switch (yield), spawn, same-worker hand-off and cross-worker round trip on
//! rill, threads and tokio. Each sample runs the row's whole loop; criterion's
//! time divided by the row's operation count is the per-operation cost that
//! `rill-bench micro` prints.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rill_benches::{total, ENGINES};
use rill_examples::bench::{MicroParams, MicroRow};
use rill_examples::engines::Bench;

fn micro(c: &mut Criterion) {
    for row in [
        MicroRow::Yield,
        MicroRow::Spawn,
        MicroRow::Handoff,
        MicroRow::CrossWorkerRoundtrip,
    ] {
        let mut g = c.benchmark_group(format!("micro/{row:?}"));
        g.sample_size(10);
        for e in ENGINES {
            let p = MicroParams::new(row, 2);
            g.bench_with_input(BenchmarkId::from_parameter(e.name()), &p, |b, p| {
                b.iter_custom(|iters| total(iters, || p.run(e)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, micro);
criterion_main!(benches);
