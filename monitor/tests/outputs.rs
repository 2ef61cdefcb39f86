//! The timeline SVG and the Chrome trace.

mod common;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Record};
use rill_monitor::{chrome_trace, load_run, timeline_svg, write_chrome_trace, TimelineOptions};
use serde_json::Value;

fn pipeline_run() -> (rill_monitor::RunLog, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    (load_run(dir.path()).unwrap(), dir)
}

#[test]
fn timeline_has_a_lane_per_worker_and_labels() {
    let (run, _d) = pipeline_run();
    let svg = timeline_svg(&run, &TimelineOptions::default());
    let names = check_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert_eq!(names[0], "svg");
    assert_eq!(svg.matches("class=\"lane\"").count(), 2);
    assert!(svg.contains(">worker 0</text>") && svg.contains(">worker 1</text>"));
    // Every period and wait has a tooltip; wide ones a label with the end state.
    assert_eq!(svg.matches("ended ").count(), 7, "7 periods");
    assert_eq!(svg.matches("waiting: ").count(), 4, "4 waits");
    for label in ["relay (input)", "src (output)", "sink (end)", "relay (end)"] {
        assert!(svg.contains(&format!(">{label}</text>")), "{label}");
    }
    for key in ["waiting", "unaccounted", ">src<", ">relay<", ">sink<"] {
        assert!(svg.contains(key), "legend lacks {key}");
    }
    assert!(svg.contains("fill=\"#a0a0a0\""), "waits are grey");
    // Colours are stable per task.
    assert_eq!(rill_monitor::task_colour(2), rill_monitor::task_colour(2));
    assert_ne!(rill_monitor::task_colour(1), rill_monitor::task_colour(2));
    // Time axis in ms.
    assert!(svg.contains("(ms)"));
}

#[test]
fn timeline_window() {
    let (run, _d) = pipeline_run();
    let opts = TimelineOptions {
        from_ms: Some(60e-6),
        to_ms: Some(90e-6),
        width_px: 800,
        ..TimelineOptions::default()
    };
    let svg = timeline_svg(&run, &opts);
    check_xml(&svg).unwrap();
    assert!(svg.contains("width=\"800\""));
    // In the window: src's second period, relay's second, sink's second (and
    // the edges of the waits); src's first period [10, 30] ns is not.
    assert!(svg.contains("ended end"));
    assert!(!svg.contains("ended output"), "{svg}");
}

#[test]
fn many_short_periods_are_merged_per_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let mut recs = vec![
        Record::WorkerStart { t: 0 },
        Record::TaskAssign {
            t: 0,
            task: 7,
            parent: 0,
            worker: 0,
            name: "tiny<&>".into(),
        },
    ];
    for k in 0..20_000u64 {
        recs.push(period(
            10 + 2 * k,
            11 + 2 * k,
            7,
            EndState::Yielded,
            vec![],
            vec![],
            vec![],
        ));
    }
    // One long period at the end, wide enough for a label.
    recs.push(period(
        50_000,
        80_000,
        7,
        EndState::Ended,
        vec![],
        vec![],
        vec![],
    ));
    recs.push(Record::WorkerEnd { t: 80_000 });
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let run = load_run(dir.path()).unwrap();
    let svg = timeline_svg(
        &run,
        &TimelineOptions {
            width_px: 500,
            ..TimelineOptions::default()
        },
    );
    check_xml(&svg).unwrap();
    let blocks = svg.matches("short periods").count();
    assert!(blocks > 50 && blocks < 400, "{blocks} merged blocks");
    assert!(svg.contains("url(#many)") && svg.contains("many short periods"));
    assert!(svg.len() < 200_000, "{} bytes", svg.len());
    assert!(svg.contains("tiny&lt;&amp;&gt;"), "names are escaped");
}

fn spans_by_tid(v: &Value) -> std::collections::BTreeMap<u64, Vec<(f64, f64)>> {
    let mut m = std::collections::BTreeMap::<u64, Vec<(f64, f64)>>::new();
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            m.entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()));
        }
    }
    m
}

fn assert_no_overlap(v: &Value) {
    for (tid, mut spans) in spans_by_tid(v) {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0 + 1e-9, "tid {tid}: {w:?} overlap");
        }
    }
}

#[test]
fn trace_has_the_required_keys() {
    let (run, _d) = pipeline_run();
    let v = chrome_trace(&run);
    assert_eq!(v["displayTimeUnit"], "ns");
    let evs = v["traceEvents"].as_array().unwrap();
    let threads: Vec<&Value> = evs.iter().filter(|e| e["name"] == "thread_name").collect();
    assert_eq!(threads.len(), 2);
    for t in &threads {
        assert_eq!(t["ph"], "M");
        assert!(t["args"]["name"].as_str().unwrap().starts_with("worker "));
    }
    let x: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(x.len(), 7 + 4);
    for e in &x {
        for k in ["name", "ts", "dur", "pid", "tid"] {
            assert!(e.get(k).is_some(), "{k} in {e}");
        }
        assert_eq!(e["pid"], 1);
        assert!(e["ts"].is_f64() && e["dur"].is_f64(), "{e}");
    }
    let waits = x.iter().filter(|e| e["name"] == "wait").count();
    assert_eq!(waits, 4);
    let relay = x.iter().find(|e| e["name"] == "relay").unwrap();
    assert_eq!(relay["tid"], 1);
    assert_eq!(relay["args"]["task"], 2);
    assert_eq!(relay["args"]["end_state"], "input");
    assert_eq!(relay["args"]["stream"], S_IN);
    assert!((relay["ts"].as_f64().unwrap() - 0.020).abs() < 1e-12);
    assert!((relay["dur"].as_f64().unwrap() - 0.020).abs() < 1e-12);
    assert_no_overlap(&v);

    // The streaming writer produces the same document.
    let mut buf = Vec::new();
    let stats = write_chrome_trace(&run, &mut buf).unwrap();
    assert_eq!((stats.periods, stats.waits, stats.clipped), (7, 4, 0));
    let w: Value = serde_json::from_slice(&buf).unwrap();
    assert_eq!(w, v);
}

#[test]
fn trace_clips_overlapping_spans() {
    let dir = tempfile::tempdir().unwrap();
    let recs = vec![
        period(0, 100, 1, EndState::Yielded, vec![], vec![], vec![]),
        // Overlaps the previous period (a clock glitch): clipped to start at 100.
        period(50, 150, 2, EndState::Yielded, vec![], vec![], vec![]),
        // Entirely inside: dropped.
        period(110, 120, 1, EndState::Ended, vec![], vec![], vec![]),
        Record::WorkerWait { t: 140, dur: 20 },
    ];
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let run = load_run(dir.path()).unwrap();
    let mut buf = Vec::new();
    let stats = write_chrome_trace(&run, &mut buf).unwrap();
    assert_eq!((stats.clipped, stats.dropped), (3, 1));
    let v: Value = serde_json::from_slice(&buf).unwrap();
    assert_no_overlap(&v);
    let spans = &spans_by_tid(&v)[&0];
    assert_eq!(spans.len(), 3);
    assert!((spans[1].0 - 0.1).abs() < 1e-12 && (spans[1].1 - 0.05).abs() < 1e-12);
}
