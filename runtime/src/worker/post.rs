//! Handing a task that the caller owns (a waker that won it) to the worker
//! it belongs to: onto the ready queue when that is the running worker,
//! else through the worker's inbox.

use super::{WorkerLocal, WorkerShared};
use crate::task::TaskRef;

/// The running worker, when it is `worker` (a waker's target read from a
/// wait slot). Outside a worker (and under loom) `None`.
#[inline(always)]
pub(crate) fn worker_if_mine(worker: *const WorkerShared) -> Option<&'static WorkerLocal> {
    if cfg!(loom) {
        return None;
    }
    let w = crate::context::worker()?;
    std::ptr::eq(w.me(), worker).then_some(w)
}

/// Queues a task that the caller owns on `worker`, the worker it belongs
/// to: locally when that is the running worker, else through its inbox.
#[inline]
pub(crate) fn hand_to(worker: *const WorkerShared, t: TaskRef) {
    match worker_if_mine(worker) {
        Some(w) => w.push_local(t),
        None => post(worker, t),
    }
}

/// Posts a task that the caller owns to `worker`'s inbox (`worker/README.md`,
/// post-work steps), from another worker or from a thread outside the run.
///
/// The caller keeps the run alive meanwhile: it holds the task's wait slot
/// in WAKING, which the task's unregistering waits out, and a run frees its
/// workers only after it has unwound every task left.
#[cold]
#[inline(never)]
pub(crate) fn post(worker: *const WorkerShared, t: TaskRef) {
    if cfg!(loom) {
        // The loom models have no workers; READY is their evidence of a wake.
        t.get().transition_to_ready_uncontended();
        return;
    }
    // SAFETY: a registration names the worker of the run the task belongs
    // to, alive as said above.
    unsafe { &*worker }.post(t);
}
