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

// ---------------------------------------------------------------------------
// The mapping advice in the API's words for a program of one's own.

/// Two tasks named `first` (busy) and `second` on two workers, one stream
/// between them; `prefix` leads their names.
fn two_tasks(dir: &std::path::Path, prefix: &str) {
    let a = format!("{prefix}first");
    let b = format!("{prefix}second");
    let w0 = vec![
        assign(1, 0, &a),
        bind(10, rill_log::Side::Writer, 1),
        p(0, 500, 1, EndState::Ended, vec![woke(10, 0, 5)]),
    ];
    let w1 = vec![
        assign(2, 1, &b),
        bind(10, rill_log::Side::Reader, 2),
        p(0, 400, 2, EndState::Ended, vec![io(10, 5, 0)]),
    ];
    write_run(dir, &[w0, w1]);
}

fn mapping_section(html: &str) -> &str {
    let at = html
        .find("<section id=\"mapping\">")
        .expect("a mapping section");
    let end = html[at..].find("</section>").unwrap() + at;
    &html[at..end]
}

#[test]
fn mapping_advice_for_a_program_of_ones_own_speaks_the_api() {
    let dir = tempfile::tempdir().unwrap();
    two_tasks(dir.path(), "log/");
    let run = load_run(dir.path()).unwrap();
    let html = report_html(&run, &ReportOptions::default());
    let m = mapping_section(&html);
    assert!(!m.contains("rill-bench"), "not a rill-bench run: {m}");
    assert!(m.contains("rill-mon map "), "{m}");
    assert!(m.contains("-o proposed-2.map"), "{m}");
    assert!(
        m.contains(
            ".mapping(rill::Mapping::Manual(rill::ManualTable::load(&quot;proposed-2.map&quot;)?))"
        ),
        "{m}"
    );
}

#[test]
fn mapping_advice_for_a_rill_bench_run_names_its_command() {
    let dir = tempfile::tempdir().unwrap();
    two_tasks(dir.path(), "mc/");
    let run = load_run(dir.path()).unwrap();
    let html = report_html(&run, &ReportOptions::default());
    let m = mapping_section(&html);
    assert!(
        m.contains("rill-bench mc --workers 2 --mapping proposed-2.map"),
        "{m}"
    );
    assert!(!m.contains("Mapping::Manual"), "{m}");
}

// ---------------------------------------------------------------------------
// Poll waits in the summary's stream table.

/// Three sources, each spinning `work` before each of its `messages`
/// writes, merged by `poll/collect` through a `PollSet` on another worker:
/// the collector blocks on the poll, not on one stream.
fn polled(dir: &std::path::Path, messages: u64, work: std::time::Duration) -> rill::RunStats {
    let mut rt = runs::runtime_with(
        dir,
        2,
        rill::Mapping::RoundRobin,
        rill_log::MonitorFlags::FULL,
    );
    let (total, stats) = rt
        .run_main(move || {
            // The main task is the collector.
            let mut set = rill::PollSet::new();
            for k in 0..3u64 {
                let (mut w, r) = rill::stream::<u64>(2);
                set.push(r);
                rill::spawn(format!("poll/src/{k}"), move || {
                    for i in 0..messages {
                        runs::spin(work);
                        w.write(i).unwrap();
                    }
                });
            }
            let mut n = 0u64;
            for (_, v) in set {
                n += v;
            }
            n
        })
        .unwrap();
    assert_eq!(total, 3 * (0..messages).sum::<u64>());
    stats
}

#[test]
fn summary_counts_poll_waits_on_streams_as_waits_does() {
    let dir = tempfile::tempdir().unwrap();
    polled(dir.path(), 200, std::time::Duration::from_micros(20));
    let run = load_run(dir.path()).unwrap();
    let s = summarize(&run);
    let w = rill_monitor::waits(&run, false);
    // Per stream: the summary's reader waits are `waits`' reader waits.
    let mut polls = 0;
    for st in &s.streams {
        let row = w.streams.iter().find(|r| r.stream == st.stream);
        let theirs = row.map_or(0, |r| r.reader_waits);
        assert_eq!(
            st.reader_blocked + st.reader_poll_waits,
            theirs,
            "stream {}",
            st.stream
        );
        polls += st.reader_poll_waits;
    }
    assert!(
        polls > 0,
        "the collector blocked on its poll: {}",
        s.to_text()
    );
    assert_eq!(s.unattributed_poll_waits, w.unattributed_polls);
    let text = s.to_text();
    assert!(
        text.contains("reader waits") && text.contains("a poll wait"),
        "{text}"
    );
    // The text's column shows them: some polled stream's row is not 0.
    let json = serde_json::to_value(&s).unwrap();
    assert!(json["streams"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["reader_poll_waits"].as_u64().unwrap() > 0));
}

// ---------------------------------------------------------------------------
// One definition of a dispatch.

/// The report's header says "N dispatches, M spins".
fn header_counts(html: &str) -> (u64, u64) {
    let at = html
        .find(" dispatches")
        .expect("a dispatch count in the header");
    let head = &html[..at];
    let d = head[head.rfind('>').unwrap() + 1..].parse().unwrap();
    let rest = &html[at + " dispatches".len()..];
    let s = match rest.strip_prefix(", ") {
        Some(r) => r[..r.find(' ').unwrap()].parse().unwrap(),
        None => 0,
    };
    (d, s)
}

/// The summary, the report and the logs' worker totals count dispatches as
/// the runtime does (resumptions), spins apart.
fn check_dispatches(dir: &std::path::Path, stats: &rill::RunStats) {
    let run = load_run(dir).unwrap();
    let s = summarize(&run);
    for w in &s.workers {
        let rs = &stats.workers[w.worker as usize];
        assert_eq!(
            (w.dispatches, w.spins),
            (rs.dispatches, rs.spins),
            "worker {}",
            w.worker
        );
        let ws = &run
            .workers
            .iter()
            .find(|l| l.worker == w.worker)
            .unwrap()
            .stats;
        assert_eq!(ws.resumptions(), rs.dispatches);
    }
    let total: u64 = s.workers.iter().map(|w| w.dispatches).sum();
    assert_eq!(total, stats.dispatches);
    let tasks: u64 = s.tasks.iter().map(|t| t.dispatches).sum();
    assert_eq!(tasks, stats.dispatches, "the tasks' dispatches add up");
    let html = report_html(&run, &ReportOptions::default());
    assert_eq!(header_counts(&html), (stats.dispatches, stats.spins));
    assert!(s.to_text().contains("spins"));
}

#[test]
fn dispatches_are_the_runtimes_resumptions_with_spins_apart() {
    let mut spun = 0;
    for work in [0u64, 20] {
        let dir = tempfile::tempdir().unwrap();
        let stats = polled(dir.path(), 300, std::time::Duration::from_micros(work));
        check_dispatches(dir.path(), &stats);
        spun += stats.spins;

        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..3).map(|k| format!("pipe/relay/{k}")).collect();
        let rt = runs::runtime_with(
            dir.path(),
            2,
            rill::Mapping::RoundRobin,
            rill_log::MonitorFlags::FULL,
        );
        let d = std::time::Duration::from_micros(work);
        let stats = runs::chain_with(rt, &names, Some(1), d, 500);
        check_dispatches(dir.path(), &stats);
        spun += stats.spins;
    }
    // On one core per worker the runs spin; where workers share cores they
    // do not, and the test then checks the plain count only.
    eprintln!("spins: {spun}");
}

#[test]
fn sample_mode_dispatches_are_the_runtimes() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..3).map(|k| format!("pipe/relay/{k}")).collect();
    let rt = runs::runtime_with(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        rill_log::MonitorFlags::SAMPLED,
    );
    let stats = runs::chain_with(
        rt,
        &names,
        Some(1),
        std::time::Duration::from_micros(5),
        500,
    );
    let run = load_run(dir.path()).unwrap();
    let s = summarize(&run);
    let total: u64 = s.workers.iter().map(|w| w.dispatches).sum();
    let spins: u64 = s.workers.iter().map(|w| w.spins).sum();
    assert_eq!((total, spins), (stats.dispatches, stats.spins));
}

#[test]
fn dispatches_where_workers_share_cores() {
    // More workers than cores: the runtime does not spin, and a block its
    // worker idled through is no spin either.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..5).map(|k| format!("pipe/relay/{k}")).collect();
    let rt = runs::runtime_with(
        dir.path(),
        cores + 2,
        rill::Mapping::RoundRobin,
        rill_log::MonitorFlags::FULL,
    );
    let d = std::time::Duration::from_micros(5);
    let stats = runs::chain_with(rt, &names, Some(1), d, 1000);
    assert_eq!(stats.spins, 0);
    check_dispatches(dir.path(), &stats);
}

/// Every monitored mode, periods or not: each worker's log ends with its
/// own counts, and the summary's and the report's dispatches and spins are
/// `RunStats`' exactly (`rill::WorkerStats::spins` is the runtime's one
/// definition of a spin; the logs' shape is only the fallback).
#[test]
fn summary_spins_are_the_runtimes_in_every_monitored_mode() {
    use rill_log::MonitorFlags as F;
    let count = F::MAPPING
        .union(F::SCHEDULER)
        .union(F::WORKER)
        .union(F::STREAM);
    let mut spun = 0;
    for (mode, flags) in [
        ("full", F::FULL),
        ("count", count),
        ("task", F::SCHEDULER),
        ("full,sample", F::FULL.union(F::SAMPLE)),
        ("sample", F::SAMPLED),
        ("map,worker", F::MAPPING.union(F::WORKER)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..3).map(|k| format!("pipe/relay/{k}")).collect();
        let rt = runs::runtime_with(dir.path(), 2, rill::Mapping::RoundRobin, flags);
        let d = std::time::Duration::from_micros(2);
        let stats = runs::chain_with(rt, &names, Some(1), d, 400);
        spun += stats.spins;
        let run = load_run(dir.path()).unwrap();
        let s = summarize(&run);
        for w in &run.workers {
            let rs = &stats.workers[w.worker as usize];
            let t = w.stats.totals.expect("a worker's totals");
            assert_eq!((t.dispatches, t.spins), (rs.dispatches, rs.spins), "{mode}");
            assert_eq!((t.idles, t.parks), (rs.idles, rs.parks), "{mode}");
            let row = s.workers.iter().find(|r| r.worker == w.worker).unwrap();
            assert_eq!(
                (row.dispatches, row.spins),
                (rs.dispatches, rs.spins),
                "{mode}, worker {}",
                w.worker
            );
        }
        let html = report_html(&run, &ReportOptions::default());
        assert_eq!(
            header_counts(&html),
            (stats.dispatches, stats.spins),
            "{mode}"
        );
    }
    // On one core per worker the runs spin; where workers share cores they
    // do not (and the counts still agree).
    eprintln!("spins: {spun}");
}

/// Worker 0's four periods of task 1 have a spin's shape twice (ended
/// blocked, a wait from that end, the next period from the wait's end);
/// worker 1's one period of task 2 wakes it. `totals`: the workers' own
/// counts (dispatches, spins).
fn spin_shapes(dir: &std::path::Path, totals: Option<[(u64, u64); 2]>) {
    use rill_log::Side;
    let blocked = EndState::BlockedInput { stream: 10 };
    let mut w0 = vec![
        Record::WorkerStart { t: 0 },
        assign(1, 0, "sink"),
        assign(2, 1, "src"),
        bind(10, Side::Reader, 1),
        bind(10, Side::Writer, 2),
        p(0, 10, 1, blocked, vec![]),
        Record::WorkerWait { t: 10, dur: 5 },
        p(15, 20, 1, blocked, vec![io(10, 1, 0)]),
        Record::WorkerWait { t: 20, dur: 5 },
        p(25, 30, 1, blocked, vec![io(10, 1, 0)]),
        // Woken at 45 (the source's write), dispatched at 50: no spin.
        Record::WorkerWait { t: 30, dur: 15 },
        p(50, 60, 1, EndState::Ended, vec![io(10, 1, 0)]),
    ];
    let mut w1 = vec![
        Record::WorkerStart { t: 0 },
        p(0, 45, 2, EndState::Ended, vec![woke(10, 0, 3)]),
    ];
    if let Some([(d0, s0), (d1, s1)]) = totals {
        for (log, dispatches, spins) in [(&mut w0, d0, s0), (&mut w1, d1, s1)] {
            log.push(Record::WorkerTotals {
                t: 60,
                dispatches,
                spins,
                idles: 1,
                parks: 0,
            });
        }
    }
    w0.push(Record::WorkerEnd { t: 60 });
    w1.push(Record::WorkerEnd { t: 60 });
    write_run(dir, &[w0, w1]);
}

#[test]
fn worker_totals_outrank_the_logs_shape() {
    let counts = |totals| {
        let dir = tempfile::tempdir().unwrap();
        spin_shapes(dir.path(), totals);
        let s = summarize(&load_run(dir.path()).unwrap());
        let w: Vec<(u64, u64)> = s.workers.iter().map(|w| (w.dispatches, w.spins)).collect();
        let sink = s.tasks.iter().find(|t| t.name == "sink").unwrap();
        (w, (sink.dispatches, sink.spins))
    };
    // No totals (a log of format version 5): the spins from the shape.
    assert_eq!(counts(None), (vec![(2, 2), (1, 0)], (2, 2)));
    // The totals agree: the same figures.
    assert_eq!(
        counts(Some([(2, 2), (1, 0)])),
        (vec![(2, 2), (1, 0)], (2, 2))
    );
    // The worker never spun (workers sharing cores): the shape was a
    // block it idled through, for the worker and its tasks.
    assert_eq!(
        counts(Some([(4, 0), (1, 0)])),
        (vec![(4, 0), (1, 0)], (4, 0))
    );
    // The totals say one spin: the worker's figures are theirs; the task's
    // split still follows the shape.
    assert_eq!(counts(Some([(3, 1), (1, 0)])).0, vec![(3, 1), (1, 0)]);
}
