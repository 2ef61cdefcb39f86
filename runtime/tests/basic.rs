//! Basic end-to-end checks: an in-order pipeline and a work-stealing run.

mod common;

use common::RunMainStats;

use rill::{Mapping, Runtime};

#[test]
fn pipeline_delivers_in_order() {
    for workers in [1, 2, 4] {
        let mut rt = Runtime::builder()
            .workers(workers)
            .pin(false)
            .build()
            .unwrap();
        let stats = rt
            .run_main_stats(move || {
                let (mut w0, mut r) = rill::stream::<u64>(4);
                rill::spawn("src", move || {
                    for i in 0..10_000 {
                        w0.write(i).unwrap();
                    }
                });
                for s in 0..5 {
                    let (mut w, r2) = rill::stream::<u64>(4);
                    let mut rin = std::mem::replace(&mut r, r2);
                    rill::spawn(format!("relay/{s}"), move || {
                        while let Some(v) = rin.read() {
                            w.write(v).unwrap();
                        }
                    });
                }
                let mut expect = 0;
                while let Some(v) = r.read() {
                    assert_eq!(v, expect);
                    expect += 1;
                }
                assert_eq!(expect, 10_000);
            })
            .unwrap();
        assert_eq!(stats.tasks_created, 7, "workers={workers}");
    }
}

#[test]
fn steal_mode_runs() {
    let mut rt = Runtime::builder()
        .workers(2)
        .pin(false)
        .mapping(Mapping::Steal)
        .build()
        .unwrap();
    rt.run_main_stats(|| {
        let mut readers = Vec::new();
        for i in 0..50 {
            let (mut w, r) = rill::stream::<u64>(2);
            readers.push(r);
            rill::spawn(format!("p/{i}"), move || {
                for k in 0..100 {
                    w.write(k).unwrap();
                    rill::yield_now();
                }
            });
        }
        let mut total = 0;
        while let Some(i) = rill::poll(&mut readers) {
            match readers[i].read() {
                Some(v) => total += v,
                None => {
                    readers.swap_remove(i);
                }
            }
        }
        assert_eq!(total, 50 * 4950);
    })
    .unwrap();
}
