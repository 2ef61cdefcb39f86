//! `evolution` on a planted schedule (hand-computed shares per bucket), on
//! real runs in full and sample mode (against the trace's counters and the
//! summary's totals), on logs without periods, and on damaged logs.

mod common;
mod pfdecode;
mod runs;

use std::path::Path;
use std::time::Duration;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Record, Side, StreamIo};
use rill_monitor::{
    evolution, load_run, write_perfetto_trace, Evolution, EvolutionOptions, EvolutionSource,
    PerfettoOptions, RunLog, Series,
};

const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;
const S: u64 = 10;
const T: u64 = 11;

/// The planted schedule, in ns (one tick each), over [0, 50):
///
/// * A (`stage/0`, worker 0) runs [0,10), writing S and waking B at 10;
///   ready [10,30); runs [30,40) and ends.
/// * B (`stage/1`, worker 1) runs [0,5) and blocks reading S: blocked
///   reading [5,10), woken at 10, ready [10,20); runs [20,25) and ends.
/// * C (`writer`, worker 1), created at 0: new [0,25); runs [25,30) and
///   blocks writing T for good: blocked writing [30,50).
/// * Worker 0 waits [10,30) and ends at 40; worker 1 waits [5,20), ends at 50.
fn planted(dir: &Path, flags: MonitorFlags) {
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "stage/0"),
        assign(B, 1, "stage/1"),
        assign(C, 1, "writer"),
        bind(S, Side::Writer, A),
        bind(S, Side::Reader, B),
        bind(T, Side::Writer, C),
        p(
            0,
            10,
            A,
            EndState::Yielded,
            vec![StreamIo {
                woke_peer: true,
                ..io(S, 0, 1)
            }],
        ),
        Record::WorkerWait { t: 10, dur: 20 },
        p(30, 40, A, EndState::Ended, vec![io(S, 0, 1)]),
        Record::WorkerEnd { t: 40 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 5, B, EndState::BlockedInput { stream: S }, vec![]),
        Record::WorkerWait { t: 5, dur: 15 },
        p(20, 25, B, EndState::Ended, vec![io(S, 2, 0)]),
        p(
            25,
            30,
            C,
            EndState::BlockedOutput { stream: T },
            vec![io(T, 0, 4)],
        ),
        Record::WorkerEnd { t: 50 },
    ];
    for (w, recs) in [w0, w1].iter().enumerate() {
        write_log(dir, w as u32, 2, flags, Calibration::nanos(), recs);
    }
}

fn opts(buckets: usize) -> EvolutionOptions {
    EvolutionOptions {
        buckets,
        ..EvolutionOptions::default()
    }
}

fn series<'a>(v: &'a [Series], state: &str) -> &'a Series {
    v.iter()
        .find(|s| s.state == state)
        .unwrap_or_else(|| panic!("no series {state}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn a_planted_schedule_gives_its_shares_bucket_by_bucket() {
    let dir = tempfile::tempdir().unwrap();
    planted(dir.path(), MonitorFlags::FULL);
    let run = load_run(dir.path()).unwrap();
    let ev = evolution(&run, &opts(10)).unwrap();
    assert_eq!(ev.source, EvolutionSource::Periods);
    assert!(!ev.estimated);
    assert_eq!(ev.start_ms.len(), 10);
    assert!(close(ev.bucket_ms, 5e-6), "{}", ev.bucket_ms);
    // Mean tasks in each state per bucket of 5 ns.
    let want: [(&str, [f64; 10]); 5] = [
        ("running", [2., 1., 0., 0., 1., 1., 1., 1., 0., 0.]),
        ("ready", [0., 0., 2., 2., 1., 1., 0., 0., 0., 0.]),
        ("new", [1., 1., 1., 1., 1., 0., 0., 0., 0., 0.]),
        ("blocked_read", [0., 1., 0., 0., 0., 0., 0., 0., 0., 0.]),
        ("blocked_write", [0., 0., 0., 0., 0., 0., 1., 1., 1., 1.]),
    ];
    for (state, means) in want {
        let s = series(&ev.task_states, state);
        assert_eq!(s.mean, means, "{state}");
    }
    assert_eq!(
        ev.live_tasks,
        [3., 3., 3., 3., 3., 2., 2., 2., 1., 1.],
        "live tasks"
    );
    // B blocked reading [5,10): a third of the live tasks' time there.
    let br = series(&ev.task_states, "blocked_read");
    assert!(close(br.share[1], 1.0 / 3.0), "{:?}", br.share);
    // Where tasks live, the shares add up to 1 (each rounded to 1e-6).
    for i in 0..10 {
        let sum: f64 = ev.task_states.iter().map(|s| s.share[i]).sum();
        assert!((sum - 1.0).abs() < 1e-5, "bucket {i}: {sum}");
    }
    // Workers: busy, waiting, between tasks (mean workers).
    let ws = &ev.worker_states;
    assert_eq!(
        series(ws, "busy").mean,
        [2., 1., 0., 0., 1., 1., 1., 1., 0., 0.]
    );
    assert_eq!(
        series(ws, "waiting").mean,
        [0., 1., 2., 2., 1., 1., 0., 0., 0., 0.]
    );
    assert_eq!(
        series(ws, "between_tasks").mean,
        [0., 0., 0., 0., 0., 0., 1., 1., 1., 1.]
    );
    // Shares of the two workers: worker 0 has ended in the last two.
    assert_eq!(series(ws, "between_tasks").share[9], 0.5);
    let w1 = &ev.workers[1];
    assert_eq!(w1.worker, 1);
    assert_eq!(series(&w1.states, "waiting").share[..4], [0., 1., 1., 1.]);
    // Groups: stage/0 and stage/1 fold; busier first.
    assert_eq!(ev.groups[0].group, "stage/*");
    assert_eq!(ev.groups[0].tasks, 2);
    assert_eq!(ev.groups[0].busy_ns, 30);
    assert_eq!(
        ev.groups[0].series.mean,
        [2., 1., 0., 0., 1., 0., 1., 1., 0., 0.]
    );
    assert_eq!(ev.groups[0].series.share[0], 1.0);
    assert_eq!(ev.groups[1].group, "writer");
    assert_eq!(ev.groups[1].series.mean[5], 1.0);
    // Without grouping, each task its own series.
    let flat = evolution(
        &run,
        &EvolutionOptions {
            group: false,
            ..opts(10)
        },
    )
    .unwrap();
    let names: Vec<&str> = flat.groups.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["stage/0", "stage/1", "writer"]);
    // The top group and the rest.
    let top1 = evolution(
        &run,
        &EvolutionOptions {
            top_groups: 1,
            ..opts(10)
        },
    )
    .unwrap();
    assert_eq!(top1.groups.len(), 2);
    assert_eq!(top1.groups[1].group, "other (1 groups)");
}

#[test]
fn a_window_and_coarse_buckets_keep_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    planted(dir.path(), MonitorFlags::FULL);
    let run = load_run(dir.path()).unwrap();
    // One bucket: the whole run's means.
    let one = evolution(&run, &opts(1)).unwrap();
    let m = |s: &str| series(&one.task_states, s).mean[0];
    assert!(close(m("running"), 35.0 / 50.0));
    assert!(close(m("ready"), 30.0 / 50.0));
    assert!(close(m("blocked_write"), 20.0 / 50.0));
    // A window [5, 15) ms... in ns: from 5e-6 ms to 15e-6 ms, 2 buckets.
    let win = evolution(
        &run,
        &EvolutionOptions {
            from_ms: Some(5e-6),
            to_ms: Some(15e-6),
            ..opts(2)
        },
    )
    .unwrap();
    assert_eq!(win.start_ms.len(), 2);
    assert!(close(win.from_ms, 5e-6) && close(win.to_ms, 15e-6));
    assert_eq!(series(&win.task_states, "blocked_read").mean, [1.0, 0.0]);
    assert_eq!(series(&win.task_states, "ready").mean, [0.0, 2.0]);
}

#[test]
fn without_stream_entries_a_blocked_task_is_blocked_to_its_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    // The same schedule without the woke-peer bit: B is blocked reading
    // [5,20), then runs.
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 10, A, EndState::Yielded, vec![io(S, 0, 1)]),
        Record::WorkerEnd { t: 40 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 5, B, EndState::BlockedInput { stream: S }, vec![]),
        p(20, 25, B, EndState::Ended, vec![]),
        Record::WorkerEnd { t: 40 },
    ];
    for (w, recs) in [w0, w1].iter().enumerate() {
        write_log(
            dir.path(),
            w as u32,
            2,
            MonitorFlags::SCHEDULER | MonitorFlags::WORKER,
            Calibration::nanos(),
            recs,
        );
    }
    let run = load_run(dir.path()).unwrap();
    let ev = evolution(&run, &opts(8)).unwrap();
    assert_eq!(
        series(&ev.task_states, "blocked_read").mean,
        [0., 1., 1., 1., 0., 0., 0., 0.]
    );
    assert!(
        ev.unavailable.iter().any(|u| u.contains("new tasks")),
        "{:?}",
        ev.unavailable
    );
}

#[test]
fn logs_without_periods_draw_what_they_have_or_say_why_not() {
    // Worker waits only: the worker panel.
    let dir = tempfile::tempdir().unwrap();
    let recs = vec![
        Record::WorkerStart { t: 0 },
        Record::WorkerWait { t: 10, dur: 30 },
        Record::WorkerEnd { t: 40 },
    ];
    let flags = MonitorFlags::MAPPING | MonitorFlags::WORKER | MonitorFlags::STREAM;
    write_log(dir.path(), 0, 1, flags, Calibration::nanos(), &recs);
    let run = load_run(dir.path()).unwrap();
    let ev = evolution(&run, &opts(4)).unwrap();
    assert_eq!(ev.source, EvolutionSource::WorkerWaits);
    assert!(ev.task_states.is_empty() && ev.live_tasks.is_empty());
    assert_eq!(
        series(&ev.worker_states, "waiting").mean,
        [0.0, 1.0, 1.0, 1.0]
    );
    assert!(ev.unavailable[0].contains("task states"));
    check_xml(&ev.to_svg()).unwrap();
    // Nothing over time: a clear error.
    let dir = tempfile::tempdir().unwrap();
    let flags = MonitorFlags::MAPPING | MonitorFlags::STREAM;
    write_log(dir.path(), 0, 1, flags, Calibration::nanos(), &recs);
    let run = load_run(dir.path()).unwrap();
    let err = evolution(&run, &opts(4)).unwrap_err().to_string();
    assert!(
        err.contains("neither periods") && err.contains("summary"),
        "{err}"
    );
    // Bad bucket counts are refused.
    assert!(evolution(&run, &opts(0)).is_err());
}

#[test]
fn the_outputs_carry_every_series() {
    let dir = tempfile::tempdir().unwrap();
    planted(dir.path(), MonitorFlags::FULL);
    let run = load_run(dir.path()).unwrap();
    let ev = evolution(&run, &opts(10)).unwrap();
    let svg = ev.to_svg();
    check_xml(&svg).unwrap();
    for needle in [
        "Tasks: share of the live tasks",
        "Workers: share of the 2 workers",
        "Running, by task group",
        "Worker 1",
        "blocked reading",
        "stage/*",
        "periods (exact)",
    ] {
        assert!(svg.contains(needle), "{needle}");
    }
    let v: serde_json::Value = serde_json::from_str(&ev.to_json()).unwrap();
    assert_eq!(v["source"], "periods");
    assert_eq!(v["task_states"][3]["state"], "blocked_read");
    assert_eq!(v["groups"][0]["group"], "stage/*");
    let csv = ev.to_csv();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("panel,series,bucket,start_ms,end_ms,mean,share")
    );
    // live + 5 task states + 3 worker states + 2 x 3 per worker + 2 groups.
    assert_eq!(lines.count(), 10 * (1 + 5 + 3 + 6 + 2));
    assert!(csv.contains("\ntasks,blocked_read,1,0.000005,0.00001,1,0.333333\n"));
}

/// The integral of a counter track (value × time to the next value), ns.
fn integral(t: &pfdecode::Trace, track: u64) -> f64 {
    let v = &t.counters[&track];
    v.windows(2)
        .map(|w| w[0].1 * (w[1].0 - w[0].0) as f64)
        .sum()
}

/// A series' time in all (mean × bucket length), ns.
fn time_ns(ev: &Evolution, s: &Series) -> f64 {
    s.mean.iter().map(|m| m * ev.bucket_ms * 1e6).sum()
}

#[test]
fn a_real_run_agrees_with_the_trace_counters_and_the_busy_times() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        3,
        Some(1),
        Duration::from_micros(20),
        400,
    );
    let run = load_run(dir.path()).unwrap();
    let ev = evolution(&run, &opts(64)).unwrap();
    let mut buf = Vec::new();
    write_perfetto_trace(&run, &PerfettoOptions::default(), &mut buf).unwrap();
    let t = pfdecode::decode(&buf).unwrap();
    let rel = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()) + 1e3;
    let evo = |state: &str| time_ns(&ev, series(&ev.task_states, state));
    let trace = |counter: &str| integral(&t, t.track(counter));
    let (run_e, run_t) = (evo("running"), trace("busy workers"));
    assert!(
        rel(run_e, run_t),
        "running: {run_e} ns, the trace's {run_t} ns"
    );
    // The time between periods is the trace's; the evolution splits more
    // waits at their wake-ups (see `replay.rs`), so less of it is blocked.
    let blocked_e = evo("blocked_read") + evo("blocked_write");
    let blocked_t = trace("tasks blocked reading") + trace("tasks blocked writing");
    let (gap_e, gap_t) = (blocked_e + evo("ready"), blocked_t + trace("ready tasks"));
    assert!(
        rel(gap_e, gap_t),
        "between periods: {gap_e} ns, the trace's {gap_t} ns"
    );
    assert!(blocked_e <= blocked_t + 1e3, "{blocked_e} vs {blocked_t}");
    // The workers' busy time is the summary's.
    let busy: u64 = run.workers.iter().map(|w| run.ns(w.stats.busy)).sum();
    let a = time_ns(&ev, series(&ev.worker_states, "busy"));
    assert!(rel(a, busy as f64), "{a} vs {busy}");
    // The slow relay's stage waits: the others block on it.
    let blocked = time_ns(&ev, series(&ev.task_states, "blocked_read"))
        + time_ns(&ev, series(&ev.task_states, "blocked_write"));
    assert!(blocked > 0.0);
    for i in 0..ev.start_ms.len() {
        if ev.live_tasks[i] > 0.0 {
            let sum: f64 = ev.task_states.iter().map(|s| s.share[i]).sum();
            assert!((sum - 1.0).abs() < 1e-4, "bucket {i}: {sum}");
        }
        let w: f64 = ev.worker_states.iter().map(|s| s.share[i]).sum();
        assert!(w <= 1.0 + 1e-4, "bucket {i}: workers {w}");
    }
    assert_eq!(ev.groups[0].group, "pipe/relay/*");
    check_xml(&ev.to_svg()).unwrap();
}

#[test]
fn a_sampled_run_gives_estimated_worker_states_and_running_tasks() {
    // A spinner on worker 0 for 300 ms, nothing on worker 1.
    let mut last = String::new();
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = runs::runtime_with(
            dir.path(),
            2,
            rill::Mapping::RoundRobin,
            MonitorFlags::SAMPLED,
        );
        rt.spawn_on(0, "spin/0", || runs::spin(Duration::from_millis(300)));
        rt.run().unwrap();
        let run = load_run(dir.path()).unwrap();
        let ev = evolution(&run, &opts(10)).unwrap();
        assert_eq!(ev.source, EvolutionSource::Samples);
        assert!(ev.estimated);
        let s = ev.sampling.as_ref().expect("sampling bounds");
        assert!(s.median_per_bucket > 0.0 && s.share_error_pp > 0.0);
        assert!(ev.unavailable.iter().any(|u| u.contains("ready")));
        assert!(ev.notes.iter().any(|n| n.contains("estimates")));
        let svg = ev.to_svg();
        check_xml(&svg).unwrap();
        assert!(svg.contains("sample mode") && svg.contains("not running"));
        // The middle buckets: worker 0 runs, worker 1 does not.
        let bound = s.share_error_pp / 100.0 + 0.05;
        let w0 = series(&ev.workers[0].states, "running");
        let w1 = series(&ev.workers[1].states, "running");
        let mid = ev.start_ms.len() / 2;
        let running = series(&ev.task_states, "running");
        let ok = w0.share[mid] >= 1.0 - bound
            && w1.share[mid] <= bound
            && (running.mean[mid] - 1.0).abs() <= bound
            && ev.groups[0].group == "spin/*";
        if ok {
            // The worker states of a bucket add up to at most 1.
            for w in &ev.workers {
                for i in 0..ev.start_ms.len() {
                    let sum: f64 = w.states.iter().map(|s| s.share[i]).sum();
                    assert!(sum <= 1.0 + 1e-6, "worker {} bucket {i}: {sum}", w.worker);
                }
            }
            return;
        }
        last = format!(
            "worker 0 running {:.3}, worker 1 {:.3}, running tasks {:.3} (bound {bound:.3}); \
             groups {:?}",
            w0.share[mid],
            w1.share[mid],
            running.mean[mid],
            ev.groups.iter().map(|g| &g.group).collect::<Vec<_>>()
        );
    }
    panic!("three tries: {last}");
}

/// A small xorshift generator for damaging logs.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn analyse(dir: &Path) {
    let Ok(run) = load_run(dir) else { return };
    for o in [
        opts(200),
        opts(1),
        EvolutionOptions {
            from_ms: Some(1e-3),
            to_ms: Some(2.0),
            group: false,
            top_groups: 0,
            ..opts(7)
        },
    ] {
        if let Ok(ev) = evolution(&run, &o) {
            check_xml(&ev.to_svg()).unwrap();
            serde_json::from_str::<serde_json::Value>(&ev.to_json()).unwrap();
            let _ = ev.to_csv();
            for s in ev.task_states.iter().chain(&ev.worker_states) {
                assert!(s.mean.iter().chain(&s.share).all(|x| x.is_finite()));
            }
        }
    }
}

#[test]
fn damaged_full_and_sampled_logs_give_partial_answers() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for flags in [MonitorFlags::FULL, MonitorFlags::SAMPLED] {
        let src = tempfile::tempdir().unwrap();
        let rt = runs::runtime_with(src.path(), 2, rill::Mapping::RoundRobin, flags);
        let names = ["pipe/relay/0".to_owned(), "pipe/relay/1".to_owned()];
        // A slow relay, so that the sampler sees it.
        runs::chain_with(rt, &names, Some(0), Duration::from_micros(100), 300);
        let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(src.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".rlog"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        analyse(src.path());
        for _ in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            for (name, bytes) in &files {
                let mut b = bytes.clone();
                match rng.below(3) {
                    // Cut short.
                    0 => b.truncate(rng.below(b.len() as u64) as usize),
                    // Bytes flipped past the header.
                    1 => {
                        for _ in 0..4 {
                            let at = 56 + rng.below(b.len().saturating_sub(56) as u64) as usize;
                            if let Some(x) = b.get_mut(at) {
                                *x ^= 1 << rng.below(8);
                            }
                        }
                    }
                    _ => {}
                }
                std::fs::write(dir.path().join(name), b).unwrap();
            }
            analyse(dir.path());
        }
    }
}

/// `rill-mon args`, run.
fn mon(args: &[&str]) -> assert_cmd::assert::Assert {
    assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .args(args)
        .assert()
}

#[test]
fn the_command_writes_svg_json_and_csv() {
    use predicates::str::{contains, starts_with};
    let dir = tempfile::tempdir().unwrap();
    planted(dir.path(), MonitorFlags::FULL);
    let out = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let svg = out.path().join("e.svg");
    mon(&[
        "evolution",
        d,
        "-o",
        svg.to_str().unwrap(),
        "--buckets",
        "10",
    ])
    .success()
    .stderr(contains("10 buckets"));
    check_xml(&std::fs::read_to_string(&svg).unwrap()).unwrap();
    let r = mon(&["evolution", d, "--json", "--no-group"]).success();
    let v: serde_json::Value = serde_json::from_slice(&r.get_output().stdout).unwrap();
    assert_eq!(v["grouped"], false);
    assert_eq!(v["start_ms"].as_array().unwrap().len(), 200);
    // The CSV reads back as records of the header's seven fields.
    let r = mon(&["evolution", d, "--csv", "--buckets", "5"]).success();
    let mut csv = csv::Reader::from_reader(&r.get_output().stdout[..]);
    assert_eq!(
        csv.headers().unwrap(),
        vec!["panel", "series", "bucket", "start_ms", "end_ms", "mean", "share"]
    );
    let records: Vec<csv::StringRecord> = csv.records().map(|r| r.unwrap()).collect();
    assert!(records.len() >= 5 && records.iter().all(|r| r.len() == 7));
    let file = out.path().join("e.csv");
    mon(&["evolution", d, "-o", file.to_str().unwrap()]).success();
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .starts_with("panel,"));
    // Errors: one line, status 2.
    for args in [
        vec!["evolution", d],
        vec!["evolution", d, "--json", "--buckets", "0"],
        vec!["evolution", d, "--json", "--from", "5", "--to", "1"],
        vec!["evolution", "/nonexistent/rill", "--json"],
    ] {
        mon(&args)
            .code(2)
            .stderr(starts_with("rill-mon: error: "))
            .stderr(predicates::function::function(|e: &str| {
                e.trim_end().lines().count() == 1
            }));
    }
}

/// A sample-mode run's per-worker shares against its workers' summary
/// figures: summed over the buckets, the running time is the busy estimate
/// less the scheduler samples it is charged (both from the same windows).
#[test]
fn sampled_running_time_matches_the_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut rt = runs::runtime_with(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        MonitorFlags::SAMPLED,
    );
    rt.spawn_on(0, "spin/0", || runs::spin(Duration::from_millis(50)));
    rt.spawn_on(1, "spin/1", || runs::spin(Duration::from_millis(50)));
    rt.run().unwrap();
    let run: RunLog = load_run(dir.path()).unwrap();
    let sm = run.sampled.as_ref().unwrap();
    let ev = evolution(&run, &opts(20)).unwrap();
    for (li, w) in run.workers.iter().enumerate() {
        // Each window's running samples, the part inside the run's span.
        let want: f64 = sm
            .windows
            .iter()
            .filter(|x| x.worker == w.worker && x.total > 0 && x.dur > 0)
            .map(|x| {
                let (a, b) = (x.t.max(run.t0), (x.t + x.dur).min(run.t1));
                let inside = b.saturating_sub(a) as f64 / x.dur as f64;
                x.running() as f64 * x.dur as f64 / f64::from(x.total) * inside
            })
            .sum();
        let got = time_ns(&ev, series(&ev.workers[li].states, "running"));
        let want = run.calibration.ticks_to_ns(want as u64) as f64;
        assert!(
            (got - want).abs() <= 1e-3 * want + 1e3,
            "worker {}: {got} vs {want}",
            w.worker
        );
    }
}
