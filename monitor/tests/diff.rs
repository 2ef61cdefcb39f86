//! `diff` on synthetic runs with known answers.

mod common;

use std::path::Path;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Record, Side};
use rill_monitor::{diff, load_run, Change, RunDiff};

const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;
const S: u64 = 10;

/// Run A: `a` (worker 0) writes S to `b` (worker 1), span 50 ns.
/// * a: [0,10) writes 4, blocked writing; [30,40) writes 2, ends: busy 20,
///   one writer wait of 20 ns.
/// * b: [5,8) blocked reading; [12,20) reads 4, blocked reading; [45,50)
///   reads 2, ends: busy 16, two reader waits of 4 + 25 = 29 ns.
fn run_a(dir: &Path) {
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "a"),
        assign(B, 1, "b"),
        bind(S, Side::Writer, A),
        bind(S, Side::Reader, B),
        p(
            0,
            10,
            A,
            EndState::BlockedOutput { stream: S },
            vec![io(S, 0, 4)],
        ),
        p(30, 40, A, EndState::Ended, vec![io(S, 0, 2)]),
        Record::WorkerEnd { t: 50 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        p(5, 8, B, EndState::BlockedInput { stream: S }, vec![]),
        p(
            12,
            20,
            B,
            EndState::BlockedInput { stream: S },
            vec![io(S, 4, 0)],
        ),
        p(45, 50, B, EndState::Ended, vec![io(S, 2, 0)]),
        Record::WorkerEnd { t: 50 },
    ];
    write_run(dir, &[w0, w1]);
}

/// Run B: the same on worker 0 of three, plus a task `c`; span 30 ns.
/// * a: [0,10) writes 4, blocked writing; [15,20) writes 2, ends: busy 15,
///   one writer wait of 5 ns.
/// * b: [10,14) reads 4, blocked reading; [20,25) reads 2, ends: busy 9,
///   one reader wait of 6 ns.
/// * c: [25,30): busy 5.
/// * worker 1 waits 30 ns; worker 2 does nothing.
fn run_b(dir: &Path) {
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "a"),
        assign(B, 0, "b"),
        assign(C, 0, "c"),
        bind(S, Side::Writer, A),
        bind(S, Side::Reader, B),
        p(
            0,
            10,
            A,
            EndState::BlockedOutput { stream: S },
            vec![io(S, 0, 4)],
        ),
        p(
            10,
            14,
            B,
            EndState::BlockedInput { stream: S },
            vec![io(S, 4, 0)],
        ),
        p(15, 20, A, EndState::Ended, vec![io(S, 0, 2)]),
        p(20, 25, B, EndState::Ended, vec![io(S, 2, 0)]),
        p(25, 30, C, EndState::Ended, vec![]),
        Record::WorkerEnd { t: 30 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        Record::WorkerWait { t: 0, dur: 30 },
        Record::WorkerEnd { t: 30 },
    ];
    let w2 = vec![Record::WorkerStart { t: 0 }, Record::WorkerEnd { t: 30 }];
    write_run(dir, &[w0, w1, w2]);
}

fn both(a: u64, b: u64) -> Change {
    Change::new(Some(a), Some(b))
}

fn diff_of(a: impl Fn(&Path), b: impl Fn(&Path), group: bool) -> RunDiff {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    a(da.path());
    b(db.path());
    let (ra, rb) = (load_run(da.path()).unwrap(), load_run(db.path()).unwrap());
    diff(&ra, &rb, group)
}

#[test]
fn two_runs_side_by_side() {
    let d = diff_of(run_a, run_b, true);
    assert_eq!((d.a.span_ns, d.b.span_ns), (50, 30));
    assert_eq!((d.a.workers, d.b.workers), (2, 3));
    assert!((d.speedup.unwrap() - 50.0 / 30.0).abs() < 1e-12);
    assert_eq!(
        d.headline,
        "B is 1.67x faster than A (50 ns -> 30 ns); the largest change: worker 1 WT +30 ns \
         (0 ns -> 30 ns)."
    );

    let total = |q: &str| d.totals.iter().find(|t| t.quantity == q).unwrap().change;
    assert_eq!(total("wall"), both(50, 30));
    assert_eq!(total("busy"), both(36, 29));
    assert_eq!(total("wait"), both(0, 30));
    assert_eq!(total("waiting_events"), both(0, 1));
    assert_eq!(total("dispatches"), both(5, 5));
    assert_eq!(total("stream_wait"), both(49, 11));
    assert_eq!(total("cross_worker_wait"), both(49, 0));

    // Workers by id; worker 2 is only in B.
    let w: Vec<(u32, Change, Change)> = d
        .workers
        .iter()
        .map(|w| (w.worker, w.busy_ns, w.wait_ns))
        .collect();
    assert_eq!(
        w,
        [
            (0, both(20, 29), both(0, 0)),
            (1, both(16, 0), both(0, 30)),
            (2, Change::new(None, Some(0)), Change::new(None, Some(0))),
        ]
    );
    assert_eq!(d.only_in_b.workers, [2]);
    assert!(d.only_in_a.workers.is_empty());

    // Groups: a and b matched, largest change first; c only in B, last.
    let g: Vec<(&str, Change, Change, Change)> = d
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g.busy_ns, g.waits, g.wait_ns))
        .collect();
    assert_eq!(
        g,
        [
            ("b", both(16, 9), both(2, 1), both(29, 6)),
            ("a", both(20, 15), both(1, 1), both(20, 5)),
            (
                "c",
                Change::new(None, Some(5)),
                Change::new(None, Some(0)),
                Change::new(None, Some(0))
            ),
        ]
    );
    assert_eq!(d.only_in_b.groups, ["c"]);
    assert_eq!(d.only_in_b.groups_busy_ns, 5);
    let pair = &d.pairs[0];
    assert_eq!((pair.writer.as_str(), pair.reader.as_str()), ("a", "b"));
    assert_eq!(pair.wait_ns, both(49, 11));
    assert_eq!((pair.cross_a, pair.cross_b), (Some(true), Some(false)));

    // The ranking: times in both runs, largest change first.
    let ranked: Vec<(&str, &str, i64)> = d
        .changes
        .iter()
        .map(|r| (r.name.as_str(), r.quantity.as_str(), r.change.delta))
        .collect();
    assert_eq!(
        ranked,
        [
            ("worker 1", "WT", 30),
            ("b", "waits", -23),
            ("worker 1", "busy", -16),
            ("a", "waits", -15),
            ("worker 0", "busy", 9),
            ("b", "busy", -7),
            ("a", "busy", -5),
        ]
    );
    let rel: Vec<(&str, &str)> = d
        .relative_changes
        .iter()
        .map(|r| (r.name.as_str(), r.quantity.as_str()))
        .collect();
    assert_eq!(
        rel,
        [
            ("worker 1", "WT"),
            ("worker 1", "busy"),
            ("b", "waits"),
            ("a", "waits"),
            ("worker 0", "busy"),
            ("b", "busy"),
            ("a", "busy"),
        ]
    );
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("A ran on 2 worker(s), B on 3")));
    assert!(d.notes.iter().any(|n| n.contains("only in B")));

    let text = d.to_text(20);
    for needle in [
        "B is 1.67x faster than A",
        "wall time (span)",
        "-20 ns",
        "-40%",
        "-79%",
        "from 0",
        "only in B: worker(s) 2; 1 group(s) busy 5 ns in all: c",
    ] {
        assert!(text.contains(needle), "{needle:?} in\n{text}");
    }

    // The JSON: the documented fields.
    let v = serde_json::to_value(&d).unwrap();
    assert_eq!(v["speedup"].as_f64().unwrap(), 50.0 / 30.0);
    assert_eq!(v["groups"][0]["wait_ns"]["a"], 29);
    assert_eq!(v["groups"][0]["wait_ns"]["delta"], -23);
    assert_eq!(v["groups"][2]["busy_ns"]["a"], serde_json::Value::Null);
    assert_eq!(v["changes"][0]["kind"], "worker");
    assert_eq!(v["changes"][1]["relative"].as_f64().unwrap(), -23.0 / 29.0);
    assert_eq!(v["totals"][0]["quantity"], "wall");
    assert_eq!(v["totals"][0]["delta"], -20);

    // The other way round, B is slower.
    let back = diff_of(run_b, run_a, true);
    assert!(
        back.headline
            .starts_with("B is 1.67x slower than A (30 ns -> 50 ns)"),
        "{}",
        back.headline
    );
    assert_eq!(back.only_in_a.groups, ["c"]);
    assert_eq!(back.only_in_a.workers, [2]);
}

/// `k` pipes `p/I/a` -> `p/I/b` (I = 0..k) on one worker, one after the
/// other: each a works 10 ns and b 4 ns after a reader wait of 10 ns.
fn pipes(dir: &Path, k: u64) {
    let mut w0 = vec![Record::WorkerStart { t: 0 }];
    for i in 0..k {
        let (a, b, s) = (10 + 2 * i, 11 + 2 * i, 100 + i);
        w0.push(assign(a, 0, &format!("p/{i}/a")));
        w0.push(assign(b, 0, &format!("p/{i}/b")));
        w0.push(bind(s, Side::Writer, a));
        w0.push(bind(s, Side::Reader, b));
        let t = 100 * i;
        w0.push(p(t, t, b, EndState::BlockedInput { stream: s }, vec![]));
        w0.push(p(t, t + 10, a, EndState::Ended, vec![io(s, 0, 1)]));
        w0.push(p(t + 10, t + 14, b, EndState::Ended, vec![io(s, 1, 0)]));
    }
    w0.push(Record::WorkerEnd { t: 100 * k });
    write_run(dir, &[w0]);
}

#[test]
fn runs_of_different_sizes_match_by_group() {
    let d = diff_of(|d| pipes(d, 1), |d| pipes(d, 3), true);
    assert!(d.grouped);
    let g: Vec<(&str, Change, Change, Change)> = d
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g.tasks, g.busy_ns, g.wait_ns))
        .collect();
    assert_eq!(
        g,
        [
            ("p/*/b", both(1, 3), both(4, 12), both(10, 30)),
            ("p/*/a", both(1, 3), both(10, 30), both(0, 0)),
        ]
    );
    assert!(d.only_in_a.groups.is_empty() && d.only_in_b.groups.is_empty());
    assert!(
        d.headline
            .starts_with("B is 3.00x slower than A (100 ns -> 300 ns); the largest change: worker 0 busy +200% (14 ns -> 42 ns)."),
        "{}",
        d.headline
    );

    // Task by task: p/0/* match, the others are only in B.
    let one = diff_of(|d| pipes(d, 1), |d| pipes(d, 3), false);
    assert!(!one.grouped);
    assert_eq!(one.only_in_b.groups, ["p/1/a", "p/1/b", "p/2/a", "p/2/b"]);
    assert_eq!(one.only_in_b.groups_busy_ns, 28);
    assert_eq!(
        (one.groups[0].group.as_str(), one.groups[0].busy_ns),
        ("p/0/a", both(10, 10))
    );
    assert!(one
        .to_text(0)
        .contains("only in B: 4 group(s) busy 28 ns in all"));
}

#[test]
fn different_programs_say_so() {
    let d = diff_of(run_a, |d| pipes(d, 2), true);
    assert!(
        d.changes.iter().all(|r| r.kind == "worker"),
        "{:?}",
        d.changes
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("no task group in common")),
        "{:?}",
        d.notes
    );
    assert_eq!(d.only_in_a.groups, ["a", "b"]);
    assert_eq!(d.only_in_b.groups, ["p/*/a", "p/*/b"]);
    let text = d.to_text(20);
    assert!(text.contains("no task group in common"), "{text}");
}

#[test]
fn a_run_against_itself_changes_nothing() {
    let d = diff_of(run_a, run_a, true);
    assert_eq!(
        d.headline,
        "A and B take the same time within 0.5% (50 ns -> 50 ns); no worker or task group changed."
    );
    assert!(d.changes.iter().all(|r| r.change.delta == 0));
    assert!(d.relative_changes.is_empty());
    assert!(d.notes.is_empty(), "{:?}", d.notes);
}

#[test]
fn runs_without_periods_or_names() {
    // No SCHEDULER flag: no periods, no tasks; the runs still compare.
    let empty = |dir: &Path| {
        write_log(
            dir,
            0,
            1,
            MonitorFlags::WORKER,
            Calibration::nanos(),
            &[
                Record::WorkerStart { t: 0 },
                Record::WorkerWait { t: 0, dur: 7 },
                Record::WorkerEnd { t: 10 },
            ],
        );
    };
    let d = diff_of(empty, run_a, true);
    assert!(
        d.headline.starts_with("B is 5.00x slower than A"),
        "{}",
        d.headline
    );
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("different monitoring flags")));
    assert!(d
        .notes
        .iter()
        .any(|n| n.starts_with("A: no SCHEDULER flag")));
    let _ = d.to_text(0);
    serde_json::to_string(&d).unwrap();
}
