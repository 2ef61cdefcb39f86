//! The net under a log's mapping: a page the filesystem cannot back.
//!
//! Reserving space (`space.rs`) keeps almost every store into a log's
//! mapping from failing, but not every one on every filesystem: ext4 near
//! full still needs a block to convert a reserved (unwritten) extent when
//! the page is first written, a copy-on-write filesystem (btrfs) allocates
//! anew on every write, and a file cut short behind the writer's back ends
//! its mapping early. The kernel then raises SIGBUS on the writing thread.
//!
//! Each [`LogWriter`](crate::LogWriter) registers its mapping here (a slot
//! in a fixed table, no allocation). A SIGBUS handler calls
//! [`rescue_fault`] with the faulting address; if the address is in a
//! registered mapping, the page is replaced by a fresh anonymous one, the
//! store is retried by the kernel and succeeds (its bytes go nowhere), and
//! the slot remembers the first such page. The writer looks at its slot
//! when it next reserves space or closes, then cuts the log at the last
//! whole record before that page and stops, marking the log truncated. The
//! rill runtime's SIGSEGV/SIGBUS handler (`runtime/src/overflow.rs`) calls
//! [`rescue_fault`]; a program that writes logs without the runtime can do
//! the same from its own handler.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Mappings watched at once: a log beyond these is written without the net.
const SLOTS: usize = 1024;

/// `fault` when no page was replaced.
const NO_FAULT: usize = usize::MAX;

/// One registered mapping.
struct Slot {
    taken: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    /// Offset from `start` of the first page replaced, or [`NO_FAULT`].
    fault: AtomicUsize,
    /// The system's page size, for the handler (no call to find it there).
    page: AtomicUsize,
}

impl Slot {
    const fn free() -> Slot {
        Slot {
            taken: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            fault: AtomicUsize::new(NO_FAULT),
            page: AtomicUsize::new(4096),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::free() }; SLOTS];

// Orderings: a mapping is written, and so can fault, only on the thread of
// its writer, which is the thread that set its slot's range; a handler runs
// on the faulting thread. So a handler that matches an address sees the
// range its own thread stored, and Relaxed suffices for the range and the
// fault. Another thread's handler may read a range while it changes, but
// only ever matches addresses of its own writer's mapping, and a writer
// clears its range before the old mapping is unmapped (`Watch::clear`), so
// that no stale range can cover another writer's new mapping.

/// A writer's slot in the table (none if the table was full).
#[derive(Debug)]
pub(crate) struct Watch {
    slot: Option<&'static Slot>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("start", &self.start.load(Ordering::Relaxed))
            .field("end", &self.end.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Takes a free slot, with no range yet.
    pub(crate) fn new(page: usize) -> Watch {
        // Acquire: pairs with the Release of `Drop`, so that the slot's
        // previous owner is done with it.
        let slot = TABLE.iter().find(|s| {
            s.taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        if let Some(s) = slot {
            s.page.store(page, Ordering::Relaxed);
            s.fault.store(NO_FAULT, Ordering::Relaxed);
        }
        Watch { slot }
    }

    /// Watches the mapping of `len` bytes at `start`.
    pub(crate) fn set(&self, start: usize, len: usize) {
        if let Some(s) = self.slot {
            s.end.store(0, Ordering::Relaxed);
            s.start.store(start, Ordering::Relaxed);
            s.end.store(start.saturating_add(len), Ordering::Relaxed);
        }
    }

    /// Watches nothing (before the mapping is replaced or dropped).
    pub(crate) fn clear(&self) {
        if let Some(s) = self.slot {
            s.end.store(0, Ordering::Relaxed);
            s.start.store(0, Ordering::Relaxed);
        }
    }

    /// The offset in the mapping of the first page replaced, if any.
    pub(crate) fn fault(&self) -> Option<usize> {
        let f = self.slot?.fault.load(Ordering::Relaxed);
        (f != NO_FAULT).then_some(f)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.clear();
        if let Some(s) = self.slot {
            // Release: pairs with the Acquire of `new`.
            s.taken.store(false, Ordering::Release);
        }
    }
}

/// For a SIGBUS handler: if `addr` (the fault's `si_addr`) lies in a log
/// writer's mapping, replaces its page by an anonymous zero page, notes
/// the fault for the writer, and returns true: the handler then returns
/// and the faulting store runs again, harmlessly. False for any other
/// address (the handler should do what it would have done).
///
/// Async-signal-safe in practice: it reads atomics and makes one `mmap`
/// system call (not on POSIX's list, but a plain system call on Linux that
/// takes no lock in the C library). It allocates nothing.
pub fn rescue_fault(addr: usize) -> bool {
    for s in &TABLE {
        let start = s.start.load(Ordering::Relaxed);
        if start == 0 || addr < start || addr >= s.end.load(Ordering::Relaxed) {
            continue;
        }
        let page = s.page.load(Ordering::Relaxed);
        let at = addr & !(page - 1);
        // SAFETY: the page lies inside a mapping that a live writer owns
        // and only writes (its slot holds the range while it is mapped);
        // MAP_FIXED replaces that one page of it with private zeroed memory,
        // which the writer's later stores (and its unmapping) treat like the
        // file page it replaces. Nothing else points into the mapping.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return false;
        }
        s.fault.fetch_min(at - start, Ordering::Relaxed);
        return true;
    }
    false
}
