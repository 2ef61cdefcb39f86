//! The data model of a loaded run: [`RunLog`] and what it says about
//! each task ([`TaskInfo`]) and stream ([`StreamInfo`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use rill_log::{Calibration, EndState, MonitorFlags};

use crate::load::raw_latency::RawLatency;
use crate::load::worker_log::WorkerLog;

/// A whole run's logs, checked and scanned once (see [`load_run`](crate::load_run)).
///
/// Holds each log's bytes (not its decoded records) plus per-worker, per-task
/// and per-stream totals; the other analyses make their own streaming passes
/// over the bytes with [`WorkerLog::scanner`].
#[derive(Debug)]
pub struct RunLog {
    /// The directory the logs came from.
    pub dir: PathBuf,
    /// What the run recorded (from the headers).
    pub flags: MonitorFlags,
    /// Number of workers the headers announce.
    pub worker_count: u32,
    /// The run's clock calibration.
    pub calibration: Calibration,
    /// One entry per log file, by worker id.
    pub workers: Vec<WorkerLog>,
    /// Every task seen (assigned or dispatched), by id.
    pub tasks: BTreeMap<u64, TaskInfo>,
    /// Every stream seen (opened, bound or used), by id.
    pub streams: BTreeMap<u64, StreamInfo>,
    /// Problems that did not stop the analysis: damaged records (file, byte
    /// offset, reason), missing worker logs, unwritten tails.
    pub warnings: Vec<String>,
    /// Earliest time in the run (ticks); the origin of timelines and traces.
    pub t0: u64,
    /// Latest time in the run (ticks).
    pub t1: u64,
    /// The latency replay, when it ran during loading.
    pub(crate) latency: Option<RawLatency>,
    /// Sample mode: the sampler's windows and what was estimated from them
    /// (busy and waiting time per worker, busy time per task).
    pub sampled: Option<crate::load::samples::Sampled>,
    /// A run across ranks (`DIR/rank-R/`, see [`Ranks`](crate::Ranks)):
    /// its ranks, how their ids and workers were renumbered, and its
    /// cross-rank streams. `None` for one process's run.
    pub ranks: Option<crate::load::ranks::model::Ranks>,
    /// Tasks whose periods lie in more than one log (they migrated): for
    /// them a log's order is not the task's order.
    pub(crate) split_tasks: u64,
    /// The waits of the tasks whose last period ended blocked (to the
    /// run's end), counting each task in one log only.
    pub(crate) open_waits: u64,
    /// Poll waits put on no stream (the next period read nothing, or
    /// there was none), and their ticks.
    pub(crate) unattributed_polls: u64,
    pub(crate) unattributed_poll_ticks: u64,
}
/// What the logs say about a task.
#[derive(Clone, Debug, Default)]
pub struct TaskInfo {
    /// Task id.
    pub id: u64,
    /// Name from `TaskAssign`, if logged.
    pub name: Option<String>,
    /// Creating task (0 = none).
    pub parent: u64,
    /// The worker it was first mapped to.
    pub assigned: Option<u32>,
    /// When it was first mapped (its earliest `TaskAssign`, ticks), if
    /// logged.
    pub created: Option<u64>,
    /// Total execution time (sum of its periods), ticks.
    pub busy: u64,
    /// Number of periods (in sample mode, the dispatches its totals record).
    pub dispatches: u64,
    /// Spins before a block among its periods (periods that are no
    /// dispatch of their own: see [`WorkerStats`](crate::WorkerStats)).
    pub spins: u64,
    /// Messages read.
    pub reads: u64,
    /// Messages written.
    pub writes: u64,
    /// Migrations logged.
    pub migrations: u64,
    /// How its last period ended.
    pub last_end: Option<EndState>,
    /// End of its last period (ticks), to order `last_end` across workers.
    pub last_time: u64,
    /// The worker whose log holds most of its busy time (ties: the lower
    /// id); `None` when no log holds a period of it.
    pub ran_on: Option<u32>,
}

impl TaskInfo {
    /// The name, or `task#ID` when none was logged.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("task#{}", self.id),
        }
    }

    /// Its dispatches as the runtime counts them (resumptions): its
    /// periods less the spins before a block among them.
    pub fn resumptions(&self) -> u64 {
        self.dispatches.saturating_sub(self.spins)
    }

    /// A task that reads messages but writes none (its reads are the run's outputs).
    pub fn is_sink(&self) -> bool {
        self.reads > 0 && self.writes == 0
    }
}

/// What the logs say about a stream.
#[derive(Clone, Debug, Default)]
pub struct StreamInfo {
    /// Stream id.
    pub id: u64,
    /// Capacity from `StreamOpen`.
    pub capacity: Option<u32>,
    /// The name the program gave it (`StreamName`), if any.
    pub name: Option<String>,
    /// Creating task (0 = none).
    pub creator: u64,
    /// Task bound to the writing end (the last bind logged).
    pub writer: Option<u64>,
    /// Task bound to the reading end (the last bind logged).
    pub reader: Option<u64>,
    /// Messages written to it.
    pub written: u64,
    /// Messages read from it.
    pub read: u64,
    /// Periods that ended blocked reading it (its reader blocked).
    pub reader_blocked: u64,
    /// Periods that ended blocked writing it (its writer blocked).
    pub writer_blocked: u64,
    /// Poll waits of its reader put on it: periods that ended blocked on
    /// several inputs (`BlockedAny`) whose task's next period in the same
    /// log read this stream first (as `waits` attributes them).
    pub poll_waits: u64,
    /// Ticks its reader waited on it: from each period that ended blocked
    /// reading it (or a poll put on it) to the task's next period in the
    /// same log, or to the run's end. The `waits` of a task whose periods
    /// lie in one log.
    pub reader_wait: u64,
    /// The same for its writer (periods that ended blocked writing it).
    pub writer_wait: u64,
    /// Ends closed (reader, writer).
    pub closed: (bool, bool),
}
impl RunLog {
    /// Converts a duration in ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> u64 {
        self.calibration.ticks_to_ns(ticks)
    }

    /// Nanoseconds from the run's first time stamp [`t0`](Self::t0) to `t`.
    pub fn rel_ns(&self, t: u64) -> f64 {
        self.calibration.since_start_ns(t) as f64 - self.calibration.since_start_ns(self.t0) as f64
    }

    /// The run's span (first to last time stamp), nanoseconds.
    pub fn span_ns(&self) -> u64 {
        self.ns(self.t1.saturating_sub(self.t0))
    }

    /// Worker `w`'s name: its id, or in a run across ranks `rR/wK` (rank
    /// R's worker K).
    pub fn worker_name(&self, w: u32) -> String {
        match &self.ranks {
            Some(r) => r.worker_name(w),
            None => w.to_string(),
        }
    }

    /// A task's display name.
    pub fn task_label(&self, id: u64) -> String {
        self.tasks
            .get(&id)
            .map_or_else(|| format!("task#{id}"), TaskInfo::label)
    }

    /// Total log bytes analysed (headers and intact records).
    pub fn bytes(&self) -> u64 {
        self.workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(w.valid_len))
    }

    /// Total monitoring events (saturating: the counts come from the files).
    pub fn events(&self) -> u64 {
        self.workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(w.stats.events))
    }
}
