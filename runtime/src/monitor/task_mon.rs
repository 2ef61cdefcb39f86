//! A task's part of monitoring ([`TaskMon`]): count mode's tag and the
//! task's bindings (`binding.rs`), and ops mode's entries
//! (`task_entries.rs`), which the worker reads at each of the task's period
//! ends.

use std::cell::{Cell, UnsafeCell};
use std::sync::Arc;

use rill_log::EndIo;

use super::binding::Binding;
use super::period::{kind, new_tag};
use super::task_entries::TaskEntries;

/// A task's part of monitoring: count mode's tag and bindings, and ops
/// mode's entries. Touched only by the thread of the worker that runs the
/// task (the task's code, and the worker between its periods): a task that
/// ran never changes workers (`scheduler.rs`), and the thread that drops
/// the tasks left at a run's end does so after every worker has stopped.
#[derive(Default)]
pub(crate) struct TaskMon {
    tag: Cell<u64>,
    binds: UnsafeCell<Vec<Arc<Binding>>>,
    /// Ops mode's entries (`task_entries.rs`).
    pub(crate) entries: TaskEntries,
}

impl TaskMon {
    /// The task's tag, made at its first counting period.
    #[inline]
    pub(crate) fn tag(&self) -> u64 {
        let t = self.tag.get();
        if t != 0 {
            return t;
        }
        let t = new_tag() | kind::COUNT;
        self.tag.set(t);
        t
    }

    /// Adds a binding.
    pub(crate) fn push(&self, b: Arc<Binding>) {
        // SAFETY: only one thread touches the task's bindings at a time (see
        // the type), and neither this nor `take_ends` lends them out.
        unsafe { &mut *self.binds.get() }.push(b);
    }

    /// A period of the task begins: arms the hints of its bindings
    /// ([`Binding::arm`]), so that their ends' operations skip monitoring.
    #[inline]
    pub(crate) fn arm(&self) {
        // SAFETY: as in `push`; nothing here lends the list out.
        for b in unsafe { &*self.binds.get() } {
            b.arm();
        }
    }

    /// Calls `f` with the period's entry of each binding that moved a
    /// message, woke its peer or is of `blocked`, the stream the task
    /// blocked on ([`Binding::entry`]), then forgets the bindings that are
    /// over.
    ///
    /// The forgotten bindings go to `dead`, for the caller to drop once it
    /// no longer borrows the worker's log: a binding may hold the last
    /// reference to its stream, whose unread messages' destructors run user
    /// code, which may reach the log again.
    #[inline]
    pub(crate) fn take_ends(
        &self,
        blocked: Option<u64>,
        mut f: impl FnMut(EndIo),
        dead: &mut Vec<Arc<Binding>>,
    ) {
        // SAFETY: as in `push`; `f` gets entries, not the list.
        let binds = unsafe { &mut *self.binds.get() };
        let mut over = false;
        for b in binds.iter() {
            let (e, done) = b.entry(blocked);
            if let Some(e) = e {
                f(e);
            }
            over |= done;
        }
        if over {
            forget_over(binds, dead);
        }
    }

    /// The period's entries of a task with at most two bindings, as
    /// [`take_ends`](Self::take_ends) finds them (`None` for one it leaves
    /// out), in binding order; `None`, with nothing taken, for a task with
    /// more. Straight-line code for the relay and ring tasks that every
    /// dispatch of a counted pipe runs.
    /// Forgotten bindings go to `dead`, as in `take_ends`.
    #[inline(always)]
    pub(crate) fn take_two(
        &self,
        blocked: Option<u64>,
        dead: &mut Vec<Arc<Binding>>,
    ) -> Option<[Option<EndIo>; 2]> {
        // SAFETY: as in `push`; nothing here lends the list out.
        let binds = unsafe { &mut *self.binds.get() };
        let (a, b, over) = match binds.as_slice() {
            [] => (None, None, false),
            [x] => {
                let (a, over) = x.entry(blocked);
                (a, None, over)
            }
            [x, y] => {
                let (a, over_a) = x.entry(blocked);
                let (b, over_b) = y.entry(blocked);
                (a, b, over_a | over_b)
            }
            _ => return None,
        };
        if over {
            forget_over(binds, dead);
        }
        Some([a, b])
    }
}

/// Moves the bindings that are over from `binds` to `dead`, keeping the
/// order of the others.
#[cold]
fn forget_over(binds: &mut Vec<Arc<Binding>>, dead: &mut Vec<Arc<Binding>>) {
    dead.extend(binds.extract_if(.., |b| b.is_over()));
}
