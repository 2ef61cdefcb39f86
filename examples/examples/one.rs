use rill_examples::rill_runs::*;
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = a[1].parse().unwrap();
    let row = match a[0].as_str() {
        "yield" => Micro::Yield,
        "spawn" => Micro::Spawn,
        "handoff" => Micro::Handoff,
        "rt" => Micro::CrossWorkerRoundtrip,
        _ => panic!(),
    };
    let (d, ops) = micro(row, n).unwrap();
    println!("{:.2} ns/op", d.as_nanos() as f64 / ops as f64);
}
