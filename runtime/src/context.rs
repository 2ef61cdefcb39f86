//! The thread-local "where am I": the task running on this thread and its
//! worker, and the small operations that need nothing else (who the caller
//! is as a holder, yield, a worker's message counts). Spawning is in
//! `spawn.rs`, blocking in `stream/block.rs`, handing a task to its worker
//! in `worker/post.rs`.
//! The two pointers are thread-local words read afresh at each use, so that
//! a task's code never keeps another thread's (`tls.rs` says why: at a run's
//! end a task's stack unwinds on the thread that called `run`).

use std::sync::atomic::Ordering;

use crate::task::{Suspend, Task};
use crate::vocab::TaskId;
use crate::worker::WorkerLocal;

/// Drops the coroutine of `task`, which may be suspended. corosensei unwinds
/// a suspended coroutine's stack with a panic of its own; the task
/// boundary's `catch_unwind` sees the forced-unwind word and passes that
/// panic on instead of taking it for the task's.
///
/// The word holds `task` for the time of the drop, so that the overflow
/// handler and the panic hook can name it, and is put back to what it was
/// afterwards (also when a destructor's panic leaves the drop): a run in a
/// destructor during another run's teardown ends with the outer unwind
/// still marked. The caller is a run's teardown, which has given its
/// thread a new thread's words (`tls::ThreadWords`), so no task runs here:
/// a destructor that blocks gets "closed" and one that spawns gets nothing.
pub(crate) fn drop_suspended(coro: Option<crate::task::Coro>, task: *const Task) {
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            crate::tls::set_forced_unwind(self.0);
        }
    }
    let _restore = Restore(crate::tls::forced_unwind());
    crate::tls::set_forced_unwind(task as u64);
    drop(coro);
}

/// The task whose stack this thread is unwinding ([`drop_suspended`]), or
/// null.
pub(crate) fn unwinding_task_ptr() -> *const Task {
    crate::tls::forced_unwind() as *const Task
}

/// Whether the calling task's stack is being unwound because its run ended
/// while the task was suspended (another task failed, or a deadlock ended
/// the run): the runtime unwinds the stack so that what the task holds is
/// dropped.
///
/// A task that catches panics with [`std::panic::catch_unwind`] must let
/// this unwind go on: when this returns true, hand the payload back with
/// [`std::panic::resume_unwind`]. Swallowing it makes the coroutine library
/// abort the process.
pub fn forced_unwinding() -> bool {
    crate::tls::forced_unwind() != 0
}

#[inline(always)]
pub(crate) fn current_task_ptr() -> *const Task {
    crate::tls::task().cast()
}

#[inline(always)]
pub(crate) fn set_current_task(t: *const Task) {
    crate::tls::set_task(t.cast());
}

#[inline(always)]
pub(crate) fn current_worker_ptr() -> *const WorkerLocal {
    crate::tls::worker().cast()
}

pub(crate) fn set_current_worker(w: *const WorkerLocal) {
    crate::tls::set_worker(w.cast());
}

/// Who the caller is as a stream side's holder, as a holder word
/// (`stream/holder.rs`): the running task and its run; the run a
/// `Runtime::spawn_with` hands ends for; outside every run on a thread where
/// no task runs; nobody (0) in a run's teardown, which drops ends it does
/// not hold.
#[inline]
pub(crate) fn current_holder() -> u64 {
    let t = current_task_ptr();
    if !t.is_null() {
        // SAFETY: the running task is alive.
        return unsafe { (*t).holder };
    }
    current_holder_cold()
}

#[cold]
fn current_holder_cold() -> u64 {
    if forced_unwinding() {
        return 0;
    }
    match crate::tls::holding_for() {
        0 => crate::vocab::OUTSIDE,
        run => crate::vocab::holder_word(run, 0),
    }
}

/// Id of the running task, 0 outside tasks.
pub(crate) fn current_task_id() -> TaskId {
    let t = current_task_ptr();
    if t.is_null() {
        0
    } else {
        // SAFETY: the current-task pointer is set by the worker for the duration
        // of a dispatch, during which the task is alive.
        unsafe { (*t).id }
    }
}

pub(crate) fn worker() -> Option<&'static WorkerLocal> {
    let w = current_worker_ptr();
    // SAFETY: the pointer is set by a worker thread for as long as its loop runs
    // and cleared before the WorkerLocal is dropped; code reading it runs on that
    // thread inside the loop.
    unsafe { w.as_ref() }
}

/// Information about the running task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task's id.
    pub id: TaskId,
    /// Its name (its place in the network).
    pub name: String,
    /// The worker it runs on.
    pub worker: usize,
}

/// The running task, or `None` outside a rill task.
pub fn current() -> Option<TaskInfo> {
    let t = current_task_ptr();
    if t.is_null() {
        return None;
    }
    // SAFETY: see current_task_id.
    let t = unsafe { &*t };
    Some(TaskInfo {
        id: t.id,
        name: t.name.to_string(),
        worker: t.worker.load(Ordering::Relaxed),
    })
}

/// Number of workers of the runtime this task runs in (0 outside).
pub fn worker_count() -> usize {
    worker().map(|w| w.shared.workers.len()).unwrap_or(0)
}

pub(crate) fn default_capacity() -> usize {
    worker().map(|w| w.shared.cfg.capacity).unwrap_or(16)
}

pub(crate) fn next_stream_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The running worker's tag for `Core::writer_worker`: its index plus one,
/// 0 on a thread that is no worker.
pub(crate) fn worker_tag() -> u32 {
    worker().map_or(0, |w| w.id as u32 + 1)
}

/// A reader dropped on this thread had read `n` messages from a writer
/// first used on the worker tagged `writer` ([`worker_tag`]): counted as
/// crossed when both are workers and they differ.
pub(crate) fn note_received(n: u64, writer: u32) {
    if let Some(w) = worker() {
        if writer != 0 && writer != w.id as u32 + 1 {
            w.add_crossed(n);
        }
    }
}

pub(crate) fn note_sent(n: u64) {
    if let Some(w) = worker() {
        w.add_messages(n);
    }
}

/// Lets other ready tasks on this worker run; returns when this task is
/// dispatched again. A no-op outside tasks.
#[inline]
pub fn yield_now() {
    let t = current_task_ptr();
    if t.is_null() {
        return;
    }
    // SAFETY: the yielder pointer was set when the coroutine started and
    // points into its own stack, which is alive while it runs.
    unsafe { (*(*t).yielder.get()).suspend(Suspend::Yield) };
}
