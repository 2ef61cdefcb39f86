//! Profiling aid: the cross-worker round trip alone.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let (d, ops) =
        rill_examples::rill_runs::micro(rill_examples::rill_runs::Micro::CrossWorkerRoundtrip, n)
            .unwrap();
    println!("{:.1} ns/roundtrip", d.as_nanos() as f64 / ops as f64);
}
