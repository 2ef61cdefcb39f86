//! The `rill-mon` command: outputs and error handling.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use rill_log::{Calibration, EndState, Header, MonitorFlags, Record};

fn mon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rill-mon"))
        .args(args)
        .output()
        .expect("run rill-mon")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Exit status 2 and exactly one line on stderr containing every needle.
fn assert_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.starts_with("rill-mon: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing in {err}");
    }
}

#[test]
fn summary_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let out = mon(&["summary", p(dir.path())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("relay") && text.contains("jitter"), "{text}");
    assert!(out.stderr.is_empty(), "no progress bar for small logs");

    let out = mon(&["summary", p(dir.path()), "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["workers"][1]["busy_ns"], 36);
    assert_eq!(v["workers"][0]["waiting_events"], 2);
    assert_eq!(v["events"], 36);
    assert_eq!(v["span_ns"], 140);
}

#[test]
fn timeline_and_trace_files() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let out_dir = tempfile::tempdir().unwrap();
    let svg = out_dir.path().join("t.svg");
    let out = mon(&["timeline", p(dir.path()), "-o", p(&svg), "--width", "900"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&svg).unwrap();
    check_xml(&s).unwrap();
    assert!(s.contains("width=\"900\""));

    let out = mon(&[
        "timeline",
        p(dir.path()),
        "-o",
        p(&svg),
        "--from",
        "0.00005",
        "--to",
        "0.0001",
    ]);
    assert!(out.status.success());
    check_xml(&std::fs::read_to_string(&svg).unwrap()).unwrap();

    let json = out_dir.path().join("t.json");
    let out = mon(&["trace", p(dir.path()), "-o", p(&json)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    assert!(v["traceEvents"].as_array().unwrap().len() > 10);
}

#[test]
fn trace_format_follows_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let out_dir = tempfile::tempdir().unwrap();
    let is_json = |path: &Path| std::fs::read(path).unwrap().first() == Some(&b'{');
    for (name, extra, json) in [
        ("t.pftrace", &[][..], false),
        ("t.perfetto-trace", &[][..], false),
        ("t.JSON", &[][..], true),
        ("t.trace", &["--format", "json"][..], true),
        ("t.json", &["--format", "perfetto"][..], false),
        (
            "w.pftrace",
            &["--from", "0.00005", "--to", "0.0001"][..],
            false,
        ),
        ("m.pftrace", &["--detail", "2", "--buckets", "3"][..], false),
    ] {
        let file = out_dir.path().join(name);
        let mut args = vec!["trace", p(dir.path()), "-o", p(&file)];
        args.extend_from_slice(extra);
        let out = mon(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert_eq!(is_json(&file), json, "{name}");
        if !json {
            // One line saying what was written.
            assert!(
                err.contains("periods as slices") && err.contains(" MB"),
                "{err}"
            );
        }
    }
    // JSON keeps the window's events only.
    let events = |extra: &[&str]| {
        let file = out_dir.path().join("w.json");
        let mut args = vec!["trace", p(dir.path()), "-o", p(&file)];
        args.extend_from_slice(extra);
        assert!(mon(&args).status.success());
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        v["traceEvents"].as_array().unwrap().len()
    };
    let (all, some) = (
        events(&[]),
        events(&["--from", "0.00006", "--to", "0.00009"]),
    );
    assert!(some < all && some > 5, "{some} of {all}");
    let out = mon(&["trace", p(dir.path()), "-o", "/dev/null", "--from", "10"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no period starts in the window"));
    for (args, needle) in [
        (
            &["--buckets", "0"][..],
            "--buckets must be between 1 and 100000",
        ),
        (&["--buckets", "100001"][..], "--buckets"),
        (&["--from", "2", "--to", "1"][..], "must be after --from"),
        (&["--from=-1"][..], "--from must be a time"),
    ] {
        let mut a = vec!["trace", p(dir.path()), "-o", "/dev/null"];
        a.extend_from_slice(args);
        assert_error(&mon(&a), &[needle]);
    }
    let out = mon(&["trace", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        ".pftrace",
        ".json",
        "--format",
        "--detail",
        "--buckets",
        "flow",
    ] {
        assert!(help.contains(needle), "{needle} missing in --help");
    }
}

#[test]
fn missing_directory() {
    let out = mon(&["summary", "/nonexistent/rill-logs"]);
    assert_error(&out, &["/nonexistent/rill-logs", "not found"]);
}

#[test]
fn directory_without_logs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let out = mon(&["summary", p(dir.path())]);
    assert_error(&out, &["no rill logs", p(dir.path())]);
    let file = dir.path().join("notes.txt");
    let out = mon(&["summary", p(&file)]);
    assert_error(&out, &["not a directory"]);
}

#[test]
fn not_a_rill_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("worker-0.rlog"),
        "hello, world, this is not a log at all!!!!!!!!!!!",
    )
    .unwrap();
    let out = mon(&["summary", p(dir.path())]);
    assert_error(&out, &["worker-0.rlog", "not a rill log"]);
    // A file too short for the magic.
    std::fs::write(dir.path().join("worker-0.rlog"), "RIL").unwrap();
    let out = mon(&["trace", p(dir.path()), "-o", "/dev/null"]);
    assert_error(&out, &["worker-0.rlog"]);
}

#[test]
fn newer_format_version() {
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(MonitorFlags::FULL, 0, 1, Calibration::nanos());
    let mut bytes = h.to_bytes().to_vec();
    bytes[8..10].copy_from_slice(&7u16.to_le_bytes());
    bytes.extend_from_slice(&[1, 0]);
    std::fs::write(dir.path().join("worker-0.rlog"), bytes).unwrap();
    let out = mon(&["timeline", p(dir.path()), "-o", "/dev/null"]);
    assert_error(&out, &["worker-0.rlog", "version 7", "newer"]);
}

#[test]
fn headers_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let recs = [Record::WorkerStart { t: 0 }];
    write_log(
        dir.path(),
        0,
        2,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    write_log(
        dir.path(),
        1,
        3,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let out = mon(&["summary", p(dir.path())]);
    assert_error(&out, &["worker-1.rlog", "worker count"]);
}

#[test]
fn damaged_log_warns_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let recs = [
        Record::WorkerStart { t: 0 },
        period(0, 10, 1, EndState::Ended, vec![], vec![], vec![]),
        Record::WorkerEnd { t: 20 },
    ];
    let path = write_log(
        dir.path(),
        0,
        2,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &recs,
    );
    let mut data = std::fs::read(&path).unwrap();
    data.truncate(data.len() - 3);
    data.push(0xee); // an unknown tag
    std::fs::write(&path, data).unwrap();
    let out = mon(&["summary", p(dir.path())]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("damaged record at byte"), "{text}");
    assert!(text.contains("worker(s) 1 are missing"), "{text}");
}

#[test]
fn bad_arguments() {
    let out = mon(&[
        "timeline",
        "/tmp",
        "-o",
        "/dev/null",
        "--from",
        "5",
        "--to",
        "2",
    ]);
    assert_error(&out, &["--to"]);
    let out = mon(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn waits_bottleneck_and_map() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let ok = |out: &Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout.clone()).unwrap()
    };
    let text = ok(&mon(&["waits", p(dir.path())]));
    assert!(text.contains("W(A,B)") && text.contains("relay"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&mon(&["waits", p(dir.path()), "--json", "--no-group"]))).unwrap();
    assert_eq!(v["streams"].as_array().unwrap().len(), 2);
    assert_eq!(v["grouped"], false);

    let text = ok(&mon(&["bottleneck", p(dir.path()), "--windows", "4"]));
    assert!(
        text.contains("4 windows") && text.contains("α = 90%"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&mon(&["bottleneck", p(dir.path()), "--json"]))).unwrap();
    assert!(
        v["bottlenecks"].is_array() && v["verdict"].is_string(),
        "{v}"
    );

    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("map.txt");
    let text = ok(&mon(&[
        "map",
        p(dir.path()),
        "--workers",
        "2",
        "-o",
        p(&file),
    ]));
    assert!(text.contains("predicted run time"), "{text}");
    let table = rill::ManualTable::load(&file).unwrap();
    assert_eq!(table.entries().len(), 3);
    let v: serde_json::Value = serde_json::from_str(&ok(&mon(&[
        "map",
        p(dir.path()),
        "-w",
        "1",
        "-o",
        p(&file),
        "--json",
    ])))
    .unwrap();
    assert_eq!(v["workers"], 1);
    assert_eq!(v["estimate"]["proposed_cut"]["streams"], 0);
}

#[test]
fn bad_arguments_of_the_explaining_commands() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let d = p(dir.path());
    assert_error(
        &mon(&["bottleneck", d, "--windows", "0"]),
        &["--windows", "1 and 1000"],
    );
    assert_error(
        &mon(&["bottleneck", d, "--windows", "5000"]),
        &["--windows"],
    );
    assert_error(
        &mon(&["bottleneck", d, "--alpha", "1.5"]),
        &["--alpha", "at most 1"],
    );
    assert_error(&mon(&["bottleneck", d, "--beta", "0"]), &["--beta"]);
    assert_error(&mon(&["bottleneck", d, "--gamma", "NaN"]), &["--gamma"]);
    assert_error(
        &mon(&["map", d, "--workers", "0", "-o", "/dev/null"]),
        &["--workers", "between 1"],
    );
    assert_error(
        &mon(&["map", d, "--workers", "2", "-o", "/nonexistent/dir/map.txt"]),
        &["cannot create", "/nonexistent/dir/map.txt"],
    );
    assert_error(&mon(&["waits", "/nonexistent/rill-logs"]), &["not found"]);
    // Clap's own errors (a missing or malformed option) also exit with 2.
    for args in [
        vec!["map", d, "--workers", "2"],
        vec!["map", d, "-o", "/dev/null"],
        vec!["bottleneck", d, "--windows", "many"],
        vec!["waits"],
    ] {
        let out = mon(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("error:") && !err.contains("panicked"), "{err}");
    }
    // A run without task names has nothing to map.
    let empty = tempfile::tempdir().unwrap();
    write_log(
        empty.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &[Record::WorkerStart { t: 0 }],
    );
    assert_error(
        &mon(&["map", p(empty.path()), "--workers", "2", "-o", "/dev/null"]),
        &["name no task"],
    );
}

#[test]
fn diff_of_intact_damaged_and_bad_logs() {
    let a = tempfile::tempdir().unwrap();
    pipeline(a.path(), false, Calibration::nanos());
    let ok = |out: &Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout.clone()).unwrap()
    };
    let text = ok(&mon(&["diff", p(a.path()), p(a.path())]));
    assert!(text.contains("A and B take the same time"), "{text}");
    assert!(
        text.contains("task groups") && text.contains("relay"),
        "{text}"
    );

    // B: the same run, one log damaged and the other cut in half: partial
    // answers with the damage named, not an error.
    let b = tempfile::tempdir().unwrap();
    pipeline(b.path(), false, Calibration::nanos());
    let w0 = b.path().join("worker-0.rlog");
    let mut data = std::fs::read(&w0).unwrap();
    data.truncate(data.len() - 3);
    data.push(0xee); // an unknown tag
    std::fs::write(&w0, data).unwrap();
    let w1 = b.path().join("worker-1.rlog");
    let data = std::fs::read(&w1).unwrap();
    // Half of its records (the header kept whole).
    let h = rill_log::HEADER_LEN;
    std::fs::write(&w1, &data[..h + (data.len() - h) / 2 + 10]).unwrap();
    let text = ok(&mon(&["diff", p(a.path()), p(b.path())]));
    assert!(
        text.contains("B: worker-0.rlog: damaged record at byte"),
        "{text}"
    );
    assert!(text.contains("B: worker-1.rlog"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&mon(&["diff", p(a.path()), p(b.path()), "--json"]))).unwrap();
    assert!(v["a"]["warnings"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(v["b"]["warnings"].as_array().unwrap().len(), 2, "{v}");
    let relay = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "relay")
        .unwrap();
    assert_eq!(relay["busy_ns"]["a"], 36);
    assert!(relay["busy_ns"]["b"].as_u64().unwrap() < 36, "{relay}");

    // Errors name the run and the file, on one line.
    assert_error(
        &mon(&["diff", p(a.path()), "/nonexistent/rill-logs"]),
        &["run B", "/nonexistent/rill-logs", "not found"],
    );
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(bad.path().join("worker-0.rlog"), "not a log, not a log!").unwrap();
    assert_error(
        &mon(&["diff", p(bad.path()), p(a.path())]),
        &["run A", "worker-0.rlog", "not a rill log"],
    );
    let out = mon(&["diff", p(a.path())]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_explains_each_command() {
    for (cmd, needles) in [
        (
            "waits",
            &["W(A,B)", "empty", "full", "--no-group", "next dispatch"][..],
        ),
        (
            "bottleneck",
            &["α", "β", "γ", "windows", "--windows", "share"][..],
        ),
        (
            "diff",
            &["B - A", "group", "--no-group", "--json", "one run only"][..],
        ),
        (
            "map",
            &[
                "--mapping",
                "ManualTable",
                "--workers",
                "estimate",
                "escaped",
            ][..],
        ),
    ] {
        let out = mon(&[cmd, "--help"]);
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        for n in needles {
            assert!(help.contains(n), "{cmd} --help lacks {n:?}:\n{help}");
        }
    }
}

/// Writes the pipeline logs to `$RILL_MON_DEMO` (for looking at the outputs by hand).
#[test]
#[ignore]
fn write_demo_logs() {
    if let Ok(dir) = std::env::var("RILL_MON_DEMO") {
        pipeline(Path::new(&dir), false, Calibration::nanos());
    }
}
