//! `rill-mon report`: the page's sections, escaping, self-containment and
//! well-formedness on synthetic logs of every monitoring mode, and the
//! command on real runs in full, counts-only and sample mode.

mod common;
mod runs;

use std::path::Path;
use std::time::Duration;

use common::*;
use rill_log::{Calibration, EndState, MonitorFlags, Record, Side};
use rill_monitor::{load_run, report_html, ReportOptions};

/// Task names a page must escape.
const SRC_NAME: &str = "src <evil>&amp;\"q'";
const MID_NAME: &str = "mid/<ii>/3";
const SINK_NAME: &str = "sink & co";
const STREAM_NAME: &str = "link \"<x>\"";

const SRC: u64 = 1;
const MID: u64 = 2;
const SINK: u64 = 3;
const IN: u64 = 10;
const OUT: u64 = 11;

/// Every element id on the page is unique (the timelines, the evolution
/// and the bars share one document), and every in-page reference
/// (`href="#x"`, `url(#x)`) names one of them.
fn check_ids(page: &str) {
    let mut ids: Vec<&str> = Vec::new();
    for (at, _) in page.match_indices("id=\"") {
        // An attribute: after whitespace, not inside a longer name.
        if page[..at].ends_with(|c: char| c.is_ascii_whitespace()) {
            let rest = &page[at + 4..];
            ids.push(&rest[..rest.find('"').unwrap()]);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for id in &ids {
        assert!(seen.insert(*id), "the id {id:?} repeats among {ids:?}");
    }
    for (open, close) in [("href=\"#", '"'), ("url(#", ')')] {
        for (at, _) in page.match_indices(open) {
            let rest = &page[at + open.len()..];
            let target = &rest[..rest.find(close).unwrap()];
            assert!(seen.contains(target), "{open}{target} names no element");
        }
    }
}

/// The sections, in page order.
const SECTIONS: [&str; 9] = [
    "findings",
    "summary",
    "utilisation",
    "timeline",
    "evolution",
    "waits",
    "groups",
    "mapping",
    "logs",
];

/// src (worker 0) -> IN -> mid (worker 1) -> OUT -> sink (worker 0), `rounds`
/// rounds of 100 ns in which mid runs 95 ns: mid holds the run back. The
/// names hold markup; `flags` go into the headers (the records stay those
/// of a full run, which is what the analyses read by the flags).
fn pipeline3(dir: &Path, workers: u32, flags: MonitorFlags, rounds: u64) {
    let w1 = if workers > 1 { 1 } else { 0 };
    let mut l0 = vec![
        Record::WorkerStart { t: 0 },
        Record::TaskAssign {
            t: 0,
            task: SRC,
            parent: 0,
            worker: 0,
            name: SRC_NAME.into(),
        },
        Record::TaskAssign {
            t: 0,
            task: MID,
            parent: 0,
            worker: w1,
            name: MID_NAME.into(),
        },
        Record::TaskAssign {
            t: 0,
            task: SINK,
            parent: 0,
            worker: 0,
            name: SINK_NAME.into(),
        },
        Record::StreamName {
            t: 0,
            stream: IN,
            name: STREAM_NAME.into(),
        },
    ];
    for (s, side, t) in [
        (IN, Side::Writer, SRC),
        (IN, Side::Reader, MID),
        (OUT, Side::Writer, MID),
        (OUT, Side::Reader, SINK),
    ] {
        l0.push(Record::StreamBind {
            t: 0,
            stream: s,
            side,
            task: t,
        });
    }
    let mut l1 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..rounds {
        let t = 100 * k;
        l0.push(p(
            t,
            t + 2,
            SRC,
            EndState::BlockedOutput { stream: IN },
            vec![io(IN, 0, 1)],
        ));
        let mid = p(
            t + 2,
            t + 97,
            MID,
            EndState::Yielded,
            vec![woke(IN, 1, 0), woke(OUT, 0, 1)],
        );
        if workers > 1 {
            l1.push(mid);
        } else {
            l0.push(mid);
        }
        l0.push(p(
            t + 97,
            t + 99,
            SINK,
            EndState::BlockedInput { stream: OUT },
            vec![io(OUT, 1, 0)],
        ));
        l0.push(Record::WorkerWait { t: t + 99, dur: 1 });
    }
    let end = 100 * rounds;
    l0.push(Record::WorkerEnd { t: end });
    l1.push(Record::WorkerEnd { t: end });
    let cal = Calibration::nanos();
    write_log(dir, 0, workers, flags, cal, &l0);
    if workers > 1 {
        write_log(dir, 1, workers, flags, cal, &l1);
    }
}

/// The structural checks every page passes; returns the page.
fn check_page(page: &str) {
    check_xml(page).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert!(page.starts_with("<!DOCTYPE html>"));
    check_ids(page);
    // Every section, in order, and in the table of contents.
    let mut at = 0;
    for id in SECTIONS {
        let anchor = format!("<section id=\"{id}\">");
        let pos = page[at..]
            .find(&anchor)
            .unwrap_or_else(|| panic!("no section {id} (in order)"));
        at += pos;
        assert!(page.contains(&format!("<a href=\"#{id}\">")), "toc: {id}");
    }
    // Self-contained: no script, no external style, font or image, and every
    // link is on the page or a data: address.
    for bad in [
        "<script", "<link", "<img", "<iframe", "@import", "src=", "url(http", "url(//",
    ] {
        assert!(!page.contains(bad), "{bad} in the page");
    }
    for (i, _) in page.match_indices("href=\"") {
        let v = &page[i + 6..];
        assert!(
            v.starts_with('#') || v.starts_with("data:text/plain"),
            "a link to {}",
            &v[..v.len().min(40)]
        );
    }
    // http(s) only as the SVG namespace.
    for (i, _) in page.match_indices("http") {
        let before = &page[i.saturating_sub(7)..i];
        assert!(
            before == "xmlns=\"" || page[i..].starts_with("http://www.w3.org/2000/svg"),
            "an address: {}",
            &page[i..page.len().min(i + 40)]
        );
    }
}

/// The page of the logs in `dir`, checked.
fn page_of(dir: &Path) -> String {
    let run = load_run(dir).unwrap();
    let page = report_html(&run, &ReportOptions::default());
    check_page(&page);
    page
}

#[test]
fn a_full_run_gets_every_section_with_names_escaped() {
    let dir = tempfile::tempdir().unwrap();
    pipeline3(dir.path(), 2, MonitorFlags::FULL, 40);
    let page = page_of(dir.path());
    for raw in [SRC_NAME, MID_NAME, SINK_NAME, STREAM_NAME, "<evil>", "<ii>"] {
        assert!(!page.contains(raw), "{raw:?} unescaped");
    }
    for escaped in [
        "src &lt;evil&gt;&amp;amp;&quot;q&apos;",
        "mid/&lt;ii&gt;/3",
        "sink &amp; co",
        "link &quot;&lt;x&gt;&quot;",
    ] {
        assert!(page.contains(escaped), "{escaped:?} missing");
    }
    // The verdict names the middle stage, first among the findings.
    let verdict = &page[page.find("class=\"verdict\"").unwrap()..];
    assert!(
        verdict[..verdict.find("</div>").unwrap()].contains("mid/&lt;ii&gt;/3 holds the run back"),
        "{verdict}"
    );
    let findings = &page[page.find("<section id=\"findings\">").unwrap()..];
    assert!(findings.contains("<td>task</td><td>mid/&lt;ii&gt;/3</td>"));
    // The summary's figures, the utilisation bars, the timeline.
    assert!(page.contains("waiting events WE"));
    assert!(page.contains("<svg") && page.contains("class=\"bars\""));
    assert!(page.contains("<g class=\"lanes\">"));
    // Waits: cross-worker rows marked; groups fold mid/<i>/3.
    assert!(page.contains("<tr class=\"cross\">") && page.contains("across workers"));
    assert!(page.contains("<td>mid/&lt;ii&gt;/*</td>"), "the group");
    // The mapping: on 2 workers, the file in a <pre>, a data: download
    // with no raw markup, the commands.
    assert!(page.contains("<h3>On 2 worker(s)</h3>"));
    assert!(!page.contains("<h3>On 1 worker(s)</h3>"));
    assert!(page.contains("<pre>") && page.contains("&quot;sink &amp; co&quot; = "));
    assert!(page.contains("download=\"proposed-2.map\""));
    // Not a rill-bench application's names: the builder call that loads it.
    assert!(page.contains("rill::ManualTable::load(&quot;proposed-2.map&quot;)"));
    // A full run lacks nothing but latency (which the page leaves to summary).
    assert!(!page.contains("Not shown"), "{page}");
    assert!(page.contains("rill-mon summary DIR"));
}

#[test]
fn counts_mode_says_latency_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let counts: MonitorFlags = "map,worker,task,stream".parse().unwrap();
    pipeline3(dir.path(), 2, counts, 40);
    let page = page_of(dir.path());
    let missing: Vec<&str> = page.matches("class=\"missing\"").collect();
    assert_eq!(missing.len(), 1, "{page}");
    assert!(page.contains("per-input latency and jitter: they need the order"));
    assert!(page.contains("mid/&lt;ii&gt;/3 holds the run back"));
}

#[test]
fn one_worker_also_gets_a_mapping_on_two() {
    let dir = tempfile::tempdir().unwrap();
    pipeline3(dir.path(), 1, MonitorFlags::FULL, 10);
    let page = page_of(dir.path());
    let one = page.find("<h3>On 1 worker(s)</h3>").expect("a plan on 1");
    let two = page.find("<h3>On 2 worker(s)</h3>").expect("a plan on 2");
    assert!(one < two);
    assert!(
        page.contains(".workers(2)")
            && page.contains("ManualTable::load(&quot;proposed-2.map&quot;)")
    );
    assert!(page.contains("no mapping file is needed") && !page.contains("proposed-1.map"));
}

#[test]
fn a_dense_run_gets_a_detail_window() {
    let dir = tempfile::tempdir().unwrap();
    pipeline3(dir.path(), 2, MonitorFlags::FULL, 3000);
    let page = page_of(dir.path());
    assert!(page.contains("<h3>Detail: "), "no detail window");
    assert_eq!(page.matches("<g class=\"lanes\">").count(), 2);
    // Every element id on the page is unique (two timelines, the evolution
    // and the bars share one document).
    let mut ids: Vec<&str> = page
        .split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "repeated element ids among {ids:?}");
    // The two timelines' patterns have ids of their own.
    assert!(page.contains("id=\"many-all\"") && page.contains("id=\"many-detail\""));
    assert!(!page.contains("id=\"many\""));
    // A sparse run has none.
    let sparse = tempfile::tempdir().unwrap();
    pipeline3(sparse.path(), 2, MonitorFlags::FULL, 20);
    assert!(!page_of(sparse.path()).contains("<h3>Detail: "));
}

#[test]
fn rows_are_cut_and_counted() {
    // 40 unrelated tasks, each in a group of its own, with a stream each.
    let dir = tempfile::tempdir().unwrap();
    let mut l0 = vec![Record::WorkerStart { t: 0 }];
    for k in 0..40u64 {
        let (a, s) = (100 + k, 1000 + k);
        l0.push(Record::TaskAssign {
            t: 0,
            task: a,
            parent: 0,
            worker: 0,
            name: format!("t{k}"),
        });
        l0.push(Record::StreamBind {
            t: 0,
            stream: s,
            side: Side::Writer,
            task: a,
        });
        l0.push(p(10 * k, 10 * k + 5, a, EndState::Ended, vec![io(s, 0, 1)]));
    }
    l0.push(Record::WorkerEnd { t: 400 });
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::FULL,
        Calibration::nanos(),
        &l0,
    );
    let run = load_run(dir.path()).unwrap();
    let opts = ReportOptions {
        rows: 5,
        ..ReportOptions::default()
    };
    let page = report_html(&run, &opts);
    check_page(&page);
    assert!(page.contains("35 more groups not shown"), "groups cut");
    assert!(
        page.contains("35 more stream rows not shown"),
        "streams cut"
    );
    let all = report_html(
        &run,
        &ReportOptions {
            rows: 0,
            ..ReportOptions::default()
        },
    );
    check_page(&all);
    assert!(!all.contains("more groups not shown"));
}

#[test]
fn logs_without_periods_or_names_say_what_is_missing() {
    // Worker waits only: no periods, no names, no streams.
    let dir = tempfile::tempdir().unwrap();
    let l0 = vec![
        Record::WorkerStart { t: 0 },
        Record::WorkerWait { t: 10, dur: 50 },
        Record::WorkerEnd { t: 100 },
    ];
    write_log(
        dir.path(),
        0,
        1,
        MonitorFlags::WORKER,
        Calibration::nanos(),
        &l0,
    );
    let page = page_of(dir.path());
    for needle in [
        "findings need the busy time of tasks over time",
        "busy time: the run recorded neither periods",
        "task periods: the run did not record dispatches",
        "waits: the run recorded neither streams",
        "task groups: the logs name no task",
        "name no task",
        "Nothing to judge",
    ] {
        assert!(page.contains(needle), "{needle:?} missing");
    }
    // Unnamed tasks: no mapping file, one line why.
    let unnamed = tempfile::tempdir().unwrap();
    let l0 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 10, 7, EndState::Ended, vec![]),
        Record::WorkerEnd { t: 20 },
    ];
    let flags: MonitorFlags = "sched,worker".parse().unwrap();
    write_log(unnamed.path(), 0, 2, flags, Calibration::nanos(), &l0);
    let page = page_of(unnamed.path());
    assert!(page.contains("a mapping on 2 worker(s): the logs of"));
    assert!(page.contains("task names: the run did not record them"));
    assert!(page.contains("task#7"));
    // A missing worker log is a warning at the top and in the list.
    assert!(page.contains("class=\"warn\""));
}

#[test]
fn a_damaged_log_gives_a_partial_page() {
    let dir = tempfile::tempdir().unwrap();
    pipeline3(dir.path(), 2, MonitorFlags::FULL, 40);
    // Cut into worker 1's last records.
    let f = dir.path().join("worker-1.rlog");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 4]).unwrap();
    let page = page_of(dir.path());
    assert!(
        page.contains("class=\"warn\">The logs have 1 problem(s)"),
        "{page}"
    );
    assert!(
        page.contains("worker-1.rlog: damaged record at byte"),
        "{page}"
    );
    assert!(page.contains("mid/&lt;ii&gt;/3 holds the run back"));
}

/// `rill-mon args`, run.
fn rill_mon(args: &[&str]) -> assert_cmd::assert::Assert {
    assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .args(args)
        .assert()
}

/// One line on stderr.
fn one_line() -> impl predicates::Predicate<str> {
    predicates::function::function(|e: &str| e.trim_end().lines().count() == 1)
}

#[test]
fn the_command_writes_dir_report_html_or_the_file_given() {
    use predicates::str::{contains, starts_with};
    let dir = tempfile::tempdir().unwrap();
    pipeline3(dir.path(), 2, MonitorFlags::FULL, 10);
    let d = dir.path().to_str().unwrap();
    rill_mon(&["report", d])
        .success()
        .stderr(contains("report.html"))
        .stderr(one_line());
    check_page(&std::fs::read_to_string(dir.path().join("report.html")).unwrap());
    let other = tempfile::tempdir().unwrap();
    let file = other.path().join("r.html");
    rill_mon(&["report", d, "-o", file.to_str().unwrap(), "--rows", "0"]).success();
    check_page(&std::fs::read_to_string(&file).unwrap());
    // Errors: one line, status 2.
    rill_mon(&["report", "/nonexistent/rill-logs"])
        .code(2)
        .stderr(starts_with("rill-mon: error: "))
        .stderr(one_line());
    rill_mon(&["report", d, "-o", "/nonexistent/dir/r.html"])
        .code(2)
        .stderr(contains("cannot create"))
        .stderr(one_line());
    rill_mon(&["report", "--help"])
        .success()
        .stdout(contains("report.html"))
        .stdout(contains("sample"));
}

/// Real runs: a pipe with a slow relay on 2 workers, monitored in `flags`;
/// `rill-mon report` writes a page with every section.
fn real_run(flags: MonitorFlags) -> String {
    let dir = tempfile::tempdir().unwrap();
    let rt = runs::runtime_with(dir.path(), 2, rill::Mapping::RoundRobin, flags);
    let names: Vec<String> = (0..3).map(|k| format!("pipe/relay/{k}")).collect();
    runs::chain_with(rt, &names, Some(1), Duration::from_micros(20), 3000);
    let d = dir.path().to_str().unwrap();
    rill_mon(&["report", d]).success();
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    check_page(&page);
    assert!(page.contains("pipe/relay/*"), "{flags}: groups");
    assert!(
        page.contains("rill-bench pipe --workers 2"),
        "{flags}: command"
    );
    page
}

#[test]
fn real_runs_in_full_counts_and_sample_mode() {
    let full = real_run(MonitorFlags::FULL);
    assert!(!full.contains("Not shown"), "full lacks nothing");
    let counts = real_run("map,worker,task,stream".parse().unwrap());
    assert!(counts.contains("per-input latency and jitter: they need the order"));
    assert_eq!(counts.matches("<strong>Not shown:</strong>").count(), 1);
    let sample = real_run(MonitorFlags::SAMPLED);
    for needle in [
        "sample mode",
        "single dispatches: sample mode records none",
        "wait times: they need periods",
        "≈ ",
        "sampler.rlog",
    ] {
        assert!(sample.contains(needle), "sample: {needle:?} missing");
    }
}
