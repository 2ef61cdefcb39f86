//! Count mode (`stream` without `message`): messages counted from the ring's
//! positions, not one by one.
//!
//! A task's first operation on a stream end in a counting period *binds* the
//! end to the task: a [`Binding`] is shared by the end (its [`EndMon`]) and
//! the task's [`TaskMon`], and the end's stamp becomes the task's *tag*. From
//! then on the end's operations compare their stamp with this thread's
//! ([`period::fast`](super::period::fast)), find it equal and do nothing more,
//! as with monitoring off. At each of the task's period ends the worker reads
//! every binding's side position in the ring: what moved since the last read
//! is the period's count for that end.
//!
//! Moves. An end that another task (or thread) uses next has a stamp that is
//! not that task's tag, so its first operation there goes the slow way, which
//! *cuts* the old binding at the end's position (Release, before the new
//! holder moves anything) and binds the end anew. The old task counts up to
//! the cut: its period end loads the position (Acquire) and then the cut, so
//! a position that includes a move of the new holder comes with the cut that
//! preceded it. An end that is dropped leaves its binding with the task alone
//! (a strong count of 1); the task counts what is left and forgets it.
//!
//! The hint. While the task runs, each binding's side *hint* (`hint.rs`)
//! holds the end's address, so that the end's operations skip monitoring
//! with one compare; the task's worker arms the hints of its bindings at
//! each period's start ([`TaskMon::arm`]) and disarms them at its end
//! ([`Binding::take`]), so that an end that another task uses next finds
//! its hint disarmed (or not its address) and goes the slow way above.
//!
//! Nothing dangles: a binding keeps the stream's core alive, and the position
//! and hint it touches are fields of that core.
//!
//! [`EndMon`]: super::period::EndMon

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize as StdAtomicUsize, Ordering};
use std::sync::Arc;

use super::format::EndIo;
use super::hint::Hint;
use super::task_entries::TaskEntries;
use crate::stream::{Recheck, Side};
use crate::sync::AtomicUsize;

/// An end's cut position while it has none.
const NO_CUT: usize = usize::MAX;

/// The next tag ([`new_tag`]), from `1 << 62` in steps of 4: with any kind
/// in the low bits never 0 (plain) or `UNBOUND`, and above every epoch
/// (`log number << 40`).
static TAGS: AtomicU64 = AtomicU64::new(1 << 62);

/// A new tag, unique in the process: at least `1 << 62`, low bits 0. Count
/// mode's task tags add [`kind::COUNT`](super::period::kind::COUNT); ops
/// mode's task bases (`task_entries.rs`) add the run's kind to it in their
/// ends' stamps.
pub(crate) fn new_tag() -> u64 {
    // Relaxed: only uniqueness matters, which the RMW gives.
    TAGS.fetch_add(4, Ordering::Relaxed)
}

/// One stream end bound to one task (see the module documentation).
pub(crate) struct Binding {
    /// The end's side position in the stream's core (`tail` for a writer,
    /// `head` for a reader), which only the end's holder advances.
    pos: NonNull<AtomicUsize>,
    /// The side's hint in the stream's core (`hint.rs`).
    hint: NonNull<Hint>,
    /// The end's address when it last armed the hint (0: never). Written by
    /// the end's holder when it arms the hint, read by the task's worker at
    /// the task's period starts (Relaxed: a hint only, see `hint.rs`).
    addr: StdAtomicUsize,
    /// Keeps the core, and so `pos` and `hint`, alive.
    _core: Arc<dyn Recheck>,
    pub(crate) stream: u64,
    pub(crate) write: bool,
    /// The position at the task's last count. Only the task's worker of the
    /// moment touches it, between the task's periods (Relaxed: ordered by
    /// the hand-over of the task itself).
    last: StdAtomicUsize,
    /// The end's last operation in this period woke the peer (set and
    /// cleared by the task's worker, as `last`).
    woke: AtomicBool,
    /// Where the next holder took over ([`NO_CUT`] while none did); written
    /// once, Release, by that holder before its first move.
    cut: AtomicUsize,
}

// SAFETY: `pos` and `hint` point into the core that `_core` keeps alive, and
// they are only used for loads and stores of atomics, which any thread may
// make. The other fields
// are Send and Sync.
unsafe impl Send for Binding {}
// SAFETY: as above.
unsafe impl Sync for Binding {}

impl Binding {
    /// A binding of `core`'s `side` (stream `stream`), whose end stands at
    /// `at` now.
    pub(crate) fn new(core: Arc<dyn Recheck>, side: Side, stream: u64, at: usize) -> Binding {
        let pos = NonNull::from(core.position(side));
        let hint = NonNull::from(core.hint(side));
        Binding {
            pos,
            hint,
            addr: StdAtomicUsize::new(0),
            _core: core,
            stream,
            write: side == Side::Writer,
            last: StdAtomicUsize::new(at),
            woke: AtomicBool::new(false),
            cut: AtomicUsize::new(NO_CUT),
        }
    }

    /// Another holder takes the end over at position `at`: the task this
    /// was bound to counts up to there.
    pub(crate) fn cut(&self, at: usize) {
        // Release: pairs with the Acquire load of the position in `take`
        // (through the new holder's later Release stores of it) and with the
        // Acquire load of the cut there.
        self.cut.store(at, Ordering::Release);
    }

    /// The end, now at `addr`, armed its side's hint: the task arms it with
    /// that address at its next period starts.
    #[inline]
    pub(crate) fn set_addr(&self, addr: usize) {
        self.addr.store(addr, Ordering::Relaxed);
    }

    /// Arms the side's hint with the end's last address, if it has one: the
    /// task's period starts. A binding that another holder cut arms an
    /// address that holder's end no longer has (a moved end), so it only
    /// sends that end's next operation the slow way once more (`hint.rs`).
    #[inline]
    fn arm(&self) {
        let addr = self.addr.load(Ordering::Relaxed);
        if addr != 0 {
            // SAFETY: `hint` is valid while `_core` lives (see the type).
            unsafe { self.hint.as_ref() }.arm(addr);
        }
    }

    /// The end's last operation woke the peer.
    pub(crate) fn set_woke(&self) {
        self.woke.store(true, Ordering::Relaxed);
    }

    /// Whether the binding is over (see [`take`](Self::take)). Between the
    /// task's periods only a new holder moves the end, after its cut, so a
    /// binding found over after `take` has nothing more to count.
    pub(crate) fn is_over(self: &Arc<Self>) -> bool {
        Arc::strong_count(self) == 1 || self.cut.load(Ordering::Relaxed) != NO_CUT
    }

    /// The messages moved since the last call, whether the end woke its peer
    /// in that time, and whether the binding is over (cut, or its end was
    /// dropped): then the task forgets it. Called at each of the task's
    /// period ends, it disarms the side's hint: an end that another task
    /// uses before this one's next period goes the slow way.
    #[inline]
    pub(crate) fn take(self: &Arc<Self>) -> (u32, bool, bool) {
        // SAFETY: `hint` is valid while `_core` lives (see the type).
        unsafe { self.hint.as_ref() }.disarm();
        // The end was dropped if the task holds the last reference; its
        // position then never moves again.
        let dropped = Arc::strong_count(self) == 1;
        // SAFETY: `pos` is valid while `_core` lives (see the type).
        // Acquire: pairs with the Release stores of the position; a position
        // stored by a new holder comes with its earlier cut, loaded next.
        let now = unsafe { self.pos.as_ref() }.load(Ordering::Acquire);
        let cut = self.cut.load(Ordering::Acquire);
        let at = if cut == NO_CUT { now } else { cut };
        // Loads and stores, not swaps: a swap is a locked instruction, and
        // nothing else writes these (see the fields).
        let last = self.last.load(Ordering::Relaxed);
        self.last.store(at, Ordering::Relaxed);
        let woke = self.woke.load(Ordering::Relaxed);
        if woke {
            self.woke.store(false, Ordering::Relaxed);
        }
        (at.wrapping_sub(last) as u32, woke, dropped || cut != NO_CUT)
    }

    /// [`take`](Self::take) as a period's entry: `None` unless the end
    /// moved a message, woke its peer or is of `blocked`, the stream the
    /// task blocked on; and whether the binding is over.
    #[inline(always)]
    fn entry(self: &Arc<Self>, blocked: Option<u64>) -> (Option<EndIo>, bool) {
        let (count, woke_peer, over) = self.take();
        let e = (count != 0 || woke_peer || blocked == Some(self.stream)).then_some(EndIo {
            stream: self.stream,
            count,
            write: self.write,
            woke_peer,
        });
        (e, over)
    }
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Binding")
            .field("stream", &self.stream)
            .field("write", &self.write)
            .finish_non_exhaustive()
    }
}

/// A task's part of monitoring: count mode's tag and bindings, and ops
/// mode's entries. Touched only by
/// the thread running the task, or its worker between its periods, one at a
/// time (the hand-over of the task orders them).
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
        let t = new_tag() | super::period::kind::COUNT;
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
