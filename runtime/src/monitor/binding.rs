//! Count mode (`stream` without `message`): messages counted from the ring's
//! positions, not one by one.
//!
//! A task's first operation on a stream end in a counting period *binds* the
//! end to the task: a [`Binding`] is shared by the end (its [`EndMon`]) and
//! the task's [`TaskMon`] (`task_mon.rs`), and the end's stamp becomes the task's *tag*. From
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
//! [`TaskMon`]: super::task_mon::TaskMon
//! [`TaskMon::arm`]: super::task_mon::TaskMon::arm

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize as StdAtomicUsize, Ordering};
use std::sync::Arc;

use rill_log::EndIo;

use super::hint::Hint;
use crate::sync::AtomicUsize;
use crate::vocab::{Recheck, Side};

/// An end's cut position while it has none.
const NO_CUT: usize = usize::MAX;

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
    /// The position at the task's last count. Only the task's worker
    /// touches it, at the task's period ends (Relaxed: one thread, since a
    /// task that ran never changes workers, `scheduler.rs`).
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
    pub(crate) fn arm(&self) {
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
    pub(crate) fn entry(self: &Arc<Self>, blocked: Option<u64>) -> (Option<EndIo>, bool) {
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
