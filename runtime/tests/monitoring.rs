//! Monitoring end to end: a monitored run writes one log per worker that
//! decodes cleanly and accounts for every message and dispatch.

mod common;

use common::RunMainStats;

use rill::{MonitorConfig, MonitorFlags, Runtime};
use rill_log::{read_log, EndReason, EndState, Record};

/// A runtime on `workers` unpinned workers, monitored with `flags` into `dir`.
fn monitored(workers: usize, flags: MonitorFlags, dir: &std::path::Path) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .unwrap()
}

fn pipeline(workers: usize, flags: MonitorFlags, dir: &std::path::Path) -> rill::RunStats {
    let mut rt = monitored(workers, flags, dir);
    rt.run_main_stats(|| {
        let (mut w, mut r) = rill::stream::<u64>(4);
        rill::spawn("src", move || {
            for i in 0..1000 {
                w.write(i).unwrap();
            }
        });
        let (mut w2, mut r2) = rill::stream::<u64>(4);
        rill::spawn("relay", move || {
            while let Some(v) = r.read() {
                w2.write(v).unwrap();
            }
        });
        let mut n = 0;
        while r2.read().is_some() {
            n += 1;
        }
        assert_eq!(n, 1000);
    })
    .unwrap()
}

#[test]
fn full_monitoring_logs_every_message() {
    for workers in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let stats = pipeline(workers, MonitorFlags::FULL, dir.path());
        assert!(stats.log_bytes > 0);
        let mut writes = 0u64;
        let mut reads = 0u64;
        let mut periods = 0u64;
        let mut names = Vec::new();
        let mut ended = 0;
        for w in 0..workers {
            let log = read_log(dir.path().join(format!("worker-{w}.rlog"))).unwrap();
            assert_eq!(log.end, EndReason::Clean, "worker {w}");
            assert_eq!(log.header.worker_count as usize, workers);
            for r in &log.records {
                match r {
                    Record::Period { io, end_state, .. } => {
                        periods += 1;
                        for x in io {
                            writes += x.writes as u64;
                            reads += x.reads as u64;
                        }
                        if *end_state == EndState::Ended {
                            ended += 1;
                        }
                    }
                    Record::TaskAssign { name, .. } => names.push(name.clone()),
                    _ => {}
                }
            }
        }
        assert_eq!(writes, 2000, "workers={workers}");
        assert_eq!(reads, 2000, "workers={workers}");
        assert_eq!(ended, 3, "three tasks ended");
        // A spin before a block on a monitored worker is logged as a period
        // that ended blocked, a wait, and a new period.
        assert_eq!(
            periods,
            stats.dispatches + stats.spins,
            "one period per dispatch and per spin"
        );
        names.sort();
        assert_eq!(names, vec!["main", "relay", "src"]);
    }
}

#[test]
fn monitoring_off_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stats = pipeline(2, MonitorFlags::OFF, &dir.path().join("never"));
    assert_eq!(stats.log_bytes, 0);
    assert!(!dir.path().join("never").exists());
}

/// Messages per (stream, writes/reads) over all logs in `dir`, checking that
/// every period's ops (when recorded) agree with its counts.
fn stream_counts(
    dir: &std::path::Path,
    workers: usize,
) -> std::collections::BTreeMap<(u64, bool), u64> {
    let mut m = std::collections::BTreeMap::new();
    for w in 0..workers {
        let log = read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        assert_eq!(log.end, EndReason::Clean, "worker {w}");
        for r in &log.records {
            if let Record::Period { io, ops, .. } = r {
                for x in io {
                    *m.entry((x.stream, true)).or_default() += u64::from(x.writes);
                    *m.entry((x.stream, false)).or_default() += u64::from(x.reads);
                }
                if !ops.is_empty() {
                    let mut per = vec![(0u32, 0u32); io.len()];
                    for op in ops {
                        let e = &mut per[usize::from(op.io_index)];
                        if op.write {
                            e.1 += op.count;
                        } else {
                            e.0 += op.count;
                        }
                    }
                    let want: Vec<_> = io.iter().map(|x| (x.reads, x.writes)).collect();
                    assert_eq!(per, want, "ops agree with counts in {r:?}");
                }
            }
        }
    }
    m.retain(|_, n| *n > 0);
    m
}

const MODES: [MonitorFlags; 3] = [
    MonitorFlags::FULL,
    MonitorFlags::SCHEDULER.union(MonitorFlags::STREAM),
    MonitorFlags::ALL,
];

#[test]
fn every_mode_counts_every_message() {
    for flags in MODES {
        for workers in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            pipeline(workers, flags, dir.path());
            let counts = stream_counts(dir.path(), workers);
            assert_eq!(counts.len(), 4, "{flags} {counts:?}");
            assert!(counts.values().all(|&n| n == 1000), "{flags} {counts:?}");
        }
    }
}

/// An end moved to another task in the middle of a period, and dropped there
/// in the middle of that task's period, is counted where it was used.
#[test]
fn moved_and_dropped_ends_are_counted() {
    for flags in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = monitored(2, flags, dir.path());
        rt.run_main_stats(|| {
            let (mut w, mut r) = rill::stream::<u64>(64);
            let (mut hand, mut take) = rill::stream::<rill::Writer<u64>>(1);
            rill::spawn("first", move || {
                for i in 0..3 {
                    w.write(i).unwrap();
                }
                hand.write(w).unwrap();
                rill::yield_now();
            });
            rill::spawn("second", move || {
                let mut w = take.read().unwrap();
                w.write(3).unwrap();
                w.write(4).unwrap();
                drop(w);
                rill::yield_now();
            });
            let mut n = 0;
            while r.read().is_some() {
                n += 1;
            }
            assert_eq!(n, 5);
        })
        .unwrap();
        let counts = stream_counts(dir.path(), 2);
        let data: Vec<u64> = counts
            .iter()
            .filter(|((_, _), &n)| n == 5)
            .map(|(_, &n)| n)
            .collect();
        assert_eq!(data, [5, 5], "{flags}: {counts:?}");
    }
}

/// Messages written per task on `stream`, over all logs in `dir`.
fn writes_per_task(
    dir: &std::path::Path,
    workers: usize,
    stream: u64,
) -> std::collections::BTreeMap<u64, u64> {
    let mut m = std::collections::BTreeMap::new();
    for w in 0..workers {
        let log = read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        for r in &log.records {
            if let Record::Period { task, io, .. } = r {
                for x in io.iter().filter(|x| x.stream == stream) {
                    *m.entry(*task).or_default() += u64::from(x.writes);
                }
            }
        }
    }
    m.retain(|_, n| *n > 0);
    m
}

/// The two tasks of a hand-over test and the stream whose writer they pass
/// between them: each notes its task id, and the test compares each one's
/// logged writes on the stream with what it wrote.
#[derive(Clone, Default)]
struct HandOver {
    ids: std::sync::Arc<std::sync::Mutex<[u64; 2]>>,
    stream: std::sync::Arc<std::sync::Mutex<u64>>,
}

impl HandOver {
    /// The stream whose writes are counted.
    fn set_stream(&self, id: u64) {
        *self.stream.lock().unwrap() = id;
    }

    /// The running task is holder `i` (0: first, 1: second).
    fn note_holder(&self, i: usize) {
        self.ids.lock().unwrap()[i] = rill::current().unwrap().id;
    }

    /// Logged writes per task on the stream, and what they should be: the
    /// first holder's `first` and the second's `second`.
    fn writes(
        &self,
        dir: &std::path::Path,
        workers: usize,
        first: u64,
        second: u64,
    ) -> [std::collections::BTreeMap<u64, u64>; 2] {
        let [a, b] = *self.ids.lock().unwrap();
        let per = writes_per_task(dir, workers, *self.stream.lock().unwrap());
        [
            per,
            std::collections::BTreeMap::from([(a, first), (b, second)]),
        ]
    }
}

/// Each message counts for the task that moved it, also when a used end
/// goes to another task and comes back (count mode cuts the old holder's
/// binding where the new one takes over).
#[test]
fn messages_count_for_the_task_that_moved_them() {
    for flags in MODES {
        for workers in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let mut rt = monitored(workers, flags, dir.path());
            let h = HandOver::default();
            let (h1, h2) = (h.clone(), h.clone());
            rt.run_main_stats(move || {
                let (mut w, mut r) = rill::stream::<u64>(64);
                h1.set_stream(w.id());
                let (mut hand, mut take) = rill::stream::<rill::Writer<u64>>(1);
                let (mut back, mut got) = rill::stream::<rill::Writer<u64>>(1);
                rill::spawn("first", move || {
                    h1.note_holder(0);
                    for i in 0..3 {
                        w.write(i).unwrap();
                    }
                    hand.write(w).unwrap();
                    let mut w = got.read().unwrap();
                    for i in 5..12 {
                        w.write(i).unwrap();
                    }
                });
                rill::spawn("second", move || {
                    h2.note_holder(1);
                    let mut w = take.read().unwrap();
                    w.write(3).unwrap();
                    w.write(4).unwrap();
                    back.write(w).unwrap();
                    rill::yield_now();
                });
                let got: Vec<u64> = std::iter::from_fn(|| r.read()).collect();
                assert_eq!(got, (0..12).collect::<Vec<_>>());
            })
            .unwrap();
            let [per, want] = h.writes(dir.path(), workers, 10, 2);
            assert_eq!(per, want, "{flags} on {workers} worker(s)");
        }
    }
}

/// An end handed to a task on another worker while the task it was bound to
/// goes on running (its side's monitoring hint armed with the end's old
/// address, `monitor/hint.rs`): the new holder's messages count for the new
/// holder, in every mode.
#[test]
fn ends_handed_over_while_their_holder_runs_count_for_the_new_holder() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    for flags in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = monitored(2, flags, dir.path());
        let h = HandOver::default();
        let (h1, h2) = (h.clone(), h.clone());
        rt.run_main_stats(move || {
            let (mut w, mut r) = rill::stream::<u64>(64);
            h1.set_stream(w.id());
            let (mut hand, mut take) = rill::stream::<rill::Writer<u64>>(1);
            let done = Arc::new(AtomicBool::new(false));
            let done2 = done.clone();
            rill::try_spawn_on(0, "first", move || {
                h1.note_holder(0);
                for i in 0..3 {
                    w.write(i).unwrap();
                }
                hand.write(w).unwrap();
                // Still in the same period: wait, without blocking, for the
                // other worker to write through the end.
                let start = std::time::Instant::now();
                while !done.load(Ordering::Acquire) {
                    assert!(start.elapsed().as_secs() < 20, "second never wrote");
                    std::hint::spin_loop();
                }
            })
            .unwrap();
            rill::try_spawn_on(1, "second", move || {
                h2.note_holder(1);
                let mut w = take.read().unwrap();
                w.write(3).unwrap();
                w.write(4).unwrap();
                done2.store(true, Ordering::Release);
            })
            .unwrap();
            let got: Vec<u64> = std::iter::from_fn(|| r.read()).collect();
            assert_eq!(got, (0..5).collect::<Vec<_>>());
        })
        .unwrap();
        let [per, want] = h.writes(dir.path(), 2, 3, 2);
        assert_eq!(per, want, "{flags}");
    }
}

/// A period that uses more stream ends than the fast path holds.
#[test]
fn wide_periods_are_counted() {
    const N: usize = 45;
    for flags in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = monitored(1, flags, dir.path());
        rt.run_main_stats(|| {
            let (mut ws, mut rs): (Vec<_>, Vec<_>) = (0..N).map(|_| rill::stream::<u64>(8)).unzip();
            for round in 0..3 {
                for w in &mut ws {
                    w.write(round).unwrap();
                }
                for r in &mut rs {
                    assert_eq!(r.read(), Some(round));
                }
            }
        })
        .unwrap();
        let counts = stream_counts(dir.path(), 1);
        assert_eq!(counts.len(), 2 * N, "{flags}");
        assert!(counts.values().all(|&n| n == 3), "{flags}: {counts:?}");
    }
}

/// A period that moves more messages than the fast path holds in order.
#[test]
fn long_periods_are_counted() {
    for flags in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = monitored(1, flags, dir.path());
        rt.run_main_stats(|| {
            let (mut w, mut r) = rill::stream::<u64>(2048);
            let (mut w2, mut r2) = rill::stream::<u64>(2048);
            for i in 0..1500 {
                w.write(i).unwrap();
                w2.write(i).unwrap();
            }
            for _ in 0..1500 {
                r.read().unwrap();
            }
            for _ in 0..1500 {
                r2.read().unwrap();
            }
        })
        .unwrap();
        let counts = stream_counts(dir.path(), 1);
        assert_eq!(counts.len(), 4, "{flags}");
        assert!(counts.values().all(|&n| n == 1500), "{flags}: {counts:?}");
    }
}

/// Operations that move nothing (a `try_` on an empty or full stream, a read
/// at the end of the stream, a write to a closed stream, a poll) record
/// nothing: the message a stream operation records as it starts is taken
/// back.
#[test]
fn operations_that_move_nothing_record_nothing() {
    for flags in MODES {
        for workers in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let mut rt = monitored(workers, flags, dir.path());
            rt.run_main_stats(|| {
                let (mut w, mut r) = rill::stream::<u64>(2);
                let (mut w2, r2) = rill::stream::<u64>(2);
                rill::spawn("trier", move || {
                    let mut sent = 0;
                    while sent < 100 {
                        match w.try_write(sent) {
                            Ok(()) => sent += 1,
                            Err(rill::TryWriteError::Full(_)) => rill::yield_now(),
                            Err(e) => panic!("{e}"),
                        }
                    }
                    // The reader is gone after it read 100: writes fail.
                    while w.write(7).is_ok() {
                        rill::yield_now();
                    }
                });
                rill::spawn("closer", move || {
                    drop(r2);
                    for _ in 0..3 {
                        assert!(w2.write(1).is_err());
                        assert!(w2.try_write(1).is_err());
                    }
                });
                let mut got = 0;
                while got < 100 {
                    match r.try_read() {
                        Ok(_) => got += 1,
                        Err(rill::TryReadError::Empty) => {
                            let mut rs = [r];
                            rill::poll(&mut rs);
                            let [back] = rs;
                            r = back;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                drop(r);
                let (w3, mut r3) = rill::stream::<u64>(2);
                drop(w3);
                assert_eq!(r3.read(), None);
                assert_eq!(r3.try_read(), Err(rill::TryReadError::Closed));
            })
            .unwrap();
            let counts = stream_counts(dir.path(), workers);
            // The first stream: 100 read; 100 written, plus what raced with
            // the reader's drop (written, never read). The second: a write
            // to a stream whose reader is gone still fills the ring before
            // it reports the error; the rest move nothing. The third: none.
            let first = counts.keys().next().unwrap().0;
            for ((stream, write), n) in &counts {
                match (*stream == first, write) {
                    (true, false) => assert_eq!(*n, 100, "{flags} {workers}: {counts:?}"),
                    (true, true) => assert!((100..=102).contains(n), "{flags}: {counts:?}"),
                    (false, true) => assert!(*n <= 2, "{flags} {workers}: {counts:?}"),
                    (false, false) => panic!("{flags} {workers}: reads recorded: {counts:?}"),
                }
            }
            assert!(counts.len() >= 2, "{flags} {workers}: {counts:?}");
        }
    }
}

/// An end first used outside any run (here by the test's thread, before the
/// monitored runtime exists) still counts for the task that uses it next:
/// the stamp its first use gave it must not pass a monitored task's check.
#[test]
fn ends_used_before_the_run_count_in_its_tasks() {
    use std::sync::{Arc, Mutex};
    for flags in MODES {
        for workers in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let (mut w, mut r) = rill::stream::<u64>(16);
            for i in 0..3 {
                w.write(i).unwrap();
            }
            assert_eq!(r.read(), Some(0));
            let stream = w.id();
            let writer = Arc::new(Mutex::new(0u64));
            let writer2 = writer.clone();
            let mut rt = monitored(workers, flags, dir.path());
            rt.spawn("late-writer", move || {
                *writer2.lock().unwrap() = rill::current().unwrap().id;
                for i in 3..8 {
                    w.write(i).unwrap();
                }
            });
            rt.run_main_stats(move || {
                let got: Vec<u64> = std::iter::from_fn(|| r.read()).collect();
                assert_eq!(got, (1..8).collect::<Vec<_>>());
            })
            .unwrap();
            let per = writes_per_task(dir.path(), workers, stream);
            let want = std::collections::BTreeMap::from([(*writer.lock().unwrap(), 5)]);
            assert_eq!(per, want, "{flags} on {workers} worker(s)");
        }
    }
}

/// The log gives back the order of a task's reads and writes exactly, period
/// after period, however its periods begin (a task keeps its ends' entries
/// across periods, and a period's record lists them in the order its ops
/// need) and while it opens more streams than its entries hold: a mixer of
/// four streams and many of its own, and a relay after it whose periods
/// often begin with the write it blocked on.
#[test]
fn full_mode_keeps_each_tasks_message_order() {
    use std::sync::{Arc, Mutex};
    // The mixer's script: 0/1 read input a/b, 2/3 write output c/d, 4 a
    // stream of its own, written once and read back.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let script: Vec<u8> = (0..3000)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if i % 40 == 39 {
                4
            } else {
                (x % 4) as u8
            }
        })
        .collect();
    let reads_of = |k| script.iter().filter(|&&s| s == k).count() as u64;
    let (na, nb) = (reads_of(0), reads_of(1));
    for flags in [MonitorFlags::FULL, MonitorFlags::ALL] {
        for workers in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let mut rt = monitored(workers, flags, dir.path());
            let done = Arc::new(Mutex::new((0u64, Vec::new())));
            let relayed = Arc::new(Mutex::new((0u64, Vec::new())));
            let (done2, relayed2) = (done.clone(), relayed.clone());
            let script = script.clone();
            rt.run_main_stats(move || {
                let (mut wa, mut ra) = rill::stream::<u64>(2);
                let (mut wb, mut rb) = rill::stream::<u64>(2);
                let (mut wc, mut rc) = rill::stream::<u64>(2);
                let (mut wd, mut rd) = rill::stream::<u64>(2);
                let (mut we, mut re) = rill::stream::<u64>(1);
                rill::spawn("feed-a", move || (0..na).for_each(|i| wa.write(i).unwrap()));
                rill::spawn("feed-b", move || (0..nb).for_each(|i| wb.write(i).unwrap()));
                rill::spawn("relay-c", move || {
                    let mut did = Vec::new();
                    while let Some(v) = rc.read() {
                        did.push((rc.id(), false));
                        we.write(v).unwrap();
                        did.push((we.id(), true));
                    }
                    *relayed2.lock().unwrap() = (rill::current().unwrap().id, did);
                });
                rill::spawn("drain-e", move || while re.read().is_some() {});
                rill::spawn("drain-d", move || while rd.read().is_some() {});
                rill::spawn("mixer", move || {
                    let mut did = Vec::new();
                    for &s in &script {
                        match s {
                            0 => {
                                ra.read().unwrap();
                                did.push((ra.id(), false));
                            }
                            1 => {
                                rb.read().unwrap();
                                did.push((rb.id(), false));
                            }
                            2 => {
                                wc.write(1).unwrap();
                                did.push((wc.id(), true));
                            }
                            3 => {
                                wd.write(1).unwrap();
                                did.push((wd.id(), true));
                            }
                            _ => {
                                let (mut w, mut r) = rill::stream::<u64>(1);
                                w.write(1).unwrap();
                                did.push((w.id(), true));
                                r.read().unwrap();
                                did.push((r.id(), false));
                            }
                        }
                    }
                    *done2.lock().unwrap() = (rill::current().unwrap().id, did);
                });
            })
            .unwrap();
            for (name, done) in [("mixer", &done), ("relay", &relayed)] {
                let (task, did) = std::mem::take(&mut *done.lock().unwrap());
                let logged = logged_ops(dir.path(), workers, task);
                let at = format!("{name}, {flags} on {workers} worker(s)");
                assert_eq!(logged.len(), did.len(), "{at}");
                let first_diff = logged.iter().zip(&did).position(|(a, b)| a != b);
                assert_eq!(first_diff, None, "{at}");
            }
        }
    }
}

/// Messages `task` moved per (stream, write), over all logs in `dir`.
fn moved_per_task(
    dir: &std::path::Path,
    workers: usize,
    task: u64,
) -> std::collections::BTreeMap<(u64, bool), u64> {
    let mut m = std::collections::BTreeMap::new();
    for w in 0..workers {
        let log = read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        for r in &log.records {
            if let Record::Period { task: t, io, .. } = r {
                if *t == task {
                    for x in io {
                        *m.entry((x.stream, false)).or_default() += u64::from(x.reads);
                        *m.entry((x.stream, true)).or_default() += u64::from(x.writes);
                    }
                }
            }
        }
    }
    m.retain(|_, n| *n > 0);
    m
}

/// The reads and writes of `task` as its periods in the logs of `dir` give
/// them, in order: (stream, write) per message.
fn logged_ops(dir: &std::path::Path, workers: usize, task: u64) -> Vec<(u64, bool)> {
    let mut periods = Vec::new();
    for w in 0..workers {
        let log = read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        for r in log.records {
            if let Record::Period {
                start,
                task: t,
                io,
                ops,
                ..
            } = r
            {
                if t == task {
                    periods.push((start, io, ops));
                }
            }
        }
    }
    periods.sort_by_key(|p| p.0);
    assert!(periods.len() > 100, "task {task} blocks often");
    periods
        .iter()
        .flat_map(|(_, io, ops)| {
            ops.iter().flat_map(|op| {
                let s = io[usize::from(op.io_index)].stream;
                std::iter::repeat_n((s, op.write), op.count as usize)
            })
        })
        .collect()
}

/// Tasks taken by work stealing keep their messages and their order in the
/// log: what a task records goes to the recorder of the worker that runs it
/// (`src/tls.rs`), and a task that ran never moves again.
#[test]
fn stolen_tasks_keep_their_message_order() {
    use std::sync::{Arc, Mutex};
    const CHAINS: usize = 8;
    const MESSAGES: u64 = 3000;
    for flags in MODES {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = Runtime::builder()
            .workers(2)
            .pin(false)
            .mapping(rill::Mapping::Steal)
            .monitor(MonitorConfig::new(flags, dir.path()))
            .build()
            .unwrap();
        let relays = Arc::new(Mutex::new(Vec::new()));
        let relays2 = relays.clone();
        rt.run_main_stats(move || {
            for _ in 0..CHAINS {
                let (mut w, mut r) = rill::stream::<u64>(2);
                let (mut w2, mut r2) = rill::stream::<u64>(1);
                // Every task starts on worker 0, so that worker 1 steals.
                rill::try_spawn_on(0, "src", move || {
                    (0..MESSAGES).for_each(|i| w.write(i).unwrap())
                })
                .unwrap();
                let relays3 = relays2.clone();
                rill::try_spawn_on(0, "relay", move || {
                    let mut did = Vec::new();
                    let ids = (r.id(), w2.id());
                    while let Some(v) = r.read() {
                        did.push((r.id(), false));
                        if v % 7 == 0 {
                            rill::yield_now();
                        }
                        w2.write(v).unwrap();
                        did.push((w2.id(), true));
                    }
                    let me = rill::current().unwrap().id;
                    relays3.lock().unwrap().push((me, ids, did));
                })
                .unwrap();
                rill::try_spawn_on(0, "sink", move || {
                    let mut n = 0;
                    while r2.read().is_some() {
                        n += 1;
                    }
                    assert_eq!(n, MESSAGES);
                })
                .unwrap();
            }
            // Keep worker 0 busy a moment, so that worker 1 finds the new
            // tasks still waiting and steals some.
            std::thread::sleep(std::time::Duration::from_millis(20));
        })
        .unwrap();
        // Tasks that ran on worker 1 were stolen (all were spawned on worker
        // 0); only tasks that never ran are stolen, so none ran on both.
        let ran_on = |w: usize| -> std::collections::BTreeSet<u64> {
            let log = read_log(dir.path().join(format!("worker-{w}.rlog"))).unwrap();
            log.records
                .iter()
                .filter_map(|r| match r {
                    Record::Period { task, .. } => Some(*task),
                    _ => None,
                })
                .collect()
        };
        let (on0, on1) = (ran_on(0), ran_on(1));
        assert_eq!(
            on0.intersection(&on1).count(),
            0,
            "{flags}: a started task moved"
        );
        assert!(!on1.is_empty(), "{flags}: no task was stolen");
        for (task, (input, output), did) in std::mem::take(&mut *relays.lock().unwrap()) {
            let moved = moved_per_task(dir.path(), 2, task);
            let want = std::collections::BTreeMap::from([
                ((input, false), MESSAGES),
                ((output, true), MESSAGES),
            ]);
            assert_eq!(moved, want, "task {task}, {flags}");
            if !flags.contains(MonitorFlags::MESSAGE) {
                continue;
            }
            let logged = logged_ops(dir.path(), 2, task);
            assert_eq!(logged.len(), did.len(), "task {task}, {flags}");
            let first_diff = logged.iter().zip(&did).position(|(a, b)| a != b);
            assert_eq!(first_diff, None, "task {task}, {flags}");
        }
    }
}
