//! A wait slot: one side's "I am waiting" / "I am closed" word, and the task
//! that waits. See `README.md` beside this file for the protocol.

use std::sync::atomic::Ordering;

use crate::sync::{AtomicBool, AtomicPtr, AtomicU8};
use crate::task::{Task, TaskRef};
use crate::worker::WorkerShared;

/// Nobody waits; the side is open.
pub(crate) const IDLE: u8 = 0;
/// The side's task is registered in `task` and may be blocked.
pub(crate) const WAITING: u8 = 1;
/// A waker won the slot and is reading `task`; it will store IDLE next.
pub(crate) const WAKING: u8 = 2;
/// The side's end was dropped or closed; it never waits again.
pub(crate) const CLOSED: u8 = 3;

/// One side's wait slot. Only the side's owner moves IDLE→WAITING,
/// WAITING→IDLE (unregister, cancel) and IDLE→CLOSED; wakers move
/// WAITING→WAKING→IDLE.
///
/// Besides the task, a registration records the worker that owns it and
/// whether the task waits in other slots too, so that a waker finds where
/// to queue the task on this line, without touching the task's own (which
/// stays in its worker's cache).
pub(crate) struct Slot {
    pub(crate) state: AtomicU8,
    /// Whether the registered task is registered in other slots too (poll).
    many: AtomicBool,
    /// The registered task. Written only by the owner while the state is IDLE;
    /// read only by the waker that moved WAITING→WAKING (see `wake`).
    task: AtomicPtr<Task>,
    /// The worker the registered task belongs to (null in the loom models),
    /// as `task`.
    worker: AtomicPtr<WorkerShared>,
}

impl Slot {
    pub(crate) fn new() -> Slot {
        Slot {
            state: AtomicU8::new(IDLE),
            many: AtomicBool::new(false),
            task: AtomicPtr::new(std::ptr::null_mut()),
            worker: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The owner registers `task`, of `worker`, as the waiter; `many` when
    /// the task registers in other slots too. The task must already be in
    /// the BLOCKED state.
    pub(crate) fn register(&self, task: *const Task, worker: *const WorkerShared, many: bool) {
        // A waker that lost the race for our task may still be finishing with
        // this slot; it stores IDLE within a few instructions.
        if self.state.load(Ordering::Acquire) == WAKING {
            self.wait_out_waking();
        }
        // Relaxed: the state is IDLE (only we could have moved it elsewhere),
        // so no waker reads these now; the Release below publishes them.
        self.task.store(task.cast_mut(), Ordering::Relaxed);
        self.worker.store(worker.cast_mut(), Ordering::Relaxed);
        self.many.store(many, Ordering::Relaxed);
        // Release: pairs with the waker's Acquire compare-exchange, publishing
        // the fields above and everything the task wrote before blocking.
        self.state.store(WAITING, Ordering::Release);
    }

    /// The owner of a task registered here alone takes its registration
    /// back because its re-check found what it waits for. True when it did:
    /// no waker has the task. False when a waker won the slot first: that
    /// waker owns the task and queues it, so the task must suspend.
    #[must_use]
    pub(crate) fn cancel(&self) -> bool {
        // AcqRel: against the waker's compare-exchange on the same word;
        // exactly one of the two leaves WAITING.
        self.state
            .compare_exchange(WAITING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The owner withdraws its registration after it woke or cancelled. Waits
    /// for a waker still busy with the slot, so that nobody touches the task
    /// after this returns.
    pub(crate) fn unregister(&self) {
        // Usually the waker already stored IDLE: a plain load, no locked
        // instruction. Only the owner moves IDLE→WAITING, so IDLE stays IDLE.
        if self.state.load(Ordering::Acquire) == IDLE {
            return;
        }
        // Still WAITING (a poll's other slots, a cancel): take it back. AcqRel:
        // against the waker's compare-exchange, as in `cancel`.
        if self
            .state
            .compare_exchange(WAITING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.unregister_slow();
        }
    }

    /// [`unregister`](Self::unregister) when a waker holds the slot: out of
    /// line, so that the spin's call of `sched_yield` is not set up on the
    /// path of every block (LLVM hoisted the load of its address there).
    #[cold]
    #[inline(never)]
    fn unregister_slow(&self) {
        let mut spins = 0;
        loop {
            match self
                .state
                .compare_exchange(WAITING, IDLE, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(WAKING) => spin(&mut spins),
                Err(_) => return,
            }
        }
    }

    /// [`register`](Self::register)'s wait for a waker in WAKING (out of
    /// line, as [`unregister_slow`](Self::unregister_slow)).
    #[cold]
    #[inline(never)]
    fn wait_out_waking(&self) {
        let mut spins = 0;
        // Acquire: as in `register`, whose Relaxed stores follow this.
        while self.state.load(Ordering::Acquire) == WAKING {
            spin(&mut spins);
        }
    }

    /// The owner closes its side. The owner is running, so its slot is IDLE.
    /// SeqCst: the closing side's store-load barrier (it loads the peer's slot
    /// next), pairing with the peer's registration fence.
    pub(crate) fn close(&self) {
        self.state.swap(CLOSED, Ordering::SeqCst);
        // Store-load barrier before the caller loads the peer's slot; pairs
        // with the fence a registering peer runs before its re-check.
        crate::sync::fence(Ordering::SeqCst);
    }

    /// Is this side closed?
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) == CLOSED
    }

    /// Wakes the registered waiter, if any. Returns true when this call moved
    /// the task to READY and scheduled it (monitored ends record that).
    #[inline]
    pub(crate) fn wake(&self) -> bool {
        self.wake_body()
    }

    /// [`wake`](Self::wake) for callers that record nothing: without a result
    /// to return, the queueing of the woken task is a tail call.
    #[inline(never)]
    pub(crate) fn wake_unreported(&self) {
        self.wake_body();
    }

    /// Callers are cold paths themselves (a peer was found waiting). The
    /// common case, a task of the running worker waiting here alone, is
    /// written inline and calls nothing, so that `wake_unreported` needs no
    /// frame (no callee-saved register to save); the others are calls of
    /// their own.
    #[inline(always)]
    fn wake_body(&self) -> bool {
        // Acquire: pairs with `register`'s Release store. Wakers of one slot
        // can race (the peer end's holder, re-checks after a barrier), so
        // winning the slot takes a compare-exchange.
        if self
            .state
            .compare_exchange(WAITING, WAKING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // We hold WAKING, so the owner does not rewrite the fields, and the
        // task cannot be freed: it is BLOCKED (only a winner may run it) or
        // it is spinning in `unregister` until we store IDLE below. Relaxed:
        // published by the registration our Acquire above pairs with.
        let task = self.task.load(Ordering::Relaxed);
        let worker = self.worker.load(Ordering::Relaxed);
        if self.many.load(Ordering::Relaxed) {
            return self.wake_many(task, worker);
        }
        // The task waits here alone, so its own cancel goes through this
        // slot too (`cancel`): winning the slot made us its only owner,
        // and its state word needs no compare-exchange.
        let Some(w) = crate::worker::worker_if_mine(worker) else {
            self.wake_posted(task, worker);
            return true;
        };
        // SAFETY: winning the slot made us the task's only owner, and a
        // registration stores the pointer of the live task that blocks
        // (`block::block` registers only where a task runs): not null.
        let t = unsafe { TaskRef::from_ptr_unchecked(task) };
        // It registered while running on this worker, whose thread now runs
        // us: it is suspended.
        t.get().transition_to_ready_uncontended();
        // Release: as in `wake_many`.
        self.state.store(IDLE, Ordering::Release);
        w.push_woken(t);
        true
    }

    /// [`wake_body`](Self::wake_body) for a task of another worker (or any
    /// task, woken from outside the run) waiting in this slot alone, which
    /// the caller won: into its worker's inbox, without touching the task
    /// (the line stays in its worker's cache; the worker marks it running
    /// when it dispatches it).
    #[inline(never)]
    fn wake_posted(&self, task: *mut Task, worker: *mut WorkerShared) {
        // SAFETY: winning the slot made us the task's only owner.
        crate::worker::post(worker, unsafe { TaskRef::from_ptr(task) });
        // Release: as in `wake_many`, after the post.
        self.state.store(IDLE, Ordering::Release);
    }

    /// [`wake_body`](Self::wake_body) for a task that waits in several
    /// slots (poll), after the caller won this one: wakers of different
    /// slots, and the task's own cancel, race for its state word.
    #[inline(never)]
    fn wake_many(&self, task: *mut Task, worker: *mut WorkerShared) -> bool {
        crate::sync::prefetch_write(task);
        // SAFETY: as in `wake_body`, the pointer is alive until we store IDLE.
        let won = unsafe { &*task }.transition_to_ready_from_blocked();
        if won {
            // SAFETY: winning BLOCKED→READY made us the task's only owner.
            crate::worker::hand_to(worker, unsafe { TaskRef::from_ptr(task) });
        }
        // Release: after this the owner may reuse the slot. Stored only
        // after the task was queued: until then the owner's `unregister`
        // waits, so neither the task nor its run can be freed under a waker
        // that is still queueing it (a thread outside the run may hold the
        // peer end while the run ends and drops its tasks).
        self.state.store(IDLE, Ordering::Release);
        won
    }
}

/// Waits a moment for a waker that holds WAKING. It stores IDLE within a
/// few instructions unless its thread was preempted; after a while, give
/// the processor to it (on a machine with more threads than cores the
/// waker may be waiting for ours).
#[inline]
fn spin(spins: &mut u32) {
    *spins += 1;
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    if spins.is_multiple_of(1024) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}
