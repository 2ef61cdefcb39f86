//! Logs no run writes: forged headers and fields that no real run produces.
//! Whatever the bytes, `rill-mon` answers or fails with a clean error: no
//! panic, no arithmetic overflow, and memory and time bounded by the files,
//! not by the numbers in them.
//!
//! The library runs in this process (a debug build panics on overflow);
//! the memory checks run the `rill-mon` binary in a child process whose
//! address space is capped with `RLIMIT_AS`, so that an allocation sized by
//! a forged field fails there (an abort, which is a signal) instead of
//! taking the machine.

mod common;

use std::ffi::OsStr;
use std::io::{Read as _, Seek as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rill::monitor::clock::Calibration;
use rill::monitor::flags::MonitorFlags;
use rill::monitor::format::{EndState, Header, Record, StreamIo};
use rill_monitor::{load_run, summarize, timeline_svg, TimelineOptions};

/// Address space a `rill-mon` child may use.
const MEM_CAP: u64 = 512 << 20;
/// Time a `rill-mon` child may take on a small log (a debug build, on a
/// machine that may be busy).
const LIMIT: Duration = Duration::from_secs(20);

/// How a `rill-mon` child ended.
struct Exit {
    /// `None` if it was killed for taking longer than its limit.
    status: Option<ExitStatus>,
    took: Duration,
    stderr: String,
}

impl Exit {
    fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// It exited by itself, within its limit, with status 0 (an answer) or
    /// 2 (an error message), and said nothing of a panic or a failed
    /// allocation.
    fn assert_clean(&self, what: &str) {
        let Some(status) = self.status else {
            panic!("{what}: still running after {:?}", self.took);
        };
        assert!(
            status.signal().is_none(),
            "{what}: killed by signal {:?} (an abort: out of memory?) after {:?}: {}",
            status.signal(),
            self.took,
            self.stderr
        );
        assert!(
            matches!(status.code(), Some(0 | 2)),
            "{what}: exit status {status}: {}",
            self.stderr
        );
        for bad in ["panicked", "memory allocation"] {
            assert!(!self.stderr.contains(bad), "{what}: {}", self.stderr);
        }
        if status.code() == Some(2) {
            assert!(
                self.stderr.starts_with("rill-mon: error: ")
                    && self.stderr.trim_end().lines().count() == 1,
                "{what}: one error line: {}",
                self.stderr
            );
        }
    }
}

/// In the child, before `exec`: caps its address space at [`MEM_CAP`].
fn cap_address_space() -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: MEM_CAP as libc::rlim_t,
        rlim_max: MEM_CAP as libc::rlim_t,
    };
    // SAFETY: setrlimit only reads `lim`, which lives for the call, and
    // changes this (child) process's limits.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `rill-mon args` with its address space capped at [`MEM_CAP`],
/// killing it after `limit`.
fn rill_mon_capped(args: &[&OsStr], limit: Duration) -> Exit {
    let mut err = tempfile::tempfile().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rill-mon"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.try_clone().unwrap());
    // SAFETY: the hook runs in the forked child before exec, where only
    // async-signal-safe work is allowed: it makes one setrlimit call and
    // allocates nothing (an OS error is stored inline).
    unsafe {
        cmd.pre_exec(cap_address_space);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start rill-mon");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = start.elapsed();
    let mut stderr = String::new();
    err.rewind().unwrap();
    let _ = err.read_to_string(&mut stderr);
    Exit {
        status,
        took,
        stderr,
    }
}

/// The 48-byte log of a single worker whose header claims `u32::MAX` workers.
fn forged_worker_count(dir: &Path) {
    let h = Header::new(MonitorFlags::FULL, 0, u32::MAX, Calibration::nanos());
    std::fs::write(dir.join("worker-0.rlog"), h.to_bytes()).unwrap();
}

#[test]
fn a_forged_worker_count_is_answered_quickly_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    forged_worker_count(dir.path());
    let out = tempfile::tempdir().unwrap();
    let svg = out.path().join("t.svg");
    let json = out.path().join("t.json");
    let d = dir.path().as_os_str();
    for args in [
        vec!["summary".as_ref(), d],
        vec!["summary".as_ref(), d, "--json".as_ref()],
        vec!["timeline".as_ref(), d, "-o".as_ref(), svg.as_os_str()],
        vec!["trace".as_ref(), d, "-o".as_ref(), json.as_os_str()],
    ] {
        let exit = rill_mon_capped(&args, Duration::from_secs(5));
        exit.assert_clean(&format!("{args:?}"));
        assert_eq!(exit.code(), Some(0), "{args:?}: {}", exit.stderr);
    }
    // The child runs first: without a bound, this process would be the one
    // to run out of memory.
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.worker_count, u32::MAX);
    let w = run.warnings.join("\n");
    assert!(
        w.contains("announce 4294967295 workers") && w.contains("16 and 4294967278 more"),
        "{w}"
    );
    assert!(
        w.len() < 300,
        "the warning lists a few workers, not all: {w}"
    );
}

#[test]
fn forged_clock_rates_are_clean_errors() {
    for rate in [
        0.0,
        -1.0,
        0.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cal = Calibration {
            ticks_per_sec: rate,
            ..Calibration::nanos()
        };
        write_log(
            dir.path(),
            0,
            1,
            MonitorFlags::FULL,
            cal,
            &[Record::WorkerStart { t: 5 }],
        );
        let err = format!("{:#}", load_run(dir.path()).unwrap_err());
        assert!(
            err.contains("worker-0.rlog") && err.contains("clock rate"),
            "{rate}: {err}"
        );
        let exit = rill_mon_capped(&["summary".as_ref(), dir.path().as_os_str()], LIMIT);
        exit.assert_clean(&format!("rate {rate}"));
        assert_eq!(exit.code(), Some(2), "rate {rate}: {}", exit.stderr);
    }
}

/// A period of `task` on no stream, from `start` for `dur` ticks.
fn busy(start: u64, dur: u64, task: u64) -> Record {
    period(
        start,
        start.wrapping_add(dur),
        task,
        EndState::Yielded,
        vec![],
        vec![],
        vec![],
    )
}

#[test]
fn huge_durations_saturate_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    let half = 1 << 63;
    let recs = [
        busy(0, half, 1),
        busy(0, half, 1),
        Record::WorkerWait { t: 0, dur: half },
        Record::WorkerWait { t: 0, dur: half },
    ];
    // No MESSAGE flag: the totals of the load alone.
    let flags = MonitorFlags::SCHEDULER | MonitorFlags::WORKER | MonitorFlags::STREAM;
    write_log(dir.path(), 0, 2, flags, Calibration::nanos(), &recs);
    write_log(dir.path(), 1, 2, flags, Calibration::nanos(), &recs);
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.workers[0].stats.busy, u64::MAX);
    assert_eq!(run.workers[0].stats.wait, u64::MAX);
    assert_eq!(run.tasks[&1].busy, u64::MAX);
    let s = summarize(&run);
    assert_eq!(s.tasks[0].total_ns, u64::MAX);
    let _ = s.to_text();
}

#[test]
fn huge_durations_saturate_the_latency_replay() {
    // src -> 1 -> relay -> 2 -> sink, every period nearly 2^63 ticks long
    // and the relay's overlapping on two workers (as no run's can): its
    // busy clock and the latency it passes on go past 2^64.
    let dir = tempfile::tempdir().unwrap();
    let d = (1 << 63) - 10;
    let relay = |start: u64, io: StreamIo| {
        period(
            start,
            start + d,
            2,
            EndState::Yielded,
            vec![io],
            vec![],
            vec![],
        )
    };
    let w0 = [
        period(0, d, 1, EndState::Ended, vec![io(1, 0, 2)], vec![], vec![]),
        relay(d, io(1, 1, 0)),
    ];
    let w1 = [
        relay(d + 1, io(1, 1, 0)),
        relay(d + 2, io(2, 0, 1)),
        period(
            2 * d + 3,
            2 * d + 4,
            3,
            EndState::Ended,
            vec![io(2, 1, 0)],
            vec![],
            vec![],
        ),
    ];
    write_log(
        dir.path(),
        0,
        2,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &w0,
    );
    write_log(
        dir.path(),
        1,
        2,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &w1,
    );
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.tasks[&2].busy, u64::MAX);
    let l = summarize(&run).latency.unwrap();
    assert_eq!(l.all.outputs, 1);
    assert_eq!(l.all.max_ns, u64::MAX as f64);
    assert_eq!(l.unmatched_reads, 0);
}

#[test]
fn huge_durations_saturate_the_timeline() {
    // 3000 periods of distinct tasks in one pixel column of a run 2^64
    // ticks long, each 2^53 ticks: together more than 2^64.
    let dir = tempfile::tempdir().unwrap();
    let mut recs = vec![Record::WorkerStart { t: 0 }];
    for task in 1..=3000 {
        recs.push(busy(1000, 1 << 53, task));
    }
    for _ in 0..4 {
        recs.push(busy(1000, 1 << 62, 1));
    }
    recs.push(Record::WorkerEnd { t: u64::MAX - 1 });
    let flags = MonitorFlags::SCHEDULER | MonitorFlags::WORKER;
    write_log(dir.path(), 0, 1, flags, Calibration::nanos(), &recs);
    let run = load_run(dir.path()).unwrap();
    let svg = timeline_svg(&run, &TimelineOptions::default());
    check_xml(&svg).unwrap();
    assert!(svg.contains("3000 short periods"), "one merged column");
}
