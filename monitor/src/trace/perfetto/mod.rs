//! `rill-mon trace` in Perfetto's protobuf format: what the trace shows
//! (tracks, slices, counters, flows) and how long runs are bounded. The
//! encoding is in [`crate::trace::perfetto::writer`]; the choice of detailed buckets in
//! [`crate::trace::detail`]; `monitor/README.md` describes the trace for users.
//!
//! `pass.rs` makes the one pass over the periods that writes the workers'
//! and tasks' slices and sums the counters; `layout.rs` declares the group
//! tracks and writes the counters.

use std::io::{self, Write};

use rill_log::EndState;

pub(crate) mod layout;
pub(crate) mod pass;
pub(crate) mod writer;

use crate::load::ids::{IdIndex, IdMap};

use crate::load::model::RunLog;
use crate::replay::merge::{for_each_event, Event};
use crate::trace::detail::{plan_detail, Buckets};
use crate::trace::perfetto::writer::{Kind, Writer};
use layout::RUN_COUNTERS;
use pass::{Names, Pass, WorkerSt};

/// The most buckets a trace is cut into (memory: about 8 bytes per bucket
/// for each counter and 4 per worker).
pub const MAX_BUCKETS: usize = 100_000;

/// Options of [`write_perfetto_trace`].
#[derive(Clone, Debug)]
pub struct PerfettoOptions {
    /// Window start, ms after the run's first time stamp (default: the start).
    pub from_ms: Option<f64>,
    /// Window end, ms after the run's first time stamp (default: the end).
    pub to_ms: Option<f64>,
    /// At most this many periods get slices of their own (the rest are
    /// merged per worker and bucket).
    pub detail: u64,
    /// Buckets the window is cut into (counter resolution and merging
    /// unit), 1 to [`MAX_BUCKETS`].
    pub buckets: usize,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions {
            from_ms: None,
            to_ms: None,
            detail: 500_000,
            buckets: 10_000,
        }
    }
}

/// Counts of what [`write_perfetto_trace`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerfettoStats {
    /// Periods starting in the window.
    pub periods: u64,
    /// Periods starting in the window shown as slices of their own on
    /// their worker's track (a period that starts before the window and
    /// reaches into it is shown, clipped, but not counted).
    pub detailed: u64,
    /// Periods starting in the window folded into merged slices.
    pub merged: u64,
    /// Merged slices written.
    pub merged_slices: u64,
    /// The most periods a detailed bucket holds (`None`: all detailed).
    pub threshold: Option<u64>,
    /// The bucket width, ns.
    pub bucket_ns: f64,
    /// Flow arrows started (a cross-worker wake-up from a detailed period).
    pub flows: u64,
    /// Flow arrows left without an end: a wake-up of the same task found
    /// later in the logs but earlier in time (another worker's) took their
    /// wake-up's place (`replay/wakeups.rs`).
    pub flows_replaced: u64,
    /// Wake-ups whose woken task next ran on another worker than its waker.
    pub cross_wakeups: u64,
    /// Periods or waits shortened on their worker's track because they
    /// overlapped the previous one, and those that clipping left empty.
    pub clipped: u64,
    /// Tracks declared.
    pub tracks: u64,
    /// Slices written (all tracks).
    pub slices: u64,
    /// Counter values written.
    pub counter_values: u64,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// The window `[from, to]` (ms after the run's first time stamp; the whole
/// run by default) in ticks, `lo <= hi`.
pub(crate) fn window(run: &RunLog, from_ms: Option<f64>, to_ms: Option<f64>) -> (u64, u64) {
    let cal = run.calibration;
    let ms_to_ticks = |ms: f64| cal.ns_to_ticks((ms * 1e6).max(0.0) as u64);
    let lo = from_ms.map_or(run.t0, |ms| run.t0.saturating_add(ms_to_ticks(ms)));
    let hi = to_ms
        .map_or(run.t1, |ms| run.t0.saturating_add(ms_to_ticks(ms)))
        .max(lo);
    (lo, hi)
}

/// Writes the run as a Perfetto protobuf trace (see `monitor/README.md`,
/// "The trace"): a track per worker, the run's counters, a track per task
/// group with its counters and a track per task, flow arrows for
/// cross-worker wake-ups. Periods in dense buckets are merged so that at
/// most `opts.detail` periods get slices of their own.
pub fn write_perfetto_trace(
    run: &RunLog,
    opts: &PerfettoOptions,
    out: &mut dyn Write,
) -> io::Result<PerfettoStats> {
    let (lo, hi) = window(run, opts.from_ms, opts.to_ms);
    let grid = Buckets::new(lo, hi, opts.buckets.clamp(1, MAX_BUCKETS));
    let plan = plan_detail(run, grid, opts.detail);
    let mut w = Writer::new(out);
    let names = Names {
        idle: w.name("idle"),
        ready: w.name("ready"),
        woken: w.name("woken, waiting for its worker"),
        poll: w.name("blocked on a poll"),
        task: w.name("task"),
        end: w.name("end"),
        stream: w.name("stream"),
        reads: w.name("reads"),
        writes: w.name("writes"),
        periods: w.name("periods"),
        busy_ns: w.name("busy_ns"),
        idle_ns: w.name("idle_ns"),
        groups: w.name("groups"),
        end_states: [
            w.name("yielded"),
            w.name("blocked reading"),
            w.name("blocked writing"),
            w.name("blocked on a poll"),
            w.name("ended"),
            w.name("panicked"),
        ],
        running_on: run
            .workers
            .iter()
            .map(|x| w.name(&format!("running on worker {}", run.worker_name(x.worker))))
            .collect(),
    };
    let span_ms = run.ns(hi - lo) as f64 / 1e6;
    let root = w.track(
        &format!("rill run {}", run.dir.display()),
        Some(&format!(
            "{} workers; {:.3} ms from {:.3} ms",
            run.workers.len(),
            span_ms,
            run.ns(lo - run.t0) as f64 / 1e6
        )),
        None,
        Kind::Slices,
        0,
        true,
    )?;
    let workers_parent = w.track("workers", None, Some(root), Kind::Slices, 0, true)?;
    // Across ranks, a group of worker tracks per rank.
    let mut rank_parents = std::collections::BTreeMap::new();
    if let Some(ranks) = &run.ranks {
        for (k, r) in ranks.ranks.iter().enumerate() {
            let t = w.track(
                &format!("rank {}", r.rank),
                Some(&format!(
                    "{} worker(s); clock offset {} ns{}",
                    r.workers,
                    r.clock_offset_ns,
                    r.clock_residual_ns
                        .map_or_else(String::new, |ns| format!(", aligned within ±{ns} ns"))
                )),
                Some(workers_parent),
                Kind::Slices,
                k as i32,
                true,
            )?;
            rank_parents.insert(r.rank, t);
        }
    }
    let mut workers = Vec::new();
    for (i, x) in run.workers.iter().enumerate() {
        let parent = run
            .ranks
            .as_ref()
            .and_then(|r| r.worker(x.worker))
            .and_then(|(r, _)| rank_parents.get(&r).copied())
            .unwrap_or(workers_parent);
        let t = w.track(
            &format!("worker {}", run.worker_name(x.worker)),
            None,
            Some(parent),
            Kind::Slices,
            i as i32,
            false,
        )?;
        workers.push(WorkerSt {
            worker: x.worker,
            track: t,
            last_end: 0,
            merge: None,
        });
    }
    let counters_parent = w.track("run counters", None, Some(root), Kind::Slices, 1, true)?;
    let mut run_counters = Vec::new();
    for (i, (name, unit, desc)) in RUN_COUNTERS.iter().enumerate() {
        let share = (*unit == "tasks").then_some("rill tasks");
        run_counters.push(w.track(
            name,
            Some(desc),
            Some(counters_parent),
            Kind::Counter { unit, share },
            i as i32,
            false,
        )?);
    }
    let detail_track = w.track(
        "detail",
        Some("stretches where periods are merged per worker and bucket; --from/--to show them in full"),
        Some(root),
        Kind::Slices,
        2,
        false,
    )?;
    let long = (plan.grid.width / 2).max(1);
    let mut pass = Pass {
        run,
        w,
        root,
        grid,
        lo,
        hi,
        long,
        tasks: Vec::new(),
        task_ix: IdIndex::default(),
        groups: Vec::new(),
        group_ix: std::collections::HashMap::new(),
        workers,
        streams: crate::replay::wakeups::StreamEnds::default(),
        wait_names: IdMap::default(),
        sums: Default::default(),
        near: Default::default(),
        point: Default::default(),
        long_gaps_left: opts.detail,
        counted_groups: 0,
        next_flow: 0,
        stats: PerfettoStats {
            threshold: plan.threshold,
            periods: plan.periods,
            bucket_ns: run.ns(plan.grid.width) as f64,
            ..PerfettoStats::default()
        },
        n: names,
        plan,
    };
    for (id, s) in &run.streams {
        *pass.streams.ends(*id) = (s.writer, s.reader);
    }
    // Groups, heaviest (busy time) first, each with its counters.
    let mut busy: Vec<(u64, u64)> = run.tasks.values().map(|t| (t.id, t.busy)).collect();
    busy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for &(id, _) in &busy {
        pass.task(id);
    }
    let mut order: Vec<usize> = (0..pass.groups.len()).collect();
    let group_busy = |g: usize| -> u64 {
        pass.tasks
            .iter()
            .filter(|t| t.group == g)
            .map(|t| run.tasks.get(&t.id).map_or(0, |i| i.busy))
            .sum()
    };
    let weights: Vec<u64> = order.iter().map(|&g| group_busy(g)).collect();
    order.sort_by(|&a, &b| weights[b].cmp(&weights[a]).then(a.cmp(&b)));
    for (rank, &g) in order.iter().enumerate() {
        pass.declare_group(g, 3 + rank as i32)?;
    }
    pass.detail_marks(detail_track)?;

    // The merge; each cursor releases the pages it has read (`Behind`), so
    // that the pass keeps a bounded part of the logs resident.
    // Decoded on threads where there is a core to spare (`replay/merge.rs`); the
    // first error stops the writing, the rest of the pass is skipped.
    let mut failed: io::Result<()> = Ok(());
    for_each_event(run, true, |wi, e| {
        if failed.is_err() {
            return;
        }
        failed = match e {
            Event::Period(p) => pass.period(wi, &p.p, p.io),
            Event::Wait { t, dur } => pass.wait(wi, t, dur),
        };
    });
    failed?;
    for wi in 0..pass.workers.len() {
        pass.flush_merge(wi)?;
    }
    // Open waits, to the run's end (or the window's).
    let mut open: Vec<usize> = (0..pass.tasks.len())
        .filter(|&k| {
            matches!(
                pass.tasks[k].last,
                Some((
                    _,
                    EndState::BlockedInput { .. }
                        | EndState::BlockedOutput { .. }
                        | EndState::BlockedAny
                ))
            )
        })
        .collect();
    open.sort_by_key(|&k| pass.tasks[k].id);
    let end = run.t1.max(hi);
    for k in open {
        let show = pass.tasks[k].last_shown;
        let woken = pass.tasks[k].woken.take().map(|w| w.at);
        pass.gap(k, end, show, woken)?;
    }
    pass.write_counters(&run_counters)?;
    let mut stats = pass.stats;
    let ws = pass.w.finish()?;
    stats.tracks = ws.tracks;
    stats.slices = ws.slices;
    stats.counter_values = ws.counter_values;
    stats.packets = ws.packets;
    stats.bytes = ws.bytes;
    Ok(stats)
}
