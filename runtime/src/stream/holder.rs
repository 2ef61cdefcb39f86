//! Who holds a stream's side: a task of a run, something outside every
//! run, or nobody known yet. Deadlock reports name holders, and a run that
//! finds every task blocked asks whether what they wait for is held outside
//! it (a plain thread, a task of another runtime): then it waits instead of
//! reporting a deadlock (see `worker/park.rs`, `Shared::sleep`).
//!
//! A side's holder is noted when an end is first used (bound), at every
//! block, and by `Ends::hold` (`spawn_with`); [`hold_outside`] marks it
//! outside by hand. Both words are for reports and for the run's stall
//! rule, never for the stream protocol: Relaxed, and written only when they
//! change. A holder seen through a wake is exact: the waker's note comes
//! before its wake, which the woken task's dispatch follows.
//!
//! [`hold_outside`]: crate::Writer::hold_outside

use std::sync::atomic::Ordering;

use crate::sync::AtomicU64;
use crate::task::TaskId;

/// The run word of a side used from outside every run (a plain thread).
pub(crate) const OUTSIDE: u64 = u64::MAX;

/// A stream side's holder.
pub(crate) struct Holder {
    /// The holding task's id, 0 when not known or not a task.
    pub(crate) task: AtomicU64,
    /// The holder's run (`Shared::run_id`), [`OUTSIDE`], or 0 when nobody
    /// used the side yet.
    run: AtomicU64,
}

/// What a blocked task's peer side is to the task's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// Held by a task of the same run (or the end is gone).
    Inside,
    /// Held by a plain thread or a task of another run: it may still act.
    Outside,
    /// Nobody used it yet: a task of the run, or something outside that has
    /// not acted yet.
    Unknown,
}

impl Peer {
    /// The stronger of two answers for a task waiting on several sides: any
    /// side held outside may wake it; else any unknown one might.
    pub(crate) fn or(self, other: Peer) -> Peer {
        match (self, other) {
            (Peer::Outside, _) | (_, Peer::Outside) => Peer::Outside,
            (Peer::Unknown, _) | (_, Peer::Unknown) => Peer::Unknown,
            _ => Peer::Inside,
        }
    }
}

impl Holder {
    pub(crate) fn new() -> Holder {
        Holder {
            task: AtomicU64::new(0),
            run: AtomicU64::new(0),
        }
    }

    /// Notes the caller as the holder: the running task, or outside every
    /// run on a thread where no task runs. Returns true when the side has
    /// just become held outside (the caller then wakes the peer's waiter,
    /// so that it counts the side as outside from its next block on). A
    /// run's teardown, dropping a task's ends on its own thread, notes
    /// nothing.
    pub(crate) fn note(&self) -> bool {
        let (task, run) = crate::context::current_holder();
        if run == 0 {
            return false;
        }
        if self.task.load(Ordering::Relaxed) != task {
            self.task.store(task, Ordering::Relaxed);
        }
        if self.run.load(Ordering::Relaxed) != run {
            self.run.store(run, Ordering::Relaxed);
            return run == OUTSIDE;
        }
        false
    }

    /// Records `task`, spawned by the caller: a task of the caller's run,
    /// or of the run a `Runtime::spawn_with` hands it to. Called where no
    /// task runs otherwise (a program's own use of `Ends::hold`), it leaves
    /// the run word to the task's first use.
    pub(crate) fn hold(&self, task: TaskId) {
        self.task.store(task, Ordering::Relaxed);
        match crate::context::current_holder() {
            (_, 0) | (_, OUTSIDE) => {}
            (_, run) => self.run.store(run, Ordering::Relaxed),
        }
    }

    /// Marks the side as held outside every run.
    pub(crate) fn hold_outside(&self) {
        self.task.store(0, Ordering::Relaxed);
        self.run.store(OUTSIDE, Ordering::Relaxed);
    }

    /// What this side's holder is to `run`.
    pub(crate) fn peer_of(&self, run: u64) -> Peer {
        match self.run.load(Ordering::Relaxed) {
            0 => Peer::Unknown,
            r if r == run => Peer::Inside,
            _ => Peer::Outside,
        }
    }
}
