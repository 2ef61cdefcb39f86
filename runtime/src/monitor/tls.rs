//! The thread-local words that the stream operations inlined into a task's
//! code read: the thread's *fast stamp* and *ops stamp* (`period.rs`) and
//! the address of its recorder.
//!
//! A task's code runs on the thread of whichever worker runs the task, and
//! that may change at each block or yield (work stealing, migration). LLVM
//! takes a thread-local's address to be the same all through a function, so
//! it may compute the address once in a task's code and keep using it after
//! a suspension, on another thread. It did, with `thread_local!`: a ring
//! task kept its recorder's address in a register from its first operation
//! on and compared its ends' stamps with the stamp of the worker it had
//! left; a stolen task pushed its message keys into that worker's key list
//! (`tests/monitoring.rs::stolen_tasks_keep_their_message_order`).
//!
//! On x86-64 Linux these words are read and written by `asm!` blocks, which
//! the compiler must run each time the program reaches them (they are not
//! `pure`, so never hoisted, merged or kept), addressing the words at their
//! fixed offset from the thread pointer (`@tpoff`, the local-exec model of
//! an executable's own thread-locals). A read is one instruction, as the
//! load of a `thread_local!` folded into a compare is. The words are defined
//! here in `.tbss`, zero in every new thread. (A shared object cannot use
//! `@tpoff`: a build of rill into one fails to link.)
//!
//! Elsewhere the words are `thread_local!` cells, with the hazard above: a
//! monitored run with work stealing may misattribute messages there.

/// The thread's fast stamp (0 in a new thread).
#[inline(always)]
pub(crate) fn fast() -> u64 {
    imp::fast()
}

/// Whether `stamp` is the thread's fast stamp: the check of every stream
/// operation, a compare of `stamp` with the word in memory and a branch.
#[inline(always)]
pub(crate) fn is_fast(stamp: u64) -> bool {
    imp::is_fast(stamp)
}

/// The thread's ops stamp (0 in a new thread, where no end reaches a
/// compare with it: its fast stamp is 0 too, which every plain end has).
#[inline(always)]
pub(crate) fn ops() -> u64 {
    imp::ops()
}

/// Whether `stamp` is the thread's ops stamp, as [`is_fast`].
#[inline(always)]
pub(crate) fn is_ops(stamp: u64) -> bool {
    imp::is_ops(stamp)
}

/// Sets the thread's ops stamp.
#[inline(always)]
pub(crate) fn set_ops(v: u64) {
    imp::set_ops(v)
}

/// Sets the thread's fast stamp.
#[inline(always)]
pub(crate) fn set_fast(v: u64) {
    imp::set_fast(v)
}

/// The address of the thread's recorder, null before its first period.
#[inline(always)]
pub(crate) fn recorder() -> *const super::period::Recorder {
    imp::recorder()
}

/// Sets the address of the thread's recorder.
#[inline(always)]
pub(crate) fn set_recorder(r: *const super::period::Recorder) {
    imp::set_recorder(r)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use super::super::period::Recorder;
    use std::arch::{asm, global_asm};

    // Two 8-byte words of thread-local storage, zero in each new thread.
    // Global names (the asm blocks that use them may sit in other codegen
    // units), with rill's name and a version in them.
    global_asm!(
        ".pushsection .tbss.__rill_monitor_tls_v1,\"awT\",@nobits",
        ".p2align 3",
        ".globl __rill_monitor_fast_v1",
        ".type __rill_monitor_fast_v1,@object",
        ".size __rill_monitor_fast_v1,8",
        "__rill_monitor_fast_v1:",
        ".zero 8",
        ".globl __rill_monitor_ops_v1",
        ".type __rill_monitor_ops_v1,@object",
        ".size __rill_monitor_ops_v1,8",
        "__rill_monitor_ops_v1:",
        ".zero 8",
        ".globl __rill_monitor_recorder_v1",
        ".type __rill_monitor_recorder_v1,@object",
        ".size __rill_monitor_recorder_v1,8",
        "__rill_monitor_recorder_v1:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub(super) fn fast() -> u64 {
        let v: u64;
        // SAFETY: a load of this thread's word defined above, at its offset
        // from the thread pointer (fs base); reads nothing else.
        unsafe {
            asm!(
                "movq %fs:__rill_monitor_fast_v1@tpoff, {0}",
                out(reg) v,
                options(att_syntax, nostack, preserves_flags, readonly)
            )
        };
        v
    }

    #[inline(always)]
    pub(super) fn is_fast(stamp: u64) -> bool {
        // SAFETY: as in `fast`; the branch goes to the label block, which
        // returns from this function.
        unsafe {
            asm!(
                "cmpq %fs:__rill_monitor_fast_v1@tpoff, {0}",
                "jne {1}",
                in(reg) stamp,
                label {
                    return false;
                },
                options(att_syntax, nostack, readonly)
            )
        };
        true
    }

    #[inline(always)]
    pub(super) fn set_fast(v: u64) {
        // SAFETY: a store to this thread's word defined above; no other
        // memory is touched, and only this thread uses the word.
        unsafe {
            asm!(
                "movq {0}, %fs:__rill_monitor_fast_v1@tpoff",
                in(reg) v,
                options(att_syntax, nostack, preserves_flags)
            )
        };
    }

    #[inline(always)]
    pub(super) fn ops() -> u64 {
        let v: u64;
        // SAFETY: a load of this thread's word defined above, at its offset
        // from the thread pointer (fs base); reads nothing else.
        unsafe {
            asm!(
                "movq %fs:__rill_monitor_ops_v1@tpoff, {0}",
                out(reg) v,
                options(att_syntax, nostack, preserves_flags, readonly)
            )
        };
        v
    }

    #[inline(always)]
    pub(super) fn is_ops(stamp: u64) -> bool {
        // SAFETY: as in `ops`; the branch goes to the label block, which
        // returns from this function.
        unsafe {
            asm!(
                "cmpq %fs:__rill_monitor_ops_v1@tpoff, {0}",
                "jne {1}",
                in(reg) stamp,
                label {
                    return false;
                },
                options(att_syntax, nostack, readonly)
            )
        };
        true
    }

    #[inline(always)]
    pub(super) fn set_ops(v: u64) {
        // SAFETY: a store to this thread's word defined above; no other
        // memory is touched, and only this thread uses the word.
        unsafe {
            asm!(
                "movq {0}, %fs:__rill_monitor_ops_v1@tpoff",
                in(reg) v,
                options(att_syntax, nostack, preserves_flags)
            )
        };
    }

    #[inline(always)]
    pub(super) fn recorder() -> *const Recorder {
        let p: *const Recorder;
        // SAFETY: as in `fast`.
        unsafe {
            asm!(
                "movq %fs:__rill_monitor_recorder_v1@tpoff, {0}",
                out(reg) p,
                options(att_syntax, nostack, preserves_flags, readonly)
            )
        };
        p
    }

    #[inline(always)]
    pub(super) fn set_recorder(r: *const Recorder) {
        // SAFETY: as in `set_fast`.
        unsafe {
            asm!(
                "movq {0}, %fs:__rill_monitor_recorder_v1@tpoff",
                in(reg) r,
                options(att_syntax, nostack, preserves_flags)
            )
        };
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    use super::super::period::Recorder;
    use std::cell::Cell;

    thread_local! {
        static FAST: Cell<u64> = const { Cell::new(0) };
        static OPS: Cell<u64> = const { Cell::new(0) };
        static RECORDER: Cell<*const Recorder> = const { Cell::new(std::ptr::null()) };
    }

    #[inline(always)]
    pub(super) fn fast() -> u64 {
        FAST.with(Cell::get)
    }

    #[inline(always)]
    pub(super) fn is_fast(stamp: u64) -> bool {
        stamp == fast()
    }

    #[inline(always)]
    pub(super) fn set_fast(v: u64) {
        FAST.with(|c| c.set(v))
    }

    #[inline(always)]
    pub(super) fn ops() -> u64 {
        OPS.with(Cell::get)
    }

    #[inline(always)]
    pub(super) fn is_ops(stamp: u64) -> bool {
        stamp == ops()
    }

    #[inline(always)]
    pub(super) fn set_ops(v: u64) {
        OPS.with(|c| c.set(v))
    }

    #[inline(always)]
    pub(super) fn recorder() -> *const Recorder {
        RECORDER.with(Cell::get)
    }

    #[inline(always)]
    pub(super) fn set_recorder(r: *const Recorder) {
        RECORDER.with(|c| c.set(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_per_thread_and_start_at_zero() {
        set_fast(7);
        let r = 0x1000 as *const super::super::period::Recorder;
        set_recorder(r);
        assert_eq!(fast(), 7);
        assert_eq!(recorder(), r);
        std::thread::spawn(|| {
            assert_eq!(fast(), 0);
            assert!(recorder().is_null());
            set_fast(9);
            assert_eq!(fast(), 9);
        })
        .join()
        .unwrap();
        assert_eq!(fast(), 7);
        set_fast(0);
        set_recorder(std::ptr::null());
    }
}
