//! Where a trace shows every period and where it merges them: the window
//! is cut into equal buckets, the periods starting in each are counted, and
//! the sparsest buckets are shown in full detail up to a budget of periods.
//!
//! The threshold is a power of two: a bucket is *detailed* when it holds at
//! most `2^k` periods, `k` the largest for which the detailed buckets hold
//! at most `budget` periods in all (every bucket when the whole window
//! fits). A power of two rather than the exact cut keeps a run of evenly
//! dense buckets on one side instead of detailing a scattered few that
//! happen to hold a period less than their neighbours.

use crate::activity::Grid;
use crate::load::{parallel, RunLog};
use crate::scan::Item;

/// Which buckets of the window are detailed.
#[derive(Clone, Debug)]
pub(crate) struct DetailPlan {
    /// The window `[lo, hi]` (ticks) and its buckets.
    pub grid: Grid,
    /// Periods starting in each bucket (all workers).
    pub counts: Vec<u32>,
    /// Whether each bucket is shown in full detail.
    pub detailed: Vec<bool>,
    /// The most periods a detailed bucket holds; `None` when every bucket
    /// is detailed.
    pub threshold: Option<u64>,
    /// Periods starting in the window.
    pub periods: u64,
}

/// Counts the periods starting in each of `grid`'s buckets, one thread per
/// log, and picks the detailed buckets for `budget` periods.
pub(crate) fn plan_detail(run: &RunLog, grid: Grid, budget: u64) -> DetailPlan {
    let end = grid.t0 + grid.span;
    let per_worker = parallel(&run.workers, run.workers.len(), |w| {
        let mut counts = vec![0u32; grid.n];
        let mut sc = w.scanner();
        while let Some(item) = sc.next() {
            if let Item::Period(p) = item {
                if p.start >= grid.t0 && p.start <= end {
                    let c = &mut counts[grid.index(p.start)];
                    *c = c.saturating_add(1);
                }
            }
        }
        Ok(counts)
    })
    .unwrap_or_default();
    let mut counts = vec![0u32; grid.n];
    for w in &per_worker {
        for (c, &v) in counts.iter_mut().zip(w) {
            *c = c.saturating_add(v);
        }
    }
    choose(grid, counts, budget)
}

/// The plan for the given counts (see the module documentation).
pub(crate) fn choose(grid: Grid, counts: Vec<u32>, budget: u64) -> DetailPlan {
    let periods: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if periods <= budget {
        return DetailPlan {
            grid,
            detailed: vec![true; counts.len()],
            counts,
            threshold: None,
            periods,
        };
    }
    // Periods in buckets of each class k: counts in (2^(k-1), 2^k].
    let class = |c: u32| {
        if c <= 1 {
            0
        } else {
            32 - (c - 1).leading_zeros()
        }
    };
    let mut by_class = [0u64; 33];
    for &c in &counts {
        by_class[class(c) as usize] += u64::from(c);
    }
    let mut k_max: Option<u32> = None;
    let mut sum = 0u64;
    for (k, &v) in by_class.iter().enumerate() {
        sum += v;
        if sum > budget {
            break;
        }
        k_max = Some(k as u32);
    }
    let (threshold, detailed): (u64, Vec<bool>) = match k_max {
        Some(k) => (1u64 << k, counts.iter().map(|&c| class(c) <= k).collect()),
        // Even buckets of one period exceed the budget: only empty ones.
        None => (0, counts.iter().map(|&c| c == 0).collect()),
    };
    DetailPlan {
        grid,
        counts,
        detailed,
        threshold: Some(threshold),
        periods,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize) -> Grid {
        Grid::new(0, 1000, n)
    }

    /// Periods in the detailed buckets.
    fn detailed_periods(p: &DetailPlan) -> u64 {
        p.counts
            .iter()
            .zip(&p.detailed)
            .filter(|(_, &d)| d)
            .map(|(&c, _)| u64::from(c))
            .sum()
    }

    #[test]
    fn everything_detailed_when_it_fits() {
        let p = choose(grid(4), vec![3, 0, 5, 2], 10);
        assert_eq!(p.threshold, None);
        assert_eq!(p.detailed, [true; 4]);
        assert_eq!((p.periods, detailed_periods(&p)), (10, 10));
    }

    #[test]
    fn the_sparsest_buckets_up_to_the_budget() {
        // Classes: 1 -> 0, 2 -> 1, 3,4 -> 2, 5..8 -> 3, 100 -> 7.
        let p = choose(grid(6), vec![1, 2, 4, 3, 8, 100], 12);
        // Up to class 2: 1 + 2 + 4 + 3 = 10 <= 12; class 3 adds 8 -> 18.
        assert_eq!(p.threshold, Some(4));
        assert_eq!(p.detailed, [true, true, true, true, false, false]);
        assert_eq!((p.periods, detailed_periods(&p)), (118, 10));
    }

    #[test]
    fn evenly_dense_buckets_stay_together() {
        // 99 and 100 are one class: both merged, not a scattered few.
        let counts: Vec<u32> = (0..50).map(|i| if i % 2 == 0 { 100 } else { 99 }).collect();
        let p = choose(grid(50), counts, 3000);
        assert!(p.detailed.iter().all(|&d| !d));
        assert_eq!(detailed_periods(&p), 0);
    }

    #[test]
    fn a_tiny_budget_details_only_the_emptiest_buckets() {
        // Classes up to 2 (at most 4 periods) hold none: the threshold is 4.
        let p = choose(grid(3), vec![0, 5, 7], 1);
        assert_eq!(p.threshold, Some(4));
        assert_eq!(p.detailed, [true, false, false]);
        let p = choose(grid(3), vec![1, 1, 7], 1);
        assert_eq!(p.threshold, Some(0), "two single periods exceed 1");
        assert_eq!(p.detailed, [false, false, false]);
    }
}
