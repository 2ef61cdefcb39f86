//! Liveness with a peer outside the run: a thread that is no worker of the
//! run writes to a stream that a task reads. Its fast path has only a
//! compiler fence (`barrier.rs`), so it can miss the reader's registration;
//! the run must find that miss by itself (the liveness rule,
//! `worker/README.md`), also when it has one worker. A file of its own, so
//! that its busy outside thread does not run beside the other liveness
//! tests.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::{scale, with_progress_guard};
use rill::Runtime;
/// A run whose reader is fed by a thread outside the run, one
/// message at a time: the outside thread writes message `i` only after the
/// reader took `i - 1`, so every write races the reader's registration on
/// the then empty stream, and a write that misses it is never followed by
/// another. `c` yields beside the reader on worker 0, so that worker never
/// idles: a miss is found by the liveness rule's barrier (the ticker's, or
/// with one worker the worker's own), not by a settle before parking.
fn outside_writer(n: u64, workers: usize, got: Arc<AtomicU64>) -> u64 {
    // `a` and `c` share worker 0, so that worker never idles.
    let table = rill::ManualTable::new().with("a", 0).with("c", 0);
    let mut rt = Runtime::builder()
        .workers(workers)
        .mapping(rill::Mapping::Manual(table))
        .capacity(4)
        .build()
        .expect("config");
    let (mut sw, mut sr) = rill::stream::<u64>(4);
    let done = Arc::new(AtomicBool::new(false));
    let (got2, got3, done2) = (got.clone(), got.clone(), done.clone());
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let mut spins = 0u32;
            while got3.load(Ordering::Acquire) != i {
                // Spin first (the race needs a prompt write), then give the
                // core away: a hang is what the guard below looks for.
                spins += 1;
                if spins < 10_000 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            sw.try_write(i).expect("the ring has room");
        }
    });
    rt.spawn("a", move || {
        let mut next = 0;
        while let Some(v) = sr.read() {
            assert_eq!(v, next, "messages arrive once and in order");
            next += 1;
            got2.store(next, Ordering::Release);
        }
        done2.store(true, Ordering::Release);
    });
    rt.spawn("c", move || {
        while !done.load(Ordering::Acquire) {
            rill::yield_now();
        }
    });
    rt.run().expect("the run ends");
    writer.join().expect("the outside writer");
    got.load(Ordering::Relaxed)
}

#[test]
fn an_outside_writer_is_not_missed_on_one_or_two_workers() {
    let (r, n) = scale();
    // A handshake per message (about 1.5 µs on a quiet host, far more on a
    // loaded one): 20 rounds at most. A missed write that nothing finds
    // stops the messages for good; the guard fails the test when none
    // arrives for 30 s, however long the round takes.
    for workers in [1, 2] {
        for round in 0..r.min(20) {
            let progress = Arc::new(AtomicU64::new(0));
            let p = progress.clone();
            let got = with_progress_guard(
                &format!("outside writer, {workers} worker(s), round {round}"),
                30,
                progress,
                move || outside_writer(n, workers, p),
            );
            assert_eq!(got, n, "every message arrives");
        }
    }
}
