//! A run across ranks, without MPI: two runtimes of this process stand for
//! two ranks, each monitored into its own `rank-R/` directory, and a stream
//! from a task of the one to a task of the other stands for a cross-rank
//! stream (its halves are the same stream's two ends, as the bridge's are).
//! Rank 1's clock is planted 5 s ahead (its headers' calibration moved by
//! +5 s) and its `rank.json` states the offset that takes it back.

mod common;
mod runs;

use std::path::Path;

use rill::{Mapping, MonitorFlags};
use rill_monitor::{load_run, summarize, RunLog};

/// Messages through the network.
const MESSAGES: u64 = 3000;
/// How far rank 1's clock is planted ahead of rank 0's.
const PLANT_NS: i64 = 5_000_000_000;
/// The residual rank 1's `rank.json` states.
const RESIDUAL_NS: u64 = 800;
/// Where a header keeps the calibration's Unix start (rill-log's layout).
const START_UNIX_AT: usize = 40;

/// `rill-mon args`, run.
fn mon(args: &[&str]) -> assert_cmd::assert::Assert {
    assert_cmd::cargo::cargo_bin_cmd!("rill-mon")
        .args(args)
        .assert()
}

/// `rill-mon args`, which must succeed: its stdout.
fn ok(args: &[&str]) -> String {
    String::from_utf8(mon(args).success().get_output().stdout.clone()).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// What the test knows of the two single-process runs before they were
/// merged.
struct Planted {
    /// Rank 0's and rank 1's first time stamp, Unix ns on the true clock.
    first_unix: [u64; 2],
    /// The cross stream's id in the logs (one id: the same stream).
    cross: u64,
}

/// Rank 0 runs `net/src -> net/relay`, and the relay writes the cross
/// stream; rank 1 runs `net/count -> net/sink`, and `net/count` reads it.
/// One worker per rank.
fn two_ranks(dir: &Path) -> Planted {
    let (xw, xr) = rill::stream::<u64>(8);
    // Both ends live in another runtime than their peer's: say so before
    // either run starts, so that a reader that blocks first is not taken
    // for a deadlock.
    xw.hold_outside();
    xr.hold_outside();
    let rank_dir = |r: u32| {
        let d = dir.join(format!("rank-{r}"));
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (d0, d1) = (rank_dir(0), rank_dir(1));
    let r0 = std::thread::spawn(move || {
        let mut rt = runs::runtime_with(&d0, 1, Mapping::RoundRobin, MonitorFlags::FULL);
        rt.run_main(move || {
            let (mut w, mut r) = rill::stream::<u64>(8);
            rill::spawn("net/src", move || {
                for i in 0..MESSAGES {
                    w.write(i).unwrap();
                }
            });
            let mut xw = xw;
            rill::spawn("net/relay", move || {
                while let Some(v) = r.read() {
                    xw.write(v + 1).unwrap();
                }
            });
        })
        .unwrap();
    });
    let r1 = std::thread::spawn(move || {
        let mut rt = runs::runtime_with(&d1, 1, Mapping::RoundRobin, MonitorFlags::FULL);
        rt.run_main(move || {
            let (mut w, mut r) = rill::stream::<u64>(8);
            let mut xr = xr;
            rill::spawn("net/count", move || {
                while let Some(v) = xr.read() {
                    w.write(v).unwrap();
                }
            });
            rill::spawn("net/sink", move || {
                let mut n = 0;
                while r.read().is_some() {
                    n += 1;
                }
                assert_eq!(n, MESSAGES);
            });
        })
        .unwrap();
    });
    r0.join().unwrap();
    r1.join().unwrap();

    let single: Vec<RunLog> = (0..2)
        .map(|r| load_run(&dir.join(format!("rank-{r}"))).unwrap())
        .collect();
    let first_unix = [0, 1].map(|r| {
        let run = &single[r];
        run.calibration.to_unix_ns(run.t0)
    });
    let by_name = |run: &RunLog, name: &str| {
        *run.tasks
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} in the logs"))
            .0
    };
    let relay = by_name(&single[0], "net/relay");
    let count = by_name(&single[1], "net/count");
    let cross = *single[0]
        .streams
        .iter()
        .find(|(_, s)| s.writer == Some(relay))
        .expect("the relay's output")
        .0;
    assert_eq!(
        single[1].streams[&cross].reader,
        Some(count),
        "rank 1 logs the same stream, read by net/count"
    );

    // Plant rank 1's clock 5 s ahead: every time of its logs then reads
    // 5 s later.
    for entry in std::fs::read_dir(dir.join("rank-1")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rlog") {
            let mut bytes = std::fs::read(&path).unwrap();
            let at = START_UNIX_AT..START_UNIX_AT + 8;
            let start = u64::from_le_bytes(bytes[at.clone()].try_into().unwrap());
            bytes[at].copy_from_slice(&(start + PLANT_NS as u64).to_le_bytes());
            std::fs::write(&path, bytes).unwrap();
        }
    }
    let meta = |rank: u32, offset: i64, residual: u64, side: &str, peer: u32| {
        format!(
            r#"{{"rank": {rank}, "ranks": 2, "workers": 1, "clock_offset_ns": {offset},
                "clock_residual_ns": {residual},
                "cross_streams": [{{"stream": {cross}, "net_stream": 1, "side": "{side}", "peer_rank": {peer}}}]}}"#
        )
    };
    std::fs::write(dir.join("rank-0/rank.json"), meta(0, 0, 0, "writer", 1)).unwrap();
    std::fs::write(
        dir.join("rank-1/rank.json"),
        meta(1, -PLANT_NS, RESIDUAL_NS, "reader", 0),
    )
    .unwrap();
    Planted { first_unix, cross }
}

/// The merged run's first time stamp of rank `r`'s worker(s), Unix ns.
fn first_of_rank(run: &RunLog, r: u32) -> u64 {
    let ranks = run.ranks.as_ref().unwrap();
    let t = run
        .workers
        .iter()
        .filter(|w| ranks.worker(w.worker).map(|(rank, _)| rank) == Some(r))
        .map(|w| w.stats.begin)
        .min()
        .unwrap();
    run.calibration.to_unix_ns(t)
}

#[test]
fn two_ranks_merge_into_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let planted = two_ranks(dir.path());
    let run = load_run(dir.path()).unwrap();
    let ranks = run.ranks.as_ref().expect("a run across ranks");

    // Both ranks' lanes, named by rank.
    assert_eq!(ranks.ranks.len(), 2);
    assert_eq!(run.workers.len(), 2);
    assert_eq!(run.worker_count, 2);
    let names: Vec<String> = run
        .workers
        .iter()
        .map(|w| run.worker_name(w.worker))
        .collect();
    assert_eq!(names, ["r0/w0", "r1/w0"]);
    assert_eq!(ranks.clock_residual_ns, Some(RESIDUAL_NS));

    // The offset is applied: rank 1's first record lands where it was on
    // the true clock (5 s before its planted clock says), within the
    // residual; rank 0's stays.
    for r in 0..2 {
        let got = first_of_rank(&run, r);
        let want = planted.first_unix[r as usize];
        assert!(
            got.abs_diff(want) <= RESIDUAL_NS,
            "rank {r}: first record at {got}, want {want}"
        );
    }
    // The two runs ran side by side: the merged run spans about as long as
    // they took, not the 5 s planted between them.
    assert!(run.span_ns() < 4_000_000_000, "span {}", run.span_ns());

    // Tasks keep apart (each runtime numbered its tasks from 1): rank 1's
    // ids lie a stride above rank 0's.
    let task = |name: &str| {
        *run.tasks
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap()
            .0
    };
    let (src, relay, count, sink) = (
        task("net/src"),
        task("net/relay"),
        task("net/count"),
        task("net/sink"),
    );
    assert_eq!(ranks.rank_of_id(src), 0);
    assert_eq!(ranks.rank_of_id(count), 1);
    assert_eq!(ranks.rank_of_id(sink), 1);
    let mains = run
        .tasks
        .values()
        .filter(|t| t.name.as_deref() == Some("main"))
        .count();
    assert_eq!(mains, 2, "each rank's main is a task of its own");

    // The cross stream: one stream from rank 0's relay to rank 1's count,
    // marked, carrying every message.
    assert_eq!(ranks.cross_streams.len(), 1);
    let (&id, cs) = ranks.cross_streams.iter().next().unwrap();
    assert_eq!(id, planted.cross, "the writer's half keeps rank 0's id");
    assert_eq!(
        (cs.writer_rank, cs.reader_rank, cs.net_stream),
        (Some(0), Some(1), 1)
    );
    assert_eq!(cs.marker(), "⇄ r0→r1");
    let s = &run.streams[&id];
    assert_eq!((s.writer, s.reader), (Some(relay), Some(count)));
    assert_eq!((s.written, s.read), (MESSAGES, MESSAGES));

    // The summary says so: ranks, residual, the marked stream.
    let sum = summarize(&run);
    let text = sum.to_text();
    assert!(text.contains("2 rank(s)"), "{text}");
    assert!(text.contains("±800 ns"), "{text}");
    assert!(text.contains("⇄ r0→r1"), "{text}");
    assert!(text.contains("r1/w0"), "{text}");
    let json = serde_json::to_value(&sum).unwrap();
    assert_eq!(json["ranks"]["clock_residual_ns"], RESIDUAL_NS);
    let marked: Vec<_> = json["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["cross_rank"].is_null())
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(marked[0]["stream"], id);
}

#[test]
fn a_rank_without_rank_json_keeps_its_clock_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let planted = two_ranks(dir.path());
    std::fs::remove_file(dir.path().join("rank-1/rank.json")).unwrap();
    let run = load_run(dir.path()).unwrap();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("rank-1: no rank.json")),
        "{:?}",
        run.warnings
    );
    // Its planted 5 s stay.
    let got = first_of_rank(&run, 1);
    assert_eq!(got.abs_diff(planted.first_unix[1] + PLANT_NS as u64), 0);
    // Rank 0 still lists its half: the stream is still marked.
    let ranks = run.ranks.as_ref().unwrap();
    let cs = &ranks.cross_streams[&planted.cross];
    assert_eq!((cs.writer_rank, cs.reader_rank), (Some(0), Some(1)));
}

#[test]
fn the_commands_mark_ranks() {
    let dir = tempfile::tempdir().unwrap();
    two_ranks(dir.path());
    let d = dir.path();

    let summary = ok(&["summary", p(d)]);
    assert!(
        summary.contains("2 rank(s)") && summary.contains("⇄ r0→r1"),
        "{summary}"
    );

    let waits = ok(&["waits", p(d)]);
    assert!(waits.contains("⇄ r0→r1"), "{waits}");
    assert!(waits.contains("across ranks"), "{waits}");

    let svg_path = d.join("t.svg");
    ok(&["timeline", p(d), "-o", p(&svg_path)]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert_eq!(
        svg.matches("class=\"rank\"").count(),
        2,
        "a lane group per rank"
    );
    assert!(svg.contains("r1/w0"), "lanes named by rank");

    let html_path = d.join("r.html");
    ok(&["report", p(d), "-o", p(&html_path)]);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("⇄ r0→r1") && html.contains("class=\"rank\""));

    let b = ok(&["bottleneck", p(d), "--json"]);
    serde_json::from_str::<serde_json::Value>(&b).unwrap();

    // The plan over ranks: RANK:WORKER lines, the costs in the header.
    let map_path = d.join("auto.map");
    let out = ok(&[
        "map",
        p(d),
        "--ranks",
        "2",
        "--workers",
        "1",
        "-o",
        p(&map_path),
    ]);
    assert!(out.contains("2 rank(s)"), "{out}");
    let file = std::fs::read_to_string(&map_path).unwrap();
    let lines: Vec<&str> = file
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 5, "every task name (main twice): {file}");
    for l in &lines {
        let (_, place) = l.rsplit_once(" = ").unwrap();
        let (rank, worker) = place.split_once(':').unwrap();
        assert!(rank == "0" || rank == "1", "{l}");
        assert_eq!(worker, "0", "{l}");
    }
    assert!(file.contains("# crossing ranks:"), "{file}");
    assert!(file.contains("# crossing workers:"), "{file}");
}

/// Sample mode: each rank's sampler log is read, its windows moved to the
/// merged run's workers, tasks and clock.
#[test]
fn sample_mode_ranks_merge_their_samplers() {
    let dir = tempfile::tempdir().unwrap();
    let flags = MonitorFlags::MAPPING | MonitorFlags::SAMPLED;
    for r in 0..2u32 {
        let d = dir.path().join(format!("rank-{r}"));
        std::fs::create_dir_all(&d).unwrap();
        let mut rt = runs::runtime_with(&d, 1, Mapping::RoundRobin, flags);
        rt.spawn_on(0, format!("spin/{r}"), || {
            runs::spin(std::time::Duration::from_millis(150))
        });
        rt.run().unwrap();
        std::fs::write(
            d.join("rank.json"),
            format!(r#"{{"rank": {r}, "ranks": 2, "workers": 1, "clock_offset_ns": 0}}"#),
        )
        .unwrap();
    }
    let run = load_run(dir.path()).unwrap();
    let ranks = run.ranks.as_ref().unwrap();
    let sm = run.sampled.as_ref().expect("a sampled run");
    for w in 0..2u32 {
        assert!(
            sm.windows.iter().any(|x| x.worker == w),
            "windows of worker {w}"
        );
    }
    for r in 0..2u32 {
        let (&id, _) = run
            .tasks
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(&format!("spin/{r}")))
            .unwrap();
        assert_eq!(ranks.rank_of_id(id), r);
        assert!(
            sm.task_busy.get(&id).copied().unwrap_or(0) > 0,
            "spin/{r} was seen running: {:?}",
            sm.task_busy
        );
    }
    assert!(
        !run.warnings.iter().any(|w| w.contains("sampler")),
        "{:?}",
        run.warnings
    );
}

/// Damaged or forged rank directories: a `rank.json` that is not the
/// contract's is a warning; ids no stride can keep apart are a one-line
/// error; a damaged log is read up to its damage, named by its rank.
#[test]
fn forged_ranks_are_warnings_or_clean_errors() {
    use rill_log::{Calibration, EndState, Record};
    let dir = tempfile::tempdir().unwrap();
    let log = |r: u32, task: u64| {
        let d = dir.path().join(format!("rank-{r}"));
        std::fs::create_dir_all(&d).unwrap();
        common::write_log(
            &d,
            0,
            1,
            MonitorFlags::FULL,
            Calibration::nanos(),
            &[
                Record::WorkerStart { t: 10 },
                common::assign(task, 0, "t"),
                common::p(20, 30, task, EndState::Ended, vec![]),
                Record::WorkerEnd { t: 40 },
            ],
        )
    };
    log(0, 1);
    log(1, 2);
    std::fs::write(dir.path().join("rank-1/rank.json"), "{\"rank\": \"one\"}").unwrap();
    let run = load_run(dir.path()).unwrap();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("rank-1/rank.json") && w.contains("not a rank.json")),
        "{:?}",
        run.warnings
    );
    assert_eq!(run.tasks.len(), 2);

    // A forged id: rank 1's ids cannot be moved a stride up.
    log(1, u64::MAX - 1);
    mon(&["summary", p(dir.path())])
        .code(2)
        .stderr(predicates::str::contains("cannot be kept apart"))
        .stderr(predicates::function::function(|e: &str| {
            e.trim_end().lines().count() == 1
        }));

    // A damaged tail: named by its rank.
    let path = log(1, 2);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0x05, 0xff, 0xff]);
    std::fs::write(&path, bytes).unwrap();
    let run = load_run(dir.path()).unwrap();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.starts_with("rank-1/worker-0.rlog: damaged record")),
        "{:?}",
        run.warnings
    );
}
