//! The merge of the per-file scans into one [`RunLog`]: the headers
//! checked against each other, the totals added up.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;

use crate::load::files::{file_label, RawFile};
use rill_log::EndState;

use crate::load::model::{RunLog, StreamInfo, TaskInfo};
use crate::load::scan_file::Scanned;
use crate::load::worker_log::WorkerLog;

/// Missing workers named one by one in the warning about them; the rest are
/// counted.
const MISSING_LISTED: usize = 16;
/// The warning about the workers below `count` that have no log, if any.
///
/// `count` comes from a header, so it may be anything up to `u32::MAX`: the
/// work here is bounded by the logs present (`seen`) and [`MISSING_LISTED`],
/// not by `count`.
fn missing_workers(count: u32, seen: &BTreeMap<u32, String>) -> Option<String> {
    let present = seen.range(..count).count() as u64;
    let missing = u64::from(count) - present;
    if missing == 0 {
        return None;
    }
    // Every id present is passed at most once before MISSING_LISTED missing
    // ones are found.
    let listed: Vec<String> = (0..count)
        .filter(|w| !seen.contains_key(w))
        .take(MISSING_LISTED)
        .map(|w| w.to_string())
        .collect();
    let more = missing - listed.len() as u64;
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "the headers announce {count} workers but the logs of worker(s) {}{tail} are missing",
        listed.join(", ")
    ))
}

pub(crate) fn merge(
    dir: &Path,
    scanned: Vec<Scanned>,
    files: Vec<RawFile>,
) -> anyhow::Result<RunLog> {
    let (first_name, first_header) = (file_label(&files[0].path), files[0].header);
    let mut warnings = Vec::new();
    let mut seen = BTreeMap::new();
    for f in &files {
        let h = &f.header;
        let name = file_label(&f.path);
        if h.worker_count != first_header.worker_count {
            bail!(
                "{}: worker count {} differs from {first_name}'s {} (logs of different runs?)",
                f.path.display(),
                h.worker_count,
                first_header.worker_count
            );
        }
        if h.calibration != first_header.calibration {
            bail!(
                "{}: clock calibration differs from {first_name}'s (logs of different runs?)",
                f.path.display()
            );
        }
        if h.flags != first_header.flags {
            warnings.push(format!(
                "{name}: monitoring flags {} differ from {first_name}'s {}; using {first_name}'s",
                h.flags, first_header.flags
            ));
        }
        if let Some(other) = seen.insert(h.worker, name.clone()) {
            bail!(
                "{}: worker id {} is also claimed by {other}",
                f.path.display(),
                h.worker
            );
        }
        if h.worker >= h.worker_count {
            warnings.push(format!(
                "{name}: worker id {} is not below the worker count {}",
                h.worker, h.worker_count
            ));
        }
    }
    if let Some(w) = missing_workers(first_header.worker_count, &seen) {
        warnings.push(w);
    }
    if first_header.flags.unknown_bits() != 0 {
        warnings.push(format!(
            "the logs record event classes this rill-mon does not know ({}); they are ignored",
            first_header.flags
        ));
    }

    let mut tasks: BTreeMap<u64, TaskInfo> = BTreeMap::new();
    let mut streams: BTreeMap<u64, StreamInfo> = BTreeMap::new();
    let mut workers = Vec::with_capacity(scanned.len());
    // Per task with periods: (busy of its main worker so far, logs holding
    // periods, its last period in the last of them).
    type Ran = (u64, u32, Option<(u64, EndState)>);
    let mut ran: BTreeMap<u64, Ran> = BTreeMap::new();
    let (mut unattributed_polls, mut unattributed_poll_ticks) = (0u64, 0u64);
    for (s, f) in scanned.into_iter().zip(files) {
        warnings.extend(s.warnings);
        unattributed_polls += s.unattributed_polls;
        unattributed_poll_ticks = unattributed_poll_ticks.saturating_add(s.unattributed_poll_ticks);
        let mut ts: Vec<(TaskInfo, Option<(u64, EndState)>)> =
            s.tasks.into_iter().zip(s.last).collect();
        ts.sort_by_key(|t| t.0.id);
        for (t, last) in ts {
            let e = tasks.entry(t.id).or_insert_with(|| TaskInfo {
                id: t.id,
                ..TaskInfo::default()
            });
            if t.dispatches > 0 {
                let r = ran.entry(t.id).or_insert((0, 0, None));
                r.1 += 1;
                r.2 = last;
                let better = match e.ran_on {
                    None => true,
                    Some(w) => t.busy > r.0 || (t.busy == r.0 && s.worker < w),
                };
                if better {
                    r.0 = t.busy;
                    e.ran_on = Some(s.worker);
                }
            }
            if let Some(c) = t.created {
                e.created = Some(e.created.map_or(c, |x| x.min(c)));
            }
            if e.name.is_none() && t.name.is_some() {
                e.name = t.name;
                e.parent = t.parent;
                e.assigned = t.assigned;
            }
            e.busy = e.busy.saturating_add(t.busy);
            e.dispatches += t.dispatches;
            e.spins += t.spins;
            e.reads = e.reads.saturating_add(t.reads);
            e.writes = e.writes.saturating_add(t.writes);
            e.migrations += t.migrations;
            if t.last_end.is_some() && (e.last_end.is_none() || t.last_time >= e.last_time) {
                e.last_end = t.last_end;
                e.last_time = t.last_time;
            }
        }
        let mut ss = s.streams;
        ss.sort_by_key(|s| s.id);
        for st in ss {
            let e = streams.entry(st.id).or_insert_with(|| StreamInfo {
                id: st.id,
                ..StreamInfo::default()
            });
            if st.capacity.is_some() {
                e.capacity = st.capacity;
                e.creator = st.creator;
            }
            if st.name.is_some() {
                e.name = st.name;
            }
            e.writer = st.writer.or(e.writer);
            e.reader = st.reader.or(e.reader);
            e.written = e.written.saturating_add(st.written);
            e.read = e.read.saturating_add(st.read);
            e.reader_blocked += st.reader_blocked;
            e.writer_blocked += st.writer_blocked;
            e.poll_waits += st.poll_waits;
            e.reader_wait = e.reader_wait.saturating_add(st.reader_wait);
            e.writer_wait = e.writer_wait.saturating_add(st.writer_wait);
            e.closed.0 |= st.closed.0;
            e.closed.1 |= st.closed.1;
        }
        workers.push(WorkerLog {
            worker: s.worker,
            path: f.path,
            header: f.header,
            records_start: f.records_start,
            valid_len: s.valid_len,
            end: s.end,
            stats: s.stats,
            chunks: s.chunks,
            data: f.data,
        });
    }
    workers.sort_by_key(|w| w.worker);
    let timed: Vec<&WorkerLog> = workers.iter().filter(|w| w.stats.any_time).collect();
    let t0 = timed.iter().map(|w| w.stats.begin).min().unwrap_or(0);
    let t1 = timed.iter().map(|w| w.stats.finish).max().unwrap_or(t0);
    // Waits that never ended run to the run's end (for the tasks in one log).
    let mut open_waits = 0u64;
    for r in ran.values().filter(|r| r.1 == 1) {
        let Some((from, state)) = r.2 else { continue };
        let ticks = t1.saturating_sub(from);
        let (stream, reader) = match state {
            EndState::BlockedInput { stream } => (stream, true),
            EndState::BlockedOutput { stream } => (stream, false),
            EndState::BlockedAny => {
                open_waits += 1;
                unattributed_polls += 1;
                unattributed_poll_ticks = unattributed_poll_ticks.saturating_add(ticks);
                continue;
            }
            _ => continue,
        };
        open_waits += 1;
        let s = streams.entry(stream).or_insert_with(|| StreamInfo {
            id: stream,
            ..StreamInfo::default()
        });
        if reader {
            s.reader_wait = s.reader_wait.saturating_add(ticks);
        } else {
            s.writer_wait = s.writer_wait.saturating_add(ticks);
        }
    }
    drop_spins_of_shared_cores(&mut workers, &mut tasks);
    Ok(RunLog {
        dir: dir.to_owned(),
        flags: first_header.flags,
        worker_count: first_header.worker_count,
        calibration: first_header.calibration,
        workers,
        tasks,
        streams,
        warnings,
        t0,
        t1,
        latency: None,
        sampled: None,
        ranks: None,
        split_tasks: ran.values().filter(|r| r.1 > 1).count() as u64,
        open_waits,
        unattributed_polls,
        unattributed_poll_ticks,
    })
}

/// For logs without the workers' own totals (older ones), whose spins are
/// inferred from their shape: a spin before a block is a block that no
/// wake-up ended: of the run's blocked periods, those some peer's operation
/// woke (each wake-up sets its period's woke-peer bit; one period may wake
/// several) are no spin, so the spins are at most the blocked periods less
/// the woke-peer bits. A run whose logs show more spins than that ran on
/// workers that share cores, where the runtime does not spin and a block
/// its worker idled through shows the pattern of one (`load/aggregate.rs`'s
/// `Spin`): it has none. A run any of whose logs has its totals is left as
/// it is (a log without them there was cut short; its inferred spins stand).
fn drop_spins_of_shared_cores(workers: &mut [WorkerLog], tasks: &mut BTreeMap<u64, TaskInfo>) {
    if workers.iter().any(|w| w.stats.totals.is_some()) {
        return;
    }
    let sum = |f: &dyn Fn(&crate::load::worker_log::WorkerStats) -> u64| {
        workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(f(&w.stats)))
    };
    let spins = sum(&|s| s.inferred_spins);
    let room = sum(&|s| s.blocked_periods).saturating_sub(sum(&|s| s.wakes));
    if spins > room {
        for w in workers.iter_mut() {
            w.stats.inferred_spins = 0;
        }
        for t in tasks.values_mut() {
            t.spins = 0;
        }
    }
}
