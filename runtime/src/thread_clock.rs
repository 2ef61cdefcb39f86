//! A thread's CPU-time clock, named by the thread and read by others.
//!
//! Linux gives every thread a clock that advances only while the thread
//! runs on a core (`pthread_getcpuclockid`), and any thread of the process
//! may read it. Comparing it with the wall clock tells a thread that has
//! been preempted (its CPU time stood still) from one that has been busy.
//! Two readers use it: the sample-mode sampler (a worker's CPU time per
//! window, `monitor/self_sample.rs`) and a worker whose block waits for
//! worker 0's sign (`worker/plan.rs`: a wait counts worker 0's work, not
//! the time the host kept it off its core).

use std::sync::atomic::{AtomicU64, Ordering};

/// The value of a [`ThreadCpuClock`] that no thread has named yet.
const UNSET: u64 = u64::MAX;

/// One thread's CPU-time clock (and its kernel thread id), set by that
/// thread, read by any.
#[derive(Debug)]
pub(crate) struct ThreadCpuClock {
    clock: AtomicU64,
    tid: AtomicU64,
}

impl ThreadCpuClock {
    /// A clock no thread has named: [`cpu_ns`](Self::cpu_ns) is `None`.
    pub(crate) const fn unset() -> Self {
        ThreadCpuClock {
            clock: AtomicU64::new(UNSET),
            tid: AtomicU64::new(UNSET),
        }
    }

    /// The calling thread names its own CPU-time clock. Does nothing where
    /// the system refuses one (readers then see `None`).
    pub(crate) fn set_to_current(&self) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        // Relaxed: one word, complete in itself, read only by
        // `waits_for_core`, which tolerates not seeing it yet.
        self.tid.store(tid as u32 as u64, Ordering::Relaxed);
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; `id` is a valid out
        // pointer.
        if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) } == 0 {
            // Relaxed: the id is one word, complete in itself; every reader
            // tolerates not seeing it yet (it then has no clock to read).
            self.clock.store(id as u32 as u64, Ordering::Relaxed);
        }
    }

    /// Whether the thread is ready to run but off its core (preempted), as
    /// the kernel says (`/proc/self/task/TID/stat`, state `R` while it does
    /// not run, as seen from this thread, which does); `false` when it
    /// sleeps or waits in a system call, `None` when that cannot be read.
    /// A file read: for cold paths only.
    pub(crate) fn waits_for_core(&self) -> Option<bool> {
        // Relaxed: see `set_to_current`.
        let tid = self.tid.load(Ordering::Relaxed);
        if tid == UNSET {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
        // The state follows the command name, which is in parentheses and
        // may itself hold spaces or parentheses.
        let state = stat
            .get(stat.rfind(')')? + 1..)?
            .trim_start()
            .chars()
            .next()?;
        Some(state == 'R')
    }

    /// Whether the thread has named its clock.
    pub(crate) fn is_set(&self) -> bool {
        // Relaxed: see `set_to_current`.
        self.clock.load(Ordering::Relaxed) != UNSET
    }

    /// The thread's CPU time so far, in nanoseconds; `None` before it named
    /// its clock or after it ended.
    pub(crate) fn cpu_ns(&self) -> Option<u64> {
        // Relaxed: see `set_to_current`.
        let id = self.clock.load(Ordering::Relaxed);
        if id == UNSET {
            return None;
        }
        clock_ns(id as u32 as libc::clockid_t)
    }
}

/// Clock `id` in nanoseconds; `None` if the clock is refused (the CPU-time
/// clock of a thread that has ended).
pub(crate) fn clock_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the valid timespec it is given.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_thread_reads_a_threads_cpu_time_and_an_unset_clock_reads_none() {
        let clock = std::sync::Arc::new(ThreadCpuClock::unset());
        assert_eq!(clock.cpu_ns(), None);
        assert!(!clock.is_set());
        let (named, go) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                clock.set_to_current();
                named.wait();
                // Burn CPU until the reader has looked twice.
                let mut x = 0u64;
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_millis(20) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                go.wait();
            });
            named.wait();
            let first = clock.cpu_ns().expect("the thread named its clock");
            // The other thread burns CPU while it lives; its clock moves
            // (it may be preempted for a while, never for the whole wait).
            let mut later = first;
            let start = std::time::Instant::now();
            while later == first && start.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                later = clock.cpu_ns().expect("the thread is alive");
            }
            assert!(later > first, "its CPU time moved");
            // Busy: on a core or waiting for one, never asleep.
            assert_eq!(clock.waits_for_core().map(|_| ()), Some(()));
            go.wait();
        });
    }

    #[test]
    fn a_sleeping_thread_does_not_wait_for_a_core() {
        let clock = ThreadCpuClock::unset();
        assert_eq!(clock.waits_for_core(), None);
        let (named, done) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                clock.set_to_current();
                named.wait();
                // Asleep in the barrier until the reader has looked.
                done.wait();
            });
            named.wait();
            // The other thread is asleep in the barrier, or on its way there:
            // it is seen asleep within a few looks.
            let start = std::time::Instant::now();
            while clock.waits_for_core() != Some(false) {
                assert!(start.elapsed() < std::time::Duration::from_secs(10));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            done.wait();
        });
    }
}
