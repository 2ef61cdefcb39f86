//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use rill::{ManualTable, Mapping};

mod host_load;
#[allow(unused_imports)]
pub use host_load::HostLoad;

/// `f` on a thread of its own, its result sent on the channel.
fn guarded<T, F>(what: &str, f: F) -> (mpsc::Receiver<T>, std::thread::JoinHandle<()>)
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let h = std::thread::Builder::new()
        .name(format!("guard:{what}"))
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn guard thread");
    (rx, h)
}

/// The guarded thread ended without a result: its panic, raised here.
fn reraise(h: std::thread::JoinHandle<()>) -> ! {
    match h.join() {
        Err(p) => std::panic::resume_unwind(p),
        Ok(()) => unreachable!("the guard thread ended without a result"),
    }
}

/// Runs `f` on its own thread and returns its result; fails the test if it
/// takes longer than `secs` seconds (a hang), and re-raises its panic.
pub fn with_timeout<T, F>(what: &str, secs: u64, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (rx, h) = guarded(what, f);
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => {
            h.join().expect("guard thread");
            v
        }
        Err(RecvTimeoutError::Timeout) => {
            panic!("{what}: did not finish within {secs} s (the run hangs)")
        }
        Err(RecvTimeoutError::Disconnected) => reraise(h),
    }
}

/// Runs `f` on its own thread and returns its result; fails the test when
/// `progress` (a counter `f` advances) stays the same for `quiet_secs`
/// seconds: a hang, told apart from a run that a loaded host only slows
/// down (a total-time bound is a figure the machine decides). Re-raises
/// `f`'s panic.
pub fn with_progress_guard<T, F>(
    what: &str,
    quiet_secs: u64,
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
    f: F,
) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    use std::sync::atomic::Ordering;
    let (rx, h) = guarded(what, f);
    let (mut seen, mut since) = (progress.load(Ordering::Relaxed), std::time::Instant::now());
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(v) => {
                h.join().expect("guard thread");
                return v;
            }
            Err(RecvTimeoutError::Timeout) => {
                let now = progress.load(Ordering::Relaxed);
                if now != seen {
                    (seen, since) = (now, std::time::Instant::now());
                } else if since.elapsed() >= Duration::from_secs(quiet_secs) {
                    panic!("{what}: no progress for {quiet_secs} s, stuck at {now} (the run hangs)")
                }
            }
            Err(RecvTimeoutError::Disconnected) => reraise(h),
        }
    }
}

/// Every mapping policy, set up for `workers` workers and for task names
/// that start with the given prefixes.
pub fn mappings(workers: usize, prefixes: &[&str]) -> Vec<(String, Mapping)> {
    let mut table = ManualTable::new();
    for (i, p) in prefixes.iter().enumerate() {
        // Spread the prefixes over the workers, last one first, so that the
        // table is not just round-robin again.
        table.insert(*p, (prefixes.len() - 1 - i) % workers);
    }
    vec![
        ("round-robin".into(), Mapping::RoundRobin),
        ("manual".into(), Mapping::Manual(table)),
        (
            "partitioned".into(),
            Mapping::Partitioned(prefixes.iter().map(|s| s.to_string()).collect()),
        ),
        ("steal".into(), Mapping::Steal),
        ("adaptive".into(), Mapping::Adaptive),
    ]
}

/// A small deterministic random number generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

/// `Runtime::run_main` for a `main` that returns nothing, giving the run's
/// statistics alone (what most tests check).
pub trait RunMainStats {
    /// Runs `f` as the task `main`; the run's statistics.
    fn run_main_stats<F>(&mut self, f: F) -> Result<rill::RunStats, rill::RunError>
    where
        F: FnOnce() + Send + 'static;
}

impl RunMainStats for rill::Runtime {
    fn run_main_stats<F>(&mut self, f: F) -> Result<rill::RunStats, rill::RunError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.run_main(f).map(|((), stats)| stats)
    }
}

/// Rounds of the hang reproduction: `RILL_LIVENESS_ROUNDS` and
/// `RILL_LIVENESS_MESSAGES` scale it up (the test command runs 100 rounds of
/// 1,000,000 messages).
pub fn scale() -> (u32, u64) {
    let r = std::env::var("RILL_LIVENESS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let n = std::env::var("RILL_LIVENESS_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    (r, n)
}

/// Whether this process runs under valgrind (the test command runs the
/// soundness tests under memcheck): its preloaded objects are mapped
/// (`vgpreload_*.so`, which valgrind also names in `LD_PRELOAD`).
pub fn under_valgrind() -> bool {
    static UNDER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *UNDER.get_or_init(|| {
        std::fs::read_to_string("/proc/self/maps").is_ok_and(|m| m.contains("/vgpreload_"))
            || std::env::var_os("LD_PRELOAD")
                .is_some_and(|p| p.to_string_lossy().contains("/vgpreload_"))
    })
}

/// A sampling rate (`sample:HZ`) of `hz` for a test's run, a twentieth of
/// it (at least 10 Hz) under valgrind. The sample timers run on the wall
/// clock, so their signals come at `hz` however slowly the program runs,
/// and memcheck runs it 20 to 50 times slower while each signal costs it
/// far more than natively: at 10 kHz a sampled run then does little but
/// take signals (minutes instead of seconds on a slower host, worse with
/// the cores busy or with `--fair-sched=yes`). A twentieth still takes at
/// least as many samples per unit of the program's work as `hz` natively.
pub fn sample_hz(hz: u32) -> u32 {
    if under_valgrind() {
        (hz / 20).max(10)
    } else {
        hz
    }
}
