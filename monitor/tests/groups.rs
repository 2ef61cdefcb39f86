//! Per-group tables: `summary`'s groups against its tasks and `waits`, in
//! full and sample mode, and `--no-group`.

mod common;
mod runs;

use std::time::Duration;

use rill::MonitorFlags;
use rill_monitor::{load_run, summarize, summarize_grouped, waits};

fn relays(dir: &std::path::Path, flags: MonitorFlags) {
    let rt = runs::runtime_with(dir, 2, rill::Mapping::RoundRobin, flags);
    let names: Vec<String> = (0..4).map(|k| format!("pipe/relay/{k}")).collect();
    runs::chain_with(rt, &names, Some(2), Duration::from_micros(30), 500);
}

#[test]
fn summary_groups_add_up_their_tasks_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    relays(dir.path(), MonitorFlags::FULL);
    let run = load_run(dir.path()).unwrap();
    let s = summarize(&run);
    assert!(s.grouped);
    let g = s
        .groups
        .iter()
        .find(|g| g.group == "pipe/relay/*")
        .expect("the relays' group");
    assert_eq!(g.tasks, 4);
    let relays: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| t.name.starts_with("pipe/relay/"))
        .collect();
    assert_eq!(g.busy_ns, relays.iter().map(|t| t.total_ns).sum::<u64>());
    assert_eq!(
        g.dispatches,
        relays.iter().map(|t| t.dispatches).sum::<u64>()
    );
    assert_eq!(g.reads, 4 * 500);
    assert!(!g.estimated);
    // Its waits are `waits`' figures: the group as reader and as writer.
    let w = waits(&run, true);
    let (mut n, mut ns) = (0, 0);
    for p in &w.task_pairs {
        if p.reader == "pipe/relay/*" {
            n += p.reader_waits;
            ns += p.reader_wait_ns;
        }
        if p.writer == "pipe/relay/*" {
            n += p.writer_waits;
            ns += p.writer_wait_ns;
        }
    }
    assert_eq!(g.waits, n);
    // Each side converts its ticks to ns: a rounding per stream apart.
    let got = g.wait_ns.unwrap();
    assert!(got.abs_diff(ns) <= 8, "{got} vs {ns}");
    // The shares add up to 1, heaviest first.
    let share: f64 = s.groups.iter().map(|g| g.busy_share).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    assert!(s.groups.windows(2).all(|w| w[0].busy_ns >= w[1].busy_ns));
    // The text shows the group table, and the tasks.
    let text = s.to_text();
    assert!(
        text.contains("task groups") && text.contains("pipe/relay/*"),
        "{text}"
    );
    // Not grouped: a row per task, and no group table in the text.
    let flat = summarize_grouped(&run, false);
    assert!(!flat.grouped);
    assert_eq!(flat.groups.len(), flat.tasks.len());
    assert!(!flat.to_text().contains("task groups"));
}

#[test]
fn sampled_groups_mark_their_estimates() {
    let dir = tempfile::tempdir().unwrap();
    relays(dir.path(), MonitorFlags::SAMPLED);
    let run = load_run(dir.path()).unwrap();
    let s = summarize(&run);
    let g = s
        .groups
        .iter()
        .find(|g| g.group == "pipe/relay/*")
        .expect("the relays' group");
    assert!(g.estimated && g.wait_ns.is_none());
    assert_eq!(g.tasks, 4);
    let text = s.to_text();
    assert!(text.contains("~ busy time estimated"), "{text}");
}

#[test]
fn the_summary_command_takes_no_group() {
    let dir = tempfile::tempdir().unwrap();
    relays(dir.path(), MonitorFlags::FULL);
    let mon = |args: &[&str]| {
        let a = assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
            .args(args)
            .assert()
            .success();
        String::from_utf8(a.get_output().stdout.clone()).unwrap()
    };
    let d = dir.path().to_str().unwrap();
    let v: serde_json::Value = serde_json::from_str(&mon(&["summary", d, "--json"])).unwrap();
    assert!(v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["group"] == "pipe/relay/*"));
    let v: serde_json::Value =
        serde_json::from_str(&mon(&["summary", d, "--json", "--no-group"])).unwrap();
    assert_eq!(v["grouped"], false);
    assert!(v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["group"] == "pipe/relay/3"));
    assert!(mon(&["summary", d]).contains("task groups"));
}
