//! Stack-overflow reports that name the task.
//!
//! A SIGSEGV/SIGBUS handler, running on an alternate signal stack of each
//! worker thread, looks at the faulting address: if it lies in the guard page
//! of the task running on this thread, it writes
//! `rill: task 'NAME' (id N) overflowed its stack` to stderr and aborts. Any
//! other fault gets the default action. Unguarded stacks (only with
//! `Builder::unguarded_stacks`, see `stack.rs`) are checked by canary when
//! their task stops.

use std::sync::Once;

use crate::context;

const ALT_STACK: usize = 64 * 1024;

static INSTALL: Once = Once::new();

/// Installs the handler once per process.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        for sig in [libc::SIGSEGV, libc::SIGBUS] {
            // SAFETY: a zeroed sigaction is a valid starting value; we set a
            // handler with SA_SIGINFO | SA_ONSTACK and install it.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
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

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let t = context::current_task_ptr();
    if !t.is_null() {
        // SAFETY: the current task is alive while it runs on this thread; we
        // only read plain fields.
        let task = unsafe { &*t };
        let lo = task.stack_lo.get();
        let guard = task.stack_guard.get();
        if guard != 0 && addr >= lo.saturating_sub(guard) && addr < lo + guard {
            write_err(b"rill: task '");
            write_err(task.name.as_bytes());
            write_err(b"' (id ");
            write_num(task.id);
            write_err(b") overflowed its stack; give tasks more with Builder::stack_size\n");
            // SAFETY: abort is async-signal-safe.
            unsafe { libc::abort() };
        }
    }
    // Not ours: restore the default action and return, so the fault repeats
    // and the process gets the usual signal.
    // SAFETY: resetting a signal to SIG_DFL is always allowed.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
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
