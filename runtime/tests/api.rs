//! The API a user meets: `run_main` hands back `main`'s value, `PollSet`
//! merges readers and drops the ended ones, and a task's panic message
//! names the task.

mod common;

use std::process::Command;

use common::with_timeout;
use rill::{PollSet, RunError, Runtime};

#[test]
fn run_main_returns_the_value_of_main() {
    let (sum, stats) = with_timeout("run_main value", 30, || {
        Runtime::builder()
            .workers(2)
            .build()
            .unwrap()
            .run_main(|| {
                let (mut w, r) = rill::stream::<u64>(4);
                rill::spawn("src", move || {
                    for i in 1..=100 {
                        w.write(i).unwrap();
                    }
                });
                r.sum::<u64>()
            })
            .unwrap()
    });
    assert_eq!(sum, 5050);
    assert_eq!(stats.tasks_created, 2);
}

#[test]
fn run_main_reports_the_failure_instead_of_a_value() {
    let res = with_timeout("run_main failure", 30, || {
        Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .run_main(|| -> u32 { panic!("no value") })
    });
    assert!(
        matches!(&res, Err(RunError::TaskPanicked { name, .. }) if name == "main"),
        "{res:?}"
    );
}

/// A collector added last, as the main task under its own name: it is
/// placed by that name (the manual table's worker) and its value comes
/// back; its panic names it.
#[test]
fn run_main_as_names_the_main_task() {
    let manual = rill::ManualTable::new().with("net/collect", 1);
    let runtime = move || {
        Runtime::builder()
            .workers(2)
            .mapping(rill::Mapping::Manual(manual.clone()))
            .build()
            .unwrap()
    };
    let (worker, _) = with_timeout("run_main_as value", 30, move || {
        let mut rt = runtime();
        let (mut w, r) = rill::stream::<u64>(4);
        rt.spawn("net/source", move || {
            w.write(7).unwrap();
        });
        rt.run_main_as("net/collect", move || {
            let me = rill::current().expect("a task").worker;
            assert_eq!(r.sum::<u64>(), 7);
            me
        })
        .unwrap()
    });
    assert_eq!(worker, 1);
    let res = with_timeout("run_main_as failure", 30, || {
        Runtime::builder()
            .workers(1)
            .build()
            .unwrap()
            .run_main_as("net/collect", || -> u32 { panic!("no value") })
    });
    assert!(
        matches!(&res, Err(RunError::TaskPanicked { name, .. }) if name == "net/collect"),
        "{res:?}"
    );
}

/// Readers end at different times; the set keeps giving messages from the
/// others, each with the key of its reader, and ends when all have ended.
#[test]
fn poll_set_merges_readers_and_drops_ended_ones() {
    let (got, _) = with_timeout("poll set", 30, || {
        Runtime::builder()
            .workers(2)
            .build()
            .unwrap()
            .run_main(|| {
                let mut set = PollSet::new();
                for k in 0..4u64 {
                    let (mut w, r) = rill::stream::<u64>(2);
                    assert_eq!(set.push(r), k as usize);
                    rill::spawn(format!("src/{k}"), move || {
                        // Source k sends k * 10 messages.
                        for i in 0..k * 10 {
                            w.write(k * 1000 + i).unwrap();
                        }
                    });
                }
                assert_eq!(set.len(), 4);
                let mut got = vec![Vec::new(); 4];
                for (key, v) in &mut set {
                    assert_eq!(v / 1000, key as u64, "a message carries its reader's key");
                    got[key].push(v % 1000);
                }
                assert!(set.is_empty(), "every ended reader was dropped");
                got
            })
            .unwrap()
    });
    for (k, msgs) in got.iter().enumerate() {
        let want: Vec<u64> = (0..k as u64 * 10).collect();
        assert_eq!(msgs, &want, "reader {k}: every message, in order");
    }
}

const CHILD: &str = "RILL_API_CHILD";

/// A task that panics: its message names the task, beside the default
/// hook's own report (which names only the worker thread).
#[test]
fn a_panic_message_names_the_task() {
    if std::env::var(CHILD).is_ok() {
        let res = Runtime::builder().workers(1).build().unwrap().run_main(|| {
            rill::spawn("stage/parser", || panic!("bad input"));
        });
        eprintln!("child: {}", res.map(|_| ()).unwrap_err());
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_panic_message_names_the_task", "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("rill: task 'stage/parser' (id ")
            && stderr.contains("panicked")
            && stderr.contains("bad input")
            && stderr.contains("child: task 'stage/parser'"),
        "stderr:\n{stderr}"
    );
}

/// Misuse panics point at the user's line, not at rill's source: a
/// blocking read outside a task, and a stream of capacity 0.
#[test]
fn misuse_panics_name_the_callers_line() {
    match std::env::var(CHILD).as_deref() {
        Ok("read") => {
            let (_w, mut r) = rill::stream::<u32>(1);
            let _ = r.read(); // the line the message must name
            return;
        }
        Ok("zero") => {
            let _ = rill::stream::<u32>(0); // the line the message must name
            return;
        }
        _ => {}
    }
    let src = include_str!("api.rs");
    for (mode, marker) in [
        ("read", "let _ = r.read(); // the line"),
        ("zero", "let _ = rill::stream::<u32>(0); // the line"),
    ] {
        let line = src.lines().position(|l| l.contains(marker)).unwrap() + 1;
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "misuse_panics_name_the_callers_line",
                "--nocapture",
            ])
            .env(CHILD, mode)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("tests/api.rs:{line}:")),
            "{mode}: expected the panic at tests/api.rs:{line}, stderr:\n{stderr}"
        );
    }
}

/// Two tasks that each read the other first: without help the runtime
/// knows neither writer (their ends were never used) and says so; handed
/// their ends with `spawn_with`, it reports the waiting cycle.
#[test]
fn a_deadlock_of_tasks_that_read_first_is_reported_with_its_cycle() {
    let plain = with_timeout("deadlock, plain spawn", 30, || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        let (mut aw, mut ar) = rill::stream::<u32>(1);
        let (mut bw, mut br) = rill::stream::<u32>(1);
        rt.spawn("a", move || {
            let v = br.read().unwrap_or(0);
            let _ = aw.write(v);
        });
        rt.spawn("b", move || {
            let v = ar.read().unwrap_or(0);
            let _ = bw.write(v);
        });
        rt.run().unwrap_err().to_string()
    });
    assert!(plain.contains("no waiting cycle is known"), "{plain}");
    assert!(plain.contains("never used"), "{plain}");

    let with = with_timeout("deadlock, spawn_with", 30, || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        let (aw, ar) = rill::stream::<u32>(1);
        let (bw, br) = rill::stream::<u32>(1);
        rt.spawn_with("a", (br, aw), |(mut br, mut aw)| {
            let v = br.read().unwrap_or(0);
            let _ = aw.write(v);
        });
        rt.spawn_with("b", (ar, bw), |(mut ar, mut bw)| {
            let v = ar.read().unwrap_or(0);
            let _ = bw.write(v);
        });
        rt.run().unwrap_err().to_string()
    });
    assert!(
        with.contains("waiting cycle: a (1) -> b (2) -> a (1)")
            || with.contains("waiting cycle: b (2) -> a (1) -> b (2)"),
        "{with}"
    );

    // The same inside a run, from `rill::spawn_with`.
    let inner = with_timeout("deadlock, rill::spawn_with", 30, || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        rt.run_main(|| {
            let (aw, ar) = rill::stream::<u32>(1);
            let (bw, br) = rill::stream::<u32>(1);
            rill::spawn_with("a", (br, aw), |(mut br, mut aw)| {
                let v = br.read().unwrap_or(0);
                let _ = aw.write(v);
            });
            rill::spawn_with("b", (ar, bw), |(mut ar, mut bw)| {
                let v = ar.read().unwrap_or(0);
                let _ = bw.write(v);
            });
        })
        .unwrap_err()
        .to_string()
    });
    assert!(inner.contains("waiting cycle: "), "{inner}");
}

/// A named stream's name shows in its errors, in a deadlock report and in
/// the monitoring log; a stream made before a monitored run has its
/// opening (capacity, name) logged at its first use.
#[test]
fn named_streams_show_their_names() {
    let (mut w, r) = rill::named_stream::<u32>("parse/tokens", 2);
    assert_eq!(w.name(), Some("parse/tokens"));
    assert_eq!(r.name(), Some("parse/tokens"));
    drop(r);
    assert!(w.try_write(1).is_err());
    // A blocking write to a closed stream reports the name.
    let id = w.id();
    let text = rill::StreamClosed(id).to_string();
    assert!(text.contains("'parse/tokens'"), "{text}");
    drop(w);

    let report = with_timeout("named deadlock", 30, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (_keep, mut never) = rill::named_stream::<u32>("input/lines", 1);
        rt.spawn("reader", move || {
            let _ = never.read();
        });
        let err = rt.run().unwrap_err().to_string();
        drop(_keep);
        err
    });
    assert!(
        report.contains("reading empty stream 'input/lines' ("),
        "{report}"
    );

    let dir = std::env::temp_dir().join(format!("rill-api-names-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d2 = dir.clone();
    with_timeout("named, monitored", 30, move || {
        let mut rt = Runtime::builder()
            .workers(1)
            .monitor(rill::MonitorConfig::new(rill::MonitorFlags::FULL, &d2))
            .build()
            .unwrap();
        // Made before the run: logged at its first use.
        let (mut w, mut r) = rill::named_stream::<u32>("early/nums", 3);
        rt.spawn("w", move || w.write(7).unwrap());
        rt.spawn("r", move || assert_eq!(r.read(), Some(7)));
        rt.run().unwrap();
    });
    let log = rill_log::read_log(dir.join("worker-0.rlog")).unwrap();
    let opened: Vec<u32> = log
        .records
        .iter()
        .filter_map(|r| match r {
            rill_log::Record::StreamOpen { capacity, .. } => Some(*capacity),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = log
        .records
        .iter()
        .filter_map(|r| match r {
            rill_log::Record::StreamName { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(opened, [3], "the opening is logged once, with the capacity");
    assert_eq!(names, ["early/nums"]);
    let _ = std::fs::remove_dir_all(&dir);
}
