//! The `rill-mon` command run as a user would (assert_cmd): outputs,
//! `--help`, and errors (exit status 2, one line on stderr, no panic).

mod common;

use std::path::Path;

use assert_cmd::assert::Assert;
use common::*;
use predicates::prelude::*;
use predicates::str::contains;
use rill_log::{Calibration, EndState, Header, MonitorFlags, Record};

/// `rill-mon args`, run.
fn mon(args: &[&str]) -> Assert {
    assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .args(args)
        .assert()
}

/// `rill-mon args`, which must succeed: its stdout.
fn ok(args: &[&str]) -> String {
    let a = mon(args).success();
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// No panic on stderr.
fn no_panic() -> impl Predicate<str> {
    contains("panicked").not()
}

/// rill-mon's own error: exit status 2, nothing on stdout, and exactly one
/// line on stderr, `rill-mon: error: ...`, containing every needle.
fn fails(args: &[&str], needles: &[&str]) {
    let needles: Vec<String> = needles.iter().map(|n| n.to_string()).collect();
    mon(args)
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with("rill-mon: error: "))
        .stderr(predicate::function(|e: &str| {
            e.trim_end().lines().count() == 1
        }))
        .stderr(predicate::function(move |e: &str| {
            needles.iter().all(|n| e.contains(n.as_str()))
        }))
        .stderr(no_panic());
}

/// A usage error as clap reports it: exit status 2, nothing on stdout, and
/// on stderr the error (`error: ...` up to the first blank line: one line,
/// or the line and the missing arguments under it) containing `needle`,
/// then only clap's hints (the usage, `--help`), no panic.
fn usage_error(args: &[&str], needle: &str) {
    let needle = needle.to_owned();
    mon(args)
        .code(2)
        .stdout("")
        .stderr(predicate::function(move |e: &str| {
            let (error, rest) = e.split_once("\n\n").unwrap_or((e, ""));
            error.starts_with("error: ")
                && error.contains(needle.as_str())
                && !rest.contains("error")
                && rest.contains("--help")
        }))
        .stderr(no_panic());
}

#[test]
fn summary_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    // No progress bar for small logs.
    let a = mon(&["summary", p(dir.path())]).success().stderr("");
    let text = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(text.contains("relay") && text.contains("jitter"), "{text}");

    let v: serde_json::Value =
        serde_json::from_str(&ok(&["summary", p(dir.path()), "--json"])).unwrap();
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
    ok(&["timeline", p(dir.path()), "-o", p(&svg), "--width", "900"]);
    let s = std::fs::read_to_string(&svg).unwrap();
    check_xml(&s).unwrap();
    assert!(s.contains("width=\"900\""));

    ok(&[
        "timeline",
        p(dir.path()),
        "-o",
        p(&svg),
        "--from",
        "0.00005",
        "--to",
        "0.0001",
    ]);
    check_xml(&std::fs::read_to_string(&svg).unwrap()).unwrap();

    let json = out_dir.path().join("t.json");
    ok(&["trace", p(dir.path()), "-o", p(&json)]);
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
        let a = mon(&args).success();
        assert_eq!(is_json(&file), json, "{name}");
        if !json {
            // One line saying what was written.
            a.stderr(contains("periods as slices").and(contains(" MB")));
        }
    }
    // JSON keeps the window's events only.
    let events = |extra: &[&str]| {
        let file = out_dir.path().join("w.json");
        let mut args = vec!["trace", p(dir.path()), "-o", p(&file)];
        args.extend_from_slice(extra);
        ok(&args);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        v["traceEvents"].as_array().unwrap().len()
    };
    let (all, some) = (
        events(&[]),
        events(&["--from", "0.00006", "--to", "0.00009"]),
    );
    assert!(some < all && some > 5, "{some} of {all}");
    mon(&["trace", p(dir.path()), "-o", "/dev/null", "--from", "10"])
        .success()
        .stderr(contains("no period starts in the window"));
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
        fails(&a, &[needle]);
    }
    let help = ok(&["trace", "--help"]);
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
    fails(
        &["summary", "/nonexistent/rill-logs"],
        &["/nonexistent/rill-logs", "not found"],
    );
    for cmd in ["waits", "bottleneck", "report", "evolution --csv"] {
        let mut args: Vec<&str> = cmd.split(' ').collect();
        args.insert(1, "/nonexistent/rill-logs");
        fails(&args, &["/nonexistent/rill-logs", "not found"]);
    }
}

#[test]
fn directory_without_logs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    fails(
        &["summary", p(dir.path())],
        &["no rill logs", p(dir.path())],
    );
    let file = dir.path().join("notes.txt");
    fails(&["summary", p(&file)], &["not a directory"]);
}

#[test]
fn not_a_rill_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("worker-0.rlog"),
        "hello, world, this is not a log at all!!!!!!!!!!!",
    )
    .unwrap();
    fails(
        &["summary", p(dir.path())],
        &["worker-0.rlog", "not a rill log"],
    );
    // A file too short for the magic.
    std::fs::write(dir.path().join("worker-0.rlog"), "RIL").unwrap();
    fails(
        &["trace", p(dir.path()), "-o", "/dev/null"],
        &["worker-0.rlog"],
    );
}

#[test]
fn newer_format_version() {
    let dir = tempfile::tempdir().unwrap();
    let h = Header::new(MonitorFlags::FULL, 0, 1, Calibration::nanos());
    let mut bytes = h.to_bytes().to_vec();
    let newer = rill_log::FORMAT_VERSION + 1;
    bytes[8..10].copy_from_slice(&newer.to_le_bytes());
    bytes.extend_from_slice(&[1, 0]);
    std::fs::write(dir.path().join("worker-0.rlog"), bytes).unwrap();
    fails(
        &["timeline", p(dir.path()), "-o", "/dev/null"],
        &["worker-0.rlog", &format!("version {newer}"), "newer"],
    );
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
    fails(
        &["summary", p(dir.path())],
        &["worker-1.rlog", "worker count"],
    );
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
    mon(&["summary", p(dir.path())])
        .success()
        .stdout(contains("damaged record at byte").and(contains("worker(s) 1 are missing")));
}

#[test]
fn bad_arguments() {
    fails(
        &[
            "timeline",
            "/tmp",
            "-o",
            "/dev/null",
            "--from",
            "5",
            "--to",
            "2",
        ],
        &["--to"],
    );
    usage_error(&["frobnicate"], "unrecognized subcommand 'frobnicate'");
    usage_error(
        &["summary", "/tmp", "--frob"],
        "unexpected argument '--frob'",
    );
    usage_error(
        &["timeline", "/tmp", "-o", "x.svg", "--width", "x"],
        "invalid value 'x'",
    );
    usage_error(
        &["trace", "/tmp", "-o", "x.json", "--format", "xml"],
        "invalid value 'xml'",
    );
    // No command: the usage, on stderr, and status 2.
    mon(&[])
        .code(2)
        .stdout("")
        .stderr(contains("Usage: rill-mon <COMMAND>").and(no_panic()));
}

#[test]
fn waits_bottleneck_and_map() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let text = ok(&["waits", p(dir.path())]);
    assert!(text.contains("W(A,B)") && text.contains("relay"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["waits", p(dir.path()), "--json", "--no-group"])).unwrap();
    assert_eq!(v["streams"].as_array().unwrap().len(), 2);
    assert_eq!(v["grouped"], false);

    let text = ok(&["bottleneck", p(dir.path()), "--windows", "4"]);
    assert!(
        text.contains("4 windows") && text.contains("α = 90%"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["bottleneck", p(dir.path()), "--json"])).unwrap();
    assert!(
        v["bottlenecks"].is_array() && v["verdict"].is_string(),
        "{v}"
    );

    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("map.txt");
    let text = ok(&["map", p(dir.path()), "--workers", "2", "-o", p(&file)]);
    assert!(text.contains("predicted run time"), "{text}");
    let table = rill::ManualTable::load(&file).unwrap();
    assert_eq!(table.entries().len(), 3);
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "map",
        p(dir.path()),
        "-w",
        "1",
        "-o",
        p(&file),
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["workers"], 1);
    assert_eq!(v["estimate"]["proposed_cut"]["streams"], 0);
}

#[test]
fn bad_arguments_of_the_explaining_commands() {
    let dir = tempfile::tempdir().unwrap();
    pipeline(dir.path(), false, Calibration::nanos());
    let d = p(dir.path());
    fails(
        &["bottleneck", d, "--windows", "0"],
        &["--windows", "1 and 1000"],
    );
    fails(&["bottleneck", d, "--windows", "5000"], &["--windows"]);
    fails(
        &["bottleneck", d, "--alpha", "1.5"],
        &["--alpha", "at most 1"],
    );
    fails(&["bottleneck", d, "--beta", "0"], &["--beta"]);
    fails(&["bottleneck", d, "--gamma", "NaN"], &["--gamma"]);
    fails(
        &["map", d, "--workers", "0", "-o", "/dev/null"],
        &["--workers", "between 1"],
    );
    fails(
        &["map", d, "--workers", "2", "-o", "/nonexistent/dir/map.txt"],
        &["cannot create", "/nonexistent/dir/map.txt"],
    );
    fails(&["waits", "/nonexistent/rill-logs"], &["not found"]);
    // Clap's own errors (a missing or malformed option) also exit with 2.
    for (args, needle) in [
        (vec!["map", d, "--workers", "2"], "--output"),
        (vec!["map", d, "-o", "/dev/null"], "--workers"),
        (
            vec!["bottleneck", d, "--windows", "many"],
            "invalid value 'many'",
        ),
        (vec!["waits"], "<DIR>"),
    ] {
        usage_error(&args, needle);
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
    fails(
        &["map", p(empty.path()), "--workers", "2", "-o", "/dev/null"],
        &["name no task"],
    );
}

#[test]
fn diff_of_intact_damaged_and_bad_logs() {
    let a = tempfile::tempdir().unwrap();
    pipeline(a.path(), false, Calibration::nanos());
    let text = ok(&["diff", p(a.path()), p(a.path())]);
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
    let text = ok(&["diff", p(a.path()), p(b.path())]);
    assert!(
        text.contains("B: worker-0.rlog: damaged record at byte"),
        "{text}"
    );
    assert!(text.contains("B: worker-1.rlog"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["diff", p(a.path()), p(b.path()), "--json"])).unwrap();
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
    fails(
        &["diff", p(a.path()), "/nonexistent/rill-logs"],
        &["run B", "/nonexistent/rill-logs", "not found"],
    );
    let bad = tempfile::tempdir().unwrap();
    std::fs::write(bad.path().join("worker-0.rlog"), "not a log, not a log!").unwrap();
    fails(
        &["diff", p(bad.path()), p(a.path())],
        &["run A", "worker-0.rlog", "not a rill log"],
    );
    usage_error(&["diff", p(a.path())], "<B>");
}

/// `--help` exits 0, names every command and says what each does; `-V`
/// names the version.
#[test]
fn help_names_every_command() {
    let help = ok(&["--help"]);
    for cmd in [
        "summary",
        "timeline",
        "trace",
        "waits",
        "bottleneck",
        "map",
        "evolution",
        "diff",
        "report",
        "watch",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(cmd)),
            "--help lacks {cmd}:\n{help}"
        );
        // Each command's own help, with its usage line.
        let own = ok(&[cmd, "--help"]);
        assert!(
            own.contains(&format!("Usage: rill-mon {cmd}")),
            "{cmd} --help:\n{own}"
        );
    }
    assert!(help.contains("Analyses the monitoring logs"), "{help}");
    mon(&["help", "summary"])
        .success()
        .stdout(contains("Usage: rill-mon summary"));
    mon(&["-V"])
        .success()
        .stdout(predicate::str::starts_with("rill-mon "));
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
        let help = ok(&[cmd, "--help"]);
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
