//! `rill-mon trace` in Perfetto's protobuf format: what the trace shows
//! (tracks, slices, counters, flows) and how long runs are bounded. The
//! encoding is in [`crate::perfetto`]; the choice of detailed buckets in
//! [`crate::detail`]; `monitor/README.md` describes the trace for users.
//!
//! One pass over all workers' periods and waits merged in start order (so
//! a waking period is seen before the dispatch it allowed), keeping per
//! task its last period's end and end state, per worker the slice being
//! merged, and per bucket the counters' sums.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use rill_log::EndState;

use crate::detail::{plan_detail, Buckets, DetailPlan};
use crate::groups::group_of;
use crate::load::{IdIndex, IdMap, RunLog};
use crate::perfetto::{Arg, Kind, Name, Track, Value, Writer};
use crate::scan::{Item, ScannedPeriod, Scanner};

/// The most buckets a trace is cut into (memory: about 8 bytes per bucket
/// for each counter and 4 per worker).
pub const MAX_BUCKETS: usize = 100_000;

/// Options of [`write_perfetto_trace`].
#[derive(Clone, Debug)]
pub struct PerfettoOptions {
    /// Window start, ms after the run's first time stamp (default: the start).
    pub from_ms: Option<f64>,
    /// Window end, ms after the run's first time stamp (default: the end).
    pub to_ms: Option<f64>,
    /// At most this many periods get slices of their own (the rest are
    /// merged per worker and bucket).
    pub detail: u64,
    /// Buckets the window is cut into (counter resolution and merging
    /// unit), 1 to [`MAX_BUCKETS`].
    pub buckets: usize,
}

impl Default for PerfettoOptions {
    fn default() -> Self {
        PerfettoOptions {
            from_ms: None,
            to_ms: None,
            detail: 500_000,
            buckets: 10_000,
        }
    }
}

/// Counts of what [`write_perfetto_trace`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerfettoStats {
    /// Periods starting in the window.
    pub periods: u64,
    /// Periods starting in the window shown as slices of their own on
    /// their worker's track (a period that starts before the window and
    /// reaches into it is shown, clipped, but not counted).
    pub detailed: u64,
    /// Periods starting in the window folded into merged slices.
    pub merged: u64,
    /// Merged slices written.
    pub merged_slices: u64,
    /// The most periods a detailed bucket holds (`None`: all detailed).
    pub threshold: Option<u64>,
    /// The bucket width, ns.
    pub bucket_ns: f64,
    /// Flow arrows started (a cross-worker wake-up from a detailed period).
    pub flows: u64,
    /// Wake-ups whose woken task next ran on another worker than its waker.
    pub cross_wakeups: u64,
    /// Periods or waits shortened on their worker's track because they
    /// overlapped the previous one, and those that clipping left empty.
    pub clipped: u64,
    /// Tracks declared.
    pub tracks: u64,
    /// Slices written (all tracks).
    pub slices: u64,
    /// Counter values written.
    pub counter_values: u64,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// A period or a worker wait, as the merge sees it.
#[derive(Clone, Copy, Debug)]
enum Ev {
    Period(ScannedPeriod),
    Wait { t: u64, dur: u64 },
}

impl Ev {
    fn start(&self) -> u64 {
        match self {
            Ev::Period(p) => p.start,
            Ev::Wait { t, .. } => *t,
        }
    }
}

fn next_ev(sc: &mut Scanner<'_>) -> Option<Ev> {
    loop {
        match sc.next()? {
            Item::Period(p) => return Some(Ev::Period(p)),
            Item::WorkerWait { t, dur } => return Some(Ev::Wait { t, dur }),
            _ => continue,
        }
    }
}

/// A wake-up: when (the waking period's end), by which worker, and the
/// flow started there (its id and the waking period's start).
type Wake = (u64, u32, Option<(u64, u64)>);

/// One task's state between its periods.
#[derive(Debug)]
struct TaskSt {
    id: u64,
    label: String,
    /// The label in the trace's string table, once used.
    name: Option<Name>,
    group: usize,
    track: Option<Track>,
    rank: i32,
    /// Its last period's end and end state.
    last: Option<(u64, EndState)>,
    last_worker: Option<u32>,
    /// Whether its last period was a slice of its own.
    last_shown: bool,
    /// The wake-up of its current wait.
    woken: Option<Wake>,
}

/// A task group's tracks and counter sums.
#[derive(Debug)]
struct GroupSt {
    name: String,
    parent: Option<Track>,
    counters: [Option<Track>; 3],
    /// Running, ready and blocked ticks per bucket.
    sums: [Vec<f64>; 3],
    tasks: i32,
}

/// The slice being merged on a worker's track.
#[derive(Debug)]
struct Merge {
    bucket: usize,
    start: u64,
    end: u64,
    periods: u64,
    busy: u64,
    idle: u64,
    /// Busy ticks per group.
    groups: Vec<(usize, u64)>,
    /// Flows ending here.
    ends: Vec<u64>,
}

/// A worker's track.
#[derive(Debug)]
struct WorkerSt {
    worker: u32,
    track: Track,
    /// The end of its last slice (ticks), for clipping.
    last_end: u64,
    merge: Option<Merge>,
}

/// Groups with counters of their own, heaviest first (each holds three
/// sums per bucket: memory).
const MAX_GROUP_COUNTERS: usize = 32;

/// Run-wide counters: sums per bucket.
const BUSY: usize = 0;
const READY: usize = 1;
const BLOCKED_READ: usize = 2;
const BLOCKED_WRITE: usize = 3;
const CROSS: usize = 4;
const RUN_COUNTERS: [(&str, &str, &str); 5] = [
    (
        "busy workers",
        "workers",
        "workers running a task (= running tasks), averaged over the bucket",
    ),
    (
        "ready tasks",
        "tasks",
        "tasks that could run but waited for their worker (after a yield or a wake-up)",
    ),
    (
        "tasks blocked reading",
        "tasks",
        "tasks blocked on an empty stream or a poll, up to their wake-up",
    ),
    (
        "tasks blocked writing",
        "tasks",
        "tasks blocked on a full stream, up to their wake-up",
    ),
    (
        "cross-worker wake-ups",
        "per ms",
        "wake-ups whose woken task ran on another worker than the waker",
    ),
];

/// Everything the pass keeps.
struct Pass<'r, 'w> {
    run: &'r RunLog,
    w: Writer<'w>,
    root: Track,
    grid: Buckets,
    plan: DetailPlan,
    /// The window, ticks.
    lo: u64,
    hi: u64,
    /// Half a bucket, ticks: periods and waits at least this long keep
    /// slices of their own in merged buckets.
    long: u64,
    tasks: Vec<TaskSt>,
    task_ix: IdIndex,
    groups: Vec<GroupSt>,
    group_ix: std::collections::HashMap<String, usize>,
    workers: Vec<WorkerSt>,
    /// Stream ends (writer, reader) as bound or seen.
    ends: Vec<(Option<u64>, Option<u64>)>,
    stream_ix: IdIndex,
    /// Names of blocked states per (stream, reading).
    wait_names: IdMap<(u64, bool), Name>,
    sums: [Vec<f64>; 5],
    /// Groups declared with counters.
    counted_groups: usize,
    /// Gaps shown only for their length (bounded by the budget).
    long_gaps_left: u64,
    next_flow: u64,
    stats: PerfettoStats,
    n: Names,
}

/// Names used on every sequence.
struct Names {
    idle: Name,
    ready: Name,
    woken: Name,
    poll: Name,
    task: Name,
    end: Name,
    stream: Name,
    reads: Name,
    writes: Name,
    periods: Name,
    busy_ns: Name,
    idle_ns: Name,
    groups: Name,
    end_states: [Name; 6],
    running_on: Vec<Name>,
}

fn end_index(s: EndState) -> usize {
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
    fn ns(&self, t: u64) -> u64 {
        self.run
            .calibration
            .ticks_to_ns(t.saturating_sub(self.run.t0))
    }

    fn in_window(&self, a: u64, b: u64) -> bool {
        b >= self.lo && a <= self.hi
    }

    /// Whether an item starting at `t` and lasting `dur` gets its own slice.
    fn shown(&self, t: u64, dur: u64) -> bool {
        dur >= self.long || self.plan.detailed[self.grid.index(t)]
    }

    fn task(&mut self, id: u64) -> usize {
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

    fn group(&mut self, label: &str) -> usize {
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
    fn add_span(&mut self, run_i: usize, g: usize, gi: usize, a: u64, b: u64) {
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
            grid.split(a, b, |i, t| {
                run[i] += t as f64;
                gv[i] += t as f64;
            });
        } else {
            grid.split(a, b, |i, t| run[i] += t as f64);
        }
    }

    fn task_track(&mut self, k: usize) -> io::Result<Track> {
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
    fn group_parent(&mut self, g: usize) -> io::Result<Track> {
        if let Some(t) = self.groups[g].parent {
            return Ok(t);
        }
        self.declare_group(g, 3 + self.groups.len() as i32 + g as i32)?;
        self.groups[g]
            .parent
            .ok_or_else(|| io::Error::other("group track"))
    }

    /// The ends (writer, reader) of `stream` as bound or seen so far.
    fn stream_ends(&mut self, stream: u64) -> &mut (Option<u64>, Option<u64>) {
        let (i, new) = self.stream_ix.index(stream, self.ends.len());
        if new {
            self.ends.push((None, None));
        }
        &mut self.ends[i]
    }

    /// The name of a wait on `stream` (reading or writing it).
    fn wait_name(&mut self, stream: u64, reading: bool) -> Name {
        if let Some(&n) = self.wait_names.get(&(stream, reading)) {
            return n;
        }
        let label = match self.run.streams.get(&stream).and_then(|s| s.name.clone()) {
            Some(n) => format!("stream {stream} ({n})"),
            None => format!("stream {stream}"),
        };
        let (writer, reader) = *self.stream_ends(stream);
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
    fn gap(&mut self, k: usize, to: u64, mut show: bool, woken: Option<u64>) -> io::Result<()> {
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
    fn flush_merge(&mut self, wi: usize) -> io::Result<()> {
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
    fn clip(&mut self, wi: usize, s: u64, e: u64) -> Option<(u64, u64)> {
        let last = self.workers[wi].last_end;
        let (s, e) = (s.max(self.lo), e.min(self.hi));
        if s < last {
            self.stats.clipped += 1;
            if e <= last {
                return None;
            }
            return Some((last, e));
        }
        (e >= s).then_some((s, e))
    }

    /// Adds an item to worker `wi`'s merged slice.
    fn merge(&mut self, wi: usize, s: u64, e: u64, busy: Option<(usize, u64)>) -> io::Result<()> {
        let bucket = self.grid.index(s);
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

    fn wait(&mut self, wi: usize, t: u64, dur: u64) -> io::Result<()> {
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

    fn period(&mut self, wi: usize, p: &ScannedPeriod, sc: &Scanner<'_>) -> io::Result<()> {
        let worker = self.workers[wi].worker;
        let k = self.task(p.task);
        let in_window = self.in_window(p.start, p.end);
        let counted = p.start >= self.lo && p.start <= self.hi;
        let shown = in_window && self.shown(p.start, p.dur());
        // The task's time since its last period.
        let woken = self.tasks[k].woken.take();
        let show_gap = shown || self.tasks[k].last_shown;
        self.gap(k, p.start, show_gap, woken.map(|w| w.0))?;
        let mut ends: [u64; 1] = [0];
        let mut n_ends = 0;
        let mut flow_start = 0;
        if let Some((_, by, flow)) = woken {
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
        // Wake-ups this period caused.
        let mut flows: Vec<u64> = Vec::new();
        for io in sc.io() {
            if io.reads | io.writes == 0 && !io.woke_peer {
                continue;
            }
            let e = self.stream_ends(io.stream);
            if io.writes > 0 {
                e.0.get_or_insert(p.task);
            }
            if io.reads > 0 {
                e.1.get_or_insert(p.task);
            }
            if !io.woke_peer {
                continue;
            }
            let peer = if io.writes > 0 { e.1 } else { e.0 };
            let Some(peer) = peer.filter(|&t| t != p.task) else {
                continue;
            };
            let pk = self.task(peer);
            // The first wake-up of a wait is the one that made the task
            // ready; the runtime may signal again before it runs.
            if self.tasks[pk].woken.is_some() {
                continue;
            }
            let pred_cross = self.tasks[pk]
                .last_worker
                .or_else(|| self.run.tasks.get(&peer).and_then(|t| t.assigned))
                .is_some_and(|w| w != worker);
            let flow = (shown && pred_cross).then(|| {
                self.next_flow += 1;
                (self.next_flow, p.start)
            });
            if let Some((f, _)) = flow {
                flows.push(f);
                self.stats.flows += 1;
            }
            self.tasks[pk].woken = Some((p.end, worker, flow));
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
                    self.period_slice(wi, k, p, s, e, &flows, &ends[..n_ends], sc)?;
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
    fn period_slice(
        &mut self,
        wi: usize,
        k: usize,
        p: &ScannedPeriod,
        s: u64,
        e: u64,
        flows: &[u64],
        ends: &[u64],
        sc: &Scanner<'_>,
    ) -> io::Result<()> {
        let (mut reads, mut writes) = (0u64, 0u64);
        for io in sc.io() {
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

/// The window `[from, to]` (ms after the run's first time stamp; the whole
/// run by default) in ticks, `lo <= hi`.
pub(crate) fn window(run: &RunLog, from_ms: Option<f64>, to_ms: Option<f64>) -> (u64, u64) {
    let cal = run.calibration;
    let ms_to_ticks = |ms: f64| cal.ns_to_ticks((ms * 1e6).max(0.0) as u64);
    let lo = from_ms.map_or(run.t0, |ms| run.t0.saturating_add(ms_to_ticks(ms)));
    let hi = to_ms
        .map_or(run.t1, |ms| run.t0.saturating_add(ms_to_ticks(ms)))
        .max(lo);
    (lo, hi)
}

/// Writes the run as a Perfetto protobuf trace (see `monitor/README.md`,
/// "The trace"): a track per worker, the run's counters, a track per task
/// group with its counters and a track per task, flow arrows for
/// cross-worker wake-ups. Periods in dense buckets are merged so that at
/// most `opts.detail` periods get slices of their own.
pub fn write_perfetto_trace(
    run: &RunLog,
    opts: &PerfettoOptions,
    out: &mut dyn Write,
) -> io::Result<PerfettoStats> {
    let (lo, hi) = window(run, opts.from_ms, opts.to_ms);
    let grid = Buckets::new(lo, hi, opts.buckets.clamp(1, MAX_BUCKETS));
    let plan = plan_detail(run, grid, opts.detail);
    let mut w = Writer::new(out);
    let names = Names {
        idle: w.name("idle"),
        ready: w.name("ready"),
        woken: w.name("woken, waiting for its worker"),
        poll: w.name("blocked on a poll"),
        task: w.name("task"),
        end: w.name("end"),
        stream: w.name("stream"),
        reads: w.name("reads"),
        writes: w.name("writes"),
        periods: w.name("periods"),
        busy_ns: w.name("busy_ns"),
        idle_ns: w.name("idle_ns"),
        groups: w.name("groups"),
        end_states: [
            w.name("yielded"),
            w.name("blocked reading"),
            w.name("blocked writing"),
            w.name("blocked on a poll"),
            w.name("ended"),
            w.name("panicked"),
        ],
        running_on: run
            .workers
            .iter()
            .map(|x| w.name(&format!("running on worker {}", x.worker)))
            .collect(),
    };
    let span_ms = run.ns(hi - lo) as f64 / 1e6;
    let root = w.track(
        &format!("rill run {}", run.dir.display()),
        Some(&format!(
            "{} workers; {:.3} ms from {:.3} ms",
            run.workers.len(),
            span_ms,
            run.ns(lo - run.t0) as f64 / 1e6
        )),
        None,
        Kind::Slices,
        0,
        true,
    )?;
    let workers_parent = w.track("workers", None, Some(root), Kind::Slices, 0, true)?;
    let mut workers = Vec::new();
    for (i, x) in run.workers.iter().enumerate() {
        let t = w.track(
            &format!("worker {}", x.worker),
            None,
            Some(workers_parent),
            Kind::Slices,
            i as i32,
            false,
        )?;
        workers.push(WorkerSt {
            worker: x.worker,
            track: t,
            last_end: 0,
            merge: None,
        });
    }
    let counters_parent = w.track("run counters", None, Some(root), Kind::Slices, 1, true)?;
    let mut run_counters = Vec::new();
    for (i, (name, unit, desc)) in RUN_COUNTERS.iter().enumerate() {
        let share = (*unit == "tasks").then_some("rill tasks");
        run_counters.push(w.track(
            name,
            Some(desc),
            Some(counters_parent),
            Kind::Counter { unit, share },
            i as i32,
            false,
        )?);
    }
    let detail_track = w.track(
        "detail",
        Some("stretches where periods are merged per worker and bucket; --from/--to show them in full"),
        Some(root),
        Kind::Slices,
        2,
        false,
    )?;
    let long = (plan.grid.width / 2).max(1);
    let mut pass = Pass {
        run,
        w,
        root,
        grid,
        lo,
        hi,
        long,
        tasks: Vec::new(),
        task_ix: IdIndex::default(),
        groups: Vec::new(),
        group_ix: std::collections::HashMap::new(),
        workers,
        ends: Vec::new(),
        stream_ix: IdIndex::default(),
        wait_names: IdMap::default(),
        sums: Default::default(),
        long_gaps_left: opts.detail,
        counted_groups: 0,
        next_flow: 0,
        stats: PerfettoStats {
            threshold: plan.threshold,
            periods: plan.periods,
            bucket_ns: run.ns(plan.grid.width) as f64,
            ..PerfettoStats::default()
        },
        n: names,
        plan,
    };
    for (id, s) in &run.streams {
        *pass.stream_ends(*id) = (s.writer, s.reader);
    }
    // Groups, heaviest (busy time) first, each with its counters.
    let mut busy: Vec<(u64, u64)> = run.tasks.values().map(|t| (t.id, t.busy)).collect();
    busy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for &(id, _) in &busy {
        pass.task(id);
    }
    let mut order: Vec<usize> = (0..pass.groups.len()).collect();
    let group_busy = |g: usize| -> u64 {
        pass.tasks
            .iter()
            .filter(|t| t.group == g)
            .map(|t| run.tasks.get(&t.id).map_or(0, |i| i.busy))
            .sum()
    };
    let weights: Vec<u64> = order.iter().map(|&g| group_busy(g)).collect();
    order.sort_by(|&a, &b| weights[b].cmp(&weights[a]).then(a.cmp(&b)));
    for (rank, &g) in order.iter().enumerate() {
        pass.declare_group(g, 3 + rank as i32)?;
    }
    pass.detail_marks(detail_track)?;

    // The merge.
    let mut cursors: Vec<(usize, Scanner<'_>, Option<Ev>)> = run
        .workers
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let mut sc = x.scanner();
            let ev = next_ev(&mut sc);
            (i, sc, ev)
        })
        .collect();
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = cursors
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.2.map(|e| Reverse((e.start(), i))))
        .collect();
    while let Some(Reverse((_, i))) = heap.pop() {
        let (wi, sc, next) = &mut cursors[i];
        let Some(ev) = next.take() else { continue };
        match ev {
            Ev::Period(p) => pass.period(*wi, &p, sc)?,
            Ev::Wait { t, dur } => pass.wait(*wi, t, dur)?,
        }
        *next = next_ev(sc);
        if let Some(e) = next {
            heap.push(Reverse((e.start(), i)));
        }
    }
    for wi in 0..pass.workers.len() {
        pass.flush_merge(wi)?;
    }
    // Open waits, to the run's end (or the window's).
    let mut open: Vec<usize> = (0..pass.tasks.len())
        .filter(|&k| {
            matches!(
                pass.tasks[k].last,
                Some((
                    _,
                    EndState::BlockedInput { .. }
                        | EndState::BlockedOutput { .. }
                        | EndState::BlockedAny
                ))
            )
        })
        .collect();
    open.sort_by_key(|&k| pass.tasks[k].id);
    let end = run.t1.max(hi);
    for k in open {
        let show = pass.tasks[k].last_shown;
        let woken = pass.tasks[k].woken.take().map(|w| w.0);
        pass.gap(k, end, show, woken)?;
    }
    pass.write_counters(&run_counters)?;
    let mut stats = pass.stats;
    let ws = pass.w.finish()?;
    stats.tracks = ws.tracks;
    stats.slices = ws.slices;
    stats.counter_values = ws.counter_values;
    stats.packets = ws.packets;
    stats.bytes = ws.bytes;
    Ok(stats)
}

impl Pass<'_, '_> {
    fn declare_group(&mut self, g: usize, rank: i32) -> io::Result<()> {
        let root = self.root;
        let name = self.groups[g].name.clone();
        let tasks = self.groups[g].tasks;
        let with_counters = self.counted_groups < MAX_GROUP_COUNTERS;
        let desc = if with_counters {
            format!("{tasks} task(s); counters averaged over each bucket")
        } else {
            format!("{tasks} task(s); no counters (only the {MAX_GROUP_COUNTERS} heaviest groups have them)")
        };
        let parent = self.w.track(
            &format!("group {name}"),
            Some(&desc),
            Some(root),
            Kind::Slices,
            rank,
            true,
        )?;
        self.groups[g].parent = Some(parent);
        if !with_counters {
            return Ok(());
        }
        self.counted_groups += 1;
        let share = format!("group {name}");
        for (i, what) in ["running", "ready", "blocked"].iter().enumerate() {
            let t = self.w.track(
                &format!("{name}: {what} tasks"),
                None,
                Some(parent),
                Kind::Counter {
                    unit: "tasks",
                    share: Some(&share),
                },
                i as i32,
                false,
            )?;
            self.groups[g].counters[i] = Some(t);
        }
        Ok(())
    }

    /// Slices on the detail track over each run of merged buckets.
    fn detail_marks(&mut self, track: Track) -> io::Result<()> {
        let n = self.grid.n;
        let mut b = 0;
        while b < n {
            if self.plan.detailed[b] {
                b += 1;
                continue;
            }
            let first = b;
            let mut periods = 0u64;
            while b < n && !self.plan.detailed[b] {
                periods += u64::from(self.plan.counts[b]);
                b += 1;
            }
            let name = self.w.name(&format!("merged: {periods} periods"));
            let (x, y) = (self.ns(self.grid.start(first)), self.ns(self.grid.start(b)));
            self.w.slice(track, x, y, name, &[], &[], &[])?;
        }
        Ok(())
    }

    /// Writes the bucket averages of every counter, skipping repeats.
    fn write_counters(&mut self, run_counters: &[Track]) -> io::Result<()> {
        let sums = std::mem::take(&mut self.sums);
        for (i, v) in sums.iter().enumerate() {
            let per_ms = i == CROSS;
            self.counter_series(run_counters[i], v, per_ms)?;
        }
        for g in 0..self.groups.len() {
            let sums = std::mem::take(&mut self.groups[g].sums);
            for (i, v) in sums.iter().enumerate() {
                if let Some(t) = self.groups[g].counters[i] {
                    self.counter_series(t, v, false)?;
                }
            }
        }
        Ok(())
    }

    /// One counter's values: per bucket, the sum over the bucket's length
    /// (or, `per_ms`, the count per millisecond).
    fn counter_series(&mut self, track: Track, v: &[f64], per_ms: bool) -> io::Result<()> {
        let grid = self.grid;
        let mut last = f64::NAN;
        for b in 0..grid.n {
            let len = (grid.start(b + 1) - grid.start(b)).max(1) as f64;
            let x = v.get(b).copied().unwrap_or(0.0);
            let val = if per_ms {
                // Over the bucket's length as written, so that the
                // counter's integral is the count.
                let ns = self.ns(grid.start(b + 1)) - self.ns(grid.start(b));
                x / (ns.max(1) as f64 / 1e6)
            } else {
                x / len
            };
            if val != last {
                let ts = self.ns(grid.start(b));
                self.w.counter(track, ts, val)?;
                last = val;
            }
        }
        let end = self.ns(grid.start(grid.n));
        if last != 0.0 {
            self.w.counter(track, end, 0.0)?;
        }
        Ok(())
    }
}
