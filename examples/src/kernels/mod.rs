//! Pure computational kernels of the benchmark applications.
//!
//! Nothing in here depends on the rill runtime. Each kernel is split into
//! small, deterministic steps that a stream network can place into separate
//! tasks, plus a sequential reference built from the very same steps, so a
//! parallel run can be checked bit-for-bit against the reference:
//!
//! * [`des`]: DES (FIPS 46-3) in ECB mode with PKCS#7 padding; a block is
//!   split into initial permutation, 16 rounds and final permutation.
//! * [`mc`]: Monte Carlo pricing of European options under geometric
//!   Brownian motion, one path step at a time, with a counter-based RNG.
//! * [`rt`]: a small deterministic ray tracer rendering row ranges of
//!   indexed scenes.
//! * [`ant`]: ant colony optimisation for single-machine total weighted
//!   tardiness, split into construction, local search and pheromone update.
//! * [`wordcount`]: generated text, its cutting into chunks and words, the
//!   routing of words to counters, and the sequential count.
//! * [`sieve`]: the first primes by a sequential sieve of Eratosthenes, and
//!   the numbers each filter of the concurrent prime sieve reads.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ant;
pub mod des;
pub mod mc;
pub mod rt;
pub mod sieve;
pub mod wordcount;

/// SplitMix64 finaliser: a bijective 64-bit mixing function with good
/// avalanche behaviour (Steele, Lea and Flood, 2014).
///
/// Used as the building block of every counter-based random stream in the
/// kernels: hashing a (seed, index, ...) tuple gives the same value no matter
/// which task or thread computes it.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The SplitMix64 increment ("golden gamma").
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A small sequential pseudo-random generator (SplitMix64).
///
/// Deterministic for a given seed; used for generating inputs, scenes and
/// the per-ant random streams of the colony.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose stream is fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator for the stream identified by a tuple of keys, e.g.
    /// `(seed, iteration, ant)`: the keys are hashed in order, so every
    /// tuple gets its own, reproducible stream.
    pub fn from_keys(keys: &[u64]) -> Self {
        let mut h = 0x6A09_E667_F3BC_C908_u64;
        for &k in keys {
            h = mix64(h ^ mix64(k.wrapping_add(GOLDEN_GAMMA)));
        }
        Self::new(h)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform double in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        unit_f64(self.next_u64())
    }

    /// A uniform integer in `lo..=hi` (`lo <= hi`). Uses Lemire's
    /// multiply-shift reduction; the tiny bias is irrelevant here.
    #[inline]
    pub fn range_u32(&mut self, lo: u32, hi: u32) -> u32 {
        debug_assert!(lo <= hi);
        let span = u64::from(hi - lo) + 1;
        let r = ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as u64;
        lo + r as u32
    }
}

/// Maps 64 random bits to a uniform double in `[0, 1)` (top 53 bits).
#[inline]
pub fn unit_f64(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs of SplitMix64 seeded with 0 (reference implementation).
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn keyed_streams_differ_and_repeat() {
        let a = SplitMix64::from_keys(&[1, 2, 3]).next_u64();
        let b = SplitMix64::from_keys(&[1, 3, 2]).next_u64();
        let c = SplitMix64::from_keys(&[1, 2, 3]).next_u64();
        assert_ne!(a, b);
        assert_eq!(a, c);
    }

    #[test]
    fn range_and_unit_bounds() {
        let mut g = SplitMix64::new(7);
        for _ in 0..10_000 {
            let x = g.range_u32(3, 9);
            assert!((3..=9).contains(&x));
            let u = g.next_f64();
            assert!((0.0..1.0).contains(&u));
        }
        assert!(unit_f64(u64::MAX) < 1.0);
    }
}
