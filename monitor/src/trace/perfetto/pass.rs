//! The trace's one pass: all workers' periods and waits merged in start
//! order (so a waking period is seen before the dispatch it allowed),
//! keeping per task its last period's end and end state, per worker the
//! slice being merged, and per bucket the counters' sums.

use std::io;

use rill_log::EndState;

use super::layout::{BLOCKED_READ, BLOCKED_WRITE, BUSY, CROSS, READY};
use super::PerfettoStats;
use crate::load::groups::group_of;
use crate::load::ids::{IdIndex, IdMap};
use crate::load::model::RunLog;
use crate::load::scan::ScannedPeriod;
use crate::replay::grid::Near;
use crate::replay::wakeups::{self, StreamEnds};
use crate::trace::detail::{Buckets, DetailPlan};
use crate::trace::perfetto::writer::{Arg, Kind, Name, Track, Value, Writer};
use rill_log::StreamIo;

/// A wake-up (`replay/wakeups.rs`): when (the waking period's end), by which
/// worker, and the flow started there (its id and the waking period's
/// start).
pub(super) type Wake = wakeups::Wake<(u32, Option<(u64, u64)>)>;

/// One task's state between its periods.
#[derive(Debug)]
pub(super) struct TaskSt {
    pub(super) id: u64,
    pub(super) label: String,
    /// The label in the trace's string table, once used.
    pub(super) name: Option<Name>,
    pub(super) group: usize,
    pub(super) track: Option<Track>,
    pub(super) rank: i32,
    /// Its last period's end and end state.
    pub(super) last: Option<(u64, EndState)>,
    pub(super) last_worker: Option<u32>,
    /// Whether its last period was a slice of its own.
    pub(super) last_shown: bool,
    /// The wake-up of its current wait.
    pub(super) woken: Option<Wake>,
}

/// A task group's tracks and counter sums.
#[derive(Debug)]
pub(super) struct GroupSt {
    pub(super) name: String,
    pub(super) parent: Option<Track>,
    pub(super) counters: [Option<Track>; 3],
    /// Running, ready and blocked ticks per bucket.
    pub(super) sums: [Vec<f64>; 3],
    pub(super) tasks: i32,
}

/// The slice being merged on a worker's track.
#[derive(Debug)]
pub(super) struct Merge {
    pub(super) bucket: usize,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) periods: u64,
    pub(super) busy: u64,
    pub(super) idle: u64,
    /// Busy ticks per group.
    pub(super) groups: Vec<(usize, u64)>,
    /// Flows ending here.
    pub(super) ends: Vec<u64>,
}

/// A worker's track.
#[derive(Debug)]
pub(super) struct WorkerSt {
    pub(super) worker: u32,
    pub(super) track: Track,
    /// The end of its last slice (ticks), for clipping.
    pub(super) last_end: u64,
    pub(super) merge: Option<Merge>,
}

/// Everything the pass keeps.
pub(super) struct Pass<'r, 'w> {
    pub(super) run: &'r RunLog,
    pub(super) w: Writer<'w>,
    pub(super) root: Track,
    pub(super) grid: Buckets,
    pub(super) plan: DetailPlan,
    /// The window, ticks.
    pub(super) lo: u64,
    pub(super) hi: u64,
    /// Half a bucket, ticks: periods and waits at least this long keep
    /// slices of their own in merged buckets.
    pub(super) long: u64,
    pub(super) tasks: Vec<TaskSt>,
    pub(super) task_ix: IdIndex,
    pub(super) groups: Vec<GroupSt>,
    pub(super) group_ix: std::collections::HashMap<String, usize>,
    pub(super) workers: Vec<WorkerSt>,
    /// Stream ends (writer, reader) as bound or seen.
    pub(super) streams: StreamEnds,
    /// Names of blocked states per (stream, reading).
    pub(super) wait_names: IdMap<(u64, bool), Name>,
    pub(super) sums: [Vec<f64>; 5],
    /// The bucket the sums met last.
    pub(super) near: Near,
    /// The bucket a time was last looked up in.
    pub(super) point: std::cell::Cell<Near>,
    /// Groups declared with counters.
    pub(super) counted_groups: usize,
    /// Gaps shown only for their length (bounded by the budget).
    pub(super) long_gaps_left: u64,
    pub(super) next_flow: u64,
    pub(super) stats: PerfettoStats,
    pub(super) n: Names,
}

/// Names used on every sequence.
pub(super) struct Names {
    pub(super) idle: Name,
    pub(super) ready: Name,
    pub(super) woken: Name,
    pub(super) poll: Name,
    pub(super) task: Name,
    pub(super) end: Name,
    pub(super) stream: Name,
    pub(super) reads: Name,
    pub(super) writes: Name,
    pub(super) periods: Name,
    pub(super) busy_ns: Name,
    pub(super) idle_ns: Name,
    pub(super) groups: Name,
    pub(super) end_states: [Name; 6],
    pub(super) running_on: Vec<Name>,
}

pub(super) fn end_index(s: EndState) -> usize {
    match s {
        EndState::Yielded => 0,
        EndState::BlockedInput { .. } => 1,
        EndState::BlockedOutput { .. } => 2,
        EndState::BlockedAny => 3,
        EndState::Ended => 4,
        EndState::Panicked => 5,
    }
}

impl<'r, 'w> Pass<'r, 'w> {
    pub(super) fn ns(&self, t: u64) -> u64 {
        self.run
            .calibration
            .ticks_to_ns(t.saturating_sub(self.run.t0))
    }

    pub(super) fn in_window(&self, a: u64, b: u64) -> bool {
        b >= self.lo && a <= self.hi
    }

    /// Whether an item starting at `t` and lasting `dur` gets its own slice.
    pub(super) fn shown(&self, t: u64, dur: u64) -> bool {
        dur >= self.long || self.plan.detailed[self.grid.index_near(&self.point, t)]
    }

    pub(super) fn task(&mut self, id: u64) -> usize {
        let (i, new) = self.task_ix.index(id, self.tasks.len());
        if new {
            let label = self.run.task_label(id);
            let group = self.group(&label);
            self.groups[group].tasks += 1;
            let rank = 3 + self.groups[group].tasks;
            self.tasks.push(TaskSt {
                id,
                label,
                name: None,
                group,
                track: None,
                rank,
                last: None,
                last_worker: None,
                last_shown: false,
                woken: None,
            });
        }
        i
    }

    pub(super) fn group(&mut self, label: &str) -> usize {
        let g = group_of(label).into_owned();
        if let Some(&i) = self.group_ix.get(&g) {
            return i;
        }
        let i = self.groups.len();
        self.group_ix.insert(g.clone(), i);
        self.groups.push(GroupSt {
            name: g,
            parent: None,
            counters: [None; 3],
            sums: [Vec::new(), Vec::new(), Vec::new()],
            tasks: 0,
        });
        i
    }

    /// Adds `[a, b)` to the run's sums `run_i` and, if group `g` has
    /// counters, to its sums `gi` (each allocated on first use).
    pub(super) fn add_span(&mut self, run_i: usize, g: usize, gi: usize, a: u64, b: u64) {
        if b <= a {
            return;
        }
        let grid = self.grid;
        let alloc = |v: &mut Vec<f64>| {
            if v.is_empty() {
                v.resize(grid.n, 0.0);
            }
        };
        let run = &mut self.sums[run_i];
        alloc(run);
        let group = &mut self.groups[g];
        if group.counters[gi].is_some() {
            let gv = &mut group.sums[gi];
            alloc(gv);
            grid.split_near(&mut self.near, a, b, |i, t| {
                run[i] += t as f64;
                gv[i] += t as f64;
            });
        } else {
            grid.split_near(&mut self.near, a, b, |i, t| run[i] += t as f64);
        }
    }

    pub(super) fn task_track(&mut self, k: usize) -> io::Result<Track> {
        if let Some(t) = self.tasks[k].track {
            return Ok(t);
        }
        let parent = self.group_parent(self.tasks[k].group)?;
        let desc = format!("task {}", self.tasks[k].id);
        let t = self.w.track(
            &self.tasks[k].label,
            Some(&desc),
            Some(parent),
            Kind::Slices,
            self.tasks[k].rank,
            false,
        )?;
        self.tasks[k].track = Some(t);
        Ok(t)
    }

    /// A group's parent track; a group first met in the pass (a task the
    /// log never assigned) is declared then, after the others.
    pub(super) fn group_parent(&mut self, g: usize) -> io::Result<Track> {
        if let Some(t) = self.groups[g].parent {
            return Ok(t);
        }
        self.declare_group(g, 3 + self.groups.len() as i32 + g as i32)?;
        self.groups[g]
            .parent
            .ok_or_else(|| io::Error::other("group track"))
    }

    /// The name of a wait on `stream` (reading or writing it).
    pub(super) fn wait_name(&mut self, stream: u64, reading: bool) -> Name {
        if let Some(&n) = self.wait_names.get(&(stream, reading)) {
            return n;
        }
        let label = match self.run.streams.get(&stream).and_then(|s| s.name.clone()) {
            Some(n) => format!("stream {stream} ({n})"),
            None => format!("stream {stream}"),
        };
        let (writer, reader) = *self.streams.ends(stream);
        let s = if reading {
            match writer {
                Some(t) => format!("blocked reading {label} from {}", self.run.task_label(t)),
                None => format!("blocked reading {label}"),
            }
        } else {
            match reader {
                Some(t) => format!("blocked writing {label} to {}", self.run.task_label(t)),
                None => format!("blocked writing {label}"),
            }
        };
        let n = self.w.name(&s);
        self.wait_names.insert((stream, reading), n);
        n
    }

    /// Books the time of task `k` from its last period's end to `to` (its
    /// next dispatch, or the run's end); `show` says whether its track
    /// shows it, `woken` is the wake-up seen during it, if any.
    pub(super) fn gap(
        &mut self,
        k: usize,
        to: u64,
        mut show: bool,
        woken: Option<u64>,
    ) -> io::Result<()> {
        let Some((from, state)) = self.tasks[k].last else {
            return Ok(());
        };
        if to <= from {
            return Ok(());
        }
        let wake = woken.filter(|&t| t >= from && t <= to).unwrap_or(to);
        let g = self.tasks[k].group;
        let (blocked, sum) = match state {
            EndState::Yielded => (false, READY),
            EndState::BlockedInput { .. } | EndState::BlockedAny => (true, BLOCKED_READ),
            EndState::BlockedOutput { .. } => (true, BLOCKED_WRITE),
            EndState::Ended | EndState::Panicked => return Ok(()),
        };
        let (b_end, w_from) = match state {
            EndState::Yielded => (from, from),
            EndState::BlockedAny => (to, to),
            _ => (wake, wake),
        };
        if blocked {
            self.add_span(sum, g, 2, from, b_end);
        }
        self.add_span(READY, g, 1, w_from, to);

        if !show && to - from >= 2 * self.long && self.long_gaps_left > 0 {
            self.long_gaps_left -= 1;
            show = true;
        }
        if !show || !self.in_window(from, to) {
            return Ok(());
        }
        let track = self.task_track(k)?;
        let (a, b) = (from.max(self.lo), to.min(self.hi));
        if blocked {
            let (x, y) = (a, b_end.clamp(a, b));
            if y > x {
                let name = match state {
                    EndState::BlockedInput { stream } => self.wait_name(stream, true),
                    EndState::BlockedOutput { stream } => self.wait_name(stream, false),
                    // A poll's wake-up is not logged: blocked to the dispatch.
                    _ => self.n.poll,
                };
                let (nx, ny) = (self.ns(x), self.ns(y));
                self.w.slice(track, nx, ny, name, &[], &[], &[])?;
            }
        }
        let (x, y) = (w_from.clamp(a, b), b);
        if y > x {
            let after = if blocked { self.n.woken } else { self.n.ready };
            let (nx, ny) = (self.ns(x), self.ns(y));
            self.w.slice(track, nx, ny, after, &[], &[], &[])?;
        }
        Ok(())
    }

    /// Writes worker `wi`'s merged slice, if any.
    pub(super) fn flush_merge(&mut self, wi: usize) -> io::Result<()> {
        let Some(m) = self.workers[wi].merge.take() else {
            return Ok(());
        };
        let track = self.workers[wi].track;
        let mut groups = m.groups;
        groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let name = match groups.first() {
            Some(&(g, _)) => format!("{} (merged)", self.groups[g].name),
            None => "idle (merged)".to_owned(),
        };
        let name = self.w.name(&name);
        let mut shares = String::new();
        for &(g, t) in groups.iter().take(4) {
            if !shares.is_empty() {
                shares.push_str(", ");
            }
            let pct = 100.0 * t as f64 / m.busy.max(1) as f64;
            shares.push_str(&format!("{} {pct:.0}%", self.groups[g].name));
        }
        if groups.len() > 4 {
            shares.push_str(&format!(", {} more", groups.len() - 4));
        }
        let busy_ns = self.run.ns(m.busy);
        let idle_ns = self.run.ns(m.idle);
        let mut args = vec![
            Arg {
                name: self.n.periods,
                value: Value::Uint(m.periods),
            },
            Arg {
                name: self.n.busy_ns,
                value: Value::Uint(busy_ns),
            },
            Arg {
                name: self.n.idle_ns,
                value: Value::Uint(idle_ns),
            },
        ];
        if !shares.is_empty() {
            args.push(Arg {
                name: self.n.groups,
                value: Value::Text(&shares),
            });
        }
        let (a, b) = (self.ns(m.start), self.ns(m.end));
        self.w.slice(track, a, b, name, &args, &[], &m.ends)?;
        self.stats.merged_slices += 1;
        Ok(())
    }

    /// Clips `[s, e]` on worker `wi`'s track: `None` if nothing is left.
    pub(super) fn clip(&mut self, wi: usize, s: u64, e: u64) -> Option<(u64, u64)> {
        if s.max(self.lo) < self.workers[wi].last_end {
            self.stats.clipped += 1;
        }
        self.clipped(wi, s, e)
    }

    /// What [`clip`](Self::clip) gives, without counting it.
    fn clipped(&self, wi: usize, s: u64, e: u64) -> Option<(u64, u64)> {
        let last = self.workers[wi].last_end;
        let (s, e) = (s.max(self.lo), e.min(self.hi));
        if s < last {
            if e <= last {
                return None;
            }
            return Some((last, e));
        }
        (e >= s).then_some((s, e))
    }

    /// Adds an item to worker `wi`'s merged slice.
    pub(super) fn merge(
        &mut self,
        wi: usize,
        s: u64,
        e: u64,
        busy: Option<(usize, u64)>,
    ) -> io::Result<()> {
        let bucket = self.grid.index_near(&self.point, s);
        if self.workers[wi]
            .merge
            .as_ref()
            .is_some_and(|m| m.bucket != bucket)
        {
            self.flush_merge(wi)?;
        }
        let m = self.workers[wi].merge.get_or_insert_with(|| Merge {
            bucket,
            start: s,
            end: e,
            periods: 0,
            busy: 0,
            idle: 0,
            groups: Vec::new(),
            ends: Vec::new(),
        });
        m.end = m.end.max(e);
        match busy {
            Some((g, t)) => {
                m.periods += 1;
                m.busy += t;
                match m.groups.iter_mut().find(|x| x.0 == g) {
                    Some(x) => x.1 += t,
                    None => m.groups.push((g, t)),
                }
            }
            None => m.idle += e - s,
        }
        Ok(())
    }

    pub(super) fn wait(&mut self, wi: usize, t: u64, dur: u64) -> io::Result<()> {
        let e = t.saturating_add(dur);
        if !self.in_window(t, e) {
            return Ok(());
        }
        let Some((s, e)) = self.clip(wi, t, e) else {
            return Ok(());
        };
        self.workers[wi].last_end = e;
        if self.shown(t, dur) {
            self.flush_merge(wi)?;
            let track = self.workers[wi].track;
            let (a, b) = (self.ns(s), self.ns(e));
            self.w.slice(track, a, b, self.n.idle, &[], &[], &[])?;
        } else {
            self.merge(wi, s, e, None)?;
        }
        Ok(())
    }

    pub(super) fn period(
        &mut self,
        wi: usize,
        p: &ScannedPeriod,
        ios: &[StreamIo],
    ) -> io::Result<()> {
        let worker = self.workers[wi].worker;
        let k = self.task(p.task);
        let in_window = self.in_window(p.start, p.end);
        let counted = p.start >= self.lo && p.start <= self.hi;
        let shown = in_window && self.shown(p.start, p.dur());
        // The task's time since its last period (`replay/wakeups.rs`).
        let woken = wakeups::take_before(&mut self.tasks[k].woken, p.end);
        let show_gap = shown || self.tasks[k].last_shown;
        self.gap(k, p.start, show_gap, woken.map(|w| w.at))?;
        let mut ends: [u64; 1] = [0];
        let mut n_ends = 0;
        let mut flow_start = 0;
        if let Some(Wake {
            what: (by, flow), ..
        }) = woken
        {
            if by != worker {
                self.stats.cross_wakeups += 1;
                if counted {
                    let b = self.grid.index(p.start);
                    let v = &mut self.sums[CROSS];
                    if v.is_empty() {
                        v.resize(self.grid.n, 0.0);
                    }
                    v[b] += 1.0;
                }
            }
            if let Some((f, start)) = flow {
                if in_window {
                    ends[0] = f;
                    n_ends = 1;
                    flow_start = start;
                }
            }
        }
        // Wake-ups this period caused. Their flows start on this period's
        // slice, where it has one, at the slice's (clipped) start.
        let slice = if in_window && shown {
            self.clipped(wi, p.start, p.end)
        } else {
            None
        };
        let mut flows: Vec<u64> = Vec::new();
        for io in ios {
            let Some(peer) = self.streams.woken_by(p.task, io) else {
                continue;
            };
            let pk = self.task(peer);
            let last_end = self.tasks[pk].last.map(|(end, _)| end);
            // Kept when it is the earliest since the peer's last period
            // (a flow it replaces keeps its start without an end).
            let Ok(replaced) =
                wakeups::offer(&mut self.tasks[pk].woken, last_end, p.end, (worker, None))
            else {
                continue;
            };
            if replaced.is_some_and(|r| r.what.1.is_some()) {
                self.stats.flows_replaced += 1;
            }
            let pred_cross = self.tasks[pk]
                .last_worker
                .or_else(|| self.run.tasks.get(&peer).and_then(|t| t.assigned))
                .is_some_and(|w| w != worker);
            let flow = slice.filter(|_| pred_cross).map(|(start, _)| {
                self.next_flow += 1;
                (self.next_flow, start)
            });
            if let Some((f, _)) = flow {
                flows.push(f);
                self.stats.flows += 1;
            }
            if let Some(w) = self.tasks[pk].woken.as_mut() {
                w.what.1 = flow;
            }
        }
        // Busy time, for the counters.
        let g = self.tasks[k].group;
        self.add_span(BUSY, g, 0, p.start, p.end);
        // The worker's track.
        if in_window {
            if let Some((s, e)) = self.clip(wi, p.start, p.end) {
                self.workers[wi].last_end = e;
                if shown {
                    self.flush_merge(wi)?;
                    if counted {
                        self.stats.detailed += 1;
                    }
                    // A flow ends here only after its start (a damaged
                    // log's clipped periods can put the waker's slice
                    // later than this one).
                    let n_ends = if s >= flow_start { n_ends } else { 0 };
                    self.period_slice(wi, k, p, s, e, &flows, &ends[..n_ends], ios)?;
                } else {
                    if counted {
                        self.stats.merged += 1;
                    }
                    self.merge(wi, s, e, Some((g, e - s)))?;
                    // A flow can end on a merged slice that begins after
                    // the flow's start (trace processor drops an end it
                    // meets before the start).
                    if n_ends > 0 {
                        if let Some(m) = self.workers[wi].merge.as_mut() {
                            if m.start >= flow_start {
                                m.ends.push(ends[0]);
                            }
                        }
                    }
                }
            }
        }
        // The task's track.
        if shown {
            let track = self.task_track(k)?;
            let name = self.n.running_on[wi];
            let (a, b) = (
                self.ns(p.start.max(self.lo)),
                self.ns(p.end.min(self.hi).max(p.start.max(self.lo))),
            );
            self.w.slice(track, a, b, name, &[], &[], &[])?;
        }
        let t = &mut self.tasks[k];
        t.last = Some((p.end, p.end_state));
        t.last_worker = Some(worker);
        t.last_shown = shown;
        Ok(())
    }

    /// A period's slice of its own on its worker's track.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn period_slice(
        &mut self,
        wi: usize,
        k: usize,
        p: &ScannedPeriod,
        s: u64,
        e: u64,
        flows: &[u64],
        ends: &[u64],
        ios: &[StreamIo],
    ) -> io::Result<()> {
        let (mut reads, mut writes) = (0u64, 0u64);
        for io in ios {
            reads = reads.saturating_add(u64::from(io.reads));
            writes = writes.saturating_add(u64::from(io.writes));
        }
        let mut args = [Arg {
            name: self.n.task,
            value: Value::Uint(p.task),
        }; 5];
        let mut n = 1;
        args[n] = Arg {
            name: self.n.end,
            value: Value::Name(self.n.end_states[end_index(p.end_state)]),
        };
        n += 1;
        if let EndState::BlockedInput { stream } | EndState::BlockedOutput { stream } = p.end_state
        {
            args[n] = Arg {
                name: self.n.stream,
                value: Value::Uint(stream),
            };
            n += 1;
        }
        if reads > 0 {
            args[n] = Arg {
                name: self.n.reads,
                value: Value::Uint(reads),
            };
            n += 1;
        }
        if writes > 0 {
            args[n] = Arg {
                name: self.n.writes,
                value: Value::Uint(writes),
            };
            n += 1;
        }
        let name = match self.tasks[k].name {
            Some(n) => n,
            None => {
                let n = self.w.name(&self.tasks[k].label);
                self.tasks[k].name = Some(n);
                n
            }
        };
        let track = self.workers[wi].track;
        let (a, b) = (self.ns(s), self.ns(e));
        self.w.slice(track, a, b, name, &args[..n], flows, ends)
    }
}
