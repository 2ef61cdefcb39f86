//! The Perfetto trace, decoded back with an independent reader
//! (`pfdecode`) and checked against the log it came from.

mod common;
mod pfdecode;
mod runs;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::*;
use pfdecode::{decode, Arg, Trace};
use rill_log::{Calibration, EndState};
use rill_monitor::scan::Item;
use rill_monitor::{load_run, write_perfetto_trace, PerfettoOptions, PerfettoStats, RunLog};

fn trace(run: &RunLog, opts: &PerfettoOptions) -> (Trace, PerfettoStats, usize) {
    let mut buf = Vec::new();
    let stats = write_perfetto_trace(run, opts, &mut buf).unwrap();
    assert_eq!(stats.bytes, buf.len() as u64);
    let t = decode(&buf).unwrap_or_else(|e| panic!("the trace does not decode: {e}"));
    assert_eq!(t.packets as u64, stats.packets);
    assert_eq!(t.slices.len() as u64, stats.slices);
    (t, stats, buf.len())
}

/// A period or wait of the log: (worker, start ns, end ns, task or None
/// for a wait, end state, reads, writes).
type Item_ = (u32, u64, u64, Option<u64>, Option<EndState>, u64, u64);

fn log_items(run: &RunLog) -> Vec<Item_> {
    let ns = |t: u64| run.calibration.ticks_to_ns(t - run.t0);
    let mut v = Vec::new();
    for w in &run.workers {
        let mut sc = w.scanner();
        while let Some(item) = sc.next() {
            match item {
                Item::Period(p) => {
                    let reads = sc.io().iter().map(|i| u64::from(i.reads)).sum();
                    let writes = sc.io().iter().map(|i| u64::from(i.writes)).sum();
                    v.push((
                        w.worker,
                        ns(p.start),
                        ns(p.end),
                        Some(p.task),
                        Some(p.end_state),
                        reads,
                        writes,
                    ));
                }
                Item::WorkerWait { t, dur } => {
                    v.push((w.worker, ns(t), ns(t + dur), None, None, 0, 0))
                }
                _ => {}
            }
        }
    }
    v
}

fn uint(s: &pfdecode::Slice, k: &str) -> Option<u64> {
    match s.args.get(k) {
        Some(Arg::Uint(v)) => Some(*v),
        _ => None,
    }
}

/// The integral of a counter track: sum of value x time to the next value.
fn integral(t: &Trace, track: u64) -> f64 {
    let v = &t.counters[&track];
    v.windows(2)
        .map(|w| w[0].1 * (w[1].0 - w[0].0) as f64)
        .sum()
}

#[test]
fn every_period_and_wait_is_a_slice_on_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let run = load_run(dir.path()).unwrap();
    let (t, stats, _) = trace(&run, &PerfettoOptions::default());
    let items = log_items(&run);
    let periods = items.iter().filter(|i| i.3.is_some()).count() as u64;
    assert_eq!(stats.periods, periods);
    assert_eq!(stats.detailed, periods);
    assert_eq!((stats.merged, stats.merged_slices), (0, 0));
    assert_eq!(stats.threshold, None);

    // The layout.
    let root = t.track(&format!("rill run {}", dir.path().display()));
    assert_eq!(t.tracks[&root].parent, None);
    let workers = t.track("workers");
    assert_eq!(t.tracks[&workers].parent, Some(root));
    for name in [
        "run counters",
        "detail",
        "group src",
        "group relay",
        "group sink",
    ] {
        assert_eq!(t.tracks[&t.track(name)].parent, Some(root), "{name}");
    }
    let end_name = |s: EndState| match s {
        EndState::Yielded => "yielded",
        EndState::BlockedInput { .. } => "blocked reading",
        EndState::BlockedOutput { .. } => "blocked writing",
        EndState::BlockedAny => "blocked on a poll",
        EndState::Ended => "ended",
        EndState::Panicked => "panicked",
    };
    for w in &run.workers {
        let track = t.track(&format!("worker {}", w.worker));
        assert_eq!(t.tracks[&track].parent, Some(workers));
        let got = t.on(track);
        let want: Vec<&Item_> = items.iter().filter(|i| i.0 == w.worker).collect();
        assert_eq!(got.len(), want.len(), "worker {}", w.worker);
        for (s, i) in got.iter().zip(&want) {
            assert_eq!((s.ts, s.end), (i.1, i.2), "{s:?}");
            match i.3 {
                Some(task) => {
                    assert_eq!(s.name, run.task_label(task));
                    assert_eq!(uint(s, "task"), Some(task));
                    let state = i.4.unwrap();
                    assert_eq!(s.args["end"], Arg::Str(end_name(state).into()));
                    assert_eq!(uint(s, "reads").unwrap_or(0), i.5);
                    assert_eq!(uint(s, "writes").unwrap_or(0), i.6);
                    if let EndState::BlockedInput { stream } | EndState::BlockedOutput { stream } =
                        state
                    {
                        assert_eq!(uint(s, "stream"), Some(stream));
                    }
                }
                None => assert_eq!(s.name, "idle"),
            }
        }
    }
    // A task's track: its periods (named after the worker), then what it
    // waited on.
    for (&id, info) in &run.tasks {
        let track = t.track(&info.label());
        let group = t.tracks[&track].parent.unwrap();
        assert_eq!(t.tracks[&group].name, format!("group {}", info.label()));
        let slices = t.on(track);
        let runs: Vec<_> = slices
            .iter()
            .filter(|s| s.name.starts_with("running on worker"))
            .collect();
        assert_eq!(runs.len() as u64, info.dispatches, "{}", info.label());
        let mine: Vec<&Item_> = items.iter().filter(|i| i.3 == Some(id)).collect();
        for (s, i) in runs.iter().zip(&mine) {
            assert_eq!(s.name, format!("running on worker {}", i.0));
            assert_eq!((s.ts, s.end), (i.1, i.2));
        }
        // Between two periods, the task is never shown idle: blocked or
        // ready fills the gap.
        for pair in mine.windows(2) {
            let (a, b) = (pair[0].2, pair[1].1);
            let covered: u64 = slices
                .iter()
                .filter(|s| !s.name.starts_with("running") && s.ts >= a && s.end <= b)
                .map(|s| s.end - s.ts)
                .sum();
            assert_eq!(covered, b - a, "{} between {a} and {b}", info.label());
        }
    }
    // The src blocked writing stream 10 to the relay at 30 ns.
    let src = t.on(t.track("src"));
    assert!(
        src.iter()
            .any(|s| s.ts == 30 && s.name == "blocked writing stream 10 to relay"),
        "{src:#?}"
    );
    // Counters: busy workers integrate to the busy time.
    let busy: u64 = run.workers.iter().map(|w| w.stats.busy).sum();
    let got = integral(&t, t.track("busy workers"));
    assert!(
        (got - busy as f64).abs() < 1e-6 * busy as f64 + 1.0,
        "{got} vs {busy}"
    );
    let running: f64 = ["src", "relay", "sink"]
        .iter()
        .map(|g| integral(&t, t.track(&format!("{g}: running tasks"))))
        .sum();
    assert!((running - busy as f64).abs() < 1.0, "{running} vs {busy}");
}

#[test]
fn flows_join_a_waking_period_to_the_woken_task_on_another_worker() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        3,
        None,
        Duration::ZERO,
        3000,
    );
    let run = load_run(dir.path()).unwrap();
    let (t, stats, _) = trace(&run, &PerfettoOptions::default());
    assert_eq!(stats.detailed, stats.periods, "a small run is all detail");
    assert!(stats.flows > 100, "{stats:?}");
    let worker_of: HashMap<u64, String> = t
        .children(t.track("workers"))
        .into_iter()
        .map(|u| (u, t.tracks[&u].name.clone()))
        .collect();
    let mut starts = HashMap::new();
    for s in &t.slices {
        for &f in &s.flows {
            assert!(worker_of.contains_key(&s.track), "flows start on workers");
            starts.insert(f, s);
        }
    }
    assert_eq!(starts.len() as u64, stats.flows);
    let mut ended = 0u64;
    for s in &t.slices {
        for f in &s.ends {
            let from = starts[f];
            assert_ne!(from.track, s.track, "a flow crosses workers");
            assert!(worker_of.contains_key(&s.track));
            assert!(s.ts >= from.ts, "a wake-up precedes the dispatch");
            ended += 1;
        }
    }
    // The arrows land: the woken tasks all ran again, on the other worker
    // (round-robin places each task on one worker). A wake-up is placed at
    // the end of its waker's period, so one whose woken task ran at once on
    // the other worker and ended before that period did has no period
    // after it to land on (the sink's last, in a few runs of many), and one
    // that an earlier wake-up found in another worker's log replaced keeps
    // its start alone: at most 1% of the arrows.
    assert!(ended <= stats.flows, "{stats:?}");
    assert!((stats.flows - ended) * 100 <= stats.flows, "{stats:?}");
    assert!(stats.flows_replaced <= stats.flows - ended, "{stats:?}");
    assert_eq!(stats.cross_wakeups, ended, "{stats:?}");
    // The counter counts every cross-worker wake-up.
    let per_ms = integral(&t, t.track("cross-worker wake-ups")) / 1e6;
    assert!(
        (per_ms - stats.cross_wakeups as f64).abs() < 1e-6 * stats.cross_wakeups as f64 + 1e-9,
        "{per_ms} vs {}",
        stats.cross_wakeups
    );
}

/// Sum of the periods a worker track's slices stand for.
fn periods_shown(t: &Trace, track: u64) -> u64 {
    t.on(track)
        .iter()
        .map(|s| match s.name.as_str() {
            "idle" | "idle (merged)" => uint(s, "periods").unwrap_or(0),
            n if n.ends_with(" (merged)") => uint(s, "periods").unwrap(),
            _ => 1,
        })
        .sum()
}

#[test]
fn dense_buckets_are_merged_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        3,
        None,
        Duration::ZERO,
        5000,
    );
    let run = load_run(dir.path()).unwrap();
    let (full, full_stats, full_len) = trace(&run, &PerfettoOptions::default());
    let buckets = 20;
    let opts = PerfettoOptions {
        detail: 100,
        buckets,
        ..PerfettoOptions::default()
    };
    let (t, stats, len) = trace(&run, &opts);
    assert_eq!(stats.periods, full_stats.periods);
    assert!(stats.merged > stats.periods / 2, "{stats:?}");
    assert_eq!(stats.detailed + stats.merged, stats.periods);
    assert!(len * 5 < full_len, "{len} vs {full_len}");
    for w in &run.workers {
        let name = format!("worker {}", w.worker);
        let track = t.track(&name);
        assert_eq!(
            periods_shown(&t, track),
            periods_shown(&full, full.track(&name)),
            "{name}: every period is in one slice"
        );
        // Per bucket at most a few merged slices and the long periods.
        assert!(t.on(track).len() <= 8 * buckets + stats.detailed as usize);
        let merged = t
            .on(track)
            .iter()
            .filter(|s| s.name.ends_with("(merged)"))
            .count();
        assert!(merged > 0 && merged <= 4 * buckets, "{merged}");
    }
    // The detail track marks the merged stretches with their periods.
    let marks = t.on(t.track("detail"));
    let marked: u64 = marks
        .iter()
        .map(|s| {
            s.name
                .strip_prefix("merged: ")
                .and_then(|r| r.strip_suffix(" periods"))
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(marked >= stats.merged, "{marked} vs {stats:?}");
    assert!(!marks.is_empty());
    // The counters still integrate to the busy time.
    let busy: u64 = run.workers.iter().map(|w| w.stats.busy).sum();
    let got = integral(&t, t.track("busy workers"));
    let busy_ns = run.ns(busy) as f64;
    assert!((got - busy_ns).abs() < 1e-3 * busy_ns, "{got} vs {busy_ns}");
}

#[test]
fn a_window_holds_only_what_overlaps_it() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let run = load_run(dir.path()).unwrap();
    let opts = PerfettoOptions {
        from_ms: Some(60e-6),
        to_ms: Some(90e-6),
        ..PerfettoOptions::default()
    };
    let (t, stats, _) = trace(&run, &opts);
    let items = log_items(&run);
    let in_window = items
        .iter()
        .filter(|i| i.3.is_some() && i.1 >= 60 && i.1 <= 90)
        .count();
    assert_eq!(stats.periods, in_window as u64);
    let workers = t.children(t.track("workers"));
    let mut on_workers = 0;
    for s in &t.slices {
        if t.tracks[&s.track].counter {
            continue;
        }
        if workers.contains(&s.track) {
            on_workers += 1;
        }
        if t.tracks[&s.track].name != "detail" {
            assert!(s.ts >= 60 && s.end <= 90, "{s:?}");
        }
    }
    let overlapping = items.iter().filter(|i| i.2 >= 60 && i.1 <= 90).count();
    assert_eq!(on_workers, overlapping);
}

#[test]
fn counters_per_group_split_the_run_counters() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        4,
        None,
        Duration::ZERO,
        2000,
    );
    let run = load_run(dir.path()).unwrap();
    let (t, _, _) = trace(&run, &PerfettoOptions::default());
    // The relays fold into one group with one track per relay.
    let group = t.track("group pipe/relay/*");
    let tasks: Vec<String> = t
        .children(group)
        .into_iter()
        .filter(|u| !t.tracks[u].counter)
        .map(|u| t.tracks[&u].name.clone())
        .collect();
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
    for what in ["running", "ready", "blocked"] {
        let suffix = format!(": {what} tasks");
        for (&u, d) in &t.tracks {
            if d.name.ends_with(&suffix) {
                *sums.entry(what).or_default() += integral(&t, u);
            }
        }
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1.0;
    assert!(close(
        sums["running"],
        integral(&t, t.track("busy workers"))
    ));
    assert!(close(sums["ready"], integral(&t, t.track("ready tasks"))));
    let blocked = integral(&t, t.track("tasks blocked reading"))
        + integral(&t, t.track("tasks blocked writing"));
    assert!(close(sums["blocked"], blocked), "{sums:?} {blocked}");
    // Each task is, at every moment of the run after its first dispatch,
    // running, ready or blocked: the sums add up to its life time.
    assert!(sums["ready"] > 0.0 && sums["blocked"] > 0.0);
}

#[test]
fn damaged_logs_give_a_partial_trace() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        2,
        None,
        Duration::ZERO,
        1000,
    );
    let path = dir.path().join("worker-1.rlog");
    let len = std::fs::metadata(&path).unwrap().len();
    for cut in [len / 2, len - 3] {
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(cut).unwrap();
        let run = load_run(dir.path()).unwrap();
        let (t, stats, _) = trace(&run, &PerfettoOptions::default());
        assert!(stats.periods > 0 && !t.slices.is_empty());
    }
}

#[test]
fn tasks_sharing_a_name_keep_tracks_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let names = vec!["stage".to_owned(), "stage".to_owned()];
    runs::chain(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        &names,
        None,
        Duration::ZERO,
        500,
    );
    let run = load_run(dir.path()).unwrap();
    let (t, _, _) = trace(&run, &PerfettoOptions::default());
    let stages: Vec<u64> = t
        .tracks
        .iter()
        .filter(|(_, d)| d.name == "stage")
        .map(|(&u, _)| u)
        .collect();
    assert_eq!(stages.len(), 2);
    let descs: Vec<&str> = stages
        .iter()
        .map(|u| t.tracks[u].description.as_deref().unwrap())
        .collect();
    assert_ne!(descs[0], descs[1], "each names its task id");
    for u in &stages {
        assert!(t.tracks[u].merge_none);
        assert!(!t.on(*u).is_empty());
    }
}

/// A waker W (task 1, on worker 1) and a task T (task 2, on worker 0) that
/// reads stream 10 from W: T blocks reading over 10..50, then runs over
/// `second` and reads; worker 1's records are `w1` (W's period among them),
/// and `more` are further assignments. The run as loaded, and its directory.
fn wake_run(
    second: (u64, u64),
    more: Vec<rill_log::Record>,
    w1: Vec<rill_log::Record>,
) -> (tempfile::TempDir, RunLog) {
    const W: u64 = 1;
    const T: u64 = 2;
    const S: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let mut w0 = vec![
        rill_log::Record::WorkerStart { t: 0 },
        assign(W, 1, "waker"),
        assign(T, 0, "woken"),
    ];
    w0.extend(more);
    w0.extend([
        bind(S, rill_log::Side::Writer, W),
        bind(S, rill_log::Side::Reader, T),
        p(10, 50, T, EndState::BlockedInput { stream: S }, vec![]),
        p(second.0, second.1, T, EndState::Ended, vec![io(S, 1, 0)]),
        rill_log::Record::WorkerEnd { t: 200 },
    ]);
    let mut w1 = w1;
    w1.insert(0, rill_log::Record::WorkerStart { t: 0 });
    w1.push(rill_log::Record::WorkerEnd { t: 200 });
    write_run(dir.path(), &[w0, w1]);
    let run = load_run(dir.path()).unwrap();
    (dir, run)
}

/// The waker's period starts before the woken task's period but wakes it at
/// its end, after that period blocked: W on worker 1 [0, 100) writes S and
/// wakes its reader; T on worker 0 runs [10, 50), blocks reading S, and runs
/// again at [120, 130). The wake-up at 100 ends T's wait [50, 120): blocked
/// to 100, woken after. (The merged pass meets W first; the trace once gave
/// the wake-up to the wait before T's first period and lost it.)
#[test]
fn a_wake_up_from_a_period_that_started_earlier_ends_the_next_wait() {
    let (_dir, run) = wake_run(
        (120, 130),
        vec![],
        vec![p(0, 100, 1, EndState::Ended, vec![woke(10, 0, 1)])],
    );
    let (t, stats, _) = trace(&run, &PerfettoOptions::default());
    assert_eq!(stats.cross_wakeups, 1, "{stats:?}");
    assert_eq!(stats.flows, 1, "{stats:?}");
    let task = t.track("woken");
    let waits: Vec<(u64, u64, &str)> = t
        .slices
        .iter()
        .filter(|s| s.track == task && s.name != "woken" && !s.name.starts_with("task"))
        .map(|s| (s.ts, s.end, s.name.as_str()))
        .collect();
    assert!(
        waits
            .iter()
            .any(|&(a, b, n)| a == 50 && b == 100 && n.starts_with("blocked reading")),
        "{waits:?}"
    );
    assert!(
        waits
            .iter()
            .any(|&(a, b, n)| a == 100 && b == 120 && n.starts_with("woken")),
        "{waits:?}"
    );
    // The arrow runs from the waker's period to T's dispatch at 120.
    let landed: Vec<u64> = t
        .slices
        .iter()
        .filter(|s| !s.ends.is_empty())
        .map(|s| s.ts)
        .collect();
    assert_eq!(landed, [120]);
}

/// A damaged log's overlapping periods are clipped on their worker's track;
/// a waker whose slice the clip moves later than the woken task's next
/// slice starts its flow there, and the flow does not end before it (the
/// trace would not decode: the fuzz of `hostile.rs` found such a log).
#[test]
fn a_flow_never_ends_before_its_clipped_start() {
    // X's period (task 3) overlaps W's: W's slice is clipped to start at
    // 110, after T's slice at 105.
    let (_dir, run) = wake_run(
        (105, 140),
        vec![assign(3, 1, "other")],
        vec![
            p(0, 110, 3, EndState::Ended, vec![]),
            p(10, 130, 1, EndState::Ended, vec![woke(10, 0, 1)]),
        ],
    );
    // `trace` decodes the trace: a flow ending before its start fails it.
    let (t, stats, _) = trace(&run, &PerfettoOptions::default());
    assert_eq!(stats.cross_wakeups, 1, "{stats:?}");
    assert!(
        t.slices.iter().all(|s| s.ends.is_empty()),
        "no end before 110"
    );
}
