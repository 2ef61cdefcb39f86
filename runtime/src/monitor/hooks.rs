//! The monitoring hooks the runtime calls. Application code is never
//! instrumented: every event comes from here.
//!
//! Each hook costs one predictable branch when monitoring is off: a relaxed
//! load of [`ACTIVE`] (the number of runs with monitoring on in this
//! process). Without the `monitor` cargo feature `hooks_off.rs` stands in
//! for this file: the same functions, empty, and every hook vanishes. When
//! a run monitors, the hook finds the worker's [`WorkerLog`] through the
//! thread-local worker pointer; threads that are not workers record nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::binding::Binding;
use super::hint::Hint;
use super::period::{self, kind, EndMon};
pub(crate) use super::worker_log::end_state_of;
use super::worker_log::WorkerLog;
use crate::context;
use crate::tls;
use crate::vocab::{BlockedOn, Recheck, Side};

/// Runs in this process that monitor; hooks do nothing while it is 0.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The one branch every hook starts with.
#[inline(always)]
pub(crate) fn on() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Whether a stream operation on the end whose state is `end` needs nothing
/// more from monitoring: `hint_lets`, the compare of its side's hint with
/// the end's address (`hint.rs`). The operation's one check; with the
/// hooks compiled out it compares the end's stamp with 0 instead.
#[inline(always)]
pub(crate) fn skips(_end: &EndMon, hint_lets: impl FnOnce() -> bool) -> bool {
    hint_lets()
}

impl EndMon {
    /// Whether the end's stream operations need nothing more than this
    /// check: its stamp is this thread's [`fast`](period::fast) one (0,
    /// plain, with monitoring off; the running task's tag in count mode).
    ///
    /// Stays a compare with memory because the record path loads the stamp
    /// again, volatile ([`stamp_again`](Self::stamp_again)); sharing one
    /// load, LLVM keeps the value in a register across the operation.
    #[inline(always)]
    pub(crate) fn is_fast(&self) -> bool {
        tls::is_fast(self.stamp)
    }
}

/// The calling worker's log, if this thread is a worker of a monitored run.
#[inline]
fn with_log(f: impl FnOnce(&mut WorkerLog)) {
    let w = context::current_worker_ptr();
    if w.is_null() {
        return;
    }
    // SAFETY: the worker pointer is valid while its loop runs on this thread,
    // and the log is only touched from this thread, never across a resume.
    if let Some(log) = unsafe { (*w).log_mut() } {
        f(log)
    }
}

#[cold]
#[inline(never)]
pub(crate) fn stream_open(id: u64, cap: usize, name: Option<&str>) {
    if on() {
        let creator = context::current_task_id();
        with_log(|l| l.stream_open(id, cap, creator, name));
    }
}

#[cold]
#[inline(never)]
pub(crate) fn stream_bind(id: u64, side: Side) {
    if on() {
        let task = context::current_task_id();
        with_log(|l| l.stream_bind(id, side, task));
    }
}

/// Called from every end's `Drop`, with what the end moved and how often it
/// waited over its life: the check inline, the rest out of line, so that a
/// task's code that drops ends stays small enough to inline the stream fast
/// path.
#[inline(always)]
pub(crate) fn stream_close(id: u64, side: Side, messages: u64, waits: u64) {
    if on() {
        stream_close_cold(id, side, messages, waits);
    }
}

#[cold]
#[inline(never)]
fn stream_close_cold(id: u64, side: Side, messages: u64, waits: u64) {
    with_log(|l| l.stream_close(id, side, messages, waits));
}

#[cold]
#[inline(never)]
pub(crate) fn stream_replace(side: Side, old: u64, new: u64) {
    if on() {
        with_log(|l| l.stream_replace(side, old, new));
    }
}

/// The monitoring check at the start of a stream operation that may move a
/// message through `end`, whose stamp is not this thread's fast one (see
/// [`EndMon`]): records the message (a key append, on this thread) if the
/// end is listed in the running ops-mode period. False when the end needs
/// [`enter_slow`]: it is unbound, bound to another task or not listed in the
/// running period, or its message goes to the worker's log.
///
/// The message is recorded before it moves; an operation that moves nothing
/// (it blocks, or finds the stream empty, full or closed) calls [`leave`].
/// So each stream operation makes one check, a compare of the end's stamp
/// with the thread's fast stamp; with monitoring off or in count mode that
/// is all.
#[inline(always)]
pub(crate) fn enter(end: &EndMon) -> bool {
    period::record(end)
}

/// The rest of [`enter`], for an end whose stamp is not this thread's
/// [`fast`](period::fast) one and that [`enter`] did not record: `at` is
/// the end's position and `core` makes a keep-alive handle of its stream.
///
/// - No period that records messages runs here: the end becomes plain (0)
///   and leaves its binding, if any.
/// - Count mode: the end leaves its binding (the old holder counts up to
///   `at`) and is bound to the running task, with its tag as stamp.
/// - Otherwise: list it in the running period (on this thread, no log
///   lookup) and record; anything else goes to [`message_cold`].
///
/// Always inlined into the ends' out-of-line `enter_cold`: called there, it
/// cost ops mode about 33 instructions more per end and period (a second
/// prologue, the recorder found again, the closure called through a
/// pointer) than the listing written into `enter_cold` did.
#[inline(always)]
pub(crate) fn enter_slow(
    end: &mut EndMon,
    id: u64,
    side: Side,
    at: usize,
    core: &dyn Fn() -> Arc<dyn Recheck>,
) {
    let write = side == Side::Writer;
    // SAFETY: the recorder lives as long as this thread (see `period::with`)
    // and the reference does not leave this function.
    let r = unsafe { &*period::current() };
    match r.run_kind() {
        // A period that records messages means a monitored run (on() holds).
        kind::NONE => {
            end.unbind(at);
            end.stamp = 0;
        }
        kind::COUNT => bind_counted(end, id, side, at, core, r.fast()),
        _ => {
            end.unbind(at);
            if !(r.list(end, id, write) && r.record(end)) {
                message_cold(end, id, write)
            }
        }
    }
}

/// After the slow way of an operation on `end` (now at `addr`, with side
/// hint `hint`): arms the hint when the end may skip monitoring from now
/// on (`hint.rs`): on a thread that records nothing about streams, for good;
/// in count mode, for an end bound to the running task, until the task's
/// period ends (its binding keeps the address for the task's next periods).
/// Inlined into the ends' out-of-line `enter_cold`.
#[inline(always)]
pub(crate) fn arm(end: &EndMon, hint: &Hint, addr: usize) {
    if !end.is_fast() {
        return;
    }
    // SAFETY: the recorder lives as long as this thread (see `period::with`)
    // and the reference does not leave this function.
    let r = unsafe { &*period::current() };
    let arm = match r.run_kind() {
        kind::COUNT => end.bind.is_some(),
        // A period of a run that records nothing about streams: nothing
        // to record here, ever.
        kind::NONE if r.epoch() != 0 => true,
        // No period on this thread: a worker of a run that does not
        // monitor, or a thread outside runs (whose end may go on to a task
        // of a monitored run without moving, so only while none monitors).
        kind::NONE => {
            let w = context::current_worker_ptr();
            // SAFETY: the worker pointer is valid while its loop runs on this
            // thread.
            !on() || (!w.is_null() && !unsafe { &*w }.is_monitored())
        }
        _ => false,
    };
    if arm {
        hint.arm(addr);
        if let Some(b) = &end.bind {
            b.set_addr(addr);
        }
    }
}

/// [`enter_slow`] in count mode: the end leaves its binding (the old holder
/// counts up to `at`) and is bound to the running task, whose tag is `tag`.
/// Out of line, so that ops mode's listing stays inline in `enter_slow`.
#[cold]
#[inline(never)]
fn bind_counted(
    end: &mut EndMon,
    id: u64,
    side: Side,
    at: usize,
    core: &dyn Fn() -> Arc<dyn Recheck>,
    tag: u64,
) {
    end.unbind(at);
    let task = context::current_task_ptr();
    if task.is_null() {
        end.stamp = 0;
        return;
    }
    let b = Arc::new(Binding::new(core(), side, id, at));
    // SAFETY: a counting period runs on this thread, so the current task
    // pointer is the running task's, alive while it runs.
    unsafe { &*task }.mon.push(b.clone());
    end.bind = Some(b);
    end.stamp = tag;
}

/// The operation [`enter`] (or [`enter_slow`]) recorded moved nothing: take
/// the message back. For an end whose stamp is not the thread's fast one.
///
/// Out of line: inlined into every blocking path of a stream end, it kept a
/// pointer to the end's stamp alive across the writer's loop, and the
/// write's check loaded the stamp through it.
#[cold]
#[inline(never)]
pub(crate) fn leave(end: &EndMon) {
    period::with(|r| {
        if !r.leave(end) && on() && r.epoch() != 0 && end.epoch() == r.epoch() {
            with_log(|l| l.unmessage(end));
        }
    })
}

/// The worker's log's part of [`enter_slow`]: list an end beyond the
/// thread-local entries, spill a full key list, or record a `SLOW` message.
#[cold]
#[inline(never)]
fn message_cold(end: &mut EndMon, id: u64, write: bool) {
    with_log(|l| l.message(end, id, write));
}

/// The last operation on `end` woke the task on the other side. That
/// operation listed the end in the period, if one runs.
/// Inline into the ends' out-of-line wake paths.
#[inline]
pub(crate) fn woke_peer(end: &EndMon) {
    if on() {
        if let Some(b) = &end.bind {
            // Count mode: the end is bound to the running task (its
            // operation just now made sure of that).
            b.set_woke();
            return;
        }
        let over = period::with(|r| {
            let listed = r.epoch() != 0 && end.epoch() == r.epoch() && end.kind() != 0;
            if listed {
                r.set_woke(end.idx());
            }
            listed && usize::from(end.idx()) >= period::MAX_IO
        });
        if over {
            with_log(|l| l.woke_peer(end));
        }
    }
}

#[cold]
#[inline(never)]
pub(crate) fn task_assigned(id: u64, parent: u64, worker: usize, name: &str) {
    if on() {
        with_log(|l| l.task_assign(id, parent, worker, name));
    }
}

#[cold]
#[inline(never)]
pub(crate) fn task_migrated(id: u64, from: usize, to: usize) {
    if on() {
        with_log(|l| l.task_migrate(id, from, to));
    }
}

/// A task of a monitored worker is about to spin before blocking on
/// `blocked` (`stream::block::before_block`): its period ends here, as it would if it
/// blocked.
#[cold]
#[inline(never)]
pub(crate) fn spin_begin(blocked: &BlockedOn) {
    if on() {
        let task = context::current_task_ptr();
        if task.is_null() {
            return;
        }
        // SAFETY: a task spins inside its own dispatch, so the current task
        // pointer is its own, alive while it runs.
        let task = unsafe { &*task };
        with_log(|l| l.end_period(task, end_state_of(true, blocked)));
    }
}

/// The spin after [`spin_begin`] is over: it was a wait, and the task goes on
/// in a new period, as if it had been woken and dispatched again.
#[cold]
#[inline(never)]
pub(crate) fn spin_end() {
    if on() {
        let task = context::current_task_ptr();
        if task.is_null() {
            return;
        }
        // SAFETY: as in `spin_begin`.
        let task = unsafe { &*task };
        with_log(|l| {
            l.worker_resumed();
            l.begin_period(task);
        });
    }
}
