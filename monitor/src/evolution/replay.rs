//! The evolution of a run with periods: one scan per log (worker busy and
//! waiting time, task creation times), then the merged pass over all logs'
//! periods (`replay/merge.rs`) that follows each task from period to period, as
//! the trace's counters do (`trace/perfetto/pass.rs`), matching wake-ups to waits
//! with the same rules (`replay/wakeups.rs`).

use rill_log::EndState;

use super::{Groups, Sums, BLOCKED_READ, BLOCKED_WRITE, NEW, READY, RUNNING};
use crate::load::bytes::Behind;
use crate::load::ids::{IdIndex, IdMap};
use crate::load::model::RunLog;
use crate::load::scan::Item;
use crate::replay::grid::{Grid, Near};
use crate::replay::merge::{Event, Events, Period};
use crate::replay::wakeups::{offer, take_before, StreamEnds, Wake};

/// What one log's own scan finds.
struct LogScan {
    /// Busy and waiting ticks per bucket.
    busy: Vec<f64>,
    wait: Vec<f64>,
    /// (task, time) of its `TaskAssign`s and `TaskTotals` (a task's end in
    /// sample mode).
    created: Vec<(u64, u64)>,
    ended: Vec<(u64, u64)>,
}

/// Scans each log once, on the available cores.
fn scan_logs(run: &RunLog, grid: &Grid) -> Vec<LogScan> {
    let logs: Vec<usize> = (0..run.workers.len()).collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    crate::load::pool::parallel(&logs, cores, |&i| {
        let w = &run.workers[i];
        let mut s = LogScan {
            busy: vec![0.0; grid.n],
            wait: vec![0.0; grid.n],
            created: Vec::new(),
            ended: Vec::new(),
        };
        let mut sc = w.scanner();
        let (mut behind, mut k) = (Behind::default(), 0u32);
        let mut near = Near::default();
        while let Some(item) = sc.next() {
            k = k.wrapping_add(1);
            if k & 0xffff == 0 {
                behind.advance(w, sc.offset());
            }
            match item {
                Item::Period(p) => Sums::add_near(grid, &mut near, &mut s.busy, p.start, p.end),
                Item::WorkerWait { t, dur } => {
                    Sums::add_near(grid, &mut near, &mut s.wait, t, t.saturating_add(dur))
                }
                Item::TaskAssign { t, task, .. } => s.created.push((task, t)),
                Item::TaskTotals { t, task, .. } => s.ended.push((task, t)),
                _ => {}
            }
        }
        Ok(s)
    })
    .unwrap_or_default()
}

/// Each task's earliest time in `pairs` of all logs.
fn earliest(
    scans: &mut [LogScan],
    pick: impl Fn(&mut LogScan) -> &mut Vec<(u64, u64)>,
) -> IdMap<u64, u64> {
    let mut m: IdMap<u64, u64> = IdMap::default();
    for s in scans {
        for (task, t) in std::mem::take(pick(s)) {
            let e = m.entry(task).or_insert(t);
            *e = (*e).min(t);
        }
    }
    m
}

/// A worker's span (ticks), split over the buckets.
fn alive(run: &RunLog, grid: &Grid, i: usize) -> Vec<f64> {
    let st = &run.workers[i].stats;
    let mut v = vec![0.0; grid.n];
    if st.any_time {
        Sums::add(grid, &mut v, st.begin, st.finish);
    }
    v
}

/// One task between its periods.
struct TaskSt {
    slot: usize,
    /// Its first dispatch.
    first: Option<u64>,
    /// Its last period's end and end state.
    last: Option<(u64, EndState)>,
    /// The earliest wake-up since its last period's end (the waking
    /// period's end).
    woken: Option<Wake<()>>,
}

/// The merged pass's state.
struct Replay<'a> {
    run: &'a RunLog,
    groups: &'a Groups,
    tasks: Vec<TaskSt>,
    task_ix: IdIndex,
    /// Stream ends (writer, reader), as bound or seen.
    streams: StreamEnds,
    sums: &'a mut Sums,
    /// The bucket met last.
    near: Near,
}

impl Replay<'_> {
    fn task(&mut self, id: u64) -> usize {
        let (k, new) = self.task_ix.index(id, self.tasks.len());
        if new {
            self.tasks.push(TaskSt {
                slot: self.groups.slot(self.run, id),
                first: None,
                last: None,
                woken: None,
            });
        }
        k
    }

    /// Books task `k`'s time from its last period's end to `to` (its next
    /// dispatch, or the window's end), split at the wake-up `woken`.
    fn gap(&mut self, k: usize, to: u64, woken: Option<u64>) {
        let Some((from, state)) = self.tasks[k].last else {
            return;
        };
        if to <= from {
            return;
        }
        let wake = woken.filter(|&t| t >= from && t <= to).unwrap_or(to);
        let grid = &self.sums.grid;
        let task = &mut self.sums.task;
        let near = &mut self.near;
        let (blocked, until) = match state {
            EndState::Yielded => {
                Sums::add_near(grid, near, &mut task[READY], from, to);
                return;
            }
            EndState::BlockedInput { .. } => (BLOCKED_READ, wake),
            // A poll's wake-up is not logged: blocked to the dispatch.
            EndState::BlockedAny => (BLOCKED_READ, to),
            EndState::BlockedOutput { .. } => (BLOCKED_WRITE, wake),
            EndState::Ended | EndState::Panicked => return,
        };
        Sums::add_near(grid, near, &mut task[blocked], from, until);
        Sums::add_near(grid, near, &mut task[READY], until, to);
    }

    /// Books a period of log `log`.
    fn period(&mut self, log: usize, period: &Period<'_>) {
        let p = &period.p;
        let k = self.task(p.task);
        let woken = take_before(&mut self.tasks[k].woken, p.end).map(|w| w.at);
        self.gap(k, p.start, woken);
        self.tasks[k].first.get_or_insert(p.start);
        // The wake-ups this period caused (`replay/wakeups.rs`).
        for io in period.io {
            let Some(peer) = self.streams.woken_by(p.task, io) else {
                continue;
            };
            let pk = self.task(peer);
            let t = &mut self.tasks[pk];
            let _ = offer(&mut t.woken, t.last.map(|(end, _)| end), p.end, ());
        }
        // Running (all tasks and the task's group) and the worker busy:
        // one split for the three.
        let slot = self.tasks[k].slot;
        let Sums {
            grid,
            task,
            group,
            worker,
            ..
        } = &mut *self.sums;
        let (running, group, busy) = (&mut task[RUNNING], &mut group[slot], &mut worker[log][0]);
        grid.split_near(&mut self.near, p.start, p.end, |b, t| {
            let t = t as f64;
            running[b] += t;
            group[b] += t;
            busy[b] += t;
        });
        self.tasks[k].last = Some((p.end, p.end_state));
    }
}

/// Fills `sums` from a run with periods: one merged pass over every log's
/// periods and worker waits.
pub(super) fn periods(run: &RunLog, groups: &Groups, sums: &mut Sums, events: Events<'_>) {
    let nlogs = run.workers.len();
    let mut r = Replay {
        run,
        groups,
        tasks: Vec::new(),
        task_ix: IdIndex::default(),
        streams: StreamEnds::default(),
        sums,
        near: Near::default(),
    };
    for (id, s) in &run.streams {
        *r.streams.ends(*id) = (s.writer, s.reader);
    }
    // Worker states: busy (added with each period) and waiting here, and
    // the rest of its span below.
    events.for_each_event(true, |i, e| match e {
        Event::Period(p) => r.period(i, p),
        Event::Wait { t, dur } => {
            let s = &mut *r.sums;
            Sums::add_near(
                &s.grid,
                &mut r.near,
                &mut s.worker[i][1],
                t,
                t.saturating_add(dur),
            )
        }
    });
    for i in 0..nlogs {
        let alive = alive(run, &r.sums.grid, i);
        let n = r.sums.grid.n;
        let w = &mut r.sums.worker[i];
        for b in 0..n {
            w[2][b] = (alive[b] - w[0][b] - w[1][b]).max(0.0);
        }
    }
    // Open waits, to the window's end (or the run's).
    let end = run.t1.max(r.sums.grid.t0.saturating_add(r.sums.grid.span));
    for k in 0..r.tasks.len() {
        if matches!(
            r.tasks[k].last,
            Some((
                _,
                EndState::BlockedInput { .. }
                    | EndState::BlockedOutput { .. }
                    | EndState::BlockedAny
            ))
        ) {
            let woken = r.tasks[k].woken.take().map(|w| w.at);
            r.gap(k, end, woken);
        }
    }
    // New tasks: from their creation to their first dispatch (or the end).
    let Replay {
        tasks,
        task_ix,
        sums,
        ..
    } = r;
    let created = run.tasks.values().filter_map(|t| Some((t.id, t.created?)));
    for (id, t) in created {
        let first = task_ix.get(id).and_then(|k| tasks[k].first).unwrap_or(end);
        Sums::add(&sums.grid, &mut sums.task[NEW], t, first);
    }
}

/// Fills `sums` from a run with worker waits only: waiting, and the rest
/// of each worker's span.
pub(super) fn waits_only(run: &RunLog, sums: &mut Sums) {
    let scans = scan_logs(run, &sums.grid);
    for (i, s) in scans.iter().enumerate() {
        let alive = alive(run, &sums.grid, i);
        let w = &mut sums.worker[i];
        for b in 0..sums.grid.n {
            w[0][b] = s.wait[b];
            w[1][b] = (alive[b] - s.wait[b]).max(0.0);
        }
    }
}

/// Task lifetimes for sample mode: per task its creation and end (each the
/// earliest of its records), from one scan per log; the worker logs of a
/// sample-mode run hold no periods, so the scan is short.
pub(super) fn lifetimes(run: &RunLog, grid: &Grid) -> (IdMap<u64, u64>, IdMap<u64, u64>) {
    let mut scans = scan_logs(run, grid);
    let created = earliest(&mut scans, |s| &mut s.created);
    let ended = earliest(&mut scans, |s| &mut s.ended);
    (created, ended)
}
