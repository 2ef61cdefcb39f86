//! Many live tasks at once: a root task makes 100,000 streams and a task
//! reading each, waits until every one of them is blocked, measures the
//! process's resident memory, then writes one message to each so that they
//! all finish. Runs on 2 workers with the default configuration (stack size,
//! capacity, mapping) and whatever `vm.max_map_count` the machine has (the
//! kernel's default is 65530).
//!
//! Where the kernel has guard markers (`MADV_GUARD_INSTALL`, Linux 6.13+),
//! every one of those stacks must have a guard page, and the process must
//! hold few mappings: the run's count of guarded stacks, the mappings in
//! `/proc/self/maps`, and (where the kernel reports them, Linux 6.14+) the
//! guard markers that `/proc/self/pagemap` shows are checked. Elsewhere the
//! test allows unguarded stacks, which it needs past about 24,000 tasks.

mod common;

use common::RunMainStats;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rill::Runtime;

/// What the test asserts: resident bytes per idle task.
const LIMIT_PER_TASK: u64 = 64 * 1024;
/// What the runtime aims for.
const GOAL_PER_TASK: u64 = 16 * 1024;

/// A line of /proc/self/status, in KiB.
fn status_kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"))
}

fn maps() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// Bit 58 of a `/proc/self/pagemap` entry: the page is a guard marker
/// (reported since Linux 6.14).
const PM_GUARD_REGION: u64 = 1 << 58;

/// How many pages of the process's anonymous mappings are guard markers,
/// from `/proc/self/pagemap`.
fn guard_marker_pages() -> u64 {
    use std::os::unix::fs::FileExt;
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let pagemap = std::fs::File::open("/proc/self/pagemap").expect("/proc/self/pagemap");
    let page = 4096u64;
    let mut buf = vec![0u8; 8 * 65536];
    let mut n = 0;
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(_perms)) = (f.next(), f.next()) else {
            continue;
        };
        // Anonymous mappings only: no file name after the inode.
        if f.nth(3).is_some() {
            continue;
        }
        let (lo, hi) = range.split_once('-').expect("a range");
        let lo = u64::from_str_radix(lo, 16).unwrap() / page;
        let hi = u64::from_str_radix(hi, 16).unwrap() / page;
        let mut p = lo;
        while p < hi {
            let k = (hi - p).min(65536) as usize;
            let got = pagemap
                .read_at(&mut buf[..8 * k], p * 8)
                .expect("read pagemap");
            for e in buf[..got].chunks_exact(8) {
                if u64::from_ne_bytes(e.try_into().unwrap()) & PM_GUARD_REGION != 0 {
                    n += 1;
                }
            }
            p += k as u64;
        }
    }
    n
}

#[derive(Debug, Default, Clone)]
struct Measured {
    rss_blocked_kib: u64,
    maps_blocked: usize,
    guard_markers: u64,
    spawn: Duration,
    wake: Duration,
}

fn many_blocked_tasks(n: usize) {
    let max_map_count = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let markers = rill::stack_guard_markers_supported();
    let b = Runtime::builder().workers(2).pin(false);
    // SAFETY: the tasks block at once, using a few hundred bytes of their
    // 256 KiB stacks. Only without guard markers are unguarded stacks made.
    let mut rt = unsafe { b.unguarded_stacks(!markers) }.build().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let measured = Arc::new(Mutex::new(Measured::default()));
    let (s0, f0, m0) = (started.clone(), finished.clone(), measured.clone());

    let rss_before = status_kib("VmRSS:");
    let maps_before = maps();
    let t0 = Instant::now();
    let stats = rt
        .run_main_stats(move || {
            let t = Instant::now();
            let mut writers = Vec::with_capacity(n);
            for i in 0..n {
                let (w, mut r) = rill::stream::<u32>(1);
                writers.push(w);
                let (s, f) = (s0.clone(), f0.clone());
                rill::spawn(format!("idle/{i}"), move || {
                    s.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(r.read(), Some(i as u32));
                    f.fetch_add(1, Ordering::Relaxed);
                });
            }
            // Wait until every task has started; the last ones block within
            // a few instructions, so yield and wait a little more.
            while s0.load(Ordering::Relaxed) < n {
                rill::yield_now();
            }
            for _ in 0..100 {
                rill::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(f0.load(Ordering::Relaxed), 0, "a task finished early");
            let spawn = t.elapsed();
            let rss_blocked_kib = status_kib("VmRSS:");
            let maps_blocked = maps();
            let guard_markers = if markers { guard_marker_pages() } else { 0 };
            let t = Instant::now();
            for (i, w) in writers.iter_mut().enumerate() {
                w.write(i as u32).unwrap();
            }
            drop(writers);
            *m0.lock().unwrap() = Measured {
                rss_blocked_kib,
                maps_blocked,
                guard_markers,
                spawn,
                wake: t.elapsed(),
            };
        })
        .unwrap_or_else(|e| panic!("{n} blocked tasks: {e}"));
    let total = t0.elapsed();
    let m = measured.lock().unwrap().clone();

    assert_eq!(finished.load(Ordering::SeqCst), n);
    assert_eq!(stats.tasks_created, n as u64 + 1);
    let per_task = (m.rss_blocked_kib.saturating_sub(rss_before)) * 1024 / n as u64;
    eprintln!(
        "{n} blocked tasks on 2 workers (vm.max_map_count {max_map_count}): \
         VmRSS {rss_before} KiB before, {} KiB with all blocked: {per_task} bytes \
         ({:.1} KiB) per task (goal {} KiB, limit {} KiB); mappings {maps_before} -> {}; \
         stacks guarded {}, unguarded {}, guard markers in pagemap {}; \
         spawn+block {:?}, wake+finish {:?}, run {total:?}",
        m.rss_blocked_kib,
        per_task as f64 / 1024.0,
        GOAL_PER_TASK / 1024,
        LIMIT_PER_TASK / 1024,
        m.maps_blocked,
        stats.guarded_stacks,
        stats.unguarded_stacks,
        m.guard_markers,
        m.spawn,
        m.wake,
    );
    assert!(
        per_task < LIMIT_PER_TASK,
        "{per_task} resident bytes per blocked task (limit {LIMIT_PER_TASK})"
    );
    if markers {
        // Every task's stack, main's included, had a guard page.
        assert_eq!(stats.unguarded_stacks, 0, "{stats:?}");
        assert!(stats.guarded_stacks > n as u64, "{stats:?}");
        // One mapping per slab of 32 stacks at most (adjacent ones merge).
        assert!(
            m.maps_blocked < maps_before + n / 32 + 100,
            "mappings {maps_before} -> {}",
            m.maps_blocked
        );
        // Linux 6.13 has markers but does not report them in pagemap (0).
        assert!(
            m.guard_markers == 0 || m.guard_markers > n as u64,
            "{} guard markers for {n} tasks",
            m.guard_markers
        );
    }
}

#[test]
fn hundred_thousand_blocked_tasks() {
    many_blocked_tasks(100_000);
}
