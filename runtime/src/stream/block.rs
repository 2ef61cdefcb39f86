//! Blocking a task on a stream: the spin before a block, and [`block`]
//! itself (register in the wait slots, fence, re-check the peer, suspend),
//! the task's half of the blocking protocol in `README.md` beside this
//! file.

use std::sync::atomic::Ordering;

use super::holder::Peer;
use super::slot::Slot;
use crate::context::{current_task_id, current_task_ptr, forced_unwinding, worker};
use crate::monitor::sample_state as sampler_state;
use crate::task::Suspend;
use crate::vocab::BlockedOn;
use crate::worker::{PendingList, WorkerLocal};

/// How many times [`spin_on`] looks before it gives up: with a `pause`
/// between looks, some microseconds, well inside the worker's own idle spin.
const TASK_SPIN: u32 = 256;

/// What a task about to block does first ([`before_block`]).
pub(crate) enum First {
    /// Spin on its worker ([`spin_on`]).
    Spin(&'static WorkerLocal),
    /// Make the run's idle-work passes ([`pass_on`]).
    Pass(&'static WorkerLocal),
}

/// Before a task blocks on a stream, with the current worker `w`, if that
/// worker has nothing else to run (no ready task, nothing in the inbox):
/// then what the task waits for can only come from another thread, and the
/// worker would look for it idle anyway, so the task may look first.
///
/// - [`First::Spin`]: where the worker spins idle, the task spins on it
///   first ([`spin_on`]): a message or free slot from another worker that
///   arrives meanwhile is taken without a block, a cross-worker wake, an
///   inbox post and a dispatch (a cross-worker round trip: about 1 µs down
///   to about 0.2 µs here). Not where workers share cores: the peer may be
///   waiting for this core.
/// - [`First::Pass`]: where the worker has no idle spin but the run's idle
///   workers carry a layer's work (the bridge across ranks), the task makes
///   the passes its worker would make once it blocked ([`pass_on`]): what
///   it waits for comes from such a pass (a frame from another rank), and a
///   task that finds it there goes on without a block, a wake and a
///   dispatch, on either side of a round trip. Not on a monitored worker
///   (its log would show the passes as the task's work).
///
/// On a monitored worker the caller brackets the spin with
/// [`hooks::spin_begin`](crate::hooks::spin_begin) and
/// [`hooks::spin_end`](crate::hooks::spin_end), which log it as what it
/// stands for: the period ends blocked, the spin is a wait, and a new period
/// begins. Inside one period the log would show a wait as work.
///
/// `w` is the running worker ([`worker`]), which the caller passes on to
/// [`block`] too (one thread-local read for both).
#[inline(always)]
pub(crate) fn before_block(w: Option<&'static WorkerLocal>) -> Option<First> {
    match w {
        // The common case on a busy worker: one look at its queues.
        Some(w) if !w.has_other_work() => {
            if w.may_spin() {
                Some(First::Spin(w))
            } else if w.task_passes() {
                Some(First::Pass(w))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// How many passes of the run's idle work [`pass_on`] makes before it gives
/// up: an empty pass is some hundreds of nanoseconds, so some microseconds
/// in all, about a message's round trip between ranks.
const TASK_PASSES: u32 = 32;

/// The passes of [`First::Pass`]: until `ready` comes true, other work
/// appears on `w`, the work closes, or [`TASK_PASSES`] went by. Returns
/// whether `ready` came true; the caller then looks again through its
/// normal path.
#[cold]
#[inline(never)]
pub(crate) fn pass_on(w: &WorkerLocal, ready: impl Fn() -> bool) -> bool {
    use crate::worker::idle_work::IdlePass;
    w.count_spin();
    for _ in 0..TASK_PASSES {
        if ready() {
            return true;
        }
        if w.has_other_work() {
            return false;
        }
        match w.task_pass() {
            IdlePass::Closed => return false,
            IdlePass::Worked => {}
            IdlePass::Nothing | IdlePass::Busy => std::hint::spin_loop(),
        }
    }
    ready()
}

/// Spins on `ready` for at most [`TASK_SPIN`] looks, giving up as soon as
/// other work appears on `w` (see [`before_block`]). Returns whether `ready`
/// came true; the caller then looks again through its normal path.
#[cold]
#[inline(never)]
pub(crate) fn spin_on(w: &WorkerLocal, ready: impl Fn() -> bool) -> bool {
    w.count_spin();
    if !w.is_sampled() {
        return spin_looking(w, ready);
    }
    let task = current_task_id();
    w.say(sampler_state::task(task, sampler_state::SPIN));
    let got = spin_looking(w, ready);
    // Back to the worker's own state: while the task runs, samples take it
    // from the current-task word (`self_sample::sampled_word`).
    w.say(sampler_state::SCHED);
    got
}

/// [`spin_on`]'s loop.
#[inline(always)]
fn spin_looking(w: &WorkerLocal, ready: impl Fn() -> bool) -> bool {
    for _ in 0..TASK_SPIN {
        std::hint::spin_loop();
        if ready() {
            return true;
        }
        if w.has_other_work() {
            return false;
        }
    }
    false
}

/// Blocks the current task until `ready` holds, registered in `slots`.
/// Returns true after the task was woken (or found `ready` on its
/// re-check); the caller loops and tries again. `blocked_on` is left as it
/// was set here: it means something only while the task is BLOCKED.
///
/// Returns false, without blocking, while the run that owned the task is
/// unwinding it ([`forced_unwinding`]): a destructor that writes to a full
/// stream or reads an empty one then sees the stream as closed, instead of
/// suspending a coroutine that is being dropped.
///
/// `note` records the task (given its holder word) as the holder of the
/// side(s) it blocks on (`Holder::note_as`), for reports and the stall
/// rule. `held` says what the holder of the side(s) waited on is to the
/// task's run (given the task's holder word; `stream/holder.rs`), counted
/// for the run's stall rule while the task is suspended.
///
/// `peer` runs after the registration fence: it re-checks the peer side of
/// the stream(s) and wakes a peer whose registration this task's own earlier
/// operations may have missed (the fast path's barrier is a compiler fence,
/// see `barrier.rs`). The fence makes that re-check exact: of the peer's
/// registration fence and ours, the later one's loads see the earlier one's
/// stores. Both are left out where the peer runs on this task's own thread
/// ([`WorkerLocal::peer_here`](crate::worker::WorkerLocal::peer_here), which
/// says why that is sound).
///
/// # Panics
/// Outside a rill task, unless the run is unwinding: blocking needs a task
/// to suspend.
///
/// `w` is the running worker, as [`worker`] gives it (`None` where no
/// worker runs), read by the caller.
// Each closure is one step of the protocol that depends on what is waited
// on (a read, a write, a poll); a struct of them would only rename them.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
#[track_caller]
pub(crate) fn block(
    w: Option<&'static WorkerLocal>,
    slots: &[&Slot],
    on: BlockedOn,
    note: impl FnOnce(u64),
    held: impl Fn(u64) -> Peer,
    ready: impl Fn() -> bool,
    peer: impl FnOnce(),
    pend: impl FnOnce(&mut PendingList),
) -> bool {
    let tp = current_task_ptr();
    if tp.is_null() {
        return block_outside_task();
    }
    // SAFETY: the current task is alive while it runs.
    let task = unsafe { &*tp };
    // The task's word, which `current_holder` would load again through
    // the thread's current task.
    note(task.holder);
    task.blocked_on.with_mut(|b| {
        // SAFETY: only the running task touches blocked_on while it runs.
        unsafe { *b = on }
    });
    let many = slots.len() > 1;
    task.transition_to_blocked();
    let me = w.map_or(std::ptr::null(), |w| w.me());
    for s in slots {
        s.register(tp, me, many);
    }
    // Unregisters on every way out, the forced unwind of a run that ends
    // while the task is suspended included: a slot never keeps a pointer to
    // a task that is gone (an end that outlives its task, leaked or kept by
    // another thread, would wake freed memory).
    let registered = Registered(slots);
    // The peer side is held by a task of this run, and the run's tasks all
    // run on this thread: no fence, no re-check (see `peer_here` for why
    // that is sound). One test of a flag where the run has more workers.
    let here = w.is_some_and(|w| w.peer_here()) && held(task.holder) == Peer::Inside;
    if !here {
        // The registering side's store-load barrier: pairs with the peer's
        // light barrier (see barrier.rs), and closes the race in which the
        // peer wrote or closed between our last look and our registration.
        crate::sync::fence(Ordering::SeqCst);
        peer();
    }
    if ready() {
        // A task registered in one slot is arbitrated there, in several (a
        // poll) by its state word: exactly one of its wakers and its cancel
        // wins.
        let cancelled = if many {
            task.transition_to_running_cancel()
        } else {
            slots[0].cancel()
        };
        if cancelled {
            task.transition_to_running();
            return true;
        }
        // A waker won and is queueing us: we must suspend.
    } else if let Some(w) = w {
        w.note_pending(pend);
    }
    // Counted while suspended, for the run's stall rule (`worker/README.md`):
    // one compare when the peer is held in this run. Loaded after the fence
    // where there was one: a side that an outside thread has just marked
    // (`Holder::note`, which then wakes this slot) is seen as marked here, or
    // its wake saw the registration.
    let held = if here {
        Peer::Inside
    } else {
        held(task.holder)
    };
    let counted = if held == Peer::Inside {
        std::ptr::null()
    } else {
        count_waiting(held)
    };
    // SAFETY: as in yield_now.
    unsafe { (*task.yielder.get()).suspend(Suspend::Blocked) };
    if !counted.is_null() {
        // SAFETY: the counter is the run's, which outlives its tasks. (A task
        // unwound at the run's end never gets here: the count no longer
        // matters then.)
        uncount_waiting(unsafe { &*counted });
    }
    drop(registered);
    true
}

/// Counts a task about to suspend in its run's `waits_outside` or
/// `waits_unknown` (the peer it waits on is held outside the run, or not
/// known); returns the counter, for [`uncount_waiting`] when it resumes.
/// The run is the running worker's: a task runs only on a worker of its
/// own run.
#[cold]
#[inline(never)]
fn count_waiting(peer: Peer) -> *const std::sync::atomic::AtomicUsize {
    let Some(w) = worker() else {
        return std::ptr::null();
    };
    let shared = &w.shared;
    let c = match peer {
        Peer::Outside => &shared.waits_outside,
        _ => &shared.waits_unknown,
    };
    // SeqCst: before the task suspends and its worker counts itself idle
    // (SeqCst), so a deadlock check that sees every worker idle sees this
    // count too.
    c.fetch_add(1, Ordering::SeqCst);
    c
}

/// Takes a resumed task out of the count [`count_waiting`] put it in.
#[cold]
#[inline(never)]
fn uncount_waiting(c: &std::sync::atomic::AtomicUsize) {
    c.fetch_sub(1, Ordering::SeqCst);
}

/// [`block`] called where no task runs: during a run's forced unwind a
/// destructor's blocking operation fails (false); anywhere else it is a
/// programming error.
#[cold]
#[inline(never)]
#[track_caller]
fn block_outside_task() -> bool {
    assert!(
        forced_unwinding(),
        "rill: a blocking stream operation was called outside a rill task (use try_read/try_write there)"
    );
    false
}

/// A task's registrations in its wait slots, withdrawn when dropped.
struct Registered<'a>(&'a [&'a Slot]);

impl Drop for Registered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        for s in self.0 {
            s.unregister();
        }
    }
}
