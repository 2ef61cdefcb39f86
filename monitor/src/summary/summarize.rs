//! `rill-mon summary`: per-worker, per-task and per-stream totals, throughput,
//! latency and jitter.

use rill_log::{EndState, MonitorFlags};

use crate::load::model::RunLog;
use crate::summary::model::{
    GroupSummary, SamplingSummary, StreamSummary, Summary, TaskSummary, Throughput, WorkerSummary,
};

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
                dispatches: s.resumptions(),
                spins: s.spins(),
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
            dispatches: t.resumptions(),
            spins: t.spins,
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
            reader_poll_waits: s.poll_waits,
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
        unattributed_poll_waits: run.unattributed_polls,
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
    let mut members: Vec<Vec<(u64, &str, u64)>> = Vec::new();
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
                spins: 0,
                busy_ns: 0,
                busy_share: 0.0,
                reads: 0,
                writes: 0,
                waits: 0,
                wait_ns: (!sampled).then_some(0),
                estimated: sampled,
                outlier: None,
            });
            members.push(Vec::new());
            rows.len() - 1
        });
        members[i].push((t.task, t.name.as_str(), t.total_ns));
        let g = &mut rows[i];
        let (n, ticks) = waits.get(&t.task).copied().unwrap_or_default();
        g.tasks += 1;
        g.dispatches = g.dispatches.saturating_add(t.dispatches);
        g.spins = g.spins.saturating_add(t.spins);
        g.busy_ns = g.busy_ns.saturating_add(t.total_ns);
        g.reads = g.reads.saturating_add(t.reads);
        g.writes = g.writes.saturating_add(t.writes);
        g.waits = g.waits.saturating_add(n);
        g.wait_ns = g.wait_ns.map(|w| w.saturating_add(run.ns(ticks)));
    }
    for (g, m) in rows.iter_mut().zip(members) {
        g.outlier = crate::summary::outlier::group_outlier(m);
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
