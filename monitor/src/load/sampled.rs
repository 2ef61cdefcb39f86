//! Sample mode: a run that records no periods. Its workers' logs hold exact
//! counts (dispatches per task and worker, messages and waits per stream
//! end, waits per worker); the sampler's log (`sampler.rlog`) holds windows
//! of samples of what each worker was doing. From the windows come the time
//! figures the other analyses read from periods: a worker's busy and waiting
//! time, a task's busy time.
//!
//! Estimate: in a window of `dur` ticks (the part of it inside the worker's
//! span) and `total` samples, each sample stands for `dur / total` ticks of
//! what it found. Samples that found the
//! worker between tasks are charged to the tasks that ran in the window, in
//! proportion to their samples (a period-recording run charges that step to
//! the next period, whose start is the previous one's end); a worker's busy
//! time is what its tasks were charged, its waiting time its spinning, idle
//! and parked samples. A share estimated from
//! `n` samples has a standard error of at most `0.5 / sqrt(n)` (a binomial
//! proportion at its worst, p = 1/2) when the samples fall independently of
//! what they sample; periodic samples of a program that is not in step with
//! them do at least as well. [`Sampled::share_error`] is the 95% bound,
//! `1.96 * 0.5 / sqrt(n)`, that reports print beside estimates.
//!
//! The `n` of a worker is not its sample count: a timer signal counts the
//! periods it missed as samples of the state it finds (with `--monitor
//! cpu`, the periods of CPU time since the last signal, at most one signal
//! per scheduler tick), and its parked time is measured by the clock. So
//! `n` is its signals, scaled up by the square of the share of its time it
//! was awake, the only part the samples estimate
//! ([`WorkerSamples::observations`]).

use std::path::Path;

use rill_log::{Header, Item, SampleWindow, Scanner};

use crate::load::model::{RunLog, TaskInfo};
use crate::replay::activity::{Activity, Grid};

/// The sampler log's file name in a log directory.
pub const SAMPLER_FILE: &str = "sampler.rlog";

/// Sample mode's estimates are kept for workers with ids below this.
const MAX_WORKER_ID: usize = 1 << 16;

/// What a sample-mode run's sampler recorded, and its totals per worker.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    /// The sampling rate the run asked for (`sample:HZ`), if not the default.
    pub hz: Option<u32>,
    /// Every window of every worker, in log order.
    pub windows: Vec<SampleWindow>,
    /// Per worker (by id): samples in all, and by state.
    pub workers: Vec<WorkerSamples>,
    /// Estimated busy time per task (ticks).
    pub task_busy: std::collections::BTreeMap<u64, u64>,
    /// Estimated busy and waiting time per worker (ticks), by id.
    pub worker_time: Vec<(u64, u64)>,
}

/// How far a run's samples are from its periods, when it recorded both:
/// the largest difference of a busy share, in percentage points.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SamplerCheck {
    /// Of a worker's span.
    pub worker_pp: f64,
    /// Of all workers' time, per task group.
    pub group_pp: f64,
}

/// One worker's samples over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerSamples {
    /// Samples taken.
    pub total: u64,
    /// The timer signals that took them (see
    /// [`SampleWindow::signals`](rill_log::SampleWindow)).
    pub signals: u64,
    /// Samples that found a task running.
    pub running: u64,
    /// Samples between tasks.
    pub sched: u64,
    /// Samples of a task spinning before a block.
    pub spin: u64,
    /// Samples of the worker idle and awake.
    pub idle: u64,
    /// Samples of the worker asleep.
    pub parked: u64,
}

impl WorkerSamples {
    /// The independent observations the worker's busy share stands on, for
    /// [`Sampled::share_error`]: its signals, over the square of the share
    /// of its samples that found it awake (its parked time is measured, so
    /// the error of a share of its whole time is the awake share times the
    /// error of the signals' share). 0 without samples; `u64::MAX` for a
    /// worker parked throughout (its shares are exact).
    pub fn observations(&self) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let awake = self.total.saturating_sub(self.parked) as f64 / self.total as f64;
        if awake <= 0.0 {
            return u64::MAX;
        }
        (self.signals as f64 / (awake * awake)).round() as u64
    }
}

impl Sampled {
    /// The 95% bound of a share estimated from `n` samples (0 to 1; 1 when
    /// there are none).
    pub fn share_error(n: u64) -> f64 {
        if n == 0 {
            1.0
        } else {
            1.96 * 0.5 / (n as f64).sqrt()
        }
    }

    /// For a run that recorded periods and samples both: how far the
    /// samples' busy shares are from the periods'. `None` for a run without
    /// periods.
    pub fn check(&self, run: &RunLog) -> Option<SamplerCheck> {
        if !run.flags.contains(rill_log::MonitorFlags::SCHEDULER) {
            return None;
        }
        let span: u64 = run
            .workers
            .iter()
            .map(|w| w.stats.finish.saturating_sub(w.stats.begin))
            .fold(0u64, u64::saturating_add);
        if span == 0 {
            return None;
        }
        let mut worker_pp = 0f64;
        for w in &run.workers {
            let (busy, _) = self.worker_time.get(w.worker as usize).copied()?;
            let s = w.stats.finish.saturating_sub(w.stats.begin).max(1) as f64;
            let d = (busy as f64 - w.stats.busy as f64).abs() / s * 100.0;
            worker_pp = worker_pp.max(d);
        }
        let mut groups: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
        for t in run.tasks.values() {
            let g = crate::group_of(&t.label()).into_owned();
            let e = groups.entry(g).or_default();
            e.0 += t.busy as f64;
            e.1 += self.task_busy.get(&t.id).copied().unwrap_or(0) as f64;
        }
        let group_pp = groups
            .values()
            .map(|(periods, samples)| (periods - samples).abs() / span as f64 * 100.0)
            .fold(0.0, f64::max);
        Some(SamplerCheck {
            worker_pp,
            group_pp,
        })
    }

    /// The fewest independent observations any worker's estimates stand
    /// on ([`WorkerSamples::observations`]): what bounds the error of the
    /// run's estimates.
    pub fn min_samples(&self) -> u64 {
        self.workers
            .iter()
            .map(WorkerSamples::observations)
            .min()
            .unwrap_or(0)
    }
}

/// What one running sample of a window is charged (ticks): its own share of
/// the window, `per` ticks, plus the window's scheduler samples (`sched`)
/// spread over its `running` samples, as a period-recording run charges
/// the step between two dispatches to the next period. A window with no
/// task running keeps them unattributed (0).
pub(crate) fn charge(per: f64, running: u64, sched: u32) -> f64 {
    if running > 0 {
        per * (1.0 + f64::from(sched) / running as f64)
    } else {
        0.0
    }
}

/// Reads the sampler's log of `run` (a sample-mode run) and fills in the time
/// figures from its windows: worker busy and waiting time, task busy time.
/// A missing or damaged sampler log is a warning, never an error: the exact
/// counts stand without it.
pub(crate) fn load(run: &mut RunLog) {
    let path = run.dir.join(SAMPLER_FILE);
    match read_windows(&path, run) {
        Ok((windows, warning)) => load_windows(run, windows, warning.into_iter().collect()),
        Err(e) => {
            let problem = format!(
                "{}: {e}; busy and waiting times are unknown (the counts are exact)",
                path.display()
            );
            load_windows(run, Vec::new(), vec![problem])
        }
    }
}

/// [`load`] from windows read already (a run across ranks: every rank's
/// sampler's windows), with the problems met reading them.
pub(crate) fn load_windows(run: &mut RunLog, windows: Vec<SampleWindow>, problems: Vec<String>) {
    let mut sampled = Sampled {
        hz: run.flags.sample_hz(),
        windows,
        ..Sampled::default()
    };
    run.warnings.extend(problems);
    apply(run, &mut sampled);
    run.sampled = Some(sampled);
}

/// The windows of the sampler's log at `path`, and a warning if it is
/// damaged.
fn read_windows(path: &Path, run: &RunLog) -> anyhow::Result<(Vec<SampleWindow>, Option<String>)> {
    let data = std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read: {e}"))?;
    let (header, start) = Header::parse(&data).map_err(|e| anyhow::anyhow!("{e}"))?;
    if header.calibration != run.calibration {
        anyhow::bail!("its clock calibration differs from the worker logs' (another run?)");
    }
    let mut sc = Scanner::new(&data, start);
    let mut windows = Vec::new();
    while let Some(item) = sc.next() {
        if let Item::Samples(h) = item {
            windows.push(SampleWindow {
                t: h.t,
                dur: h.dur,
                worker: h.worker,
                total: h.total,
                signals: h.signals,
                sched: h.sched,
                spin: h.spin,
                idle: h.idle,
                parked: h.parked,
                tasks: sc.sample_tasks().to_vec(),
            });
        }
    }
    let warning = sc.damaged_at().map(|at| {
        format!(
            "{}: damaged record at byte {at}; the windows before it are used",
            path.display()
        )
    });
    Ok((windows, warning))
}

/// Estimates the time figures from the windows and, for a run without
/// periods, sets the run's figures to them. (A run may record periods and
/// samples both, through the API, to check the sampler against the periods:
/// its figures stay the periods'.)
fn apply(run: &mut RunLog, sampled: &mut Sampled) {
    estimate(run, sampled);
    if run.flags.contains(rill_log::MonitorFlags::SCHEDULER) {
        return;
    }
    for w in &mut run.workers {
        if let Some(&(busy, wait)) = sampled.worker_time.get(w.worker as usize) {
            w.stats.busy = busy;
            w.stats.wait = wait;
        }
    }
    // A worker log whose records stop before its file ends (its run is
    // still going, or was killed) has no end record: its span reaches as far
    // as its windows do.
    let mut last: std::collections::BTreeMap<u32, u64> = Default::default();
    for w in &sampled.windows {
        let end = w.t.saturating_add(w.dur);
        let e = last.entry(w.worker).or_insert(end);
        *e = (*e).max(end);
    }
    for w in &mut run.workers {
        if let (true, Some(&end)) = (w.is_open(), last.get(&w.worker)) {
            if end > w.stats.finish {
                w.stats.finish = end;
                run.t1 = run.t1.max(end);
            }
        }
    }
    for (&task, &busy) in &sampled.task_busy {
        let t = run.tasks.entry(task).or_insert_with(|| TaskInfo {
            id: task,
            ..TaskInfo::default()
        });
        t.busy = busy;
    }
    task_messages(run);
}

/// Fills `sampled`'s per-worker samples and its estimates from its windows.
fn estimate(run: &RunLog, sampled: &mut Sampled) {
    // Indexed by worker id; a forged id cannot make the tables huge (a
    // worker from this id on gets no estimate).
    let n = run
        .workers
        .iter()
        .map(|w| w.worker as usize + 1)
        .max()
        .unwrap_or(0)
        .min(MAX_WORKER_ID);
    sampled.workers = vec![WorkerSamples::default(); n];
    // Each worker's span from its log (to the end of time for a log still
    // open): its samples were all taken inside it, so a window stands for
    // the part of it the span covers. (The first window begins before the
    // workers start and the last ends after they have stopped; spread over
    // the whole window, a worker's samples made it busier than its span.)
    let mut spans = vec![(0u64, u64::MAX); n];
    for w in &run.workers {
        if let Some(s) = spans.get_mut(w.worker as usize) {
            let finish = if w.is_open() || w.stats.finish <= w.stats.begin {
                u64::MAX
            } else {
                w.stats.finish
            };
            *s = (w.stats.begin, finish);
        }
    }
    let mut busy = vec![0f64; n];
    let mut wait = vec![0f64; n];
    let mut task_busy: std::collections::BTreeMap<u64, f64> = Default::default();
    for w in &sampled.windows {
        let i = w.worker as usize;
        if i >= n || w.total == 0 {
            continue;
        }
        let (begin, finish) = spans[i];
        let end = w.t.saturating_add(w.dur);
        let covered = end.min(finish).saturating_sub(w.t.max(begin));
        // A window with samples overlaps its worker's span; one that would
        // not (a log whose clock disagrees) keeps its own length.
        let dur = if covered == 0 { w.dur } else { covered };
        let per = dur as f64 / f64::from(w.total);
        let running = w.running();
        // The scheduler's samples go to the tasks that ran in the window.
        let charge = charge(per, running, w.sched);
        let ws = &mut sampled.workers[i];
        ws.total += u64::from(w.total);
        ws.signals += u64::from(w.signals);
        ws.running += running;
        ws.sched += u64::from(w.sched);
        ws.spin += u64::from(w.spin);
        ws.idle += u64::from(w.idle);
        ws.parked += u64::from(w.parked);
        busy[i] += running as f64 * charge;
        wait[i] += f64::from(w.spin.saturating_add(w.idle).saturating_add(w.parked)) * per;
        for &(task, k) in &w.tasks {
            *task_busy.entry(task).or_insert(0.0) += f64::from(k) * charge;
        }
    }
    sampled.task_busy = task_busy.into_iter().map(|(t, b)| (t, b as u64)).collect();
    sampled.worker_time = busy
        .iter()
        .zip(&wait)
        .map(|(&b, &w)| (b as u64, w as u64))
        .collect();
}

/// A sample-mode run's per-task messages: what the ends each task held
/// first moved (the stream totals are per end; an end handed on counts for
/// its first holder).
fn task_messages(run: &mut RunLog) {
    let mut moved: Vec<(u64, u64, u64)> = Vec::new();
    for s in run.streams.values() {
        if let Some(r) = s.reader {
            moved.push((r, s.read, 0));
        }
        if let Some(w) = s.writer {
            moved.push((w, 0, s.written));
        }
    }
    for (task, reads, writes) in moved {
        if let Some(t) = run.tasks.get_mut(&task) {
            t.reads = t.reads.saturating_add(reads);
            t.writes = t.writes.saturating_add(writes);
        }
    }
}

/// Whether `run` is in sample mode only (no periods: the samples stand in
/// for them).
pub(crate) fn is_sample_only(run: &RunLog) -> bool {
    run.flags.is_sampled() && !run.flags.contains(rill_log::MonitorFlags::SCHEDULER)
}

/// A sample-mode run's activity (`activity.rs`) on `grid`: each window's
/// estimated busy time per task and worker spread over the grid's windows in
/// proportion to their overlap; per stream the exact wait counts (no times:
/// sample mode measures no wait).
pub(crate) fn activity(run: &RunLog, sm: &Sampled, grid: Grid) -> Activity {
    let mut act = Activity::empty(grid.clone());
    act.sampled = true;
    for w in &run.workers {
        act.workers.entry(w.worker).or_default();
    }
    for w in &sm.windows {
        let running = w.running();
        if w.total == 0 || running == 0 || w.dur == 0 {
            continue;
        }
        let per = w.dur as f64 / f64::from(w.total);
        let charge = charge(per, running, w.sched);
        let (a, b) = (w.t, w.t.saturating_add(w.dur));
        // The grid windows the sample window overlaps, and how much.
        let mut parts: Vec<(usize, f64)> = Vec::new();
        grid.split(a, b, |g, t| parts.push((g, t as f64 / w.dur as f64)));
        let strip = act.workers.entry(w.worker).or_default();
        for &(g, f) in &parts {
            strip.add(g, (running as f64 * charge * f) as u64);
        }
        for &(task, k) in &w.tasks {
            let busy = f64::from(k) * charge;
            let t = act.tasks.entry(task).or_default();
            for &(g, f) in &parts {
                t.busy.add(g, (busy * f) as u64);
            }
            t.add_busy(w.worker, busy as u64);
        }
    }
    for t in act.tasks.values_mut() {
        t.settle_worker();
    }
    for s in run.streams.values() {
        let a = act.streams.entry(s.id).or_default();
        a.reader_waits = s.reader_blocked;
        a.writer_waits = s.writer_blocked;
        a.messages = s.written.max(s.read);
        a.reader = s.reader;
        a.writer = s.writer;
    }
    act
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_bound_shrinks_with_the_root_of_the_samples() {
        assert_eq!(Sampled::share_error(0), 1.0);
        let e100 = Sampled::share_error(100);
        let e400 = Sampled::share_error(400);
        assert!((e100 - 0.098).abs() < 1e-9, "{e100}");
        assert!((e100 / e400 - 2.0).abs() < 1e-9);
    }
}
