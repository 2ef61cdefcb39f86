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

use crate::load::model::RunLog;

use crate::load::pool::parallel;
use crate::replay::grid::Near;

/// The window `[t0, t0 + span]` (ticks) cut into `n` buckets of `width`
/// ticks (the last one shorter): `width = ceil(span / asked)`, so `n` is at
/// most the number asked for. A bucket is found by a multiplication with
/// the width's reciprocal, corrected by a comparison: it is looked up a few
/// times per period.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buckets {
    pub t0: u64,
    pub span: u64,
    pub width: u64,
    pub n: usize,
    inv: f64,
}

impl Buckets {
    pub fn new(t0: u64, t1: u64, asked: usize) -> Self {
        let span = t1.saturating_sub(t0);
        let asked = asked.max(1) as u64;
        let width = span.div_ceil(asked).max(1);
        let n = span.div_ceil(width).max(1) as usize;
        Buckets {
            t0,
            span,
            width,
            n,
            inv: 1.0 / width as f64,
        }
    }

    /// The bucket holding `t` (clamped to the window).
    #[inline]
    pub fn index(&self, t: u64) -> usize {
        let d = t.saturating_sub(self.t0).min(self.span);
        // The float estimate is off by at most one for any u64.
        let mut i = ((d as f64 * self.inv) as u64).min(self.n as u64 - 1);
        let at = i.saturating_mul(self.width);
        if at > d {
            i -= 1;
        } else if i + 1 < self.n as u64 && at.saturating_add(self.width) <= d {
            i += 1;
        }
        i as usize
    }

    /// [`index`](Self::index), with `near` the bucket found last: a time
    /// inside it needs no search.
    #[inline]
    pub fn index_near(&self, near: &std::cell::Cell<Near>, t: u64) -> usize {
        let n = near.get();
        if n.holds(t, t) && t < n.hi() {
            return n.i;
        }
        let i = self.index(t);
        near.set(Near::new(self.start(i), self.start(i + 1), i));
        i
    }

    /// Where bucket `i` starts (`i == n`: the window's end).
    pub fn start(&self, i: usize) -> u64 {
        self.t0 + (i as u64).saturating_mul(self.width).min(self.span)
    }

    /// Hands `f` the overlap (ticks) of `[a, b)` with each bucket it meets.
    #[inline]
    pub fn split(&self, a: u64, b: u64, mut f: impl FnMut(usize, u64)) {
        let end = self.t0 + self.span;
        let (a, b) = (a.clamp(self.t0, end), b.clamp(self.t0, end));
        if b <= a {
            return;
        }
        let mut i = self.index(a);
        let mut at = a;
        loop {
            let next = self.start(i + 1);
            if b <= next || i + 1 >= self.n {
                f(i, b - at);
                return;
            }
            f(i, next - at);
            at = next;
            i += 1;
        }
    }

    /// [`split`](Self::split), with `near` the bucket met last (see
    /// [`Grid::split_near`](crate::replay::grid::Grid::split_near)).
    #[inline]
    pub fn split_near(&self, near: &mut Near, a: u64, b: u64, f: impl FnMut(usize, u64)) {
        near.split(
            a,
            b,
            f,
            |g| self.split(a, b, g),
            |i| (self.start(i), self.start(i + 1)),
        );
    }
}

/// Which buckets of the window are detailed.
#[derive(Clone, Debug)]
pub(crate) struct DetailPlan {
    /// The window `[lo, hi]` (ticks) and its buckets.
    pub grid: Buckets,
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
///
/// A log's chunks (`load/chunks.rs`) whose starts all fall in one bucket are
/// counted whole; only those that straddle a bucket's edge (or the
/// window's) are decoded, so the count reads a small part of a long run's
/// logs.
pub(crate) fn plan_detail(run: &RunLog, grid: Buckets, budget: u64) -> DetailPlan {
    let end = grid.t0 + grid.span;
    let per_worker = parallel(&run.workers, run.workers.len(), |w| {
        let mut counts = vec![0u64; grid.n];
        w.count_starts(&mut counts, |t| {
            (t >= grid.t0 && t <= end).then(|| grid.index(t))
        });
        Ok(counts)
    })
    .unwrap_or_default();
    let mut counts = vec![0u32; grid.n];
    for w in &per_worker {
        for (c, &v) in counts.iter_mut().zip(w) {
            *c = c.saturating_add(u32::try_from(v).unwrap_or(u32::MAX));
        }
    }
    choose(grid, counts, budget)
}

/// The plan for the given counts (see the module documentation).
pub(crate) fn choose(grid: Buckets, counts: Vec<u32>, budget: u64) -> DetailPlan {
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
    use crate::load::scan::Item;

    /// Counting by chunks gives what a decode of every period gives, for
    /// grids whose edges cut chunks anywhere, windows that cut the run, and
    /// a log whose starts go back in time now and then.
    #[test]
    fn chunks_count_what_a_full_decode_counts() {
        let (_dir, run) = crate::replay::chunky_logs::run();
        // Every period decoded.
        let count_from =
            |counts: &mut [u32], g: &Buckets, w: &crate::load::worker_log::WorkerLog| {
                let mut sc = w.scanner();
                while let Some(item) = sc.next() {
                    if let Item::Period(p) = item {
                        if p.start >= g.t0 && p.start <= g.t0 + g.span {
                            counts[g.index(p.start)] += 1;
                        }
                    }
                }
            };
        for (lo, hi, n) in [
            (0, 40_000, 1),
            (0, 40_000, 7),
            (0, 40_000, 10_000),
            (5_000, 9_999, 13),
            (1, 36_000, 333),
        ] {
            let g = Buckets::new(lo, hi, n);
            let mut want = vec![0u32; g.n];
            for w in &run.workers {
                count_from(&mut want, &g, w);
            }
            let plan = plan_detail(&run, g, 1000);
            assert_eq!(plan.counts, want, "[{lo}, {hi}] in {n}");
        }
    }

    fn grid(n: usize) -> Buckets {
        Buckets::new(0, 1000, n)
    }

    proptest::proptest! {
        /// The bucket remembered changes no lookup, whatever came before.
        #[test]
        fn index_near_finds_what_index_finds(
            t0 in 0u64..50,
            span in 0u64..200,
            n in 1usize..9,
            ts in proptest::collection::vec(0u64..300, 1..40),
        ) {
            let g = Buckets::new(t0, t0 + span, n);
            let near = std::cell::Cell::new(Near::default());
            for t in ts {
                proptest::prop_assert_eq!(g.index_near(&near, t), g.index(t), "t {}", t);
            }
        }
    }

    #[test]
    fn buckets_split_exactly() {
        let g = Buckets::new(100, 110, 3);
        assert_eq!((g.width, g.n), (4, 3));
        assert_eq!(
            (g.start(0), g.start(1), g.start(2), g.start(3)),
            (100, 104, 108, 110)
        );
        let mut got = Vec::new();
        g.split(101, 109, |w, t| got.push((w, t)));
        assert_eq!(got, [(0, 3), (1, 4), (2, 1)]);
        let mut total = 0;
        g.split(0, u64::MAX, |_, t| total += t);
        assert_eq!(total, 10, "clamped to the window");
        for t in 100..=110 {
            let i = g.index(t);
            assert!(g.start(i) <= t && (t < g.start(i + 1) || t == 110), "{t}");
        }
        let mut got = Vec::new();
        g.split(104, 108, |w, t| got.push((w, t)));
        assert_eq!(got, [(1, 4)], "a bucket exactly");
        // Fewer buckets than asked when the span is short; never zero.
        assert_eq!(Buckets::new(0, 3, 10).n, 3);
        let empty = Buckets::new(5, 5, 4);
        assert_eq!((empty.n, empty.index(7)), (1, 0));
        empty.split(0, 10, |_, _| panic!("no time"));
        let huge = Buckets::new(0, u64::MAX, 7);
        assert_eq!(huge.n, 7);
        assert_eq!(huge.index(u64::MAX), 6);
        assert_eq!(huge.start(7), u64::MAX);
    }

    #[test]
    fn the_reciprocal_finds_the_bucket_of_the_division() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let t0 = next() >> (next() % 64);
            let span = next() >> (next() % 64);
            let asked = (next() % 100_000 + 1) as usize;
            let b = Buckets::new(t0, t0.saturating_add(span), asked);
            for _ in 0..20 {
                let d = next() % (b.span + 1).max(1);
                let want = ((d / b.width) as usize).min(b.n - 1);
                assert_eq!(b.index(b.t0 + d), want, "{b:?} {d}");
            }
            let last = b.t0 + b.span;
            assert_eq!(b.index(last), ((b.span / b.width) as usize).min(b.n - 1));
        }
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
