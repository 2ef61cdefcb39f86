//! Ant colony / weighted tardiness tests.

use super::*;
use proptest::prelude::*;

fn tiny() -> Instance {
    Instance {
        jobs: vec![
            Job { p: 3, w: 2, d: 4 },
            Job { p: 2, w: 1, d: 2 },
            Job { p: 4, w: 3, d: 6 },
        ],
    }
}

#[test]
fn hand_computed_costs() {
    let inst = tiny();
    // [0, 1, 2]: C = 3, 5, 9 → tardiness 0, 3, 3 → 2·0 + 1·3 + 3·3 = 12.
    assert_eq!(cost(&inst, &[0, 1, 2]), 12);
    // [1, 0, 2]: C = 2, 5, 9 → 0, 1, 3 → 0 + 2 + 9 = 11.
    assert_eq!(cost(&inst, &[1, 0, 2]), 11);
    // [2, 0, 1]: C = 4, 7, 9 → 0, 3, 7 → 0 + 6 + 7 = 13.
    assert_eq!(cost(&inst, &[2, 0, 1]), 13);
    // [2, 1, 0]: C = 4, 6, 9 → 0, 4, 5 → 0 + 4 + 10 = 14.
    assert_eq!(cost(&inst, &[2, 1, 0]), 14);
    assert_eq!(edd(&inst), vec![1, 0, 2]);
    assert_eq!(inst.total_processing(), 9);
    assert_eq!(inst.len(), 3);
    assert!(!inst.is_empty());
    assert_eq!(cost(&Instance { jobs: vec![] }, &[]), 0);
}

#[test]
fn validation() {
    let inst = tiny();
    assert!(validate(&inst, &[2, 0, 1]).is_ok());
    let err = validate(&inst, &[0, 1]).unwrap_err();
    assert!(err.contains("2 entries"), "{err}");
    let err = validate(&inst, &[0, 1, 1]).unwrap_err();
    assert!(err.contains("twice"), "{err}");
    let err = validate(&inst, &[0, 1, 3]).unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    let err = validate(&inst, &[0, 1, 2, 0]).unwrap_err();
    assert!(err.contains("4 entries"), "{err}");
}

#[test]
fn generator_ranges_and_determinism() {
    let inst = generate(500, 3);
    assert_eq!(inst, generate(500, 3));
    assert_ne!(inst, generate(500, 4));
    let total = inst.total_processing() as f64;
    for j in &inst.jobs {
        assert!((1..=100).contains(&j.p));
        assert!((1..=10).contains(&j.w));
        // TF = RDD = 0.6: due dates in [0.1 P, 0.7 P].
        let d = f64::from(j.d);
        assert!(d >= 0.1 * total - 1.0 && d <= 0.7 * total + 1.0);
    }
    // Large tardiness factors clamp due dates at 0.
    let hard = generate_with(50, 1, 1.0, 1.0);
    assert!(hard
        .jobs
        .iter()
        .all(|j| f64::from(j.d) <= 0.5 * hard.total_processing() as f64 + 1.0));
    assert!(hard.jobs.iter().any(|j| j.d == 0));
}

#[test]
fn heuristics_are_valid_permutations() {
    let inst = generate(200, 9);
    let e = edd(&inst);
    validate(&inst, &e).unwrap();
    assert!(e
        .windows(2)
        .all(|w| inst.jobs[w[0] as usize].d <= inst.jobs[w[1] as usize].d));
    let m = wmdd(&inst);
    validate(&inst, &m).unwrap();
    // WMDD accounts for weights and processing times; it should beat EDD on
    // this kind of instance.
    assert!(cost(&inst, &m) < cost(&inst, &e));
}

/// Exhaustive optimum of a small instance (Heap's algorithm).
fn brute_force(inst: &Instance) -> u64 {
    let n = inst.len();
    let mut s: Vec<u32> = (0..n as u32).collect();
    let mut c = vec![0usize; n];
    let mut best = cost(inst, &s);
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                s.swap(0, i);
            } else {
                s.swap(c[i], i);
            }
            best = best.min(cost(inst, &s));
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best
}

#[test]
fn aco_finds_optimum_of_small_instances() {
    for seed in 0..4 {
        let inst = generate(8, seed);
        let opt = brute_force(&inst);
        let (s, c) = solve_sequential(&inst, 10, 10, seed);
        validate(&inst, &s).unwrap();
        assert_eq!(cost(&inst, &s), c);
        assert_eq!(c, opt, "seed {seed}");
    }
}

#[test]
fn aco_beats_edd_on_100_jobs() {
    let inst = generate(100, 42);
    let (s, c) = solve_sequential(&inst, 20, 10, 7);
    validate(&inst, &s).unwrap();
    assert_eq!(cost(&inst, &s), c);
    let e = cost(&inst, &edd(&inst));
    let m = cost(&inst, &wmdd(&inst));
    assert!(c < e, "ACO {c} vs EDD {e}");
    assert!(c <= m, "ACO {c} vs WMDD {m}");
    // The ants improve on the colony's starting point (WMDD + local search).
    let start = Colony::new(&inst, AcoParams::default()).best.unwrap().1;
    assert!(c < start, "ACO {c} vs start {start}");
    println!("100 jobs: EDD {e}, WMDD {m}, start {start}, ACO {c}");
}

#[test]
fn aco_is_deterministic() {
    let inst = generate(60, 5);
    let a = solve_sequential(&inst, 8, 5, 11);
    assert_eq!(a, solve_sequential(&inst, 8, 5, 11));
    let colony = Colony::new(&inst, AcoParams::default());
    let s0 = construct(&inst, &colony, 0, 0, 1);
    assert_eq!(s0, construct(&inst, &colony, 0, 0, 1));
    validate(&inst, &s0).unwrap();
    // Different ants (or iterations, or seeds) explore different schedules.
    let others = [
        construct(&inst, &colony, 1, 0, 1),
        construct(&inst, &colony, 0, 1, 1),
        construct(&inst, &colony, 0, 0, 2),
    ];
    assert!(others.iter().all(|o| *o != s0));
}

#[test]
fn pipelined_iterations_match_reference() {
    // The way a network would run it: ants in any order, reduced in ant
    // order, updates in iteration order.
    let inst = generate(80, 2);
    let (ants, iterations, seed) = (6, 4, 99);
    let mut colony = Colony::new(&inst, AcoParams::default());
    for it in 0..iterations {
        let mut results: Vec<(u32, (Vec<u32>, u64))> = (0..ants)
            .rev()
            .map(|a| (a, run_ant(&inst, &colony, a, it, seed)))
            .collect();
        results.sort_by_key(|(a, _)| *a);
        let results: Vec<(Vec<u32>, u64)> = results.into_iter().map(|(_, r)| r).collect();
        let k = iteration_best(&results).unwrap();
        update(&mut colony, &results[k].0, results[k].1);
    }
    assert_eq!(
        colony.best.unwrap(),
        solve_sequential(&inst, ants, iterations, seed)
    );
}

#[test]
fn iteration_best_ties_go_to_lowest_ant() {
    let r = vec![(vec![0], 5), (vec![1], 3), (vec![2], 3), (vec![3], 4)];
    assert_eq!(iteration_best(&r), Some(1));
    assert_eq!(iteration_best(&[]), None);
}

#[test]
fn update_keeps_best_and_bounds() {
    let inst = tiny();
    let mut colony = Colony::new(&inst, AcoParams::default());
    // The colony starts from WMDD + local search: [0, 2, 1] costs
    // 0 + 3·1 + 7·1 = 10 (optimal here).
    assert_eq!(colony.best, Some((vec![0, 2, 1], 10)));
    update(&mut colony, &[1, 0, 2], 11); // worse than the start: ignored
    assert_eq!(colony.best, Some((vec![0, 2, 1], 10)));
    colony.best = None;
    update(&mut colony, &[0, 1, 2], 12);
    update(&mut colony, &[2, 1, 0], 14); // worse: best stays
    assert_eq!(colony.best, Some((vec![0, 1, 2], 12)));
    for _ in 0..1000 {
        update(&mut colony, &[1, 0, 2], 11);
    }
    assert_eq!(colony.best, Some((vec![1, 0, 2], 11)));
    let tau = |pos: usize, j: usize| colony.pheromone[pos * 3 + j];
    assert!(tau(0, 1) > 0.999_999);
    assert!(tau(1, 0) > 0.999_999);
    assert_eq!(tau(0, 0), colony.params.tau_min);
    assert!(colony.pheromone.iter().all(|&t| (0.01..=1.0).contains(&t)));
}

#[test]
fn local_search_known_improvement() {
    let inst = tiny();
    let mut s = vec![2, 1, 0]; // cost 14
    local_search(&inst, &mut s);
    assert!(cost(&inst, &s) < 14);
    validate(&inst, &s).unwrap();
    let mut one = vec![0];
    local_search(
        &Instance {
            jobs: vec![Job { p: 1, w: 1, d: 0 }],
        },
        &mut one,
    );
    assert_eq!(one, vec![0]);
}

proptest! {
    #[test]
    fn local_search_never_worsens(seed: u64, n in 1usize..60, shuffle_seed: u64) {
        let inst = generate(n, seed);
        let mut s: Vec<u32> = (0..n as u32).collect();
        // Fisher–Yates with a deterministic stream.
        let mut rng = SplitMix64::new(shuffle_seed);
        for i in (1..n).rev() {
            let k = rng.range_u32(0, i as u32) as usize;
            s.swap(i, k);
        }
        let before = cost(&inst, &s);
        local_search(&inst, &mut s);
        prop_assert!(validate(&inst, &s).is_ok());
        prop_assert!(cost(&inst, &s) <= before);
    }

    #[test]
    fn constructed_schedules_are_permutations(seed: u64, n in 1usize..40, ant in 0u32..50) {
        let inst = generate(n, seed);
        let colony = Colony::new(&inst, AcoParams { summation: seed % 2 == 0, ..AcoParams::default() });
        let s = construct(&inst, &colony, ant, 0, seed);
        prop_assert!(validate(&inst, &s).is_ok());
    }
}

/// Single-thread timing of the default workload; run with
/// `cargo test --release -p rill-examples --lib kernels::ant -- --ignored --nocapture`.
/// Environment overrides for experiments: `RILL_ANT_ITERS`, `N`, `EXPLORE`,
/// `BETA`, `RHO`, `TMIN`, `SUM` (0/1), `SWEEPS`.
#[test]
#[ignore = "timing, run in release"]
fn timing() {
    let env = |k: &str, d: f64| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let d = AcoParams::default();
    let params = AcoParams {
        explore: env("EXPLORE", d.explore),
        beta: env("BETA", f64::from(d.beta)) as i32,
        rho: env("RHO", d.rho),
        tau_min: env("TMIN", d.tau_min),
        summation: env("SUM", 1.0) > 0.0,
        ls_sweeps: env("SWEEPS", d.ls_sweeps as f64) as usize,
    };
    let iterations = env("RILL_ANT_ITERS", f64::from(DEFAULT_ITERATIONS)) as u32;
    let n = env("N", DEFAULT_JOBS as f64) as usize;
    let inst = generate(n, 1);
    let e = cost(&inst, &edd(&inst));
    let m = cost(&inst, &wmdd(&inst));
    let colony = Colony::new(&inst, params.clone());
    let mut fastest = f64::INFINITY;
    for a in 0..20 {
        let t = std::time::Instant::now();
        std::hint::black_box(construct(&inst, &colony, a, 0, 1));
        fastest = fastest.min(t.elapsed().as_secs_f64());
    }
    println!("construct: {:.2} ms per ant (fastest of 20)", fastest * 1e3);
    let t = std::time::Instant::now();
    let (s, c) = solve_with(&inst, params.clone(), DEFAULT_ANTS, iterations, 1);
    let dt = t.elapsed().as_secs_f64();
    validate(&inst, &s).unwrap();
    println!(
        "ANT {n} jobs x {DEFAULT_ANTS} ants x {iterations} iterations: {dt:.3} s  cost {c} (EDD {e}, WMDD {m}) {params:?}"
    );
}
