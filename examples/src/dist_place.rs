//! `--mapping` across ranks in `rill-bench` under mpirun: what a choice
//! places, and `parts`, a cut of the network's stream graph over ranks ×
//! workers ([`cut`]).
//!
//! One process's `parts` cuts the application's ordered list of task
//! groups into W contiguous runs (pipe and ring: the chain into W
//! blocks), so that a chain is cut once per worker. Across ranks the
//! network is known before it runs ([`rill::dist::Net::graph`]: every
//! task and the two tasks of every stream), so `parts` cuts that graph,
//! with `rill-mon map`'s partitioner ([`rill_monitor::partition_from_within`])
//! and no log:
//!
//! 1. one node per task name (tasks sharing a name share a place), each of
//!    weight [`TASK_WEIGHT`] (a task's work is not known before it runs:
//!    every task counts the same); one edge of weight 1 per stream;
//! 2. the start is the contiguous blocks (`blocks`: the tasks in spawn
//!    order cut into R·W runs, rank r's W runs after one another); the
//!    names are moved between ranks one at a time while a move lowers the
//!    heaviest rank's load (its tasks: [`CROSSING`]), or keeps it and
//!    cuts fewer streams between ranks, never above a rank's fair share
//!    plus one task;
//! 3. each rank's names are moved between its W workers the same way.
//!
//! So `parts` is `blocks` where the blocks are already a balanced cut
//! that no single move improves (a chain: pipe; a star: ant, rt), and
//! differs where a block edge falls inside a group that one move can make
//! whole (DES on 3 ranks: the blocks put the third pipeline's initial
//! permutation on the second rank; `parts` moves it to its pipeline's).
//! Tasks pinned to a place (`Net::spawn_with_on`) keep it and count in
//! its part. The result is a `prefix = RANK:WORKER` table naming every
//! task.

use std::collections::BTreeMap;

use rill::dist::{Net, NetGraph, Placement, RankTable};
use rill_monitor::{partition_from_within, PartGraph, CUT_TOLERANCE};

/// A task's weight in the cut.
pub const TASK_WEIGHT: u64 = 1000;

/// What a stream between two parts adds to a part's load in the
/// partitioner's objective: nothing, so that balance always comes first
/// and the number of streams cut decides only between moves of equal
/// balance.
pub const CROSSING: f64 = 0.0;

/// How an application's network is placed over every rank's workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placing {
    /// A placement of `rill::dist` as it is (blocks, rr, a table).
    Given(Placement),
    /// `parts`: the network's stream graph cut over ranks × workers
    /// ([`cut`]).
    Parts,
}

impl Placing {
    /// Sets the placement of the built network `net` (parts cuts its
    /// graph as built so far).
    pub fn apply(self, net: &mut Net) {
        let p = self.resolve(&net.graph(), net.ranks(), net.workers());
        net.placement(p);
    }

    /// The placement for a network of graph `g` over `ranks` × `workers`.
    pub fn resolve(self, g: &NetGraph, ranks: usize, workers: usize) -> Placement {
        match self {
            Placing::Given(p) => p,
            Placing::Parts => Placement::Table(cut(g, ranks, workers)),
        }
    }
}

/// Sets `placing` on `net` when one is given (else the network keeps its
/// own placement).
pub fn apply(net: &mut Net, placing: Option<Placing>) {
    if let Some(p) = placing {
        p.apply(net);
    }
}

/// The `parts` table of `g` over `ranks` × `workers` (see the module
/// documentation).
pub fn cut(g: &NetGraph, ranks: usize, workers: usize) -> RankTable {
    let places = ranks * workers;
    // One node per name: its weight, its pin, and the global worker the
    // contiguous blocks give its first task (free tasks in spawn order).
    let mut node_of_name: BTreeMap<&str, usize> = BTreeMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    let mut pinned: Vec<Option<(usize, usize)>> = Vec::new();
    let mut block: Vec<usize> = Vec::new();
    let free = g.pinned.iter().filter(|p| p.is_none()).count().max(1);
    let mut nth_free = 0;
    let node_of: Vec<usize> = g
        .tasks
        .iter()
        .zip(&g.pinned)
        .map(|(name, pin)| {
            let gw = match pin {
                Some((r, w)) => r * workers + w,
                None => {
                    nth_free += 1;
                    (nth_free - 1) * places / free
                }
            };
            let k = *node_of_name.entry(name).or_insert_with(|| {
                names.push(name);
                weights.push(0);
                pinned.push(None);
                block.push(gw);
                names.len() - 1
            });
            weights[k] += TASK_WEIGHT;
            if pin.is_some() {
                pinned[k] = *pin;
            }
            k
        })
        .collect();
    let edges: Vec<(usize, usize, u64)> = g
        .streams
        .iter()
        .map(|&(w, r)| (node_of[w], node_of[r], 1))
        .collect();
    // Step 2: ranks, from the blocks' ranks.
    let rank_of = partition_from_within(
        &PartGraph {
            weights: weights.clone(),
            edges: edges.clone(),
            pinned: pinned.iter().map(|p| p.map(|p| p.0)).collect(),
        },
        ranks,
        CROSSING,
        &block.iter().map(|gw| gw / workers).collect::<Vec<_>>(),
        CUT_TOLERANCE,
    );
    // Step 3: workers within each rank, from the blocks' workers.
    let mut table = RankTable::new();
    for r in 0..ranks {
        let members: Vec<usize> = (0..names.len()).filter(|&k| rank_of[k] == r).collect();
        let local: BTreeMap<usize, usize> =
            members.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        let sub = PartGraph {
            weights: members.iter().map(|&k| weights[k]).collect(),
            edges: edges
                .iter()
                .filter_map(|&(a, b, w)| Some((*local.get(&a)?, *local.get(&b)?, w)))
                .collect(),
            pinned: members.iter().map(|&k| pinned[k].map(|p| p.1)).collect(),
        };
        let start: Vec<usize> = members.iter().map(|&k| block[k] % workers).collect();
        let part = partition_from_within(&sub, workers, CROSSING, &start, CUT_TOLERANCE);
        for (i, &k) in members.iter().enumerate() {
            table = table.with(names[k], r, part[i]);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(tasks: &[&str], streams: &[(usize, usize)]) -> NetGraph {
        NetGraph {
            tasks: tasks.iter().map(|t| t.to_string()).collect(),
            pinned: vec![None; tasks.len()],
            streams: streams.to_vec(),
        }
    }

    fn places(t: &RankTable, g: &NetGraph) -> Vec<(usize, usize)> {
        g.tasks.iter().map(|n| t.lookup(n).unwrap()).collect()
    }

    #[test]
    fn a_chain_is_cut_into_contiguous_blocks() {
        let names: Vec<String> = (0..12).map(|i| format!("s/{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let streams: Vec<(usize, usize)> = (0..11).map(|i| (i, i + 1)).collect();
        let g = graph(&refs, &streams);
        let p = places(&cut(&g, 2, 2), &g);
        let cuts = p.windows(2).filter(|w| w[0] != w[1]).count();
        assert_eq!(cuts, 3, "{p:?}");
        for r in 0..2 {
            assert_eq!(p.iter().filter(|x| x.0 == r).count(), 6, "{p:?}");
        }
    }

    #[test]
    fn pipelines_stay_whole_and_pins_hold() {
        // split, three pipelines of four stages, collect: on 3 ranks each
        // pipeline on one rank.
        let mut tasks = vec!["split".to_string()];
        let mut streams = Vec::new();
        for i in 0..3 {
            for s in 0..4 {
                tasks.push(format!("p/{i}/{s}"));
                let me = tasks.len() - 1;
                streams.push((if s == 0 { 0 } else { me - 1 }, me));
            }
        }
        tasks.push("collect".into());
        let last = tasks.len() - 1;
        for i in 0..3 {
            streams.push((4 * i + 4, last));
        }
        let refs: Vec<&str> = tasks.iter().map(String::as_str).collect();
        let mut g = graph(&refs, &streams);
        let t = cut(&g, 3, 1);
        for i in 0..3 {
            let r = t.lookup(&format!("p/{i}/0")).unwrap().0;
            for s in 1..4 {
                assert_eq!(t.lookup(&format!("p/{i}/{s}")).unwrap().0, r, "{t:?}");
            }
        }
        g.pinned[last] = Some((2, 0));
        assert_eq!(cut(&g, 3, 1).lookup("collect"), Some((2, 0)));
    }
}
