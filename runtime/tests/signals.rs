//! rill's SIGSEGV/SIGBUS handler and the handlers a program had before it:
//! faults that are not a rill task's stack overflow go to the earlier
//! handler (the program's own, or std's report of a thread's overflow), and
//! a task's overflow is still reported by rill. Each case runs in a child
//! process (this test binary run again for one test), since it ends the
//! process.

mod common;

use common::RunMainStats;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use rill::Runtime;

const CHILD: &str = "RILL_SIGNALS_CHILD";

/// The exit status of the program's own handler.
const HANDLER_EXIT: i32 = 42;

/// Runs this test binary again for the test `name` with `CHILD=mode`, and
/// returns its status and stderr.
fn run_child(name: &str, mode: &str) -> (std::process::ExitStatus, String) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode)
        .output()
        .expect("re-run the test binary");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn child_mode() -> Option<String> {
    std::env::var(CHILD).ok()
}

/// Calls to the program's handler (each ends the process, so at most one).
static CALLS: AtomicUsize = AtomicUsize::new(0);

fn marker(sig: libc::c_int) {
    CALLS.fetch_add(1, Ordering::SeqCst);
    let msg: &[u8] = if sig == libc::SIGSEGV {
        b"program handler: SIGSEGV\n"
    } else {
        b"program handler: another signal\n"
    };
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is a
    // static string.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(HANDLER_EXIT);
    }
}

extern "C" fn siginfo_handler(sig: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    marker(sig);
}

extern "C" fn plain_handler(sig: libc::c_int) {
    marker(sig);
}

/// Installs the program's own SIGSEGV handler: three-argument (`siginfo`)
/// or one-argument.
fn install_program_handler(siginfo: bool) {
    // SAFETY: a zeroed sigaction is a valid value; the handlers only write
    // and _exit, which are async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        if siginfo {
            sa.sa_sigaction = siginfo_handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO;
        } else {
            sa.sa_sigaction = plain_handler as *const () as usize;
        }
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
}

/// A page of the test's own that nothing may touch.
fn protected_page() -> *mut u8 {
    // SAFETY: an anonymous PROT_NONE mapping with no address hint, checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p.cast()
}

/// Writes to a protected page: a SIGSEGV that is not a stack overflow.
fn fault() {
    let p = protected_page();
    // SAFETY: none: the write faults on purpose; the handler ends the
    // process before it could complete.
    unsafe { p.write_volatile(1) };
}

/// A short run, so that rill installs its handler.
fn short_run() {
    Runtime::builder()
        .workers(2)
        .pin(false)
        .build()
        .unwrap()
        .run_main_stats(|| {
            rill::spawn("hello", || {});
        })
        .expect("a short run");
}

/// Runs the child `mode` of `name` and checks that the program's handler
/// ended it.
fn expect_program_handler(name: &str, mode: &str) {
    let (status, stderr) = run_child(name, mode);
    assert_eq!(
        status.code(),
        Some(HANDLER_EXIT),
        "status {status}, stderr:\n{stderr}"
    );
    assert!(
        stderr.contains("program handler: SIGSEGV"),
        "stderr:\n{stderr}"
    );
    assert!(!stderr.contains("child:"), "stderr:\n{stderr}");
}

/// A SIGSEGV handler (SA_SIGINFO) that the program installed before rill's
/// gets a fault on the main thread after a run.
#[test]
fn earlier_siginfo_handler_gets_faults_outside_tasks() {
    if child_mode().as_deref() == Some("siginfo-outside") {
        install_program_handler(true);
        short_run();
        fault();
        eprintln!("child: the fault was not delivered");
        return;
    }
    expect_program_handler(
        "earlier_siginfo_handler_gets_faults_outside_tasks",
        "siginfo-outside",
    );
}

/// A one-argument SIGSEGV handler installed before rill's gets a fault on
/// the main thread after a run.
#[test]
fn earlier_plain_handler_gets_faults_outside_tasks() {
    if child_mode().as_deref() == Some("plain-outside") {
        install_program_handler(false);
        short_run();
        fault();
        eprintln!("child: the fault was not delivered");
        return;
    }
    expect_program_handler(
        "earlier_plain_handler_gets_faults_outside_tasks",
        "plain-outside",
    );
}

/// A fault inside a rill task that is not on its guard page (a bad pointer,
/// not an overflow) goes to the program's handler too.
#[test]
fn earlier_handler_gets_faults_inside_tasks_that_are_not_overflows() {
    if child_mode().as_deref() == Some("siginfo-inside") {
        install_program_handler(true);
        let res = Runtime::builder()
            .workers(2)
            .pin(false)
            .build()
            .unwrap()
            .run_main_stats(|| {
                rill::spawn("bad/pointer", fault);
            });
        eprintln!("child: the run returned {res:?}");
        return;
    }
    expect_program_handler(
        "earlier_handler_gets_faults_inside_tasks_that_are_not_overflows",
        "siginfo-inside",
    );
}

/// Recurses until the stack overflows.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buf = std::hint::black_box([depth as u8; 512]);
    if std::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    std::hint::black_box(recurse(depth + 1)) + buf[1] as u64
}

/// std's own report of a thread that overflows its stack still appears for a
/// thread that is not a rill worker, after a run installed rill's handler.
#[test]
fn std_reports_a_thread_overflow_after_a_run() {
    if child_mode().as_deref() == Some("std-thread") {
        short_run();
        let h = std::thread::Builder::new()
            .name("plain-thread".into())
            .stack_size(256 * 1024)
            .spawn(|| recurse(0))
            .unwrap();
        let r = h.join();
        eprintln!("child: the thread ended: {r:?}");
        return;
    }
    let (status, stderr) = run_child("std_reports_a_thread_overflow_after_a_run", "std-thread");
    assert!(!status.success(), "status {status}, stderr:\n{stderr}");
    assert!(
        stderr.contains("thread 'plain-thread'") && stderr.contains("has overflowed its stack"),
        "status {status}, stderr:\n{stderr}"
    );
    assert!(!stderr.contains("rill: task"), "stderr:\n{stderr}");
}

/// A rill task that overflows its stack is still reported by rill, not
/// passed to the program's handler.
#[test]
fn task_overflow_is_reported_by_rill_with_an_earlier_handler() {
    if child_mode().as_deref() == Some("task-overflow") {
        install_program_handler(true);
        let res = Runtime::builder()
            .workers(2)
            .pin(false)
            .build()
            .unwrap()
            .run_main_stats(|| {
                rill::spawn("deep/recurse", || {
                    recurse(0);
                });
            });
        eprintln!("child: the run returned {res:?}");
        return;
    }
    let (status, stderr) = run_child(
        "task_overflow_is_reported_by_rill_with_an_earlier_handler",
        "task-overflow",
    );
    assert!(!status.success(), "status {status}, stderr:\n{stderr}");
    assert_ne!(status.code(), Some(HANDLER_EXIT), "stderr:\n{stderr}");
    assert!(
        stderr.contains("rill: task 'deep/recurse' (id ")
            && stderr.contains(") overflowed its stack;"),
        "status {status}, stderr:\n{stderr}"
    );
    assert!(!stderr.contains("program handler"), "stderr:\n{stderr}");
}
