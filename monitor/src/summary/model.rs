//! The summary of a run ([`Summary`]) and its rows: workers, tasks, task
//! groups, streams, throughput, sampling.

use serde::Serialize;

use crate::summary::latency::LatencySummary;

/// Everything `rill-mon summary` prints. Times are nanoseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The log directory.
    pub dir: String,
    /// The monitoring flags the run recorded.
    pub flags: String,
    /// Number of workers (from the headers; in a run across ranks, of all
    /// ranks).
    pub worker_count: u32,
    /// A run across ranks: its ranks, their clocks' alignment (the largest
    /// residual is `clock_residual_ns`) and its cross-rank streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<crate::load::ranks::model::Ranks>,
    /// The run's span: first to last time stamp over all logs.
    pub span_ns: u64,
    /// Monitoring events: a period counts 1 + the messages it read and
    /// wrote, every other record 1.
    pub events: u64,
    /// Log bytes analysed (headers and intact records).
    pub bytes: u64,
    /// `bytes / events`.
    pub bytes_per_event: f64,
    /// Per worker, by id.
    pub workers: Vec<WorkerSummary>,
    /// Per task, heaviest (most execution time) first.
    pub tasks: Vec<TaskSummary>,
    /// Whether `groups` folds numbered task names ([`group_of`](crate::group_of));
    /// otherwise it has a row per task name.
    pub grouped: bool,
    /// Per task group (numbered names folded: `mc/star/*/step/*`), heaviest
    /// first.
    pub groups: Vec<GroupSummary>,
    /// Per stream, by id.
    pub streams: Vec<StreamSummary>,
    /// Poll waits put on no stream (the task's next period read nothing,
    /// or there was none), as `waits` counts them.
    pub unattributed_poll_waits: u64,
    /// Outputs per second (absent without periods and stream counts).
    pub throughput: Option<Throughput>,
    /// Per-input latency and jitter (absent unless the run recorded the
    /// message order).
    pub latency: Option<LatencySummary>,
    /// Sample mode: how the time figures were estimated (absent otherwise).
    pub sampling: Option<SamplingSummary>,
    /// Analyses left out because the run did not record what they need.
    pub notes: Vec<String>,
    /// Problems with the logs (damaged records, missing workers).
    pub warnings: Vec<String>,
}

/// How a sample-mode run's time figures were estimated.
#[derive(Clone, Debug, Serialize)]
pub struct SamplingSummary {
    /// Samples per second (the run's `sample:HZ`, or the runtime's default).
    pub hz: Option<u32>,
    /// The fewest independent samples of any worker (its timer signals,
    /// scaled for the time it was parked, which is measured:
    /// `WorkerSamples::observations`).
    pub min_samples: u64,
    /// 95% bound of a share of a worker's time estimated from that many
    /// samples, in percentage points.
    pub share_error_pp: f64,
    /// A run that recorded periods as well: how far the samples are from
    /// them.
    pub check: Option<crate::load::samples::SamplerCheck>,
}

/// One worker's time budget (the paper's Table III: WE and WT).
#[derive(Clone, Debug, Serialize)]
pub struct WorkerSummary {
    /// Worker id.
    pub worker: u32,
    /// In a run across ranks, its name: `rR/wK`, rank R's worker K.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// From the worker's first to its last time stamp.
    pub span_ns: u64,
    /// Sum of its periods (time running tasks).
    pub busy_ns: u64,
    /// Sum of its waits: WT.
    pub wait_ns: u64,
    /// `span - busy - wait` (scheduling overhead, unlogged time), at least 0.
    pub unaccounted_ns: u64,
    /// Number of waits: WE.
    pub waiting_events: u64,
    /// Task dispatches (resumptions), as `rill::RunStats` counts them:
    /// its periods less its spins.
    pub dispatches: u64,
    /// Spins before a block: a task about to block spun first and went
    /// on, which its log shows as a period that ended blocked, a wait and
    /// a new period (no dispatch). From the logged pattern (exact for the
    /// runtime's logs), or in sample mode from the worker's totals.
    pub spins: u64,
    /// Monitoring events in its log.
    pub events: u64,
    /// Its log's size (header and intact records).
    pub bytes: u64,
    /// Why its log stops before the run's end, when it does (the writer
    /// ran out of disk space and stopped; the run went on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

/// One task's execution.
#[derive(Clone, Debug, Serialize)]
pub struct TaskSummary {
    /// Task id.
    pub task: u64,
    /// Name (`task#ID` if no `TaskAssign` was logged).
    pub name: String,
    /// The worker it was mapped to, if logged.
    pub worker: Option<u32>,
    /// Creating task (0 = none).
    pub parent: u64,
    /// Its dispatches (resumptions): its periods less its spins.
    pub dispatches: u64,
    /// Its spins before a block (periods that are no dispatch of their
    /// own).
    pub spins: u64,
    /// Total execution time.
    pub total_ns: u64,
    /// Mean execution time per period (a spin's period counts).
    pub mean_ns: f64,
    /// Messages read.
    pub reads: u64,
    /// Messages written.
    pub writes: u64,
    /// Migrations.
    pub migrations: u64,
    /// How its last period ended (`end`, `panic`, `input`, ...).
    pub last_state: Option<String>,
}

/// One task group's totals: its tasks' figures added up.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSummary {
    /// The group (numbered path segments folded; a task name when not
    /// grouped).
    pub group: String,
    /// Tasks in it.
    pub tasks: u64,
    /// Their dispatches (resumptions).
    pub dispatches: u64,
    /// Their spins before a block.
    pub spins: u64,
    /// Their execution time (estimated in sample mode: see `estimated`).
    pub busy_ns: u64,
    /// `busy_ns` over all tasks' execution time.
    pub busy_share: f64,
    /// Messages its tasks read and wrote.
    pub reads: u64,
    /// Messages written.
    pub writes: u64,
    /// How often its tasks blocked on a stream: periods that ended blocked
    /// reading one empty (or on a poll put on it) or writing one full, as
    /// `waits` counts them (exact).
    pub waits: u64,
    /// How long, each wait to the task's next dispatch (`None` in sample
    /// mode, which times no wait).
    pub wait_ns: Option<u64>,
    /// Whether `busy_ns` is an estimate (sample mode).
    pub estimated: bool,
    /// Its busiest task, when that was busy over twice the median of the
    /// group's tasks (a group of two or more, the lower median for an even
    /// count: the fold's sums hide it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outlier: Option<crate::summary::outlier::GroupOutlier>,
}

/// One stream's traffic.
#[derive(Clone, Debug, Serialize)]
pub struct StreamSummary {
    /// Stream id.
    pub stream: u64,
    /// The name the program gave it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Capacity, if its opening was logged.
    pub capacity: Option<u32>,
    /// Writing task, if bound.
    pub writer: Option<String>,
    /// Reading task, if bound.
    pub reader: Option<String>,
    /// Messages written to it.
    pub written: u64,
    /// Messages read from it (carried).
    pub read: u64,
    /// How often its reader blocked on it (periods ending blocked on input on it).
    pub reader_blocked: u64,
    /// Poll waits of its reader put on it: periods that ended blocked on
    /// several inputs at once (`PollSet`, `rill::poll`) whose task read
    /// this stream first when it next ran, as `waits` puts them. The text's
    /// "reader waits" are `reader_blocked + reader_poll_waits`, `waits`'
    /// reader waits.
    pub reader_poll_waits: u64,
    /// How often its writer blocked on it (periods ending blocked on output on it).
    pub writer_blocked: u64,
    /// In a run across ranks, the rank it lives on (absent for a
    /// cross-rank stream, which lives on two).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// A cross-rank stream: its halves' ranks and ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank: Option<crate::load::ranks::model::CrossStream>,
}

/// Outputs per second.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    /// What is counted: `"outputs"` (messages read by sink tasks, which write
    /// no stream) or `"messages written"` when the run has no sink.
    pub basis: String,
    /// How many.
    pub count: u64,
    /// Per second of the run's span.
    pub per_sec: f64,
}
