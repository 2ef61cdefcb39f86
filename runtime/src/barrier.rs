//! The asymmetric store-load barrier that keeps locked instructions off the
//! stream fast path.
//!
//! Blocking in rill is Dekker-shaped: a task that finds a ring empty stores
//! "I wait" and then loads the ring's tail; the writer stores the tail and then
//! loads "does anyone wait". Each side needs a store-load barrier between its
//! store and its load, or both can miss each other (x86 lets a load pass an
//! earlier store). A full fence on every read and write would cost more than
//! the rest of the hand-off.
//!
//! So the barrier is split unevenly. The fast side (every read and write) uses
//! [`light`], a compiler fence only. The slow side uses a real `SeqCst` fence
//! when it registers, and before its worker may rely on a registration that a
//! peer on another core could have missed, it calls [`heavy`]: the Linux
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` system call, which makes every
//! running thread of the process execute a full barrier. After `heavy` returns,
//! every fast-side store made before it is visible, and every fast-side load after
//! it sees the registration. `heavy` runs rarely: before a worker parks, and on
//! the run's ticker at most once per tick while registrations wait for a
//! barrier (the liveness rule, `worker/README.md`).
//!
//! Where membarrier is unavailable (old kernels, some sandboxes), [`light`]
//! becomes a real `SeqCst` fence, chosen once at start-up.

use std::sync::atomic::{compiler_fence, fence, AtomicU8, Ordering};

/// 0 = not probed, 1 = membarrier usable, 2 = fall back to fences.
static MODE: AtomicU8 = AtomicU8::new(0);

const MEMBARRIER_CMD_QUERY: libc::c_int = 0;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_int,
            0 as libc::c_int,
        )
    }
}

/// Probes membarrier once and registers the process for its expedited form.
/// Returns true when the asymmetric scheme is in use.
pub fn init() -> bool {
    match MODE.load(Ordering::Relaxed) {
        1 => return true,
        2 => return false,
        _ => {}
    }
    let forced_off = std::env::var_os("RILL_NO_MEMBARRIER").is_some();
    let supported = !forced_off && {
        let mask = membarrier(MEMBARRIER_CMD_QUERY);
        mask >= 0
            && (mask as libc::c_int & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0
            && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    };
    MODE.store(if supported { 1 } else { 2 }, Ordering::Relaxed);
    supported
}

/// The fast side's store-load barrier for a stream made with `fenced`
/// ([`fast_side_fenced`]): a compiler fence when membarrier backs the slow
/// side, else a real fence.
///
/// The choice is a field of the stream, fixed when it is made, not a load of
/// [`MODE`]: a plain field folds into one compare with memory, where the
/// atomic `MODE` cost a load, a compare and a jump per operation (8 of a pipe
/// relay's 49 instructions per message).
#[inline(always)]
pub fn light(fenced: bool) {
    if cfg!(loom) || fenced {
        // loom's fence under the model, std's otherwise.
        std::hint::cold_path();
        crate::sync::fence(Ordering::SeqCst);
    } else {
        compiler_fence(Ordering::SeqCst);
    }
}

/// Whether the fast side of a stream made now must use a real fence: true
/// under loom, or when membarrier is unavailable. Probes once.
pub fn fast_side_fenced() -> bool {
    cfg!(loom) || !init()
}

/// Whether [`heavy`] has any work to do (false when fences are used throughout).
#[inline]
pub fn heavy_needed() -> bool {
    MODE.load(Ordering::Relaxed) == 1
}

/// The slow side's barrier: after it returns, every other running thread of the
/// process has executed a full memory barrier.
#[cold]
pub fn heavy() {
    if MODE.load(Ordering::Relaxed) == 1 {
        if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 {
            fence(Ordering::SeqCst);
            return;
        }
        // Should not happen once registered. Streams made from now on fence
        // every operation; those made before keep compiler fences on their
        // fast side, so for them this barrier degrades to waiting: a store
        // leaves its core's store buffer within nanoseconds, and a
        // millisecond is far beyond that.
        MODE.store(2, Ordering::SeqCst);
    }
    std::thread::sleep(std::time::Duration::from_millis(1));
    fence(Ordering::SeqCst);
}
