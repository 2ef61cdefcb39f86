//! Monitoring end to end: a monitored run writes one log per worker that
//! decodes cleanly and accounts for every message and dispatch.

use rill::monitor::format::{read_log, EndReason, EndState, Record};
use rill::{MonitorConfig, MonitorFlags, Runtime};

fn pipeline(workers: usize, flags: MonitorFlags, dir: &std::path::Path) -> rill::RunStats {
    let mut rt = Runtime::builder()
        .workers(workers)
        .pin(false)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .unwrap();
    rt.run_main(|| {
        let (mut w, mut r) = rill::stream::<u64>(4);
        rill::spawn("src", move || {
            for i in 0..1000 {
                w.write(i).unwrap();
            }
        });
        let (mut w2, mut r2) = rill::stream::<u64>(4);
        rill::spawn("relay", move || {
            while let Some(v) = r.read() {
                w2.write(v).unwrap();
            }
        });
        let mut n = 0;
        while r2.read().is_some() {
            n += 1;
        }
        assert_eq!(n, 1000);
    })
    .unwrap()
}

#[test]
fn full_monitoring_logs_every_message() {
    for workers in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let stats = pipeline(workers, MonitorFlags::FULL, dir.path());
        assert!(stats.log_bytes > 0);
        let mut writes = 0u64;
        let mut reads = 0u64;
        let mut periods = 0u64;
        let mut names = Vec::new();
        let mut ended = 0;
        for w in 0..workers {
            let log = read_log(dir.path().join(format!("worker-{w}.rlog"))).unwrap();
            assert_eq!(log.end, EndReason::Clean, "worker {w}");
            assert_eq!(log.header.worker_count as usize, workers);
            for r in &log.records {
                match r {
                    Record::Period { io, end_state, .. } => {
                        periods += 1;
                        for x in io {
                            writes += x.writes as u64;
                            reads += x.reads as u64;
                        }
                        if *end_state == EndState::Ended {
                            ended += 1;
                        }
                    }
                    Record::TaskAssign { name, .. } => names.push(name.clone()),
                    _ => {}
                }
            }
        }
        assert_eq!(writes, 2000, "workers={workers}");
        assert_eq!(reads, 2000, "workers={workers}");
        assert_eq!(ended, 3, "three tasks ended");
        assert_eq!(periods, stats.dispatches, "one period per dispatch");
        names.sort();
        assert_eq!(names, vec!["main", "relay", "src"]);
    }
}

#[test]
fn monitoring_off_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stats = pipeline(2, MonitorFlags::OFF, &dir.path().join("never"));
    assert_eq!(stats.log_bytes, 0);
    assert!(!dir.path().join("never").exists());
}
