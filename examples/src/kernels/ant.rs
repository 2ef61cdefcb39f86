//! Ant colony optimisation for the single-machine total weighted tardiness
//! problem (1‖ΣwⱼTⱼ).
//!
//! `n` jobs with processing time `p`, weight `w` and due date `d` are
//! sequenced on one machine; a job completing at `C` costs `w·max(0, C − d)`.
//!
//! The colony is a MAX–MIN-style ant colony system in the spirit of den
//! Besten, Stützle and Dorigo (2000) and Merkle and Middendorf (2003):
//!
//! * pheromone `τ[i][j]` ("job `j` at position `i`"), kept in
//!   `[tau_min, 1]`, initially 1;
//! * construction fills positions in order; job `j` is scored by
//!   `τ'ᵢⱼ · ηⱼ^β` where `τ'` is the pheromone *summed* over positions
//!   `0..=i` (summation rule) and `ηⱼ = wⱼ / max(pⱼ, dⱼ − t)` is the
//!   weighted modified due date heuristic at the current time `t`; with
//!   probability `q0` the best job is taken, otherwise one is drawn in
//!   proportion to the scores (`q0` is set so that an ant makes about
//!   [`AcoParams::explore`] such random choices);
//! * each ant's schedule is improved by adjacent pairwise interchange
//!   ([`local_search`]);
//! * after an iteration, [`update`] keeps the best schedule found so far,
//!   evaporates all pheromone by `ρ` and deposits `ρ` on the best schedule's
//!   (position, job) pairs.
//!
//! Pipelining: within an iteration the ants are independent ([`construct`]
//! only reads the colony, and its randomness is a pure function of
//! `(seed, iteration, ant)`), so an iteration can fan out to many tasks;
//! their results are reduced with [`iteration_best`] (lowest cost, then
//! lowest ant index) and fed to [`update`], which must see iterations in
//! order. [`solve_sequential`] is the reference built from the same steps.

use super::SplitMix64;

/// Default number of ants per iteration.
pub const DEFAULT_ANTS: u32 = 45;
/// Default number of jobs of the benchmark instance.
pub const DEFAULT_JOBS: usize = 1000;
/// Default number of iterations.
pub const DEFAULT_ITERATIONS: u32 = 10;

/// One job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Processing time.
    pub p: u32,
    /// Weight (cost per unit of tardiness).
    pub w: u32,
    /// Due date.
    pub d: u32,
}

/// A problem instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The jobs; a schedule is a permutation of their indices.
    pub jobs: Vec<Job>,
}

impl Instance {
    /// Number of jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the instance has no jobs.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Sum of all processing times (the makespan of any schedule).
    pub fn total_processing(&self) -> u64 {
        self.jobs.iter().map(|j| u64::from(j.p)).sum()
    }
}

/// A random instance in the usual OR-Library style with tardiness factor
/// 0.6 and relative due-date range 0.6 (see [`generate_with`]).
pub fn generate(n_jobs: usize, seed: u64) -> Instance {
    generate_with(n_jobs, seed, 0.6, 0.6)
}

/// A random instance (Crauwels, Potts and Van Wassenhove style):
/// `p ∈ 1..=100`, `w ∈ 1..=10` uniform, and with `P = Σp` due dates uniform
/// in `[P(1 − tf − rdd/2), P(1 − tf + rdd/2)]` (negative values become 0), where `tf`
/// is the tardiness factor and `rdd` the relative range of due dates.
pub fn generate_with(n_jobs: usize, seed: u64, tf: f64, rdd: f64) -> Instance {
    let mut rng = SplitMix64::from_keys(&[0xA17_C010, seed]);
    let mut jobs: Vec<Job> = (0..n_jobs)
        .map(|_| {
            let p = rng.range_u32(1, 100);
            let w = rng.range_u32(1, 10);
            Job { p, w, d: 0 }
        })
        .collect();
    let total: u64 = jobs.iter().map(|j| u64::from(j.p)).sum();
    let total = total as f64;
    let lo = total * (1.0 - tf - rdd / 2.0);
    let hi = total * (1.0 - tf + rdd / 2.0);
    for job in &mut jobs {
        job.d = (lo + (hi - lo) * rng.next_f64()).round().max(0.0) as u32;
    }
    Instance { jobs }
}

/// Checks that `schedule` is a permutation of the instance's job indices.
pub fn validate(inst: &Instance, schedule: &[u32]) -> Result<(), String> {
    let n = inst.len();
    if schedule.len() != n {
        return Err(format!(
            "schedule has {} entries, instance has {n} jobs",
            schedule.len()
        ));
    }
    let mut seen = vec![false; n];
    for (pos, &j) in schedule.iter().enumerate() {
        let Some(slot) = seen.get_mut(j as usize) else {
            return Err(format!(
                "job {j} at position {pos} does not exist (n = {n})"
            ));
        };
        if *slot {
            return Err(format!("job {j} scheduled twice (again at position {pos})"));
        }
        *slot = true;
    }
    // With n entries, no duplicates and all in range, every job appears.
    Ok(())
}

/// Total weighted tardiness of `schedule`.
///
/// The schedule must be valid (see [`validate`]; checked in debug builds).
///
/// # Panics
/// If a job index is out of range.
pub fn cost(inst: &Instance, schedule: &[u32]) -> u64 {
    debug_assert!(validate(inst, schedule).is_ok(), "invalid schedule");
    let mut t = 0u64;
    let mut total = 0u64;
    for &j in schedule {
        let job = inst.jobs[j as usize];
        t += u64::from(job.p);
        total += u64::from(job.w) * t.saturating_sub(u64::from(job.d));
    }
    total
}

/// Earliest due date order (ties by job index).
pub fn edd(inst: &Instance) -> Vec<u32> {
    let mut s: Vec<u32> = (0..inst.len() as u32).collect();
    s.sort_by_key(|&j| (inst.jobs[j as usize].d, j));
    s
}

/// Weighted modified due date heuristic value of job `j` at time `t`:
/// `w / max(p, d − t)` (larger is more urgent).
#[inline]
fn wmdd_eta(job: &Job, t: u64) -> f64 {
    let slack = u64::from(job.d).saturating_sub(t).max(u64::from(job.p));
    f64::from(job.w) / slack as f64
}

/// Weighted modified due date dispatching (Kanet and Li): repeatedly
/// schedules the unscheduled job with the largest `w / max(p, d − t)` (ties
/// by lowest index). O(n²).
pub fn wmdd(inst: &Instance) -> Vec<u32> {
    let mut remaining: Vec<u32> = (0..inst.len() as u32).collect();
    let mut s = Vec::with_capacity(inst.len());
    let mut t = 0u64;
    while !remaining.is_empty() {
        let mut best = 0;
        let mut best_eta = f64::NEG_INFINITY;
        for (k, &j) in remaining.iter().enumerate() {
            let eta = wmdd_eta(&inst.jobs[j as usize], t);
            if eta > best_eta || (eta == best_eta && j < remaining[best]) {
                best = k;
                best_eta = eta;
            }
        }
        let j = remaining.swap_remove(best);
        t += u64::from(inst.jobs[j as usize].p);
        s.push(j);
    }
    s
}

/// Maximum number of adjacent-interchange sweeps of [`local_search`].
pub const LOCAL_SEARCH_SWEEPS: usize = 4;

/// Whether exchanging adjacent jobs `a` (first) and `b`, starting at time
/// `t`, strictly lowers their combined weighted tardiness.
#[inline]
fn swap_improves(a: &Job, b: &Job, t: u64) -> bool {
    let wt = |job: &Job, c: u64| u64::from(job.w) * c.saturating_sub(u64::from(job.d));
    let ab = t + u64::from(a.p) + u64::from(b.p);
    let now = wt(a, t + u64::from(a.p)) + wt(b, ab);
    let swapped = wt(b, t + u64::from(b.p)) + wt(a, ab);
    swapped < now
}

/// Adjacent pairwise interchange with at most [`LOCAL_SEARCH_SWEEPS`]
/// sweeps (see [`local_search_sweeps`]).
pub fn local_search(inst: &Instance, schedule: &mut [u32]) {
    local_search_sweeps(inst, schedule, LOCAL_SEARCH_SWEEPS);
}

/// Adjacent pairwise interchange: sweeps the schedule alternately forward
/// and backward, exchanging neighbours whenever that strictly lowers the
/// cost, until a sweep changes nothing or `max_sweeps` sweeps are done.
/// Each sweep is O(n); the cost never increases.
pub fn local_search_sweeps(inst: &Instance, schedule: &mut [u32], max_sweeps: usize) {
    let n = schedule.len();
    if n < 2 {
        return;
    }
    let mut start = vec![0u64; n];
    for sweep in 0..max_sweeps {
        let mut changed = false;
        if sweep % 2 == 0 {
            let mut t = 0u64;
            for i in 0..n - 1 {
                let (a, b) = (schedule[i], schedule[i + 1]);
                let (ja, jb) = (&inst.jobs[a as usize], &inst.jobs[b as usize]);
                if swap_improves(ja, jb, t) {
                    schedule.swap(i, i + 1);
                    changed = true;
                    t += u64::from(jb.p);
                } else {
                    t += u64::from(ja.p);
                }
            }
        } else {
            let mut t = 0u64;
            for (s, &j) in start.iter_mut().zip(schedule.iter()) {
                *s = t;
                t += u64::from(inst.jobs[j as usize].p);
            }
            // Swapping positions i and i+1 leaves the start of every
            // position <= i unchanged, so start[i] stays valid going down.
            for i in (0..n - 1).rev() {
                let (ja, jb) = (
                    &inst.jobs[schedule[i] as usize],
                    &inst.jobs[schedule[i + 1] as usize],
                );
                if swap_improves(ja, jb, start[i]) {
                    schedule.swap(i, i + 1);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// Colony parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct AcoParams {
    /// Exponent β of the heuristic (pheromone exponent α is 1).
    pub beta: i32,
    /// Expected number of *exploring* choices per ant: at each position the
    /// best-scored job is taken with probability `q0 = 1 − explore / n`
    /// (clamped to `0..=1`), otherwise a job is sampled in proportion to the
    /// scores. 10 gives the classic `q0 = 0.9` at 100 jobs and keeps large
    /// instances from drowning in random choices.
    pub explore: f64,
    /// Evaporation rate ρ (also the deposit on the best schedule).
    pub rho: f64,
    /// Lower pheromone bound as a fraction of the upper bound 1.
    pub tau_min: f64,
    /// Whether to use the pheromone summation rule.
    pub summation: bool,
    /// Maximum adjacent-interchange sweeps per ant (0: no local search;
    /// see [`local_search_sweeps`]).
    pub ls_sweeps: usize,
}

impl Default for AcoParams {
    /// β = 2, 10 exploring choices per ant, ρ = 0.1, τ_min = 0.01,
    /// summation rule on, up to [`LOCAL_SEARCH_SWEEPS`] local search sweeps.
    fn default() -> Self {
        Self {
            beta: 2,
            explore: 10.0,
            rho: 0.1,
            tau_min: 0.01,
            summation: true,
            ls_sweeps: LOCAL_SEARCH_SWEEPS,
        }
    }
}

/// Pheromone matrix and best-so-far schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Colony {
    /// Number of jobs (and positions).
    pub n: usize,
    /// `pheromone[i * n + j]`: desirability of job `j` at position `i`.
    pub pheromone: Vec<f64>,
    /// Parameters.
    pub params: AcoParams,
    /// Best schedule seen by [`update`] and its cost.
    pub best: Option<(Vec<u32>, u64)>,
}

impl Colony {
    /// A fresh colony for `inst`: all pheromone at the upper bound 1, and
    /// the best-so-far schedule seeded with [`wmdd`] improved by local
    /// search (so the colony never returns anything worse than that).
    pub fn new(inst: &Instance, params: AcoParams) -> Self {
        let n = inst.len();
        let mut start = wmdd(inst);
        local_search_sweeps(inst, &mut start, params.ls_sweeps);
        let c = cost(inst, &start);
        Self {
            n,
            pheromone: vec![1.0; n * n],
            params,
            best: Some((start, c)),
        }
    }
}

/// `x^beta`, avoiding the out-of-line `powi` for the usual small β.
#[inline]
fn pow_beta(x: f64, beta: i32) -> f64 {
    match beta {
        1 => x,
        2 => x * x,
        3 => x * x * x,
        b => x.powi(b),
    }
}

/// Builds one ant's schedule (without local search). Deterministic: the
/// random choices depend only on `(seed, iteration, ant)`.
pub fn construct(
    inst: &Instance,
    colony: &Colony,
    ant: u32,
    iteration: u32,
    seed: u64,
) -> Vec<u32> {
    let n = inst.len();
    assert_eq!(colony.n, n, "colony built for a different instance");
    let params = &colony.params;
    let q0 = (1.0 - params.explore / n as f64).clamp(0.0, 1.0);
    let mut rng = SplitMix64::from_keys(&[seed, u64::from(iteration), u64::from(ant)]);
    let mut remaining: Vec<u32> = (0..n as u32).collect();
    let mut summed = vec![0.0f64; if params.summation { n } else { 0 }];
    let mut scores = Vec::with_capacity(n);
    let mut schedule = Vec::with_capacity(n);
    // (p, d, w) as f64: the inner loop then needs no integer conversions.
    // Exact, since all values (and the running time) are far below 2^53.
    let jobs: Vec<[f64; 3]> = inst
        .jobs
        .iter()
        .map(|j| [f64::from(j.p), f64::from(j.d), f64::from(j.w)])
        .collect();
    let mut t = 0.0f64;
    for pos in 0..n {
        let row = &colony.pheromone[pos * n..(pos + 1) * n];
        // Decide first whether to exploit: then only the arg max is needed.
        let exploit = rng.next_f64() < q0;
        scores.clear();
        let mut total = 0.0;
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (k, &j) in remaining.iter().enumerate() {
            let j = j as usize;
            let tau = if params.summation {
                summed[j] += row[j];
                summed[j]
            } else {
                row[j]
            };
            let [p, d, w] = jobs[j];
            // η = w / max(p, d − t), the same value as `wmdd_eta`.
            let eta = w / (d - t).max(p);
            let score = tau * pow_beta(eta, params.beta);
            if exploit {
                if score > best_score {
                    best_score = score;
                    best = k;
                }
            } else {
                total += score;
                scores.push(score);
            }
        }
        let pick = if exploit {
            best
        } else {
            let mut r = rng.next_f64() * total;
            let mut pick = scores.len() - 1;
            for (k, &s) in scores.iter().enumerate() {
                if r < s {
                    pick = k;
                    break;
                }
                r -= s;
            }
            pick
        };
        let j = remaining.swap_remove(pick);
        t += jobs[j as usize][0];
        schedule.push(j);
    }
    schedule
}

/// One ant's complete work: [`construct`], optional [`local_search`],
/// [`cost`].
pub fn run_ant(
    inst: &Instance,
    colony: &Colony,
    ant: u32,
    iteration: u32,
    seed: u64,
) -> (Vec<u32>, u64) {
    let mut s = construct(inst, colony, ant, iteration, seed);
    local_search_sweeps(inst, &mut s, colony.params.ls_sweeps);
    let c = cost(inst, &s);
    (s, c)
}

/// Index of the best of an iteration's results given in ant order: lowest
/// cost, ties to the lowest ant index. `None` for no results.
pub fn iteration_best(results: &[(Vec<u32>, u64)]) -> Option<usize> {
    results
        .iter()
        .enumerate()
        .min_by_key(|(k, (_, c))| (*c, *k))
        .map(|(k, _)| k)
}

/// End-of-iteration update: `best` (the iteration's best schedule, cost
/// `best_cost`) replaces the colony's best-so-far if strictly cheaper; then
/// all pheromone evaporates by `ρ` and `ρ` is deposited on the best-so-far
/// schedule's (position, job) pairs, with pheromone kept in `[tau_min, 1]`.
pub fn update(colony: &mut Colony, best: &[u32], best_cost: u64) {
    assert_eq!(
        best.len(),
        colony.n,
        "schedule length does not match colony"
    );
    if colony.best.as_ref().is_none_or(|(_, c)| best_cost < *c) {
        colony.best = Some((best.to_vec(), best_cost));
    }
    let rho = colony.params.rho;
    let lo = colony.params.tau_min;
    for tau in colony.pheromone.iter_mut() {
        *tau = (*tau * (1.0 - rho)).max(lo);
    }
    let n = colony.n;
    if let Some((s, _)) = &colony.best {
        for (pos, &j) in s.iter().enumerate() {
            let tau = &mut colony.pheromone[pos * n + j as usize];
            *tau = (*tau + rho).min(1.0);
        }
    }
}

/// Sequential reference: `iterations` iterations of `ants` ants with the
/// default parameters; returns the best schedule and its cost.
/// Deterministic for given arguments.
///
/// # Panics
/// If `ants` or `iterations` is 0.
pub fn solve_sequential(inst: &Instance, ants: u32, iterations: u32, seed: u64) -> (Vec<u32>, u64) {
    solve_with(inst, AcoParams::default(), ants, iterations, seed)
}

/// [`solve_sequential`] with explicit parameters.
///
/// # Panics
/// If `ants` or `iterations` is 0.
pub fn solve_with(
    inst: &Instance,
    params: AcoParams,
    ants: u32,
    iterations: u32,
    seed: u64,
) -> (Vec<u32>, u64) {
    assert!(
        ants > 0 && iterations > 0,
        "need at least one ant and one iteration"
    );
    let mut colony = Colony::new(inst, params);
    for it in 0..iterations {
        let results: Vec<(Vec<u32>, u64)> = (0..ants)
            .map(|a| run_ant(inst, &colony, a, it, seed))
            .collect();
        let k = iteration_best(&results).expect("at least one ant");
        update(&mut colony, &results[k].0, results[k].1);
    }
    colony.best.expect("at least one iteration")
}

#[cfg(test)]
mod tests;
