//! A worker's inbox: the tasks other threads woke or spawned for it.
//!
//! The common case is one task in flight at a time from a given waker, as in a
//! ping-pong between two workers. It goes through a single mail slot, one
//! pointer on a cache line of its own: the poster claims it with one
//! compare-exchange and the worker empties it with a load and a plain store,
//! so a post moves one cache line between the cores. Posts that find the slot taken go to an
//! unbounded queue behind it (crossbeam's `Injector`, whose push and steal
//! touch three or four lines and take several locked instructions each).
//!
//! Order between the two is not kept: the worker takes the slot first. Nothing
//! depends on the order in which woken tasks run for correctness; under the
//! adaptive mapping the worker looks at the slot before each dispatch
//! ([`Inbox::has_mail`]) and queues what it takes ahead of its ready tasks
//! (`worker/README.md`, "Where a posted task is queued").

use std::ptr;
use std::sync::atomic::Ordering;

use crossbeam_deque::{Injector, Steal};
use crossbeam_utils::CachePadded;

use crate::sync::AtomicPtr;
use crate::task::{Task, TaskRef};

/// Tasks posted to one worker by other threads.
pub(crate) struct Inbox {
    mail: CachePadded<AtomicPtr<Task>>,
    queue: Injector<TaskRef>,
}

impl Inbox {
    pub(crate) fn new() -> Self {
        Inbox {
            mail: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
            queue: Injector::new(),
        }
    }

    /// Queues `t`; the caller hands its ownership of the task to the worker.
    #[inline]
    pub(crate) fn push(&self, t: TaskRef) {
        let p = t.as_ptr() as *mut Task;
        // Release: pairs with the Acquire swap in `drain`, so that what the
        // poster wrote of the task (its state, its stream registrations) is
        // visible to the worker that runs it. Relaxed on failure: nothing is
        // published then.
        if self
            .mail
            .compare_exchange(ptr::null_mut(), p, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.queue.push(t);
        }
    }

    /// Whether nothing is posted. Used by the owner's idle loop and, after a
    /// SeqCst fence, by the sleep and deadlock checks (see `park.rs`): those
    /// fences, not this load's ordering, make a post either seen here or its
    /// poster see the sleeper.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.mail.load(Ordering::Relaxed).is_null() && self.queue.is_empty()
    }

    /// Whether the mail slot holds a task: one load of the slot's line, for
    /// the owner's look before each dispatch. Relaxed: a hint; `drain`'s
    /// Acquire load is what takes the task.
    #[inline(always)]
    pub(crate) fn has_mail(&self) -> bool {
        !self.mail.load(Ordering::Relaxed).is_null()
    }

    /// Hands every posted task to `f`, the slot's first. Only the owning
    /// worker calls this (the slot's load-then-store relies on it). Returns
    /// whether there was any.
    #[inline]
    pub(crate) fn drain(&self, mut f: impl FnMut(TaskRef)) -> bool {
        let mut any = false;
        // Acquire: pairs with the Release compare-exchange in `push`, so the
        // task's fields written before the post are visible here.
        let p = self.mail.load(Ordering::Acquire);
        if !p.is_null() {
            // Its dispatch reads and writes the task's first line, which the
            // poster wrote last.
            crate::sync::prefetch_write(p);
            // A plain store empties the slot, not a swap: posters only
            // compare-exchange from null, so nobody else can change the slot
            // while it holds p, and a store does not stall this worker the way
            // a locked instruction does. Relaxed: what it publishes ("the slot
            // is free") carries no data, and a poster that sees it late only
            // takes the queue instead.
            self.mail.store(ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: p was put in the slot by `push` from a live TaskRef whose
            // ownership the poster gave up; only this worker takes from the
            // slot, and it emptied the slot before anyone could post again, so
            // the task is taken exactly once and we own it now.
            f(unsafe { TaskRef::from_ptr(p) });
            any = true;
        }
        loop {
            match self.queue.steal() {
                Steal::Success(t) => {
                    f(t);
                    any = true;
                }
                Steal::Empty => return any,
                // Another stealer raced us; only the owner steals, but the
                // Injector's protocol may still ask for a retry.
                Steal::Retry => {}
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_post_is_drained_once() {
        let inbox = Inbox::new();
        let tasks: Vec<TaskRef> = (0..5)
            .map(|i| TaskRef::new(Task::new(i, 0, "t".into(), 0, None)))
            .collect();
        assert!(inbox.is_empty());
        for t in &tasks {
            inbox.push(*t);
        }
        assert!(!inbox.is_empty());
        let mut got = Vec::new();
        assert!(inbox.drain(|t| got.push(t.get().id)));
        assert!(inbox.is_empty());
        assert!(!inbox.drain(|_| panic!("nothing is left")));
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        for t in tasks {
            // SAFETY: test-owned tasks, freed once.
            unsafe { t.free() };
        }
    }
}
