//! `rill-mon evolution`: how the run's tasks and workers spent their time,
//! bucket by bucket, as stacked shares (the view for runs too dense for a
//! per-period timeline). `monitor/README.md` ("`evolution`") states the
//! definitions for users.
//!
//! The window (the run, or `--from/--to`) is cut into equal buckets. In each
//! bucket of length `L`, a state's *mean* is the time spent in it, summed
//! over the tasks (or workers) and divided by `L`: the mean number of tasks
//! (workers) in that state. Its *share* is the mean over the live tasks'
//! mean (task states) or over the number of workers (worker states).
//!
//! * With periods (`full`, `sched`; `replay.rs`): a task is *running* during
//!   its periods; after a period it is *ready* (yielded), *blocked reading*
//!   (an empty stream, or a poll) or *blocked writing* (a full stream) up to
//!   its wake-up, taken at the end of the waker's period (the first period
//!   with the woke-peer bit on the stream since the wait began, clamped to
//!   the wait; a poll's wake-up is not logged: blocked to the dispatch), and
//!   *ready* from there to its dispatch; *new* from its creation
//!   (`TaskAssign`) to its first dispatch. These are the definitions of the
//!   trace's counters (`pftrace`), except that a wake-up whose waker's
//!   period started before the woken task's blocking period still splits
//!   the wait that follows (the trace counts it blocked to the dispatch).
//!   A task that ended (or whose last period
//!   yielded) is no longer counted; one whose last period ended blocked is
//!   blocked to the window's end. A worker is *busy* during its periods,
//!   *waiting* during its `WorkerWait`s (spinning or parked: the log does
//!   not tell them apart), and *between tasks* for the rest of its span.
//!   Exact to the clock.
//! * In sample mode (`samples.rs`): each window of samples of a worker is
//!   spread over the buckets it overlaps in proportion; a sample stands for
//!   `dur / total` of its window. Worker states are the samples' states; a
//!   task's running time is its samples; tasks live from their `TaskAssign`
//!   to their `TaskTotals` (both exact), and a live task that no sample
//!   found running or spinning is *not running* (ready or blocked: the
//!   sampler does not see which). Estimates, with the error bound of
//!   [`Sampled::share_error`](crate::Sampled::share_error) per worker and
//!   bucket.
//! * A run with worker waits only (`worker` without `sched`): worker
//!   waiting and the rest.
//!
//! Memory: per bucket a few arrays (states, workers, the top groups) and per
//! task a few words; the logs are read by the merged pass (`replay/merge.rs`) and
//! one scan per log, both releasing the pages they have read.

use std::collections::HashMap;

use serde::Serialize;

use crate::load::groups::group_of;
use crate::load::model::RunLog;
use crate::replay::grid::{Grid, Near};
use crate::replay::merge::Events;

mod replay;
mod samples;
mod svg;

/// The most buckets [`evolution`] cuts a window into.
pub const MAX_EVOLUTION_BUCKETS: usize = 10_000;

/// The most task groups with series of their own (the rest are summed).
pub const MAX_EVOLUTION_GROUPS: usize = 24;

/// Options of [`evolution`].
#[derive(Clone, Debug)]
pub struct EvolutionOptions {
    /// Window start, ms after the run's first time stamp (default: the start).
    pub from_ms: Option<f64>,
    /// Window end, ms after the run's first time stamp (default: the end).
    pub to_ms: Option<f64>,
    /// Buckets the window is cut into, 1 to [`MAX_EVOLUTION_BUCKETS`]
    /// (default 200). In sample mode at most one per window of samples.
    pub buckets: usize,
    /// Fold numbered task names into groups ([`group_of`]) for the per-group
    /// series (default); `false` gives each task name a series.
    pub group: bool,
    /// Groups (or tasks) with series of their own, the busiest; the others
    /// are summed into one (default 6, at most [`MAX_EVOLUTION_GROUPS`]).
    pub top_groups: usize,
    /// The picture's width in pixels (default 1600).
    pub width_px: u32,
}

impl Default for EvolutionOptions {
    fn default() -> Self {
        EvolutionOptions {
            from_ms: None,
            to_ms: None,
            buckets: 200,
            group: true,
            top_groups: 6,
            width_px: 1600,
        }
    }
}

/// What the series were computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvolutionSource {
    /// Periods (`full`, `sched`): exact to the clock.
    Periods,
    /// Sample mode's windows of samples: estimates.
    Samples,
    /// Worker waits only (no periods, no samples): worker states only.
    WorkerWaits,
}

/// One state's series over the buckets.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// The state (`running`, `ready`, ...; a group's name for groups).
    pub state: String,
    /// Per bucket: the mean number of tasks (or workers) in the state.
    pub mean: Vec<f64>,
    /// Per bucket: `mean` over the live tasks (task states) or over the
    /// workers (worker states, groups); 0 where that is 0.
    pub share: Vec<f64>,
}

/// One worker's states.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerSeries {
    /// The worker id.
    pub worker: u32,
    /// In a run across ranks, its name: `rR/wK`, rank R's worker K.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its states (`mean` = `share`: the part of the bucket).
    pub states: Vec<Series>,
}

/// One task group's (or task's) running time.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSeries {
    /// The group (a task name with `--no-group`; `other (N groups)` for
    /// the rest).
    pub group: String,
    /// Tasks in it.
    pub tasks: u64,
    /// Its busy time over the whole run, ns (estimated in sample mode).
    pub busy_ns: u64,
    /// Per bucket: mean tasks of the group running, and that over the
    /// number of workers (its share of the workers' time).
    #[serde(flatten)]
    pub series: Series,
}

/// Sample mode: how many samples the buckets hold, and the error bound.
#[derive(Clone, Debug, Serialize)]
pub struct EvolutionSampling {
    /// Samples per second (`sample:HZ`), if not the runtime's default.
    pub hz: Option<u32>,
    /// Samples of one worker in a bucket: the fewest (over buckets with
    /// any) and the median.
    pub min_per_bucket: f64,
    /// The median.
    pub median_per_bucket: f64,
    /// 95% bound of a worker's share in a bucket of median samples,
    /// percentage points.
    pub share_error_pp: f64,
    /// The same in the bucket with the fewest samples.
    pub worst_share_error_pp: f64,
}

/// The run's evolution: see the module documentation.
#[derive(Clone, Debug, Serialize)]
pub struct Evolution {
    /// The log directory.
    pub dir: String,
    /// The monitoring flags the run recorded.
    pub flags: String,
    /// What the series come from.
    pub source: EvolutionSource,
    /// Whether the figures are estimates (sample mode).
    pub estimated: bool,
    /// The window, ms after the run's first time stamp.
    pub from_ms: f64,
    /// Its end.
    pub to_ms: f64,
    /// Bucket length, ms.
    pub bucket_ms: f64,
    /// Each bucket's start, ms after the run's first time stamp.
    pub start_ms: Vec<f64>,
    /// Per bucket: the mean number of live tasks (created or dispatched,
    /// not ended): the sum of the task states' means. Empty where unknown.
    pub live_tasks: Vec<f64>,
    /// Task states, bottom of the stack first (empty where not recorded).
    pub task_states: Vec<Series>,
    /// Worker states over all workers, bottom first (`mean`: workers in
    /// the state).
    pub worker_states: Vec<Series>,
    /// Per worker.
    pub workers: Vec<WorkerSeries>,
    /// Whether task names were folded into groups.
    pub grouped: bool,
    /// The busiest groups' running time, busiest first (then the rest).
    pub groups: Vec<GroupSeries>,
    /// Sample mode: samples per bucket and the error bound.
    pub sampling: Option<EvolutionSampling>,
    /// States this run's records cannot give, and why.
    pub unavailable: Vec<String>,
    /// How to read the figures (definitions, estimates, caps).
    pub notes: Vec<String>,
    /// Problems with the logs (damaged records, missing workers).
    pub warnings: Vec<String>,
    /// The picture's width.
    #[serde(skip)]
    width_px: u32,
}

/// A task state's key, its label in the picture and its colour.
pub(crate) struct StateKey {
    pub key: &'static str,
    pub label: &'static str,
    pub colour: &'static str,
}

const fn key(key: &'static str, label: &'static str, colour: &'static str) -> StateKey {
    StateKey { key, label, colour }
}

/// Task states with periods, bottom of the stack first.
pub(crate) const TASK_STATES: [StateKey; 5] = [
    key("running", "running", "#2ca02c"),
    key("ready", "ready (yielded, or woken: runnable)", "#ffbf00"),
    key("new", "new (created, not yet run)", "#ffe49a"),
    key(
        "blocked_read",
        "blocked reading (empty stream, poll)",
        "#1f77b4",
    ),
    key("blocked_write", "blocked writing (full stream)", "#d62728"),
];
pub(crate) const RUNNING: usize = 0;
pub(crate) const READY: usize = 1;
pub(crate) const NEW: usize = 2;
pub(crate) const BLOCKED_READ: usize = 3;
pub(crate) const BLOCKED_WRITE: usize = 4;

/// Task states in sample mode.
pub(crate) const SAMPLED_TASK_STATES: [StateKey; 3] = [
    key("running", "running (sampled)", "#2ca02c"),
    key("spinning", "spinning before a block (sampled)", "#9467bd"),
    key("not_running", "not running: ready or blocked", "#c8c8c8"),
];

/// Worker states with periods.
pub(crate) const WORKER_STATES: [StateKey; 3] = [
    key("busy", "busy (running a task)", "#2ca02c"),
    key("waiting", "waiting (spinning or parked)", "#9ecae1"),
    key("between_tasks", "between tasks (scheduler)", "#dcdcdc"),
];

/// Worker states in sample mode.
pub(crate) const SAMPLED_WORKER_STATES: [StateKey; 5] = [
    key("running", "running a task", "#2ca02c"),
    key("spinning", "a task spinning before blocking", "#9467bd"),
    key("between_tasks", "between tasks (scheduler)", "#dcdcdc"),
    key("idle", "idle, awake", "#9ecae1"),
    key("parked", "parked (asleep)", "#6b6b6b"),
];

/// Worker states with worker waits only.
pub(crate) const WAIT_WORKER_STATES: [StateKey; 2] = [
    key("waiting", "waiting (spinning or parked)", "#9ecae1"),
    key(
        "not_waiting",
        "not waiting (busy or between tasks)",
        "#dcdcdc",
    ),
];

/// The groups with series of their own, and the slot of the rest.
pub(crate) struct Groups {
    /// (name, tasks, busy ticks) per slot; the last is the rest when
    /// `rest` is set.
    pub slots: Vec<(String, u64, u64)>,
    slot_of: HashMap<String, usize>,
    /// The slot of groups without their own (an "other" slot).
    rest: usize,
    group: bool,
}

impl Groups {
    /// The `top` busiest groups of `run` (by its tasks' busy time, from the
    /// load's totals), and a slot for the rest.
    fn choose(run: &RunLog, group: bool, top: usize) -> Self {
        let key = |name: &str| -> String {
            if group {
                group_of(name).into_owned()
            } else {
                name.to_owned()
            }
        };
        let mut sums: HashMap<String, (u64, u64)> = HashMap::new();
        for t in run.tasks.values() {
            let e = sums.entry(key(&t.label())).or_default();
            e.0 += 1;
            e.1 = e.1.saturating_add(t.busy);
        }
        let mut all: Vec<(String, u64, u64)> =
            sums.into_iter().map(|(n, (k, b))| (n, k, b)).collect();
        all.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        let top = top.min(MAX_EVOLUTION_GROUPS);
        let mut slots: Vec<(String, u64, u64)> = all.iter().take(top).cloned().collect();
        let slot_of = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.0.clone(), i))
            .collect();
        let rest = slots.len();
        if all.len() > top {
            let (mut tasks, mut busy) = (0u64, 0u64);
            for g in &all[top..] {
                tasks += g.1;
                busy = busy.saturating_add(g.2);
            }
            let what = if group { "groups" } else { "tasks" };
            slots.push((format!("other ({} {what})", all.len() - top), tasks, busy));
        } else {
            // Tasks the load did not list (none in a whole log) go to an
            // unnamed slot whose series is dropped if it stays empty.
            slots.push(("other".to_owned(), 0, 0));
        }
        Groups {
            slots,
            slot_of,
            rest,
            group,
        }
    }

    /// The slot of task `id`.
    pub fn slot(&self, run: &RunLog, id: u64) -> usize {
        let label = run.task_label(id);
        let name = if self.group {
            group_of(&label)
        } else {
            std::borrow::Cow::Borrowed(label.as_str())
        };
        self.slot_of
            .get(name.as_ref())
            .copied()
            .unwrap_or(self.rest)
    }
}

/// Time per state and bucket (ticks), as the passes add it up.
pub(crate) struct Sums {
    pub grid: Grid,
    /// Per task state, per bucket.
    pub task: Vec<Vec<f64>>,
    /// Live tasks per bucket, where the pass knows them apart from the
    /// states (sample mode).
    pub live: Option<Vec<f64>>,
    /// Per worker log, per worker state, per bucket.
    pub worker: Vec<Vec<Vec<f64>>>,
    /// Per group slot, per bucket: running time.
    pub group: Vec<Vec<f64>>,
    /// Sample mode: per worker log, per bucket, the samples.
    pub samples: Vec<Vec<f64>>,
}

impl Sums {
    fn new(grid: Grid, task_states: usize, workers: usize, worker_states: usize) -> Self {
        let n = grid.n;
        Sums {
            task: vec![vec![0.0; n]; task_states],
            live: None,
            worker: vec![vec![vec![0.0; n]; worker_states]; workers],
            group: Vec::new(),
            samples: Vec::new(),
            grid,
        }
    }

    /// Adds `[a, b)` (ticks) to `v`, split over the buckets.
    #[inline]
    pub fn add(grid: &Grid, v: &mut [f64], a: u64, b: u64) {
        grid.split(a, b, |i, t| v[i] += t as f64);
    }

    /// [`add`](Self::add), with `near` the bucket met last
    /// ([`Grid::split_near`]).
    #[inline]
    pub fn add_near(grid: &Grid, near: &mut Near, v: &mut [f64], a: u64, b: u64) {
        grid.split_near(near, a, b, |i, t| v[i] += t as f64);
    }

    /// Adds `weight` times the overlap of `[a, b)` with each bucket,
    /// over `b - a`, to `v` (a sample window spread over the buckets).
    pub fn add_spread(grid: &Grid, v: &mut [f64], a: u64, b: u64, weight: f64) {
        let len = b.saturating_sub(a);
        if len == 0 || weight == 0.0 {
            return;
        }
        grid.split(a, b, |i, t| v[i] += weight * t as f64 / len as f64);
    }
}

/// Rounds a share or mean for the JSON and CSV (six decimals).
fn round6(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1e6).round() / 1e6
    } else {
        0.0
    }
}

/// Computes the run's evolution (see the module documentation): one merged
/// pass over the periods and worker waits (periods), or the sampler's
/// windows (sample mode). An error when the run recorded nothing that
/// changes over time (no periods, no samples, no worker waits).
pub fn evolution(run: &RunLog, opts: &EvolutionOptions) -> anyhow::Result<Evolution> {
    evolution_from(run, opts, Events::Run(run))
}

/// [`evolution`], reading a run with periods from `events` (a merged pass
/// of its own, or a share of one, `replay/merge.rs`); dropped unread otherwise.
pub(crate) fn evolution_from(
    run: &RunLog,
    opts: &EvolutionOptions,
    events: Events<'_>,
) -> anyhow::Result<Evolution> {
    use rill_log::MonitorFlags;
    anyhow::ensure!(
        (1..=MAX_EVOLUTION_BUCKETS).contains(&opts.buckets),
        "the buckets must number 1 to {MAX_EVOLUTION_BUCKETS}, not {}",
        opts.buckets
    );
    let flags = run.flags;
    let sampled = run
        .sampled
        .as_ref()
        .filter(|_| crate::load::sampled::is_sample_only(run));
    let source = if sampled.is_some() {
        EvolutionSource::Samples
    } else if flags.contains(MonitorFlags::SCHEDULER) {
        EvolutionSource::Periods
    } else if flags.contains(MonitorFlags::WORKER) {
        EvolutionSource::WorkerWaits
    } else {
        anyhow::bail!(
            "{}: the run recorded neither periods (the sched flag), samples (sample mode) nor \
             worker waits (the worker flag), so nothing over time (flags: {flags}); \
             `rill-mon summary` gives its totals",
            run.dir.display()
        );
    };
    let (lo, hi) = crate::trace::perfetto::window(run, opts.from_ms, opts.to_ms);
    let mut notes = Vec::new();
    let mut buckets = opts.buckets;
    if let Some(sm) = sampled {
        // A bucket shorter than a window of samples would only smooth it.
        let mut durs: Vec<u64> = sm
            .windows
            .iter()
            .filter(|w| w.dur > 0 && w.t < hi && w.t.saturating_add(w.dur) > lo)
            .map(|w| w.dur)
            .collect();
        if !durs.is_empty() {
            let mid = durs.len() / 2;
            let (_, &mut median, _) = durs.select_nth_unstable(mid);
            let most = (hi - lo).div_ceil(median.max(1)).max(1);
            if (buckets as u64) > most {
                buckets = most as usize;
                notes.push(format!(
                    "{} buckets asked for, {buckets} drawn: a bucket is at least one window of \
                     samples long ({})",
                    opts.buckets,
                    crate::render::number::fmt_ns(run.ns(median) as f64)
                ));
            }
        }
    }
    let grid = Grid::new(lo, hi, buckets);
    let groups = Groups::choose(run, opts.group, opts.top_groups);
    let nlogs = run.workers.len();
    let mut unavailable = Vec::new();
    let mut sums = match source {
        EvolutionSource::Periods => {
            let mut s = Sums::new(grid, TASK_STATES.len(), nlogs, WORKER_STATES.len());
            s.group = vec![vec![0.0; s.grid.n]; groups.slots.len()];
            replay::periods(run, &groups, &mut s, events);
            if !flags.contains(MonitorFlags::WORKER) {
                unavailable.push(
                    "worker waiting: the run has no worker flag (its waits count as between \
                     tasks)"
                        .to_owned(),
                );
            } else {
                unavailable.push(
                    "worker spinning apart from parked: a worker wait's record does not say \
                     (sample mode does)"
                        .to_owned(),
                );
            }
            if !flags.contains(MonitorFlags::MAPPING) {
                unavailable.push(
                    "new tasks: the run has no mapping flag (no creation times); a task counts \
                     from its first dispatch"
                        .to_owned(),
                );
            }
            if !flags.contains(MonitorFlags::STREAM) {
                notes.push(
                    "no stream flag: wake-ups are not logged, so a blocked task counts as \
                     blocked up to its dispatch (ready time after a wake-up shows as blocked)"
                        .to_owned(),
                );
            }
            s
        }
        EvolutionSource::Samples => {
            let sm = sampled.expect("sample mode");
            let mut s = Sums::new(
                grid,
                SAMPLED_TASK_STATES.len(),
                nlogs,
                SAMPLED_WORKER_STATES.len(),
            );
            s.group = vec![vec![0.0; s.grid.n]; groups.slots.len()];
            s.samples = vec![vec![0.0; s.grid.n]; nlogs];
            let lives = samples::samples(run, sm, &groups, &mut s);
            unavailable.push(
                "ready, blocked reading, blocked writing and new: the sampler records what each \
                 worker runs, not what a task waits on (they show together as not running)"
                    .to_owned(),
            );
            if !lives {
                unavailable.push(
                    "live tasks: the run has no mapping flag (no creation times), so task \
                     shares are not drawn; the mean running tasks are in the JSON"
                        .to_owned(),
                );
            }
            s
        }
        EvolutionSource::WorkerWaits => {
            let mut s = Sums::new(grid, 0, nlogs, WAIT_WORKER_STATES.len());
            replay::waits_only(run, &mut s);
            unavailable.push(format!(
                "task states and worker busy time: the run recorded no periods (sched flag) and \
                 no samples (flags: {flags})"
            ));
            s
        }
    };
    if source == EvolutionSource::Periods && sums.grid.span > 0 {
        notes.push(
            "exact to the clock; a wait's wake-up is taken at the end of the waking period, so \
             a blocked part may be up to one period too long (and its ready part as much too \
             short)"
                .to_owned(),
        );
    }
    let sampling = sampled.map(|sm| {
        let s = sampling_bounds(&sums.samples, sm.hz);
        notes.push(format!(
            "sample mode: estimates; a worker's share in a bucket is within ±{:.1} points (95%) \
             at the median {:.0} samples per worker and bucket (±{:.1} at the fewest, {:.0}); \
             task lifetimes (live tasks) are exact",
            s.share_error_pp, s.median_per_bucket, s.worst_share_error_pp, s.min_per_bucket
        ));
        s
    });
    Ok(finish(
        run,
        source,
        &mut sums,
        &groups,
        Finish {
            sampling,
            unavailable,
            notes,
            grouped: opts.group,
            width_px: opts.width_px,
        },
    ))
}

/// What [`finish`] takes beside the sums.
struct Finish {
    sampling: Option<EvolutionSampling>,
    unavailable: Vec<String>,
    notes: Vec<String>,
    grouped: bool,
    width_px: u32,
}

/// The samples per worker and bucket, and the error bounds.
fn sampling_bounds(samples: &[Vec<f64>], hz: Option<u32>) -> EvolutionSampling {
    let mut counts: Vec<f64> = samples
        .iter()
        .flatten()
        .copied()
        .filter(|&n| n >= 0.5)
        .collect();
    counts.sort_by(f64::total_cmp);
    let min = counts.first().copied().unwrap_or(0.0);
    let median = counts.get(counts.len() / 2).copied().unwrap_or(0.0);
    let err = |n: f64| 100.0 * crate::load::samples::Sampled::share_error(n.round() as u64);
    EvolutionSampling {
        hz,
        min_per_bucket: round6(min),
        median_per_bucket: round6(median),
        share_error_pp: round6(err(median)),
        worst_share_error_pp: round6(err(min)),
    }
}

/// Turns the sums into series.
fn finish(
    run: &RunLog,
    source: EvolutionSource,
    sums: &mut Sums,
    groups: &Groups,
    f: Finish,
) -> Evolution {
    let grid = &sums.grid;
    let n = grid.n;
    let lens: Vec<f64> = (0..n).map(|i| grid.len(i) as f64).collect();
    let mean_of = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .zip(&lens)
            .map(|(&t, &l)| if l > 0.0 { t / l } else { 0.0 })
            .collect()
    };
    let over = |mean: &[f64], whole: &[f64]| -> Vec<f64> {
        mean.iter()
            .zip(whole)
            .map(|(&m, &w)| if w > 0.0 { round6(m / w) } else { 0.0 })
            .collect()
    };
    let series = |key: &str, mean: Vec<f64>, whole: &[f64]| Series {
        state: key.to_owned(),
        share: over(&mean, whole),
        mean: mean.into_iter().map(round6).collect(),
    };
    let (task_keys, worker_keys): (&[StateKey], &[StateKey]) = match source {
        EvolutionSource::Periods => (&TASK_STATES, &WORKER_STATES),
        EvolutionSource::Samples => (&SAMPLED_TASK_STATES, &SAMPLED_WORKER_STATES),
        EvolutionSource::WorkerWaits => (&[], &WAIT_WORKER_STATES),
    };
    // Task states over the live tasks.
    let task_means: Vec<Vec<f64>> = sums.task.iter().map(|v| mean_of(v)).collect();
    let live: Vec<f64> = match (&sums.live, source) {
        (Some(l), _) => mean_of(l),
        (None, EvolutionSource::Periods) => (0..n)
            .map(|i| task_means.iter().map(|m| m[i]).sum())
            .collect(),
        (None, _) => Vec::new(),
    };
    if source == EvolutionSource::Samples && !live.is_empty() {
        // Not running: the live tasks no sample found running or spinning.
        for i in 0..n {
            let seen = task_means[0][i] + task_means[1][i];
            sums.task[2][i] = (live[i] - seen).max(0.0) * lens[i];
        }
    }
    let task_means: Vec<Vec<f64>> = sums.task.iter().map(|v| mean_of(v)).collect();
    let ones = vec![1.0; n];
    let task_states = task_keys
        .iter()
        .zip(task_means)
        .map(|(k, m)| series(k.key, m, if live.is_empty() { &ones } else { &live }))
        .map(|mut s| {
            if live.is_empty() {
                s.share = vec![0.0; n];
            }
            s
        })
        .collect();
    // Worker states over the workers.
    let nw = sums.worker.len().max(1) as f64;
    let all_workers = vec![nw; n];
    let worker_states = worker_keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            let total: Vec<f64> = (0..n)
                .map(|i| sums.worker.iter().map(|w| w[k][i]).sum())
                .collect();
            series(key.key, mean_of(&total), &all_workers)
        })
        .collect();
    let workers = run
        .workers
        .iter()
        .zip(&sums.worker)
        .map(|(w, states)| WorkerSeries {
            worker: w.worker,
            name: run.ranks.as_ref().map(|r| r.worker_name(w.worker)),
            states: worker_keys
                .iter()
                .zip(states)
                .map(|(key, v)| series(key.key, mean_of(v), &ones))
                .collect(),
        })
        .collect();
    let groups = groups
        .slots
        .iter()
        .zip(&sums.group)
        .filter(|(slot, v)| slot.1 > 0 || v.iter().any(|&x| x > 0.0))
        .map(|(slot, v)| GroupSeries {
            group: slot.0.clone(),
            tasks: slot.1,
            busy_ns: run.ns(slot.2),
            series: series(&slot.0, mean_of(v), &all_workers),
        })
        .collect();
    let ms = |t: u64| run.ns(t.saturating_sub(run.t0)) as f64 / 1e6;
    Evolution {
        dir: run.dir.display().to_string(),
        flags: run.flags.to_string(),
        source,
        estimated: source == EvolutionSource::Samples,
        from_ms: ms(grid.t0),
        to_ms: ms(grid.t0.saturating_add(grid.span)),
        bucket_ms: run.ns(grid.span) as f64 / 1e6 / n as f64,
        start_ms: (0..n).map(|i| ms(grid.start(i))).collect(),
        live_tasks: live.into_iter().map(round6).collect(),
        task_states,
        worker_states,
        workers,
        grouped: f.grouped,
        groups,
        sampling: f.sampling,
        unavailable: f.unavailable,
        notes: f.notes,
        warnings: run.warnings.clone(),
        width_px: f.width_px,
    }
}

impl Evolution {
    /// The series as one JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// The series as CSV, one row per series and bucket:
    /// `panel,series,bucket,start_ms,end_ms,mean,share` (panel `tasks`,
    /// `workers`, `worker N` or `groups`; `tasks`/`live` gives the live
    /// tasks).
    pub fn to_csv(&self) -> String {
        // Numbers as `Display` writes them (1, 0.333333), not as serde's
        // floats (1.0), so the records are written field by field.
        let mut o = csv::Writer::from_writer(Vec::new());
        // Writing to memory cannot fail.
        let write = |o: &mut csv::Writer<Vec<u8>>, record: &[&str]| {
            o.write_record(record).expect("a CSV record in memory");
        };
        write(
            &mut o,
            &[
                "panel", "series", "bucket", "start_ms", "end_ms", "mean", "share",
            ],
        );
        let end = |i: usize| -> f64 { self.start_ms.get(i + 1).copied().unwrap_or(self.to_ms) };
        let mut rows = |panel: &str, s: &Series| {
            for (i, (&m, &sh)) in s.mean.iter().zip(&s.share).enumerate() {
                write(
                    &mut o,
                    &[
                        panel,
                        &s.state,
                        &i.to_string(),
                        &round6(self.start_ms[i]).to_string(),
                        &round6(end(i)).to_string(),
                        &m.to_string(),
                        &sh.to_string(),
                    ],
                );
            }
        };
        if !self.live_tasks.is_empty() {
            rows(
                "tasks",
                &Series {
                    state: "live".to_owned(),
                    mean: self.live_tasks.clone(),
                    share: self
                        .live_tasks
                        .iter()
                        .map(|&l| if l > 0.0 { 1.0 } else { 0.0 })
                        .collect(),
                },
            );
        }
        for s in &self.task_states {
            rows("tasks", s);
        }
        for s in &self.worker_states {
            rows("workers", s);
        }
        for w in &self.workers {
            for s in &w.states {
                rows(
                    &format!(
                        "worker {}",
                        w.name.clone().unwrap_or_else(|| w.worker.to_string())
                    ),
                    s,
                );
            }
        }
        for g in &self.groups {
            rows("groups", &g.series);
        }
        let bytes = o.into_inner().expect("a CSV document in memory");
        String::from_utf8(bytes).expect("CSV of UTF-8 fields")
    }

    /// The picture: stacked shares per panel (task states, worker states,
    /// running by group, each worker), axes in ms, a legend, and the notes.
    pub fn to_svg(&self) -> String {
        svg::draw(self, self.width_px)
    }
}
