//! Sample mode on real runs: the estimates against known work and against
//! the periods of the same run, the exact counts, and the log's size.
//!
//! Runs measure time on a machine that other work may share: one at a time
//! (a lock), and a check of estimates gets three tries.

mod runs;

use std::sync::Mutex;
use std::time::Duration;

use rill::MonitorFlags;
use rill_monitor::{load_run, Sampled};

static RUNS: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    RUNS.lock().unwrap_or_else(|e| e.into_inner())
}

fn within_three_tries(what: &str, mut f: impl FnMut() -> Result<(), String>) {
    let mut errors = Vec::new();
    for _ in 0..3 {
        match f() {
            Ok(()) => return,
            Err(e) => errors.push(e),
        }
    }
    panic!("{what}: failed three times:\n{}", errors.join("\n"));
}

/// The share of the machine's CPU time that other processes used between
/// two readings (the runtime's tests share the reader). A sample lands late
/// when its worker was not on a core, so a check of samples against periods
/// widens its bound by this much: a busy host cannot fail it, a quiet one
/// keeps it tight.
#[path = "../../runtime/tests/common/host_load.rs"]
mod host_load;
use host_load::HostLoad;

fn sampled(flags: MonitorFlags) -> MonitorFlags {
    flags | MonitorFlags::SAMPLED
}

#[test]
fn a_busy_worker_and_an_idle_one_get_their_shares_within_the_bound() {
    let _g = lock();
    within_three_tries("busy shares", || {
        let dir = tempfile::tempdir().unwrap();
        let mut rt = runs::runtime_with(
            dir.path(),
            2,
            rill::Mapping::RoundRobin,
            sampled(MonitorFlags::OFF),
        );
        rt.spawn_on(0, "spinner", || runs::spin(Duration::from_millis(300)));
        let load = HostLoad::now();
        rt.run().unwrap();
        let others = load.others_since();
        let run = load_run(dir.path()).unwrap();
        let sm = run.sampled.as_ref().expect("a sampled run");
        // Signals come at most once a scheduler tick (100 to 1,000 Hz
        // with the kernel's build): 300 ms gives 30 to 300.
        let n = sm.min_samples();
        if n < 25 {
            return Err(format!("only {n} independent samples per worker"));
        }
        // As in `samples_agree_with_the_periods_of_the_same_run`.
        let bound = Sampled::share_error(n) + 0.02 + others;
        let share = |w: usize| {
            let st = &run.workers[w].stats;
            st.busy as f64 / st.finish.saturating_sub(st.begin).max(1) as f64
        };
        let (b0, b1) = (share(0), share(1));
        // The windows reach past the workers' spans (the first begins
        // before they start): a window counts only the part inside its
        // worker's span, so a worker is never busier than its span.
        assert!(b0 <= 1.0, "worker 0 busy {b0:.4} of its span");
        let spinner = run
            .tasks
            .values()
            .find(|t| t.name.as_deref() == Some("spinner"))
            .expect("the spinner task");
        let spun = run.ns(spinner.busy) as f64 / 1e6;
        if (1.0 - b0) > bound || b1 > bound || !(300.0 * (1.0 - bound)..=330.0).contains(&spun) {
            return Err(format!(
                "worker 0 busy {b0:.3}, worker 1 busy {b1:.3}, spinner {spun:.1} ms \
                 (bound {bound:.3}, {n} samples)"
            ));
        }
        // The idle worker's time is waiting, and its exact counts are there.
        let idle = &run.workers[1].stats;
        assert!(idle.wait > idle.busy, "{idle:?}");
        assert_eq!(spinner.dispatches, 1);
        Ok(())
    });
}

#[test]
fn samples_agree_with_the_periods_of_the_same_run() {
    let _g = lock();
    for workers in [1, 2] {
        within_three_tries(&format!("check on {workers} worker(s)"), || {
            let dir = tempfile::tempdir().unwrap();
            let rt = runs::runtime_with(
                dir.path(),
                workers,
                rill::Mapping::RoundRobin,
                sampled(MonitorFlags::FULL),
            );
            let names: Vec<String> = (0..4).map(|k| format!("pipe/relay/{k}")).collect();
            let load = HostLoad::now();
            // Relay 2 spins 60 µs per message: 5000 messages, about 300 ms.
            runs::chain_with(rt, &names, Some(2), Duration::from_micros(60), 5000);
            let others = load.others_since();
            let run = load_run(dir.path()).unwrap();
            let sm = run.sampled.as_ref().expect("a sampled run");
            let n = sm.min_samples();
            let check = sm.check(&run).expect("periods and samples both");
            // The sampling error for n samples, and what other processes'
            // use of the cores meanwhile can add (samples taken late).
            let bound = 100.0 * (Sampled::share_error(n).max(0.03) + others);
            if check.worker_pp > bound || check.group_pp > bound {
                return Err(format!(
                    "{check:?} against a bound of {bound:.2} points ({n} samples, other \
                     processes used {:.1}% of the CPU time)",
                    100.0 * others
                ));
            }
            Ok(())
        });
    }
}

#[test]
fn sample_mode_counts_exactly_and_writes_little() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let rt = runs::runtime_with(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        sampled(MonitorFlags::OFF),
    );
    let names: Vec<String> = (0..6).map(|k| format!("pipe/relay/{k}")).collect();
    let messages = 200_000;
    runs::chain_with(rt, &names, None, Duration::ZERO, messages);
    let run = load_run(dir.path()).unwrap();
    assert!(run.flags.is_sampled());
    // Seven streams, every one carried every message, counted on both ends.
    assert_eq!(run.streams.len(), 7, "{:?}", run.streams);
    for s in run.streams.values() {
        assert_eq!((s.written, s.read), (messages, messages), "{s:?}");
        assert!(s.writer.is_some() && s.reader.is_some(), "{s:?}");
    }
    // Each task's dispatches, from its totals, add up to the workers'.
    let tasks: u64 = run.tasks.values().map(|t| t.dispatches).sum();
    let workers: u64 = run.workers.iter().map(|w| w.stats.dispatches).sum();
    assert!(
        tasks > 0 && tasks == workers,
        "tasks {tasks}, workers {workers}"
    );
    // A relay read and wrote every message (from its ends' totals).
    let relay = run
        .tasks
        .values()
        .find(|t| t.name.as_deref() == Some("pipe/relay/3"))
        .unwrap();
    assert_eq!((relay.reads, relay.writes), (messages, messages));
    // Sample mode writes no period: a few hundred bytes per worker, whatever
    // the dispatch rate, plus the sampler's windows.
    let secs = run.span_ns() as f64 / 1e9;
    for w in &run.workers {
        assert!(
            w.valid_len < 4096,
            "worker {} log: {} bytes",
            w.worker,
            w.valid_len
        );
    }
    let sampler = std::fs::metadata(dir.path().join(rill_monitor::SAMPLER_FILE))
        .unwrap()
        .len() as f64;
    let per_worker_sec = sampler / 2.0 / secs.max(0.01);
    assert!(
        per_worker_sec < 64.0 * 1024.0,
        "sampler log {sampler} bytes over {secs:.3} s"
    );
}

#[test]
fn a_sampled_run_with_a_rate_keeps_it() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let flags: MonitorFlags = "sample:250".parse().unwrap();
    let mut rt = runs::runtime_with(dir.path(), 1, rill::Mapping::RoundRobin, flags);
    rt.spawn("spinner", || runs::spin(Duration::from_millis(200)));
    rt.run().unwrap();
    let run = load_run(dir.path()).unwrap();
    let sm = run.sampled.as_ref().unwrap();
    assert_eq!(sm.hz, Some(250));
    // 200 ms at 250 Hz: about 50 samples (fewer when the machine is busy).
    let n = sm.min_samples();
    assert!((10..=60).contains(&n), "{n} samples");
}

/// A plan from a short sample-mode run says its busy times rest on few
/// samples (in the text, the JSON and the file, which still loads); a plan
/// from the same network in count mode does not.
#[test]
fn a_plan_from_a_short_sampled_run_warns() {
    let _g = lock();
    let names: Vec<String> = (0..4).map(|k| format!("pipe/relay/{k}")).collect();
    for (flags, sampled) in [("sample:1000", true), ("map,worker,task,stream", false)] {
        let dir = tempfile::tempdir().unwrap();
        let flags: MonitorFlags = flags.parse().unwrap();
        let rt = runs::runtime_with(dir.path(), 2, rill::Mapping::RoundRobin, flags);
        runs::chain_with(rt, &names, Some(1), Duration::from_micros(20), 2_000);
        let run = load_run(dir.path()).unwrap();
        // The run is short (some 40 ms of work) on any host that is not
        // overloaded; the rule is checked against the span it measured, so
        // a slow spell changes what is expected, not the verdict.
        let warns = sampled && run.span_ns() < rill_monitor::SHORT_SAMPLED_RUN_NS;
        let plan = rill_monitor::plan_mapping(&run, 2).unwrap();
        let said = plan.warnings.iter().any(|w| w.contains("sample-mode run"));
        assert_eq!(said, warns, "{flags}: {:?}", plan.warnings);
        let file = plan.to_file();
        assert_eq!(file.contains("# warning: a sample-mode run"), warns);
        let table = rill::ManualTable::parse(&file).unwrap();
        assert!(table.lookup("pipe/relay/1").is_some(), "{table:?}");
        let page = rill_monitor::report_html(&run, &rill_monitor::ReportOptions::default());
        assert_eq!(
            page.contains("<strong>Caution:</strong> a sample-mode run"),
            warns
        );
    }
}

/// `cpu`: sample mode on the workers' CPU time. A spinning worker is
/// estimated busy and a parked one waiting, from at most a sample per
/// scheduler tick, and the mode travels in the logs.
#[test]
fn cpu_time_sampling_estimates_a_busy_and_a_parked_worker() {
    let _g = lock();
    within_three_tries("cpu-time shares", || {
        let dir = tempfile::tempdir().unwrap();
        let flags: MonitorFlags = "cpu".parse().unwrap();
        let mut rt = runs::runtime_with(dir.path(), 2, rill::Mapping::RoundRobin, flags);
        rt.spawn_on(0, "spinner", || runs::spin(Duration::from_millis(300)));
        let load = HostLoad::now();
        rt.run().unwrap();
        let others = load.others_since();
        let run = load_run(dir.path()).unwrap();
        assert!(run.flags.is_cpu_clock() && run.flags.is_sampled());
        // The summary says what the tick-taken samples over-count.
        let notes = rill_monitor::summarize(&run).notes;
        assert!(
            notes.iter().any(|n| n.starts_with("cpu mode:")),
            "{notes:?}"
        );
        let sm = run.sampled.as_ref().expect("a sampled run");
        // Signals come at most once a tick (100 to 1,000 Hz): for the
        // spinning worker 30 to 300 in 300 ms, never more than its samples.
        let w0 = sm.workers[0];
        if !(25..=330).contains(&w0.signals) || w0.signals > w0.total {
            return Err(format!("worker 0: {w0:?}"));
        }
        // CPU-time samples of a preempted worker are missing, not late,
        // but the bound widens by the others' share all the same.
        let bound = Sampled::share_error(sm.min_samples()) + 0.02 + others;
        let share = |w: usize| {
            let st = &run.workers[w].stats;
            st.busy as f64 / st.finish.saturating_sub(st.begin).max(1) as f64
        };
        let (b0, b1) = (share(0), share(1));
        if (1.0 - b0) > bound || b1 > bound {
            return Err(format!(
                "worker 0 busy {b0:.3}, worker 1 busy {b1:.3} (bound {bound:.3})"
            ));
        }
        Ok(())
    });
}
