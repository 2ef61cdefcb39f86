//! A run's log directory: one live run owns it, and a log whose pages the
//! filesystem cannot back stops without harming the run. (Runs of the
//! `rill-bench` binary on full filesystems, and SIGKILL, are in
//! `examples/tests/log_safety.rs`.)

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use common::with_timeout;
use rill::{ConfigError, MonitorConfig, MonitorFlags, RunError, Runtime};
use rill_log::read_log;

fn monitored(dir: &std::path::Path) -> Runtime {
    Runtime::builder()
        .workers(1)
        .pin(false)
        .monitor(MonitorConfig::new(MonitorFlags::FULL, dir))
        .build()
        .unwrap()
}

/// A second run given a live run's directory fails at its start with
/// `ConfigError::LogDirInUse`, naming the directory and the owner's pid,
/// and leaves the live run's logs alone; once the first run has ended the
/// directory is free again.
#[test]
fn a_live_run_owns_its_log_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let first = std::thread::spawn(move || {
        let mut rt = monitored(&d);
        rt.spawn("holder", move || {
            started_tx.send(()).unwrap();
            // Blocks the worker thread (not a rill wait): enough for a test.
            release_rx.recv().unwrap();
        });
        rt.run()
    });
    started_rx.recv().unwrap();
    let log0 = dir.path().join("worker-0.rlog");
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&log0).unwrap());

    // The refused run: two workers in sample mode (its worker threads start
    // before the directory is taken, and leave without running anything).
    static RAN: AtomicBool = AtomicBool::new(false);
    let d = dir.path().to_path_buf();
    let err = with_timeout("second run", 30, move || {
        let mut rt = Runtime::builder()
            .workers(2)
            .pin(false)
            .monitor(MonitorConfig::new(MonitorFlags::SAMPLE, &d))
            .build()
            .unwrap();
        for w in 0..2 {
            rt.spawn_on(w, format!("never/{w}"), || {
                RAN.store(true, Ordering::SeqCst)
            });
        }
        rt.run().unwrap_err()
    });
    assert!(!RAN.load(Ordering::SeqCst), "a refused run runs nothing");
    match &err {
        RunError::Config(ConfigError::LogDirInUse { dir: named, pid }) => {
            assert_eq!(named, &dir.path().display().to_string());
            assert_eq!(*pid, Some(std::process::id()));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&log0).unwrap()),
        ino,
        "the live run's log is untouched"
    );

    release_tx.send(()).unwrap();
    first.join().unwrap().unwrap();
    let d = dir.path().to_path_buf();
    with_timeout("run after the first ended", 30, move || {
        let mut rt = monitored(&d);
        rt.spawn("t", || {});
        rt.run().unwrap();
    });
}

/// A task cuts its own worker's log file short while the worker writes it:
/// the worker's next stores past the cut raise SIGBUS, which the runtime's
/// handler hands to the log's net. The run ends normally, the worker's
/// statistics and the log's header say it was truncated by a page fault,
/// and the log reads back (the cut's own pages are lost: the writer keeps
/// what it wrote up to the first page that faulted). Without the net the test
/// process dies of SIGBUS.
#[test]
fn a_log_page_the_filesystem_drops_stops_the_log_not_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let stats = with_timeout("run", 60, move || {
        let mut rt = monitored(&d);
        let log = d.join("worker-0.rlog");
        rt.spawn("cutter", move || {
            for _ in 0..2_000 {
                rill::yield_now();
            }
            std::fs::OpenOptions::new()
                .write(true)
                .open(&log)
                .unwrap()
                .set_len(4096)
                .unwrap();
            // A period record per yield: well past the next reservation.
            for _ in 0..400_000 {
                rill::yield_now();
            }
        });
        rt.run().unwrap()
    });
    assert!(stats.workers[0].log_truncated, "{:?}", stats.workers[0]);
    let log = read_log(dir.path().join("worker-0.rlog")).unwrap();
    let t = log.header.truncated.expect("the header says truncated");
    assert!(t.page_fault, "{t:?}");
    assert!(!log.records.is_empty());
    assert_eq!(
        std::fs::metadata(dir.path().join("worker-0.rlog"))
            .unwrap()
            .len(),
        stats.workers[0].log_bytes
    );
}
