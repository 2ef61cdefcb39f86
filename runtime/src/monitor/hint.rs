//! The *hint*: one word per stream side, kept in the stream's core beside
//! the position that side stores on every operation, that lets a stream
//! operation skip monitoring with one compare against a value it holds in a
//! register anyway: its end's own address.
//!
//! The word holds the address of the end that may skip monitoring, or
//! [`Hint::NONE`]. Every operation that may move a message compares it with
//! the address of the end doing the operation; equal means nothing more to
//! do (the same compare, with the same operands in registers, as the hooks
//! compiled out, which compare the end's stamp with 0). Otherwise the
//! operation goes the monitoring way (`period.rs`), which decides, from the
//! end's stamp and this thread's, what to record and whether to *arm* the
//! hint with the end's address ([`arm`](super::hooks::arm)):
//!
//! - on a thread that records nothing about streams (monitoring off, a
//!   worker of a run without stream monitoring, a thread outside runs when
//!   no run monitors): armed for good; nothing is recorded there, so the
//!   relay loop is the compiled-out one;
//! - in count mode, for an end bound to the running task (`binding.rs`):
//!   armed until the task's period ends; each of the task's periods arms
//!   its bindings again at its start and disarms them at its end;
//! - otherwise (ops mode, whose every message is recorded; threads of a
//!   monitoring process that are not workers): never armed.
//!
//! Why an address: an end handed to another task is moved, and a moved end
//! compares another address, so the new holder's first operation goes the
//! monitoring way and binds the end to itself, even while the old holder
//! runs and its hint is armed. An end moved within its task (into a vector
//! that then grows) takes that way once and arms the hint at its new
//! address.
//!
//! What the hint does not see: an end handed over without moving (a
//! `Box<Writer<_>>` passed on), while the task it is bound to runs. Its new
//! holder's operations then skip monitoring, and count mode counts them for
//! the old holder, until that holder's period ends and disarms the hint;
//! from the new holder's next operation on, they are its own. Stream totals
//! stay exact (counts come from the ring's positions).
//!
//! Orderings: every access is Relaxed. The hint orders no memory; it is a
//! predicate that the end's holder reads, written by that holder (arming)
//! and by the worker of the task the end is bound to, at that task's period
//! start and end. In the usual case both are the thread running the task
//! (program order): a task runs on one worker from its first dispatch to
//! its end (work stealing moves only tasks that never ran, which have no
//! bindings yet, `scheduler.rs`). A value that loses a race (the two-holder
//! cases above) only sends an operation the monitoring way once more, where
//! the end's own stamp decides.

use std::sync::atomic::{AtomicUsize, Ordering};

/// [`Hint::lets`] for the hint at byte `$off` (a constant) of `$base`
/// (a pointer), as one compare of memory with a register: an atomic load
/// and a compare are two instructions (LLVM folds no atomic load into a
/// compare), and the base is the core's pointer, which the operation that
/// follows addresses from anyway. An expression of type `bool`.
///
/// The caller vouches (an `unsafe` block) that `$base + $off` is a live
/// [`Hint`].
macro_rules! hint_lets {
    ($base:expr, $off:expr, $addr:expr) => {{
        #[cfg(target_arch = "x86_64")]
        let lets = 'lets: {
            // The caller's contract makes the address a live hint's word,
            // aligned; an aligned 8-byte load is atomic on x86-64, so this is
            // a Relaxed load of it (`hint.rs`), compared with the address;
            // the branch goes to the label block, which leaves the block.
            std::arch::asm!(
                "cmp qword ptr [{base} + {off}], {addr}",
                "jne {miss}",
                base = in(reg) $base,
                addr = in(reg) $addr,
                off = const $off,
                miss = label {
                    break 'lets false;
                },
                options(nostack, readonly)
            );
            true
        };
        #[cfg(not(target_arch = "x86_64"))]
        let lets = (*$base.add($off).cast::<$crate::monitor::hint::Hint>()).lets($addr);
        lets
    }};
}
pub(crate) use hint_lets;

/// A stream side's hint (see the module documentation).
#[derive(Debug)]
#[repr(transparent)]
pub(crate) struct Hint(AtomicUsize);

impl Hint {
    /// No end's address (ends are aligned to at least 8 bytes): every
    /// operation goes the monitoring way.
    pub(crate) const NONE: usize = 1;

    /// A new side's hint: no end may skip monitoring before its first use
    /// binds it.
    pub(crate) const fn new() -> Hint {
        Hint(AtomicUsize::new(Self::NONE))
    }

    /// Whether the end at `addr` may skip monitoring ([`hint_lets`] on
    /// x86-64, where this serves the tests).
    #[inline(always)]
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub(crate) fn lets(&self, addr: usize) -> bool {
        // Relaxed: see the module documentation.
        self.0.load(Ordering::Relaxed) == addr
    }

    /// Lets the end at `addr` skip monitoring.
    #[inline]
    pub(crate) fn arm(&self, addr: usize) {
        // Relaxed: see the module documentation.
        self.0.store(addr, Ordering::Relaxed);
    }

    /// Sends every operation the monitoring way.
    #[inline]
    pub(crate) fn disarm(&self) {
        // Relaxed: see the module documentation.
        self.0.store(Self::NONE, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::Hint;

    #[test]
    fn lets_only_the_armed_address() {
        let h = Hint::new();
        let end = 0u64;
        let addr = &end as *const u64 as usize;
        assert!(!h.lets(addr), "a new side lets no end skip");
        h.arm(addr);
        assert!(h.lets(addr));
        assert!(
            !h.lets(addr + 8),
            "another address (a moved end) does not skip"
        );
        h.disarm();
        assert!(!h.lets(addr));
    }
}
