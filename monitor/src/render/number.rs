//! Numbers as text: durations with a unit ([`fmt_ns`]), milliseconds on an
//! axis ([`fmt_ms`], [`fmt_ms_step`]) and an axis's tick step ([`nice_step`]).

/// Formats nanoseconds with a unit (`ns`, `µs`, `ms`, `s`).
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        if ns.fract() == 0.0 {
            format!("{ns:.0} ns")
        } else {
            format!("{ns:.1} ns")
        }
    } else if a < 1e6 {
        format!("{:.3} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Milliseconds as an axis label: no more decimals than the value needs.
pub(crate) fn fmt_ms(ms: f64) -> String {
    if ms == 0.0 {
        "0".to_owned()
    } else if ms.abs() >= 100.0 {
        format!("{ms:.0}")
    } else if ms.abs() >= 1.0 {
        format!("{ms:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    } else {
        format!("{ms:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// `ms` with as many decimals as a tick step of `step` ms needs.
pub(crate) fn fmt_ms_step(ms: f64, step: f64) -> String {
    let decimals = (-step.log10()).ceil().clamp(0.0, 12.0) as usize;
    format!("{ms:.decimals$}")
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) for about `n` ticks over `span`.
pub(crate) fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n.max(1.0)).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    k * p
}
