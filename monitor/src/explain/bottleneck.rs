//! `rill-mon bottleneck`: what holds a run back, from time windows, in the
//! spirit of Nephele's bottleneck detection (a task busy above α while the
//! others wait for it; a channel is named only when its receiver is not the
//! CPU bottleneck).
//!
//! The run's span is cut into `windows` equal windows (default 20). Per
//! window `w` of length `len`, with the times of `replay/activity.rs` (busy, ready
//! and blocked time, a wait split at its wake-up):
//!
//! * A **task** T on worker X is a bottleneck in `w` when X was busy at
//!   least α of `w` (saturated), T ran at least half of X's busy time, and
//!   others waited on T at least β of `w`, added up over the waiters: the
//!   writers of T's input streams blocked writing them full, the readers of
//!   its output streams blocked reading them empty (up to their wake-ups),
//!   and the ready time of the other tasks on X in proportion to T's part of
//!   X's busy time (they waited behind it). On a worker of its own this is
//!   Nephele's rule: busy above α while its inputs back up or its outputs
//!   run dry.
//! * A **stream** S is a bottleneck in `w` when its writer and reader ran
//!   on different workers and the wake-ups on S cost at least γ of `w`: the
//!   time from a wake-up on S to the woken end's dispatch, counted only in
//!   the part of the window its worker ran no other task (the rest is
//!   waiting behind other tasks, not for a wake-up), with no bottleneck task
//!   in S's connected part of the task graph in `w`.
//!   A **cross-rank stream** (a run across ranks, `load/ranks/`) is tested the
//!   same way, but its waits count whole: no logged period wakes its far
//!   end (the transport does), so a wait on it is not split at a wake-up,
//!   and the time its ends were blocked on it, their workers otherwise
//!   idle, counts with the woken time ([`CROSS_RANK_RULE`]).
//! * A **worker** X is a bottleneck (load imbalance) in `w` when it was busy
//!   at least α of `w` while another worker was busy at most 1 − β of it,
//!   and no bottleneck task ran on X in `w`.
//!
//! A finding accounts for waiting: a task for the waiting on it counted
//! above, a stream for its wake-up time, a worker for the ready time of its
//! tasks, each summed over the windows in which it held. Its `share` is
//! that time over all waiting in the run (every task's blocked and ready
//! time between its dispatches), and findings come largest share first.
//! Defaults: α = 0.9, β = 0.5, γ = 0.1.
//!
//! Nothing needs a topological order: each test looks at a task, its own
//! streams and its worker, and the connected parts come from a union-find,
//! so cyclic graphs (a token ring) are handled like any other.
//!
//! Error: the times are exact to the clock; the causes are inferred. The
//! wake-up is taken at the end of the waking period (blocked parts are at
//! most a period too long, ready parts as much too short); a task whose
//! thread the operating system preempted looks busy while descheduled; a
//! test holds for a window as a whole, so a bottleneck that moves within a
//! window can be missed, which more windows (`--windows`) resolve down to
//! the length of a period.

use std::collections::BTreeMap;

use crate::explain::findings::{BottleneckOptions, Bottlenecks, Finding, Raw};
use crate::explain::task_graph::{graph, Graph};

use crate::load::model::RunLog;
use crate::replay::activity::activity;
use crate::replay::activity_model::Activity;

/// Sums over the windows in which a finding held.
#[derive(Default, Clone)]
struct Tally {
    windows: usize,
    /// Shares of the window, summed (divided by `windows` for means).
    a: f64,
    b: f64,
    c: f64,
    d: f64,
    e: f64,
    /// The waiting it accounts for (ticks).
    explained: f64,
    /// The windows themselves.
    which: Vec<usize>,
    /// Workers: how often each other worker was the idlest.
    idle: BTreeMap<u32, usize>,
}

impl Tally {
    fn mean(&self, x: f64) -> f64 {
        x / self.windows.max(1) as f64
    }
}

/// Finds what held the run back (see the module documentation).
pub fn bottleneck(run: &RunLog, opts: &BottleneckOptions) -> Bottlenecks {
    bottleneck_of(run, opts, &activity(run, opts.windows))
}

/// [`bottleneck`] from the run's activity in `opts.windows` windows.
pub(crate) fn bottleneck_of(run: &RunLog, opts: &BottleneckOptions, act: &Activity) -> Bottlenecks {
    let g = graph(run, act);
    let raw = detect(act, &g, opts);
    let placement = crate::explain::placement::placement(run, act, &g);
    let waiting = total_waiting(act);
    let mut found: Vec<Finding> = raw
        .into_iter()
        .map(|(r, explained)| {
            let share = if waiting > 0 {
                explained / waiting as f64
            } else {
                0.0
            };
            crate::explain::verdict::finding(run, act, &r, share)
        })
        .collect();
    let kind_rank = |k: &str| match k {
        "task" => 0,
        "stream" => 1,
        _ => 2,
    };
    found.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(kind_rank(&a.kind).cmp(&kind_rank(&b.kind)))
            .then(a.name.cmp(&b.name))
    });
    // The placement finding comes first: its share is of time saved, not
    // of waiting (`explain/placement.rs`).
    if let Some((r, share)) = placement {
        found.insert(0, crate::explain::verdict::finding(run, act, &r, share));
    }
    let verdict = crate::explain::verdict::verdict(run, act, &g, &found, opts);
    let grid = &act.grid;
    Bottlenecks {
        dir: run.dir.display().to_string(),
        across_ranks: run.ranks.is_some(),
        windows: grid.n,
        window_ns: run.ns(grid.span / grid.n as u64),
        alpha: opts.alpha,
        beta: opts.beta,
        gamma: opts.gamma,
        waiting_ns: run.ns(waiting),
        bottlenecks: found,
        verdict,
        notes: crate::explain::waits::needs(run),
        warnings: run.warnings.clone(),
    }
}

/// In sample mode: the waits on task `i` over the run (its writers finding
/// its inputs full, its readers finding its outputs empty), its own waits
/// (finding its inputs empty, its outputs full), and the first two apart. A
/// task others wait on at least as often as it waits itself, on a saturated
/// worker that it mostly keeps busy, holds the run back.
fn sampled_waits_on(act: &Activity, g: &Graph, i: usize) -> (u64, u64, u64, u64) {
    let side = |s: &u64| act.streams.get(s);
    let sum = |v: &[u64], f: fn(&crate::replay::activity_model::StreamAct) -> u64| -> u64 {
        v.iter().filter_map(side).map(f).sum()
    };
    let full = sum(&g.inputs[i], |a| a.writer_waits);
    let empty = sum(&g.outputs[i], |a| a.reader_waits);
    let own = sum(&g.inputs[i], |a| a.reader_waits) + sum(&g.outputs[i], |a| a.writer_waits);
    (full + empty, own, full, empty)
}

/// All waiting in the run: every task's ready time and every blocked part
/// of a wait (ticks). In sample mode, which measures no wait, the workers'
/// busy time instead: a finding's share is then the part of all work done
/// while it held.
fn total_waiting(act: &Activity) -> u64 {
    let n = act.grid.n;
    let sum = |s: &crate::replay::grid::Strip| (0..n).fold(0u64, |t, w| t.saturating_add(s.get(w)));
    if act.sampled {
        return act
            .workers
            .values()
            .fold(0u64, |t, s| t.saturating_add(sum(s)));
    }
    let ready = act
        .tasks
        .values()
        .fold(0u64, |t, a| t.saturating_add(sum(&a.ready)));
    let blocked = act.streams.values().fold(0u64, |t, s| {
        t.saturating_add(sum(&s.reader_blocked))
            .saturating_add(sum(&s.writer_blocked))
    });
    ready
        .saturating_add(blocked)
        .saturating_add(act.unattributed_poll_ticks)
}

/// The window tests; each finding with the waiting it accounts for.
fn detect(act: &Activity, g: &Graph, opts: &BottleneckOptions) -> Vec<(Raw, f64)> {
    let grid = &act.grid;
    let (alpha, beta, gamma) = (opts.alpha, opts.beta, opts.gamma);
    let n = g.tasks.len();
    let task = |i: usize| &act.tasks[&g.tasks[i]];
    let wb = |s: u64, w: usize| act.streams.get(&s).map_or(0, |a| a.writer_blocked.get(w));
    let rb = |s: u64, w: usize| act.streams.get(&s).map_or(0, |a| a.reader_blocked.get(w));

    let mut task_t: BTreeMap<usize, Tally> = BTreeMap::new();
    let mut stream_t: BTreeMap<usize, Tally> = BTreeMap::new();
    let mut worker_t: BTreeMap<u32, Tally> = BTreeMap::new();
    // The connected parts and workers holding a bottleneck task, per window.
    let mut marked = vec![usize::MAX; n];
    let mut worker_marked: BTreeMap<u32, usize> = BTreeMap::new();
    for w in 0..grid.n {
        let len = grid.len(w);
        if len == 0 {
            continue;
        }
        let share = |ticks: f64| ticks / len as f64;
        let worker_busy =
            |x: Option<u32>| x.and_then(|x| act.workers.get(&x)).map_or(0, |s| s.get(w));
        // The ready time of each worker's tasks (they waited for it).
        let mut ready_on: BTreeMap<u32, u64> = BTreeMap::new();
        for i in 0..n {
            if let (Some(x), r) = (g.worker[i], task(i).ready.get(w)) {
                let e = ready_on.entry(x).or_default();
                *e = e.saturating_add(r);
            }
        }

        for i in 0..n {
            let t = task(i);
            let (busy, xb) = (t.busy.get(w), worker_busy(g.worker[i]));
            if busy == 0 || share(xb as f64) < alpha || busy.saturating_mul(2) < xb {
                continue;
            }
            if act.sampled {
                // Sample mode measures no wait: the evidence that others
                // wait on the task is the exact counts over the run (see
                // `sampled_waits_on`).
                let (on_it, own, full, empty) = sampled_waits_on(act, g, i);
                if on_it == 0 || on_it < own {
                    continue;
                }
                let e = task_t.entry(i).or_default();
                e.windows += 1;
                e.a += share(busy as f64).min(1.0);
                e.b += share(xb as f64).min(1.0);
                e.c += full as f64;
                e.d += empty as f64;
                e.explained += busy as f64;
                e.which.push(w);
                marked[g.part[i]] = w;
                if let Some(x) = g.worker[i] {
                    worker_marked.insert(x, w);
                }
                continue;
            }
            let full = g.inputs[i]
                .iter()
                .fold(0u64, |n, &s| n.saturating_add(wb(s, w)));
            let empty = g.outputs[i]
                .iter()
                .fold(0u64, |n, &s| n.saturating_add(rb(s, w)));
            let others = g.worker[i]
                .and_then(|x| ready_on.get(&x))
                .map_or(0, |&r| r.saturating_sub(t.ready.get(w)));
            let behind = others as f64 * busy as f64 / xb as f64;
            let waited = full as f64 + empty as f64 + behind;
            if share(waited) < beta {
                continue;
            }
            let e = task_t.entry(i).or_default();
            e.windows += 1;
            e.a += share(busy as f64).min(1.0);
            e.b += share(xb as f64).min(1.0);
            e.c += share(full as f64);
            e.d += share(empty as f64);
            e.e += share(behind);
            e.explained += waited;
            e.which.push(w);
            marked[g.part[i]] = w;
            if let Some(x) = g.worker[i] {
                worker_marked.insert(x, w);
            }
        }

        for (k, &(s, wt, rt)) in g.crossing.iter().enumerate() {
            if marked[g.part[wt]] == w {
                continue;
            }
            // Wake-up time, in the part of the window the woken end's
            // worker ran no other task.
            let lone = |i: usize, woken: u64| {
                let own = task(i).busy.get(w);
                let others = worker_busy(g.worker[i]).saturating_sub(own);
                let free = len.saturating_sub(own).max(1);
                woken as f64 * (1.0 - (others as f64 / free as f64).min(1.0))
            };
            let a = act.streams.get(&s);
            // Across ranks no period wakes the far end (the transport
            // does, unlogged), so a wait is not split at its wake-up: its
            // blocked part counts too.
            let far = g.cross_rank[k];
            let side =
                |woken: &dyn Fn(&crate::replay::activity_model::StreamAct) -> u64,
                 blocked: &dyn Fn(&crate::replay::activity_model::StreamAct) -> u64| {
                    a.map_or(0, |a| {
                        woken(a).saturating_add(if far { blocked(a) } else { 0 })
                    })
                };
            let latency = lone(
                rt,
                side(&|a| a.reader_woken.get(w), &|a| a.reader_blocked.get(w)),
            ) + lone(
                wt,
                side(&|a| a.writer_woken.get(w), &|a| a.writer_blocked.get(w)),
            );
            if share(latency) < gamma {
                continue;
            }
            let e = stream_t.entry(k).or_default();
            e.windows += 1;
            e.a += share(latency).min(1.0);
            e.explained += latency;
        }

        let busy: Vec<(u32, u64)> = act.workers.iter().map(|(&x, s)| (x, s.get(w))).collect();
        for &(x, b) in &busy {
            if share(b as f64) < alpha || worker_marked.get(&x) == Some(&w) {
                continue;
            }
            let Some(&(idle_w, idle_b)) = busy
                .iter()
                .filter(|&&(y, _)| y != x)
                .min_by_key(|&&(y, b)| (b, y))
            else {
                continue;
            };
            if share(idle_b as f64) > 1.0 - beta {
                continue;
            }
            let e = worker_t.entry(x).or_default();
            e.windows += 1;
            e.a += share(b as f64).min(1.0);
            e.b += 1.0 - share(idle_b as f64).min(1.0);
            e.explained += ready_on.get(&x).copied().unwrap_or(0) as f64;
            *e.idle.entry(idle_w).or_default() += 1;
            e.which.push(w);
        }
    }

    let mut out = Vec::new();
    // The stream of `list` most waited on over `which`.
    let heaviest = |list: &[u64], which: &[usize], f: &dyn Fn(u64, usize) -> u64| {
        list.iter()
            .map(|&s| {
                (
                    s,
                    which.iter().fold(0u64, |n, &w| n.saturating_add(f(s, w))),
                )
            })
            .filter(|&(_, x)| x > 0)
            .max_by_key(|&(s, x)| (x, std::cmp::Reverse(s)))
            .map(|(s, _)| s)
    };
    for (&i, t) in &task_t {
        let raw = Raw::Task {
            task: g.tasks[i],
            worker: g.worker[i],
            windows: t.windows,
            busy: t.mean(t.a),
            worker_busy: t.mean(t.b),
            full: t.mean(t.c),
            empty: t.mean(t.d),
            behind: t.mean(t.e),
            input: heaviest(&g.inputs[i], &t.which, &wb),
            output: heaviest(&g.outputs[i], &t.which, &rb),
        };
        out.push((raw, t.explained));
    }
    for (&k, t) in &stream_t {
        let (s, wt, rt) = g.crossing[k];
        let raw = Raw::Stream {
            stream: s,
            writer: g.tasks[wt],
            reader: g.tasks[rt],
            workers: (g.worker[wt].unwrap_or(0), g.worker[rt].unwrap_or(0)),
            windows: t.windows,
            latency: t.mean(t.a),
        };
        out.push((raw, t.explained));
    }
    for (&x, t) in &worker_t {
        let span = t
            .which
            .iter()
            .fold(0u64, |n, &w| n.saturating_add(grid.len(w)));
        let mut tops: Vec<(u64, f64)> = (0..n)
            .filter(|&i| g.worker[i] == Some(x))
            .map(|i| {
                let b = t
                    .which
                    .iter()
                    .fold(0u64, |n, &w| n.saturating_add(task(i).busy.get(w)));
                (g.tasks[i], b as f64 / span.max(1) as f64)
            })
            .filter(|&(_, b)| b > 0.0)
            .collect();
        tops.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        tops.truncate(3);
        let idle_worker = t
            .idle
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map_or(0, |(&w, _)| w);
        let raw = Raw::Worker {
            worker: x,
            windows: t.windows,
            busy: t.mean(t.a),
            idle: 1.0 - t.mean(t.b),
            idle_worker,
            tops,
        };
        out.push((raw, t.explained));
    }
    out
}
