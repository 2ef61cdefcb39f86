//! Monte Carlo tests: special functions against high-precision values,
//! closed-form prices, convergence, reproducibility and validation.

use super::*;

fn rel_err(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

#[test]
fn erfc_against_high_precision_values() {
    // Reference values computed with mpmath at 40 digits.
    let cases = [
        (-3.0, 1.999_977_909_503_001_414_6),
        (-1.0, 1.842_700_792_949_714_869_3),
        (-0.3, 1.328_626_759_459_127_427_4),
        (0.0, 1.0),
        (1e-10, 0.999_999_999_887_162_083_29),
        (0.2, 0.777_297_410_789_521_545_86),
        (0.468_75, 0.507_386_526_782_062_008_41),
        (0.5, 0.479_500_122_186_953_462_32),
        (1.0, 0.157_299_207_050_285_130_66),
        (1.5, 0.033_894_853_524_689_272_933),
        (2.0, 0.004_677_734_981_047_265_837_9),
        (3.0, 2.209_049_699_858_544_137_3e-5),
        (4.0, 1.541_725_790_028_001_885_2e-8),
        (4.5, 1.966_160_441_542_887_476_3e-10),
        (6.0, 2.151_973_671_249_891_311_7e-17),
        (10.0, 2.088_487_583_762_544_757e-45),
        (20.0, 5.395_865_611_607_900_928_9e-176),
        (26.0, 5.663_192_408_856_142_846_5e-296),
    ];
    for (x, want) in cases {
        let got = erfc(x);
        assert!(
            rel_err(got, want) < 1e-14,
            "erfc({x}) = {got:e}, want {want:e}"
        );
    }
    assert_eq!(erfc(30.0), 0.0);
    assert_eq!(erfc(-30.0), 2.0);
    assert!(erfc(f64::NAN).is_nan());
}

#[test]
fn norm_cdf_against_high_precision_values() {
    let cases = [
        (-20.0, 2.753_624_118_606_233_695_1e-89),
        (-8.0, 6.220_960_574_271_784_123_5e-16),
        (-5.0, 2.866_515_718_791_939_116_7e-7),
        (-2.5, 0.006_209_665_325_776_135_167),
        (-1.0, 0.158_655_253_931_457_051_41),
        (-0.1, 0.460_172_162_722_971_018_53),
        (0.0, 0.5),
        (0.7, 0.758_036_347_776_926_985_25),
        (1.96, 0.975_002_104_851_779_565_86),
        (3.0, 0.998_650_101_968_369_905_47),
        (6.0, 0.999_999_999_013_412_354_96),
    ];
    for (x, want) in cases {
        let got = norm_cdf(x);
        // The argument scaling x/√2 costs a little relative accuracy in the
        // far tail; still well inside 1e-12.
        assert!(
            rel_err(got, want) < 1e-13,
            "Φ({x}) = {got:e}, want {want:e}"
        );
    }
    // Symmetry Φ(x) + Φ(−x) = 1.
    for i in -40..=40 {
        let x = f64::from(i) * 0.1;
        assert!((norm_cdf(x) + norm_cdf(-x) - 1.0).abs() < 2e-16);
    }
}

#[test]
fn black_scholes_known_values() {
    // (S, K, r, v, T, call, put), reference values from mpmath.
    let cases = [
        (
            100.0,
            100.0,
            0.05,
            0.2,
            1.0,
            10.450_583_572_185_567,
            5.573_526_022_256_968,
        ),
        (
            100.0,
            110.0,
            0.03,
            0.25,
            0.5,
            3.898_551_183_185_060_2,
            12.260_864_539_521_953,
        ),
        (
            50.0,
            40.0,
            0.0,
            0.4,
            2.0,
            15.767_189_528_085_152,
            5.767_189_528_085_152,
        ),
        (
            100.0,
            100.0,
            -0.01,
            0.5,
            3.0,
            32.505_982_352_840_26,
            35.551_435_748_191_946,
        ),
        (
            100.0,
            60.0,
            0.05,
            0.1,
            0.25,
            40.745_331_970_367_114,
            2.223_048_760_121_367_3e-26,
        ),
    ];
    for (s, k, r, v, t, call, put) in cases {
        let c = bs_call(s, k, r, v, t);
        let p = bs_put(s, k, r, v, t);
        assert!(rel_err(c, call) < 1e-12, "call {c} want {call}");
        if put > 1e-10 {
            assert!(rel_err(p, put) < 1e-12, "put {p} want {put}");
        } else {
            // Deep out of the money: the formula is a difference of two tiny
            // terms; absolute accuracy is what matters.
            assert!((p - put).abs() < 1e-20, "put {p} want {put}");
        }
    }
    let d = McParams::default();
    assert!((d.bs_call() - 10.4506).abs() < 5e-5);
    assert!((d.bs_put() - 5.5735).abs() < 5e-5);
}

#[test]
fn put_call_parity() {
    let mut rng = crate::kernels::SplitMix64::new(11);
    for _ in 0..1000 {
        let s = 10.0 + 190.0 * rng.next_f64();
        let k = 10.0 + 190.0 * rng.next_f64();
        let r = -0.02 + 0.12 * rng.next_f64();
        let v = 0.05 + 0.8 * rng.next_f64();
        let t = 0.05 + 4.0 * rng.next_f64();
        let lhs = bs_call(s, k, r, v, t) - bs_put(s, k, r, v, t);
        let rhs = s - k * (-r * t).exp();
        assert!((lhs - rhs).abs() < 1e-11 * s.max(k), "{s} {k} {r} {v} {t}");
    }
}

#[test]
fn normal_deviates_are_standard_normal_and_counter_based() {
    let seed = 5;
    assert_eq!(normal(seed, 12, 3), normal(seed, 12, 3));
    assert_ne!(normal(seed, 12, 3), normal(seed, 13, 3));
    assert_ne!(normal(seed, 12, 3), normal(seed, 12, 4));
    assert_ne!(normal(seed, 12, 3), normal(seed + 1, 12, 3));
    let n = 200_000u64;
    let (mut m1, mut m2, mut m3, mut m4, mut below) = (0.0, 0.0, 0.0, 0.0, 0u64);
    for p in 0..n {
        let z = normal(seed, p / 4, (p % 4) as u32);
        assert!(z.is_finite());
        m1 += z;
        m2 += z * z;
        m3 += z * z * z;
        m4 += z * z * z * z;
        below += u64::from(z < -1.0);
    }
    let nf = n as f64;
    // Sampling standard errors: mean 1/√n, variance √(2/n), skew √(15/n),
    // kurtosis √(96/n); allow 5 of them.
    assert!((m1 / nf).abs() < 5.0 / nf.sqrt());
    assert!((m2 / nf - 1.0).abs() < 5.0 * (2.0 / nf).sqrt());
    assert!((m3 / nf).abs() < 5.0 * (15.0 / nf).sqrt());
    assert!((m4 / nf - 3.0).abs() < 5.0 * (96.0 / nf).sqrt());
    let frac = below as f64 / nf;
    assert!((frac - norm_cdf(-1.0)).abs() < 5.0 * (0.1587 * 0.8413 / nf).sqrt());
}

/// Checks that the estimate is within 4 standard errors of the closed form.
fn check_convergence(params: &McParams, paths: u64) {
    let est = price_sequential(params, paths, 4096);
    let (c, p) = (params.bs_call(), params.bs_put());
    assert_eq!(est.paths, paths);
    assert!(
        (est.call - c).abs() < 4.0 * est.call_std_err,
        "call {} ± {} vs {c} ({params:?})",
        est.call,
        est.call_std_err
    );
    assert!(
        (est.put - p).abs() < 4.0 * est.put_std_err,
        "put {} ± {} vs {p} ({params:?})",
        est.put,
        est.put_std_err
    );
    // Sanity of the error estimate itself: std err ≈ σ_payoff / √n.
    assert!(est.call_std_err > 0.0 && est.call_std_err < 0.1 * c.max(1.0));
}

#[test]
fn converges_to_closed_form_one_step() {
    check_convergence(
        &McParams {
            steps: 1,
            ..McParams::default()
        },
        200_000,
    );
    check_convergence(
        &McParams {
            spot: 50.0,
            strike: 60.0,
            rate: 0.02,
            vol: 0.35,
            maturity: 2.0,
            steps: 1,
            seed: 99,
        },
        200_000,
    );
}

#[test]
fn converges_to_closed_form_many_steps() {
    // Exact GBM steps: the step count must not bias the estimate.
    check_convergence(
        &McParams {
            steps: 16,
            ..McParams::default()
        },
        200_000,
    );
    check_convergence(
        &McParams {
            spot: 120.0,
            strike: 100.0,
            rate: -0.005,
            vol: 0.6,
            maturity: 0.5,
            steps: 7,
            seed: 2024,
        },
        100_000,
    );
}

#[test]
fn reproducible_across_batch_sizes_and_merge_orders() {
    let params = McParams {
        steps: 5,
        seed: 77,
        ..McParams::default()
    };
    let paths = 10_007;
    let reference = price_sequential(&params, paths, 1000);
    for batch in [1, 7, 64, 1000, 4096, 20_000] {
        let est = price_sequential(&params, paths, batch);
        assert_eq!(est, reference, "batch size {batch}");
    }
    // A "network": batches stepped one stage at a time, finished out of order.
    let batch = 333;
    let mut batches: Vec<PathBatch> = (0..batch_count(paths, batch))
        .map(|b| {
            let (first, n) = batch_bounds(paths, batch, b);
            new_batch(&params, first, n)
        })
        .collect();
    for j in 0..params.steps {
        for b in batches.iter_mut().rev() {
            step(&params, b, j);
        }
    }
    let mut partials: Vec<Partial> = batches.iter().map(|b| payoff(&params, b)).collect();
    assert_eq!(finish(&partials), reference);
    partials.reverse();
    assert_eq!(finish(&partials), reference);
    // A different seed gives a different estimate.
    let other = price_sequential(
        &McParams {
            seed: 78,
            ..params.clone()
        },
        paths,
        1000,
    );
    assert_ne!(other.call, reference.call);
}

#[test]
fn batch_helpers() {
    assert_eq!(batch_count(10, 3), 4);
    assert_eq!(batch_count(9, 3), 3);
    assert_eq!(batch_count(0, 3), 0);
    assert_eq!(batch_bounds(10, 3, 0), (0, 3));
    assert_eq!(batch_bounds(10, 3, 3), (9, 1));
    let params = McParams::default();
    let b = new_batch(&params, 40, 3);
    assert_eq!(b.first_path, 40);
    assert_eq!(b.log_s, vec![100f64.ln(); 3]);
    assert_eq!(finish(&[]).paths, 0);
    assert!(finish(&[]).call.is_nan());
}

#[test]
fn partial_merge_and_payoffs() {
    // Zero volatility is rejected by validate, but the step kernel itself is
    // deterministic for tiny vol: check payoff accounting with σ → 0.
    let params = McParams {
        vol: 1e-12,
        steps: 2,
        ..McParams::default()
    };
    let mut b = new_batch(&params, 0, 10);
    step(&params, &mut b, 0);
    step(&params, &mut b, 1);
    let part = payoff(&params, &b);
    assert_eq!(part.paths, 10);
    let est = finish(&[part]);
    // Forward S e^{rT} minus K, discounted: S − K e^{−rT}.
    let want = 100.0 - 100.0 * (-0.05f64).exp();
    assert!((est.call - want).abs() < 1e-6, "{}", est.call);
    assert!(est.put.abs() < 1e-9);
    let mut merged = part;
    merged.merge(&part);
    assert_eq!(merged.paths, 20);
    assert_eq!(merged.sum_call, 2 * part.sum_call);
    assert_eq!(finish(&[merged]).call, est.call);
}

#[test]
#[should_panic(expected = "steps must be applied in order")]
fn steps_out_of_order_panic() {
    let params = McParams::default();
    let mut b = new_batch(&params, 0, 1);
    step(&params, &mut b, 1);
}

#[test]
#[should_panic(expected = "unfinished batch")]
fn payoff_of_unfinished_batch_panics() {
    let params = McParams::default();
    payoff(&params, &new_batch(&params, 0, 1));
}

#[test]
fn validation() {
    assert!(McParams::default().validate().is_ok());
    let bad = [
        (
            McParams {
                spot: 0.0,
                ..McParams::default()
            },
            "spot",
        ),
        (
            McParams {
                strike: -1.0,
                ..McParams::default()
            },
            "strike",
        ),
        (
            McParams {
                vol: f64::NAN,
                ..McParams::default()
            },
            "vol",
        ),
        (
            McParams {
                maturity: f64::INFINITY,
                ..McParams::default()
            },
            "maturity",
        ),
        (
            McParams {
                rate: f64::NAN,
                ..McParams::default()
            },
            "rate",
        ),
        (
            McParams {
                steps: 0,
                ..McParams::default()
            },
            "steps",
        ),
    ];
    for (p, name) in bad {
        let err = p.validate().unwrap_err();
        assert!(err.starts_with(name), "{err}");
    }
    assert!(McParams {
        rate: -0.01,
        ..McParams::default()
    }
    .validate()
    .is_ok());
}

#[test]
#[should_panic(expected = "invalid Monte Carlo parameters")]
fn price_sequential_rejects_invalid() {
    price_sequential(
        &McParams {
            steps: 0,
            ..McParams::default()
        },
        10,
        10,
    );
}

/// Single-thread timing; run with
/// `cargo test --release -p rill-examples --lib kernels::mc -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run in release"]
fn timing() {
    for steps in [1, 8, DEFAULT_STEPS] {
        let params = McParams {
            steps,
            ..McParams::default()
        };
        let t = std::time::Instant::now();
        let est = price_sequential(&params, DEFAULT_PATHS, 10_000);
        println!(
            "MC {} paths x {steps} steps: {:.3} s  call {:.4}±{:.4} (BS {:.4}) put {:.4}±{:.4} (BS {:.4})",
            DEFAULT_PATHS,
            t.elapsed().as_secs_f64(),
            est.call,
            est.call_std_err,
            params.bs_call(),
            est.put,
            est.put_std_err,
            params.bs_put()
        );
    }
}
