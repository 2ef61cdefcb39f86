//! The monitoring hooks the runtime calls. Application code is never
//! instrumented: every event comes from here.
//!
//! Each hook costs one predictable branch when monitoring is off: a relaxed
//! load of [`ACTIVE`] (the number of runs with monitoring on in this
//! process). Without the `monitor` cargo feature the branch is `false` at
//! compile time and every hook vanishes. When a run monitors, the hook finds
//! the worker's [`WorkerLog`](super::worker_log::WorkerLog) through the
//! thread-local worker pointer; threads that are not workers record nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::format::EndState;
use super::period::{self, EndMon};
use super::worker_log::WorkerLog;
use crate::context;
use crate::stream::Side;
use crate::task::BlockedOn;

/// Runs in this process that monitor; hooks do nothing while it is 0.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The one branch every hook starts with.
#[inline(always)]
pub(crate) fn on() -> bool {
    cfg!(feature = "monitor") && ACTIVE.load(Ordering::Relaxed) != 0
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
pub(crate) fn stream_open(id: u64, cap: usize) {
    if on() {
        let creator = context::current_task_id();
        with_log(|l| l.stream_open(id, cap, creator));
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

/// Called from every end's `Drop`: the check inline, the rest out of line,
/// so that a task's code that drops ends stays small enough to inline the
/// stream fast path.
#[inline(always)]
pub(crate) fn stream_close(id: u64, side: Side) {
    if on() {
        stream_close_cold(id, side);
    }
}

#[cold]
#[inline(never)]
fn stream_close_cold(id: u64, side: Side) {
    with_log(|l| l.stream_close(id, side));
}

#[cold]
#[inline(never)]
pub(crate) fn stream_replace(side: Side, old: u64, new: u64) {
    if on() {
        with_log(|l| l.stream_replace(side, old, new));
    }
}

/// A message moved through an end; only reached when the end was bound
/// while monitoring was on. On the fast path (the end is listed in the
/// running period) it is a thread-local stamp compare and one counter
/// increment or key append; listing an end (once per period) is
/// `message_slow`, the rest `message_cold`.
///
/// Inline at the call site (`record` tests the stream-count case first). Inlining
/// it used to tip LLVM into not inlining `read`/`write` into task loops (the
/// monitoring-off path paid); now that those are `#[inline(always)]` it does
/// not. Callgrind, `pipe --placement rr --workers 1 --messages 10000`: off
/// 72.8M instructions out of line, 72.7M inline; stream counts 127.2M →
/// 117.7M; full 161.6M → 150.4M.
#[inline(always)]
pub(crate) fn message(end: &mut EndMon, id: u64, write: bool) {
    period::with(|r| {
        if !r.record(end, write) {
            message_slow(end, id, write)
        }
    })
}

/// The first message of `end` in a period: list it (on this thread, no log
/// lookup) and record; anything else goes to [`message_cold`].
#[inline(never)]
fn message_slow(end: &mut EndMon, id: u64, write: bool) {
    period::with(|r| {
        if !(r.list(end, id, write) && r.record(end, write)) {
            message_cold(end, id, write)
        }
    })
}

/// The worker's log's part of [`message`]: list an end beyond the
/// thread-local entries, spill a full key list, or record a `SLOW` message.
#[cold]
#[inline(never)]
fn message_cold(end: &mut EndMon, id: u64, write: bool) {
    with_log(|l| l.message(end, id, write));
}

#[cold]
#[inline(never)]
pub(crate) fn woke_peer(end: &mut EndMon, _id: u64) {
    if on() {
        with_log(|l| l.woke_peer(end));
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

/// The end state of a period from what the coroutine handed back.
pub(crate) fn end_state_of(blocked: bool, on: &BlockedOn) -> EndState {
    if !blocked {
        return EndState::Yielded;
    }
    match on {
        BlockedOn::Input { stream, .. } => EndState::BlockedInput { stream: *stream },
        BlockedOn::Output { stream, .. } => EndState::BlockedOutput { stream: *stream },
        BlockedOn::Any { .. } => EndState::BlockedAny,
        BlockedOn::Nothing => EndState::Yielded,
    }
}
