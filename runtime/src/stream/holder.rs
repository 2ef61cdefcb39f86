//! Who holds a stream's side: a task of a run, something outside every
//! run, or nobody known yet. Deadlock reports name holders, and a run that
//! finds every task blocked asks whether what they wait for is held outside
//! it (a plain thread, a task of another runtime): then it waits instead of
//! reporting a deadlock (`worker/README.md`, termination and deadlock).
//!
//! A side's holder is one word: the holder's run in the high
//! [`RUN_BITS`](crate::vocab::RUN_BITS) bits and its task id in the low ones (a task's own word,
//! `Task::holder`, is made with [`holder_word`] when the task is), so that noting
//! the holder at a block is a load and a compare, as it was when the word
//! held the task id alone. The word is noted when an end is first used
//! (bound), at every block, and by `Ends::hold` (`spawn_with`);
//! [`hold_outside`] marks it outside by hand. It is for reports and for the
//! run's stall rule, never for the stream protocol: Relaxed, and written
//! only when it changes. A holder seen through a wake is exact: the waker's
//! note comes before its wake, which the woken task's dispatch follows.
//!
//! Run numbers wrap after 2^24 - 2 runs in one process: two runs alive at
//! once whose numbers are that far apart would take each other's sides for
//! their own (a deadlock reported where the other run could still have
//! acted), which no program is expected to meet.
//!
//! [`hold_outside`]: crate::Writer::hold_outside

use std::sync::atomic::Ordering;

use super::slot::Slot;
use crate::sync::AtomicU64;
use crate::vocab::{holder_word, run_of, task_of, TaskId, OUTSIDE, TASK_BITS};

/// A stream side's holder.
pub(crate) struct Holder(AtomicU64);

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
        Holder(AtomicU64::new(0))
    }

    /// The holding task's id, 0 when not known or not a task.
    #[inline(always)]
    pub(crate) fn task(&self) -> TaskId {
        task_of(self.0.load(Ordering::Relaxed))
    }

    /// Notes the caller as the holder: the running task, or outside every
    /// run on a thread where no task runs. When the side has just become
    /// held outside, wakes the peer's waiter (in `peer`, the slot the other
    /// side waits in), so that it counts the side as outside from its next
    /// block on. A run's teardown, dropping a task's ends on its own thread,
    /// notes nothing.
    #[inline]
    pub(crate) fn note(&self, peer: &Slot) {
        self.note_as(crate::context::current_holder(), peer);
    }

    /// [`note`](Self::note) for a caller that knows its holder word `me`
    /// (a blocking task passes its own, `Task::holder`).
    #[inline(always)]
    pub(crate) fn note_as(&self, me: u64, peer: &Slot) {
        if me == 0 || self.0.load(Ordering::Relaxed) == me {
            return;
        }
        self.0.store(me, Ordering::Relaxed);
        if me == OUTSIDE {
            peer.wake_unreported();
        }
    }

    /// Records `task`, spawned by the caller: a task of the caller's run,
    /// or of the run a `Runtime::spawn_with` hands it to. Called where no
    /// task runs otherwise (a program's own use of `Ends::hold`), it
    /// records the task with no run, leaving the run to the task's first
    /// use.
    pub(crate) fn hold(&self, task: TaskId) {
        let run = match crate::context::current_holder() {
            0 | OUTSIDE => 0,
            me => run_of(me),
        };
        self.0.store(holder_word(run, task), Ordering::Relaxed);
    }

    /// Marks the side as held outside every run, and wakes the peer's
    /// waiter in `peer` (as [`note`](Self::note)).
    pub(crate) fn hold_outside(&self, peer: &Slot) {
        self.0.store(OUTSIDE, Ordering::Relaxed);
        peer.wake_unreported();
    }

    /// What this side's holder is to the run of `mine`, the holder word of
    /// the task asking: inside when the run parts of the words match (one
    /// xor and shift on the path of every block).
    #[inline(always)]
    pub(crate) fn peer_of(&self, mine: u64) -> Peer {
        let w = self.0.load(Ordering::Relaxed);
        if (w ^ mine) >> TASK_BITS == 0 {
            Peer::Inside
        } else if run_of(w) == 0 {
            Peer::Unknown
        } else {
            Peer::Outside
        }
    }
}
