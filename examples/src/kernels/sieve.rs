//! The prime sieve's sequential side: the first `n` primes by the sieve of
//! Eratosthenes (what every concurrent sieve is checked against), the
//! comparison of a run's primes with them, the bound the generator counts
//! up to ([`limit`]), and how many numbers each filter of the concurrent
//! sieve reads (what a placement that balances the chain by work needs to
//! know, and what every run is checked against).
//!
//! The concurrent sieve itself (a generator, a chain of filters that grows
//! while it runs, a sink) is in [`crate::apps::sieve`] on rill and OS
//! threads and in [`crate::peers::sieve`] on tokio; what a filter does with
//! each number it reads is [`Filter::step`] on every engine, and what the
//! filters share is a [`Chain`].

use std::sync::atomic::{AtomicU64, Ordering};

/// Default number of primes `rill-bench sieve` finds.
pub const DEFAULT_PRIMES: usize = 2000;

/// The most primes a sieve may be asked for (the peers' sieve on OS threads
/// makes a thread per prime).
pub const MAX_PRIMES: usize = 1_000_000;

/// The number the concurrent sieve's generator counts up to for `n`
/// primes: the `n`-th prime at most, `n (ln n + ln ln n)` from `n = 6` on
/// (Rosser's bound), the `n`-th prime itself below.
pub fn limit(n: usize) -> u64 {
    const SMALL: [u64; 6] = [1, 2, 3, 5, 7, 11];
    if n < SMALL.len() {
        return SMALL[n];
    }
    let x = n as f64;
    (x * (x.ln() + x.ln().ln())).floor() as u64
}

/// The first `n` primes, in order: Eratosthenes over `2..=limit`, the limit
/// doubled until it holds `n` primes.
pub fn first_primes(n: usize) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let mut limit = 64usize;
    loop {
        let primes = primes_up_to(limit);
        if primes.len() >= n {
            return primes[..n].to_vec();
        }
        limit *= 2;
    }
}

/// Every prime in `2..=limit`.
pub fn primes_up_to(limit: usize) -> Vec<u64> {
    let mut composite = vec![false; limit + 1];
    let mut primes = Vec::new();
    for i in 2..=limit {
        if composite[i] {
            continue;
        }
        primes.push(i as u64);
        let mut m = i * i;
        while m <= limit {
            composite[m] = true;
            m += i;
        }
    }
    primes
}

/// Checks the primes a run found against the first `want.len()` primes:
/// the same count, and the same numbers in the same order. The error names
/// the first difference.
pub fn compare(got: &[u64], want: &[u64]) -> Result<(), String> {
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        return Err(format!(
            "prime {} (counting from 1) is {}, expected {}",
            i + 1,
            got[i],
            want[i]
        ));
    }
    if got.len() != want.len() {
        return Err(format!(
            "found {} primes, expected {}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

/// How many numbers filter `k` of the concurrent sieve reads, for each
/// `k`, when its generator counts from 2 to `limit` and the chain grows to
/// `primes.len()` filters: the numbers that no prime before `primes[k]`
/// divides (the filters before `k` passed them on). Filter `k` reads its
/// own prime first, so every count is at least 1; the last filter reads
/// every number that reaches the end of the chain.
///
/// `primes` must be the first primes in order (as [`first_primes`] gives),
/// and `limit` at least the last of them.
pub fn filter_reads(primes: &[u64], limit: u64) -> Vec<u64> {
    let n = primes.len();
    if n == 0 {
        return Vec::new();
    }
    let limit = limit as usize;
    // The index among `primes` of each number's smallest prime factor; a
    // number with none there reaches the last filter.
    let mut first = vec![(n - 1) as u32; limit + 1];
    for (k, &p) in primes.iter().enumerate().rev() {
        let mut m = p as usize;
        while m <= limit {
            first[m] = k as u32;
            m += p as usize;
        }
    }
    // reads[k] = #{x : first(x) >= k}: count each number at its index,
    // then sum from the end.
    let mut at = vec![0u64; n];
    for &k in &first[2..] {
        at[k as usize] += 1;
    }
    let mut reads = vec![0u64; n];
    let mut sum = 0;
    for k in (0..n).rev() {
        sum += at[k];
        reads[k] = sum;
    }
    reads
}

/// The numbers the concurrent sieve of `n` primes reads in all: every
/// filter's ([`filter_reads`] up to [`limit`]) and the sink's `n` primes.
pub fn messages(n: usize) -> u64 {
    let reads = filter_reads(&first_primes(n), limit(n));
    reads.iter().sum::<u64>() + n as u64
}

/// What every filter of a concurrent sieve shares: the size of the sieve,
/// the streams' capacity and the count of numbers the filters read.
#[derive(Debug)]
pub struct Chain {
    /// Primes to find: the filters the chain grows to.
    pub primes: usize,
    /// Bound of each stream.
    pub capacity: usize,
    reads: AtomicU64,
}

impl Chain {
    /// A chain of `primes` filters joined by streams of `capacity`.
    pub fn new(primes: usize, capacity: usize) -> Chain {
        Chain {
            primes,
            capacity,
            reads: AtomicU64::new(0),
        }
    }

    /// Filter `k` of the chain, before it has read anything.
    pub fn filter(&self, k: usize) -> Filter {
        Filter {
            last: k + 1 == self.primes,
            prime: None,
            reads: 0,
        }
    }

    /// Adds what a filter read, once it has ended.
    pub fn done(&self, f: &Filter) {
        self.reads.fetch_add(f.reads, Ordering::Relaxed);
    }

    /// The numbers the filters that have ended read, in all.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

/// One filter of the concurrent sieve, apart from its engine: what it does
/// with each number it reads ([`Filter::step`]). Its task reads numbers and
/// acts on the steps: it reports its prime to the sink, drops multiples,
/// and passes the rest to the next filter, spawning that filter when the
/// first number passes.
#[derive(Debug)]
pub struct Filter {
    /// The chain's last filter: it passes nothing on.
    last: bool,
    /// Its prime, once read.
    prime: Option<u64>,
    /// The numbers it read.
    reads: u64,
}

/// What a filter does with a number it read ([`Filter::step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The first number: it passed every filter before, so it is the
    /// filter's prime; report it to the sink. The last filter then lets
    /// go of the sink's end ([`Filter::is_last`]).
    Report(u64),
    /// A multiple of the prime, or any number after the last prime: drop it.
    Drop,
    /// Pass it to the next filter.
    Pass(u64),
}

impl Filter {
    /// What to do with `x`, the next number read (counted).
    #[inline]
    pub fn step(&mut self, x: u64) -> Step {
        self.reads += 1;
        match self.prime {
            None => {
                self.prime = Some(x);
                Step::Report(x)
            }
            Some(p) if self.last || x.is_multiple_of(p) => Step::Drop,
            Some(_) => Step::Pass(x),
        }
    }

    /// Whether it is the chain's last filter: the sink has every prime once
    /// it has reported its own, and the numbers after it read go nowhere.
    pub fn is_last(&self) -> bool {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_reports_its_prime_then_drops_its_multiples() {
        let chain = Chain::new(3, 16);
        let mut f = chain.filter(1);
        assert!(!f.is_last());
        let steps: Vec<Step> = [3, 5, 9, 11].into_iter().map(|x| f.step(x)).collect();
        assert_eq!(
            steps,
            [Step::Report(3), Step::Pass(5), Step::Drop, Step::Pass(11)]
        );
        let mut last = chain.filter(2);
        assert!(last.is_last());
        assert_eq!(last.step(5), Step::Report(5));
        assert_eq!(last.step(7), Step::Drop);
        chain.done(&f);
        chain.done(&last);
        assert_eq!(chain.reads(), 6);
    }

    #[test]
    fn the_first_primes() {
        assert_eq!(first_primes(0), Vec::<u64>::new());
        assert_eq!(first_primes(1), [2]);
        assert_eq!(first_primes(10), [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]);
        let p = first_primes(2000);
        assert_eq!((p.len(), p[999], p[1999]), (2000, 7919, 17389));
        assert_eq!(primes_up_to(1), Vec::<u64>::new());
        assert_eq!(primes_up_to(2), [2]);
    }

    #[test]
    fn compare_names_the_first_difference() {
        let want = first_primes(5);
        compare(&want, &want).unwrap();
        let e = compare(&[2, 3, 5, 9, 11], &want).unwrap_err();
        assert!(
            e.contains("prime 4 (counting from 1) is 9, expected 7"),
            "{e}"
        );
        let e = compare(&[2, 3, 5], &want).unwrap_err();
        assert!(e.contains("found 3 primes, expected 5"), "{e}");
        let e = compare(&[2, 3, 5, 7, 11, 13], &want).unwrap_err();
        assert!(e.contains("found 6 primes, expected 5"), "{e}");
    }

    #[test]
    fn the_limit_bounds_the_nth_prime() {
        let p = first_primes(5000);
        for n in 1..=5000 {
            assert!(limit(n) >= p[n - 1], "{n}");
        }
        assert_eq!(limit(5), 11);
        assert_eq!(limit(2000), 19258);
    }

    #[test]
    fn reads_per_filter() {
        // Up to 11: filter 2 reads 2..=11 (10 numbers), filter 3 reads the
        // odd ones from 3 (5), filter 5 reads 5, 7, 11, filter 7 reads 7
        // and 11, filter 11 reads 11.
        assert_eq!(filter_reads(&first_primes(5), 11), [10, 5, 3, 2, 1]);
        // Up to 14 with 3 filters: the last (5) reads 5, 7, 11, 13.
        assert_eq!(filter_reads(&first_primes(3), 14), [13, 6, 4]);
        assert_eq!(filter_reads(&[], 10), Vec::<u64>::new());
        let r = filter_reads(&first_primes(2000), limit(2000));
        assert_eq!(r[0], 19257);
        assert!(r.windows(2).all(|w| w[0] >= w[1]));
        // The last filter reads its prime and the primes after it up to
        // the limit.
        assert_eq!(r[1999], primes_up_to(19258).len() as u64 - 1999);
        assert_eq!(messages(5), 21 + 5);
        assert_eq!(messages(2000), 2_415_909);
    }
}
