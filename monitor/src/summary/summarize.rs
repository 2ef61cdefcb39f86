//! `rill-mon summary`: per-worker, per-task and per-stream totals, throughput,
//! latency and jitter.

use std::fmt::Write as _;

use rill_log::{EndState, MonitorFlags};
use serde::Serialize;

use crate::load::model::RunLog;
use crate::render::number::fmt_ns;
use crate::render::table::table;
use crate::summary::latency::{LatencyStats, LatencySummary};

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
    pub ranks: Option<crate::load::ranks::Ranks>,
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
    /// Periods (task dispatches).
    pub dispatches: u64,
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
    /// Number of periods.
    pub dispatches: u64,
    /// Total execution time.
    pub total_ns: u64,
    /// Mean execution time per period.
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
    /// Their periods.
    pub dispatches: u64,
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
    /// How often its writer blocked on it (periods ending blocked on output on it).
    pub writer_blocked: u64,
    /// In a run across ranks, the rank it lives on (absent for a
    /// cross-rank stream, which lives on two).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// A cross-rank stream: its halves' ranks and ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank: Option<crate::load::ranks::CrossStream>,
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

/// The short name of an end state (`yield`, `input`, `output`, `any`, `end`, `panic`).
pub fn end_state_name(s: EndState) -> &'static str {
    match s {
        EndState::Yielded => "yield",
        EndState::BlockedInput { .. } => "input",
        EndState::BlockedOutput { .. } => "output",
        EndState::BlockedAny => "any",
        EndState::Ended => "end",
        EndState::Panicked => "panic",
    }
}

/// Summarises a run.
///
/// Worker, task and stream totals come from [`load_run`](crate::load_run)'s
/// scan. Latency needs the SCHEDULER, STREAM and MESSAGE flags and makes one
/// more pass, over all workers' periods merged by start time, replaying each
/// task's reads and writes in order:
///
/// * A task's *component execution* (CE) runs from its previous CE's last
///   write (or its first dispatch) to its last write before it next reads;
///   its parents are the messages it read in between.
/// * Each message has a time on its task's *busy clock* (time dispatched so
///   far): the recorded message time with MESSAGE_TIME, otherwise the period's
///   duration apportioned evenly over its messages (the i-th of n messages of
///   a period of duration d sits at `d * i / n`, so the last message takes the
///   period's end and a period without messages adds its time to the next
///   message).
/// * Latency of a written message = busy time from its CE's start to the write,
///   plus the largest latency among the CE's parents (Equation 1 along the
///   critical parent chain). A write with no parents (a source) starts a new
///   execution, so a source's message costs the busy time since its previous
///   write.
/// * Outputs are messages read by sink tasks (tasks that write no stream);
///   the sink's own processing is not included. Jitter is the mean absolute
///   difference of consecutive outputs' latencies (per sink; over all sinks
///   the output-weighted mean); the standard deviation (population) is also
///   reported.
///
/// The replay runs during [`load_run`](crate::load_run), beside the scans,
/// unless [`LoadOptions::latency`](crate::LoadOptions::latency) was off; then here.
pub fn summarize(run: &RunLog) -> Summary {
    summarize_with(run, true, true)
}

/// [`summarize`] with `groups` folding numbered task names (`group`) or
/// listing task names one by one.
pub fn summarize_grouped(run: &RunLog, group: bool) -> Summary {
    summarize_with(run, true, group)
}

/// [`summarize`] without latency and jitter: only the totals the load
/// already holds, so no pass over the records (`latency` is `None`, and no
/// note is added about it).
pub fn summarize_totals(run: &RunLog) -> Summary {
    summarize_with(run, false, true)
}

fn summarize_with(run: &RunLog, with_latency: bool, group: bool) -> Summary {
    let mut notes = Vec::new();
    let flags = run.flags;
    let has = |f: MonitorFlags| flags.contains(f);
    let sampling = run.sampled.as_ref().map(|sm| SamplingSummary {
        hz: sm.hz,
        min_samples: sm.min_samples(),
        share_error_pp: 100.0 * crate::load::samples::Sampled::share_error(sm.min_samples()),
        check: sm.check(run),
    });
    if let Some(c) = sampling.as_ref().and_then(|sm| sm.check) {
        notes.push(format!(
            "sampler check (the run recorded periods and samples): the busy shares from samples \
             differ from the periods' by at most {:.2} points per worker and {:.2} points per \
             task group",
            c.worker_pp, c.group_pp
        ));
    } else if let Some(sm) = &sampling {
        notes.push(format!(
            "sample mode: busy and waiting times (and per-task times) are estimates from at \
             least {} independent samples per worker, each within {:.1} points of the worker's time (95%); \
             dispatches, messages and waits are exact counts",
            sm.min_samples, sm.share_error_pp
        ));
        if flags.is_cpu_clock() {
            notes.push(
                "cpu mode: the samples were taken at the kernel's scheduler ticks, which all \
                 cores take together; a worker fed by another is caught waiting on it more \
                 often than it waits (2 to 12 points on Monte Carlo), beyond the bound above: \
                 for waiting times across workers, record with --monitor sample"
                    .to_owned(),
            );
        }
    } else if !has(MonitorFlags::SCHEDULER) {
        notes.push(
            "no SCHEDULER flag: no periods, so busy time, dispatches and per-task times are 0"
                .to_owned(),
        );
    }
    if !has(MonitorFlags::WORKER) {
        notes.push(
            "no WORKER flag: waits (WE/WT) were not recorded, so waiting time shows as unaccounted"
                .to_owned(),
        );
    }
    if !has(MonitorFlags::MAPPING) {
        notes.push("no MAPPING flag: tasks have no names or assigned workers".to_owned());
    }
    if !has(MonitorFlags::STREAM) {
        notes.push(
            "no STREAM flag: no message counts, so no stream table, throughput or latency"
                .to_owned(),
        );
    }

    let workers = run
        .workers
        .iter()
        .map(|w| {
            let s = &w.stats;
            let span = s.finish.saturating_sub(s.begin);
            WorkerSummary {
                worker: w.worker,
                name: run.ranks.as_ref().map(|r| r.worker_name(w.worker)),
                span_ns: run.ns(span),
                busy_ns: run.ns(s.busy),
                wait_ns: run.ns(s.wait),
                unaccounted_ns: run.ns(span.saturating_sub(s.busy).saturating_sub(s.wait)),
                waiting_events: s.waits,
                dispatches: s.dispatches,
                events: s.events,
                bytes: w.valid_len,
                truncated: w.header.truncated.map(|t| t.cause()),
            }
        })
        .collect();

    let mut tasks: Vec<TaskSummary> = run
        .tasks
        .values()
        .map(|t| TaskSummary {
            task: t.id,
            name: t.label(),
            worker: t.assigned,
            parent: t.parent,
            dispatches: t.dispatches,
            total_ns: run.ns(t.busy),
            mean_ns: if t.dispatches == 0 {
                0.0
            } else {
                t.busy as f64 * run.calibration.ns_per_tick() / t.dispatches as f64
            },
            reads: t.reads,
            writes: t.writes,
            migrations: t.migrations,
            last_state: t.last_end.map(|s| end_state_name(s).to_owned()),
        })
        .collect();
    tasks.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.task.cmp(&b.task)));

    let groups = group_rows(run, &tasks, group);

    let streams = run
        .streams
        .values()
        .map(|s| StreamSummary {
            stream: s.id,
            name: s.name.clone(),
            capacity: s.capacity,
            writer: s.writer.map(|t| run.task_label(t)),
            reader: s.reader.map(|t| run.task_label(t)),
            written: s.written,
            read: s.read,
            reader_blocked: s.reader_blocked,
            writer_blocked: s.writer_blocked,
            rank: run
                .ranks
                .as_ref()
                .filter(|r| r.cross(s.id).is_none())
                .map(|r| r.rank_of_id(s.id)),
            cross_rank: run.ranks.as_ref().and_then(|r| r.cross(s.id)).cloned(),
        })
        .collect();

    let span_ns = run.span_ns();
    let timed = has(MonitorFlags::SCHEDULER) || run.sampled.is_some();
    let throughput = (has(MonitorFlags::STREAM) && timed).then(|| {
        // Counts from the files: saturating sums.
        let outputs = run
            .tasks
            .values()
            .filter(|t| t.is_sink())
            .fold(0u64, |n, t| n.saturating_add(t.reads));
        let (basis, count) = if outputs > 0 {
            ("outputs", outputs)
        } else {
            (
                "messages written",
                run.workers
                    .iter()
                    .fold(0u64, |n, w| n.saturating_add(w.stats.writes)),
            )
        };
        Throughput {
            basis: basis.to_owned(),
            count,
            per_sec: if span_ns == 0 {
                0.0
            } else {
                count as f64 * 1e9 / span_ns as f64
            },
        }
    });

    let latency = if !with_latency {
        None
    } else if !has(MonitorFlags::MESSAGE) {
        notes.push(format!(
            "no MESSAGE flag: the order of reads and writes was not recorded, so per-input \
             latency and jitter are not computed (the run recorded: {flags})"
        ));
        None
    } else if has(MonitorFlags::STREAM) && has(MonitorFlags::SCHEDULER) {
        Some(match &run.latency {
            Some(raw) => raw.finish(run),
            None => crate::replay::latency::replay_run(run).finish(run),
        })
    } else {
        None
    };

    let events = run.events();
    let bytes = run.bytes();
    Summary {
        dir: run.dir.display().to_string(),
        flags: flags.to_string(),
        worker_count: run.worker_count,
        ranks: run.ranks.clone(),
        span_ns,
        events,
        bytes,
        bytes_per_event: if events == 0 {
            0.0
        } else {
            bytes as f64 / events as f64
        },
        workers,
        tasks,
        grouped: group,
        groups,
        streams,
        throughput,
        latency,
        sampling,
        notes,
        warnings: run.warnings.clone(),
    }
}

/// The per-group rows: the tasks' figures added up per group (or task
/// name), heaviest first. A task's waits are its streams' blocked periods
/// as the load counted them (each stream's reader and writer), which are
/// `waits`' figures when each task's periods lie in one log (as the
/// runtime writes them).
fn group_rows(run: &RunLog, tasks: &[TaskSummary], group: bool) -> Vec<GroupSummary> {
    use std::collections::HashMap;
    let sampled = run
        .sampled
        .as_ref()
        .is_some_and(|_| crate::load::sampled::is_sample_only(run));
    let mut waits: HashMap<u64, (u64, u64)> = HashMap::new();
    for s in run.streams.values() {
        if let Some(r) = s.reader {
            let w = waits.entry(r).or_default();
            w.0 =
                w.0.saturating_add(s.reader_blocked.saturating_add(s.poll_waits));
            w.1 = w.1.saturating_add(s.reader_wait);
        }
        if let Some(t) = s.writer {
            let w = waits.entry(t).or_default();
            w.0 = w.0.saturating_add(s.writer_blocked);
            w.1 = w.1.saturating_add(s.writer_wait);
        }
    }
    let mut rows: Vec<GroupSummary> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        let name = if group {
            crate::load::groups::group_of(&t.name).into_owned()
        } else {
            t.name.clone()
        };
        let i = *index.entry(name.clone()).or_insert_with(|| {
            rows.push(GroupSummary {
                group: name,
                tasks: 0,
                dispatches: 0,
                busy_ns: 0,
                busy_share: 0.0,
                reads: 0,
                writes: 0,
                waits: 0,
                wait_ns: (!sampled).then_some(0),
                estimated: sampled,
            });
            rows.len() - 1
        });
        let g = &mut rows[i];
        let (n, ticks) = waits.get(&t.task).copied().unwrap_or_default();
        g.tasks += 1;
        g.dispatches = g.dispatches.saturating_add(t.dispatches);
        g.busy_ns = g.busy_ns.saturating_add(t.total_ns);
        g.reads = g.reads.saturating_add(t.reads);
        g.writes = g.writes.saturating_add(t.writes);
        g.waits = g.waits.saturating_add(n);
        g.wait_ns = g.wait_ns.map(|w| w.saturating_add(run.ns(ticks)));
    }
    let all = rows.iter().fold(0u64, |n, g| n.saturating_add(g.busy_ns));
    for g in &mut rows {
        g.busy_share = if all == 0 {
            0.0
        } else {
            g.busy_ns as f64 / all as f64
        };
    }
    rows.sort_by(|a, b| {
        b.busy_ns
            .cmp(&a.busy_ns)
            .then_with(|| a.group.cmp(&b.group))
    });
    rows
}

/// Tasks listed in the text report when groups are shown as well.
const TEXT_TASKS_WITH_GROUPS: usize = 20;

// ---------------------------------------------------------------------------
// Text.

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

impl Summary {
    /// Worker `w`'s name: `rR/wK` in a run across ranks, else its id.
    fn worker_name(&self, w: u32) -> String {
        match &self.ranks {
            Some(r) => r.worker_name(w),
            None => w.to_string(),
        }
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "rill run {}: {} worker(s), flags {}, span {}",
            self.dir,
            self.worker_count,
            self.flags,
            fmt_ns(self.span_ns as f64)
        );
        if let Some(r) = &self.ranks {
            let _ = writeln!(o, "ranks: {}", r.describe());
        }
        let _ = writeln!(
            o,
            "log: {} events in {} bytes ({:.2} bytes/event)",
            self.events, self.bytes, self.bytes_per_event
        );

        o.push_str("\nworkers (WE = waiting events, WT = waiting time)\n");
        let rows: Vec<Vec<String>> = self
            .workers
            .iter()
            .map(|w| {
                vec![
                    w.name.clone().unwrap_or_else(|| w.worker.to_string()),
                    fmt_ns(w.span_ns as f64),
                    fmt_ns(w.busy_ns as f64),
                    pct(w.busy_ns, w.span_ns),
                    fmt_ns(w.wait_ns as f64),
                    w.waiting_events.to_string(),
                    fmt_ns(w.unaccounted_ns as f64),
                    w.dispatches.to_string(),
                ]
            })
            .collect();
        table(
            &mut o,
            &[
                "worker",
                "span",
                "busy",
                "busy%",
                "WT",
                "WE",
                "unaccounted",
                "dispatches",
            ],
            &rows,
            &[],
        );

        // Groups, where some fold several tasks.
        let folded = self.grouped && self.groups.len() < self.tasks.len();
        if folded {
            let est = self.groups.iter().any(|g| g.estimated);
            let _ = writeln!(
                o,
                "\ntask groups (numbered names folded; heaviest first{})",
                if est {
                    "; ~ busy time estimated from samples"
                } else {
                    ""
                }
            );
            let rows: Vec<Vec<String>> = self
                .groups
                .iter()
                .map(|g| {
                    let tilde = if g.estimated { "~" } else { "" };
                    vec![
                        g.group.clone(),
                        g.tasks.to_string(),
                        format!("{tilde}{}", fmt_ns(g.busy_ns as f64)),
                        format!("{:.1}%", g.busy_share * 100.0),
                        g.dispatches.to_string(),
                        g.reads.to_string(),
                        g.writes.to_string(),
                        g.waits.to_string(),
                        g.wait_ns.map_or_else(|| "-".into(), |w| fmt_ns(w as f64)),
                    ]
                })
                .collect();
            table(
                &mut o,
                &[
                    "group",
                    "tasks",
                    "busy",
                    "busy%",
                    "dispatches",
                    "reads",
                    "writes",
                    "waits",
                    "wait time",
                ],
                &rows,
                &[0],
            );
        }

        if !self.tasks.is_empty() {
            let shown = if folded {
                TEXT_TASKS_WITH_GROUPS.min(self.tasks.len())
            } else {
                self.tasks.len()
            };
            if shown < self.tasks.len() {
                let _ = writeln!(
                    o,
                    "\ntasks (the {shown} heaviest of {}; --no-group lists every task)",
                    self.tasks.len()
                );
            } else {
                o.push_str("\ntasks (heaviest first)\n");
            }
            let rows: Vec<Vec<String>> = self
                .tasks
                .iter()
                .take(shown)
                .map(|t| {
                    vec![
                        t.task.to_string(),
                        t.name.clone(),
                        t.worker.map_or_else(|| "-".into(), |w| self.worker_name(w)),
                        fmt_ns(t.total_ns as f64),
                        t.dispatches.to_string(),
                        fmt_ns(t.mean_ns),
                        t.reads.to_string(),
                        t.writes.to_string(),
                        t.last_state.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            table(
                &mut o,
                &[
                    "task",
                    "name",
                    "worker",
                    "total",
                    "dispatches",
                    "mean",
                    "reads",
                    "writes",
                    "last",
                ],
                &rows,
                &[1, 8],
            );
        }

        if !self.streams.is_empty() {
            o.push_str("\nstreams\n");
            let ranked = self.ranks.is_some();
            let rows: Vec<Vec<String>> = self
                .streams
                .iter()
                .map(|s| {
                    let mut row = vec![
                        match &s.name {
                            Some(n) => format!("{n} ({})", s.stream),
                            None => s.stream.to_string(),
                        },
                        s.capacity.map_or_else(|| "-".into(), |c| c.to_string()),
                        s.writer.clone().unwrap_or_else(|| "-".into()),
                        s.reader.clone().unwrap_or_else(|| "-".into()),
                        s.read.to_string(),
                        s.written.to_string(),
                        s.writer_blocked.to_string(),
                        s.reader_blocked.to_string(),
                    ];
                    if ranked {
                        row.push(match (&s.cross_rank, s.rank) {
                            (Some(c), _) => c.marker(),
                            (None, Some(r)) => format!("r{r}"),
                            (None, None) => "-".into(),
                        });
                    }
                    row
                })
                .collect();
            let mut head = vec![
                "stream",
                "capacity",
                "writer",
                "reader",
                "carried",
                "written",
                "writer blocked",
                "reader blocked",
            ];
            if ranked {
                head.push("rank");
            }
            table(&mut o, &head, &rows, &[2, 3, 8]);
        }

        if let Some(t) = &self.throughput {
            let _ = writeln!(
                o,
                "\nthroughput: {:.1} {}/s ({} {} over {})",
                t.per_sec,
                t.basis,
                t.count,
                t.basis,
                fmt_ns(self.span_ns as f64)
            );
        }
        if let Some(l) = &self.latency {
            let _ = writeln!(
                o,
                "\nper-input latency ({}; {} outputs)",
                l.timing, l.all.outputs
            );
            let row = |name: String, s: &LatencyStats| {
                vec![
                    name,
                    s.outputs.to_string(),
                    fmt_ns(s.mean_ns),
                    fmt_ns(s.stddev_ns),
                    fmt_ns(s.min_ns),
                    fmt_ns(s.max_ns),
                    fmt_ns(s.jitter_ns),
                ]
            };
            let mut rows = vec![row("all".into(), &l.all)];
            if l.sinks.len() > 1 {
                rows.extend(l.sinks.iter().map(|s| row(s.name.clone(), &s.stats)));
            }
            table(
                &mut o,
                &[
                    "outputs of",
                    "outputs",
                    "mean",
                    "stddev",
                    "min",
                    "max",
                    "jitter",
                ],
                &rows,
                &[0],
            );
            if l.skipped_periods > 0 {
                let _ = writeln!(
                    o,
                    "  {} periods claiming implausibly many messages (over 16 Mi in one period, or more \
                     than the logs' size allows) were left out: the latencies are unreliable",
                    l.skipped_periods
                );
            }
            if l.unmatched_reads > 0 {
                let _ = writeln!(
                    o,
                    "  {} reads had no logged write (damaged or missing logs)",
                    l.unmatched_reads
                );
            }
        }
        if !self.notes.is_empty() {
            o.push_str("\nnot analysed:\n");
            for n in &self.notes {
                let _ = writeln!(o, "  {n}");
            }
        }
        if !self.warnings.is_empty() {
            o.push_str("\nwarnings:\n");
            for w in &self.warnings {
                let _ = writeln!(o, "  {w}");
            }
        }
        o
    }
}
