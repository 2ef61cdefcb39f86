//! The shared part of a stream: a bounded ring plus one wait slot per side.

use std::mem::MaybeUninit;
use std::sync::atomic::Ordering;

use crossbeam_utils::CachePadded;

use super::holder::Holder;
use super::slot::{Slot, WAITING};
use crate::monitor::hint::hint_lets;
pub(crate) use crate::monitor::hint::Hint;
use crate::sync::{AtomicUsize, UnsafeCell};
use crate::vocab::{Recheck, Side};

/// A ring's cells.
pub(crate) type Buffer<T> = Box<[UnsafeCell<MaybeUninit<T>>]>;

/// The cells of a ring for `cap` messages: `cap` rounded up to a power of
/// two, so that a position's cell is `position & mask`. None when the
/// rounding would wrap (`checked_next_power_of_two`: in a release build
/// `next_power_of_two` of a number above 2^63 is 0, an empty buffer with a
/// mask of all ones) or the allocation fails (`try_reserve_exact`, which
/// also refuses a size in bytes that overflows).
pub(crate) fn buffer<T>(cap: usize) -> Option<Buffer<T>> {
    let n = cap.max(1).checked_next_power_of_two()?;
    let mut v: Vec<UnsafeCell<MaybeUninit<T>>> = Vec::new();
    v.try_reserve_exact(n).ok()?;
    #[cfg(not(loom))]
    // SAFETY: the capacity is at least `n` (reserved above), and a cell of
    // `MaybeUninit` holds no value that needs initialising: any bytes are
    // a valid `UnsafeCell<MaybeUninit<T>>` (outside loom, `sync::UnsafeCell`
    // wraps std's and nothing more). (No loop over the cells: a ring
    // of 2^30 cells costs nothing until it is used.)
    unsafe {
        v.set_len(n)
    };
    #[cfg(loom)]
    v.extend((0..n).map(|_| UnsafeCell::new(MaybeUninit::uninit())));
    Some(v.into_boxed_slice())
}

/// What the writer moves and where the reader waits for it to move, on one
/// cache line: the writer stores `tail` and then looks at `rslot` on every
/// write, and a woken reader unregisters from `rslot` and then reads `tail`.
/// Apart, a wake across workers moved two lines each way; together, one.
/// `repr(C)`, so that the hint has a fixed offset (see [`Core::WHINT`]).
#[repr(C)]
pub(crate) struct Fwd {
    pub(crate) tail: AtomicUsize,
    /// The writer's monitoring *hint* ([`Hint`]), beside the tail it stores
    /// on every write.
    pub(crate) whint: Hint,
    pub(crate) rslot: Slot,
    /// The reader side's settle-window mark (see `worker::settle::note_pending`),
    /// not part of any protocol: written when the reader blocks, beside the
    /// slot it registers in.
    rmark: std::sync::atomic::AtomicU64,
}

/// The mirror of [`Fwd`]: the reader's position and the writer's wait slot.
#[repr(C)]
pub(crate) struct Back {
    pub(crate) head: AtomicUsize,
    /// The reader's monitoring hint, as [`Fwd::whint`].
    pub(crate) rhint: Hint,
    pub(crate) wslot: Slot,
    /// The writer side's settle-window mark, as `Fwd::rmark`.
    wmark: std::sync::atomic::AtomicU64,
}

/// The ring and the wait slots. Field ownership (`tail` and `rslot` share the
/// line [`Fwd`], `head` and `wslot` the line [`Back`]):
///
/// | field | written by | read by |
/// | --- | --- | --- |
/// | `buf[i]` | writer, for `tail <= i < head + cap` | reader, for `head <= i < tail` |
/// | `tail` | writer (Release after filling the slot) | reader (Acquire) |
/// | `head` | reader (Release after taking the slot) | writer (Acquire) |
/// | `rslot` | reader registers/closes; wakers wake | writer, after every write |
/// | `wslot` | writer registers/closes; wakers wake | reader, after every read |
/// | `reader`, `writer` | the side's holder, when it changes | reports, the stall rule |
///
/// The header (`id` to `fenced`) is one cache line that only changes when a
/// side's holder does, so both ends keep it cached. `repr(C)` keeps it
/// together: laid out by the compiler, it shared a line with the settle
/// marks, and a task id was stored on every block, so the peer's next
/// operation missed on `buf`, `cap` and `mask`.
#[repr(C)]
pub(crate) struct Core<T> {
    pub(crate) id: u64,
    pub(crate) cap: usize,
    mask: usize,
    buf: Buffer<T>,
    /// Who holds the reading side (`holder.rs`).
    pub(crate) reader: Holder,
    /// Who holds the writing side.
    pub(crate) writer: Holder,
    /// The fast side's store-load barrier is a real fence (no membarrier;
    /// see `barrier::light`). Fixed when the stream is made.
    pub(crate) fenced: bool,
    /// The writer's position and the reader's wait slot.
    pub(crate) fwd: CachePadded<Fwd>,
    /// The reader's position and the writer's wait slot.
    pub(crate) back: CachePadded<Back>,
    /// The stream's name, for reports (`names.rs`); read only then, so it
    /// sits after the lines the ends use.
    pub(crate) label: super::names::Label,
    /// The worker (plus one; 0: none) on which the writer was first used,
    /// so that the reader's drop can count messages that crossed workers
    /// (`WorkerStats::crossed`). Written once, at the writer's binding,
    /// before its first message; Relaxed: the reader reads it after it has
    /// read a message, and the ring's Release store of the tail and the
    /// reader's Acquire load of it order the two.
    pub(crate) writer_worker: std::sync::atomic::AtomicU32,
}

// SAFETY: the ring hands each T from the writer thread to the reader thread
// exactly once (T: Send); buffer cells are accessed under the index protocol
// in the table above, so no cell is touched by both sides at once.
unsafe impl<T: Send> Send for Core<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Core<T> {}

impl<T> Core<T> {
    /// Byte offset of the writer's hint in the core (the padding puts the
    /// value at the start of its `CachePadded`; `Core::new` checks it).
    const WHINT: usize = std::mem::offset_of!(Core<T>, fwd) + std::mem::offset_of!(Fwd, whint);
    /// Byte offset of the reader's hint, as [`WHINT`](Self::WHINT).
    const RHINT: usize = std::mem::offset_of!(Core<T>, back) + std::mem::offset_of!(Back, rhint);

    /// Where an `Arc`'s pointer is, in bytes before the core it holds: the
    /// two counts, padded to the core's alignment. Only the code's quality
    /// depends on it: [`lets`](Self::lets) addresses the hint
    /// at this much before the core plus this much more, which is the hint
    /// whatever the value; when it is right, that base is the pointer an
    /// end loads from its `Arc`, which the operation goes on to use.
    const ARC_OFF: usize = {
        let a = std::mem::align_of::<Core<T>>();
        let counts = 2 * std::mem::size_of::<usize>();
        if a > counts {
            a
        } else {
            counts
        }
    };

    /// This core's address less [`ARC_OFF`](Self::ARC_OFF).
    #[inline(always)]
    fn arc_base(&self) -> *const u8 {
        (self as *const Self)
            .cast::<u8>()
            .wrapping_sub(Self::ARC_OFF)
    }

    /// Whether the end of `side` at `addr` may skip monitoring: the side's
    /// hint holds `addr` (`monitor/hint.rs`), in one compare. `side` is a
    /// constant at every call, so only one arm remains.
    #[inline(always)]
    pub(crate) fn lets(&self, side: Side, addr: usize) -> bool {
        debug_assert_eq!(
            self.side_hint(side) as *const Hint as usize - self as *const Self as usize,
            match side {
                Side::Reader => Self::RHINT,
                Side::Writer => Self::WHINT,
            },
            "the hint offsets follow the core's layout"
        );
        // SAFETY: `WHINT` and `RHINT` are the offsets of `fwd.whint` and
        // `back.rhint` in the core (checked above in debug builds), so the
        // address compared is the side's hint, live while `self` is.
        unsafe {
            match side {
                Side::Writer => hint_lets!(self.arc_base(), Self::ARC_OFF + Self::WHINT, addr),
                Side::Reader => hint_lets!(self.arc_base(), Self::ARC_OFF + Self::RHINT, addr),
            }
        }
    }

    /// The side's monitoring hint.
    #[inline]
    pub(crate) fn side_hint(&self, side: Side) -> &Hint {
        match side {
            Side::Reader => &self.back.rhint,
            Side::Writer => &self.fwd.whint,
        }
    }

    /// An unnamed core (the loom models and unit tests make these).
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) fn new(id: u64, cap: usize) -> Core<T> {
        let buf = buffer(cap).expect("a ring buffer for a test's small capacity");
        Self::with_buffer(id, cap, buf, super::names::Label::default())
    }

    /// A core over `buf`, made by [`buffer`] for `cap`.
    pub(crate) fn with_buffer(
        id: u64,
        cap: usize,
        buf: Buffer<T>,
        label: super::names::Label,
    ) -> Core<T> {
        let n = buf.len();
        debug_assert!(n.is_power_of_two() && n >= cap);
        Core {
            id,
            cap,
            mask: n - 1,
            fenced: crate::barrier::fast_side_fenced(),
            buf,
            reader: Holder::new(),
            writer: Holder::new(),
            fwd: CachePadded::new(Fwd {
                tail: AtomicUsize::new(0),
                whint: Hint::new(),
                rslot: Slot::new(),
                rmark: std::sync::atomic::AtomicU64::new(0),
            }),
            back: CachePadded::new(Back {
                head: AtomicUsize::new(0),
                rhint: Hint::new(),
                wslot: Slot::new(),
                wmark: std::sync::atomic::AtomicU64::new(0),
            }),
            label,
            writer_worker: std::sync::atomic::AtomicU32::new(0),
        }
    }

    /// Writes `v` at position `i`.
    ///
    /// # Safety
    /// Only the writer calls this, with `i == tail` and `i - head < cap`.
    #[inline(always)]
    pub(crate) unsafe fn put(&self, i: usize, v: T) {
        // SAFETY: `i & mask` is below the buffer's length (mask + 1), and by
        // the caller's contract the cell is free and ours.
        unsafe { self.buf.get_unchecked(i & self.mask) }.with_mut(|p| unsafe { (*p).write(v) });
    }

    /// Takes the value at position `i`.
    ///
    /// # Safety
    /// Only the reader calls this, with `head == i < tail`.
    #[inline(always)]
    pub(crate) unsafe fn take(&self, i: usize) -> T {
        // SAFETY: `i & mask` is below the buffer's length (mask + 1); by the
        // caller's contract the cell holds a value written by the writer and
        // published by its Release store of tail.
        unsafe { self.buf.get_unchecked(i & self.mask) }
            .with(|p| unsafe { (*p).assume_init_read() })
    }

    /// The value at position `i`, left in its cell.
    ///
    /// # Safety
    /// Only the reader calls this, with `head <= i < tail`, and the
    /// reference must not outlive the reader's next move of `head` past `i`
    /// (after which the writer may reuse the cell).
    pub(crate) unsafe fn peek(&self, i: usize) -> &T {
        // SAFETY: `i & mask` is below the buffer's length; by the caller's
        // contract the cell holds a value published by the writer's Release
        // store of tail, and the writer does not touch it before the reader
        // moves head past it.
        unsafe { self.buf.get_unchecked(i & self.mask) }.with(|p| unsafe { (*p).assume_init_ref() })
    }

    /// Messages in the ring, as the reader sees it.
    pub(crate) fn has_data(&self, head: usize) -> bool {
        self.fwd.tail.load(Ordering::Acquire) != head
    }

    /// Free room, as the writer sees it.
    pub(crate) fn has_room(&self, tail: usize) -> bool {
        tail.wrapping_sub(self.back.head.load(Ordering::Acquire)) < self.cap
    }
}

impl<T> Drop for Core<T> {
    fn drop(&mut self) {
        self.label.forget(self.id);
        let head = self.back.head.load(Ordering::Relaxed);
        let tail = self.fwd.tail.load(Ordering::Relaxed);
        let mut i = head;
        while i != tail {
            // SAFETY: both ends are gone (we hold the last reference), and the
            // cells in [head, tail) hold values nobody took.
            drop(unsafe { self.take(i) });
            i = i.wrapping_add(1);
        }
    }
}

impl<T: Send> Recheck for Core<T> {
    fn position(&self, side: Side) -> &AtomicUsize {
        match side {
            Side::Reader => &self.back.head,
            Side::Writer => &self.fwd.tail,
        }
    }

    fn hint(&self, side: Side) -> &Hint {
        self.side_hint(side)
    }

    fn pend_mark(&self, side: Side) -> &std::sync::atomic::AtomicU64 {
        match side {
            Side::Reader => &self.fwd.rmark,
            Side::Writer => &self.back.wmark,
        }
    }

    fn recheck(&self, side: Side) {
        match side {
            Side::Reader => {
                if self.fwd.rslot.state.load(Ordering::Acquire) == WAITING
                    && (self.fwd.tail.load(Ordering::Acquire)
                        != self.back.head.load(Ordering::Acquire)
                        || self.back.wslot.is_closed())
                {
                    self.fwd.rslot.wake_unreported();
                }
            }
            Side::Writer => {
                if self.back.wslot.state.load(Ordering::Acquire) == WAITING
                    && (self
                        .fwd
                        .tail
                        .load(Ordering::Acquire)
                        .wrapping_sub(self.back.head.load(Ordering::Acquire))
                        < self.cap
                        || self.fwd.rslot.is_closed())
                {
                    self.back.wslot.wake_unreported();
                }
            }
        }
    }
}
