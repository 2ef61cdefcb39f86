//! `rill-mon map`: a mapping of the observed task graph onto W workers,
//! written as a file that the runtime's `--mapping FILE`
//! (`rill::ManualTable::load`) reads back, with a what-if estimate of the
//! run time under it and under the observed mapping.
//!
//! The graph: one node per task name (tasks sharing a name share a line of
//! the file, so they share a worker), weighted by the tasks' busy time; one
//! edge per stream between its writer and reader, weighted by its traffic
//! `messages + waits` (messages carried, plus its reader's and writer's
//! waits: each is a wake-up that crosses workers when the ends do).
//! Unnamed tasks cannot be listed: the runtime places them round-robin
//! among the tasks no line matches, so in spawn (id) order they go to
//! workers 0, 1, 2, ...; the estimate pins them there. The partition is
//! [`partition`](crate::plan::partition()). Where its result is predicted slower
//! than the observed mapping, and that mapping is one of names (each name's
//! tasks ran on one worker, on no more workers than planned for), the plan
//! is the observed mapping refined by the same single-name moves instead
//! ([`partition_from`](crate::partition_from)), which the model predicts no
//! slower than the observed one. So `map` never proposes a mapping its
//! calibrated model predicts slower than the one it observed; [`Basis`]
//! says which it is. Only then, and only with crossing costs calibrated:
//! the model ignores dependencies, and uncalibrated (c = 0) it sees no cost
//! in crossing at all; a round-robin mapping refined that way ran Monte
//! Carlo in 410 ms where the search's mapping took 299 and rr itself 330.
//!
//! What-if model: `T(m) = max over workers x of B(x) + c_busy · M(x) +
//! c · X(x)`, where `B(x)` is the busy time of the tasks m puts on x, less
//! the part of it that crossings cost them in the observed run, and `M(x)`
//! and `X(x)` the messages and the traffic of the streams with one end on
//! x and the other elsewhere (a crossing costs both workers). Both costs
//! are calibrated on the observed run:
//!
//! * `c_busy`, the busy time a message across workers adds at each end
//!   (moving its cache lines between cores is work the tasks do while they
//!   run): a least-squares fit of each task's busy time to `a_g · M(t) +
//!   c_busy · X(t)`, `M(t)` the messages of its streams, `X(t)` those of
//!   its streams that cross workers, one rate `a_g` per task group
//!   (numbered names folded) and one `c_busy` for all. Only groups whose
//!   tasks cross in different proportions tell it; without them, or when
//!   the fit is not positive, `c_busy` = 0. It is capped so that no task's
//!   busy time goes below 0, and a task's `B` is its busy time less
//!   `c_busy · X(t)`.
//! * `c`, the smallest cost per unit of traffic for which the model under
//!   the observed mapping reaches the observed span (so it reproduces it):
//!   the time the busy times leave unexplained (waiting for wake-ups across
//!   workers) is put on the crossings.
//!
//! Before either is fitted, the busy times are put at one pace for all
//! workers ([`worker_paces`]): busy time is wall time while a task runs, so
//! the tasks of a worker whose core was shared with other processes look
//! busier than their work. Where tasks of one group (numbered names folded)
//! ran on several workers, the median busy time per message of each
//! group's tasks on each worker gives each worker's pace, and every task's
//! busy time is divided by its worker's (the total kept). Without it a
//! recording of DES whose lane-0 stages ran at 43-52 ms and lane 1's,
//! equal in work, at 34 gave a plan that cut lane 0 to balance the
//! difference, and its next run took 1.75x the hand mapping's time.
//!
//! When the observed run had no crossing traffic, or neither cost is found,
//! both are 0 and the estimates are lower bounds. The partition weighs an
//! edge by its crossing time under these costs (by its traffic when
//! `c_busy` = 0).
//!
//! Predicted times that differ by less than [`CUT_TOLERANCE`](crate::CUT_TOLERANCE)
//! (3%) are ties, and the partition gives them to the mapping that cuts
//! fewer streams (its step 4, [`partition_within`]), never above the
//! observed mapping's prediction. Without it, one chain step moved to the
//! other worker for a predicted 0.1% ran Monte Carlo 9% slower than the
//! same mapping with the chain whole. (A wider tie, sample mode's error
//! bound of 8 to 10 points on a short pilot, also let a planted slow stage
//! take lighter stages onto its worker, 11% slower.)
//!
//! Sample mode's busy times per task are estimates from a few samples each
//! (a 50,000-path Monte Carlo pilot: about 5 per chain step, the steps'
//! estimates ranging from 1.3 to 14 ms for equal work). A group of tasks
//! whose estimates per message agree within their sampling error is taken
//! to do equal work per message ([`pool_equal_groups`]); a task that stands
//! out by more (a planted slow stage) keeps its own estimate.
//!
//! Error: the model ignores dependencies. A run whose work is serialised by
//! its graph (a token ring passes one token: one task runs at a time) takes
//! the sum of its tasks' times, not the busiest worker's, so the estimate
//! is too low there, by up to the factor of workers; and a stream's waits
//! change with placement (on one worker a writer fills the stream before
//! its reader runs, so there are fewer waits). `c_busy` puts on crossing
//! any difference in busy time per message within a group that goes with
//! crossing: tasks of one group that do different work and happen to cross
//! in different proportions bias it either way. A stream of small capacity
//! that crosses workers where little else does costs far more than the
//! model says: its ends take turns, so its writer waits, message after
//! message, for the reader's worker to get round to the reader (Monte
//! Carlo with one capacity-1 chain link crossing ran at 1.31 of the manual
//! mapping's time, where the model predicted it 10% faster from a
//! sample-mode pilot in which the two chains, equal in work, had busy
//! times estimated far apart).
//! Treat the estimate as the
//! comparison of two mappings under one model, not a forecast to the
//! millisecond.

use std::collections::BTreeMap;

use anyhow::bail;

use crate::load::ids::IdMap;
use crate::load::model::RunLog;
use crate::plan::mapfile::{Basis, Cut, Estimate, MapPlan, MappedTask, WorkerLoad};
use crate::plan::partition::{
    evaluate, partition_from_within, partition_within, Evaluation, PartGraph, CUT_TOLERANCE,
};
use crate::render::number::fmt_ns;
use crate::replay::activity::{activity, whole_run};
use crate::replay::activity_model::Activity;

/// The most workers `map` plans for.
pub const MAX_MAP_WORKERS: usize = 4096;

/// The task-level graph: nodes are task ids in order.
struct TaskGraph {
    ids: Vec<u64>,
    busy: Vec<u64>,
    /// (writer, reader, traffic, messages)
    edges: Vec<(usize, usize, u64, u64)>,
}

fn cut_of(g: &TaskGraph, part: &[usize]) -> Cut {
    let mut c = Cut::default();
    for &(a, b, t, m) in &g.edges {
        if a != b && part[a] != part[b] {
            c.streams += 1;
            c.messages = c.messages.saturating_add(m);
            c.traffic = c.traffic.saturating_add(t);
        }
    }
    c
}

/// The task graph to evaluate, with `weight(traffic, messages)` per edge.
fn part_graph(g: &TaskGraph, weight: impl Fn(u64, u64) -> u64) -> PartGraph {
    PartGraph {
        weights: g.busy.clone(),
        edges: g
            .edges
            .iter()
            .map(|&(a, b, t, m)| (a, b, weight(t, m)))
            .collect(),
        pinned: Vec::new(),
    }
}

/// The smallest `c ≥ 0` with `max_x loads[x] + c · traffic[x] = span`
/// (`None` when no `c` is needed or none can help).
fn calibrate(loads: &[u64], traffic: &[u64], span: u64) -> Option<f64> {
    let base = loads.iter().copied().max().unwrap_or(0);
    if base >= span {
        return None;
    }
    loads
        .iter()
        .zip(traffic)
        .filter(|(_, &t)| t > 0)
        .map(|(&l, &t)| (span - l) as f64 / t as f64)
        .min_by(f64::total_cmp)
}

/// Plans a mapping of the run's named tasks onto `workers` workers.
///
/// It reads the totals the load kept (busy time per task and worker,
/// messages and waits per stream); only where a task ran in more than one
/// log or a used stream end was never bound does it make a pass over the
/// records ([`plan_mapping_by_pass`]), which gives the same plan.
///
/// Errors: `workers` outside 1..=[`MAX_MAP_WORKERS`], or a run whose logs
/// name no task.
pub fn plan_mapping(run: &RunLog, workers: usize) -> anyhow::Result<MapPlan> {
    plan_from(run, workers, &whole_run(run))
}

/// [`plan_mapping`] from a pass over all periods merged in time order,
/// always: the reference its shortcut through the load's totals must agree
/// with (the tests compare the two).
#[doc(hidden)]
pub fn plan_mapping_by_pass(run: &RunLog, workers: usize) -> anyhow::Result<MapPlan> {
    plan_from(run, workers, &activity(run, 1))
}

/// Sample mode: a group's tasks whose busy times per message differ no more
/// than their sampling explains are taken to do equal work per message,
/// and each gets the group's rate times its messages. A task's estimate
/// from `k` samples of `per_sample` ns each has a variance of about `k ·
/// per_sample²` (the samples' count is about Poisson), so under equal rates
/// `r` the statistic `Σ (B - r·M)² / (r·M·per_sample)` is about chi-square
/// with (tasks - 1) degrees of freedom; a group of at least 3 tasks whose
/// statistic stays under the degrees plus three of their standard
/// deviations (`dof + 3·√(2·dof)`) is pooled. A 50,000-path Monte Carlo
/// pilot gives about 5 samples per chain step, so the steps' own
/// estimates, equal work all, ranged from 1.3 to 14 ms; a planted slow
/// stage stands out of its group by far more and keeps its own.
fn pool_equal_groups(g: &mut TaskGraph, group: &[usize], per_sample: f64) {
    let n = g.ids.len();
    let mut m = vec![0f64; n];
    for &(a, b, _, t) in &g.edges {
        if a != b {
            m[a] += t as f64;
            m[b] += t as f64;
        }
    }
    let groups = group.iter().copied().max().map_or(0, |k| k + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for i in (0..n).filter(|&i| m[i] > 0.0) {
        members[group[i]].push(i);
    }
    for tasks in members.iter().filter(|t| t.len() >= 3) {
        let busy: f64 = tasks.iter().map(|&i| g.busy[i] as f64).sum();
        let msgs: f64 = tasks.iter().map(|&i| m[i]).sum();
        let rate = busy / msgs;
        if !(rate.is_finite() && rate > 0.0 && per_sample > 0.0) {
            continue;
        }
        let chi2: f64 = tasks
            .iter()
            .map(|&i| {
                let expect = rate * m[i];
                let d = g.busy[i] as f64 - expect;
                d * d / (expect.max(per_sample) * per_sample)
            })
            .sum();
        let dof = (tasks.len() - 1) as f64;
        if chi2 <= dof + 3.0 * (2.0 * dof).sqrt() {
            for &i in tasks {
                g.busy[i] = (rate * m[i]).round() as u64;
            }
        }
    }
}

/// The busy time a message crossing workers adds at each of its ends
/// (`c_busy` of the module documentation), from the observed mapping
/// `part`; `group` gives each task's group. 0 when no group has tasks that
/// cross in different proportions.
fn busy_crossing_cost(g: &TaskGraph, part: &[usize], group: &[usize]) -> f64 {
    let n = g.ids.len();
    let (mut m, mut x) = (vec![0f64; n], vec![0f64; n]);
    for &(a, b, _, t) in &g.edges {
        if a == b {
            continue;
        }
        let t = t as f64;
        m[a] += t;
        m[b] += t;
        if part[a] != part[b] {
            x[a] += t;
            x[b] += t;
        }
    }
    let y: Vec<f64> = g.busy.iter().map(|&b| b as f64).collect();
    // Per group: Σm², Σm·y, Σm·x (the group's own rate is partialled out).
    let groups = group.iter().copied().max().map_or(0, |k| k + 1);
    let mut sums = vec![(0f64, 0f64, 0f64); groups];
    for i in (0..n).filter(|&i| m[i] > 0.0) {
        let s = &mut sums[group[i]];
        s.0 += m[i] * m[i];
        s.1 += m[i] * y[i];
        s.2 += m[i] * x[i];
    }
    let (mut xy, mut xx, mut x2) = (0f64, 0f64, 0f64);
    for i in (0..n).filter(|&i| m[i] > 0.0) {
        let (mm, my, mx) = sums[group[i]];
        let ry = y[i] - m[i] * my / mm;
        let rx = x[i] - m[i] * mx / mm;
        xy += rx * ry;
        xx += rx * rx;
        x2 += x[i] * x[i];
    }
    // No contrast: every group crosses in one proportion.
    if xx <= 1e-9 * x2 || xy <= 0.0 {
        return 0.0;
    }
    let cap = (0..n)
        .filter(|&i| x[i] > 0.0)
        .map(|i| y[i] / x[i])
        .fold(f64::INFINITY, f64::min);
    (xy / xx).min(cap)
}

/// Each observed worker's pace in the observed run (`part`: each task's
/// worker, `workers` of them): the factor by which its tasks' busy time
/// per message stood above (or below) the same groups' on other workers.
/// Busy time is wall time while a task runs, so a worker whose core was
/// shared with other processes shows its tasks busier than their work; on
/// a shared 2-vCPU host DES's four round stages of lane 0 took 43-52 ms
/// where lane 1's, equal in work, took 34, and the plan cut lane 0 to
/// balance what was the core's contention (the next run, 1.75x of the
/// hand mapping). Each (group, worker) gives the median of its tasks' busy
/// time per message (a planted slow stage does not move the median of its
/// worker's stages); the log of those rates is fitted as group rate plus
/// worker pace, weighted by busy time, on the groups that ran on more than
/// one worker. The paces are scaled to keep the total busy time. All 1
/// where a worker with busy tasks shares no group with another, or the
/// paces are not finite.
fn worker_paces(g: &TaskGraph, part: &[usize], group: &[usize], workers: usize) -> Vec<f64> {
    let n = g.ids.len();
    let ones = vec![1.0; workers];
    if workers < 2 {
        return ones;
    }
    let mut m = vec![0f64; n];
    for &(a, b, _, t) in &g.edges {
        if a != b {
            m[a] += t as f64;
            m[b] += t as f64;
        }
    }
    // (group, worker) → per-message rates of its tasks, and their busy time.
    let mut cells: BTreeMap<(usize, usize), (Vec<f64>, f64)> = BTreeMap::new();
    for i in (0..n).filter(|&i| m[i] > 0.0 && g.busy[i] > 0) {
        let c = cells
            .entry((group[i], part[i].min(workers - 1)))
            .or_default();
        c.0.push(g.busy[i] as f64 / m[i]);
        c.1 += g.busy[i] as f64;
    }
    let mut spread: BTreeMap<usize, usize> = BTreeMap::new();
    for &(gr, _) in cells.keys() {
        *spread.entry(gr).or_default() += 1;
    }
    // (group, worker, log rate, weight) of the groups on several workers.
    let obs: Vec<(usize, usize, f64, f64)> = cells
        .iter()
        .filter(|((gr, _), _)| spread[gr] > 1)
        .map(|(&(gr, x), (rates, busy))| {
            let mut r = rates.clone();
            r.sort_by(f64::total_cmp);
            let k = r.len();
            let median = if k % 2 == 1 {
                r[k / 2]
            } else {
                (r[k / 2 - 1] + r[k / 2]) / 2.0
            };
            (gr, x, median.ln(), *busy)
        })
        .collect();
    let mut busy_of = vec![0f64; workers];
    for i in 0..n {
        busy_of[part[i].min(workers - 1)] += g.busy[i] as f64;
    }
    let mut linked = vec![false; workers];
    for &(_, x, _, _) in &obs {
        linked[x] = true;
    }
    if obs.is_empty() || (0..workers).any(|x| busy_of[x] > 0.0 && !linked[x]) {
        return ones;
    }
    // Alternating least squares: log rate = group's + worker's.
    let groups = group.iter().copied().max().map_or(0, |k| k + 1);
    let (mut lg, mut lw) = (vec![0f64; groups], vec![0f64; workers]);
    for _ in 0..50 {
        weighted_means(&mut lg, obs.iter().map(|&(gr, x, r, w)| (gr, r - lw[x], w)));
        weighted_means(&mut lw, obs.iter().map(|&(gr, x, r, w)| (x, r - lg[gr], w)));
    }
    let pace: Vec<f64> = lw.iter().map(|l| l.exp()).collect();
    // Scaled so that the total busy time stays.
    let total: f64 = busy_of.iter().sum();
    let paced: f64 = busy_of.iter().zip(&pace).map(|(b, p)| b / p).sum();
    if !(total > 0.0 && paced > 0.0) {
        return ones;
    }
    let k = paced / total;
    let pace: Vec<f64> = pace.iter().map(|p| p * k).collect();
    if pace.iter().all(|p| p.is_finite() && *p > 0.0) {
        pace
    } else {
        ones
    }
}

/// One half-step of [`worker_paces`]' alternating fit: each `out[k]`
/// becomes the weighted mean of the values `(k, value, weight)` gives it
/// (left as it was where none has weight).
fn weighted_means(out: &mut [f64], values: impl Iterator<Item = (usize, f64, f64)>) {
    let mut acc = vec![(0f64, 0f64); out.len()];
    for (k, v, w) in values {
        acc[k].0 += w * v;
        acc[k].1 += w;
    }
    for (l, (s, w)) in out.iter_mut().zip(&acc) {
        if *w > 0.0 {
            *l = s / w;
        }
    }
}

/// [`plan_mapping`] from an activity of the run already computed (the
/// totals, a merged pass, or `bottleneck`'s windows: the totals are the
/// same).
pub(crate) fn plan_from(run: &RunLog, workers: usize, act: &Activity) -> anyhow::Result<MapPlan> {
    check_request(run, workers)?;
    let mut tg = task_graph(run, act);
    let obs = Observed::of(run, act, &tg);
    let span = run.span_ns();
    let crossing = Crossing::calibrate(run, &mut tg, &obs, span);
    let messages = tg
        .edges
        .iter()
        .fold(0u64, |s, &(_, _, _, m)| s.saturating_add(m));
    let (weight, c) = crossing.weight();
    let pg = part_graph(&tg, &weight);
    let names = Names::of(run, &tg, &crossing.observed_busy, workers, &weight);
    let obs_c = evaluate(&pg, &obs.part, obs.seen.len().max(1), c);
    let (node_part, prop, basis) = search(&names, &pg, &obs, &obs_c, workers, c, &crossing);
    let prop_part = names.expand(&node_part);
    let mut warnings = run.warnings.clone();
    warnings.extend(few_samples_warning(run));
    let tasks = mapped_tasks(&names, &node_part, &obs, &crossing.observed_busy);
    let loads = (0..workers)
        .map(|x| WorkerLoad {
            worker: x,
            busy_ns: prop.loads[x],
            crossing_ns: (c * prop.traffic[x] as f64).round() as u64,
            names: tasks.iter().filter(|t| t.worker == x).count() as u64,
        })
        .collect();
    Ok(MapPlan {
        dir: run.dir.display().to_string(),
        workers,
        tasks,
        unnamed_tasks: names.unnamed,
        estimate: Estimate {
            proposed_ns: prop.time.round() as u64,
            observed_mapping_ns: obs_c.time.round() as u64,
            observed_span_ns: span,
            crossing_cost_ns: crossing.c_span,
            busy_crossing_cost_ns: crossing.c_busy,
            calibrated: crossing.calibrated(),
            messages,
            basis,
            proposed_cut: cut_of(&tg, &prop_part),
            observed_cut: cut_of(&tg, &obs.part),
        },
        loads,
        warnings,
    })
}

/// A task's name, if the logs give it a non-empty one.
fn named(run: &RunLog, t: u64) -> Option<&str> {
    run.tasks
        .get(&t)
        .and_then(|i| i.name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Errors: `workers` outside 1..=[`MAX_MAP_WORKERS`], or a run whose logs
/// name no task.
fn check_request(run: &RunLog, workers: usize) -> anyhow::Result<()> {
    if workers == 0 || workers > MAX_MAP_WORKERS {
        bail!("--workers must be between 1 and {MAX_MAP_WORKERS}, not {workers}");
    }
    if !run.tasks.keys().any(|&t| named(run, t).is_some()) {
        bail!(
            "the logs of {} name no task (names are logged with the MAPPING flag): nothing to map",
            run.dir.display()
        );
    }
    Ok(())
}

/// The task-level graph: every task the load or the activity knows, each
/// stream with both ends known an edge of traffic `messages + waits`.
fn task_graph(run: &RunLog, act: &Activity) -> TaskGraph {
    let mut ids: Vec<u64> = run.tasks.keys().copied().collect();
    ids.extend(act.tasks.keys().filter(|t| !run.tasks.contains_key(t)));
    ids.sort_unstable();
    let mut index: IdMap<u64, usize> = IdMap::default();
    for (i, &t) in ids.iter().enumerate() {
        index.insert(t, i);
    }
    let busy: Vec<u64> = ids
        .iter()
        .map(|t| run.ns(act.tasks.get(t).map_or(0, |a| a.busy_ticks)))
        .collect();
    let mut streams: Vec<u64> = act.streams.keys().copied().collect();
    streams.extend(run.streams.keys().filter(|s| !act.streams.contains_key(s)));
    streams.sort_unstable();
    let mut edges = Vec::new();
    for s in streams {
        let (Some(w), Some(r)) = act.ends(run, s) else {
            continue;
        };
        let (Some(&a), Some(&b)) = (index.get(&w), index.get(&r)) else {
            continue;
        };
        let messages = run.streams.get(&s).map_or(0, |i| i.written.max(i.read));
        let waits = act
            .streams
            .get(&s)
            .map_or(0, |x| x.reader_waits.saturating_add(x.writer_waits));
        edges.push((a, b, messages.saturating_add(waits), messages));
    }
    TaskGraph { ids, busy, edges }
}

/// The observed mapping, on dense worker indices.
struct Observed {
    /// Per task, the worker it ran on.
    workers: Vec<Option<u32>>,
    /// The workers seen, ascending.
    seen: Vec<u32>,
    /// Per task, its worker's index in `seen` (0 for none).
    part: Vec<usize>,
}

impl Observed {
    fn of(run: &RunLog, act: &Activity, tg: &TaskGraph) -> Self {
        let workers: Vec<Option<u32>> = tg.ids.iter().map(|&t| act.worker_of(run, t)).collect();
        let mut seen: Vec<u32> = workers.iter().flatten().copied().collect();
        seen.sort_unstable();
        seen.dedup();
        let part: Vec<usize> = workers
            .iter()
            .map(|w| w.map_or(0, |w| seen.binary_search(&w).unwrap_or(0)))
            .collect();
        Observed {
            workers,
            seen,
            part,
        }
    }
}

/// The cost of crossing workers, calibrated on the run.
struct Crossing {
    /// Per unit of traffic, in the span.
    c_span: f64,
    /// Per message, in busy time.
    c_busy: f64,
    /// Each task's busy time as observed (the task graph's weights have the
    /// busy part of crossing taken out).
    observed_busy: Vec<u64>,
}

impl Crossing {
    /// Calibrates the costs on the observed mapping; takes the part of
    /// crossing found in busy time out of the tasks' weights (the model
    /// puts it back for whatever mapping), and in a sample-only run pools
    /// the groups whose tasks differ within the sampling error.
    fn calibrate(run: &RunLog, tg: &mut TaskGraph, obs: &Observed, span: u64) -> Self {
        let n = tg.ids.len();
        let observed_busy = tg.busy.clone();
        let group = task_groups(run, tg);
        // Busy times at one pace for all workers (see worker_paces).
        let pace = worker_paces(tg, &obs.part, &group, obs.seen.len().max(1));
        for (b, &p) in tg.busy.iter_mut().zip(&obs.part) {
            let f = pace.get(p).copied().unwrap_or(1.0);
            if f != 1.0 {
                *b = (*b as f64 / f).round() as u64;
            }
        }
        let observed = evaluate(
            &part_graph(tg, |t, _| t),
            &obs.part,
            obs.seen.len().max(1),
            0.0,
        );
        let c_span = calibrate(&observed.loads, &observed.traffic, span).unwrap_or(0.0);
        let c_busy = busy_crossing_cost(tg, &obs.part, &group);
        if c_busy > 0.0 {
            let mut x = vec![0u64; n];
            for &(a, b, _, t) in &tg.edges {
                if a != b && obs.part[a] != obs.part[b] {
                    x[a] = x[a].saturating_add(t);
                    x[b] = x[b].saturating_add(t);
                }
            }
            for (b, &x) in tg.busy.iter_mut().zip(&x) {
                *b = (*b as f64 - c_busy * x as f64).max(0.0).round() as u64;
            }
        }
        if crate::load::sampled::is_sample_only(run) {
            if let Some(sm) = &run.sampled {
                let (dur, total) = sm.windows.iter().fold((0u64, 0u64), |(d, t), w| {
                    (
                        d.saturating_add(w.dur),
                        t.saturating_add(u64::from(w.total)),
                    )
                });
                if total > 0 {
                    let per_sample = run.ns(dur) as f64 / total as f64;
                    pool_equal_groups(tg, &group, per_sample);
                }
            }
        }
        Crossing {
            c_span,
            c_busy,
            observed_busy,
        }
    }

    /// Whether crossing costs anything in the model.
    fn calibrated(&self) -> bool {
        self.c_busy > 0.0 || self.c_span > 0.0
    }

    /// An edge's weight: its traffic, each unit costing c_span; with a
    /// busy part, its crossing time in ns (c_span · traffic + c_busy ·
    /// messages) at a cost of 1 per unit. The weight and the cost.
    fn weight(&self) -> (Box<dyn Fn(u64, u64) -> u64>, f64) {
        let (c_span, c_busy) = (self.c_span, self.c_busy);
        if c_busy > 0.0 {
            (
                Box::new(move |t, m| (c_span * t as f64 + c_busy * m as f64).round() as u64),
                1.0,
            )
        } else {
            (Box::new(|t, _| t), c_span)
        }
    }
}

/// Each task's group (by [`group_of`](crate::group_of) its name), as dense
/// indices; unnamed tasks are groups of their own (keyed by id).
fn task_groups(run: &RunLog, tg: &TaskGraph) -> Vec<usize> {
    let mut groups: BTreeMap<(Option<String>, u64), usize> = BTreeMap::new();
    tg.ids
        .iter()
        .map(|&t| {
            let key = match named(run, t) {
                Some(name) => (Some(crate::load::groups::group_of(name).into_owned()), 0),
                None => (None, t),
            };
            let k = groups.len();
            *groups.entry(key).or_insert(k)
        })
        .collect()
}

/// A node of the name-level graph: its name (`None`: an unnamed task),
/// weight (busy time less crossing), tasks, first task and busy time.
type Node<'r> = (Option<&'r str>, u64, u64, usize, u64);

/// The name-level graph: one node per name, unnamed tasks pinned
/// round-robin.
struct Names<'r> {
    /// Per task, its node.
    node_of: Vec<usize>,
    nodes: Vec<Node<'r>>,
    /// Tasks without a name.
    unnamed: u64,
    graph: PartGraph,
}

impl<'r> Names<'r> {
    fn of(
        run: &'r RunLog,
        tg: &TaskGraph,
        observed_busy: &[u64],
        workers: usize,
        weight: &dyn Fn(u64, u64) -> u64,
    ) -> Self {
        let mut node_of = vec![0usize; tg.ids.len()];
        let mut names: BTreeMap<&str, usize> = BTreeMap::new();
        let mut nodes: Vec<Node<'r>> = Vec::new();
        let mut unnamed = 0u64;
        for (i, &id) in tg.ids.iter().enumerate() {
            let k = match named(run, id) {
                Some(name) => *names.entry(name).or_insert_with(|| {
                    nodes.push((Some(name), 0, 0, i, 0));
                    nodes.len() - 1
                }),
                None => {
                    nodes.push((None, 0, 0, i, 0));
                    unnamed += 1;
                    nodes.len() - 1
                }
            };
            node_of[i] = k;
            nodes[k].1 = nodes[k].1.saturating_add(tg.busy[i]);
            nodes[k].4 = nodes[k].4.saturating_add(observed_busy[i]);
            nodes[k].2 += 1;
        }
        let mut rr = 0usize;
        let graph = PartGraph {
            weights: nodes.iter().map(|n| n.1).collect(),
            edges: tg
                .edges
                .iter()
                .map(|&(a, b, t, m)| (node_of[a], node_of[b], weight(t, m)))
                .collect(),
            pinned: nodes
                .iter()
                .map(|nd| {
                    nd.0.is_none().then(|| {
                        rr += 1;
                        (rr - 1) % workers
                    })
                })
                .collect(),
        };
        Names {
            node_of,
            nodes,
            unnamed,
            graph,
        }
    }

    /// A mapping of nodes as one of tasks.
    fn expand(&self, np: &[usize]) -> Vec<usize> {
        self.node_of.iter().map(|&k| np[k]).collect()
    }
}

/// How much faster than the observed mapping a plan must be predicted
/// before `map` proposes to leave that mapping (where it is one of names
/// and the costs are calibrated). The model ignores dependencies and fits
/// a crossing's cost to one run: a DES recording under the adaptive
/// default (observed 225 ms) gave a plan predicted at 198 (12% faster)
/// that cut lane 1's chain twice, and its next runs took 1.86x the hand
/// mapping's time (docs/measurements/placement.md#keep-margin).
pub const KEEP_MARGIN: f64 = 0.15;

/// The search's mapping of nodes, and where it is predicted slower than the
/// observed mapping (or faster by less than [`KEEP_MARGIN`]), that mapping refined by the same moves: the nodes'
/// workers, the proposal's evaluation and its basis.
fn search(
    names: &Names<'_>,
    pg: &PartGraph,
    obs: &Observed,
    obs_c: &Evaluation,
    workers: usize,
    c: f64,
    crossing: &Crossing,
) -> (Vec<usize>, Evaluation, Basis) {
    let calibrated = crossing.calibrated();
    // Differences of predicted time below CUT_TOLERANCE are ties, which
    // the partition gives to the smaller cut.
    let tolerance = CUT_TOLERANCE;
    // Step 4 of the search stays at or below the observed mapping's time
    // (where that is a mapping onto as many workers), so that its fewer
    // crossings never cost the fallback below.
    let cap = if obs.seen.len() <= workers && calibrated {
        obs_c.time
    } else {
        f64::INFINITY
    };
    let searched = partition_within(&names.graph, workers, c, tolerance, cap);
    let mut node_part = searched;
    let mut prop = evaluate(pg, &names.expand(&node_part), workers, c);
    let mut basis = Basis::Search;
    // The plan must not be predicted slower than the observed mapping.
    // Where the search's result is, and the observed mapping is one of
    // names (each name's tasks ran on one worker, on no more workers than
    // planned for), the plan is that mapping refined by the same moves.
    // Only with crossing costs calibrated: with none (c = 0) the model sees
    // crossing as free, and a round-robin run's mapping refined that way ran
    // Monte Carlo in 410 ms where the search's took 299 (rr itself 330).
    let eps = 1e-9 * obs_c.time.abs().max(1.0);
    // A plan predicted less than KEEP_MARGIN faster than the observed
    // mapping is not worth leaving it for: the model's error is larger.
    let worth = |t: f64| t < obs_c.time * (1.0 - KEEP_MARGIN) - eps;
    let start = (calibrated && !worth(prop.time))
        .then(|| observed_names(names, obs, workers, &node_part))
        .flatten();
    if let Some(start) = start {
        let refined = if prop.time > obs_c.time + eps {
            partition_from_within(&names.graph, workers, c, &start, tolerance)
        } else {
            start.clone()
        };
        let refined_c = evaluate(pg, &names.expand(&refined), workers, c);
        let (part, eval) = if worth(refined_c.time) {
            (refined, refined_c)
        } else {
            let e = evaluate(pg, &names.expand(&start), workers, c);
            (start.clone(), e)
        };
        let moved = part
            .iter()
            .zip(&start)
            .zip(&names.nodes)
            .filter(|((a, b), nd)| a != b && nd.0.is_some())
            .count() as u64;
        basis = if moved == 0 {
            Basis::Observed
        } else {
            Basis::ObservedImproved { moved }
        };
        prop = eval;
        node_part = part;
    }
    (node_part, prop, basis)
}

/// The observed mapping as one of names, if it is one (each name's tasks
/// ran on one worker, on no more workers than `workers`); nodes it does not
/// place keep their worker in `node_part`.
fn observed_names(
    names: &Names<'_>,
    obs: &Observed,
    workers: usize,
    node_part: &[usize],
) -> Option<Vec<usize>> {
    if obs.seen.len() > workers {
        return None;
    }
    let mut np: Vec<Option<usize>> = vec![None; names.nodes.len()];
    for (i, &k) in names.node_of.iter().enumerate() {
        if obs.workers[i].is_none() || names.nodes[k].0.is_none() {
            continue;
        }
        match np[k] {
            None => np[k] = Some(obs.part[i]),
            Some(p) if p != obs.part[i] => return None,
            Some(_) => {}
        }
    }
    Some(
        np.iter()
            .zip(node_part)
            .map(|(o, &s)| o.unwrap_or(s))
            .collect(),
    )
}

/// The plan's lines: each name with its worker, in worker order and then
/// the order of the names' first tasks; the busiest task of each name gives
/// its observed worker.
fn mapped_tasks(
    names: &Names<'_>,
    node_part: &[usize],
    obs: &Observed,
    observed_busy: &[u64],
) -> Vec<MappedTask> {
    let mut heaviest: Vec<Option<(u64, usize)>> = vec![None; names.nodes.len()];
    for (i, &k) in names.node_of.iter().enumerate() {
        let h = &mut heaviest[k];
        if h.is_none_or(|(b, _)| observed_busy[i] > b) {
            *h = Some((observed_busy[i], i));
        }
    }
    let mut tasks: Vec<MappedTask> = names
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(k, nd)| {
            let name = nd.0?;
            Some(MappedTask {
                name: name.to_owned(),
                worker: node_part[k],
                busy_ns: nd.4,
                tasks: nd.2,
                observed_worker: heaviest[k].and_then(|(_, i)| obs.workers[i]),
            })
        })
        .collect();
    let first: BTreeMap<&str, usize> = names
        .nodes
        .iter()
        .filter_map(|nd| nd.0.map(|name| (name, nd.3)))
        .collect();
    tasks.sort_by_key(|t| (t.worker, first[t.name.as_str()]));
    tasks
}

/// A sample-mode run shorter than this gets a warning with its plan: its
/// busy times per task rest on a few samples each, and runs of a few
/// milliseconds were found off by more than the samples' statistics say
/// (7 to 23 points per worker on 6-10 ms runs; `docs/measurements/rill-mon.md#auto-pilot`),
/// where runs of 200 ms and more stay within the bound.
pub const SHORT_SAMPLED_RUN_NS: u64 = 200_000_000;

/// The warning for a sample-only run shorter than [`SHORT_SAMPLED_RUN_NS`].
fn few_samples_warning(run: &RunLog) -> Option<String> {
    if !crate::load::sampled::is_sample_only(run) || run.span_ns() >= SHORT_SAMPLED_RUN_NS {
        return None;
    }
    let sm = run.sampled.as_ref()?;
    let fewest = sm.min_samples();
    Some(format!(
        "a sample-mode run of {}: the busy times this plan weighs are estimated from as few as {fewest} independent samples on a worker \
         (a busy share within {:.0} points at 95%), and runs this short were found further off; \
         for a plan from a short run, record it in count mode (--monitor map,worker,task,stream)",
        fmt_ns(run.span_ns() as f64),
        100.0 * crate::load::samples::Sampled::share_error(fewest)
    ))
}

/// The planner of `rill-mon map` as `rill`'s profile hook
/// (`rill::Builder::profile_planner(rill_monitor::profile_planner)`): the
/// mapping file planned from the count-mode logs in `dir` for `workers`
/// workers, or why there is none.
pub fn profile_planner(dir: &std::path::Path, workers: usize) -> Result<String, String> {
    let load = crate::load::open::LoadOptions {
        progress: Some(false),
        latency: false,
        ..crate::load::open::LoadOptions::default()
    };
    let run = crate::replay::load_run::load_run_with(dir, &load).map_err(|e| format!("{e:#}"))?;
    let plan = plan_mapping(&run, workers).map_err(|e| format!("{e:#}"))?;
    Ok(plan.to_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of `busy.len()` tasks, each stream carrying 1,000 messages.
    fn chain(busy: &[u64]) -> TaskGraph {
        TaskGraph {
            ids: (0..busy.len() as u64).collect(),
            busy: busy.to_vec(),
            edges: (1..busy.len()).map(|i| (i - 1, i, 1000, 1000)).collect(),
        }
    }

    /// DES's shape: split (0) → lane A, stages 1..=4 → collect (9), split
    /// → lane B, stages 5..=8 → collect; every stream 1,000 messages, and
    /// traffic 1,200 (messages and waits). Groups: split, stage, collect.
    fn two_lanes(a: u64, b: u64) -> (TaskGraph, Vec<usize>) {
        let mut busy = vec![10, a, a, a, a, b, b, b, b, 10];
        busy[0] = 12;
        let mut edges = vec![(0, 1, 1200, 1000), (0, 5, 1200, 1000)];
        edges.extend((1..4).map(|i| (i, i + 1, 1200, 1000)));
        edges.extend((5..8).map(|i| (i, i + 1, 1200, 1000)));
        edges.extend([(4, 9, 1200, 1000), (8, 9, 1200, 1000)]);
        let g = TaskGraph {
            ids: (0..10).collect(),
            busy,
            edges,
        };
        (g, vec![0, 1, 1, 1, 1, 1, 1, 1, 1, 2])
    }

    /// The partition of `g`'s tasks onto 2 workers at `cost` per unit of
    /// traffic, with the busy times as the planner weighs them after
    /// putting the observed mapping `obs`'s workers at one pace (or not).
    fn plan_two(
        g: &TaskGraph,
        obs: &[usize],
        group: &[usize],
        pace: bool,
        cost: f64,
    ) -> Vec<usize> {
        let mut g = TaskGraph {
            ids: g.ids.clone(),
            busy: g.busy.clone(),
            edges: g.edges.clone(),
        };
        if pace {
            let p = worker_paces(&g, obs, group, 2);
            for (b, &x) in g.busy.iter_mut().zip(obs) {
                *b = (*b as f64 / p[x]).round() as u64;
            }
        }
        partition_within(
            &part_graph(&g, |t, _| t),
            2,
            cost,
            CUT_TOLERANCE,
            f64::INFINITY,
        )
    }

    #[test]
    fn a_slower_worker_is_not_balanced_by_cutting_a_chain() {
        // Lane A on worker 0 took 50 per stage, lane B on worker 1 35: the
        // same work, at worker 0's slower pace (its core shared).
        let (g, group) = two_lanes(50, 35);
        let obs = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1];
        let p = worker_paces(&g, &obs, &group, 2);
        assert!((p[0] / p[1] - 50.0 / 35.0).abs() < 1e-6, "{p:?}");
        // Crossing a stream costs 2 at each end: less than the 30 the raw
        // busy times say a move of one stage gains.
        let cost = 2.0 / 1200.0;
        let raw = plan_two(&g, &obs, &group, false, cost);
        assert!(
            raw[1..=4].iter().any(|&x| x != raw[1]),
            "the raw busy times cut lane A: {raw:?}"
        );
        let paced = plan_two(&g, &obs, &group, true, cost);
        assert!(paced[1..=4].iter().all(|&x| x == paced[1]), "{paced:?}");
        assert!(paced[5..=8].iter().all(|&x| x == paced[5]), "{paced:?}");
        assert_ne!(paced[1], paced[5], "{paced:?}");
    }

    #[test]
    fn a_heavy_stage_still_gets_its_chain_cut() {
        // Both workers at one pace (the median stage of each lane takes 40),
        // but one stage of lane A does 4 times the work: moving the light
        // stage after it gains far more than a crossing costs.
        let (mut g, group) = two_lanes(40, 40);
        g.busy[2] = 160;
        let obs = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1];
        let p = worker_paces(&g, &obs, &group, 2);
        assert!((p[0] - p[1]).abs() < 1e-6, "{p:?}");
        let paced = plan_two(&g, &obs, &group, true, 2.0 / 1200.0);
        assert!(paced[1..=4].iter().any(|&x| x != paced[2]), "{paced:?}");
        // A worker that shares no group with the other keeps its pace.
        let alone = worker_paces(&g, &obs, &[0, 1, 1, 1, 1, 2, 2, 2, 2, 3], 2);
        assert_eq!(alone, [1.0, 1.0]);
    }

    #[test]
    fn a_group_within_its_sampling_error_is_pooled() {
        // Interior tasks: 2,000 messages each; ends: 1,000. Estimates of
        // equal work (2 ms per 1,000 messages) with 1 ms samples scattered
        // as a few samples each would scatter them.
        let ms = 1_000_000u64;
        let mut g = chain(&[2 * ms, 5 * ms, 3 * ms, 4 * ms, 6 * ms, 2 * ms]);
        pool_equal_groups(&mut g, &[0; 6], ms as f64);
        let total: u64 = 22 * ms;
        // 10,000 task-messages in all: 2.2 ms per 1,000.
        assert_eq!(g.busy[0], total / 10);
        assert_eq!(g.busy[1], total / 5);
        assert!(g.busy[1..5].iter().all(|&b| b == g.busy[1]), "{:?}", g.busy);
    }

    #[test]
    fn a_task_that_stands_out_keeps_the_group_from_pooling() {
        let ms = 1_000_000u64;
        let before = [2 * ms, 4 * ms, 4 * ms, 60 * ms, 4 * ms, 2 * ms];
        let mut g = chain(&before);
        pool_equal_groups(&mut g, &[0; 6], ms as f64);
        assert_eq!(g.busy, before);
        // Nor are groups of fewer than 3 tasks, or different groups, mixed.
        let mut g = chain(&[ms, 9 * ms, ms, 9 * ms]);
        pool_equal_groups(&mut g, &[0, 1, 0, 1], ms as f64);
        assert_eq!(g.busy, [ms, 9 * ms, ms, 9 * ms]);
    }
}
