//! Rough edges a new user met: poll waits in the summary's stream table,
//! one definition of a dispatch, unique element ids in the report, advice
//! in the API's words for a program of one's own, and task groups that
//! hide an outlier.

mod common;
mod runs;

use common::*;
use rill_log::{EndState, Record};
use rill_monitor::{load_run, report_html, summarize, ReportOptions};

// ---------------------------------------------------------------------------
// Task groups that hide an outlier.

/// `log/parse/0` busy 100 ns, `log/parse/1` 600 ns (six times as much),
/// `log/emit/0` and `log/emit/1` 50 ns each.
fn uneven(dir: &std::path::Path) {
    let recs: Vec<Record> = vec![
        assign(1, 0, "log/parse/0"),
        assign(2, 0, "log/parse/1"),
        assign(3, 0, "log/emit/0"),
        assign(4, 0, "log/emit/1"),
        p(0, 100, 1, EndState::Ended, vec![]),
        p(100, 700, 2, EndState::Ended, vec![]),
        p(700, 750, 3, EndState::Ended, vec![]),
        p(750, 800, 4, EndState::Ended, vec![]),
    ];
    write_run(dir, &[recs]);
}

#[test]
fn a_group_names_its_outlier_in_summary_text_json_and_report() {
    let dir = tempfile::tempdir().unwrap();
    uneven(dir.path());
    let run = load_run(dir.path()).unwrap();
    let s = summarize(&run);
    let parse = s.groups.iter().find(|g| g.group == "log/parse/*").unwrap();
    let x = parse.outlier.as_ref().expect("log/parse/1 is flagged");
    assert_eq!((x.task, x.name.as_str()), (2, "log/parse/1"));
    assert_eq!((x.busy_ns, x.median_ns), (600, 100));
    let emit = s.groups.iter().find(|g| g.group == "log/emit/*").unwrap();
    assert!(emit.outlier.is_none(), "an even group is not flagged");

    let text = s.to_text();
    assert!(
        text.contains("uneven groups") && text.contains("log/parse/*: log/parse/1 (task 2)"),
        "{text}"
    );
    let json = serde_json::to_value(&s).unwrap();
    let groups = json["groups"].as_array().unwrap();
    let parse = groups.iter().find(|g| g["group"] == "log/parse/*").unwrap();
    assert_eq!(parse["outlier"]["name"], "log/parse/1");
    assert_eq!(parse["outlier"]["median_ns"], 100);
    let emit = groups.iter().find(|g| g["group"] == "log/emit/*").unwrap();
    assert!(emit.get("outlier").is_none());

    let html = report_html(&run, &ReportOptions::default());
    assert!(
        html.contains("uneven group log/parse/*: log/parse/1 (task 2)"),
        "the report's groups section names the outlier"
    );
    assert!(!html.contains("uneven group log/emit/*"));
}
