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
use crate::load::samples::{
    charge, Sampled, SamplerCheck, WorkerSamples, MAX_WORKER_ID, SAMPLER_FILE,
};

impl Sampled {
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
            let g = crate::load::groups::group_of(&t.label()).into_owned();
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
