use rill_examples::rill_runs::*;
fn main() {
    let which: Vec<String> = std::env::args().skip(1).collect();
    let all = which.is_empty();
    let has = |s: &str| all || which.iter().any(|w| w == s);
    if has("micro") {
        for (row, n) in [
            (Micro::Yield, 5_000_000u64),
            (Micro::Spawn, 1_000_000),
            (Micro::Handoff, 10_000_000),
            (Micro::CrossWorkerRoundtrip, 200_000),
            (Micro::IdleCpu, 1),
        ] {
            let (d, ops) = micro(row, n).unwrap();
            if row == Micro::IdleCpu {
                println!("{row:?}: cpu share {:.3}%", ops as f64 / 1e4);
            } else {
                println!("{row:?}: {:.2} ns/op", d.as_nanos() as f64 / ops as f64);
            }
        }
    }
    if has("pipe") {
        for p in [
            PipePlacement::Const,
            PipePlacement::Rr,
            PipePlacement::Parts,
        ] {
            let d = pipe(100, 100_000, 16, 2, p).unwrap();
            println!(
                "pipe {p:?}: {:.2} ns/msg/stage ({:?})",
                d.as_nanos() as f64 / (100_000.0 * 99.0),
                d
            );
        }
    }
    if has("ring") {
        let d = ring(100, 1_000_000, 16, 2).unwrap();
        println!("ring: {:.2} ns/hop", d.as_nanos() as f64 / 1e6);
    }
}
