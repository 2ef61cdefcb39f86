//! Logs no run writes: forged header fields, huge durations, random records,
//! damaged copies of real logs. Whatever the bytes, `rill-mon` answers or
//! fails with a clean error: no panic, no arithmetic overflow, and memory
//! and time bounded by the files, not by the numbers in them.
//!
//! The property tests run 64 cases each unless `PROPTEST_CASES` says
//! otherwise; the fuzz loop runs 400 damaged log sets or 10 s, whichever
//! comes first (`RILL_MON_FUZZ_ITERS`, `RILL_MON_FUZZ_SECS` and
//! `RILL_MON_FUZZ_SEED` change that).
//!
//! The library runs in this process (a debug build panics on overflow);
//! the memory checks run the `rill-mon` binary in a child process whose
//! address space is capped with `RLIMIT_AS`, so that an allocation sized by
//! a forged field fails there (an abort, which is a signal) instead of
//! taking the machine.

mod common;
mod pfdecode;

use std::ffi::OsStr;
use std::io::{Read as _, Seek as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rill_log::{Calibration, EndState, Header, MonitorFlags, Record, StreamIo, HEADER_LEN};
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
/// killing it after `limit` (std's `Command`: the cap is set in the child
/// before exec, and the child is killed on time, which assert_cmd does not do).
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
    let pf = out.path().join("t.pftrace");
    let html = out.path().join("r.html");
    let d = dir.path().as_os_str();
    for args in [
        vec!["summary".as_ref(), d],
        vec!["summary".as_ref(), d, "--json".as_ref()],
        vec!["timeline".as_ref(), d, "-o".as_ref(), svg.as_os_str()],
        vec!["trace".as_ref(), d, "-o".as_ref(), json.as_os_str()],
        vec!["trace".as_ref(), d, "-o".as_ref(), pf.as_os_str()],
        vec!["watch".as_ref(), d, "--once".as_ref()],
        vec!["watch".as_ref(), d, "--json".as_ref()],
        vec!["report".as_ref(), d, "-o".as_ref(), html.as_os_str()],
        vec!["evolution".as_ref(), d, "-o".as_ref(), svg.as_os_str()],
        vec!["evolution".as_ref(), d, "--csv".as_ref()],
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

/// The explaining analyses on a run: they answer (they may find nothing).
fn explain(run: &rill_monitor::RunLog) {
    let _ = rill_monitor::waits(run, true).to_text(0);
    for windows in [1, 20, 1000] {
        let opts = rill_monitor::BottleneckOptions {
            windows,
            ..rill_monitor::BottleneckOptions::default()
        };
        let b = rill_monitor::bottleneck(run, &opts);
        assert!(b.bottlenecks.iter().all(|f| f.share.is_finite()));
        let _ = b.to_text();
    }
    for workers in [1, 2, 7] {
        if let Ok(plan) = rill_monitor::plan_mapping(run, workers) {
            let _ = plan.to_file();
        }
    }
    check_xml(&rill_monitor::report_html(
        run,
        &rill_monitor::ReportOptions::default(),
    ))
    .unwrap();
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
    explain(&run);
}

#[test]
fn huge_busy_times_and_counts_are_mapped() {
    // Named tasks each busy nearly 2^63 ticks on two workers, linked by
    // streams claiming 2^32 - 1 messages per period.
    let dir = tempfile::tempdir().unwrap();
    let d = (1 << 63) - 10;
    let mut w0 = Vec::new();
    let mut w1 = Vec::new();
    for task in 1..=4u64 {
        w0.push(Record::TaskAssign {
            t: 0,
            task,
            parent: 0,
            worker: (task % 2) as u32,
            name: format!("t/{task}"),
        });
        let big = StreamIo {
            stream: task,
            reads: u32::MAX,
            writes: u32::MAX,
            woke_peer: true,
        };
        let state = EndState::BlockedOutput {
            stream: task % 4 + 1,
        };
        let p = period(task, task + d, task, state, vec![big], vec![], vec![]);
        if task % 2 == 0 {
            w0.push(p)
        } else {
            w1.push(p)
        }
    }
    let flags = MonitorFlags::SCHEDULER | MonitorFlags::STREAM | MonitorFlags::MAPPING;
    write_log(dir.path(), 0, 2, flags, Calibration::nanos(), &w0);
    write_log(dir.path(), 1, 2, flags, Calibration::nanos(), &w1);
    let run = load_run(dir.path()).unwrap();
    explain(&run);
    let plan = rill_monitor::plan_mapping(&run, 2).unwrap();
    assert_eq!(plan.tasks.len(), 4);
    let table = rill::ManualTable::parse(&plan.to_file()).unwrap();
    assert_eq!(table.entries().len(), 4);
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
    explain(&run);
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
    let ev = rill_monitor::evolution(&run, &rill_monitor::EvolutionOptions::default()).unwrap();
    check_xml(&ev.to_svg()).unwrap();
    explain(&run);
}

// ---------------------------------------------------------------------------
// Random and damaged logs.

/// A run's log files: names and bytes.
type LogSet = Vec<(String, Vec<u8>)>;

/// The `worker-*.rlog` files of `dir`, by name.
fn read_logs(dir: &Path) -> LogSet {
    let mut set: LogSet = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .filter(|(name, _)| name.ends_with(".rlog"))
        .collect();
    set.sort();
    set
}

fn write_logs(set: &LogSet) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in set {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

/// The logs the runtime writes for a small pipeline (a source that yields
/// now and then, a relay, the main task as sink) on `workers` workers.
fn runtime_logs(flags: MonitorFlags, workers: usize) -> LogSet {
    let dir = tempfile::tempdir().unwrap();
    let mut rt = rill::Runtime::builder()
        .workers(workers)
        .pin(false)
        .monitor(rill::MonitorConfig::new(flags, dir.path()))
        .build()
        .unwrap();
    rt.run_main(|| {
        let (mut w, mut r) = rill::stream::<u64>(4);
        rill::spawn("src", move || {
            for i in 0..300 {
                w.write(i).unwrap();
                if i % 50 == 0 {
                    rill::yield_now();
                }
            }
        });
        let (mut w2, mut r2) = rill::stream::<u64>(8);
        rill::spawn("relay", move || {
            while let Some(v) = r.read() {
                w2.write(v * 2).unwrap();
            }
        });
        let mut n = 0;
        while r2.read().is_some() {
            n += 1;
        }
        assert_eq!(n, 300);
    })
    .unwrap();
    let set = read_logs(dir.path());
    let logs = set.iter().filter(|(n, _)| n.starts_with("worker-")).count();
    assert_eq!(logs, workers);
    set
}

/// One log with every kind of record and period form the encoder writes.
fn zoo_logs() -> LogSet {
    use rill_log::{Op, Side};
    let dir = tempfile::tempdir().unwrap();
    let big = 1 << 40;
    let recs = vec![
        Record::WorkerStart { t: 10 },
        Record::TaskAssign {
            t: 11,
            task: 1,
            parent: 0,
            worker: 0,
            name: "söurce <&>".into(),
        },
        Record::TaskAssign {
            t: 12,
            task: big,
            parent: 1,
            worker: 0,
            name: "relay".into(),
        },
        Record::TaskMigrate {
            t: 13,
            task: big,
            from: 0,
            to: 0,
        },
        Record::StreamOpen {
            t: 14,
            stream: 5,
            capacity: 4,
            creator: 1,
        },
        Record::StreamOpen {
            t: 15,
            stream: 5_000_000,
            capacity: 1 << 20,
            creator: big,
        },
        Record::StreamBind {
            t: 16,
            stream: 5,
            side: Side::Writer,
            task: 1,
        },
        Record::StreamBind {
            t: 17,
            stream: 5,
            side: Side::Reader,
            task: big,
        },
        period(
            20,
            40,
            1,
            EndState::BlockedOutput { stream: 5 },
            vec![io(5, 0, 3)],
            vec![Op::write(0, 3)],
            vec![22, 30, 38],
        ),
        // Interleaved: a relay reading one, writing one.
        period(
            41,
            60,
            big,
            EndState::BlockedInput { stream: 5 },
            vec![io(5, 3, 0), io(5_000_000, 0, 3)],
            vec![
                Op::read(0, 1),
                Op::write(1, 1),
                Op::read(0, 1),
                Op::write(1, 1),
                Op::read(0, 1),
                Op::write(1, 1),
            ],
            vec![42, 44, 46, 48, 50, 52],
        ),
        Record::WorkerWait { t: 61, dur: 9 },
        // Listed in an order neither implied nor interleaved, three entries.
        period(
            70,
            90,
            1,
            EndState::BlockedAny,
            vec![io(5, 0, 2), io(6, 1, 0), io(7, 0, 9)],
            vec![
                Op::write(2, 9),
                Op::write(0, 1),
                Op::read(1, 1),
                Op::write(0, 1),
            ],
            vec![],
        ),
        period(
            91,
            99,
            big,
            EndState::Panicked,
            vec![io(5_000_000, 0, 0)],
            vec![],
            vec![],
        ),
        Record::StreamReplace {
            t: 100,
            side: Side::Reader,
            old: 5,
            new: 6,
        },
        Record::StreamClose {
            t: 101,
            stream: 5,
            side: Side::Writer,
        },
        Record::StreamClose {
            t: 102,
            stream: 6,
            side: Side::Reader,
        },
        period(103, 103, 1, EndState::Ended, vec![], vec![], vec![]),
        Record::WorkerEnd { t: 110 },
    ];
    let cal = Calibration {
        ticks_per_sec: 2.5e9,
        start_ticks: 5,
        start_unix_ns: 1_700_000_000_000_000_000,
    };
    write_log(dir.path(), 0, 1, MonitorFlags::ALL, cal, &recs);
    read_logs(dir.path())
}

/// The real logs the damaged ones are made from (made once).
fn bases() -> &'static [LogSet] {
    static BASES: std::sync::OnceLock<Vec<LogSet>> = std::sync::OnceLock::new();
    BASES.get_or_init(|| {
        let timed = tempfile::tempdir().unwrap();
        pipeline(timed.path(), true, Calibration::nanos());
        vec![
            runtime_logs(MonitorFlags::ALL, 2),
            runtime_logs(MonitorFlags::FULL, 1),
            read_logs(timed.path()),
            zoo_logs(),
            // Sample mode: worker logs of counts, and the sampler's log.
            runtime_logs(MonitorFlags::SAMPLED, 2),
        ]
    })
}

/// Runs every analysis in this process, as the subcommands do. A load
/// error must be one clean message naming a log file or the directory.
fn analyse(dir: &Path) {
    let run = match load_run(dir) {
        Ok(run) => run,
        Err(e) => {
            let msg = format!("{e:#}");
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
            assert!(
                msg.contains(".rlog") || msg.contains(&*dir.to_string_lossy()),
                "the error names no file: {msg}"
            );
            return;
        }
    };
    let s = summarize(&run);
    let _ = s.to_text();
    serde_json::to_string(&s).unwrap();
    check_xml(&timeline_svg(&run, &TimelineOptions::default())).unwrap();
    let window = TimelineOptions {
        from_ms: Some(1e-6),
        to_ms: Some(1e-3),
        width_px: 300,
        ..TimelineOptions::default()
    };
    check_xml(&timeline_svg(&run, &window)).unwrap();
    rill_monitor::write_chrome_trace(&run, &mut std::io::sink()).unwrap();
    let _ = rill_monitor::chrome_trace(&run);
    // The Perfetto trace decodes, whole, windowed, or merged.
    for opts in [
        rill_monitor::PerfettoOptions::default(),
        rill_monitor::PerfettoOptions {
            from_ms: Some(1e-6),
            to_ms: Some(1e-3),
            ..rill_monitor::PerfettoOptions::default()
        },
        rill_monitor::PerfettoOptions {
            detail: 3,
            buckets: 7,
            ..rill_monitor::PerfettoOptions::default()
        },
    ] {
        let mut buf = Vec::new();
        rill_monitor::write_perfetto_trace(&run, &opts, &mut buf).unwrap();
        pfdecode::decode(&buf).unwrap_or_else(|e| panic!("{opts:?}: {e}"));
    }
    // The evolution: whole, windowed, coarse; its picture is XML and its
    // numbers finite.
    for opts in [
        rill_monitor::EvolutionOptions::default(),
        rill_monitor::EvolutionOptions {
            from_ms: Some(1e-6),
            to_ms: Some(1e-3),
            buckets: 7,
            group: false,
            ..rill_monitor::EvolutionOptions::default()
        },
        rill_monitor::EvolutionOptions {
            buckets: 1,
            top_groups: 0,
            ..rill_monitor::EvolutionOptions::default()
        },
    ] {
        match rill_monitor::evolution(&run, &opts) {
            Ok(ev) => {
                check_xml(&ev.to_svg()).unwrap();
                serde_json::from_str::<serde_json::Value>(&ev.to_json()).unwrap();
                let _ = ev.to_csv();
                let series = ev
                    .task_states
                    .iter()
                    .chain(&ev.worker_states)
                    .chain(ev.groups.iter().map(|g| &g.series));
                for s in series {
                    assert!(
                        s.mean.iter().chain(&s.share).all(|x| x.is_finite()),
                        "{s:?}"
                    );
                }
            }
            Err(e) => assert!(e.to_string().contains("neither periods"), "{e}"),
        }
    }
    for group in [true, false] {
        let s = rill_monitor::summarize_grouped(&run, group);
        let _ = s.to_text();
        assert!(s.groups.iter().all(|g| g.busy_share.is_finite()));
    }
    // The explaining analyses: partial answers, never a panic.
    for group in [true, false] {
        let w = rill_monitor::waits(&run, group);
        let _ = w.to_text(0);
        serde_json::to_string(&w).unwrap();
    }
    for windows in [1, 20] {
        let opts = rill_monitor::BottleneckOptions {
            windows,
            ..rill_monitor::BottleneckOptions::default()
        };
        let b = rill_monitor::bottleneck(&run, &opts);
        let _ = b.to_text();
        serde_json::to_string(&b).unwrap();
        assert!(b.bottlenecks.iter().all(|f| f.share.is_finite()), "{b:?}");
    }
    for group in [true, false] {
        let d = rill_monitor::diff(&run, &run, group);
        let _ = d.to_text(0);
        serde_json::to_string(&d).unwrap();
        assert!(d.changes.iter().all(|c| c.change.delta == 0), "{d:?}");
    }
    // The shortcuts through the load's totals agree with the pass, on logs
    // of periods. (Sample-mode logs hold totals records instead; when a
    // damaged header also claims periods, the shortcut reads the totals and
    // the pass the periods, which are not there.)
    let plan = |f: fn(&rill_monitor::RunLog, usize) -> anyhow::Result<rill_monitor::MapPlan>| {
        f(&run, 2)
            .map(|p| serde_json::to_value(p).unwrap())
            .map_err(|e| e.to_string())
    };
    // A damaged header may say "not sampled" while a log's body (or another
    // log's header) is of sample mode: that is not a log of periods either.
    let of_periods = !run.flags.is_sampled()
        && run.workers.iter().all(|w| {
            let periods = w
                .stats
                .timed_periods
                .saturating_add(w.stats.ordered_periods);
            // A body of sample mode: dispatches from its totals, no periods.
            !w.header.flags.is_sampled() && (periods > 0 || w.stats.dispatches == 0)
        });
    if of_periods {
        assert_eq!(
            serde_json::to_value(rill_monitor::waits(&run, true)).unwrap(),
            serde_json::to_value(rill_monitor::waits_by_pass(&run, true)).unwrap()
        );
        assert_eq!(
            plan(rill_monitor::plan_mapping),
            plan(rill_monitor::plan_mapping_by_pass)
        );
    }
    match rill_monitor::plan_mapping(&run, 3) {
        Ok(plan) => {
            let file = plan.to_file();
            let table = rill::ManualTable::parse(&file).unwrap();
            for t in &plan.tasks {
                assert_eq!(table.lookup(&t.name), Some(t.worker), "{:?}", t.name);
            }
            let _ = plan.to_text("f");
        }
        Err(e) => assert!(e.to_string().contains("name no task"), "{e}"),
    }
    // The report: a page of what could be read, well-formed.
    check_xml(&rill_monitor::report_html(
        &run,
        &rill_monitor::ReportOptions::default(),
    ))
    .unwrap();
    // The live view, as it would follow these logs.
    let mut f = rill_monitor::watch::Follower::new(dir);
    for _ in 0..3 {
        f.poll();
    }
    let snap = f.snapshot(&rill_monitor::watch::SnapshotOptions::default());
    let _ = rill_monitor::watch::snapshot_text(&snap);
    serde_json::to_string(&snap).unwrap();
    // The replay after loading, on one thread.
    let opts = rill_monitor::LoadOptions {
        latency: false,
        threads: 1,
        progress: Some(false),
    };
    let lazy = rill_monitor::load_run_with(dir, &opts).unwrap();
    let _ = summarize(&lazy).to_text();
}

/// Runs each subcommand on `dir` in a capped child: each must answer or
/// fail cleanly, within [`LIMIT`] and [`MEM_CAP`].
fn subcommands_capped(dir: &Path) {
    let out = tempfile::tempdir().unwrap();
    let svg = out.path().join("t.svg");
    let json = out.path().join("t.json");
    let pf = out.path().join("t.pftrace");
    let d = dir.as_os_str();
    let map = out.path().join("map.txt");
    let html = out.path().join("r.html");
    for args in [
        vec!["summary".as_ref(), d, "--json".as_ref()],
        vec!["timeline".as_ref(), d, "-o".as_ref(), svg.as_os_str()],
        vec!["trace".as_ref(), d, "-o".as_ref(), json.as_os_str()],
        vec!["trace".as_ref(), d, "-o".as_ref(), pf.as_os_str()],
        vec!["waits".as_ref(), d],
        vec!["diff".as_ref(), d, d, "--json".as_ref()],
        vec!["bottleneck".as_ref(), d, "--json".as_ref()],
        vec!["watch".as_ref(), d, "--once".as_ref()],
        vec!["evolution".as_ref(), d, "-o".as_ref(), svg.as_os_str()],
        vec![
            "evolution".as_ref(),
            d,
            "--json".as_ref(),
            "--no-group".as_ref(),
        ],
        vec![
            "map".as_ref(),
            d,
            "-w".as_ref(),
            "4".as_ref(),
            "-o".as_ref(),
            map.as_os_str(),
        ],
        vec!["report".as_ref(), d, "-o".as_ref(), html.as_os_str()],
    ] {
        rill_mon_capped(&args, LIMIT).assert_clean(&format!("{args:?}"));
    }
}

/// The header fields (offset, size) a mutation may overwrite.
const HEADER_FIELDS: [(usize, usize); 10] = [
    (8, 2),  // version
    (10, 2), // header length
    (12, 4), // flags
    (16, 4), // worker id
    (20, 4), // worker count
    (24, 8), // clock rate
    (32, 8), // start ticks
    (40, 8), // start Unix time
    (48, 4), // log state
    (52, 4), // the error that stopped the writer
];

/// One change to a log set. Offsets below `HEADER_LEN` are header bytes (cut to the
/// file's length); the others are taken modulo the length of the records.
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        file: u8,
        at: u32,
        bit: u8,
    },
    Set {
        file: u8,
        at: u32,
        byte: u8,
    },
    Truncate {
        file: u8,
        at: u32,
    },
    Insert {
        file: u8,
        at: u32,
        bytes: Vec<u8>,
    },
    Delete {
        file: u8,
        at: u32,
        len: u16,
    },
    /// Repeats a range of bytes right after itself.
    Repeat {
        file: u8,
        at: u32,
        len: u16,
    },
    /// Overwrites a header field (an index into [`HEADER_FIELDS`]).
    Field {
        file: u8,
        field: u8,
        value: u64,
    },
    Remove {
        file: u8,
    },
}

fn apply(set: &LogSet, muts: &[Mutation]) -> LogSet {
    let mut set = set.clone();
    for m in muts {
        if set.is_empty() {
            break;
        }
        let file = match *m {
            Mutation::Flip { file, .. }
            | Mutation::Set { file, .. }
            | Mutation::Truncate { file, .. }
            | Mutation::Insert { file, .. }
            | Mutation::Delete { file, .. }
            | Mutation::Repeat { file, .. }
            | Mutation::Field { file, .. }
            | Mutation::Remove { file } => usize::from(file) % set.len(),
        };
        let b = &mut set[file].1;
        let len = b.len();
        // Offsets below the header's length stay in the header; the others
        // fall among the records.
        let h = HEADER_LEN;
        let pos = |at: u32, len: usize| match at as usize {
            at if at < h || len < h => at.min(len),
            at => h + (at - h) % (len - h + 1),
        };
        match m {
            Mutation::Flip { at, bit, .. } => {
                if let Some(x) = b.get_mut(pos(*at, len)) {
                    *x ^= 1 << (bit % 8);
                }
            }
            Mutation::Set { at, byte, .. } => {
                if let Some(x) = b.get_mut(pos(*at, len)) {
                    *x = *byte;
                }
            }
            Mutation::Truncate { at, .. } => b.truncate(pos(*at, len)),
            Mutation::Insert { at, bytes, .. } => {
                let i = pos(*at, len);
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete { at, len: n, .. } => {
                let i = pos(*at, len);
                let j = (i + usize::from(*n)).min(len);
                b.drain(i..j);
            }
            Mutation::Repeat { at, len: n, .. } => {
                let i = pos(*at, len);
                let j = (i + usize::from(*n)).min(len);
                let copy = b[i..j].to_vec();
                b.splice(j..j, copy);
            }
            Mutation::Field { field, value, .. } => {
                let (at, size) = HEADER_FIELDS[usize::from(*field) % HEADER_FIELDS.len()];
                if b.len() >= at + size {
                    b[at..at + size].copy_from_slice(&value.to_le_bytes()[..size]);
                }
            }
            Mutation::Remove { .. } => {
                set.remove(file);
            }
        }
    }
    set
}

/// Header values worth trying besides random ones.
const INTERESTING: [u64; 12] = [
    0,
    1,
    2,
    47,
    48,
    49,
    0xffff,
    0xffff_ffff,
    u64::MAX,
    0x7ff8_0000_0000_0000, // NaN
    0x41cd_cd65_0000_0000, // 1e9
    0x8000_0000_0000_0000, // -0.0
];

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn mutation(&mut self) -> Mutation {
        let file = self.next() as u8;
        // Now and then the header; mostly the records.
        let at = if self.below(8) == 0 {
            self.below(HEADER_LEN as u64) as u32
        } else {
            (self.next() as u32).max(HEADER_LEN as u32)
        };
        match self.below(32) {
            0..=11 => Mutation::Flip {
                file,
                at,
                bit: self.next() as u8,
            },
            12..=17 => Mutation::Set {
                file,
                at,
                byte: self.next() as u8,
            },
            18 | 19 => Mutation::Truncate { file, at },
            20..=23 => {
                let n = self.below(12) as usize;
                Mutation::Insert {
                    file,
                    at,
                    bytes: (0..n).map(|_| self.next() as u8).collect(),
                }
            }
            24 | 25 => Mutation::Delete {
                file,
                at,
                len: self.below(40) as u16,
            },
            26 | 27 => Mutation::Repeat {
                file,
                at,
                len: self.below(200) as u16,
            },
            28..=30 => Mutation::Field {
                file,
                field: self.next() as u8,
                value: if self.below(2) == 0 {
                    INTERESTING[self.below(INTERESTING.len() as u64) as usize]
                } else {
                    self.next()
                },
            },
            _ => Mutation::Remove { file },
        }
    }
}

#[test]
fn fuzz_damaged_runtime_logs_for_a_bounded_time() {
    // RILL_MON_FUZZ_ITERS / _SECS / _SEED run it longer or differently.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let iters = env("RILL_MON_FUZZ_ITERS", 400);
    let budget = Duration::from_secs(env("RILL_MON_FUZZ_SECS", 10));
    let seed = env("RILL_MON_FUZZ_SEED", 0x5eed_f00d_d00d_1e55);
    let bases = bases();
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let mut done = 0;
    while done < iters && start.elapsed() < budget {
        let base = &bases[rng.below(bases.len() as u64) as usize];
        let n = 1 + rng.below(4);
        let muts: Vec<Mutation> = (0..n).map(|_| rng.mutation()).collect();
        let set = apply(base, &muts);
        let dir = write_logs(&set);
        let header_touched = muts.iter().any(|m| match m {
            Mutation::Field { .. } => true,
            Mutation::Flip { at, .. }
            | Mutation::Set { at, .. }
            | Mutation::Truncate { at, .. }
            | Mutation::Insert { at, .. }
            | Mutation::Delete { at, .. }
            | Mutation::Repeat { at, .. } => (*at as usize) < HEADER_LEN,
            _ => false,
        });
        // Every damaged header, and a sample of the rest, also in a capped
        // child first (it is the memory check).
        if header_touched || done % 16 == 0 {
            let exit = rill_mon_capped(&["summary".as_ref(), dir.path().as_os_str()], LIMIT);
            exit.assert_clean(&format!("iteration {done} (seed {seed:#x}): {muts:?}"));
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| analyse(dir.path())));
        if r.is_err() {
            let kept = dir.keep();
            panic!(
                "iteration {done} (seed {seed:#x}) panicked: {muts:?}; the logs are in {}",
                kept.display()
            );
        }
        done += 1;
    }
    eprintln!("fuzz: {done} damaged log sets in {:.1?}", start.elapsed());
    assert!(done >= 20, "only {done} iterations in {budget:?}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Fields a run's headers share.
    #[derive(Clone, Debug)]
    struct Shared {
        flags: u32,
        count: u32,
        rate: u64,
        start_ticks: u64,
        start_unix: u64,
    }

    /// One forged file: its worker id, its own fields (or the shared ones),
    /// bytes after the header (counted in its length) and its records.
    #[derive(Clone, Debug)]
    struct Forged {
        worker: u32,
        own: Option<Shared>,
        extra: Vec<u8>,
        body: Vec<u8>,
    }

    fn small_or_any_u32(small: u32) -> impl Strategy<Value = u32> {
        prop_oneof![3 => 0..small, 1 => any::<u32>(), 1 => Just(u32::MAX)]
    }

    fn small_or_any_u64() -> impl Strategy<Value = u64> {
        prop_oneof![3 => 0..1u64 << 20, 1 => any::<u64>(), 1 => Just(u64::MAX)]
    }

    fn arb_shared() -> impl Strategy<Value = Shared> {
        let flags = prop_oneof![
            Just(MonitorFlags::FULL.bits()),
            Just(MonitorFlags::ALL.bits()),
            0..64u32,
            any::<u32>(),
        ];
        let rate = prop_oneof![
            4 => Just(1e9f64.to_bits()),
            2 => Just(2.5e9f64.to_bits()),
            1 => any::<u64>(),
            1 => prop::sample::select(vec![
                0.0f64,
                -1.0,
                0.5,
                1.0,
                1e300,
                f64::NAN,
                f64::INFINITY,
                f64::MIN_POSITIVE,
            ])
            .prop_map(f64::to_bits),
        ];
        (
            flags,
            small_or_any_u32(5),
            rate,
            small_or_any_u64(),
            small_or_any_u64(),
        )
            .prop_map(|(flags, count, rate, start_ticks, start_unix)| Shared {
                flags,
                count,
                rate,
                start_ticks,
                start_unix,
            })
    }

    /// Varints of small or any values.
    fn varint(v: u64) -> Vec<u8> {
        let mut b = [0u8; 10];
        let n = rill_log::varint::write_u64(&mut b, v);
        b[..n].to_vec()
    }

    /// Records: mostly well-formed ones (the right fields, any values), so
    /// that scans get past the first; or a known tag and any number of
    /// varints; or plain random bytes.
    fn arb_body() -> impl Strategy<Value = Vec<u8>> {
        let tag = prop_oneof![1..=0x0cu8, 0x80..=0xffu8];
        let record = (tag, prop::collection::vec(field(), 0..8)).prop_map(|(tag, fields)| {
            let mut b = vec![tag];
            for f in fields {
                b.extend(varint(f));
            }
            b
        });
        let well_formed = prop_oneof![3 => arb_period(), 2 => arb_other()];
        prop_oneof![
            4 => prop::collection::vec(well_formed, 0..40).prop_map(|r| r.concat()),
            1 => prop::collection::vec(record, 0..24).prop_map(|r| r.concat()),
            1 => prop::collection::vec(any::<u8>(), 0..300),
        ]
    }

    fn arb_forged() -> impl Strategy<Value = Forged> {
        (
            small_or_any_u32(4),
            prop::option::weighted(0.2, arb_shared()),
            prop::collection::vec(any::<u8>(), 0..3),
            arb_body(),
        )
            .prop_map(|(worker, own, extra, body)| Forged {
                worker,
                own,
                extra,
                body,
            })
    }

    fn bytes_of(shared: &Shared, f: &Forged) -> Vec<u8> {
        let s = f.own.as_ref().unwrap_or(shared);
        let cal = Calibration {
            ticks_per_sec: f64::from_bits(s.rate),
            start_ticks: s.start_ticks,
            start_unix_ns: s.start_unix,
        };
        let h = Header::new(MonitorFlags::from_bits(s.flags), f.worker, s.count, cal);
        let mut b = h.to_bytes().to_vec();
        let len = (HEADER_LEN + f.extra.len()) as u16;
        b[10..12].copy_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&f.extra);
        b.extend_from_slice(&f.body);
        b
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        let h = HEADER_LEN as u32;
        let at = prop_oneof![1 => 0..h, 4 => h..=u32::MAX];
        prop_oneof![
            4 => (any::<u8>(), at.clone(), any::<u8>())
                .prop_map(|(file, at, bit)| Mutation::Flip { file, at, bit }),
            3 => (any::<u8>(), at.clone(), any::<u8>())
                .prop_map(|(file, at, byte)| Mutation::Set { file, at, byte }),
            1 => (any::<u8>(), at.clone()).prop_map(|(file, at)| Mutation::Truncate { file, at }),
            2 => (any::<u8>(), at.clone(), prop::collection::vec(any::<u8>(), 0..12))
                .prop_map(|(file, at, bytes)| Mutation::Insert { file, at, bytes }),
            1 => (any::<u8>(), at.clone(), 0..40u16)
                .prop_map(|(file, at, len)| Mutation::Delete { file, at, len }),
            1 => (any::<u8>(), at, 0..200u16)
                .prop_map(|(file, at, len)| Mutation::Repeat { file, at, len }),
            2 => (
                any::<u8>(),
                any::<u8>(),
                prop_oneof![prop::sample::select(INTERESTING.to_vec()), any::<u64>()]
            )
                .prop_map(|(file, field, value)| Mutation::Field { file, field, value }),
            1 => any::<u8>().prop_map(|file| Mutation::Remove { file }),
        ]
    }

    /// A varint field value: mostly small, sometimes anything.
    fn field() -> impl Strategy<Value = u64> {
        prop_oneof![24 => 0..200u64, 2 => 0..1u64 << 32, 1 => any::<u64>()]
    }

    /// The bytes of a period: the tag's end state, entry count and ops mode,
    /// then Δstart, duration, task, the entries (their header bytes with
    /// counts inline or as varints), a blocked-on stream where the end
    /// state names one, and for listed ops a header, ops and times.
    fn arb_period() -> impl Strategy<Value = Vec<u8>> {
        let entry = (0..0x80u8, field(), field(), field());
        let mode = prop_oneof![10 => Just(0u8), 10 => Just(1u8), 1 => Just(2u8), 10 => Just(3u8)];
        let listed = (
            prop::collection::vec(any::<u8>(), 0..6),
            any::<bool>(),
            prop::collection::vec(field(), 0..6),
        );
        (
            (0..6u8, mode),
            (field(), field(), field()),
            prop::collection::vec(entry, 0..5),
            field(),
            listed,
        )
            .prop_map(
                |((end, mode), (dt, dur, task), entries, blocked, (ops, timed, times))| {
                    let nn = entries.len().min(3) as u8;
                    let mut b = vec![0x80 | mode << 5 | nn << 3 | end];
                    for v in [dt, dur, task] {
                        b.extend(varint(v));
                    }
                    if nn == 3 {
                        b.extend(varint(entries.len() as u64));
                    }
                    let n_entries = entries.len();
                    for (h, stream, reads, writes) in entries {
                        b.push(h);
                        b.extend(varint(stream));
                        if (h >> 1) & 7 == 7 {
                            b.extend(varint(reads));
                        }
                        if (h >> 4) & 7 == 7 {
                            b.extend(varint(writes));
                        }
                    }
                    if matches!(end, 1 | 2) {
                        b.extend(varint(blocked));
                    }
                    if mode == 3 {
                        // Listed ops `0 ccc w iii` on existing entries, then
                        // the times.
                        let ops: Vec<u8> = if n_entries == 0 {
                            Vec::new()
                        } else {
                            ops.iter()
                                .map(|&o| (o & 0x78) | ((o & 7) % n_entries.min(8) as u8))
                                .collect()
                        };
                        b.extend(varint((ops.len() as u64) << 3 | u64::from(timed)));
                        b.extend(&ops);
                        if timed {
                            b.extend(varint(times.len() as u64));
                            for t in times {
                                b.extend(varint(t));
                            }
                        }
                    }
                    b
                },
            )
    }

    /// The bytes of a record other than a period, with its fields.
    fn arb_other() -> impl Strategy<Value = Vec<u8>> {
        (
            1..=0x0cu8,
            prop::collection::vec(field(), 4),
            "[a-z<&é]{0,6}",
        )
            .prop_map(|(tag, fields, name)| {
                // Fields per tag, after the tag byte.
                let n = [0, 1, 2, 1, 4, 4, 4, 3, 3, 2, 2, 3, 3][usize::from(tag)];
                let mut b = vec![tag];
                for &f in &fields[..n] {
                    b.extend(varint(f));
                }
                if tag == 4 {
                    b.extend(varint(name.len() as u64));
                    b.extend(name.as_bytes());
                }
                b
            })
    }

    /// 64 cases (a few seconds), unless `PROPTEST_CASES` asks for more.
    fn config() -> ProptestConfig {
        let mut c = ProptestConfig::default();
        if std::env::var_os("PROPTEST_CASES").is_none() {
            c.cases = 64;
        }
        c
    }

    proptest! {
        #![proptest_config(config())]

        /// Forged headers (any field values, the right magic and version)
        /// and random records after them.
        #[test]
        fn forged_headers_and_records_are_answered_or_refused_cleanly(
            shared in arb_shared(),
            files in prop::collection::vec(arb_forged(), 1..=3),
            named_by_header in any::<bool>(),
        ) {
            let set: LogSet = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let id = if named_by_header { f.worker as usize } else { i };
                    (format!("worker-{id}.rlog"), bytes_of(&shared, f))
                })
                .collect();
            let dir = write_logs(&set);
            // The capped child first: it is the memory check, and it keeps
            // a runaway allocation out of this process.
            subcommands_capped(dir.path());
            analyse(dir.path());
        }

        /// Real logs (the runtime's and the encoder's) with bytes flipped,
        /// set, inserted, deleted or repeated, header fields overwritten,
        /// files cut short or removed.
        #[test]
        fn damaged_real_logs_are_answered_or_refused_cleanly(
            base in 0..5usize,
            muts in prop::collection::vec(mutation(), 1..8),
        ) {
            let set = apply(&bases()[base], &muts);
            let dir = write_logs(&set);
            subcommands_capped(dir.path());
            analyse(dir.path());
        }
    }
}
