//! The live view's figures: [`Model`] takes a run's records as they are
//! read (in any order across files) and gives a [`Snapshot`] of the recent
//! past and of the run so far.
//!
//! Time is cut into bins of [`BIN_MS`] from the run's start (the header's
//! calibration); the last [`HISTORY_BINS`] are kept, per worker its busy,
//! waiting and observed time, per task its busy time and, with periods, per
//! stream the waits that began in the bin. Run totals are kept apart, so
//! bins can be dropped. Where a record's span covers several bins, its time
//! is split in proportion to the overlap.
//!
//! *Now* is the latest time the records reach (the end of the last window of
//! samples, or the last period or wait): a worker that records nothing (it
//! sleeps) is idle up to it, and a period still running when the snapshot is
//! taken is not counted yet.
//!
//! Two sources of time, as in the other analyses:
//!
//! * **samples** (sample mode, `sampler.rlog`): a window's samples are
//!   charged as `sampled.rs` charges them (the scheduler's samples to the
//!   tasks that ran in the window, in proportion); a worker's utilisation is
//!   its busy time over the time its windows cover. An estimate: the 95%
//!   bound of a share from `n` samples is `1.96 * 0.5 / sqrt(n)`.
//! * **periods** (`full`, or any run with `sched`): busy time is the
//!   periods' (exact); a worker's utilisation is its busy time over the time
//!   from its start (or the bin's) to now.
//!
//! Stream waits: with periods, each period that ended blocked reading
//! (writing) a stream counts one wait of its reader (writer), in the bin
//! where it ended. Sample mode records no waits as they happen: a stream
//! end logs its exact count when it is dropped (`StreamTotals`), so the
//! view lists the ends closed so far, over the run.
//!
//! Memory is bounded by the records read: per task and stream ever seen,
//! plus the bins, each holding the tasks and streams active in it.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rill_log::{Calibration, EndState, Header, MonitorFlags, ScannedPeriod, ScannedSamples, Side};
use serde::Serialize;

use crate::load::ids::IdMap;
use crate::load::scan::Item;

/// The length of a bin, ms.
pub const BIN_MS: u64 = 100;
/// Bins kept: the history a snapshot can show (60 s).
pub const HISTORY_BINS: usize = 600;

/// Where a run's time figures come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The sampler's windows (sample mode).
    Samples,
    /// The workers' periods.
    Periods,
    /// Neither: the run records names and counts only.
    Counts,
}

impl Source {
    /// The source of a run with these flags: periods where it records them
    /// (a run that records both checks the samples against them, and its
    /// figures are the periods'), else samples.
    pub fn of(flags: MonitorFlags) -> Self {
        if flags.contains(MonitorFlags::SCHEDULER) {
            Source::Periods
        } else if flags.is_sampled() {
            Source::Samples
        } else {
            Source::Counts
        }
    }
}

/// One worker's time in a bin (ticks).
#[derive(Clone, Copy, Debug, Default)]
struct WorkerBin {
    busy: f64,
    wait: f64,
    /// Time its windows of samples cover.
    covered: f64,
    /// Signals that took its samples (what their error goes with).
    samples: f64,
}

/// One bin of time.
#[derive(Debug, Default)]
struct Bin {
    workers: BTreeMap<u32, WorkerBin>,
    /// Busy ticks per task.
    tasks: IdMap<u64, f64>,
    /// Waits that began here per stream: (reader, writer).
    waits: IdMap<u64, (u32, u32)>,
}

/// One worker over the run.
#[derive(Clone, Copy, Debug, Default)]
struct WorkerRun {
    busy: f64,
    wait: f64,
    covered: f64,
    /// Signals that took its samples (what their error goes with).
    samples: u64,
    /// Its first time stamp.
    begin: Option<u64>,
    dispatches: u64,
    ended: bool,
}

/// One task over the run.
#[derive(Clone, Debug, Default)]
struct TaskRun {
    /// Index into the model's groups, once the task's name is known.
    group: Option<u32>,
    busy: f64,
    dispatches: u64,
}

/// One stream over the run.
#[derive(Clone, Debug, Default)]
struct StreamRun {
    name: Option<String>,
    writer: Option<u64>,
    reader: Option<u64>,
    written: u64,
    read: u64,
    reader_waits: u64,
    writer_waits: u64,
}

/// A run's figures, fed record by record (see the module documentation).
#[derive(Debug)]
pub struct Model {
    flags: MonitorFlags,
    cal: Calibration,
    worker_count: u32,
    source: Source,
    bin_ticks: f64,
    /// The latest time the records reach (ticks), once any has one.
    now: Option<u64>,
    bins: VecDeque<Bin>,
    /// The bin index of `bins[0]`.
    base: u64,
    workers: BTreeMap<u32, WorkerRun>,
    tasks: IdMap<u64, TaskRun>,
    streams: IdMap<u64, StreamRun>,
    /// Group names, and their indices.
    groups: Vec<String>,
    group_ix: HashMap<String, u32>,
    records: u64,
}

/// What a [`Snapshot`](super::follower::Snapshot) shows: the recent window and how many rows.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotOptions {
    /// The recent window, seconds (at most the history, 60 s).
    pub window_s: f64,
    /// Rows of task groups and of streams.
    pub top: usize,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            window_s: 5.0,
            top: 10,
        }
    }
}

/// The figures at one moment.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Where the time figures come from.
    pub source: Option<Source>,
    /// The monitoring mode, in `--monitor` words.
    pub mode: String,
    /// The sampling rate the run asked for (sample mode; `None`: the default).
    pub sample_hz: Option<u32>,
    /// Workers the run has.
    pub worker_count: u32,
    /// Seconds from the run's start to the latest record.
    pub elapsed_s: f64,
    /// The recent window the shares are over, seconds (shorter than asked
    /// early in a run).
    pub window_s: f64,
    /// Wall-clock time of the latest record (ns since the Unix epoch).
    pub data_unix_ns: u64,
    /// Records read.
    pub records: u64,
    /// Per worker.
    pub workers: Vec<WorkerRow>,
    /// The busiest task groups, in the recent window first.
    pub groups: Vec<GroupRow>,
    /// Groups not listed.
    pub groups_more: usize,
    /// Streams (folded like the tasks) with the most waits.
    pub streams: Vec<StreamRow>,
    /// Streams with waits not listed.
    pub streams_more: usize,
    /// Whether the streams' waits are those of the recent window (periods)
    /// rather than of the ends closed so far (samples).
    pub stream_waits_recent: bool,
    /// The 95% bound of the task groups' shares in the recent window
    /// (samples), percentage points.
    pub groups_error_pp: Option<f64>,
}

/// One worker in a snapshot.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerRow {
    /// Its id.
    pub worker: u32,
    /// Busy share of the recent window (0 to 1).
    pub recent: Option<f64>,
    /// The 95% bound of `recent` (samples), percentage points.
    pub recent_error_pp: Option<f64>,
    /// Busy share of the run so far.
    pub run: Option<f64>,
    /// Waiting share of the recent window (spinning, idle, parked; or its
    /// logged waits).
    pub recent_wait: Option<f64>,
    /// Busy share per bin, oldest first, up to now.
    pub history: Vec<f64>,
    /// Dispatches so far (periods), or at its end (samples).
    pub dispatches: u64,
    /// Its log says it ended.
    pub ended: bool,
}

/// One task group in a snapshot.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GroupRow {
    /// The group (`mc/star/*/step/*`) or the task's name.
    pub group: String,
    /// Tasks of the group that ran in the recent window.
    pub tasks_recent: usize,
    /// Tasks of the group seen running so far.
    pub tasks_run: usize,
    /// Its share of all workers' time in the recent window.
    pub recent: f64,
    /// Its share of all workers' time over the run so far.
    pub run: f64,
    /// Dispatches so far (periods; samples: of its ended tasks).
    pub dispatches: u64,
}

/// Streams in a snapshot: one stream or a group of them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamRow {
    /// The stream's name folded, or `writer -> reader` groups.
    pub label: String,
    /// Streams in the row.
    pub streams: usize,
    /// Times the readers found them empty.
    pub reader_waits: u64,
    /// Times the writers found them full.
    pub writer_waits: u64,
    /// Messages over the run (samples: of the ends closed so far).
    pub messages: u64,
}

impl Model {
    /// A model for the run whose logs carry `header`.
    pub fn new(header: &Header) -> Self {
        let cal = header.calibration;
        let bin_ticks = (cal.ticks_per_sec * BIN_MS as f64 / 1e3).max(1.0);
        Model {
            flags: header.flags,
            cal,
            worker_count: header.worker_count,
            source: Source::of(header.flags),
            bin_ticks,
            now: None,
            bins: VecDeque::new(),
            base: 0,
            workers: BTreeMap::new(),
            tasks: IdMap::default(),
            streams: IdMap::default(),
            groups: Vec::new(),
            group_ix: HashMap::new(),
            records: 0,
        }
    }

    /// Where the time figures come from.
    pub fn source(&self) -> Source {
        self.source
    }

    /// Whether worker `w`'s log says it ended (`WorkerEnd`).
    pub fn worker_ended(&self, w: u32) -> bool {
        self.workers.get(&w).is_some_and(|r| r.ended)
    }

    /// The latest time the records reach, ticks.
    pub fn now(&self) -> Option<u64> {
        self.now
    }

    fn saw(&mut self, t: u64) {
        self.now = Some(self.now.map_or(t, |n| n.max(t)));
    }

    /// The bin holding tick `t`.
    fn bin_of(&self, t: u64) -> u64 {
        let d = t.saturating_sub(self.cal.start_ticks) as f64 / self.bin_ticks;
        d as u64
    }

    /// Where bin `i` starts, ticks.
    fn bin_start(&self, i: u64) -> f64 {
        self.cal.start_ticks as f64 + i as f64 * self.bin_ticks
    }

    /// Bin `i`, made if needed; `None` when it is older than the history.
    fn slot(&mut self, i: u64) -> Option<&mut Bin> {
        if i < self.base {
            return None;
        }
        let end = self.base + self.bins.len() as u64;
        if i >= end {
            let new_base = self.base.max((i + 1).saturating_sub(HISTORY_BINS as u64));
            if new_base >= end {
                self.bins.clear();
            } else {
                for _ in self.base..new_base {
                    self.bins.pop_front();
                }
            }
            self.base = new_base;
            while self.base + (self.bins.len() as u64) <= i {
                self.bins.push_back(Bin::default());
            }
        }
        self.bins.get_mut((i - self.base) as usize)
    }

    /// Calls `f(bin, fraction)` for each kept bin that `[a, b)` overlaps,
    /// with the fraction of `[a, b)` in it (an empty span: its bin, 1).
    fn spread(&mut self, a: u64, b: u64, mut f: impl FnMut(&mut Bin, f64)) {
        if b <= a {
            let i = self.bin_of(a);
            if let Some(bin) = self.slot(i) {
                f(bin, 1.0);
            }
            return;
        }
        let (first, last) = (self.bin_of(a), self.bin_of(b - 1));
        // Bounded by the history, whatever the span says.
        let lo = first.max(last.saturating_sub(HISTORY_BINS as u64));
        let len = (b - a) as f64;
        for i in lo..=last {
            let s = self.bin_start(i).max(a as f64);
            let e = self.bin_start(i + 1).min(b as f64);
            if e > s {
                if let Some(bin) = self.slot(i) {
                    f(bin, (e - s) / len);
                }
            }
        }
    }

    fn worker(&mut self, w: u32) -> &mut WorkerRun {
        self.workers.entry(w).or_default()
    }

    fn began(&mut self, w: u32, t: u64) {
        let r = self.worker(w);
        r.begin = Some(r.begin.map_or(t, |b| b.min(t)));
    }

    fn stream(&mut self, s: u64) -> &mut StreamRun {
        self.streams.entry(s).or_default()
    }

    fn group_index(&mut self, name: &str) -> u32 {
        let g = crate::load::groups::group_of(name);
        if let Some(&i) = self.group_ix.get(g.as_ref()) {
            return i;
        }
        let i = self.groups.len() as u32;
        self.groups.push(g.clone().into_owned());
        self.group_ix.insert(g.into_owned(), i);
        i
    }

    /// A record of worker `worker`'s log, with a period's stream entries
    /// (`io`; empty for other records).
    pub fn worker_record(&mut self, worker: u32, item: Item<'_>, io: &[rill_log::StreamIo]) {
        self.records += 1;
        match item {
            Item::Period(p) => self.period(worker, &p, io),
            Item::WorkerStart { t } => {
                self.began(worker, t);
                if self.source == Source::Periods {
                    self.saw(t);
                }
            }
            Item::WorkerEnd { t } => {
                self.worker(worker).ended = true;
                if self.source == Source::Periods {
                    self.saw(t);
                }
            }
            Item::WorkerWait { t, dur } => {
                if self.source == Source::Periods {
                    let end = t.saturating_add(dur);
                    self.began(worker, t);
                    self.saw(end);
                    self.worker(worker).wait += dur as f64;
                    self.spread(t, end, |bin, f| {
                        bin.workers.entry(worker).or_default().wait += dur as f64 * f;
                    });
                }
            }
            Item::TaskAssign { task, name, .. } => {
                let g = self.group_index(name);
                self.tasks.entry(task).or_default().group = Some(g);
            }
            Item::StreamOpen { stream, .. } => {
                self.stream(stream);
            }
            Item::StreamName { stream, name, .. } => {
                self.stream(stream).name = Some(name.to_owned());
            }
            Item::StreamBind {
                stream, side, task, ..
            } => {
                let s = self.stream(stream);
                match side {
                    Side::Reader => s.reader = Some(task),
                    Side::Writer => s.writer = Some(task),
                }
            }
            Item::StreamTotals {
                stream,
                side,
                messages,
                waits,
                ..
            } => {
                let s = self.stream(stream);
                match side {
                    Side::Reader => {
                        s.read = s.read.saturating_add(messages);
                        s.reader_waits = s.reader_waits.saturating_add(waits);
                    }
                    Side::Writer => {
                        s.written = s.written.saturating_add(messages);
                        s.writer_waits = s.writer_waits.saturating_add(waits);
                    }
                }
            }
            Item::TaskTotals {
                task, dispatches, ..
            } => {
                if self.source != Source::Periods {
                    let t = self.tasks.entry(task).or_default();
                    t.dispatches = t.dispatches.saturating_add(dispatches);
                }
            }
            Item::WorkerTotals { dispatches, .. } => {
                if self.source != Source::Periods {
                    self.worker(worker).dispatches = dispatches;
                }
            }
            Item::TaskMigrate { .. }
            | Item::StreamClose { .. }
            | Item::StreamReplace { .. }
            | Item::Samples(_) => {}
        }
    }

    fn period(&mut self, worker: u32, p: &ScannedPeriod, io: &[rill_log::StreamIo]) {
        for e in io {
            let s = self.stream(e.stream);
            s.read = s.read.saturating_add(u64::from(e.reads));
            s.written = s.written.saturating_add(u64::from(e.writes));
        }
        if self.source != Source::Periods {
            return;
        }
        let (a, b) = (p.start, p.end.max(p.start));
        let dur = (b - a) as f64;
        self.began(worker, a);
        self.saw(b);
        let r = self.worker(worker);
        r.busy += dur;
        r.dispatches += 1;
        let t = self.tasks.entry(p.task).or_default();
        t.busy += dur;
        t.dispatches += 1;
        let task = p.task;
        self.spread(a, b, |bin, f| {
            bin.workers.entry(worker).or_default().busy += dur * f;
            *bin.tasks.entry(task).or_insert(0.0) += dur * f;
        });
        let blocked = match p.end_state {
            EndState::BlockedInput { stream } => Some((stream, Side::Reader)),
            EndState::BlockedOutput { stream } => Some((stream, Side::Writer)),
            _ => None,
        };
        if let Some((stream, side)) = blocked {
            let s = self.stream(stream);
            match side {
                Side::Reader => s.reader_waits += 1,
                Side::Writer => s.writer_waits += 1,
            }
            let i = self.bin_of(b);
            if let Some(bin) = self.slot(i) {
                let w = bin.waits.entry(stream).or_default();
                match side {
                    Side::Reader => w.0 += 1,
                    Side::Writer => w.1 += 1,
                }
            }
        }
    }

    /// A window of samples of the sampler's log, with its (task, samples)
    /// list.
    pub fn samples(&mut self, s: &ScannedSamples, tasks: &[(u64, u32)]) {
        self.records += 1;
        if self.source != Source::Samples || s.total == 0 {
            return;
        }
        let (a, b) = (s.t, s.t.saturating_add(s.dur));
        let w = s.worker;
        self.began(w, a);
        self.saw(b);
        let per = s.dur as f64 / f64::from(s.total);
        let running: u64 = tasks.iter().map(|&(_, k)| u64::from(k)).sum();
        let charge = crate::load::samples::charge(per, running, s.sched);
        let busy = running as f64 * charge;
        let wait = f64::from(s.spin) + f64::from(s.idle) + f64::from(s.parked);
        let wait = wait * per;
        let dur = s.dur as f64;
        // The error goes with the signals that took the samples (each may
        // count several periods, its overrun); parked time is not scaled
        // out here, so the live bound errs wide.
        let obs = f64::from(s.signals);
        let r = self.worker(w);
        r.busy += busy;
        r.wait += wait;
        r.covered += dur;
        r.samples += u64::from(s.signals);
        for &(task, k) in tasks {
            self.tasks.entry(task).or_default().busy += f64::from(k) * charge;
        }
        self.spread(a, b, |bin, f| {
            let wb = bin.workers.entry(w).or_default();
            wb.busy += busy * f;
            wb.wait += wait * f;
            wb.covered += dur * f;
            wb.samples += obs * f;
            for &(task, k) in tasks {
                *bin.tasks.entry(task).or_insert(0.0) += f64::from(k) * charge * f;
            }
        });
    }

    /// The label of task `id`'s group.
    fn group_label(&self, id: u64, t: Option<&TaskRun>) -> String {
        match t.and_then(|t| t.group) {
            Some(g) => self.groups[g as usize].clone(),
            None => format!("task#{id}"),
        }
    }

    /// The figures now (see [`SnapshotOptions`]).
    pub fn snapshot(&self, opts: &SnapshotOptions) -> Figures {
        let mut fig = Figures {
            source: Some(self.source),
            mode: self.flags.to_string(),
            sample_hz: self.flags.sample_hz(),
            worker_count: self.worker_count,
            records: self.records,
            stream_waits_recent: self.source == Source::Periods,
            ..Figures::default()
        };
        let Some(now) = self.now else {
            fig.workers = self
                .workers
                .iter()
                .map(|(&w, r)| WorkerRow {
                    worker: w,
                    dispatches: r.dispatches,
                    ended: r.ended,
                    ..WorkerRow::default()
                })
                .collect();
            fig.streams = self.stream_rows(None, opts.top, &mut fig.streams_more);
            return fig;
        };
        fig.elapsed_s = self.cal.since_start_ns(now).max(0) as f64 / 1e9;
        fig.data_unix_ns = self.cal.to_unix_ns(now);
        // The bin of the last tick before now.
        let last = self.bin_of(now.saturating_sub(1).max(self.cal.start_ticks));
        let k = ((opts.window_s * 1e3 / BIN_MS as f64).ceil() as u64).clamp(1, HISTORY_BINS as u64);
        let first = (last + 1).saturating_sub(k).max(self.base);
        let from = self.bin_start(first).max(self.cal.start_ticks as f64);
        fig.window_s = ((now as f64 - from) / self.cal.ticks_per_sec).max(0.0);
        let periods = self.source == Source::Periods;
        // The observed time of worker `r` in bin `i` (periods: from its start).
        let observed = |r: &WorkerRun, i: u64, wb: Option<&WorkerBin>| -> f64 {
            if periods {
                let begin = r.begin.map_or(f64::MAX, |b| b as f64);
                let s = self.bin_start(i).max(begin);
                let e = self.bin_start(i + 1).min(now as f64);
                (e - s).max(0.0)
            } else {
                wb.map_or(0.0, |b| b.covered)
            }
        };
        let hist_first = (last + 1)
            .saturating_sub(HISTORY_BINS as u64)
            .max(self.base);
        let mut all_covered = 0.0;
        let mut all_samples = 0.0;
        for (&w, r) in &self.workers {
            let mut row = WorkerRow {
                worker: w,
                dispatches: r.dispatches,
                ended: r.ended,
                ..WorkerRow::default()
            };
            let (mut busy, mut wait, mut cov, mut n) = (0.0, 0.0, 0.0, 0.0);
            for i in hist_first..=last {
                let wb = self
                    .bins
                    .get((i - self.base) as usize)
                    .and_then(|b| b.workers.get(&w));
                let o = observed(r, i, wb);
                let b = wb.map_or(0.0, |b| b.busy);
                if o > 0.0 {
                    row.history.push((b / o).clamp(0.0, 1.0));
                } else if !row.history.is_empty() {
                    row.history.push(0.0);
                }
                if i >= first {
                    busy += b;
                    wait += wb.map_or(0.0, |b| b.wait);
                    cov += o;
                    n += wb.map_or(0.0, |b| b.samples);
                }
            }
            if cov > 0.0 {
                row.recent = Some((busy / cov).clamp(0.0, 1.0));
                row.recent_wait = Some((wait / cov).clamp(0.0, 1.0));
            }
            if !periods {
                row.recent_error_pp =
                    Some(crate::load::samples::Sampled::share_error(n as u64) * 100.0);
            }
            let run_cov = if periods {
                r.begin.map_or(0.0, |b| now.saturating_sub(b) as f64)
            } else {
                r.covered
            };
            if run_cov > 0.0 {
                row.run = Some((r.busy / run_cov).clamp(0.0, 1.0));
            }
            all_covered += cov;
            all_samples += n;
            fig.workers.push(row);
        }
        if !periods {
            fig.groups_error_pp =
                Some(crate::load::samples::Sampled::share_error(all_samples as u64) * 100.0);
        }
        let run_covered: f64 = self
            .workers
            .values()
            .map(|r| {
                if periods {
                    r.begin.map_or(0.0, |b| now.saturating_sub(b) as f64)
                } else {
                    r.covered
                }
            })
            .sum();
        let (groups, more) = self.group_rows(first, last, all_covered, run_covered, opts.top);
        fig.groups = groups;
        fig.groups_more = more;
        let recent = periods.then_some((first, last));
        fig.streams = self.stream_rows(recent, opts.top, &mut fig.streams_more);
        fig
    }

    fn group_rows(
        &self,
        first: u64,
        last: u64,
        covered: f64,
        run_covered: f64,
        top: usize,
    ) -> (Vec<GroupRow>, usize) {
        // Recent busy time per task, then per group.
        let mut recent: IdMap<u64, f64> = IdMap::default();
        for i in first..=last {
            if let Some(bin) = self.bins.get((i - self.base) as usize) {
                for (&t, &b) in &bin.tasks {
                    *recent.entry(t).or_insert(0.0) += b;
                }
            }
        }
        let mut rows: HashMap<String, GroupRow> = HashMap::new();
        let mut by_group: HashMap<String, (f64, f64)> = HashMap::new();
        for (&id, t) in &self.tasks {
            let r = recent.get(&id).copied().unwrap_or(0.0);
            if t.busy <= 0.0 && r <= 0.0 && t.dispatches == 0 {
                continue;
            }
            let g = self.group_label(id, Some(t));
            let row = rows.entry(g.clone()).or_insert_with(|| GroupRow {
                group: g.clone(),
                ..GroupRow::default()
            });
            if r > 0.0 {
                row.tasks_recent += 1;
            }
            if t.busy > 0.0 {
                row.tasks_run += 1;
            }
            row.dispatches = row.dispatches.saturating_add(t.dispatches);
            let e = by_group.entry(g).or_default();
            e.0 += r;
            e.1 += t.busy;
        }
        // Tasks seen in samples only recently may have no run entry yet.
        for (&id, &r) in &recent {
            if !self.tasks.contains_key(&id) {
                let g = self.group_label(id, None);
                let row = rows.entry(g.clone()).or_insert_with(|| GroupRow {
                    group: g.clone(),
                    ..GroupRow::default()
                });
                row.tasks_recent += 1;
                by_group.entry(g).or_default().0 += r;
            }
        }
        let mut rows: Vec<GroupRow> = rows
            .into_values()
            .filter(|row| {
                // Tasks never seen running (named, or counted at their end).
                by_group
                    .get(&row.group)
                    .is_some_and(|&(r, b)| r > 0.0 || b > 0.0)
            })
            .map(|mut row| {
                let (r, b) = by_group.get(&row.group).copied().unwrap_or_default();
                row.recent = if covered > 0.0 { r / covered } else { 0.0 };
                row.run = if run_covered > 0.0 {
                    b / run_covered
                } else {
                    0.0
                };
                row
            })
            .collect();
        rows.sort_by(|a, b| {
            b.recent
                .total_cmp(&a.recent)
                .then(b.run.total_cmp(&a.run))
                .then(a.group.cmp(&b.group))
        });
        let more = rows.len().saturating_sub(top);
        rows.truncate(top);
        (rows, more)
    }

    /// Streams with waits, folded: recent waits (periods, bins `first` to
    /// `last`) or the run's.
    fn stream_rows(
        &self,
        recent: Option<(u64, u64)>,
        top: usize,
        more: &mut usize,
    ) -> Vec<StreamRow> {
        let mut waits: IdMap<u64, (u64, u64)> = IdMap::default();
        match recent {
            Some((first, last)) => {
                for i in first.max(self.base)..=last {
                    if let Some(bin) = self.bins.get((i - self.base) as usize) {
                        for (&s, &(r, w)) in &bin.waits {
                            let e = waits.entry(s).or_default();
                            e.0 += u64::from(r);
                            e.1 += u64::from(w);
                        }
                    }
                }
            }
            None => {
                for (&s, st) in &self.streams {
                    if st.reader_waits + st.writer_waits > 0 {
                        waits.insert(s, (st.reader_waits, st.writer_waits));
                    }
                }
            }
        }
        let mut rows: HashMap<String, StreamRow> = HashMap::new();
        for (&s, &(r, w)) in &waits {
            if r + w == 0 {
                continue;
            }
            let st = self.streams.get(&s);
            let label = self.stream_label(s, st);
            let row = rows.entry(label.clone()).or_insert_with(|| StreamRow {
                label,
                ..StreamRow::default()
            });
            row.streams += 1;
            row.reader_waits += r;
            row.writer_waits += w;
            if let Some(st) = st {
                row.messages = row.messages.saturating_add(st.written.max(st.read));
            }
        }
        let mut rows: Vec<StreamRow> = rows.into_values().collect();
        rows.sort_by(|a, b| {
            (b.reader_waits + b.writer_waits)
                .cmp(&(a.reader_waits + a.writer_waits))
                .then(a.label.cmp(&b.label))
        });
        *more = rows.len().saturating_sub(top);
        rows.truncate(top);
        rows
    }

    /// A stream's row label: its name folded, or its ends' groups.
    fn stream_label(&self, s: u64, st: Option<&StreamRun>) -> String {
        if let Some(n) = st.and_then(|st| st.name.as_deref()) {
            return crate::load::groups::group_of(n).into_owned();
        }
        let end = |t: Option<u64>| match t {
            Some(id) => self.group_label(id, self.tasks.get(&id)),
            None => "?".to_owned(),
        };
        match st {
            Some(st) => format!("{} -> {}", end(st.writer), end(st.reader)),
            None => format!("stream {s}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(flags: MonitorFlags, workers: u32) -> Header {
        Header::new(flags, 0, workers, Calibration::nanos())
    }

    const MS: u64 = 1_000_000;

    fn window(worker: u32, t: u64, dur: u64, total: u32, idle: u32) -> ScannedSamples {
        ScannedSamples {
            t,
            dur,
            worker,
            total,
            signals: total,
            sched: 0,
            spin: 0,
            idle,
            parked: 0,
        }
    }

    fn assign(m: &mut Model, task: u64, name: &str) {
        m.worker_record(
            0,
            Item::TaskAssign {
                t: 0,
                task,
                parent: 0,
                worker: 0,
                name,
            },
            &[],
        );
    }

    #[test]
    fn samples_give_recent_and_run_shares_per_worker_and_group() {
        let mut m = Model::new(&header(MonitorFlags::SAMPLED, 2));
        assign(&mut m, 1, "mc/star/1/step/0");
        assign(&mut m, 2, "mc/star/2/step/0");
        assign(&mut m, 3, "mc/collect");
        // A task that never ran while sampled: counted, not listed.
        assign(&mut m, 4, "main");
        m.worker_record(
            0,
            Item::TaskTotals {
                t: 0,
                task: 4,
                dispatches: 1,
            },
            &[],
        );
        // 10 s of 10 ms windows of 10 samples. Worker 0: the first 5 s
        // idle, the last 5 s busy with tasks 1 and 2 (6 and 4 samples).
        // Worker 1: task 3 on 5 samples of 10 all along.
        for k in 0..1000 {
            let t = k * 10 * MS;
            if k < 500 {
                m.samples(&window(0, t, 10 * MS, 10, 10), &[]);
            } else {
                m.samples(&window(0, t, 10 * MS, 10, 0), &[(1, 6), (2, 4)]);
            }
            m.samples(&window(1, t, 10 * MS, 10, 5), &[(3, 5)]);
        }
        let f = m.snapshot(&SnapshotOptions {
            window_s: 5.0,
            top: 10,
        });
        assert_eq!(f.source, Some(Source::Samples));
        assert!((f.elapsed_s - 10.0).abs() < 1e-9, "{}", f.elapsed_s);
        assert!((f.window_s - 5.0).abs() < 1e-9, "{}", f.window_s);
        let w0 = &f.workers[0];
        assert!((w0.recent.unwrap() - 1.0).abs() < 1e-9);
        assert!((w0.run.unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(w0.recent_wait, Some(0.0));
        // 5,000 samples: 1.96 * 0.5 / sqrt(5000) = 1.39 pp.
        assert!((w0.recent_error_pp.unwrap() - 1.386).abs() < 0.01);
        // The history: 60 s of bins would be 600; the run has 100.
        assert_eq!(w0.history.len(), 100);
        assert!(w0.history[..50].iter().all(|&x| x == 0.0));
        assert!(w0.history[50..].iter().all(|&x| (x - 1.0).abs() < 1e-9));
        let w1 = &f.workers[1];
        assert!((w1.recent.unwrap() - 0.5).abs() < 1e-9);
        assert!((w1.recent_wait.unwrap() - 0.5).abs() < 1e-9);
        // Groups: of 2 workers' time in the window, the star tasks ran one
        // worker's (50%), the collector half of one (25%).
        assert_eq!(f.groups.len(), 2);
        let g = &f.groups[0];
        assert_eq!(g.group, "mc/star/*/step/*");
        assert_eq!((g.tasks_recent, g.tasks_run), (2, 2));
        assert!((g.recent - 0.5).abs() < 1e-9, "{}", g.recent);
        assert!((g.run - 0.25).abs() < 1e-9, "{}", g.run);
        assert_eq!(f.groups[1].group, "mc/collect");
        assert!((f.groups[1].recent - 0.25).abs() < 1e-9);
        assert!((f.groups[1].run - 0.25).abs() < 1e-9);
        // A shorter window sees the same.
        let f = m.snapshot(&SnapshotOptions {
            window_s: 1.0,
            top: 1,
        });
        assert_eq!(f.groups.len(), 1);
        assert_eq!(f.groups_more, 1);
        assert!((f.window_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn scheduler_samples_are_charged_to_the_tasks_that_ran() {
        let mut m = Model::new(&header(MonitorFlags::SAMPLED, 1));
        let mut w = window(0, 0, 10 * MS, 10, 2);
        w.sched = 2;
        // 6 running samples (task 1), 2 between tasks, 2 idle: busy 80%.
        m.samples(&w, &[(1, 6)]);
        let f = m.snapshot(&SnapshotOptions::default());
        assert!((f.workers[0].recent.unwrap() - 0.8).abs() < 1e-9);
        assert!((f.workers[0].recent_wait.unwrap() - 0.2).abs() < 1e-9);
        assert!((f.groups[0].recent - 0.8).abs() < 1e-9);
        assert_eq!(f.groups[0].group, "task#1", "no name yet");
    }

    fn period(task: u64, start: u64, end: u64, end_state: EndState) -> Item<'static> {
        Item::Period(ScannedPeriod {
            start,
            end,
            task,
            end_state,
        })
    }

    #[test]
    fn periods_give_exact_busy_time_and_recent_stream_waits() {
        let mut m = Model::new(&header(MonitorFlags::FULL, 2));
        assert_eq!(m.source(), Source::Periods);
        assign(&mut m, 1, "src");
        assign(&mut m, 2, "sink");
        m.worker_record(
            0,
            Item::StreamBind {
                t: 0,
                stream: 9,
                side: Side::Writer,
                task: 1,
            },
            &[],
        );
        m.worker_record(
            0,
            Item::StreamBind {
                t: 0,
                stream: 9,
                side: Side::Reader,
                task: 2,
            },
            &[],
        );
        m.worker_record(0, Item::WorkerStart { t: 0 }, &[]);
        m.worker_record(1, Item::WorkerStart { t: 0 }, &[]);
        // Worker 0: src busy 150 ms of every 200 ms over 2 s, ending blocked
        // on its full output each time; worker 1: sink 50 ms of each 200 ms,
        // blocked on its empty input.
        let io = [rill_log::StreamIo {
            stream: 9,
            reads: 0,
            writes: 3,
            woke_peer: false,
        }];
        for k in 0..10 {
            let t = k * 200 * MS;
            m.worker_record(
                0,
                period(1, t, t + 150 * MS, EndState::BlockedOutput { stream: 9 }),
                &io,
            );
            m.worker_record(
                1,
                period(
                    2,
                    t + 150 * MS,
                    t + 200 * MS,
                    EndState::BlockedInput { stream: 9 },
                ),
                &[],
            );
        }
        let f = m.snapshot(&SnapshotOptions {
            window_s: 1.0,
            top: 10,
        });
        assert!((f.elapsed_s - 2.0).abs() < 1e-9);
        assert!((f.workers[0].recent.unwrap() - 0.75).abs() < 1e-9);
        assert!((f.workers[0].run.unwrap() - 0.75).abs() < 1e-9);
        assert!((f.workers[1].recent.unwrap() - 0.25).abs() < 1e-9);
        assert_eq!(f.workers[0].dispatches, 10);
        assert_eq!(f.workers[0].recent_error_pp, None, "exact");
        // Groups: src 75% of one worker of two = 37.5%.
        assert_eq!(f.groups[0].group, "src");
        assert!((f.groups[0].recent - 0.375).abs() < 1e-9);
        assert_eq!(f.groups[0].dispatches, 10);
        // Waits in the last second: 5 each way (the bins of 1 s hold 5
        // periods of each).
        assert!(f.stream_waits_recent);
        assert_eq!(f.streams.len(), 1);
        let s = &f.streams[0];
        assert_eq!(s.label, "src -> sink");
        assert_eq!((s.reader_waits, s.writer_waits), (5, 5));
        assert_eq!(s.messages, 30);
    }

    #[test]
    fn sample_mode_lists_the_waits_of_closed_stream_ends() {
        let mut m = Model::new(&header(MonitorFlags::SAMPLED, 1));
        assign(&mut m, 1, "relay/1");
        assign(&mut m, 2, "relay/2");
        for (stream, side, task) in [(5, Side::Writer, 1), (5, Side::Reader, 2)] {
            m.worker_record(
                0,
                Item::StreamBind {
                    t: 0,
                    stream,
                    side,
                    task,
                },
                &[],
            );
        }
        m.worker_record(
            0,
            Item::StreamTotals {
                t: 0,
                stream: 5,
                side: Side::Reader,
                messages: 100,
                waits: 7,
            },
            &[],
        );
        let f = m.snapshot(&SnapshotOptions::default());
        assert!(!f.stream_waits_recent);
        assert_eq!(f.streams.len(), 1);
        assert_eq!(f.streams[0].label, "relay/* -> relay/*");
        assert_eq!((f.streams[0].reader_waits, f.streams[0].messages), (7, 100));
    }

    #[test]
    fn forged_times_cost_no_more_than_the_history() {
        let mut m = Model::new(&header(MonitorFlags::SAMPLED, 1));
        m.samples(&window(0, 0, u64::MAX, 10, 0), &[(1, 10)]);
        m.samples(&window(0, u64::MAX / 2, 10, 10, 0), &[(1, 10)]);
        let f = m.snapshot(&SnapshotOptions::default());
        assert!(f.workers[0].history.len() <= HISTORY_BINS);
        assert!(m.bins.len() <= HISTORY_BINS);
    }
}
