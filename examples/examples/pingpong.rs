//! Profiling aid: the cross-worker round trip alone.
use rill::MonitorConfig;
use rill_examples::bench::MicroRow;
use rill_examples::micro;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let (m, _) = micro::micro(MicroRow::CrossWorkerRoundtrip, n, &MonitorConfig::off()).unwrap();
    println!("{:.1} ns/roundtrip", m.ns_per_op().unwrap_or(f64::NAN));
}
