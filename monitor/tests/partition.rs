//! Properties of the partitioner behind `rill-mon map`.

use proptest::prelude::*;
use rill_monitor::{evaluate, partition, partition_from, partition_within, PartGraph};

/// A graph of `n` nodes with weights below `max_w` and random edges.
fn arb_graph() -> impl Strategy<Value = PartGraph> {
    (1usize..40, 0u64..1000).prop_flat_map(|(n, max_w)| {
        (
            prop::collection::vec(0..=max_w, n),
            prop::collection::vec((0..n, 0..n, 0u64..100), 0..(3 * n)),
        )
            .prop_map(|(weights, edges)| PartGraph {
                weights,
                edges,
                pinned: Vec::new(),
            })
    })
}

/// A permutation of `0..n`.
fn arb_perm(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<usize>>()).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
    ))]

    /// Refining a given mapping never makes it worse under the objective,
    /// and every node still gets a part below `parts`.
    #[test]
    fn refining_a_start_never_makes_it_worse(
        g in arb_graph(),
        parts in 1usize..6,
        cost in prop_oneof![Just(0.0), 0.0f64..50.0],
        seed in any::<u64>(),
    ) {
        let n = g.weights.len();
        let start: Vec<usize> = (0..n)
            .map(|v| (seed.rotate_left(v as u32 % 64) as usize ^ v) % parts)
            .collect();
        let p = partition_from(&g, parts, cost, &start);
        prop_assert_eq!(p.len(), n);
        prop_assert!(p.iter().all(|&x| x < parts));
        let before = evaluate(&g, &start, parts, cost).time;
        let after = evaluate(&g, &p, parts, cost).time;
        prop_assert!(after <= before + 1e-9 * before.abs().max(1.0), "{} > {}", after, before);
    }

    /// Step 4 (fewer crossings within a tolerance) only ever lowers the
    /// cut, costs at most the tolerance, and stays under a cap above step
    /// 3's result.
    #[test]
    fn trading_time_for_a_smaller_cut_stays_within_the_tolerance(
        g in arb_graph(),
        parts in 1usize..6,
        cost in prop_oneof![Just(0.0), 0.0f64..50.0],
        tol in 0.0f64..0.3,
        slack in 0.0f64..0.3,
    ) {
        let exact = partition_within(&g, parts, cost, 0.0, f64::INFINITY);
        let e0 = evaluate(&g, &exact, parts, cost);
        let eps = 1e-9 * e0.time.abs().max(1.0);
        let loose = partition_within(&g, parts, cost, tol, f64::INFINITY);
        let e1 = evaluate(&g, &loose, parts, cost);
        prop_assert!(e1.cut <= e0.cut, "{:?} against {:?}", e1, e0);
        prop_assert!(e1.time <= e0.time * (1.0 + tol) + eps, "{:?} against {:?}", e1, e0);
        let cap = e0.time * (1.0 + slack);
        let capped = partition_within(&g, parts, cost, tol, cap);
        let e2 = evaluate(&g, &capped, parts, cost);
        prop_assert!(e2.time <= cap + eps && e2.cut <= e0.cut, "{:?} cap {}", e2, cap);
    }

    /// Every node gets a part below `parts`, and no part's weight exceeds
    /// the average plus the largest node weight.
    #[test]
    fn balanced_and_complete(g in arb_graph(), parts in 1usize..9, cost in prop_oneof![Just(0.0), 0.0f64..50.0]) {
        let p = partition(&g, parts, cost);
        prop_assert_eq!(p.len(), g.weights.len());
        prop_assert!(p.iter().all(|&x| x < parts));
        let e = evaluate(&g, &p, parts, cost);
        let total: u128 = g.weights.iter().map(|&w| u128::from(w)).sum();
        let largest = u128::from(g.weights.iter().copied().max().unwrap_or(0));
        for &l in &e.loads {
            // l ≤ total / parts + largest, in integers.
            prop_assert!(u128::from(l) * parts as u128 <= total + parts as u128 * largest,
                "load {} of {:?}, total {}, largest {}", l, e.loads, total, largest);
        }
        if parts == 1 {
            prop_assert_eq!(e.cut, 0);
        }
    }

    /// A chain of `k · parts` equal nodes, numbered in any order, is cut
    /// into `parts` contiguous runs of `k` when a crossing costs less than
    /// a quarter of a node's work (when it costs more, fewer, longer runs
    /// are faster, and the partitioner rightly prefers them).
    #[test]
    fn chains_stay_together(
        (parts, k, perm) in (1usize..7, 1usize..8)
            .prop_flat_map(|(parts, k)| (Just(parts), Just(k), arb_perm(parts * k))),
        w in 1u64..1000,
        ew in 1u64..1000,
        f in prop_oneof![Just(0.0), 0.0f64..0.25],
    ) {
        let n = parts * k;
        let cost = f * w as f64 / ew as f64;
        // Position i of the chain is node perm[i].
        let g = PartGraph {
            weights: vec![w; n],
            edges: (1..n).map(|i| (perm[i - 1], perm[i], ew)).collect(),
            pinned: Vec::new(),
        };
        let p = partition(&g, parts, cost);
        let along: Vec<usize> = perm.iter().map(|&v| p[v]).collect();
        // Contiguous: the part changes exactly parts - 1 times along the chain.
        let changes = along.windows(2).filter(|x| x[0] != x[1]).count();
        prop_assert_eq!(changes, parts - 1, "{:?}", along);
        let e = evaluate(&g, &p, parts, 0.0);
        prop_assert!(e.loads.iter().all(|&l| l == w * k as u64), "{:?}", e.loads);
    }

    /// A ring is cut into arcs: at most `parts` cut edges when parts
    /// divides it evenly.
    #[test]
    fn rings_are_cut_into_arcs(parts in 1usize..6, k in 1usize..6) {
        let n = parts * k;
        let g = PartGraph {
            weights: vec![7; n],
            edges: (0..n).map(|i| (i, (i + 1) % n, 3)).collect(),
            pinned: Vec::new(),
        };
        let p = partition(&g, parts, 0.0);
        let e = evaluate(&g, &p, parts, 0.0);
        let cut_edges = if parts == 1 || n < 2 { 0 } else { parts.min(n) };
        prop_assert!(e.cut <= 3 * cut_edges as u64, "{:?} cut {}", p, e.cut);
    }
}

#[test]
fn pinned_nodes_keep_their_part_and_count() {
    let g = PartGraph {
        weights: vec![10, 10, 10, 10],
        edges: vec![(0, 1, 1), (1, 2, 1), (2, 3, 1)],
        pinned: vec![None, Some(1), None, None],
    };
    let p = partition(&g, 2, 0.0);
    assert_eq!(p[1], 1);
    let e = evaluate(&g, &p, 2, 0.0);
    assert_eq!(e.loads, [20, 20], "{p:?}");
}
