//! Summary numbers on synthetic runs with hand-computed answers.

mod common;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Op, Record};
use rill_monitor::{load_run, summarize, Summary};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

fn pipeline_summary(timed: bool, cal: Calibration) -> (Summary, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), timed, cal);
    let run = load_run(dir.path()).unwrap();
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    (summarize(&run), dir)
}

#[test]
fn workers_tasks_streams_exact() {
    let (s, _d) = pipeline_summary(false, Calibration::nanos());
    assert_eq!(s.worker_count, 2);
    assert_eq!(s.span_ns, 140);
    let w0 = &s.workers[0];
    assert_eq!(
        (
            w0.worker,
            w0.span_ns,
            w0.busy_ns,
            w0.wait_ns,
            w0.waiting_events
        ),
        (0, 140, 57, 55, 2)
    );
    // The sink's period at 120 follows its blocked period at 90 and the
    // worker's wait between them without a gap: the log's shape of a spin
    // before a block (a period more, no dispatch).
    assert_eq!((w0.unaccounted_ns, w0.dispatches, w0.spins), (28, 4, 1));
    let w1 = &s.workers[1];
    assert_eq!(
        (
            w1.worker,
            w1.span_ns,
            w1.busy_ns,
            w1.wait_ns,
            w1.waiting_events
        ),
        (1, 100, 36, 45, 2)
    );
    // The same for the relay at 65.
    assert_eq!((w1.unaccounted_ns, w1.dispatches, w1.spins), (19, 1, 1));

    let names: Vec<&str> = s.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["relay", "src", "sink"], "heaviest first");
    let relay = &s.tasks[0];
    assert_eq!(
        (relay.task, relay.total_ns, relay.dispatches),
        (RELAY, 36, 1)
    );
    assert_eq!(relay.spins, 1);
    assert!(close(relay.mean_ns, 18.0), "per period");
    assert_eq!((relay.reads, relay.writes, relay.worker), (3, 3, Some(1)));
    let sink = &s.tasks[2];
    assert_eq!((sink.total_ns, sink.dispatches, sink.spins), (25, 2, 1));
    assert!(close(sink.mean_ns, 25.0 / 3.0));
    assert_eq!(sink.last_state.as_deref(), Some("end"));

    assert_eq!(s.streams.len(), 2);
    let a = &s.streams[0];
    assert_eq!((a.stream, a.capacity), (S_IN, Some(2)));
    assert_eq!(
        (a.writer.as_deref(), a.reader.as_deref()),
        (Some("src"), Some("relay"))
    );
    assert_eq!(
        (a.written, a.read, a.writer_blocked, a.reader_blocked),
        (3, 3, 1, 1)
    );
    let b = &s.streams[1];
    assert_eq!((b.stream, b.capacity), (S_OUT, Some(4)));
    assert_eq!(
        (b.written, b.read, b.writer_blocked, b.reader_blocked),
        (3, 3, 0, 2)
    );

    assert_eq!(s.events, 36);
    assert!(s.bytes > 2 * 48);
    assert!(close(s.bytes_per_event, s.bytes as f64 / 36.0));
    let tp = s.throughput.as_ref().unwrap();
    assert_eq!((tp.basis.as_str(), tp.count), ("outputs", 3));
    assert!(close(tp.per_sec, 3.0 / 140e-9));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
}

#[test]
fn latency_apportioned() {
    let (s, _d) = pipeline_summary(false, Calibration::nanos());
    let l = s.latency.as_ref().expect("MESSAGE is on");
    assert_eq!(l.timing, "apportioned");
    // Outputs 20, 20, 28 (see tests/common/mod.rs).
    assert_eq!(l.all.outputs, 3);
    assert!(close(l.all.mean_ns, 68.0 / 3.0), "{:?}", l.all);
    let var = (2.0 * (20.0f64 - 68.0 / 3.0).powi(2) + (28.0f64 - 68.0 / 3.0).powi(2)) / 3.0;
    assert!(close(l.all.stddev_ns, var.sqrt()), "{:?}", l.all);
    assert!(close(l.all.jitter_ns, 4.0));
    assert!(close(l.all.min_ns, 20.0) && close(l.all.max_ns, 28.0));
    assert_eq!((l.unmatched_reads, l.unread_messages), (0, 0));
    assert_eq!(l.sinks.len(), 1);
    assert_eq!(l.sinks[0].name, "sink");
}

#[test]
fn latency_with_message_times_and_calibration() {
    // 2 ticks per ns: outputs 6, 27, 32 ticks = 3, 13.5, 16 ns.
    let cal = Calibration {
        ticks_per_sec: 2e9,
        start_ticks: 0,
        start_unix_ns: 0,
    };
    let (s, _d) = pipeline_summary(true, cal);
    assert_eq!(s.span_ns, 70);
    assert_eq!(s.workers[0].busy_ns, 29); // 57 ticks, rounded
    let l = s.latency.as_ref().unwrap();
    assert_eq!(l.timing, "message times");
    assert!(close(l.all.mean_ns, 65.0 / 6.0), "{:?}", l.all);
    assert!(close(l.all.jitter_ns, 6.5), "{:?}", l.all);
    assert!(close(l.all.min_ns, 3.0) && close(l.all.max_ns, 16.0));
}

#[test]
fn text_report_mentions_everything() {
    let (s, _d) = pipeline_summary(false, Calibration::nanos());
    let text = s.to_text();
    for needle in [
        "worker",
        "WE",
        "WT",
        "relay",
        "src",
        "sink",
        "throughput",
        "jitter",
        "bytes/event",
    ] {
        assert!(text.contains(needle), "{needle} missing in\n{text}");
    }
    let json = serde_json::to_value(&s).unwrap();
    for key in [
        "busy_ns",
        "wait_ns",
        "unaccounted_ns",
        "waiting_events",
        "dispatches",
        "spins",
        "worker",
    ] {
        assert!(json["workers"][0].get(key).is_some(), "{key}");
    }
    for key in ["events", "bytes", "bytes_per_event", "span_ns"] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[test]
fn flags_limit_the_analyses() {
    let dir = tempfile::tempdir().unwrap();
    let flags = MonitorFlags::SCHEDULER | MonitorFlags::WORKER | MonitorFlags::STREAM;
    let recs = vec![
        Record::WorkerStart { t: 0 },
        period(0, 10, 5, EndState::Ended, vec![io(1, 0, 3)], vec![], vec![]),
        Record::WorkerEnd { t: 20 },
    ];
    write_log(dir.path(), 0, 1, flags, Calibration::nanos(), &recs);
    let s = summarize(&load_run(dir.path()).unwrap());
    assert!(s.latency.is_none());
    assert!(
        s.notes.iter().any(|n| n.contains("MESSAGE")),
        "{:?}",
        s.notes
    );
    assert!(
        s.notes.iter().any(|n| n.contains("MAPPING")),
        "{:?}",
        s.notes
    );
    let tp = s.throughput.clone().unwrap();
    assert_eq!((tp.basis.as_str(), tp.count), ("messages written", 3));
    assert_eq!(s.tasks[0].name, "task#5");
    assert!(s.to_text().contains("MESSAGE"));
}

#[test]
fn migration_and_fan_in_latency() {
    // Two sources feed a merger that reads one message from each, then writes
    // one: its latency takes the slower parent. The merger migrates from
    // worker 0 to worker 1 between its periods.
    let dir = tempfile::tempdir().unwrap();
    let f = MonitorFlags::FULL;
    let c = Calibration::nanos();
    let w0 = vec![
        Record::TaskAssign {
            t: 0,
            task: 1,
            parent: 0,
            worker: 0,
            name: "a".into(),
        },
        Record::TaskAssign {
            t: 0,
            task: 2,
            parent: 0,
            worker: 1,
            name: "b".into(),
        },
        Record::TaskAssign {
            t: 0,
            task: 3,
            parent: 0,
            worker: 0,
            name: "merge".into(),
        },
        Record::TaskAssign {
            t: 0,
            task: 4,
            parent: 0,
            worker: 0,
            name: "out".into(),
        },
        period(
            0,
            10,
            1,
            EndState::Ended,
            vec![io(100, 0, 1)],
            vec![Op::write(0, 1)],
            vec![],
        ),
        // merge reads a's message (latency 10) then yields
        period(
            10,
            14,
            3,
            EndState::Yielded,
            vec![io(100, 1, 0)],
            vec![Op::read(0, 1)],
            vec![],
        ),
        Record::TaskMigrate {
            t: 15,
            task: 3,
            from: 0,
            to: 1,
        },
    ];
    let w1 = vec![
        period(
            0,
            30,
            2,
            EndState::Ended,
            vec![io(101, 0, 1)],
            vec![Op::write(0, 1)],
            vec![],
        ),
        // merge reads b's message (latency 30) and writes (busy 4 -> 10)
        period(
            31,
            37,
            3,
            EndState::Ended,
            vec![io(101, 1, 0), io(102, 0, 1)],
            vec![Op::read(0, 1), Op::write(1, 1)],
            vec![],
        ),
        period(
            40,
            41,
            4,
            EndState::Ended,
            vec![io(102, 1, 0)],
            vec![Op::read(0, 1)],
            vec![],
        ),
    ];
    write_log(dir.path(), 0, 2, f, c, &w0);
    write_log(dir.path(), 1, 2, f, c, &w1);
    let s = summarize(&load_run(dir.path()).unwrap());
    let l = s.latency.unwrap();
    // merge's execution: busy 0 -> 10 (4 + 6); slowest parent 30: 40.
    assert_eq!(l.all.outputs, 1);
    assert!(close(l.all.mean_ns, 40.0), "{:?}", l.all);
    let merge = s.tasks.iter().find(|t| t.name == "merge").unwrap();
    assert_eq!(
        (merge.migrations, merge.dispatches, merge.total_ns),
        (1, 2, 10)
    );
}

#[test]
fn damaged_log_still_summarises() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let p = dir.path().join("worker-1.rlog");
    let data = std::fs::read(&p).unwrap();
    // Cut into the last records (the second relay period and WorkerEnd).
    std::fs::write(&p, &data[..data.len() - 4]).unwrap();
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.warnings.len(), 1, "{:?}", run.warnings);
    let w = &run.warnings[0];
    assert!(
        w.contains("worker-1.rlog") && w.contains("damaged record at byte"),
        "{w}"
    );
    let s = summarize(&run);
    assert_eq!(s.workers[1].dispatches, 1);
    assert_eq!(s.workers[0].dispatches, 4, "5 periods, one a spin");
    let l = s.latency.as_ref().unwrap();
    // The relay's third message was lost with the damaged record.
    assert_eq!(l.unmatched_reads, 1);
    assert_eq!(l.all.outputs, 2);
    assert!(s.to_text().contains("warnings:"));
}

#[test]
fn zero_tail_is_a_clean_end_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let p = dir.path().join("worker-0.rlog");
    let mut data = std::fs::read(&p).unwrap();
    data.extend_from_slice(&[0u8; 100]);
    std::fs::write(&p, &data).unwrap();
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.warnings.len(), 1);
    assert!(run.warnings[0].contains("unwritten"), "{:?}", run.warnings);
    assert_eq!(summarize(&run).events, 36);
}

#[test]
fn latency_is_the_same_when_replayed_after_loading() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let eager = summarize(&load_run(dir.path()).unwrap());
    let opts = rill_monitor::LoadOptions {
        latency: false,
        threads: 1,
        ..Default::default()
    };
    let lazy = summarize(&rill_monitor::load_run_with(dir.path(), &opts).unwrap());
    assert_eq!(
        serde_json::to_value(&eager).unwrap(),
        serde_json::to_value(&lazy).unwrap()
    );
}

#[test]
fn implausible_message_counts_do_not_hang_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let recs = vec![
        period(
            0,
            10,
            1,
            EndState::Yielded,
            vec![io(1, 0, u32::MAX)],
            vec![Op::write(0, u32::MAX)],
            vec![],
        ),
        period(
            10,
            20,
            2,
            EndState::Ended,
            vec![io(1, 3, 0)],
            vec![Op::read(0, 3)],
            vec![],
        ),
    ];
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let s = summarize(&load_run(dir.path()).unwrap());
    let l = s.latency.unwrap();
    assert_eq!(l.skipped_periods, 1);
    assert_eq!(l.unmatched_reads, 3);
    assert_eq!(s.streams[0].written, u64::from(u32::MAX));
}

#[test]
fn stream_names_reach_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        Record::WorkerStart { t: 0 },
        Record::StreamOpen {
            t: 0,
            stream: 7,
            capacity: 3,
            creator: 0,
        },
        Record::StreamName {
            t: 1,
            stream: 7,
            name: "words".into(),
        },
        Record::WorkerEnd { t: 2 },
    ];
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let s = summarize(&load_run(dir.path()).unwrap());
    assert_eq!(s.streams[0].name.as_deref(), Some("words"));
    assert!(s.to_text().contains("words (7)"));
}
