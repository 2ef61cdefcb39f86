//! loom models of the two blocking protocols, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p rill --lib --release loom_models`.
//!
//! Each model drives the real `Slot`, `Core` and `Task` code through the
//! same steps as `Writer::push`, `Reader::read_empty` / `context::block`, and
//! the worker's post and fall-asleep steps, with loom exploring every
//! interleaving. Under loom, `barrier::light` is a full fence: that is what the
//! heavy barrier (membarrier) guarantees for the fast side at the moment the
//! worker relies on it, so the model checks the protocol the heavy barrier
//! completes.

use std::sync::atomic::Ordering;

use loom::sync::Arc;
use loom::thread;

use crate::barrier;
use crate::stream::slot_api::{IDLE, WAITING};
use crate::stream::Core;
use crate::sync::{fence, AtomicBool, AtomicUsize};
use crate::task::{state, Task, TaskRef};

struct SendTask(TaskRef);
// SAFETY: the model hands the task to the waker thread only through the slot
// protocol under test, exactly as the runtime does.
unsafe impl Send for SendTask {}
// SAFETY: as above.
unsafe impl Sync for SendTask {}

fn new_task() -> SendTask {
    SendTask(TaskRef::new(Task::new(
        std::ptr::null(),
        1,
        0,
        "reader".into(),
        0,
        None,
    )))
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
            c2.tail.store(1, Ordering::Release);
            barrier::light(c2.fenced);
            if c2.rslot.state.load(Ordering::Relaxed) != IDLE {
                c2.rslot.wake();
            }
        });
        // Reader: the fast check failed (ring looked empty), so block.
        let t = task.0.get();
        let mut got = false;
        if core.has_data(0) {
            got = true;
        } else {
            t.transition_to_blocked();
            core.rslot.register(task.0.as_ptr());
            fence(Ordering::SeqCst);
            if core.has_data(0) || core.wslot.is_closed() {
                if t.transition_to_running_cancel() {
                    core.rslot.unregister();
                    got = true;
                }
                // else: a waker won and will schedule us.
            }
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
        assert_eq!(core.rslot.state.load(Ordering::Relaxed) == WAITING, false);
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
            c2.wslot.close();
            c2.rslot.wake();
        });
        let t = task.0.get();
        let mut saw_end = false;
        if core.wslot.is_closed() {
            saw_end = true;
        } else {
            t.transition_to_blocked();
            core.rslot.register(task.0.as_ptr());
            fence(Ordering::SeqCst);
            if (core.has_data(0) || core.wslot.is_closed()) && t.transition_to_running_cancel() {
                core.rslot.unregister();
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
        a.rslot.register(task.0.as_ptr());
        b.rslot.register(task.0.as_ptr());
        let (a2, b2) = (a.clone(), b.clone());
        let wa = thread::spawn(move || a2.rslot.wake());
        let wb = thread::spawn(move || b2.rslot.wake());
        let won_a = wa.join().unwrap();
        let won_b = wb.join().unwrap();
        assert!(won_a ^ won_b, "exactly one waker schedules the task");
        a.rslot.unregister();
        b.rslot.unregister();
        assert_eq!(t.state(), state::READY);
        // SAFETY: model-owned task, freed once.
        unsafe { task.0.free() };
    });
}

/// The worker park/wake protocol (worker/README.md): a poster pushes to the
/// inbox and unparks if the worker announced sleep; the worker announces,
/// re-checks, and parks. The worker never sleeps through a posted task.
#[test]
fn park_wake_never_loses_a_post() {
    loom::model(|| {
        let inbox = Arc::new(AtomicUsize::new(0));
        let sleeping = Arc::new(AtomicBool::new(false));
        let (i2, s2) = (inbox.clone(), sleeping.clone());
        let worker = thread::spawn(move || {
            // Fall-asleep steps.
            s2.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            loop {
                if i2.load(Ordering::SeqCst) > 0 {
                    break;
                }
                thread::park();
            }
            s2.store(false, Ordering::Relaxed);
        });
        // Post-work steps.
        inbox.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if sleeping.load(Ordering::SeqCst) {
            worker.thread().unpark();
        }
        // If a post could be lost, loom would report this join as a deadlock.
        worker.join().unwrap();
    });
}
