//! `rill-mon map --ranks R --workers W`: a mapping of the observed task
//! graph onto R ranks of W workers each, written as `"name" = RANK:WORKER`
//! lines (the mapping file of a run across ranks; one process's file has
//! `"name" = WORKER` lines, `plan/mapfile.rs`).
//!
//! The graph is `map`'s: one node per task name (tasks sharing a name
//! share a line, so a place), weighted by busy time; one edge per stream
//! between its writer and reader, weighted by its waits (its reader's and
//! its writer's: each is a wake-up, which costs more the further it goes).
//! Unnamed tasks cannot be listed; the estimate puts them round-robin over
//! the places.
//!
//! What-if model: `T(m) = max over places x (rank, worker) of B(x) + c_w ·
//! Xw(x) + c_r · Xr(x)`, `B(x)` the busy time of the tasks m puts on x,
//! `Xw(x)` the waits of the streams between x and another worker of its
//! rank, `Xr(x)` those of the streams between x and another rank. The costs
//! per wait are measured where the run shows them (`replay/crossing.rs`: the
//! median delay from the peer's operation to the waiting end's dispatch,
//! over the waits on streams that crossed at that level), and assumed
//! where it does not ([`ASSUMED_WORKER_NS`], [`RANK_OVER_WORKER`]); the
//! file's header says which. The model ignores dependencies (as `map`'s
//! does) and the busy time crossing adds (cache lines, encoding).
//!
//! Plan, in two steps: the names are cut into R parts that balance busy
//! time and keep streams with many waits on one rank (the partition of
//! `plan/partition.rs`, a crossing of ranks costing `W · c_r` against a rank's
//! busy time, which its W workers share); then each rank's names are cut
//! into W parts with cost `c_w`. Where the run's own mapping fits R × W
//! (ranks and workers numbered within them, each name on one place) and the
//! model predicts it faster than the plan, the plan is that mapping.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::bail;
use serde::Serialize;

use crate::load::model::RunLog;
use crate::plan::mapfile::quote_name;
use crate::plan::partition::{partition_within, PartGraph, CUT_TOLERANCE};
use crate::render::number::fmt_ns;
use crate::replay::activity::whole_run;
use crate::replay::activity_model::Activity;
use crate::replay::crossing::{measure, CrossingDelays};

/// The cost of a wait crossing workers when the run shows none: a wake-up
/// of an idle worker (the README measures under a microsecond to tens of
/// microseconds for a parked one).
pub const ASSUMED_WORKER_NS: f64 = 2_000.0;

/// A wait crossing ranks, when the run shows none, costs this many times
/// one crossing workers (the transport's latency on top of the wake-up).
pub const RANK_OVER_WORKER: f64 = 10.0;

/// The most places (ranks × workers) `map --ranks` plans for.
pub const MAX_MAP_PLACES: usize = 4096;

/// What a wait crossing one level costs in the plan.
#[derive(Clone, Debug, Serialize)]
pub struct LevelCost {
    /// Nanoseconds per wait.
    pub cost_ns: f64,
    /// Whether it was measured on the run (else assumed).
    pub measured: bool,
    /// How it was found, in words (the file's header says it).
    pub basis: String,
}

/// A place's load under the plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlaceLoad {
    /// The rank.
    pub rank: usize,
    /// The worker within it.
    pub worker: usize,
    /// Busy time of its tasks.
    pub busy_ns: u64,
    /// `c_w · Xw + c_r · Xr`.
    pub crossing_ns: u64,
    /// Its named tasks (lines of the file).
    pub names: u64,
}

/// One line of the file.
#[derive(Clone, Debug, Serialize)]
pub struct RankMappedTask {
    /// The task name.
    pub name: String,
    /// The proposed rank.
    pub rank: usize,
    /// The proposed worker within it.
    pub worker: usize,
    /// Busy time of the tasks of that name.
    pub busy_ns: u64,
    /// How many tasks have that name.
    pub tasks: u64,
}

/// Streams crossing each level under a mapping.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LevelCut {
    /// Streams between workers of one rank.
    pub worker_streams: u64,
    /// Their waits.
    pub worker_waits: u64,
    /// Streams between ranks.
    pub rank_streams: u64,
    /// Their waits.
    pub rank_waits: u64,
}

/// What `rill-mon map --ranks` proposes.
#[derive(Clone, Debug, Serialize)]
pub struct RankMapPlan {
    /// The log directory.
    pub dir: String,
    /// Ranks planned for.
    pub ranks: usize,
    /// Workers per rank.
    pub workers: usize,
    /// One entry per task name, by place, then by the first task's id.
    pub tasks: Vec<RankMappedTask>,
    /// Tasks without a name (not in the file).
    pub unnamed_tasks: u64,
    /// c_w: a wait between workers of one rank.
    pub worker_cost: LevelCost,
    /// c_r: a wait between ranks.
    pub rank_cost: LevelCost,
    /// The delays the run showed at each level.
    pub delays: CrossingDelays,
    /// The model's time under the plan.
    pub proposed_ns: u64,
    /// The model's time under the observed mapping.
    pub observed_mapping_ns: u64,
    /// The observed run's span.
    pub observed_span_ns: u64,
    /// Whether the plan is the observed mapping (predicted no slower than
    /// the search's).
    pub kept_observed: bool,
    /// The plan's cut.
    pub proposed_cut: LevelCut,
    /// The observed mapping's cut.
    pub observed_cut: LevelCut,
    /// Per place under the plan.
    pub loads: Vec<PlaceLoad>,
    /// Problems with the logs.
    pub warnings: Vec<String>,
}

/// The name-level graph: nodes (a name, or an unnamed task), their busy
/// time and first task, and edges `(writer node, reader node, waits)`.
struct Names {
    nodes: Vec<(Option<String>, u64, u64, u64)>,
    edges: Vec<(usize, usize, u64)>,
    /// Per node, the observed place (global worker) of its busiest task.
    observed: Vec<Option<u32>>,
    /// Whether each node's tasks all ran on one worker.
    one_place: Vec<bool>,
}

fn names(run: &RunLog, act: &Activity) -> Names {
    let named = |t: u64| {
        run.tasks
            .get(&t)
            .and_then(|i| i.name.as_deref())
            .filter(|n| !n.is_empty())
    };
    let mut ids: Vec<u64> = run.tasks.keys().copied().collect();
    ids.extend(act.tasks.keys().filter(|t| !run.tasks.contains_key(t)));
    ids.sort_unstable();
    let mut node_of: BTreeMap<u64, usize> = BTreeMap::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    let mut g = Names {
        nodes: Vec::new(),
        edges: Vec::new(),
        observed: Vec::new(),
        one_place: Vec::new(),
    };
    let mut heaviest: Vec<u64> = Vec::new();
    for &t in &ids {
        let k = match named(t) {
            Some(n) => *by_name.entry(n.to_owned()).or_insert_with(|| {
                g.nodes.push((Some(n.to_owned()), 0, 0, t));
                g.nodes.len() - 1
            }),
            None => {
                g.nodes.push((None, 0, 0, t));
                g.nodes.len() - 1
            }
        };
        if k == g.observed.len() {
            g.observed.push(None);
            g.one_place.push(true);
            heaviest.push(0);
        }
        node_of.insert(t, k);
        let busy = run.ns(act.tasks.get(&t).map_or(0, |a| a.busy_ticks));
        let nd = &mut g.nodes[k];
        nd.1 = nd.1.saturating_add(busy);
        nd.2 += 1;
        let w = act.worker_of(run, t);
        if let (Some(a), Some(b)) = (g.observed[k], w) {
            g.one_place[k] &= a == b;
        }
        if g.observed[k].is_none() || busy > heaviest[k] {
            if w.is_some() {
                g.observed[k] = w;
            }
            heaviest[k] = busy;
        }
    }
    let mut streams: Vec<u64> = act.streams.keys().copied().collect();
    streams.extend(run.streams.keys().filter(|s| !act.streams.contains_key(s)));
    streams.sort_unstable();
    for s in streams {
        let (Some(w), Some(r)) = act.ends(run, s) else {
            continue;
        };
        let (Some(&a), Some(&b)) = (node_of.get(&w), node_of.get(&r)) else {
            continue;
        };
        let waits = act
            .streams
            .get(&s)
            .map_or(0, |x| x.reader_waits.saturating_add(x.writer_waits));
        g.edges.push((a, b, waits));
    }
    g
}

/// A place per node: (rank, worker).
type Places = Vec<(usize, usize)>;

/// Per place: its busy time and its crossing time.
type Loads = BTreeMap<(usize, usize), (u64, f64)>;

/// The model's figures of `places`: the time, the cut and each place's
/// load.
fn model(g: &Names, places: &Places, cw: f64, cr: f64) -> (f64, LevelCut, Loads) {
    let mut load = Loads::new();
    for (k, nd) in g.nodes.iter().enumerate() {
        let e = load.entry(places[k]).or_default();
        e.0 = e.0.saturating_add(nd.1);
    }
    let mut cut = LevelCut::default();
    for &(a, b, waits) in &g.edges {
        let (pa, pb) = (places[a], places[b]);
        if pa == pb {
            continue;
        }
        let c = if pa.0 == pb.0 {
            cut.worker_streams += 1;
            cut.worker_waits = cut.worker_waits.saturating_add(waits);
            cw
        } else {
            cut.rank_streams += 1;
            cut.rank_waits = cut.rank_waits.saturating_add(waits);
            cr
        };
        for p in [pa, pb] {
            load.entry(p).or_default().1 += c * waits as f64;
        }
    }
    let time = load
        .values()
        .map(|&(b, x)| b as f64 + x)
        .fold(0.0, f64::max);
    (time, cut, load)
}

/// The costs per wait at each level: measured where the run shows waits
/// at that level, else assumed (see the module documentation).
fn costs(d: &CrossingDelays) -> (LevelCost, LevelCost) {
    let measured = |x: &crate::replay::crossing::Delays, what: &str| {
        x.median_ns.map(|m| LevelCost {
            cost_ns: m as f64,
            measured: true,
            basis: format!(
                "measured: the median delay over {} wait(s) on streams {what} in this run, \
                 from the peer's operation (the end of its period) to the waiting end's dispatch",
                x.waits
            ),
        })
    };
    let w = measured(&d.workers, "between two workers of one rank");
    let r = measured(&d.ranks, "between two ranks");
    let w = w.unwrap_or_else(|| match &r {
        Some(r) => LevelCost {
            cost_ns: r.cost_ns / RANK_OVER_WORKER,
            measured: false,
            basis: format!(
                "assumed: no wait on a stream between two workers of one rank was seen; \
                 1/{RANK_OVER_WORKER} of the measured cost of crossing ranks"
            ),
        },
        None => LevelCost {
            cost_ns: ASSUMED_WORKER_NS,
            measured: false,
            basis: format!(
                "assumed: no wait on a stream between two workers of one rank was seen; \
                 {} per wait, a wake-up of an idle worker",
                fmt_ns(ASSUMED_WORKER_NS)
            ),
        },
    });
    let r = r.unwrap_or_else(|| LevelCost {
        cost_ns: w.cost_ns * RANK_OVER_WORKER,
        measured: false,
        basis: format!(
            "assumed: no wait on a stream between two ranks was seen; {RANK_OVER_WORKER} x \
             the cost of crossing workers (the transport's latency on top of a wake-up)"
        ),
    });
    (w, r)
}

/// Plans a mapping of the run's named tasks onto `ranks` ranks of
/// `workers` workers each (see the module documentation).
///
/// Errors: no rank or worker, more than [`MAX_MAP_PLACES`] places, or a
/// run whose logs name no task.
pub fn plan_rank_mapping(
    run: &RunLog,
    ranks: usize,
    workers: usize,
) -> anyhow::Result<RankMapPlan> {
    if ranks == 0 || workers == 0 || ranks.saturating_mul(workers) > MAX_MAP_PLACES {
        bail!(
            "--ranks and --workers must be at least 1, and ranks x workers at most \
             {MAX_MAP_PLACES}, not {ranks} x {workers}"
        );
    }
    let act = whole_run(run);
    let g = names(run, &act);
    if !g.nodes.iter().any(|n| n.0.is_some()) {
        bail!(
            "the logs of {} name no task (names are logged with the MAPPING flag): nothing to map",
            run.dir.display()
        );
    }
    let delays = if run.flags.contains(rill_log::MonitorFlags::SCHEDULER) {
        measure(run, &act)
    } else {
        CrossingDelays::default()
    };
    let (wc, rc) = costs(&delays);
    let (cw, cr) = (wc.cost_ns, rc.cost_ns);

    // Unnamed tasks go round-robin over the places, in id order.
    let mut rr = 0usize;
    let pinned: Vec<Option<(usize, usize)>> = g
        .nodes
        .iter()
        .map(|nd| {
            nd.0.is_none().then(|| {
                rr += 1;
                let p = (rr - 1) % (ranks * workers);
                (p / workers, p % workers)
            })
        })
        .collect();

    // Step 1: ranks.
    let rank_graph = PartGraph {
        weights: g.nodes.iter().map(|n| n.1).collect(),
        edges: g.edges.clone(),
        pinned: pinned.iter().map(|p| p.map(|p| p.0)).collect(),
    };
    let rank_of = partition_within(
        &rank_graph,
        ranks,
        cr * workers as f64,
        CUT_TOLERANCE,
        f64::INFINITY,
    );
    // Step 2: workers within each rank.
    let mut places: Places = vec![(0, 0); g.nodes.len()];
    for r in 0..ranks {
        let members: Vec<usize> = (0..g.nodes.len()).filter(|&k| rank_of[k] == r).collect();
        let local: BTreeMap<usize, usize> =
            members.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let sub = PartGraph {
            weights: members.iter().map(|&k| g.nodes[k].1).collect(),
            edges: g
                .edges
                .iter()
                .filter_map(|&(a, b, w)| Some((*local.get(&a)?, *local.get(&b)?, w)))
                .collect(),
            pinned: members.iter().map(|&k| pinned[k].map(|p| p.1)).collect(),
        };
        let part = partition_within(&sub, workers, cw, CUT_TOLERANCE, f64::INFINITY);
        for (i, &k) in members.iter().enumerate() {
            places[k] = (r, part[i]);
        }
    }
    let (mut time, mut cut, mut load) = model(&g, &places, cw, cr);

    // The observed mapping: each node where its busiest task ran.
    let observed: Places = g
        .observed
        .iter()
        .map(|w| {
            let w = w.unwrap_or(0);
            match run.ranks.as_ref().and_then(|r| r.worker(w)) {
                Some((r, k)) => (r as usize, k as usize),
                None => (0, w as usize),
            }
        })
        .collect();
    let (obs_time, obs_cut, _) = model(&g, &observed, cw, cr);
    let fits = observed.iter().all(|&(r, w)| r < ranks && w < workers)
        && g.one_place
            .iter()
            .zip(&g.nodes)
            .all(|(&one, nd)| one || nd.0.is_none())
        && pinned
            .iter()
            .zip(&observed)
            .all(|(p, o)| p.is_none_or(|p| p == *o));
    let kept_observed = fits && obs_time < time;
    if kept_observed {
        places = observed;
        (time, cut, load) = model(&g, &places, cw, cr);
    }

    let mut tasks: Vec<(u64, RankMappedTask)> = g
        .nodes
        .iter()
        .zip(&places)
        .filter_map(|(nd, &(rank, worker))| {
            Some((
                nd.3,
                RankMappedTask {
                    name: nd.0.clone()?,
                    rank,
                    worker,
                    busy_ns: nd.1,
                    tasks: nd.2,
                },
            ))
        })
        .collect();
    tasks.sort_by_key(|(first, t)| (t.rank, t.worker, *first));
    let tasks: Vec<RankMappedTask> = tasks.into_iter().map(|(_, t)| t).collect();
    let loads = (0..ranks)
        .flat_map(|r| (0..workers).map(move |w| (r, w)))
        .map(|(r, w)| {
            let (busy, x) = load.get(&(r, w)).copied().unwrap_or_default();
            PlaceLoad {
                rank: r,
                worker: w,
                busy_ns: busy,
                crossing_ns: x.round() as u64,
                names: tasks
                    .iter()
                    .filter(|t| (t.rank, t.worker) == (r, w))
                    .count() as u64,
            }
        })
        .collect();
    Ok(RankMapPlan {
        dir: run.dir.display().to_string(),
        ranks,
        workers,
        tasks,
        unnamed_tasks: g.nodes.iter().filter(|n| n.0.is_none()).count() as u64,
        worker_cost: wc,
        rank_cost: rc,
        delays,
        proposed_ns: time.round() as u64,
        observed_mapping_ns: obs_time.round() as u64,
        observed_span_ns: run.span_ns(),
        kept_observed,
        proposed_cut: cut,
        observed_cut: obs_cut,
        loads,
        warnings: run.warnings.clone(),
    })
}

impl RankMapPlan {
    /// The mapping file.
    pub fn to_file(&self) -> String {
        let mut o = String::new();
        let ms = |ns: u64| fmt_ns(ns as f64);
        let _ = writeln!(
            o,
            "# rill-mon map: the {} named task(s) of {} on {} rank(s) x {} worker(s).",
            self.tasks.len(),
            self.dir.replace('\n', " "),
            self.ranks,
            self.workers
        );
        o.push_str(
            "# Load with --mapping FILE on every rank (mpirun). Lines are \"task name\" = RANK:WORKER;\n\
             # every named task has its own line, so longest-prefix matching maps each by it.\n\
             # Unnamed tasks are not listed (the estimate puts them round-robin over the places).\n#\n",
        );
        let _ = writeln!(
            o,
            "# Predicted run time = max over places (rank, worker) of busy time\n\
             # + c_w x waits on streams to other workers of the rank + c_r x waits on streams to other ranks:\n\
             #   this mapping:     {}\n\
             #   observed mapping: {} (the observed run took {})",
            ms(self.proposed_ns),
            ms(self.observed_mapping_ns),
            ms(self.observed_span_ns)
        );
        let _ = writeln!(
            o,
            "# crossing workers: c_w = {} per wait, {}",
            fmt_ns(self.worker_cost.cost_ns),
            self.worker_cost.basis
        );
        let _ = writeln!(
            o,
            "# crossing ranks: c_r = {} per wait, {}",
            fmt_ns(self.rank_cost.cost_ns),
            self.rank_cost.basis
        );
        let c = &self.proposed_cut;
        let oc = &self.observed_cut;
        let _ = writeln!(
            o,
            "# Streams between ranks: {} with {} waits; between workers of a rank: {} with {} waits\n\
             # (observed: {} with {}; {} with {}).\n\
             # The model ignores dependencies and the busy time crossing adds (encoding, cache lines).",
            c.rank_streams,
            c.rank_waits,
            c.worker_streams,
            c.worker_waits,
            oc.rank_streams,
            oc.rank_waits,
            oc.worker_streams,
            oc.worker_waits
        );
        if self.kept_observed {
            o.push_str(
                "# This mapping is the observed one: no mapping found is predicted faster.\n",
            );
        }
        for w in &self.warnings {
            let _ = writeln!(o, "# warning: {}", w.replace('\n', " "));
        }
        for l in &self.loads {
            let _ = writeln!(
                o,
                "\n# rank {}, worker {}: busy {}, crossing {}, {} name(s)",
                l.rank,
                l.worker,
                ms(l.busy_ns),
                ms(l.crossing_ns),
                l.names
            );
            for t in self
                .tasks
                .iter()
                .filter(|t| (t.rank, t.worker) == (l.rank, l.worker))
            {
                let _ = writeln!(o, "{} = {}:{}", quote_name(&t.name), t.rank, t.worker);
            }
        }
        o
    }

    /// A few lines for the terminal.
    pub fn to_text(&self, file: &str) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "wrote {file}: {} named task(s) on {} rank(s) x {} worker(s){}",
            self.tasks.len(),
            self.ranks,
            self.workers,
            if self.unnamed_tasks > 0 {
                format!(
                    " ({} unnamed task(s) left to round-robin)",
                    self.unnamed_tasks
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            o,
            "predicted run time: {} with this mapping, {} with the observed one (observed span {})",
            fmt_ns(self.proposed_ns as f64),
            fmt_ns(self.observed_mapping_ns as f64),
            fmt_ns(self.observed_span_ns as f64)
        );
        for (what, c) in [("workers", &self.worker_cost), ("ranks", &self.rank_cost)] {
            let _ = writeln!(
                o,
                "crossing {what}: {} per wait ({})",
                fmt_ns(c.cost_ns),
                if c.measured { "measured" } else { "assumed" }
            );
        }
        let c = &self.proposed_cut;
        let _ = writeln!(
            o,
            "streams between ranks: {} ({} waits), between workers of a rank: {} ({} waits)",
            c.rank_streams, c.rank_waits, c.worker_streams, c.worker_waits
        );
        for l in &self.loads {
            let _ = writeln!(
                o,
                "  {}:{}: busy {}, crossing {}, {} name(s)",
                l.rank,
                l.worker,
                fmt_ns(l.busy_ns as f64),
                fmt_ns(l.crossing_ns as f64),
                l.names
            );
        }
        for w in &self.warnings {
            let _ = writeln!(o, "warning: {w}");
        }
        o
    }
}
