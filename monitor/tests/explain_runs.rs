//! `waits`, `bottleneck` and `map` on real runs of the runtime.
//!
//! The runs measure time on a machine that other work may share, so they
//! run one at a time (a lock), and a bottleneck test that loses to noise
//! gets three tries before it fails (each failed try prints its report).

mod runs;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use rill_monitor::{bottleneck, load_run, waits, BottleneckOptions, Bottlenecks};

/// One real run at a time.
static RUNS: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `who` is the first task `b` names (its strongest task
/// finding); prints the report otherwise. Only tasks are compared: on a
/// loaded host a crossing costs tens of microseconds more, and the
/// placement finding (every message of a round-robin pipe crosses) may
/// rightly outrank the planted task, which is what the runs plant and what
/// must be found.
fn first_is(b: &Bottlenecks, who: &str, what: &str) -> bool {
    let ok = b
        .bottlenecks
        .iter()
        .find(|f| f.kind == "task")
        .is_some_and(|f| f.name == who);
    if !ok {
        eprintln!("{what}: expected {who} first\n{}", b.to_text());
    }
    ok
}

/// Tries `f` up to three times.
fn within_three_tries(what: &str, mut f: impl FnMut() -> bool) {
    assert!(
        (0..3).any(|_| f()),
        "{what}: not named first in three tries"
    );
}

#[test]
fn a_planted_slow_relay_is_named_first() {
    let _g = lock();
    for slow in [1, 4] {
        for workers in [1, 2, 4] {
            let what = format!("relay {slow} slow on {workers} worker(s)");
            within_three_tries(&what, || {
                let dir = tempfile::tempdir().unwrap();
                runs::pipe(
                    dir.path(),
                    workers,
                    rill::Mapping::RoundRobin,
                    6,
                    Some(slow),
                    Duration::from_millis(1),
                    40,
                );
                let run = load_run(dir.path()).unwrap();
                let b = bottleneck(&run, &BottleneckOptions::default());
                first_is(&b, &format!("pipe/relay/{slow}"), &what)
            });
        }
    }
}

#[test]
fn a_ring_with_a_slow_task_terminates_and_names_it() {
    let _g = lock();
    // Not more workers than this machine may have cores: oversubscribed, a
    // worker whose thread the system deschedules makes its peers spin, and
    // the logs (rightly) show them busy.
    for workers in [1, 2] {
        let what = format!("ring on {workers} worker(s)");
        within_three_tries(&what, || {
            let dir = tempfile::tempdir().unwrap();
            runs::ring(dir.path(), workers, 4, 4, 15, 2, Duration::from_millis(1));
            let run = load_run(dir.path()).unwrap();
            let b = bottleneck(&run, &BottleneckOptions::default());
            first_is(&b, "ring/2", &what)
        });
    }
    // One token: the work is serialised; the analyses terminate and name
    // the slow task.
    let dir = tempfile::tempdir().unwrap();
    runs::ring(dir.path(), 2, 4, 1, 10, 2, Duration::from_micros(500));
    let run = load_run(dir.path()).unwrap();
    let b = bottleneck(&run, &BottleneckOptions::default());
    let named = b.verdict.contains("ring/2") || b.bottlenecks.iter().any(|f| f.name == "ring/2");
    assert!(named, "{}", b.to_text());
    let w = waits(&run, false);
    assert_eq!(w.streams.len(), 4);
    assert!(w.streams.iter().all(|s| s.messages == 10));
}

#[test]
fn the_waits_of_a_real_pipe() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        6,
        None,
        Duration::ZERO,
        200,
    );
    let run = load_run(dir.path()).unwrap();
    let one = waits(&run, false);
    assert_eq!(one.streams.len(), 7);
    assert!(one.streams.iter().all(|s| s.messages == 200), "{one:#?}");
    let summary = rill_monitor::summarize(&run);
    let worker: BTreeMap<&str, Option<u32>> = summary
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.worker))
        .collect();
    for s in &one.streams {
        // Round-robin never migrates here: the ends' assigned workers tell
        // whether the stream crosses.
        assert_eq!(
            s.cross_worker,
            worker[s.writer.as_str()] != worker[s.reader.as_str()],
            "{s:?}"
        );
        let blocked = summary
            .streams
            .iter()
            .find(|x| x.stream == s.stream)
            .unwrap();
        assert_eq!(s.reader_waits, blocked.reader_blocked, "{s:?}");
        assert_eq!(s.writer_waits, blocked.writer_blocked, "{s:?}");
    }
    let folded = waits(&run, true);
    let rows: Vec<(&str, &str, u64)> = folded
        .streams
        .iter()
        .map(|s| (s.writer.as_str(), s.reader.as_str(), s.messages))
        .collect();
    assert_eq!(folded.streams.len(), 3, "{rows:?}");
    assert!(
        rows.contains(&("pipe/relay/*", "pipe/relay/*", 1000)),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("pipe/src", "pipe/relay/*", 200)),
        "{rows:?}"
    );
}

/// Names that longest-prefix matching and the file's syntax could get
/// wrong: prefixes of each other, `#`, `=`, quotes, backslashes, spaces at
/// the ends.
fn awkward_names() -> Vec<String> {
    [
        "chain/step/1",
        "chain/step/10",
        "chain/step/2",
        "odd#name",
        "k = v",
        " pad ",
        "q\"uote",
        "back\\slash",
        "chain/step",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn map_writes_a_file_the_runtime_loads_back() {
    let _g = lock();
    let names = awkward_names();
    let observed = tempfile::tempdir().unwrap();
    runs::chain(
        observed.path(),
        4,
        rill::Mapping::RoundRobin,
        &names,
        Some(3),
        Duration::from_micros(300),
        50,
    );
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("map.txt");
    let o = assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .arg("map")
        .arg(observed.path())
        .args(["--workers", "2", "--json", "-o"])
        .arg(&file)
        .assert()
        .success();
    let plan: serde_json::Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
    let intended: BTreeMap<String, usize> = plan["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["worker"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    // Every named task of the run is in the plan, and the file maps each
    // name to its worker.
    let run = load_run(observed.path()).unwrap();
    let table = rill::ManualTable::load(&file).unwrap();
    table.validate(2).unwrap();
    for t in run.tasks.values() {
        let name = t.name.as_deref().unwrap();
        let w = intended[name];
        assert!(w < 2);
        assert_eq!(table.lookup(name), Some(w), "{name:?}");
    }
    assert_eq!(
        intended.len(),
        names.len() + 3,
        "the chain, src, sink, main"
    );
    assert_eq!(table.entries().len(), intended.len());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("# Predicted run time"), "{text}");
    assert!(plan["estimate"]["proposed_ns"].as_u64().unwrap() > 0);

    // A run under the file puts every task where the plan said.
    let mapped = tempfile::tempdir().unwrap();
    runs::chain(
        mapped.path(),
        2,
        rill::Mapping::Manual(table),
        &names,
        Some(3),
        Duration::from_micros(300),
        50,
    );
    let run = load_run(mapped.path()).unwrap();
    for t in run.tasks.values() {
        let name = t.name.as_deref().unwrap();
        assert_eq!(t.assigned, Some(intended[name] as u32), "{name:?}");
    }
}

/// `rill-mon diff A B --json` on two real runs, as JSON.
fn diff_json(a: &std::path::Path, b: &std::path::Path) -> serde_json::Value {
    let a = assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .arg("diff")
        .args([a, b])
        .arg("--json")
        .assert()
        .success();
    serde_json::from_slice(&a.get_output().stdout).unwrap()
}

#[test]
fn diff_of_two_real_pipes() {
    let _g = lock();
    // A: round-robin; B: the slow relay alone on worker 0, the rest on 1.
    let work = Duration::from_micros(200);
    let a = tempfile::tempdir().unwrap();
    runs::pipe(
        a.path(),
        2,
        rill::Mapping::RoundRobin,
        6,
        Some(3),
        work,
        100,
    );
    let table = rill::ManualTable::parse("\"pipe/relay/3\" = 0\n\"pipe\" = 1\n").unwrap();
    let b = tempfile::tempdir().unwrap();
    runs::pipe(
        b.path(),
        2,
        rill::Mapping::Manual(table),
        6,
        Some(3),
        work,
        100,
    );
    let v = diff_json(a.path(), b.path());

    let span = |s: &str| v[s]["span_ns"].as_u64().unwrap() as f64;
    let speedup = v["speedup"].as_f64().unwrap();
    assert!((speedup - span("a") / span("b")).abs() < 1e-9, "{v}");
    let headline = v["headline"].as_str().unwrap();
    assert!(
        headline.starts_with("B is ") || headline.starts_with("A and B take"),
        "{headline}"
    );
    assert!(headline.contains("the largest change: "), "{headline}");
    // Every group matched, with the same tasks and messages in both runs.
    let groups = v["groups"].as_array().unwrap();
    let names: Vec<&str> = groups
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    for n in ["pipe/src", "pipe/relay/*", "pipe/sink"] {
        assert!(names.contains(&n), "{names:?}");
    }
    for g in groups {
        assert_eq!(g["tasks"]["delta"], 0, "{g}");
        assert!(
            g["busy_ns"]["a"].is_u64() && g["busy_ns"]["b"].is_u64(),
            "{g}"
        );
    }
    let relays = groups
        .iter()
        .find(|g| g["group"] == "pipe/relay/*")
        .unwrap();
    assert_eq!(relays["tasks"]["a"], 6);
    // 100 messages of 200 µs in relay 3 alone, in both runs.
    for side in ["a", "b"] {
        assert!(
            relays["busy_ns"][side].as_u64().unwrap() >= 20_000_000,
            "{relays}"
        );
    }
    for p in v["pairs"].as_array().unwrap() {
        assert_eq!(p["messages"]["delta"], 0, "{p}");
    }
    // The ranking: largest absolute change first.
    let deltas: Vec<u64> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["delta"].as_i64().unwrap().unsigned_abs())
        .collect();
    assert!(
        !deltas.is_empty() && deltas.windows(2).all(|w| w[0] >= w[1]),
        "{deltas:?}"
    );
    assert_eq!(v["workers"].as_array().unwrap().len(), 2);
    assert!(v["only_in_a"]["groups"].as_array().unwrap().is_empty());
    assert!(v["only_in_b"]["groups"].as_array().unwrap().is_empty());

    // Another worker count: workers beyond A's are B's alone; the groups
    // still match.
    let c = tempfile::tempdir().unwrap();
    runs::pipe(
        c.path(),
        1,
        rill::Mapping::RoundRobin,
        6,
        None,
        Duration::ZERO,
        100,
    );
    let v = diff_json(c.path(), b.path());
    assert_eq!(v["only_in_b"]["workers"], serde_json::json!([1]));
    assert!(v["only_in_b"]["groups"].as_array().unwrap().is_empty());
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("A ran on 1 worker(s), B on 2"),
        "{v}"
    );

    // Another program: little in common (the root task) but the workers.
    let ring = tempfile::tempdir().unwrap();
    runs::ring(ring.path(), 2, 3, 1, 5, 0, Duration::ZERO);
    let v = diff_json(a.path(), ring.path());
    let notes = v["notes"].to_string();
    assert!(notes.contains("different programs?"), "{notes}");
    let only: Vec<&str> = v["only_in_b"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(only.contains(&"ring/*"), "{only:?}");
}

/// Writes the logs of a pipe whose relay 3 works 1 ms per message (2
/// workers, round-robin) to `$RILL_MON_DEMO`, to look at by hand.
#[test]
#[ignore]
fn write_demo_logs() {
    if let Ok(dir) = std::env::var("RILL_MON_DEMO") {
        runs::pipe(
            std::path::Path::new(&dir),
            2,
            rill::Mapping::RoundRobin,
            6,
            Some(3),
            Duration::from_millis(1),
            40,
        );
    }
}
