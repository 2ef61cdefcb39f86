//! Coroutine stacks: carved from large slabs, reused through per-worker pools.
//!
//! Creating a stack with its own `mmap` and guard page costs microseconds and
//! two kernel mappings (VMAs): the guard page splits the mapping. The kernel caps
//! a process at `vm.max_map_count` mappings (65530 by default), so one guarded
//! mapping per task stops near 32,000 live tasks. rill trades as follows:
//!
//! - Stacks are cut from slabs of [`SLAB_STACKS`] stacks, one `mmap` each,
//!   `MAP_NORESERVE` (only touched pages cost memory) and `MADV_NOHUGEPAGE` (a
//!   huge page would make every idle task cost 2 MiB).
//! - While the process is under its mapping budget, every stack gets a guard
//!   page (`mprotect(PROT_NONE)` on its lowest page). An overflow then faults on
//!   the guard and the handler in `overflow.rs` names the task.
//! - Past the budget, slabs are unguarded: adjacent stacks share one mapping,
//!   and canary words in the lowest [`CANARY_SPAN`] bytes of each stack are
//!   checked every time its task stops (several words, spread out, so that an
//!   overflowing frame whose padding happens to skip one word is still caught). An overflow there is still reported by task name, but after the fact:
//!   a neighbour's stack may already be damaged, so the process aborts.
//! - Stacks return to the pool of the worker where their task ended, and are
//!   never unmapped until the runtime is dropped.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use corosensei::stack::{Stack, StackPointer};

/// Stacks per slab.
pub const SLAB_STACKS: usize = 32;
/// Written at [`CANARY_WORDS`] words of unguarded stacks; checked when a task stops.
pub const CANARY: u64 = 0x5249_4c4c_5f53_5441; // "RILL_STA"
/// How many canary words an unguarded stack has, [`CANARY_STRIDE`] bytes apart
/// from its lowest word up.
pub const CANARY_WORDS: usize = 4;
/// Distance between canary words.
pub const CANARY_STRIDE: usize = 64;
/// The lowest bytes of an unguarded stack that hold its canaries (a red zone).
pub const CANARY_SPAN: usize = CANARY_WORDS * CANARY_STRIDE;
// The canaries are written into the stack's lowest page, the smallest page there is.
const _: () = assert!(CANARY_SPAN <= 4096);

/// Whether every canary word of the unguarded stack whose lowest word is
/// `lo` is intact.
///
/// # Safety
/// `lo` is the lowest address of an unguarded stack that is still mapped.
#[inline]
pub unsafe fn canaries_intact(lo: usize) -> bool {
    (0..CANARY_WORDS).all(|k| {
        // SAFETY: the words lie in the stack's lowest CANARY_SPAN bytes, which
        // the caller guarantees are mapped; they are u64-aligned.
        unsafe { ((lo + k * CANARY_STRIDE) as *const u64).read_volatile() == CANARY }
    })
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p <= 0 {
        4096
    } else {
        p as usize
    }
}

/// How many guarded stacks this process can afford, from `vm.max_map_count`
/// and the mappings it holds now, keeping a generous margin for the allocator,
/// threads and log files.
pub fn guarded_budget() -> usize {
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(65530);
    let used = std::fs::read_to_string("/proc/self/maps")
        .map(|s| s.lines().count())
        .unwrap_or(1000);
    let margin = 8192 + max / 8;
    max.saturating_sub(used + margin) / 2
}

struct Slab {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a slab is a plain memory region; it is only unmapped on drop, when the
// pool that owns it is gone.
unsafe impl Send for Slab {}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: base/len describe a mapping created by mmap in `Slab::new`, and
        // every stack cut from it belongs to a coroutine that has been dropped
        // before the pool (the runtime drops tasks first).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// The process-wide part of the stack pool: slab allocation and limits.
pub struct StackSource {
    /// Distance between stacks in a slab: the guard page, the usable size
    /// and the colour span.
    stack_size: usize,
    page: usize,
    /// Cache lines over which stack tops are spread (see [`colour`]).
    colours: usize,
    inner: Mutex<SourceInner>,
}

struct SourceInner {
    slabs: Vec<Slab>,
    guarded_left: usize,
    stacks_made: usize,
    max_stacks: usize,
}

/// Error when no stack can be had.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StackError {
    /// The configured limit on stacks was reached.
    #[error(
        "stack pool exhausted: {0} stacks are in use, the configured limit (Builder::max_tasks)"
    )]
    Limit(usize),
    /// The kernel refused memory.
    #[error("could not map memory for task stacks: {0} (live stacks: {1}; check vm.max_map_count and ulimit -v)")]
    Map(String, usize),
}

impl StackSource {
    /// A source of stacks of `stack_size` bytes (rounded up to pages, plus a
    /// guard page), at most `max_stacks` of them.
    pub fn new(stack_size: usize, max_stacks: usize, guarded: usize) -> Arc<Self> {
        let page = page_size();
        let usable = stack_size.div_ceil(page).max(2) * page;
        let span = usable.min(COLOUR_SPAN);
        Arc::new(StackSource {
            stack_size: usable + page + span,
            page,
            colours: span / 64,
            inner: Mutex::new(SourceInner {
                slabs: Vec::new(),
                guarded_left: guarded,
                stacks_made: 0,
                max_stacks,
            }),
        })
    }

    /// Maps a new slab and returns its stacks.
    #[cold]
    fn new_slab(&self, out: &mut Vec<TaskStack>) -> Result<(), StackError> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.stacks_made >= inner.max_stacks {
            return Err(StackError::Limit(inner.stacks_made));
        }
        let n = SLAB_STACKS.min(inner.max_stacks - inner.stacks_made);
        let guarded = inner.guarded_left >= n;
        let len = n * self.stack_size;
        // SAFETY: anonymous private mapping with no address hint; the result is
        // checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(StackError::Map(
                std::io::Error::last_os_error().to_string(),
                inner.stacks_made,
            ));
        }
        // SAFETY: p is a fresh mapping of len bytes; madvise is advisory.
        unsafe {
            libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        }
        let base = NonNull::new(p.cast::<u8>()).expect("mmap returned null");
        for i in 0..n {
            // SAFETY: i < n, so the stack lies inside the mapping.
            let lo = unsafe { base.as_ptr().add(i * self.stack_size) };
            if guarded {
                // SAFETY: the page at lo lies inside our mapping; making it
                // inaccessible cannot affect memory anyone else uses.
                let r = unsafe { libc::mprotect(lo.cast(), self.page, libc::PROT_NONE) };
                if r != 0 {
                    return Err(StackError::Map(
                        std::io::Error::last_os_error().to_string(),
                        inner.stacks_made,
                    ));
                }
            } else {
                for k in 0..CANARY_WORDS {
                    // SAFETY: lo is the start of a writable page of the
                    // mapping, so lo + k * CANARY_STRIDE (below CANARY_SPAN,
                    // less than a page) is writable and aligned for u64.
                    unsafe { lo.add(k * CANARY_STRIDE).cast::<u64>().write(CANARY) };
                }
            }
            out.push(TaskStack {
                lo: lo as usize,
                hi: lo as usize + self.stack_size - colour(inner.stacks_made + i, self.colours),
                guard: if guarded { self.page } else { 0 },
            });
        }
        if guarded {
            inner.guarded_left -= n;
        }
        inner.stacks_made += n;
        inner.slabs.push(Slab { base, len });
        Ok(())
    }
}

/// The most by which a stack's top is moved down (see [`colour`]): a page,
/// 64 colours of 64 bytes. Each stack gets this much more address space, so
/// its usable size stays what was asked for. Only touched pages cost memory;
/// a task's frames may straddle one more page boundary than before.
const COLOUR_SPAN: usize = 4096;

/// How far below its slot's end the `k`th stack begins, in bytes: a multiple
/// of 64 below `colours * 64`, different for consecutive stacks (17 steps
/// through all colours when it shares no factor with their count).
///
/// Stacks lie a fixed distance apart, a multiple of 4 KiB, so without this
/// every task's top frames would have the same address modulo 4 KiB, and a
/// task's loads right after another task's stores at the same offsets can
/// look to the CPU as if they alias them. A ring of 100 tasks on one worker
/// went from 94 to 87 ns per hop (8 alternating pairs); cachegrind shows no
/// fewer L1 misses, so the cache sets are not where the gain comes from, and
/// the aliasing is the likely reason (no counters here to show it).
fn colour(k: usize, colours: usize) -> usize {
    (k.wrapping_mul(17) % colours.max(1)) * 64
}

/// One coroutine stack: the address range `[lo, hi)`, whose lowest `guard` bytes
/// are a PROT_NONE guard page (0 for an unguarded stack with a canary).
#[derive(Debug)]
pub struct TaskStack {
    lo: usize,
    hi: usize,
    guard: usize,
}

impl TaskStack {
    /// Lowest address of the stack (its guard page or canary).
    pub fn lo(&self) -> usize {
        self.lo
    }
    /// Size of the guard page, 0 when unguarded.
    pub fn guard(&self) -> usize {
        self.guard
    }
}

// SAFETY: the range [lo + guard, hi) is writable memory owned by this value
// alone (stacks are handed out once and returned to a pool), hi is 16-byte
// aligned (slab and stack sizes are page multiples, colours multiples of 64),
// and limit() includes the guard page, as corosensei's contract asks.
unsafe impl Stack for TaskStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.hi).expect("stack top is non-zero")
    }
    fn limit(&self) -> StackPointer {
        StackPointer::new(self.lo + if self.guard == 0 { 64 } else { 0 })
            .expect("stack limit is non-zero")
    }
}

/// A worker's cache of free stacks.
pub struct StackPool {
    source: Arc<StackSource>,
    free: Vec<TaskStack>,
}

impl StackPool {
    /// An empty pool drawing on `source`.
    pub fn new(source: Arc<StackSource>) -> Self {
        StackPool {
            source,
            free: Vec::new(),
        }
    }

    /// A free stack, from the cache or a new slab.
    #[inline]
    pub fn take(&mut self) -> Result<TaskStack, StackError> {
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        self.source.new_slab(&mut self.free)?;
        Ok(self.free.pop().expect("a new slab has stacks"))
    }

    /// Returns a stack for reuse.
    #[inline]
    pub fn give(&mut self, s: TaskStack) {
        self.free.push(s);
    }
}
