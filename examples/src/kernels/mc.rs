//! Monte Carlo pricing of European call and put options under geometric
//! Brownian motion, with the Black–Scholes closed form as a reference.
//!
//! The simulation is split into small steps so that a stream network can
//! make every time step a separate task stage ("serial replication"):
//!
//! 1. [`new_batch`] creates a [`PathBatch`]: the log-prices of paths
//!    `first_path .. first_path + n`, all at `ln(spot)`;
//! 2. [`step`] advances a batch by one exact GBM time step; it is applied for
//!    `step_index = 0 .. params.steps`, in that order;
//! 3. [`payoff`] turns a finished batch into a [`Partial`] (discounted payoff
//!    sums), and [`finish`] merges the partials into an [`Estimate`].
//!
//! Reproducibility: the normal deviate of path `p` at step `j` is a pure
//! function of `(seed, p, j)` ([`normal`], a counter-based generator), so
//! a path's price does not depend on which task evolves it or how paths are
//! batched. Payoff sums are accumulated in 32.32-style fixed point (integer
//! multiples of 2⁻³², see [`FIXED_SCALE`]), which makes merging exact and
//! associative: [`finish`] returns the same bits for any batch size and any
//! merge order. (Rounding each payoff to 2⁻³² ≈ 2.3·10⁻¹⁰ is far below the
//! Monte Carlo error.)

// Published coefficients and reference values are kept digit for digit.
#![allow(clippy::excessive_precision)]

use super::{mix64, unit_f64};

/// Default number of time steps per path (the pipeline depth of the
/// "serial replication" network).
pub const DEFAULT_STEPS: u32 = 16;

/// Default number of simulated paths of the benchmark.
pub const DEFAULT_PATHS: u64 = 1_000_000;

/// Scale of the fixed-point payoff sums in [`Partial`]: a sum field holds
/// `round(x · FIXED_SCALE)` summed over paths.
pub const FIXED_SCALE: f64 = 4_294_967_296.0; // 2^32

// ---------------------------------------------------------------------------
// Normal distribution.

// W. J. Cody, "Rational Chebyshev approximations for the error function",
// Math. Comp. 23 (1969); coefficients as in his CALERF (SPECFUN / TOMS 715).
const ERF_A: [f64; 5] = [
    3.161_123_743_870_565_6,
    1.138_641_541_510_501_56e2,
    3.774_852_376_853_020_21e2,
    3.209_377_589_138_469_47e3,
    1.857_777_061_846_031_53e-1,
];
const ERF_B: [f64; 4] = [
    2.360_129_095_234_412_09e1,
    2.440_246_379_344_441_73e2,
    1.282_616_526_077_372_28e3,
    2.844_236_833_439_170_62e3,
];
const ERF_C: [f64; 9] = [
    5.641_884_969_886_700_89e-1,
    8.883_149_794_388_375_94,
    6.611_919_063_714_162_95e1,
    2.986_351_381_974_001_31e2,
    8.819_522_212_417_690_9e2,
    1.712_047_612_634_070_58e3,
    2.051_078_377_826_071_47e3,
    1.230_339_354_797_997_25e3,
    2.153_115_354_744_038_46e-8,
];
const ERF_D: [f64; 8] = [
    1.574_492_611_070_983_47e1,
    1.176_939_508_913_124_99e2,
    5.371_811_018_620_098_58e2,
    1.621_389_574_566_690_19e3,
    3.290_799_235_733_459_63e3,
    4.362_619_090_143_247_16e3,
    3.439_367_674_143_721_64e3,
    1.230_339_354_803_749_42e3,
];
const ERF_P: [f64; 6] = [
    3.053_266_349_612_323_44e-1,
    3.603_448_999_498_044_39e-1,
    1.257_817_261_112_292_46e-1,
    1.608_378_514_874_227_66e-2,
    6.587_491_615_298_378_03e-4,
    1.631_538_713_730_209_78e-2,
];
const ERF_Q: [f64; 5] = [
    2.568_520_192_289_822_42,
    1.872_952_849_923_460_47,
    5.279_051_029_514_284_12e-1,
    6.051_834_131_244_131_91e-2,
    2.335_204_976_268_691_85e-3,
];
/// 1/√π.
const SQRPI: f64 = 5.641_895_835_477_562_869_5e-1;

/// `exp(-y²) · r`, splitting `y²` to avoid the rounding error of squaring
/// a large argument (as in Cody's CALERF).
fn exp_neg_sq_times(y: f64, r: f64) -> f64 {
    let ysq = (y * 16.0).trunc() / 16.0;
    let del = (y - ysq) * (y + ysq);
    (-ysq * ysq).exp() * (-del).exp() * r
}

/// Complementary error function, accurate to about 1e-15 relative (Cody's
/// rational Chebyshev approximations on `|x| ≤ 0.46875`, `≤ 4`, `> 4`).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let y = x.abs();
    if y <= 0.468_75 {
        let ysq = if y > 1.11e-16 { y * y } else { 0.0 };
        let mut num = ERF_A[4] * ysq;
        let mut den = ysq;
        for i in 0..3 {
            num = (num + ERF_A[i]) * ysq;
            den = (den + ERF_B[i]) * ysq;
        }
        return 1.0 - x * (num + ERF_A[3]) / (den + ERF_B[3]);
    }
    let r = if y <= 4.0 {
        let mut num = ERF_C[8] * y;
        let mut den = y;
        for i in 0..7 {
            num = (num + ERF_C[i]) * y;
            den = (den + ERF_D[i]) * y;
        }
        exp_neg_sq_times(y, (num + ERF_C[7]) / (den + ERF_D[7]))
    } else if y >= 26.543 {
        0.0
    } else {
        let ysq = 1.0 / (y * y);
        let mut num = ERF_P[5] * ysq;
        let mut den = ysq;
        for i in 0..4 {
            num = (num + ERF_P[i]) * ysq;
            den = (den + ERF_Q[i]) * ysq;
        }
        let r = ysq * (num + ERF_P[4]) / (den + ERF_Q[4]);
        exp_neg_sq_times(y, (SQRPI - r) / y)
    };
    if x < 0.0 {
        2.0 - r
    } else {
        r
    }
}

/// Standard normal cumulative distribution function Φ(x) = erfc(−x/√2)/2.
pub fn norm_cdf(x: f64) -> f64 {
    0.5 * erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

/// `(d1, d2, discount factor)` of the Black–Scholes formula.
fn bs_terms(s: f64, k: f64, r: f64, v: f64, t: f64) -> (f64, f64, f64) {
    let vt = v * t.sqrt();
    let d1 = ((s / k).ln() + (r + 0.5 * v * v) * t) / vt;
    (d1, d1 - vt, (-r * t).exp())
}

/// Black–Scholes price of a European call: spot `s`, strike `k`,
/// continuously compounded rate `r`, volatility `v`, maturity `t` (years).
pub fn bs_call(s: f64, k: f64, r: f64, v: f64, t: f64) -> f64 {
    let (d1, d2, df) = bs_terms(s, k, r, v, t);
    s * norm_cdf(d1) - k * df * norm_cdf(d2)
}

/// Black–Scholes price of a European put (same arguments as [`bs_call`]).
pub fn bs_put(s: f64, k: f64, r: f64, v: f64, t: f64) -> f64 {
    let (d1, d2, df) = bs_terms(s, k, r, v, t);
    k * df * norm_cdf(-d2) - s * norm_cdf(-d1)
}

// ---------------------------------------------------------------------------
// Parameters and random numbers.

/// Option and simulation parameters (with their flags in `rill-bench mc`).
#[derive(Clone, Debug, PartialEq, clap::Args)]
pub struct McParams {
    /// Spot price S₀ (> 0).
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub spot: f64,
    /// Strike K (> 0).
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub strike: f64,
    /// Risk-free rate r, continuously compounded (finite, may be ≤ 0).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub rate: f64,
    /// Volatility σ (> 0).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub vol: f64,
    /// Maturity T in years (> 0).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub maturity: f64,
    /// Time steps per path (≥ 1; the depth of each chain).
    #[arg(long, default_value_t = DEFAULT_STEPS, value_parser = clap::value_parser!(u32).range(1..))]
    pub steps: u32,
    /// Seed of the counter-based random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl Default for McParams {
    /// At-the-money option S = K = 100, r = 5 %, σ = 20 %, T = 1 year,
    /// [`DEFAULT_STEPS`] steps, seed 1.
    fn default() -> Self {
        Self {
            spot: 100.0,
            strike: 100.0,
            rate: 0.05,
            vol: 0.2,
            maturity: 1.0,
            steps: DEFAULT_STEPS,
            seed: 1,
        }
    }
}

impl McParams {
    /// Checks the parameters, naming the first invalid one.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("spot", self.spot),
            ("strike", self.strike),
            ("vol", self.vol),
            ("maturity", self.maturity),
        ];
        for (name, value) in positive {
            if !(value > 0.0 && value.is_finite()) {
                return Err(format!("{name} must be positive and finite, got {value}"));
            }
        }
        if !self.rate.is_finite() {
            return Err(format!("rate must be finite, got {}", self.rate));
        }
        if self.steps == 0 {
            return Err("steps must be at least 1".to_string());
        }
        Ok(())
    }

    /// Closed-form call price for these parameters.
    pub fn bs_call(&self) -> f64 {
        bs_call(self.spot, self.strike, self.rate, self.vol, self.maturity)
    }

    /// Closed-form put price for these parameters.
    pub fn bs_put(&self) -> f64 {
        bs_put(self.spot, self.strike, self.rate, self.vol, self.maturity)
    }

    /// `(drift, diffusion)` of one exact log-price step:
    /// `(r − σ²/2)·Δt` and `σ·√Δt` with `Δt = T / steps`.
    fn step_coefficients(&self) -> (f64, f64) {
        let dt = self.maturity / f64::from(self.steps);
        (
            (self.rate - 0.5 * self.vol * self.vol) * dt,
            self.vol * dt.sqrt(),
        )
    }
}

/// The standard normal deviate used by path `path` at step `step`.
///
/// A pure function of its arguments (counter-based: the tuple is hashed with
/// SplitMix64 into two uniforms, then Box–Muller), so it does not matter
/// which task computes it or in what order.
#[inline]
pub fn normal(seed: u64, path: u64, step: u32) -> f64 {
    let a = mix64(seed ^ 0x4D43_5F50_4154_4853); // "MC_PATHS"
    let b = mix64(a ^ path.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let c = mix64(
        b ^ u64::from(step)
            .wrapping_add(1)
            .wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    let u1 = unit_f64(mix64(c.wrapping_add(0x9E37_79B9_7F4A_7C15))) + 1.0 / 9_007_199_254_740_992.0;
    let u2 = unit_f64(mix64(c.wrapping_add(0x3C6E_F372_FE94_F82A)));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

// ---------------------------------------------------------------------------
// Path steps.

/// A batch of consecutive paths and their current log-prices.
#[derive(Clone, Debug, PartialEq)]
pub struct PathBatch {
    /// Index of the first path of the batch.
    pub first_path: u64,
    /// Current `ln S` of paths `first_path ..`.
    pub log_s: Vec<f64>,
    /// Number of steps applied so far (checked by [`step`] and [`payoff`]).
    pub steps_done: u32,
}

/// Paths `first_path .. first_path + n`, all at `ln(spot)` (time 0).
pub fn new_batch(params: &McParams, first_path: u64, n: usize) -> PathBatch {
    PathBatch {
        first_path,
        log_s: vec![params.spot.ln(); n],
        steps_done: 0,
    }
}

/// Advances every path of the batch by time step `step_index` with the
/// exact GBM transition `ln S += (r − σ²/2)Δt + σ√Δt·Z`, `Z =
/// normal(seed, path, step_index)`.
///
/// Steps must be applied in order `0 .. params.steps`.
///
/// # Panics
/// If `step_index` is not the next step of this batch.
pub fn step(params: &McParams, batch: &mut PathBatch, step_index: u32) {
    assert_eq!(
        step_index, batch.steps_done,
        "steps must be applied in order"
    );
    assert!(step_index < params.steps, "step {step_index} out of range");
    let (drift, diffusion) = params.step_coefficients();
    for (path, x) in (batch.first_path..).zip(batch.log_s.iter_mut()) {
        *x += drift + diffusion * normal(params.seed, path, step_index);
    }
    batch.steps_done += 1;
}

/// Discounted payoff sums of one or more batches, in fixed point.
///
/// Each `sum_*` field is `Σ round(x · FIXED_SCALE)` over paths, `sumsq_*`
/// likewise for `x²`, where `x` is a path's discounted payoff. Integer sums
/// make [`Partial::merge`] exact, so results do not depend on batching.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Partial {
    /// Number of paths summed.
    pub paths: u64,
    /// Fixed-point sum of discounted call payoffs.
    pub sum_call: u128,
    /// Fixed-point sum of squared discounted call payoffs.
    pub sumsq_call: u128,
    /// Fixed-point sum of discounted put payoffs.
    pub sum_put: u128,
    /// Fixed-point sum of squared discounted put payoffs.
    pub sumsq_put: u128,
}

impl Partial {
    /// Adds the sums of `other` to `self` (exact; order does not matter).
    pub fn merge(&mut self, other: &Partial) {
        self.paths += other.paths;
        self.sum_call += other.sum_call;
        self.sumsq_call += other.sumsq_call;
        self.sum_put += other.sum_put;
        self.sumsq_put += other.sumsq_put;
    }

    fn add_path(&mut self, call: f64, put: f64) {
        self.paths += 1;
        self.sum_call += quantize(call);
        self.sumsq_call += quantize(call * call);
        self.sum_put += quantize(put);
        self.sumsq_put += quantize(put * put);
    }
}

/// `round(x · FIXED_SCALE)` for a non-negative payoff (half rounds up).
#[inline]
fn quantize(x: f64) -> u128 {
    let y = x * FIXED_SCALE + 0.5;
    if y < 1.8e19 {
        y as u64 as u128 // fast path, exact for y < 2^64
    } else {
        y as u128
    }
}

/// Discounted call and put payoffs of a finished batch.
///
/// # Panics
/// If the batch has not gone through all `params.steps` steps.
pub fn payoff(params: &McParams, batch: &PathBatch) -> Partial {
    assert_eq!(
        batch.steps_done, params.steps,
        "payoff of an unfinished batch"
    );
    let df = (-params.rate * params.maturity).exp();
    let mut part = Partial::default();
    for &x in &batch.log_s {
        let s = x.exp();
        part.add_path(
            df * (s - params.strike).max(0.0),
            df * (params.strike - s).max(0.0),
        );
    }
    part
}

/// A Monte Carlo price estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Number of paths.
    pub paths: u64,
    /// Estimated call price.
    pub call: f64,
    /// Estimated put price.
    pub put: f64,
    /// Standard error of the call estimate.
    pub call_std_err: f64,
    /// Standard error of the put estimate.
    pub put_std_err: f64,
}

/// `(mean, standard error)` from fixed-point sums.
fn mean_and_std_err(n: u64, sum: u128, sumsq: u128) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let nf = n as f64;
    let mean = sum as f64 / FIXED_SCALE / nf;
    if n == 1 {
        return (mean, f64::NAN);
    }
    let mean_sq = sumsq as f64 / FIXED_SCALE / nf;
    let var = ((mean_sq - mean * mean) * nf / (nf - 1.0)).max(0.0);
    (mean, (var / nf).sqrt())
}

/// Merges partial results and computes the estimate. Because the sums are
/// exact integers, the result is the same for any order of `partials`
/// (index order is the natural choice).
pub fn finish(partials: &[Partial]) -> Estimate {
    let mut total = Partial::default();
    for p in partials {
        total.merge(p);
    }
    let (call, call_std_err) = mean_and_std_err(total.paths, total.sum_call, total.sumsq_call);
    let (put, put_std_err) = mean_and_std_err(total.paths, total.sum_put, total.sumsq_put);
    Estimate {
        paths: total.paths,
        call,
        put,
        call_std_err,
        put_std_err,
    }
}

/// Simulates one batch through all steps: [`new_batch`], every [`step`],
/// [`payoff`].
pub fn simulate_batch(params: &McParams, first_path: u64, n: usize) -> Partial {
    let mut batch = new_batch(params, first_path, n);
    for j in 0..params.steps {
        step(params, &mut batch, j);
    }
    payoff(params, &batch)
}

/// Number of batches of `batch_size` paths needed for `paths` paths (the
/// last one may be smaller).
pub fn batch_count(paths: u64, batch_size: usize) -> u64 {
    paths.div_ceil(batch_size as u64)
}

/// `(first_path, n)` of batch `index` when `paths` paths are cut into
/// batches of `batch_size`.
pub fn batch_bounds(paths: u64, batch_size: usize, index: u64) -> (u64, usize) {
    let first = index * batch_size as u64;
    let n = (paths.saturating_sub(first)).min(batch_size as u64) as usize;
    (first, n)
}

/// Sequential reference: prices with `paths` paths cut into batches of
/// `batch_size`, using the same steps as a network would.
///
/// # Panics
/// If the parameters are invalid or `batch_size` is 0.
pub fn price_sequential(params: &McParams, paths: u64, batch_size: usize) -> Estimate {
    if let Err(e) = params.validate() {
        panic!("invalid Monte Carlo parameters: {e}");
    }
    assert!(batch_size > 0, "batch size must be positive");
    let partials: Vec<Partial> = (0..batch_count(paths, batch_size))
        .map(|b| {
            let (first, n) = batch_bounds(paths, batch_size, b);
            simulate_batch(params, first, n)
        })
        .collect();
    finish(&partials)
}

#[cfg(test)]
mod tests;
