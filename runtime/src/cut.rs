//! The adaptive mapping's cut of the tasks added before the run into W
//! blocks, one a worker (`mapper.rs`; when the blocks start:
//! `worker/plan.rs`).
//!
//! What the runtime knows of those tasks before the first dispatch is the
//! order they were added in and, for those added with
//! `Runtime::spawn_with`, the stream ends each was handed. Those ends make
//! a graph: a stream whose writer and reader were both handed to tasks
//! the cut places is an edge from the writer to the reader. The cut:
//!
//! 1. Weighs each task by its ends (at least 1): a splitter with four
//!    outputs and an input weighs 5, a stage of a chain 2, a task added
//!    with plain `spawn` 1. Ends are the only sign of work there is before
//!    a task runs; a stage's work per message is not known.
//! 2. Orders the tasks along the graph: a depth-first topological order
//!    (Kahn's algorithm with a stack), from the sources (tasks with no
//!    input from another placed task) in the order they were added, each
//!    task's outputs in the order it was handed them. A chain comes out
//!    whole, in flow order, whatever order its stages were added in; the
//!    lanes of a splitter come out one after the other (each lane whole);
//!    the branches of a fan come out side by side, their join after the
//!    last of them. A cycle (a ring) is entered at its first-added task
//!    when nothing else is ready. Tasks with no edges keep the order they
//!    were added in.
//! 3. Cuts that order into W contiguous blocks by weight: the task whose
//!    weight spans [S_j, S_j + w_j) of the total S goes to the block its
//!    middle falls in, ⌊W·(S_j + w_j/2)/S⌋ (a task split evenly by a
//!    block's edge goes to the later block), kept so that no block is
//!    empty when there are at least W tasks (and no two tasks share one
//!    when there are fewer). A chain is cut at most W-1 times.
//! 4. Moves each block's edge, in turn, where fewer streams cross: to the
//!    position the fewest streams cross, when that is strictly fewer than
//!    at the edge step 3 chose, among the positions that keep the blocks
//!    on both sides non-empty and the edge within S/(8W) of its share of
//!    the weight (k·S/W for block k's). Two chains and their sink: the edge
//!    goes between the chains, not one task into the second.
//!
//! With no ends known (every task added with plain `spawn`) the order is
//! the spawn order and the cut is by count: task k of n on block
//! ⌊k·W/n⌋, its start rather than its middle, so that a program that
//! hands no ends over keeps the blocks it was measured with (the middle
//! task of an odd count stays on the earlier block). The cost is linear in
//! the tasks and ends, with one hash map of the streams; the result
//! depends on nothing but the order and the ends.

use std::collections::HashMap;

use crate::vocab::Side;

/// The block (`0..workers`) of each task the cut places, given the ends
/// each was handed (stream id and side), in the order they were added.
pub(crate) fn blocks(ends: &[&[(u64, Side)]], workers: usize) -> Vec<usize> {
    let n = ends.len();
    let w = workers.max(1);
    if n == 0 {
        return Vec::new();
    }
    let known = ends.iter().any(|e| !e.is_empty());
    let weight: Vec<u64> = ends.iter().map(|e| e.len().max(1) as u64).collect();
    let out = edges(ends);
    let order = flow_order(&out);
    let total: u64 = weight.iter().sum();
    // The block of each position in the order.
    let mut at_pos = Vec::with_capacity(n);
    // Twice the weight before the task in the order.
    let mut before2 = 0u64;
    // The block of the previous task in the order (none before the first).
    let mut prev: Option<usize> = None;
    for (j, &t) in order.iter().enumerate() {
        let at = if known { before2 + weight[t] } else { before2 };
        // W·2S fits: S is at most the ends handed over (bounded by
        // memory) or n, and W at most MAX_WORKERS.
        let raw = (w as u128 * at as u128 / (2 * total) as u128) as usize;
        // Room for the blocks after this one: one task each at least.
        let left = n - j;
        let (lo, hi) = if n >= w {
            (
                prev.unwrap_or(0).max(w.saturating_sub(left)),
                prev.map_or(0, |p| p + 1),
            )
        } else {
            (prev.map_or(0, |p| p + 1), w - left)
        };
        let b = raw.clamp(lo, hi);
        at_pos.push(b);
        prev = Some(b);
        before2 += 2 * weight[t];
    }
    if n > w {
        let weights: Vec<u64> = order.iter().map(|&t| weight[t]).collect();
        fewer_crossings(&mut at_pos, &order, &out, &weights, w);
    }
    let mut block = vec![0; n];
    for (j, &t) in order.iter().enumerate() {
        block[t] = at_pos[j];
    }
    block
}

/// Step 3's edges moved where fewer streams cross: each block's first
/// position, in turn, moves to the position that the fewest streams cross
/// (strictly fewer than where it is) among those that keep the blocks on
/// both sides non-empty and the edge within S/(8W) of its share of the
/// weight (k·S/W for block k). `at_pos` is the block of each position in
/// the order, each block non-empty; `weights` the weight of each position.
fn fewer_crossings(
    at_pos: &mut [usize],
    order: &[usize],
    out: &[Vec<usize>],
    weights: &[u64],
    w: usize,
) {
    let n = order.len();
    let mut pos = vec![0; n];
    for (j, &t) in order.iter().enumerate() {
        pos[t] = j;
    }
    // crosses[p]: the streams between a task before position p and one at
    // or after it, by a difference array over the edges.
    let mut diff = vec![0i64; n + 1];
    for (t, outs) in out.iter().enumerate() {
        for &r in outs {
            let (a, b) = (pos[t].min(pos[r]), pos[t].max(pos[r]));
            diff[a + 1] += 1;
            diff[b + 1] -= 1;
        }
    }
    let mut crosses = vec![0i64; n + 1];
    for p in 1..=n {
        crosses[p] = crosses[p - 1] + diff[p];
    }
    if crosses.iter().all(|&c| c == 0) {
        return;
    }
    // prefix[p]: the weight of the positions before p.
    let mut prefix = vec![0u64; n + 1];
    for p in 0..n {
        prefix[p + 1] = prefix[p] + weights[p];
    }
    let total = prefix[n] as i128;
    // first[k]: block k's first position; first[w] = n.
    let mut first = vec![n; w + 1];
    for (j, &b) in at_pos.iter().enumerate().rev() {
        first[b] = j;
    }
    for k in 1..w {
        // |W·prefix - k·S| ≤ S/8, in whole numbers.
        let near = |p: usize| {
            let off = (w as i128 * prefix[p] as i128 - k as i128 * total).abs();
            (8 * off <= total).then_some(off)
        };
        let mut best = (crosses[first[k]], 0i128, first[k]);
        for p in first[k - 1] + 1..first[k + 1] {
            if let Some(off) = near(p) {
                if crosses[p] < crosses[first[k]] && (crosses[p], off, p) < best {
                    best = (crosses[p], off, p);
                }
            }
        }
        first[k] = best.2;
    }
    for k in 0..w {
        for b in &mut at_pos[first[k]..first[k + 1]] {
            *b = k;
        }
    }
}

/// The edges writer → reader between these tasks: each task's outputs, in
/// the order it was handed them.
fn edges(ends: &[&[(u64, Side)]]) -> Vec<Vec<usize>> {
    let n = ends.len();
    // The reader of each stream among these tasks.
    let mut reader: HashMap<u64, usize> = HashMap::new();
    for (t, e) in ends.iter().enumerate() {
        for &(id, side) in e.iter() {
            if side == Side::Reader {
                reader.insert(id, t);
            }
        }
    }
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    if !reader.is_empty() {
        for (t, e) in ends.iter().enumerate() {
            for &(id, side) in e.iter() {
                match (side, reader.get(&id)) {
                    (Side::Writer, Some(&r)) if r != t => out[t].push(r),
                    _ => {}
                }
            }
        }
    }
    out
}

/// The tasks in flow order (see the module doc, step 2), given each
/// task's outputs: indexes into `out`.
fn flow_order(out: &[Vec<usize>]) -> Vec<usize> {
    let n = out.len();
    let mut inputs = vec![0usize; n];
    for outs in out {
        for &r in outs {
            inputs[r] += 1;
        }
    }
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    // The sources, the first added on top.
    let mut stack: Vec<usize> = (0..n).rev().filter(|&t| inputs[t] == 0).collect();
    // The first task not yet placed: where a cycle is entered.
    let mut first_left = 0;
    while order.len() < n {
        let t = match stack.pop() {
            Some(t) if placed[t] => continue,
            Some(t) => t,
            None => {
                while placed[first_left] {
                    first_left += 1;
                }
                first_left
            }
        };
        placed[t] = true;
        order.push(t);
        // The outputs that have all their inputs placed now, the first
        // added on top.
        let ready_from = stack.len();
        for &r in &out[t] {
            inputs[r] -= 1;
            if inputs[r] == 0 && !placed[r] {
                stack.push(r);
            }
        }
        stack[ready_from..].reverse();
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use Side::{Reader as R, Writer as W};

    fn cut(tasks: &[Vec<(u64, Side)>], workers: usize) -> Vec<usize> {
        let refs: Vec<&[(u64, Side)]> = tasks.iter().map(|t| t.as_slice()).collect();
        blocks(&refs, workers)
    }

    /// Streams (by id) that join tasks in different blocks.
    fn crossing(tasks: &[Vec<(u64, Side)>], b: &[usize]) -> usize {
        let mut at: HashMap<u64, Vec<usize>> = HashMap::new();
        for (t, e) in tasks.iter().enumerate() {
            for &(id, _) in e {
                at.entry(id).or_default().push(b[t]);
            }
        }
        at.values().filter(|v| v.len() == 2 && v[0] != v[1]).count()
    }

    /// A chain of `n` tasks: stream k from task k to task k+1.
    fn chain(n: usize) -> Vec<Vec<(u64, Side)>> {
        (0..n)
            .map(|k| {
                let mut e = Vec::new();
                if k > 0 {
                    e.push((k as u64 - 1, R));
                }
                if k + 1 < n {
                    e.push((k as u64, W));
                }
                e
            })
            .collect()
    }

    /// With no ends known, the cut is by count in spawn order: task k of
    /// n on block k·W/n.
    #[test]
    fn tasks_without_ends_are_cut_by_count() {
        for (n, w) in [(7, 3), (7, 2), (2, 4), (1, 2), (100, 2), (5, 5)] {
            let b = cut(&vec![Vec::new(); n], w);
            let by_count: Vec<usize> = (0..n).map(|k| k * w / n).collect();
            assert_eq!(b, by_count, "{n} tasks, {w} workers");
        }
        assert!(cut(&[], 2).is_empty());
    }

    /// A set of tasks that share no stream uses every worker.
    #[test]
    fn isolated_tasks_use_every_worker() {
        for w in 1..=8 {
            for n in w..3 * w {
                // Uneven weights: stream ends to streams outside the set.
                let tasks: Vec<Vec<(u64, Side)>> = (0..n)
                    .map(|k| {
                        (0..(k * 7 % 5))
                            .map(|i| (1000 + 10 * k as u64 + i as u64, W))
                            .collect()
                    })
                    .collect();
                let b = cut(&tasks, w);
                let mut used = vec![false; w];
                b.iter().for_each(|&x| used[x] = true);
                assert!(used.iter().all(|&u| u), "{n} tasks, {w} workers: {b:?}");
            }
        }
    }

    /// A chain handed over whole is cut at most W-1 times, in any order of
    /// spawning, into parts within a stage of even.
    #[test]
    fn a_chain_is_cut_at_most_w_minus_1_times() {
        for w in 1..=4 {
            let tasks = chain(20);
            let b = cut(&tasks, w);
            assert!(crossing(&tasks, &b) < w, "{w}: {b:?}");
            let mut size = vec![0; w];
            b.iter().for_each(|&x| size[x] += 1);
            assert!(
                size.iter().all(|&s| s >= 20 / w - 1 && s <= 20 / w + 1),
                "{size:?}"
            );
            // Added backwards (consumers first), or shuffled.
            let mut perm: Vec<usize> = (0..20).rev().collect();
            perm.swap(3, 11);
            perm.swap(0, 7);
            let shuffled: Vec<_> = perm.iter().map(|&k| tasks[k].clone()).collect();
            let b = cut(&shuffled, w);
            assert!(crossing(&shuffled, &b) < w, "shuffled, {w}: {b:?}");
        }
    }

    /// A ring is cut at most W times (a cut of a cycle crosses twice).
    #[test]
    fn a_ring_is_cut_into_arcs() {
        let n = 12u64;
        let tasks: Vec<Vec<(u64, Side)>> =
            (0..n).map(|k| vec![((k + n - 1) % n, R), (k, W)]).collect();
        for w in 1..=4 {
            let b = cut(&tasks, w);
            let c = crossing(&tasks, &b);
            assert!(c <= w.max(2) && (w == 1 || c >= 2), "{w}: {b:?}");
        }
    }

    /// The word count's network: source → split → counters 0..3 → merge.
    /// The splitter, with its five ends, weighs two and a half counters:
    /// on 2 workers it goes with the source and the first counter, the
    /// other counters with the merger, whatever the order of spawning.
    #[test]
    fn a_fan_out_and_in_is_cut_by_weight_with_its_fan_whole_in_order() {
        let k = 4u64;
        // Stream 0: source → split; 1..=k: split → counter; k+1..: counter → merge.
        let mut tasks = vec![vec![(0, W)], {
            let mut e = vec![(0, R)];
            e.extend((1..=k).map(|c| (c, W)));
            e
        }];
        tasks.extend((1..=k).map(|c| vec![(c, R), (k + c, W)]));
        tasks.push((1..=k).map(|c| (k + c, R)).collect());
        assert_eq!(cut(&tasks, 2), vec![0, 0, 0, 1, 1, 1, 1]);
        // The merger and the counters added first: the same blocks.
        let mut rev = tasks.clone();
        rev.reverse();
        let mut b = cut(&rev, 2);
        b.reverse();
        assert_eq!(b, vec![0, 0, 0, 1, 1, 1, 1]);
        // On 3 workers: source and splitter; three counters; the last
        // counter and the merger.
        assert_eq!(cut(&tasks, 3), vec![0, 0, 1, 1, 1, 2, 2]);
        // Every block between a third and two thirds of even.
        for w in 1..=4 {
            let b = cut(&tasks, w);
            let mut weight = vec![0; w];
            for (t, &x) in b.iter().enumerate() {
                weight[x] += tasks[t].len();
            }
            let even = 18 / w;
            assert!(
                weight.iter().all(|&s| s * 3 >= even && s * 3 <= 5 * even),
                "{w}: {weight:?}"
            );
        }
    }

    /// Two chains of a source and 6 relays, and a sink added first that
    /// reads both: the edge goes between the chains, where step 3 alone
    /// put the second chain's source on the first one's block (its weight
    /// of 1 lies before the middle).
    #[test]
    fn a_block_edge_moves_where_fewer_streams_cross() {
        // Sink (0) reads 100 and 200; chain c: source, then relays reading
        // c00+i and writing c00+i+1, the last writing c00.
        let mut tasks = vec![vec![(100, R), (200, R)]];
        for c in [100u64, 200] {
            tasks.push(vec![(c + 1, W)]);
            for i in 1..=6 {
                let to = if i == 6 { c } else { c + i + 1 };
                tasks.push(vec![(c + i, R), (to, W)]);
            }
        }
        let b = cut(&tasks, 2);
        assert_eq!(b[1..8], [0; 7], "{b:?}");
        assert_eq!(b[8..15], [1; 7], "{b:?}");
        assert_eq!(crossing(&tasks, &b), 1);
    }

    /// Two lanes from a splitter to a collector: each lane whole, one a
    /// worker.
    #[test]
    fn parallel_lanes_stay_whole() {
        // split (0) → lane a: 1 → 2 → 3 → collect (7); lane b: 4 → 5 → 6 → collect.
        // Streams: 10: split→1, 11: 1→2, 12: 2→3, 13: 3→collect,
        //          20: split→4, 21: 4→5, 22: 5→6, 23: 6→collect.
        let tasks = vec![
            vec![(10, W), (20, W)],
            vec![(10, R), (11, W)],
            vec![(11, R), (12, W)],
            vec![(12, R), (13, W)],
            vec![(20, R), (21, W)],
            vec![(21, R), (22, W)],
            vec![(22, R), (23, W)],
            vec![(13, R), (23, R)],
        ];
        let b = cut(&tasks, 2);
        assert_eq!(crossing(&tasks, &b), 2, "{b:?}");
        assert_eq!(b[1..4], [0, 0, 0]);
        assert_eq!(b[4..7], [1, 1, 1]);
        // Lane b added before lane a, the collector before both: the same.
        let perm = [7, 0, 4, 5, 6, 1, 2, 3];
        let shuffled: Vec<_> = perm.iter().map(|&k| tasks[k].clone()).collect();
        let b = cut(&shuffled, 2);
        assert_eq!(crossing(&shuffled, &b), 2, "{b:?}");
    }
}
