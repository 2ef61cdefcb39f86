//! Stack-overflow reports that name the task, and the net under the
//! monitoring logs' mappings.
//!
//! A SIGSEGV/SIGBUS handler, running on an alternate signal stack of each
//! worker thread, looks at the faulting address: if it lies in the guard page
//! of the task running on this thread, it writes
//! `rill: task 'NAME' (id N) overflowed its stack` to stderr and aborts. A
//! SIGBUS in a page of a monitoring log's mapping that the filesystem could
//! not back (a full disk) goes to `rill_log::rescue_fault`, which puts a
//! blank page in its place and lets the log's writer stop: the store runs
//! again and the run goes on.
//! Every other fault goes to the handler the signal had before rill's was
//! installed (std's own, which reports overflows of thread stacks, or a
//! host's such as a JIT's or a wasm runtime's), as if rill's were not there;
//! where there was none, the fault gets the default action. Unguarded stacks
//! (only with `Builder::unguarded_stacks`, see `stack.rs`) are checked by
//! canary when their task stops.
//!
//! Everything the handler does is async-signal-safe: it reads thread-local
//! words, plain task fields and atomics, calls `write`, `sigaction`,
//! `pthread_sigmask`, `raise`, `abort` and (for a log's page) `mmap`, and
//! allocates and locks nothing.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

const ALT_STACK: usize = 64 * 1024;

static INSTALL: Once = Once::new();

/// The action a signal had before rill's handler took its place.
struct Previous {
    action: UnsafeCell<MaybeUninit<libc::sigaction>>,
    saved: AtomicBool,
}

// SAFETY: `action` is written once, in `install`, before `saved` is set
// (Release), and read only after `saved` is seen set (Acquire); after that
// nothing writes it.
unsafe impl Sync for Previous {}

impl Previous {
    const fn new() -> Self {
        Previous {
            action: UnsafeCell::new(MaybeUninit::uninit()),
            saved: AtomicBool::new(false),
        }
    }

    /// The saved action, if `install` saved one.
    fn get(&self) -> Option<libc::sigaction> {
        if self.saved.load(Ordering::Acquire) {
            // SAFETY: `saved` is set only after `action` was written, and
            // nothing writes it afterwards (see the Sync impl).
            Some(unsafe { (*self.action.get()).assume_init_read() })
        } else {
            None
        }
    }
}

static PREV_SEGV: Previous = Previous::new();
static PREV_BUS: Previous = Previous::new();

fn previous(sig: libc::c_int) -> Option<libc::sigaction> {
    match sig {
        libc::SIGSEGV => PREV_SEGV.get(),
        libc::SIGBUS => PREV_BUS.get(),
        _ => None,
    }
}

/// Installs the handler once per process, keeping the actions it replaces.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        for (sig, prev) in [(libc::SIGSEGV, &PREV_SEGV), (libc::SIGBUS, &PREV_BUS)] {
            // SAFETY: a zeroed sigaction is a valid starting value; we set a
            // handler with SA_SIGINFO | SA_ONSTACK and install it, taking the
            // old action in the same call so that none is lost. The old one
            // is written before `saved` is set and never again (`call_once`).
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut old) == 0 {
                    (*prev.action.get()).write(old);
                    prev.saved.store(true, Ordering::Release);
                }
            }
        }
    });
}

/// Gives the calling worker thread an alternate signal stack (leaked at thread
/// exit: 64 KiB per worker thread ever started).
pub(crate) fn enter_worker() {
    // SAFETY: we map a fresh region and hand it to sigaltstack; it is never
    // unmapped, so it stays valid for the thread's life.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return;
        }
        let ss = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: ALT_STACK,
        };
        libc::sigaltstack(&ss, std::ptr::null_mut());
    }
}

fn write_err(b: &[u8]) {
    // SAFETY: write(2) on stderr with a valid buffer; async-signal-safe.
    unsafe {
        libc::write(2, b.as_ptr().cast(), b.len());
    }
}

fn write_num(mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    write_err(&buf[i..]);
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if sig == libc::SIGBUS && code > 0 && rill_log::rescue_fault(addr) {
        return;
    }
    // The task whose stack this thread runs on: the running task, or the
    // task whose stack a run's teardown is unwinding here
    // (`context::drop_suspended`), read from their thread-local words as
    // `context::current_task_ptr` and `context::unwinding_task_ptr` read them.
    let running: *const crate::task::Task = crate::tls::task().cast();
    let unwinding = crate::tls::forced_unwind() as *const crate::task::Task;
    let t = if running.is_null() {
        unwinding
    } else {
        running
    };
    // si_code > 0: a fault the kernel raised, whose si_addr is meaningful (a
    // signal sent by kill or raise has none).
    if code > 0 && !t.is_null() {
        // SAFETY: the current task is alive while it runs on this thread, and
        // a task being unwound is alive until its coroutine is dropped; we
        // only read plain fields.
        let task = unsafe { &*t };
        let lo = task.stack_lo.get();
        let guard = task.stack_guard.get();
        if guard != 0 && addr >= lo.saturating_sub(guard) && addr < lo.saturating_add(guard) {
            write_err(b"rill: task '");
            write_err(task.name.as_bytes());
            write_err(b"' (id ");
            write_num(task.id);
            if running.is_null() {
                write_err(
                    b") overflowed its stack while the run dropped it (a destructor of a value \
                      it held, run as its stack unwound at the run's end); give tasks more with \
                      Builder::stack_size\n",
                );
            } else {
                write_err(b") overflowed its stack; give tasks more with Builder::stack_size\n");
            }
            write_ending();
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() };
        }
    }
    chain(sig, info, ctx, code <= 0);
}

/// Writes how the run whose teardown runs on this thread was ending (its
/// error), when one is: the process aborts before the run can return it.
pub(crate) fn write_ending() {
    let p = crate::tls::ending().cast::<String>();
    if p.is_null() {
        return;
    }
    // SAFETY: the run's teardown sets the word to a string that it keeps
    // alive, unchanged, until it clears the word again; reading its bytes
    // allocates nothing.
    let s = unsafe { &*p };
    write_err(b"rill: ");
    write_err(s.as_bytes());
    write_err(b"\n");
}

/// Gives the calling thread a signal stack if it has none, so that a stack
/// overflow on a task stack unwound here is reported (the handler needs a
/// stack of its own). Threads that std started, and worker threads, have
/// one already.
pub(crate) fn ensure_signal_stack() {
    // SAFETY: sigaltstack with a null new stack only reads the current one
    // into `old`, a valid stack_t.
    let has = unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        libc::sigaltstack(std::ptr::null(), &mut old) == 0 && old.ss_flags & libc::SS_DISABLE == 0
    };
    if !has {
        enter_worker();
    }
}

/// Hands a signal that is not a rill task's overflow to the action the signal
/// had before `install`. `sent`: the signal was sent (kill, raise), not
/// raised by a fault.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void, sent: bool) {
    let prev = previous(sig);
    let h = prev.map_or(libc::SIG_DFL, |a| a.sa_sigaction);
    if h == libc::SIG_IGN && sent {
        // What the old action did with a sent signal.
        return;
    }
    if h == libc::SIG_DFL || h == libc::SIG_IGN || h == handler as *const () as usize {
        // The default action (for a fault, ignoring it would run the faulting
        // instruction again forever): restore it and return, so that the
        // fault happens again and kills the process as usual. A sent signal
        // happens only once, so it is raised again; it stays blocked until
        // this handler returns.
        set_default(sig);
        if sent {
            // SAFETY: raise is async-signal-safe.
            unsafe { libc::raise(sig) };
        }
        return;
    }
    let Some(a) = prev else { return };
    if a.sa_flags & libc::SA_RESETHAND != 0 {
        // The kernel would have reset the action when delivering the signal.
        set_default(sig);
    }
    // SAFETY: pthread_sigmask is async-signal-safe; the signals the old
    // action blocks while it runs are blocked until this handler returns,
    // when the kernel restores the mask it had before the signal.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &a.sa_mask, std::ptr::null_mut()) };
    if a.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the old action was installed with SA_SIGINFO, so `h` is a
        // three-argument handler; it gets the signal's own siginfo and
        // context, as it would have from the kernel.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: without SA_SIGINFO, `h` is a one-argument handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// Restores the default action of `sig`.
fn set_default(sig: libc::c_int) {
    // SAFETY: sigaction is async-signal-safe, and a zeroed sigaction with
    // SIG_DFL (0) and an empty mask is a valid default action.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Reports a smashed canary of an unguarded stack and aborts.
#[cold]
pub(crate) fn report_canary(name: &str) -> ! {
    write_err(b"rill: task '");
    write_err(name.as_bytes());
    write_err(b"' overflowed its (unguarded) stack; memory next to it may be damaged; give tasks more with Builder::stack_size\n");
    std::process::abort()
}
