//! The thread-local words that code inlined into a task's body reads: the
//! running task and worker and the forced-unwind flag (`context.rs`), and
//! monitoring's fast stamp, ops stamp and recorder (`monitor/period.rs`).
//!
//! LLVM takes a thread-local's address to be the same all through a
//! function, so it may compute the address once in a task's code and keep
//! using it after a suspension. A task's code runs on the thread of the
//! worker that runs it, from its first dispatch to its end (work stealing
//! moves only tasks that never ran, `scheduler.rs`), with one exception: at
//! a run's end the thread that called `run` unwinds the stacks of the tasks
//! left (`context::drop_suspended`), after every worker thread has ended,
//! and a kept address would reach the words of the worker thread the task
//! last ran on. The assumption also breaks for any coroutine that ever
//! continues on another thread. LLVM did keep addresses with
//! `thread_local!`, while work stealing still moved tasks that had run: a
//! ring task kept the monitoring recorder's address in a register from its
//! first operation on and compared its ends' stamps with the stamp of the
//! worker it had left; a stolen task pushed its message keys into that
//! worker's key list. (`tests/monitoring.rs::stolen_tasks_keep_their_message_order`
//! now checks tasks taken by stealing before they ran.)
//!
//! On x86-64 Linux these words are read and written by `asm!` blocks, which
//! the compiler must run each time the program reaches them (they are not
//! `pure`, so never hoisted, merged or kept), addressing the words at their
//! fixed offset from the thread pointer (`@tpoff`, the local-exec model of
//! an executable's own thread-locals). A read is one instruction, as the
//! load of a `thread_local!` is; the stamp checks compare with the word in
//! memory and branch to a label block, one `cmp` and one `jne`. The words
//! are defined here in `.tdata`, with their values in a new thread.
//!
//! A shared object cannot use `@tpoff` (the linker refuses it: "relocation
//! R_X86_64_TPOFF32 ... cannot be used with -shared"). To build rill into
//! one, set `RUSTFLAGS="--cfg rill_tls_shared"`: the words are then found
//! through the GOT (`@gottpoff`, the initial-exec model), one instruction
//! more per read, and the stamp checks compare in Rust. Such an object puts
//! all its thread-locals (about 2.7 KiB with monitoring's recorder) in the
//! static TLS block: linked at start-up it loads as is, but `dlopen` (a
//! Python extension, say) finds too little room there unless glibc is given
//! more, `GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536`; otherwise it
//! fails with "cannot allocate memory in static TLS block". (Checked with a
//! cdylib loaded by Python's ctypes: 8 relay chains under work stealing and
//! full monitoring, 16,000 messages through.)
//!
//! Elsewhere the words are `thread_local!` cells, with the hazard above:
//! the unwinding at a run's end relies there on the compiler not keeping
//! their addresses.

/// Declares the words: per word a getter, a setter, the type (a `u64` or an
/// untyped pointer), the symbol and the value in a new thread.
macro_rules! words {
    ($($(#[$doc:meta])* $get:ident, $set:ident: $ty:ty = $sym:literal, $init:expr;)*) => {
        $(
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            std::arch::global_asm!(
                ".pushsection .tdata.__rill_tls_v1,\"awT\",@progbits",
                ".p2align 3",
                concat!(".globl ", $sym),
                concat!(".hidden ", $sym),
                concat!(".type ", $sym, ",@object"),
                concat!(".size ", $sym, ",8"),
                concat!($sym, ":"),
                ".quad {init}",
                ".popsection",
                init = const ($init) as u64,
            );
        )*

        $(
            $(#[$doc])*
            #[inline(always)]
            #[allow(dead_code)]
            pub(crate) fn $get() -> $ty {
                #[cfg(all(target_arch = "x86_64", target_os = "linux", not(rill_tls_shared)))]
                {
                    let v: $ty;
                    // SAFETY: a load of this thread's word defined above, at
                    // its offset from the thread pointer (fs base); it reads
                    // nothing else.
                    unsafe {
                        std::arch::asm!(
                            concat!("movq %fs:", $sym, "@tpoff, {0}"),
                            out(reg) v,
                            options(att_syntax, nostack, preserves_flags, readonly)
                        )
                    };
                    v
                }
                #[cfg(all(target_arch = "x86_64", target_os = "linux", rill_tls_shared))]
                {
                    let v: $ty;
                    // SAFETY: loads the word's offset from the thread pointer
                    // from the GOT, then this thread's word at that offset.
                    unsafe {
                        std::arch::asm!(
                            concat!("movq ", $sym, "@gottpoff(%rip), {0}"),
                            "movq %fs:({0}), {0}",
                            out(reg) v,
                            options(att_syntax, nostack, preserves_flags, readonly)
                        )
                    };
                    v
                }
                #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
                {
                    fallback::$get.with(std::cell::Cell::get)
                }
            }

            #[inline(always)]
            #[allow(dead_code)]
            pub(crate) fn $set(v: $ty) {
                #[cfg(all(target_arch = "x86_64", target_os = "linux", not(rill_tls_shared)))]
                {
                    // SAFETY: a store to this thread's word defined above; no
                    // other memory is touched, and only this thread uses it.
                    unsafe {
                        std::arch::asm!(
                            concat!("movq {0}, %fs:", $sym, "@tpoff"),
                            in(reg) v,
                            options(att_syntax, nostack, preserves_flags)
                        )
                    };
                }
                #[cfg(all(target_arch = "x86_64", target_os = "linux", rill_tls_shared))]
                {
                    // SAFETY: as above, the offset loaded from the GOT first.
                    unsafe {
                        std::arch::asm!(
                            concat!("movq ", $sym, "@gottpoff(%rip), {1}"),
                            "movq {0}, %fs:({1})",
                            in(reg) v,
                            out(reg) _,
                            options(att_syntax, nostack, preserves_flags)
                        )
                    };
                }
                #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
                {
                    fallback::$get.with(|c| c.set(v))
                }
            }
        )*

        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        #[allow(non_upper_case_globals)]
        mod fallback {
            use super::*;

            thread_local! {
                $(pub(super) static $get: std::cell::Cell<$ty> =
                    const { std::cell::Cell::new(($init) as $ty) };)*
            }
        }
    };
}

// The pointer words are untyped, so that this module imports nothing of the
// runtime: each is read and written through one typed pair of functions,
// in `context.rs` (the task, a `Task`; the worker, a `WorkerLocal`) and
// `monitor/period.rs` (the recorder, a `Recorder`).
words! {
    /// The task running on this thread (null outside tasks).
    task, set_task: *const () = "__rill_tls_task_v1", 0;
    /// The worker whose loop runs on this thread (null on other threads).
    worker, set_worker: *const () = "__rill_tls_worker_v1", 0;
    /// While this thread drops a suspended coroutine, whose stack then
    /// unwinds (`context::drop_suspended`): the address of that coroutine's
    /// task (never 0); else 0. Read by the task's boundary after the task's
    /// code, which may have begun on another thread, by `block` and `spawn`
    /// (which refuse to suspend or spawn then), and by the overflow handler
    /// and the panic hook, which name the task from it.
    forced_unwind, set_forced_unwind: u64 = "__rill_tls_forced_unwind_v1", 0;
    /// While a run drops the tasks it left: the address of a `String`
    /// saying how the run was ending (its error, or that it succeeded), for
    /// the overflow handler and the panic hook to print; else null.
    ending, set_ending: *const () = "__rill_tls_ending_v1", 0;
    /// While `Runtime::spawn_with` hands ends to a task of the runtime's
    /// next run: that run's number, which the ends record as their
    /// holder's run (`stream/holder.rs`); else 0.
    holding_for, set_holding_for: u64 = "__rill_tls_holding_for_v1", 0;
    /// Monitoring's fast stamp (`monitor/period.rs`).
    fast, set_fast: u64 = "__rill_tls_fast_v1", 0;
    /// Monitoring's ops stamp (`monitor/period.rs`). `u64::MAX` in a new
    /// thread, as between periods: no end's stamp (a plain end's, 0, reaches
    /// the compare when its side's hint is not armed with its address).
    ops, set_ops: u64 = "__rill_tls_ops_v1", u64::MAX;
    /// Monitoring's recorder on this thread, null before its first period.
    recorder, set_recorder: *const () = "__rill_tls_recorder_v1", 0;
}

/// Every word of this thread, saved by [`ThreadWords::take`] and put back by
/// [`ThreadWords::restore`]: a run started on a thread that already runs
/// something of rill's (a task of another run, or a run's teardown) gives
/// the thread the words of a new thread for the time of the run, so that
/// nothing of the inner run takes the outer task for its own (a block
/// would suspend the outer coroutine, a spawn would land in the outer run),
/// and hands the outer words back when it returns.
#[must_use = "the saved words must be restored"]
pub(crate) struct ThreadWords {
    task: *const (),
    worker: *const (),
    forced_unwind: u64,
    ending: *const (),
    holding_for: u64,
    fast: u64,
    ops: u64,
    recorder: *const (),
}

impl ThreadWords {
    /// Saves this thread's words and sets each to its value in a new thread.
    pub(crate) fn take() -> ThreadWords {
        let saved = ThreadWords {
            task: task(),
            worker: worker(),
            forced_unwind: forced_unwind(),
            ending: ending(),
            holding_for: holding_for(),
            fast: fast(),
            ops: ops(),
            recorder: recorder(),
        };
        set_task(std::ptr::null());
        set_worker(std::ptr::null());
        set_forced_unwind(0);
        set_ending(std::ptr::null());
        set_holding_for(0);
        set_fast(0);
        set_ops(u64::MAX);
        set_recorder(std::ptr::null());
        saved
    }

    /// Puts the saved words back.
    pub(crate) fn restore(self) {
        set_task(self.task);
        set_worker(self.worker);
        set_forced_unwind(self.forced_unwind);
        set_ending(self.ending);
        set_holding_for(self.holding_for);
        set_fast(self.fast);
        set_ops(self.ops);
        set_recorder(self.recorder);
    }
}

/// Declares `fn $name(stamp: u64) -> bool`: whether `stamp` equals the word
/// `$sym` (read by `$get` off x86-64 Linux), a compare of `stamp` with the
/// word in memory and a branch to a label block.
macro_rules! equals_word {
    ($(#[$doc:meta])* $name:ident, $get:ident, $sym:literal) => {
        $(#[$doc])*
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn $name(stamp: u64) -> bool {
            #[cfg(all(target_arch = "x86_64", target_os = "linux", not(rill_tls_shared)))]
            {
                // SAFETY: as in the getters; the branch goes to the label
                // block, which returns from this function.
                unsafe {
                    std::arch::asm!(
                        concat!("cmpq %fs:", $sym, "@tpoff, {0}"),
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
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(rill_tls_shared))))]
            {
                stamp == $get()
            }
        }
    };
}

equals_word!(
    /// Whether `stamp` is this thread's fast stamp: the check of every
    /// stream operation.
    is_fast,
    fast,
    "__rill_tls_fast_v1"
);

equals_word!(
    /// Whether `stamp` is this thread's ops stamp.
    is_ops,
    ops,
    "__rill_tls_ops_v1"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_per_thread_and_start_at_their_initial_values() {
        set_fast(7);
        let r = 0x1000 as *const ();
        set_recorder(r);
        assert_eq!(fast(), 7);
        assert!(is_fast(7) && !is_fast(8));
        assert_eq!(recorder(), r);
        std::thread::spawn(|| {
            assert_eq!((fast(), ops()), (0, u64::MAX));
            assert!(!is_ops(0), "a plain end's stamp is no ops stamp");
            assert!(recorder().is_null() && task().is_null() && worker().is_null());
            set_ops(9);
            assert!(is_ops(9) && !is_ops(0));
        })
        .join()
        .unwrap();
        assert_eq!(fast(), 7);
        set_fast(0);
        set_recorder(std::ptr::null());
    }
}
