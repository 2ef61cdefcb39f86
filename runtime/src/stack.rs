//! Coroutine stacks: carved from large slabs, reused through per-worker pools.
//!
//! Every stack has a guard page below it, so that an overflow faults there
//! and the handler in `overflow.rs` names the task, before anything else is
//! touched. How that page is made decides how many stacks can be guarded:
//!
//! - Stacks are cut from slabs of [`SLAB_STACKS`] stacks, one `mmap` each,
//!   `MAP_NORESERVE` (only touched pages cost memory) and `MADV_NOHUGEPAGE` (a
//!   huge page would make every idle task cost 2 MiB).
//! - Where the kernel has guard markers (`madvise(MADV_GUARD_INSTALL)`, Linux
//!   6.13 and later; probed once per process, see [`guard_markers_supported`]),
//!   each stack's lowest page gets one. A marker lives in the page table, not
//!   in the mapping: a slab stays one kernel mapping (VMA) however many stacks
//!   it holds, so every stack is guarded, with no limit from
//!   `vm.max_map_count`. A fault on a marker is a SIGSEGV at that address,
//!   like one on a `PROT_NONE` page. Markers survive `MADV_DONTNEED` and
//!   `MADV_FREE` of the stack around them (checked on Linux 6.18); the pool
//!   releases nothing anyway until the runtime is dropped.
//! - Elsewhere the guard is `mprotect(PROT_NONE)` on the lowest page, which
//!   splits the mapping: two mappings per stack. The kernel caps a process
//!   at `vm.max_map_count` mappings (65530 by default), so this stops near
//!   24,000 stacks ([`guarded_budget`] keeps a margin for everything else).
//!   Past that budget a stack is refused ([`StackError::NoGuard`]: the task
//!   cannot be spawned, naming the limit), unless the program opted in to
//!   unguarded stacks (`Builder::unguarded_stacks`).
//! - An unguarded stack (only with that opt-in) shares its mapping with its
//!   neighbours. Canary words in its lowest [`CANARY_SPAN`] bytes are checked
//!   every time its task stops (several words, spread out, so that an
//!   overflowing frame whose padding happens to skip one word is still
//!   caught), and a smashed one is reported by task name and aborts. That is
//!   after the fact: the overflow has already written into the neighbouring
//!   stack, maybe of a task running on another worker, and a frame larger
//!   than the span can skip the canaries altogether.
//! - Stacks return to the pool of the worker where their task ended, and are
//!   never unmapped until the runtime is dropped. Then marker-guarded slabs
//!   are kept (up to [`SPARE_SLABS`], their pages given back with
//!   `MADV_FREE`) for the next runtime of the process with the same stack
//!   size, which takes them instead of mapping and guarding new ones.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

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

/// `madvise` advice that installs guard markers on a range (Linux 6.13+;
/// not yet in the `libc` crate).
const MADV_GUARD_INSTALL: libc::c_int = 102;

/// Whether this kernel guards pages with markers (`MADV_GUARD_INSTALL`):
/// probed once per process on a page of its own, which must take the advice
/// and then refuse a read by the kernel (a `write` from it to a pipe fails
/// with `EFAULT`), so that a system that accepts the advice without acting
/// on it does not pass.
pub fn guard_markers_supported() -> bool {
    static PROBED: OnceLock<bool> = OnceLock::new();
    *PROBED.get_or_init(probe_guard_markers)
}

fn probe_guard_markers() -> bool {
    let page = page_size();
    // SAFETY: anonymous private mapping with no address hint; checked against
    // MAP_FAILED before use, and unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: p is our own page; a guard marker on it affects nothing else
    // (an old kernel answers EINVAL and does nothing).
    let mut ok = unsafe { libc::madvise(p, page, MADV_GUARD_INSTALL) } == 0;
    if ok {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0 {
            // SAFETY: a one-byte write from our page to our new, empty pipe;
            // the kernel reads the page or fails with EFAULT, it never faults
            // the process. Both descriptors are ours and closed once.
            unsafe {
                let r = libc::write(fds[1], p, 1);
                ok = r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT);
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
        }
    }
    // SAFETY: p is the page mapped above, used by nothing now.
    unsafe { libc::munmap(p, page) };
    ok
}

/// How many `mprotect` guard pages this process can afford, from
/// `vm.max_map_count` and the mappings it holds now, keeping a generous
/// margin for the allocator, threads and log files.
pub fn guarded_budget() -> PageBudget {
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(65530);
    let used = std::fs::read_to_string("/proc/self/maps")
        .map(|s| s.lines().count())
        .unwrap_or(1000);
    let margin = 8192 + max / 8;
    PageBudget {
        stacks: max.saturating_sub(used + margin) / 2,
        max_map_count: max,
    }
}

/// What [`guarded_budget`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBudget {
    /// Stacks that may get a guard page.
    pub stacks: usize,
    /// The `vm.max_map_count` it was computed from.
    pub max_map_count: usize,
}

/// How the stacks of a source are guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardPolicy {
    /// Guard with markers where the kernel has them (false only in tests of
    /// the other ways).
    pub markers: bool,
    /// Stacks that may get an `mprotect` guard page where markers fail.
    pub pages: PageBudget,
    /// Whether stacks past `pages` may go unguarded, with canaries.
    pub allow_unguarded: bool,
}

/// How one slab's stacks are guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GuardKind {
    /// A guard marker on each stack's lowest page (one mapping per slab).
    Marker,
    /// `mprotect(PROT_NONE)` on each stack's lowest page.
    Page,
    /// No guard: canaries in the lowest [`CANARY_SPAN`] bytes.
    Canary,
}

struct Slab {
    base: NonNull<u8>,
    len: usize,
    /// Its stacks and how they are guarded.
    stacks: usize,
    kind: GuardKind,
    /// Under valgrind, the ids its stacks were registered under
    /// ([`valgrind::stack_register`]); empty otherwise.
    vg_stacks: Vec<usize>,
}

/// Slabs whose runtime has ended, kept for the next runtime of the process
/// with the same stack size: mapping a slab, guarding each stack and
/// faulting in each stack's top pages cost a run about 7 µs per task at its
/// start (0.7 ms for a ring of 100 tasks on this machine). Only slabs with
/// guard markers are kept (one mapping each, and markers survive
/// `MADV_FREE`); their pages are given back with `MADV_FREE`, so a spare
/// costs memory only until the kernel wants it, and a page it has not taken
/// back is reused without a fault. At most [`SPARE_SLABS`]; the rest are
/// unmapped as before.
static SPARE: Mutex<Vec<(usize, Slab)>> = Mutex::new(Vec::new());

/// The most slabs [`SPARE`] keeps.
const SPARE_SLABS: usize = 16;

/// A spare slab of `n` stacks of `stack_size`, if one is kept.
fn take_spare(stack_size: usize, n: usize) -> Option<Slab> {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let i = spare
        .iter()
        .position(|(size, slab)| *size == stack_size && slab.stacks == n)?;
    Some(spare.swap_remove(i).1)
}

// SAFETY: a slab is a plain memory region; it is only unmapped on drop, when the
// pool that owns it is gone.
unsafe impl Send for Slab {}

impl Drop for Slab {
    fn drop(&mut self) {
        for &id in &self.vg_stacks {
            valgrind::stack_deregister(id);
        }
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
    /// Whether to try guard markers (cleared when the kernel refuses them).
    markers: bool,
    /// Guard pages that may still be made with `mprotect`.
    pages_left: usize,
    policy: GuardPolicy,
    stacks_made: usize,
    /// Stacks made with a guard (marker or page).
    guarded: usize,
    max_stacks: usize,
    /// Slabs taken from [`SPARE`] rather than mapped (read by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    spares_taken: usize,
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
    /// No guard page can be had, and unguarded stacks were not allowed.
    #[error(
        "no guard page left for another task stack: {guarded} stacks have one, as many as \
         vm.max_map_count ({max_map_count}) allows, since each guard page costs kernel \
         mappings where guard markers (madvise MADV_GUARD_INSTALL, Linux 6.13+) are not \
         available; raise the limit (sysctl -w vm.max_map_count=N), run on a newer kernel, \
         or allow unguarded stacks with Builder::unguarded_stacks (an overflow on one \
         corrupts the stack next to it)"
    )]
    NoGuard {
        /// Stacks made with a guard page.
        guarded: usize,
        /// The kernel's limit on mappings.
        max_map_count: usize,
    },
}

impl StackSource {
    /// A source of stacks of `stack_size` bytes (rounded up to pages, plus a
    /// guard page), at most `max_stacks` of them, guarded as `policy` says.
    /// The size saturates instead of wrapping (the builder keeps it at or
    /// below `MAX_STACK_SIZE`, so it never does there); a saturated size
    /// makes the slab's length overflow, which `new_slab` reports.
    pub fn new(stack_size: usize, max_stacks: usize, policy: GuardPolicy) -> Arc<Self> {
        let page = page_size();
        let usable = stack_size.div_ceil(page).max(2).saturating_mul(page);
        let span = usable.min(COLOUR_SPAN);
        Arc::new(StackSource {
            stack_size: usable.saturating_add(page + span),
            page,
            colours: span / 64,
            inner: Mutex::new(SourceInner {
                slabs: Vec::new(),
                markers: policy.markers && guard_markers_supported(),
                pages_left: policy.pages.stacks,
                policy,
                stacks_made: 0,
                guarded: 0,
                max_stacks,
                spares_taken: 0,
            }),
        })
    }

    /// Stacks made so far: (with a guard, without).
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (inner.guarded, inner.stacks_made - inner.guarded)
    }

    /// Maps a new slab and returns its stacks.
    #[cold]
    fn new_slab(&self, out: &mut Vec<TaskStack>) -> Result<(), StackError> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.stacks_made >= inner.max_stacks {
            return Err(StackError::Limit(inner.stacks_made));
        }
        let n = SLAB_STACKS.min(inner.max_stacks - inner.stacks_made);
        if inner.markers {
            if let Some(slab) = take_spare(self.stack_size, n) {
                self.reuse_slab(&mut inner, slab, out);
                return Ok(());
            }
        }
        let len = n.checked_mul(self.stack_size).ok_or_else(|| {
            StackError::Map(
                format!(
                    "a slab of {n} stacks of {} bytes overflows",
                    self.stack_size
                ),
                inner.stacks_made,
            )
        })?;
        let (base, kind) = loop {
            let kind = if inner.markers {
                GuardKind::Marker
            } else if inner.pages_left >= n {
                GuardKind::Page
            } else if inner.policy.allow_unguarded {
                GuardKind::Canary
            } else {
                return Err(StackError::NoGuard {
                    guarded: inner.guarded,
                    max_map_count: inner.policy.pages.max_map_count,
                });
            };
            // SAFETY: anonymous private mapping with no address hint; the
            // result is checked against MAP_FAILED before use.
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
            match self.guard_stacks(base, n, kind) {
                Ok(()) => break (base, kind),
                Err(e) => {
                    // SAFETY: the mapping made above, not handed out yet.
                    unsafe { libc::munmap(p, len) };
                    if kind == GuardKind::Marker {
                        // The kernel has markers but refuses them here (an
                        // mlocked process, say): use guard pages from now on.
                        inner.markers = false;
                        continue;
                    }
                    return Err(StackError::Map(e.to_string(), inner.stacks_made));
                }
            }
        };
        // Under valgrind, each stack is registered as one, so that a switch
        // onto or off it is taken for a switch of stacks: otherwise a switch
        // between two stacks less than 2 MB apart looks to memcheck like a
        // frame pushed or popped, and it marks the memory between them (a
        // worker thread's stack and thread-locals, say) unaddressable, which
        // made the soundness tests fail under memcheck about one run in
        // four. Without valgrind the requests do nothing.
        let mut vg_stacks = Vec::new();
        for i in 0..n {
            // SAFETY: i < n, so the stack lies inside the mapping.
            let lo = unsafe { base.as_ptr().add(i * self.stack_size) };
            if let Some(id) =
                valgrind::stack_register(lo as usize, lo as usize + self.stack_size - 1)
            {
                vg_stacks.push(id);
            }
            out.push(TaskStack {
                lo: lo as usize,
                hi: lo as usize + self.stack_size - colour(inner.stacks_made + i, self.colours),
                guard: if kind == GuardKind::Canary {
                    0
                } else {
                    self.page
                },
            });
        }
        match kind {
            GuardKind::Marker => inner.guarded += n,
            GuardKind::Page => {
                inner.guarded += n;
                inner.pages_left -= n;
            }
            GuardKind::Canary => {}
        }
        inner.stacks_made += n;
        inner.slabs.push(Slab {
            base,
            len,
            stacks: n,
            kind,
            vg_stacks,
        });
        Ok(())
    }

    /// Carves the stacks of `slab` (its guards in place) into `out`.
    fn reuse_slab(&self, inner: &mut SourceInner, slab: Slab, out: &mut Vec<TaskStack>) {
        let n = slab.stacks;
        // Under valgrind, the old stacks' memory is marked unaddressable
        // where their coroutines' frames were popped; a fresh mapping is
        // addressable. Say so again for the reused slab.
        valgrind::make_mem_undefined(slab.base.as_ptr() as usize, slab.len);
        for i in 0..n {
            // SAFETY: i < n, so the stack lies inside the slab's mapping.
            let lo = unsafe { slab.base.as_ptr().add(i * self.stack_size) };
            out.push(TaskStack {
                lo: lo as usize,
                hi: lo as usize + self.stack_size - colour(inner.stacks_made + i, self.colours),
                guard: self.page,
            });
        }
        inner.guarded += n;
        inner.stacks_made += n;
        inner.spares_taken += 1;
        inner.slabs.push(slab);
    }

    /// Slabs this source took from the spares of ended runtimes.
    #[cfg(test)]
    pub fn spares_taken(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spares_taken
    }

    /// Guards the `n` stacks of the fresh slab at `base` as `kind` says.
    fn guard_stacks(
        &self,
        base: NonNull<u8>,
        n: usize,
        kind: GuardKind,
    ) -> Result<(), std::io::Error> {
        for i in 0..n {
            // SAFETY: i < n, so the stack lies inside the slab's mapping.
            let lo = unsafe { base.as_ptr().add(i * self.stack_size) };
            let r = match kind {
                // SAFETY: the page at lo lies inside the slab, which nothing
                // uses yet; a marker or PROT_NONE there affects no one else.
                GuardKind::Marker => unsafe {
                    libc::madvise(lo.cast(), self.page, MADV_GUARD_INSTALL)
                },
                // SAFETY: as above.
                GuardKind::Page => unsafe { libc::mprotect(lo.cast(), self.page, libc::PROT_NONE) },
                GuardKind::Canary => {
                    for k in 0..CANARY_WORDS {
                        // SAFETY: lo is the start of a writable page of the
                        // mapping, so lo + k * CANARY_STRIDE (below
                        // CANARY_SPAN, less than a page) is writable and
                        // aligned for u64.
                        unsafe { lo.add(k * CANARY_STRIDE).cast::<u64>().write(CANARY) };
                    }
                    0
                }
            };
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for StackSource {
    /// Keeps marker-guarded slabs in [`SPARE`] (room permitting); the others
    /// are unmapped. No stack of them is in use: their runtime has dropped
    /// its tasks and pools (see `Slab`'s `Drop`).
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        for slab in inner.slabs.drain(..) {
            if slab.kind == GuardKind::Marker && spare.len() < SPARE_SLABS {
                // SAFETY: the slab's own mapping, which nothing uses now;
                // MADV_FREE only lets the kernel drop its pages' contents
                // (its guard markers stay). Advisory: a failure keeps them.
                unsafe {
                    libc::madvise(slab.base.as_ptr().cast(), slab.len, libc::MADV_FREE);
                }
                spare.push((self.stack_size, slab));
            }
        }
    }
}

/// Valgrind's client requests that the stacks need: without valgrind each
/// is a sequence of instructions that changes nothing.
mod valgrind {
    /// `VG_USERREQ__MAKE_MEM_UNDEFINED` (memcheck's `'M' 'C'` base + 1).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    const MAKE_MEM_UNDEFINED: usize = 0x4D43_0001;
    /// `VG_USERREQ__STACK_REGISTER` and `VG_USERREQ__STACK_DEREGISTER` (the
    /// core's requests, `valgrind.h`).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    const STACK_REGISTER: usize = 0x1501;
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    const STACK_DEREGISTER: usize = 0x1502;

    /// Registers `[lo, hi]` (both addressable bytes) as a stack. Its id
    /// under valgrind; `None` without valgrind (the request then answers
    /// the default it was given, `usize::MAX`).
    #[inline]
    pub(super) fn stack_register(lo: usize, hi: usize) -> Option<usize> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            let id = request([STACK_REGISTER, lo, hi, 0, 0, 0], usize::MAX);
            (id != usize::MAX).then_some(id)
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        {
            let _ = (lo, hi);
            None
        }
    }

    /// Forgets the stack registered as `id` (before its memory is unmapped).
    #[inline]
    pub(super) fn stack_deregister(id: usize) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        request([STACK_DEREGISTER, id, 0, 0, 0, 0], 0);
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        let _ = id;
    }

    /// Tells memcheck (when the process runs under it) that `[addr, addr +
    /// len)` is addressable memory with undefined contents, as a fresh
    /// mapping is.
    #[inline]
    pub(super) fn make_mem_undefined(addr: usize, len: usize) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        request([MAKE_MEM_UNDEFINED, addr, len, 0, 0, 0], 0);
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        let _ = (addr, len);
    }

    /// A client request: valgrind's answer, or `default` when the process
    /// does not run under it.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[inline]
    fn request(args: [usize; 6], default: usize) -> usize {
        let answer: usize;
        // SAFETY: valgrind's client-request sequence for amd64: four
        // rotations of rdi by 3, 13, 61 and 51 bits (128 in all, so rdi
        // comes back unchanged) and `xchg rbx, rbx` (a no-op). On a real
        // CPU it changes no register and no memory, and rdx keeps the
        // default; under valgrind it reads the six words at rax and
        // writes its answer to rdx. `args` lives across the block.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") default => answer,
                in("rax") args.as_ptr(),
                inout("rdi") 0usize => _,
                options(nostack),
            );
        }
        answer
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
/// are a guard page, a marker or `PROT_NONE` (0 for an unguarded stack with
/// canaries).
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Whether the kernel can read the byte at `addr` (a write from it to a
    /// pipe succeeds); false on a guard page, without faulting the test.
    fn kernel_reads(addr: usize) -> bool {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: fds has room for two descriptors; the one-byte write makes
        // the kernel read addr or fail with EFAULT; both ends are closed.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
            let r = libc::write(fds[1], addr as *const libc::c_void, 1);
            libc::close(fds[0]);
            libc::close(fds[1]);
            r == 1
        }
    }

    fn policy(markers: bool, pages: usize, allow_unguarded: bool) -> GuardPolicy {
        GuardPolicy {
            markers,
            pages: PageBudget {
                stacks: pages,
                max_map_count: 65530,
            },
            allow_unguarded,
        }
    }

    /// A stack's guard page refuses access, and its usable part does not.
    fn assert_guarded(s: &TaskStack) {
        assert_eq!(s.guard(), page_size());
        assert!(!kernel_reads(s.lo()), "guard page readable");
        assert!(!kernel_reads(s.lo() + s.guard() - 1), "guard page readable");
        assert!(kernel_reads(s.lo() + s.guard()), "stack unreadable");
    }

    /// A runtime's slabs outlive it as spares, and the next source with the
    /// same stack size takes them, guards and all, instead of mapping new
    /// ones.
    #[test]
    fn a_dropped_source_leaves_its_slabs_to_the_next() {
        if !guard_markers_supported() {
            return; // only marker-guarded slabs are kept
        }
        // A stack size no other test of this process uses.
        let size = 5 * page_size() + 123;
        let a = StackSource::new(size, 1000, policy(true, 0, false));
        let mut pool = StackPool::new(a.clone());
        let s = pool.take().unwrap();
        let lo = s.lo();
        // Written, then handed back with the source.
        // SAFETY: the stack's usable range starts a guard page above lo.
        unsafe { ((lo + s.guard()) as *mut u64).write(7) };
        pool.give(s);
        drop(pool);
        drop(a);
        let b = StackSource::new(size, 1000, policy(true, 0, false));
        let mut pool = StackPool::new(b.clone());
        let stacks: Vec<TaskStack> = (0..SLAB_STACKS).map(|_| pool.take().unwrap()).collect();
        assert_eq!(b.spares_taken(), 1, "the spare slab was not reused");
        assert!(stacks.iter().any(|s| s.lo() == lo));
        for s in &stacks {
            assert_guarded(s);
        }
        assert_eq!(b.counts(), (SLAB_STACKS, 0));
        for s in stacks {
            pool.give(s);
        }
    }

    #[test]
    fn marker_guards_cost_no_mappings_and_survive_dontneed() {
        if !guard_markers_supported() {
            eprintln!("skipped: no guard markers on this kernel");
            return;
        }
        let src = StackSource::new(64 * 1024, 1 << 20, policy(true, 0, false));
        let mut pool = StackPool::new(src.clone());
        let stacks: Vec<TaskStack> = (0..4 * SLAB_STACKS).map(|_| pool.take().unwrap()).collect();
        // Four slabs, one mapping each: count the mappings that lie inside
        // them (other tests of this binary map and unmap elsewhere).
        let ranges: Vec<(usize, usize)> = {
            let inner = src.inner.lock().unwrap();
            inner
                .slabs
                .iter()
                .map(|s| (s.base.as_ptr() as usize, s.base.as_ptr() as usize + s.len))
                .collect()
        };
        let inside = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let (a, b) = l.split_whitespace().next()?.split_once('-')?;
                Some((
                    usize::from_str_radix(a, 16).ok()?,
                    usize::from_str_radix(b, 16).ok()?,
                ))
            })
            .filter(|&(a, b)| ranges.iter().any(|&(lo, hi)| a < hi && b > lo))
            .count();
        assert_eq!(ranges.len(), 4);
        assert!(inside <= 4, "{inside} mappings in 4 slabs");
        assert_eq!(src.counts(), (4 * SLAB_STACKS, 0));
        for s in &stacks {
            assert_guarded(s);
        }
        // Touch a stack, then give its slab's memory back: the markers stay.
        let s = &stacks[0];
        // SAFETY: the byte lies in the usable part of a stack we hold.
        unsafe { ((s.lo() + s.guard()) as *mut u8).write_volatile(7) };
        let inner = src.inner.lock().unwrap();
        for slab in &inner.slabs {
            for advice in [libc::MADV_DONTNEED, libc::MADV_FREE] {
                // SAFETY: the slabs are ours and no stack of them is in use.
                let r = unsafe { libc::madvise(slab.base.as_ptr().cast(), slab.len, advice) };
                assert_eq!(r, 0);
            }
        }
        drop(inner);
        for s in &stacks {
            assert_guarded(s);
        }
    }

    #[test]
    fn guard_pages_within_the_budget_then_refusal() {
        let src = StackSource::new(64 * 1024, 1 << 20, policy(false, SLAB_STACKS, false));
        let mut pool = StackPool::new(src.clone());
        let stacks: Vec<TaskStack> = (0..SLAB_STACKS).map(|_| pool.take().unwrap()).collect();
        for s in &stacks {
            assert_guarded(s);
        }
        let e = pool.take().unwrap_err();
        assert!(
            matches!(e, StackError::NoGuard { guarded, max_map_count: 65530 } if guarded == SLAB_STACKS)
        );
        let text = e.to_string();
        assert!(
            text.contains("vm.max_map_count (65530)") && text.contains("Builder::unguarded_stacks"),
            "{text}"
        );
        assert_eq!(src.counts(), (SLAB_STACKS, 0));
    }

    #[test]
    fn unguarded_stacks_past_the_budget_have_canaries() {
        let src = StackSource::new(64 * 1024, 1 << 20, policy(false, SLAB_STACKS, true));
        let mut pool = StackPool::new(src.clone());
        let stacks: Vec<TaskStack> = (0..2 * SLAB_STACKS).map(|_| pool.take().unwrap()).collect();
        let (guarded, unguarded): (Vec<_>, Vec<_>) = stacks.iter().partition(|s| s.guard() != 0);
        assert_eq!((guarded.len(), unguarded.len()), (SLAB_STACKS, SLAB_STACKS));
        for s in unguarded {
            assert!(kernel_reads(s.lo()));
            // SAFETY: the stack is ours and mapped.
            assert!(unsafe { canaries_intact(s.lo()) });
        }
        assert_eq!(src.counts(), (SLAB_STACKS, SLAB_STACKS));
    }
}
