//! loom models of the two blocking protocols, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p rill --lib --release loom_models`.
//!
//! Each model drives the real `Slot`, `Core` and `Task` code through the
//! same steps as `Writer::push`, `Reader::read_empty` / `stream::block::block`, and
//! the worker's post and fall-asleep steps, with loom exploring every
//! interleaving. Under loom, `barrier::light` is a full fence: that is what the
//! heavy barrier (membarrier) guarantees for the fast side at the moment the
//! worker relies on it, so the model checks the protocol the heavy barrier
//! completes.

use std::sync::atomic::Ordering;

use loom::sync::Arc;
use loom::thread;

use crate::barrier;
use crate::stream::slot::{IDLE, WAITING};
use crate::stream::Core;
use crate::sync::{fence, AtomicBool};
use crate::task::{state, Task, TaskRef};
use crate::worker::Inbox;

struct SendTask(TaskRef);
// SAFETY: the model hands the task to the waker thread only through the slot
// protocol under test, exactly as the runtime does.
unsafe impl Send for SendTask {}
// SAFETY: as above.
unsafe impl Sync for SendTask {}

fn new_task() -> SendTask {
    task_with_id(1)
}

fn task_with_id(id: u64) -> SendTask {
    SendTask(TaskRef::new(Task::new(id, 0, "reader".into(), 0, None)))
}

/// The writer's fast path (Writer::push) on an empty ring against the
/// reader's blocking path (read_empty + block). Whatever the interleaving, the
/// reader either sees the message itself or ends up READY (woken): it is never
/// left BLOCKED with a message in the ring.
#[test]
fn stream_read_blocking_never_loses_a_wakeup() {
    loom::model(|| {
        let core = Arc::new(Core::<u32>::new(1, 2));
        let task = Arc::new(new_task());
        let c2 = core.clone();
        let writer = thread::spawn(move || {
            // Writer::push
            // SAFETY: single writer, position 0 of an empty ring.
            unsafe { c2.put(0, 7) };
            c2.fwd.tail.store(1, Ordering::Release);
            barrier::light(c2.fenced);
            if c2.fwd.rslot.state.load(Ordering::Relaxed) != IDLE {
                c2.fwd.rslot.wake();
            }
        });
        // Reader: the fast check failed (ring looked empty), so block.
        let t = task.0.get();
        let mut got = false;
        if core.has_data(0) {
            got = true;
        } else {
            t.transition_to_blocked();
            core.fwd
                .rslot
                .register(task.0.as_ptr(), std::ptr::null(), false);
            fence(Ordering::SeqCst);
            if (core.has_data(0) || core.back.wslot.is_closed()) && core.fwd.rslot.cancel() {
                got = true;
            }
            // else: a waker won the slot and will queue us.
        }
        writer.join().unwrap();
        if !got {
            // We suspended: someone must have made us READY.
            assert_eq!(
                t.state(),
                state::READY,
                "reader left blocked with data in the ring"
            );
        }
        assert_eq!(
            core.fwd.rslot.state.load(Ordering::Relaxed) == WAITING,
            false
        );
        // SAFETY: model-owned task, freed once after every thread is done.
        unsafe { task.0.free() };
    });
}

/// The writer closing the stream against the reader blocking on an empty
/// ring: the reader either sees the close or is woken.
#[test]
fn stream_close_wakes_a_blocked_reader() {
    loom::model(|| {
        let core = Arc::new(Core::<u32>::new(2, 1));
        let task = Arc::new(new_task());
        let c2 = core.clone();
        let closer = thread::spawn(move || {
            // Drop for Writer.
            c2.back.wslot.close();
            c2.fwd.rslot.wake();
        });
        let t = task.0.get();
        let mut saw_end = false;
        if core.back.wslot.is_closed() {
            saw_end = true;
        } else {
            t.transition_to_blocked();
            core.fwd
                .rslot
                .register(task.0.as_ptr(), std::ptr::null(), false);
            fence(Ordering::SeqCst);
            if (core.has_data(0) || core.back.wslot.is_closed()) && core.fwd.rslot.cancel() {
                saw_end = true;
            }
        }
        closer.join().unwrap();
        if !saw_end {
            assert_eq!(
                t.state(),
                state::READY,
                "reader left blocked after the writer closed"
            );
        }
        // SAFETY: model-owned task, freed once.
        unsafe { task.0.free() };
    });
}

/// Two wakers race for one task registered in two slots (poll): exactly one
/// of them (or the task's own cancel) wins.
#[test]
fn poll_has_exactly_one_winner() {
    loom::model(|| {
        let a = Arc::new(Core::<u32>::new(3, 1));
        let b = Arc::new(Core::<u32>::new(4, 1));
        let task = Arc::new(new_task());
        let t = task.0.get();
        t.transition_to_blocked();
        a.fwd
            .rslot
            .register(task.0.as_ptr(), std::ptr::null(), true);
        b.fwd
            .rslot
            .register(task.0.as_ptr(), std::ptr::null(), true);
        let (a2, b2) = (a.clone(), b.clone());
        let wa = thread::spawn(move || a2.fwd.rslot.wake());
        let wb = thread::spawn(move || b2.fwd.rslot.wake());
        let won_a = wa.join().unwrap();
        let won_b = wb.join().unwrap();
        assert!(won_a ^ won_b, "exactly one waker schedules the task");
        a.fwd.rslot.unregister();
        b.fwd.rslot.unregister();
        assert_eq!(t.state(), state::READY);
        // SAFETY: model-owned task, freed once.
        unsafe { task.0.free() };
    });
}

/// A waker against the owner withdrawing its registration (as the forced
/// unwind of a run's end does): when `unregister` returns, a waker that won
/// the slot has finished queueing the task (stored READY, the models'
/// stand-in for the post), so the task can be freed; a waker that lost has
/// done nothing to it.
#[test]
fn unregister_waits_until_a_winning_waker_has_queued_the_task() {
    loom::model(|| {
        let core = Arc::new(Core::<u32>::new(5, 1));
        let task = Arc::new(new_task());
        let t = task.0.get();
        t.transition_to_blocked();
        core.fwd
            .rslot
            .register(task.0.as_ptr(), std::ptr::null(), false);
        let c2 = core.clone();
        let waker = thread::spawn(move || c2.fwd.rslot.wake());
        core.fwd.rslot.unregister();
        let state_then = t.state();
        let won = waker.join().unwrap();
        assert_eq!(
            won,
            state_then == state::READY,
            "unregister returned while a waker was still queueing the task"
        );
        // SAFETY: model-owned task, freed once.
        unsafe { task.0.free() };
    });
}

/// The worker park/wake protocol (worker/README.md) with the real inbox: a
/// poster pushes (into the mail slot: the inbox is empty) and unparks the
/// worker if it announced sleep; the worker announces, re-checks, and parks.
/// The worker never sleeps through a posted task.
#[test]
fn park_wake_never_loses_a_post() {
    loom::model(|| {
        let inbox = Arc::new(Inbox::new());
        let sleeping = Arc::new(AtomicBool::new(false));
        let (i2, s2) = (inbox.clone(), sleeping.clone());
        let worker = thread::spawn(move || {
            // Fall-asleep steps.
            s2.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            while i2.is_empty() {
                thread::park();
            }
            s2.store(false, Ordering::Relaxed);
            let mut got = Vec::new();
            assert!(i2.drain(|t| got.push(t)));
            assert_eq!(got.len(), 1);
            // SAFETY: the model's task, drained once, freed once.
            unsafe { got[0].free() };
        });
        // Post-work steps.
        inbox.push(task_with_id(1).0);
        fence(Ordering::SeqCst);
        if sleeping.load(Ordering::SeqCst) {
            worker.thread().unpark();
        }
        // If a post could be lost, loom would report this join as a deadlock.
        worker.join().unwrap();
    });
}

/// Two posters race for the inbox's mail slot while the worker drains and
/// sleeps between drains: each task arrives exactly once, whichever of the
/// slot and the queue behind it carried it, and the worker never sleeps
/// through either post. Bounded to three preemptions (three threads with
/// park loops are too many interleavings to explore whole).
#[test]
fn inbox_delivers_two_racing_posts_once() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let inbox = Arc::new(Inbox::new());
        let sleeping = Arc::new(AtomicBool::new(false));
        let (i2, s2) = (inbox.clone(), sleeping.clone());
        let worker = thread::spawn(move || {
            let mut got = Vec::new();
            while got.len() < 2 {
                if i2.drain(|t| got.push(t)) {
                    continue;
                }
                s2.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                while i2.is_empty() {
                    thread::park();
                }
                s2.store(false, Ordering::Relaxed);
            }
            let mut ids: Vec<u64> = got.iter().map(|t| t.get().id).collect();
            ids.sort_unstable();
            assert_eq!(ids, vec![1, 2]);
            for t in got {
                // SAFETY: model-owned tasks, each drained once, freed once.
                unsafe { t.free() };
            }
        });
        let post = |id| {
            let (inbox, sleeping) = (inbox.clone(), sleeping.clone());
            let t = task_with_id(id);
            let w = worker.thread().clone();
            thread::spawn(move || {
                inbox.push(t.0);
                fence(Ordering::SeqCst);
                if sleeping.load(Ordering::SeqCst) {
                    w.unpark();
                }
            })
        };
        let a = post(1);
        let b = post(2);
        a.join().unwrap();
        b.join().unwrap();
        worker.join().unwrap();
    });
}

/// Count mode's hand-over of a stream end (`monitor/binding.rs`): the old
/// holder's worker counts the binding while the new holder cuts it and then
/// writes. Whatever the interleaving, the old binding counts exactly the two
/// messages its holder wrote, never the new holder's.
#[test]
fn a_cut_binding_counts_only_its_holders_messages() {
    use crate::monitor::binding::Binding;
    use crate::stream::Side;
    loom::model(|| {
        let core = std::sync::Arc::new(Core::<u32>::new(1, 4));
        let b = std::sync::Arc::new(Binding::new(core.clone(), Side::Writer, 1, 0));
        // The old holder wrote two messages (their cells do not matter here).
        core.fwd.tail.store(2, Ordering::Release);
        let (b2, c2) = (b.clone(), core.clone());
        let new_holder = thread::spawn(move || {
            // enter_slow's cut at the end's position, then Writer::push.
            b2.cut(2);
            c2.fwd.tail.store(3, Ordering::Release);
        });
        let (first, _, _) = b.take();
        new_holder.join().unwrap();
        let (rest, _, over) = b.take();
        assert_eq!((first, rest), (2, 0), "the old holder's count");
        assert!(over, "a cut binding is over");
    });
}

/// The liveness rule's hand-off between a worker and the ticker
/// (`worker/settle.rs`, `worker/ticker.rs`): the worker seals a window and
/// wakes the ticker if it sleeps until woken; the ticker announces that
/// sleep and looks for seals once more before it parks. Whatever the
/// interleaving, the ticker does not sleep through the seal, covers the
/// window, and the worker gets it back to re-check (loom reports a ticker
/// that parks for good as a deadlock).
#[test]
fn a_sealed_window_is_covered_even_if_the_ticker_sleeps() {
    use crate::stream::Side;
    use crate::worker::settle::{Settle, SettleWords};
    loom::model(|| {
        let words = Arc::new(SettleWords::new());
        let deep = Arc::new(AtomicBool::new(false));
        let (w2, d2) = (words.clone(), deep.clone());
        let ticker = thread::spawn(move || {
            // The deep sleep of `ticker::run`, then its `cover`.
            d2.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            while w2.owed().is_none() {
                thread::park();
            }
            d2.store(false, Ordering::Relaxed);
            // (membarrier here)
            let g = w2.owed().expect("a window is owed a barrier");
            w2.cover(g);
        });
        let mut settle = Settle::new(0);
        let core: std::sync::Arc<dyn crate::stream::Recheck> =
            std::sync::Arc::new(Core::<u32>::new(1, 1));
        settle.open.items.push((core, Side::Reader));
        let t = ticker.thread().clone();
        let wake = || {
            if deep.load(Ordering::Relaxed) {
                t.unpark();
            }
        };
        assert!(
            settle.step(&words, |_| {}, wake).is_empty(),
            "sealed, not yet covered"
        );
        let covered = loop {
            let done = settle.step(&words, |_| {}, || {});
            if !done.is_empty() {
                break done;
            }
            thread::yield_now();
        };
        assert_eq!(
            covered.len(),
            1,
            "the sealed window comes back to be re-checked"
        );
        ticker.join().unwrap();
    });
}

/// The cross-rank credit protocol (`dist/README.md`, "Flow control"), on
/// the real rings: a writer task, the writer rank's bridge (peeks and sends
/// a message, takes it out of its ring only when a credit says the far
/// reader has it), the reader rank's bridge (writes what arrives into its
/// ring, sends the reader's position back as a credit) and the reader task.
/// Every thread makes a bounded number of attempts instead of spinning (a
/// spinning model of four threads is beyond loom's reach), so loom explores
/// every interleaving of those attempts and checks safety: a message that
/// arrives always finds room in the reader's ring, messages arrive once
/// and in order, and no more than the capacity are ever written and not
/// yet read. (Progress is the mpirun and loopback tests' part.)
#[test]
fn credits_bound_a_cross_rank_stream_end_to_end() {
    use loom::sync::atomic::AtomicU64;
    const N: usize = 3;
    const CAP: usize = 1;
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let wring = Arc::new(Core::<u32>::new(1, CAP));
        let rring = Arc::new(Core::<u32>::new(2, CAP));
        // The wire, reduced to what the protocol allows in flight: with a
        // capacity of 1 at most one message (0: none, else value + 1), and
        // the latest credit (a total, so a later one replaces an earlier).
        let data = Arc::new(AtomicU64::new(0));
        let credit = Arc::new(AtomicU64::new(0));
        let read = Arc::new(AtomicU64::new(0));

        let (w, r) = (wring.clone(), read.clone());
        let writer = thread::spawn(move || {
            let mut tail = 0usize;
            for _ in 0..N {
                if tail.wrapping_sub(w.back.head.load(Ordering::Acquire)) < CAP {
                    assert!(tail as u64 - r.load(Ordering::SeqCst) <= CAP as u64);
                    // SAFETY: the only writer, with room checked above.
                    unsafe { w.put(tail, tail as u32) };
                    tail += 1;
                    w.fwd.tail.store(tail, Ordering::Release);
                }
            }
        });

        let (w, d, c) = (wring.clone(), data.clone(), credit.clone());
        let out_bridge = thread::spawn(move || {
            let (mut head, mut ahead, mut released) = (0usize, 0usize, 0u64);
            for _ in 0..3 {
                let total = c.load(Ordering::Acquire);
                while released < total {
                    // SAFETY: the only reader of this ring; the message at
                    // head was peeked and sent, so head < tail.
                    let _ = unsafe { w.take(head) };
                    head += 1;
                    w.back.head.store(head, Ordering::Release);
                    released += 1;
                    ahead -= 1;
                }
                if head + ahead < w.fwd.tail.load(Ordering::Acquire) {
                    // SAFETY: head <= head + ahead < tail, and this thread
                    // alone moves head.
                    let v = unsafe { *w.peek(head + ahead) };
                    assert_eq!(
                        d.load(Ordering::Acquire),
                        0,
                        "more in flight than the capacity"
                    );
                    d.store(u64::from(v) + 1, Ordering::Release);
                    ahead += 1;
                }
            }
        });

        let (rr, d, c) = (rring.clone(), data.clone(), credit.clone());
        let in_bridge = thread::spawn(move || {
            let (mut tail, mut credited) = (0usize, 0u64);
            for _ in 0..3 {
                let msg = d.load(Ordering::Acquire);
                if msg != 0 {
                    d.store(0, Ordering::Release);
                    let head = rr.back.head.load(Ordering::Acquire);
                    assert!(tail - head < CAP, "a message found no room");
                    // SAFETY: the only writer of this ring, room checked.
                    unsafe { rr.put(tail, (msg - 1) as u32) };
                    tail += 1;
                    rr.fwd.tail.store(tail, Ordering::Release);
                }
                let consumed = rr.back.head.load(Ordering::Acquire) as u64;
                if consumed > credited {
                    credited = consumed;
                    c.store(consumed, Ordering::Release);
                }
            }
        });

        // The reader task.
        let mut head = 0usize;
        for _ in 0..N {
            if rring.has_data(head) {
                // SAFETY: the only reader, head < tail.
                let v = unsafe { rring.take(head) };
                assert_eq!(v, head as u32, "in order, once");
                read.fetch_add(1, Ordering::SeqCst);
                head += 1;
                rring.back.head.store(head, Ordering::Release);
            }
        }
        writer.join().unwrap();
        out_bridge.join().unwrap();
        in_bridge.join().unwrap();
    });
}
