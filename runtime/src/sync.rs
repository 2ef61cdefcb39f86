//! One place that picks the synchronisation primitives: std's in normal builds,
//! loom's under `--cfg loom`, so the protocols can be model-checked unchanged.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize,
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize,
};

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// A std `UnsafeCell` with loom's closure-based API, so code reads the same under
/// both builds.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(v: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(v))
    }
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Asks for the cache line at `p` in a writable state, ahead of a load and a
/// write to it. A line that another core wrote last otherwise moves twice
/// when read and then written: once shared for the load, once more to take
/// it over for the write. A hint only (no memory access, no fault for any
/// address); nothing under loom or on other architectures.
#[inline(always)]
pub(crate) fn prefetch_write<T>(p: *const T) {
    #[cfg(all(not(loom), target_arch = "x86_64"))]
    // SAFETY: `prefetchw` touches no architectural state: it neither reads
    // nor writes memory as far as the program can tell, cannot fault, and
    // leaves the flags alone. CPUs without it run the opcode as a no-op.
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(all(not(loom), target_arch = "x86_64")))]
    let _ = p;
}
