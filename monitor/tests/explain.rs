//! `waits`, `bottleneck` and `map` on synthetic logs with known answers.

mod common;

use std::path::Path;

use common::*;
use rill_log::{EndState, Record, Side};
use rill_monitor::{bottleneck, load_run, plan_mapping, waits, BottleneckOptions, Bottlenecks};

const A: u64 = 1;
const B: u64 = 2;
const S: u64 = 10;

/// A (worker 0) writes S, B (worker 1) reads it:
/// * A: [0,10) writes 4, blocked writing S (full); [30,40) writes 2, ends.
/// * B: [5,8) blocked reading S (empty); [12,20) reads 4, blocked reading
///   again; [45,50) reads 2, ends.
///
/// So B waited for A twice, 12 − 8 + 45 − 20 = 29 ns, and A for B once,
/// 30 − 10 = 20 ns.
fn two_stage(dir: &Path, a: &str, b: &str) {
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, a),
        assign(B, 1, b),
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

#[test]
fn waits_of_a_two_stage_pipe() {
    let dir = tempfile::tempdir().unwrap();
    two_stage(dir.path(), "a", "b");
    let run = load_run(dir.path()).unwrap();
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let w = waits(&run, true);
    assert_eq!(w.streams.len(), 1);
    let s = &w.streams[0];
    assert_eq!(
        (s.stream, s.writer.as_str(), s.reader.as_str()),
        (S, "a", "b")
    );
    assert_eq!(s.messages, 6);
    assert_eq!((s.reader_waits, s.reader_wait_ns), (2, 29));
    assert_eq!((s.writer_waits, s.writer_wait_ns), (1, 20));
    assert!(s.cross_worker);
    assert_eq!((w.total_wait_ns, w.cross_worker_wait_ns), (49, 49));
    assert_eq!(w.open_waits, 0);
    let pair = &w.task_pairs[0];
    assert_eq!((pair.writer.as_str(), pair.reader.as_str()), ("a", "b"));
    assert_eq!(
        (pair.streams, pair.reader_wait_ns, pair.writer_wait_ns),
        (1, 29, 20)
    );
    let wp = &w.worker_pairs[0];
    assert_eq!((wp.writer_worker, wp.reader_worker), (Some(0), Some(1)));
    assert!(wp.cross_worker);

    // The JSON rows carry exactly the documented fields.
    let v = serde_json::to_value(&w).unwrap();
    let mut keys: Vec<&str> = v["streams"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cross_worker",
            "messages",
            "reader",
            "reader_wait_ns",
            "reader_waits",
            "stream",
            "writer",
            "writer_wait_ns",
            "writer_waits"
        ]
    );
    let text = w.to_text(40);
    assert!(text.contains("W(A,B)") && text.contains("29 ns"), "{text}");
}

#[test]
fn a_wait_that_never_ends_runs_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "a"),
        p(0, 10, A, EndState::BlockedInput { stream: S }, vec![]),
        Record::WorkerEnd { t: 100 },
    ];
    write_run(dir.path(), &[w0]);
    let w = waits(&load_run(dir.path()).unwrap(), true);
    assert_eq!(w.open_waits, 1);
    let s = &w.streams[0];
    assert_eq!((s.reader.as_str(), s.writer.as_str()), ("a", "-"));
    assert_eq!((s.reader_waits, s.reader_wait_ns), (1, 90));
    assert!(!s.cross_worker);
    assert!(w.to_text(0).contains("never ended"));
}

#[test]
fn numbered_names_fold_into_groups() {
    // Two pipes p/1 and p/2 with the same shape, one stream each; and a
    // named stream.
    let dir = tempfile::tempdir().unwrap();
    let mut w0 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..2u64 {
        let (a, b, s) = (10 + 2 * k, 11 + 2 * k, 100 + k);
        w0.push(assign(a, 0, &format!("p/{}/a", k + 1)));
        w0.push(assign(b, 0, &format!("p/{}/b", k + 1)));
        w0.push(Record::StreamName {
            t: 0,
            stream: s,
            name: format!("p/{}/link", k + 1),
        });
        w0.push(bind(s, Side::Writer, a));
        w0.push(bind(s, Side::Reader, b));
        let t = 100 * k;
        w0.push(p(t, t + 5, b, EndState::BlockedInput { stream: s }, vec![]));
        w0.push(p(t + 10, t + 20, a, EndState::Ended, vec![io(s, 0, 3)]));
        w0.push(p(t + 30, t + 40, b, EndState::Ended, vec![io(s, 3, 0)]));
    }
    write_run(dir.path(), &[w0]);
    let run = load_run(dir.path()).unwrap();
    let g = waits(&run, true);
    assert!(g.grouped);
    assert_eq!(g.streams.len(), 1, "{:?}", g.streams);
    let s = &g.streams[0];
    assert_eq!((s.writer.as_str(), s.reader.as_str()), ("p/*/a", "p/*/b"));
    assert_eq!(s.stream_name.as_deref(), Some("p/*/link"));
    assert_eq!(
        (s.streams, s.messages, s.reader_waits, s.reader_wait_ns),
        (2, 6, 2, 50)
    );
    let v = serde_json::to_value(&g).unwrap();
    assert_eq!(v["streams"][0]["streams"], 2);

    let one = waits(&run, false);
    assert!(!one.grouped);
    assert_eq!(one.streams.len(), 2);
    assert_eq!(one.task_pairs.len(), 2);
    assert_eq!(one.streams[0].stream_name.as_deref(), Some("p/1/link"));
    let v = serde_json::to_value(&one).unwrap();
    assert!(
        v["streams"][0].get("streams").is_none(),
        "one stream: no count"
    );
}

/// The middle stage of src (worker 0) -> mid (worker 1) -> sink (worker 2)
/// busy 95% of every 100 ns window, its input full and its output empty.
fn middle_bottleneck(dir: &Path, windows: u64) {
    const SRC: u64 = 1;
    const MID: u64 = 2;
    const SINK: u64 = 3;
    const IN: u64 = 10;
    const OUT: u64 = 11;
    let mut w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(SRC, 0, "src"),
        assign(MID, 1, "mid"),
        assign(SINK, 2, "sink"),
        bind(IN, Side::Writer, SRC),
        bind(IN, Side::Reader, MID),
        bind(OUT, Side::Writer, MID),
        bind(OUT, Side::Reader, SINK),
    ];
    let mut w1 = vec![Record::WorkerStart { t: 0 }];
    let mut w2 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..windows {
        let t = 100 * k;
        // src writes one message and finds IN full; mid's read at the end
        // of its period wakes it.
        w0.push(p(
            t,
            t + 2,
            SRC,
            EndState::BlockedOutput { stream: IN },
            vec![io(IN, 0, 1)],
        ));
        w1.push(p(
            t + 2,
            t + 97,
            MID,
            EndState::Yielded,
            vec![woke(IN, 1, 0), woke(OUT, 0, 1)],
        ));
        // sink reads the message mid wrote and finds OUT empty again.
        w2.push(p(
            t + 98,
            t + 99,
            SINK,
            EndState::BlockedInput { stream: OUT },
            vec![io(OUT, 1, 0)],
        ));
    }
    let end = 100 * windows;
    w0.push(Record::WorkerEnd { t: end });
    w1.push(Record::WorkerEnd { t: end });
    w2.push(Record::WorkerEnd { t: end });
    write_run(dir, &[w0, w1, w2]);
}

fn names(b: &Bottlenecks) -> Vec<(String, String)> {
    b.bottlenecks
        .iter()
        .map(|f| (f.kind.clone(), f.name.clone()))
        .collect()
}

/// The findings of the window rules (all but the placement finding).
fn window_findings(b: &Bottlenecks) -> Vec<&rill_monitor::Finding> {
    b.bottlenecks
        .iter()
        .filter(|f| f.predicted_speedup.is_none())
        .collect()
}

#[test]
fn the_busy_middle_stage_is_named_first() {
    let dir = tempfile::tempdir().unwrap();
    middle_bottleneck(dir.path(), 20);
    let run = load_run(dir.path()).unwrap();
    let b = bottleneck(&run, &BottleneckOptions::default());
    assert_eq!(b.windows, 20);
    let first = &b.bottlenecks[0];
    assert_eq!(
        (first.kind.as_str(), first.name.as_str()),
        ("task", "mid"),
        "{b:#?}"
    );
    assert!(first.share > 0.5, "{b:#?}");
    assert!(
        first.evidence.contains("in 20 of 20 windows"),
        "{}",
        first.evidence
    );
    assert!(
        b.verdict.starts_with("mid holds the run back"),
        "{}",
        b.verdict
    );
    let text = b.to_text();
    assert!(text.contains("α = 90%") && text.contains("mid"), "{text}");
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(v["bottlenecks"][0]["kind"], "task");
    assert!(v["verdict"].as_str().unwrap().contains("mid"));

    // A threshold above what the stage reaches: no task finding.
    let strict = BottleneckOptions {
        alpha: 0.99,
        ..BottleneckOptions::default()
    };
    let b = bottleneck(&run, &strict);
    assert!(b.bottlenecks.iter().all(|f| f.kind != "task"), "{b:#?}");
    assert!(b.verdict.contains("mid"), "the busiest task: {}", b.verdict);
}

#[test]
fn a_cross_worker_ping_pong_is_a_stream_bottleneck() {
    // A (worker 0) and B (worker 1) each work 5 ns per 100, and each wake-up
    // costs the woken one 45 ns before its idle worker dispatches it.
    const S1: u64 = 10;
    const S2: u64 = 11;
    let dir = tempfile::tempdir().unwrap();
    let mut w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "ping"),
        assign(B, 1, "pong"),
        bind(S1, Side::Writer, A),
        bind(S1, Side::Reader, B),
        bind(S2, Side::Writer, B),
        bind(S2, Side::Reader, A),
    ];
    let mut w1 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..20u64 {
        let t = 100 * k;
        let reads = u32::from(k > 0);
        w0.push(p(
            t,
            t + 5,
            A,
            EndState::BlockedInput { stream: S2 },
            vec![woke(S1, 0, 1), io(S2, reads, 0)],
        ));
        w1.push(p(
            t + 50,
            t + 55,
            B,
            EndState::BlockedInput { stream: S1 },
            vec![io(S1, 1, 0), woke(S2, 0, 1)],
        ));
    }
    w0.push(Record::WorkerEnd { t: 2000 });
    w1.push(Record::WorkerEnd { t: 2000 });
    write_run(dir.path(), &[w0, w1]);
    let run = load_run(dir.path()).unwrap();
    let b = bottleneck(&run, &BottleneckOptions::default());
    // On one worker the two would not wait for wake-ups across workers:
    // the placement finding comes first, then the window rule's two.
    assert!(b.bottlenecks[0].predicted_speedup.is_some(), "{b:#?}");
    let window = window_findings(&b);
    let found: Vec<(&str, &str)> = window
        .iter()
        .map(|f| (f.kind.as_str(), f.name.as_str()))
        .collect();
    assert_eq!(found.len(), 2, "{b:#?}");
    assert!(found.iter().all(|(k, _)| *k == "stream"), "{found:?}");
    assert!(found.contains(&("stream", "ping -> pong")));
    assert!(found.contains(&("stream", "pong -> ping")));
    assert!(b.verdict.starts_with("Placement"), "{}", b.verdict);
    for f in window {
        assert!(f.evidence.contains("45%"), "{f:?}");
    }
    // Each waited for the other 20 times (the last wait of each is open).
    let w = waits(&run, false);
    assert!(w.streams.iter().all(|s| s.cross_worker));
    assert_eq!(w.open_waits, 2);
    let (rw, rn) = (w.streams[0].reader_waits, w.streams[1].reader_waits);
    assert_eq!((rw, rn), (20, 20));
}

#[test]
fn one_busy_worker_and_an_idle_one_is_load_imbalance() {
    // Three tasks share worker 0 (30% each); worker 1's task works 5%.
    const X: u64 = 1;
    const Y: u64 = 2;
    const V: u64 = 3;
    const Z: u64 = 4;
    let dir = tempfile::tempdir().unwrap();
    let mut w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(X, 0, "x"),
        assign(Y, 0, "y"),
        assign(V, 0, "v"),
        assign(Z, 1, "z"),
    ];
    let mut w1 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..20u64 {
        let t = 100 * k;
        w0.push(p(t, t + 31, X, EndState::Yielded, vec![]));
        w0.push(p(t + 31, t + 62, Y, EndState::Yielded, vec![]));
        w0.push(p(t + 62, t + 94, V, EndState::Yielded, vec![]));
        w1.push(p(t, t + 5, Z, EndState::Yielded, vec![]));
    }
    w0.push(Record::WorkerEnd { t: 2000 });
    w1.push(Record::WorkerEnd { t: 2000 });
    write_run(dir.path(), &[w0, w1]);
    let b = bottleneck(
        &load_run(dir.path()).unwrap(),
        &BottleneckOptions::default(),
    );
    assert_eq!(
        names(&b),
        [("worker".to_owned(), "worker 0".to_owned())],
        "{b:#?}"
    );
    let f = &b.bottlenecks[0];
    assert!(f.evidence.contains("worker 1"), "{}", f.evidence);
    assert!(b.verdict.starts_with("Load imbalance"), "{}", b.verdict);
    assert!(f.share > 0.0);
}

#[test]
fn a_cyclic_ring_terminates_and_names_its_slow_task() {
    // r0 -> r1 -> r2 -> r0, one per worker; r1 works 95 ns of every 100,
    // the others 1 ns, with its input full and its output empty.
    let dir = tempfile::tempdir().unwrap();
    let streams = [10u64, 11, 12]; // stream k: r(k) -> r(k+1)
    let mut logs: Vec<Vec<Record>> = (0..3).map(|_| vec![Record::WorkerStart { t: 0 }]).collect();
    for k in 0..3u64 {
        logs[0].push(assign(k + 1, k as u32, &format!("ring/{k}")));
        logs[0].push(bind(streams[k as usize], Side::Writer, k + 1));
        logs[0].push(bind(streams[k as usize], Side::Reader, (k + 1) % 3 + 1));
    }
    for j in 0..20u64 {
        let t = 100 * j;
        logs[0].push(p(
            t,
            t + 1,
            1,
            EndState::BlockedOutput { stream: 10 },
            vec![io(12, 1, 0), io(10, 0, 1)],
        ));
        logs[1].push(p(
            t + 1,
            t + 96,
            2,
            EndState::Yielded,
            vec![woke(10, 1, 0), woke(11, 0, 1)],
        ));
        logs[2].push(p(
            t + 97,
            t + 98,
            3,
            EndState::BlockedInput { stream: 11 },
            vec![io(11, 1, 0), io(12, 0, 1)],
        ));
    }
    for l in &mut logs {
        l.push(Record::WorkerEnd { t: 2000 });
    }
    write_run(dir.path(), &logs);
    let run = load_run(dir.path()).unwrap();
    for windows in [1, 7, 20, 1000] {
        let opts = BottleneckOptions {
            windows,
            ..BottleneckOptions::default()
        };
        let b = bottleneck(&run, &opts);
        assert_eq!(b.bottlenecks[0].name, "ring/1", "{windows} windows: {b:#?}");
    }
    // Its waits and a mapping terminate too.
    assert_eq!(waits(&run, false).streams.len(), 3);
    let folded = waits(&run, true);
    assert_eq!(folded.streams.len(), 1);
    assert_eq!(folded.streams[0].streams, 3);
    assert_eq!(folded.streams[0].writer, "ring/*");
    let plan = plan_mapping(&run, 2).unwrap();
    assert_eq!(plan.tasks.len(), 3);
}

#[test]
fn the_wake_up_splits_a_wait() {
    // B blocks reading S at 10; A's period [20, 30) writes S and wakes it;
    // B runs again at 50 on a worker that ran nothing else: 20 ns blocked,
    // 20 ns waiting to be dispatched after the wake-up.
    let dir = tempfile::tempdir().unwrap();
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "a"),
        assign(B, 1, "b"),
        bind(S, Side::Writer, A),
        bind(S, Side::Reader, B),
        p(20, 30, A, EndState::Ended, vec![woke(S, 0, 1)]),
        Record::WorkerEnd { t: 100 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 10, B, EndState::BlockedInput { stream: S }, vec![]),
        p(50, 60, B, EndState::Ended, vec![io(S, 1, 0)]),
        Record::WorkerEnd { t: 100 },
    ];
    write_run(dir.path(), &[w0, w1]);
    let run = load_run(dir.path()).unwrap();
    let w = waits(&run, true);
    assert_eq!(
        w.streams[0].reader_wait_ns, 40,
        "the wait runs to the dispatch"
    );
    let b = bottleneck(
        &run,
        &BottleneckOptions {
            windows: 1,
            ..BottleneckOptions::default()
        },
    );
    // 20 ns of 100 after the wake-up, on an idle worker: γ is reached.
    // (The placement finding, first, says a and b belong on one worker.)
    let window = window_findings(&b);
    let found: Vec<(&str, &str)> = window
        .iter()
        .map(|f| (f.kind.as_str(), f.name.as_str()))
        .collect();
    assert_eq!(found, [("stream", "a -> b")], "{b:#?}");
    assert!(window[0].evidence.contains("20%"), "{:?}", window[0]);
    // All waiting: B's 40 ns.
    assert_eq!(b.waiting_ns, 40);
    assert!((window[0].share - 0.5).abs() < 1e-9);
}

#[test]
fn analyses_of_a_run_without_periods_or_names() {
    let dir = tempfile::tempdir().unwrap();
    write_run(
        dir.path(),
        &[vec![
            Record::WorkerStart { t: 0 },
            Record::WorkerEnd { t: 10 },
        ]],
    );
    let run = load_run(dir.path()).unwrap();
    let w = waits(&run, true);
    assert!(w.streams.is_empty());
    let _ = w.to_text(0);
    let b = bottleneck(&run, &BottleneckOptions::default());
    assert!(b.bottlenecks.is_empty());
    assert!(b.verdict.starts_with("Nothing to judge"), "{}", b.verdict);
    let e = plan_mapping(&run, 2).unwrap_err().to_string();
    assert!(e.contains("name no task"), "{e}");
}

#[test]
fn the_two_stage_pipe_maps_onto_one_worker() {
    let dir = tempfile::tempdir().unwrap();
    two_stage(dir.path(), "a#1", "b = 2");
    let run = load_run(dir.path()).unwrap();
    let plan = plan_mapping(&run, 1).unwrap();
    assert!(plan.tasks.iter().all(|t| t.worker == 0));
    assert_eq!(plan.estimate.proposed_cut.streams, 0);
    assert_eq!(plan.estimate.observed_cut.streams, 1);
    assert_eq!(plan.estimate.observed_cut.messages, 6);
    // Busy 20 + 16 on one worker; the observed span is 50.
    assert_eq!(plan.estimate.proposed_ns, 36);
    assert_eq!(plan.estimate.observed_span_ns, 50);
    // Observed: busy 20 and 16, traffic 6 + 3 waits = 9 on each worker;
    // c = (50 - 20) / 9 reproduces the span.
    assert!(plan.estimate.calibrated);
    assert!((plan.estimate.crossing_cost_ns - 30.0 / 9.0).abs() < 1e-9);
    assert_eq!(plan.estimate.observed_mapping_ns, 50);
    let file = plan.to_file();
    let table = rill::ManualTable::parse(&file).unwrap();
    assert_eq!(table.lookup("a#1"), Some(0));
    assert_eq!(table.lookup("b = 2"), Some(0));
    assert_eq!(table.entries().len(), 2);
}

/// Two chains `ch/K/s/0 -> ch/K/s/1 -> ch/K/s/2 -> ch/K/s/3` of 100
/// messages per link, 10 per period, with chain K's task i on worker
/// `on[K][i]`, each worker running its tasks back to back: no task ever
/// waits. Each task's busy time is 100 ns per message at its ends plus
/// `cross` ns per message at its ends that crosses workers.
fn two_chains(dir: &Path, on: [[u32; 4]; 2], cross: u64) {
    let task = |k: u64, i: u64| 1 + 4 * k + i;
    let stream = |k: u64, i: u64| 10 * (k + 1) + i; // link s/i -> s/i+1
    let worker = |k: u64, i: u64| on[k as usize][i as usize];
    let workers = on.iter().flatten().copied().max().unwrap_or(0) + 1;
    let mut logs: Vec<Vec<Record>> = (0..workers)
        .map(|_| vec![Record::WorkerStart { t: 0 }])
        .collect();
    for k in 0..2 {
        for i in 0..4 {
            logs[0].push(assign(task(k, i), worker(k, i), &format!("ch/{k}/s/{i}")));
        }
        for i in 0..3 {
            logs[0].push(bind(stream(k, i), Side::Writer, task(k, i)));
            logs[0].push(bind(stream(k, i), Side::Reader, task(k, i + 1)));
        }
    }
    let mut clock = vec![0u64; workers as usize];
    for _round in 0..10 {
        for k in 0..2 {
            for i in 0..4 {
                let mut io_ = Vec::new();
                let mut ns = 0;
                if i > 0 {
                    io_.push(io(stream(k, i - 1), 10, 0));
                    ns += 10 * 100;
                    if worker(k, i - 1) != worker(k, i) {
                        ns += 10 * cross;
                    }
                }
                if i < 3 {
                    io_.push(io(stream(k, i), 0, 10));
                    ns += 10 * 100;
                    if worker(k, i + 1) != worker(k, i) {
                        ns += 10 * cross;
                    }
                }
                let w = worker(k, i) as usize;
                let t = clock[w];
                logs[w].push(p(t, t + ns, task(k, i), EndState::Yielded, io_));
                clock[w] = t + ns;
            }
        }
    }
    let end = clock.iter().copied().max().unwrap_or(0);
    for l in &mut logs {
        l.push(Record::WorkerEnd { t: end });
    }
    write_run(dir, &logs);
}

/// As round-robin would: four of the six links cross.
const SPREAD: [[u32; 4]; 2] = [[0, 1, 0, 0], [1, 0, 1, 1]];
/// Each chain on a worker of its own.
const APART: [[u32; 4]; 2] = [[0; 4], [1; 4]];

fn placement_finding(b: &Bottlenecks) -> Option<&rill_monitor::Finding> {
    b.bottlenecks.iter().find(|f| f.predicted_speedup.is_some())
}

#[test]
fn crossing_cost_in_busy_time_is_a_placement_finding() {
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), SPREAD, 60);
    let run = load_run(dir.path()).unwrap();
    // Both workers busy 84,000 of 84,000 ns, so no one waits: the window
    // rules find nothing, the model does.
    let plan = plan_mapping(&run, 2).unwrap();
    let e = &plan.estimate;
    assert!((e.busy_crossing_cost_ns - 60.0).abs() < 1e-6, "{e:?}");
    assert_eq!(e.crossing_cost_ns, 0.0, "the busy times fill the span");
    assert_eq!(
        (e.observed_span_ns, e.observed_mapping_ns),
        (84_000, 84_000)
    );
    // Without the crossings each chain weighs 60,000 ns: one per worker.
    assert_eq!(e.proposed_ns, 60_000, "{e:?}");
    assert_eq!(e.proposed_cut.streams, 0);
    assert_eq!((e.observed_cut.messages, e.messages), (400, 600));
    for t in &plan.tasks {
        let chain = &t.name[3..4];
        let mate = plan
            .tasks
            .iter()
            .find(|u| u.name == format!("ch/{chain}/s/0"));
        assert_eq!(Some(t.worker), mate.map(|u| u.worker), "{t:?}");
    }

    let b = bottleneck(&run, &BottleneckOptions::default());
    let f = &b.bottlenecks[0];
    assert_eq!(
        (f.kind.as_str(), f.name.as_str()),
        ("stream", "ch/*/s/* -> ch/*/s/*"),
        "{b:#?}"
    );
    assert!((f.predicted_speedup.unwrap() - 1.4).abs() < 1e-9, "{f:?}");
    assert!((f.share - (1.0 - 60.0 / 84.0)).abs() < 1e-9, "{f:?}");
    for part in [
        "4 of 6 streams ran across workers, carrying 400 of 600 messages (67%)",
        "ch/*/s/* -> ch/*/s/* (4 streams, 400 messages, 67%)",
        "ch/0/s/0 -> ch/0/s/1 (stream 10): 100 messages (17%)",
        "rill-mon map proposes a mapping for 2 workers that crosses 0 stream(s)",
        "60 ns of busy time at each end)",
        "1.40x faster",
    ] {
        assert!(f.evidence.contains(part), "{part:?} in {}", f.evidence);
    }
    assert!(
        b.verdict.starts_with("Placement holds the run back"),
        "{}",
        b.verdict
    );
    assert!(b.verdict.contains("1.40x faster"), "{}", b.verdict);
    let text = b.to_text().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("placement: saves 29% of the predicted time"),
        "{text}"
    );
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(v["bottlenecks"][0]["kind"], "stream");
    assert!(v["bottlenecks"][0]["predicted_speedup"].is_number());
    assert!(v["bottlenecks"].as_array().unwrap()[1..]
        .iter()
        .all(|f| f.get("predicted_speedup").is_none()));
}

#[test]
fn no_placement_finding_without_a_gain_or_crossing_traffic() {
    // Each chain on a worker of its own: no stream crosses.
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), APART, 60);
    let b = bottleneck(
        &load_run(dir.path()).unwrap(),
        &BottleneckOptions::default(),
    );
    assert!(placement_finding(&b).is_none(), "{b:#?}");

    // One worker: nothing can cross.
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), [[0; 4]; 2], 60);
    let b = bottleneck(
        &load_run(dir.path()).unwrap(),
        &BottleneckOptions::default(),
    );
    assert!(placement_finding(&b).is_none(), "{b:#?}");

    // Crossing costs nothing: the spread mapping is as good as any.
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), SPREAD, 0);
    let run = load_run(dir.path()).unwrap();
    assert_eq!(
        plan_mapping(&run, 2)
            .unwrap()
            .estimate
            .busy_crossing_cost_ns,
        0.0
    );
    let b = bottleneck(&run, &BottleneckOptions::default());
    assert!(placement_finding(&b).is_none(), "{b:#?}");

    // A gain under the threshold: crossing costs 10 ns a message, so the
    // search's mapping would save 1 - 60 / 64 = 6%, under the planner's
    // KEEP_MARGIN: the plan is the observed mapping.
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), SPREAD, 10);
    let run = load_run(dir.path()).unwrap();
    let plan = plan_mapping(&run, 2).unwrap();
    let e = &plan.estimate;
    assert_eq!((e.observed_mapping_ns, e.proposed_ns), (64_000, 64_000));
    assert_eq!(e.basis, rill_monitor::Basis::Observed);
    let b = bottleneck(&run, &BottleneckOptions::default());
    assert!(placement_finding(&b).is_none(), "{b:#?}");

    // Load imbalance, not crossing: all on worker 0 but the last task of
    // chain 1, whose one crossing link carries 17% of the messages. The
    // proposal balances the workers (a large gain), which is the worker
    // rule's business.
    let dir = tempfile::tempdir().unwrap();
    two_chains(dir.path(), [[0; 4], [0, 0, 0, 1]], 60);
    let run = load_run(dir.path()).unwrap();
    let e = plan_mapping(&run, 2).unwrap().estimate;
    assert!(
        e.observed_mapping_ns as f64 > 1.5 * e.proposed_ns as f64,
        "{e:?}"
    );
    let b = bottleneck(&run, &BottleneckOptions::default());
    assert!(placement_finding(&b).is_none(), "{b:#?}");
}

/// Two pairs that talk a lot, a→b and c→d, and a little stream a→c; each
/// task busy 10 µs. Observed: {a, b} on worker 0, {c, d} on worker 1, so
/// only the little stream crosses. Ids order the search's walk a, c, d, b:
/// cut into halves that is {a, c} | {d, b}, both heavy streams across, and
/// no single move mends it (each first move unbalances a worker by more
/// than it saves). The plan must not be predicted slower than the observed
/// mapping: it keeps it.
#[test]
fn map_never_proposes_what_it_predicts_slower_than_the_observed_mapping() {
    const TA: u64 = 1;
    const TC: u64 = 2;
    const TB: u64 = 3;
    const TD: u64 = 4;
    const AC: u64 = 10;
    const AB: u64 = 11;
    const CD: u64 = 12;
    let heavy = 1000;
    let dir = tempfile::tempdir().unwrap();
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(TA, 0, "a"),
        assign(TC, 1, "c"),
        assign(TB, 0, "b"),
        assign(TD, 1, "d"),
        bind(AC, Side::Writer, TA),
        bind(AC, Side::Reader, TC),
        bind(AB, Side::Writer, TA),
        bind(AB, Side::Reader, TB),
        bind(CD, Side::Writer, TC),
        bind(CD, Side::Reader, TD),
        p(
            0,
            10_000,
            TA,
            EndState::Ended,
            vec![io(AC, 0, 10), io(AB, 0, heavy)],
        ),
        p(10_000, 20_000, TB, EndState::Ended, vec![io(AB, heavy, 0)]),
        Record::WorkerEnd { t: 20_050 },
    ];
    let w1 = vec![
        Record::WorkerStart { t: 0 },
        p(
            0,
            10_000,
            TC,
            EndState::Ended,
            vec![io(AC, 10, 0), io(CD, 0, heavy)],
        ),
        p(10_000, 20_000, TD, EndState::Ended, vec![io(CD, heavy, 0)]),
        Record::WorkerEnd { t: 20_050 },
    ];
    write_run(dir.path(), &[w0, w1]);
    let run = load_run(dir.path()).unwrap();
    let plan = plan_mapping(&run, 2).unwrap();
    let e = &plan.estimate;
    // c = 50 ns over 10 messages across: 5 ns each.
    assert!((e.crossing_cost_ns - 5.0).abs() < 1e-9, "{e:?}");
    assert_eq!(e.observed_mapping_ns, 20_050);
    assert!(
        e.proposed_ns <= e.observed_mapping_ns,
        "proposed {} ns, observed mapping {} ns",
        e.proposed_ns,
        e.observed_mapping_ns
    );
    assert_eq!(e.basis, rill_monitor::Basis::Observed);
    let worker = |n: &str| plan.tasks.iter().find(|t| t.name == n).unwrap().worker;
    assert_eq!(worker("a"), worker("b"));
    assert_eq!(worker("c"), worker("d"));
    assert_ne!(worker("a"), worker("c"));
    assert_eq!(e.proposed_cut.streams, 1);
    assert!(plan.to_text("m.txt").contains("the observed mapping, kept"));
    assert!(plan
        .to_file()
        .contains("# This mapping is the observed mapping, kept"));
}

/// The same graph observed on one worker and planned for two: the observed
/// mapping (everything on worker 0) is a start, and the moves improve on it.
#[test]
fn map_improves_on_an_observed_mapping_that_fits() {
    let dir = tempfile::tempdir().unwrap();
    let w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(A, 0, "a"),
        assign(B, 0, "b"),
        bind(S, Side::Writer, A),
        bind(S, Side::Reader, B),
        p(0, 10_000, A, EndState::Ended, vec![io(S, 0, 1)]),
        p(10_000, 20_000, B, EndState::Ended, vec![io(S, 1, 0)]),
        Record::WorkerEnd { t: 20_000 },
    ];
    write_run(dir.path(), &[w0]);
    let run = load_run(dir.path()).unwrap();
    let plan = plan_mapping(&run, 2).unwrap();
    let e = &plan.estimate;
    assert!(e.proposed_ns <= e.observed_mapping_ns, "{e:?}");
    assert_eq!(e.proposed_ns, 10_000, "{e:?}");
    assert_ne!(plan.tasks[0].worker, plan.tasks[1].worker);
}
