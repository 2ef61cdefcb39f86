//! `rill-bench mpi`: a cross-rank stream beside raw MPI point-to-point in
//! the same run, under `mpirun -n 2` (rank 0 writes, rank 1 reads).
//!
//! - throughput: one-way, messages of 8 B to 1 MiB (8 B as a `u64`, larger
//!   as a `Vec<u8>`), timed on the reader from its first message to its
//!   last; raw MPI sends the same messages one by one with `MPI_Send`;
//! - round trip: an 8-byte message there and back, timed on rank 0.
//!
//! With `--json` rank 0 prints one object per line: `row`, `bytes`, `rill`
//! and `mpi` (MB/s for throughput, ns for a round trip), `ratio` and
//! `verified`.

use std::process::ExitCode;
use std::time::Instant;

use mpi::point_to_point::{Destination, Source};
use mpi::topology::Communicator;
use rill::dist::{Placement, RankTable, World};
use rill::Runtime;

struct Row {
    row: &'static str,
    bytes: usize,
    rill: f64,
    mpi: f64,
    verified: bool,
}

fn fill(i: u64) -> u8 {
    (i % 251) as u8
}

fn placement() -> Placement {
    Placement::Table(RankTable::new().with("a", 0, 0).with("b", 1, 0))
}

fn rill_throughput(world: &World, bytes: usize, n: u64) -> Result<(f64, bool), String> {
    let mut net = world
        .net(Runtime::builder().workers(1).pin(false))
        .map_err(|e| e.to_string())?;
    net.placement(placement());
    let cap = if bytes >= 65536 { 16 } else { 1024 };
    let out = std::sync::Arc::new(std::sync::Mutex::new((0.0, false)));
    // The reader answers its verdict on a stream back once it has the
    // last message; the writer times from its first write to the answer.
    let (ack_w, ack_r) = net.stream::<bool>(1);
    let o = out.clone();
    let finish = move |t0: Instant, ack: &mut rill::Reader<bool>| {
        let ok = ack.read() == Some(true);
        *o.lock().unwrap() = (
            n as f64 * bytes as f64 / t0.elapsed().as_secs_f64() / 1e6,
            ok,
        );
    };
    if bytes == 8 {
        let (w, r) = net.stream::<u64>(cap);
        net.spawn_with("a", (w, ack_r), move |(mut w, mut ack)| {
            let t0 = Instant::now();
            (0..n).for_each(|i| w.write(i).unwrap());
            drop(w);
            finish(t0, &mut ack);
        });
        net.spawn_with("b", (r, ack_w), move |(r, mut ack)| {
            let mut k = 0;
            let mut ok = true;
            for v in r {
                ok &= v == k;
                k += 1;
            }
            ack.write(ok && k == n).unwrap();
        });
    } else {
        let (w, r) = net.stream::<Vec<u8>>(cap);
        net.spawn_with("a", (w, ack_r), move |(mut w, mut ack)| {
            let t0 = Instant::now();
            (0..n).for_each(|i| w.write(vec![fill(i); bytes]).unwrap());
            drop(w);
            finish(t0, &mut ack);
        });
        net.spawn_with("b", (r, ack_w), move |(r, mut ack)| {
            let mut k = 0;
            let mut ok = true;
            for v in r {
                ok &= v.len() == bytes && v[0] == fill(k) && v[bytes - 1] == fill(k);
                k += 1;
            }
            ack.write(ok && k == n).unwrap();
        });
    }
    run_and_share(world, net, out)
}

fn run_and_share(
    world: &World,
    net: rill::dist::Net,
    out: std::sync::Arc<std::sync::Mutex<(f64, bool)>>,
) -> Result<(f64, bool), String> {
    net.run().map_err(|e| e.to_string())?;
    let (v, ok) = *out.lock().unwrap();
    // Rank 0 measured; rank 1 only read and checked.
    Ok((v, ok || world.rank() == 1))
}

fn mpi_throughput(world: &World, bytes: usize, n: u64) -> (f64, bool) {
    world.with_mpi(move |w| {
        if w.rank() == 0 {
            let p = w.process_at_rank(1);
            let mut buf = vec![0u8; bytes];
            let t0 = Instant::now();
            for i in 0..n {
                buf.fill(fill(i));
                p.send(&buf[..]);
            }
            let (ok, _) = p.receive::<u8>();
            (
                n as f64 * bytes as f64 / t0.elapsed().as_secs_f64() / 1e6,
                ok == 1,
            )
        } else {
            let p = w.process_at_rank(0);
            let mut buf = vec![0u8; bytes];
            let mut ok = true;
            for i in 0..n {
                p.receive_into(&mut buf[..]);
                ok &= buf[0] == fill(i) && buf[bytes - 1] == fill(i);
            }
            p.send(&u8::from(ok));
            (0.0, ok)
        }
    })
}

fn rill_round_trip(world: &World, n: u64) -> Result<(f64, bool), String> {
    let mut net = world
        .net(Runtime::builder().workers(1).pin(false))
        .map_err(|e| e.to_string())?;
    net.placement(placement());
    let (w1, r1) = net.stream::<u64>(1);
    let (w2, r2) = net.stream::<u64>(1);
    let out = std::sync::Arc::new(std::sync::Mutex::new((0.0, false)));
    let o = out.clone();
    net.spawn_with("a", (w1, r2), move |(mut w, mut r)| {
        // A first exchange warms both bridges.
        w.write(u64::MAX).unwrap();
        let mut ok = r.read() == Some(u64::MAX);
        let t0 = Instant::now();
        for i in 0..n {
            w.write(i).unwrap();
            ok &= r.read() == Some(i);
        }
        *o.lock().unwrap() = (t0.elapsed().as_nanos() as f64 / n as f64, ok);
    });
    net.spawn_with("b", (r1, w2), |(r, mut w)| {
        for v in r {
            w.write(v).unwrap();
        }
    });
    net.run().map_err(|e| e.to_string())?;
    let (v, ok) = *out.lock().unwrap();
    // Rank 0 measured; rank 1 only answered.
    Ok((v, ok || world.rank() == 1))
}

fn mpi_round_trip(world: &World, n: u64) -> (f64, bool) {
    world.with_mpi(move |w| {
        let peer = w.process_at_rank(1 - w.rank());
        let mut buf = [0u64; 1];
        let mut ok = true;
        let t0 = Instant::now();
        for i in 0..n {
            if w.rank() == 0 {
                peer.send(&[i][..]);
                peer.receive_into(&mut buf[..]);
                ok &= buf[0] == i;
            } else {
                peer.receive_into(&mut buf[..]);
                peer.send(&buf[..]);
            }
        }
        (t0.elapsed().as_nanos() as f64 / n as f64, ok)
    })
}

/// A row of an application across ranks: label, median wall ms, verified.
pub(crate) type AppRow = (String, f64, bool);

/// Runs an application's network `rounds` times across the ranks (W
/// workers each) and, alternating, on rank 0 alone with 2·W workers (a
/// one-rank network of the same code). `run` builds and runs one network
/// and returns its wall ms and, on the rank that collected it, its output;
/// `check` says whether an output is right (an output the one-rank run
/// lacks is wrong). Rank 0 gets the two rows (medians); the others none.
pub(crate) fn alternate<T>(
    world: &World,
    workers: usize,
    rounds: usize,
    mut run: impl FnMut(rill::dist::Net) -> Result<(f64, Option<T>), String>,
    mut check: impl FnMut(T) -> bool,
) -> Result<Vec<AppRow>, String> {
    let (mut across, mut local, mut ok) = (Vec::new(), Vec::new(), true);
    for _ in 0..rounds {
        let net = world
            .net(Runtime::builder().workers(workers).pin(false))
            .map_err(|e| e.to_string())?;
        let (ms, out) = run(net)?;
        ok &= out.is_none_or(&mut check);
        across.push(ms);
        if world.rank() == 0 {
            let t = rill::dist::Loopback::ranks(1).pop().expect("one rank");
            let b = Runtime::builder().workers(2 * workers).pin(false);
            let net = rill::dist::Net::loopback(t, b).map_err(|e| e.to_string())?;
            let (ms, out) = run(net)?;
            ok &= out.is_some_and(&mut check);
            local.push(ms);
        }
        // The other ranks wait for rank 0's one-rank run before the next round.
        world.with_mpi(|w| {
            use mpi::collective::CommunicatorCollectives;
            w.barrier();
        });
    }
    if world.rank() != 0 {
        return Ok(Vec::new());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok(vec![
        (
            format!("2 ranks x {workers} worker(s)"),
            median(&mut across),
            ok,
        ),
        (
            format!("1 rank x {} workers", 2 * workers),
            median(&mut local),
            ok,
        ),
    ])
}

/// Refuses what `rill-bench mpi` does not take, before MPI starts: an
/// unknown row or flag, or a number flag without a whole number.
fn check_args(args: &[String]) -> Result<(), String> {
    let (app, rest) = match args.first().map(String::as_str) {
        Some(a @ ("des" | "mc")) => (Some(a), &args[1..]),
        _ => (None, args),
    };
    let numbers: &[&str] = match app {
        Some("des") => &["--bytes", "--workers", "--rounds"],
        Some(_) => &["--paths", "--workers", "--rounds"],
        None => &[],
    };
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        if numbers.contains(&a) {
            let v = rest.get(i + 1).ok_or(format!("{a} needs a number"))?;
            match v.replace('_', "").parse::<usize>() {
                Ok(n) if n > 0 => {}
                _ => return Err(format!("{a} takes a whole number above 0, not '{v}'")),
            }
            i += 2;
        } else if a == "--json" || (a == "--quick" && app.is_none()) {
            i += 1;
        } else {
            return Err(format!("unexpected argument '{a}'"));
        }
    }
    Ok(())
}

fn value(args: &[String], name: &str) -> Option<usize> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.replace('_', "").parse().ok())
}

/// `rill-bench mpi des|mc`: the application's network across the ranks
/// beside one rank with as many workers in all, alternating.
fn app_main(world: &World, args: &[String], json: bool, app: &str) -> ExitCode {
    let workers = value(args, "--workers").unwrap_or(1);
    let rounds = value(args, "--rounds").unwrap_or(5);
    let (size, rows) = if app == "des" {
        let bytes = value(args, "--bytes").unwrap_or(20_000_000);
        (bytes, crate::mpi_des::rows(world, bytes, workers, rounds))
    } else {
        let paths = value(args, "--paths").unwrap_or(300_000);
        (
            paths,
            crate::mpi_mc::rows(world, paths as u64, workers, rounds),
        )
    };
    let unit = if app == "des" { "bytes" } else { "paths" };
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let ok = rows.iter().all(|r| r.2);
    if world.rank() == 0 {
        let base = rows.get(1).map_or(f64::NAN, |r| r.1);
        for (label, ms, verified) in &rows {
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&AppLine {
                        row: app,
                        run: label,
                        bytes: (unit == "bytes").then_some(size),
                        paths: (unit == "paths").then_some(size),
                        wall_ms: *ms,
                        ratio: ms / base,
                        verified: *verified,
                    })
                    .expect("a record serialises")
                );
            } else {
                println!(
                    "{app} {size} {unit}  {label:<24} {ms:>9.1} ms  {:>5.2}x  verified {verified}",
                    ms / base
                );
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs the rows; rank 0 prints them.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(2).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", include_str!("mpi_bench_help.txt"));
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check_args(&args) {
        eprintln!("rill-bench mpi: {e} (see rill-bench mpi --help)");
        return ExitCode::from(2);
    }
    let json = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("rill-bench mpi: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.first().map(String::as_str) {
        Some("des") => return app_main(&world, &args, json, "des"),
        Some("mc") => return app_main(&world, &args, json, "mc"),
        _ => {}
    }
    if world.size() != 2 {
        if world.rank() == 0 {
            eprintln!(
                "rill-bench mpi: run it on two ranks (mpirun -n 2 rill-bench mpi), not {}",
                world.size()
            );
        }
        return ExitCode::FAILURE;
    }
    let volume: usize = if quick { 8 << 20 } else { 64 << 20 };
    let mut rows = Vec::new();
    let mut failed = false;
    for &bytes in &[8usize, 64, 1024, 65536, 1 << 20] {
        let n = (volume / bytes).clamp(16, if quick { 100_000 } else { 1_000_000 }) as u64;
        let r = rill_throughput(&world, bytes, n);
        let (m, mok) = mpi_throughput(&world, bytes, n);
        match r {
            Ok((v, ok)) => rows.push(Row {
                row: "throughput",
                bytes,
                rill: v,
                mpi: m,
                verified: ok && mok,
            }),
            Err(e) => {
                eprintln!("rank {}: {e}", world.rank());
                failed = true;
            }
        }
        if world.rank() == 0 && !json {
            eprintln!("  throughput {bytes} B done");
        }
    }
    let n = if quick { 2_000 } else { 20_000 };
    let (m, mok) = mpi_round_trip(&world, n);
    match rill_round_trip(&world, n) {
        Ok((v, ok)) => rows.push(Row {
            row: "round_trip",
            bytes: 8,
            rill: v,
            mpi: m,
            verified: ok && mok,
        }),
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            failed = true;
        }
    }
    if world.rank() == 0 {
        if !json {
            println!(
                "{:<11} {:>8} {:>12} {:>12} {:>7}  verified",
                "row", "bytes", "rill", "mpi", "ratio"
            );
        }
        for r in &rows {
            let ratio = r.rill / r.mpi;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&RowLine {
                        row: r.row,
                        bytes: r.bytes,
                        rill: r.rill,
                        mpi: r.mpi,
                        ratio,
                        verified: r.verified,
                    })
                    .expect("a record serialises")
                );
            } else {
                let unit = if r.row == "round_trip" { "ns" } else { "MB/s" };
                println!(
                    "{:<11} {:>8} {:>9.1} {unit:<4} {:>7.1} {unit:<4} {:>5.2}  {}",
                    r.row, r.bytes, r.rill, r.mpi, ratio, r.verified
                );
            }
        }
    }
    failed |= rows.iter().any(|r| !r.verified);
    drop(world);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `rill-bench mpi des|mc --json`: one run of an application.
#[derive(serde::Serialize)]
struct AppLine<'a, S: serde::Serialize> {
    row: &'a str,
    run: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paths: Option<S>,
    wall_ms: f64,
    ratio: f64,
    verified: bool,
}

/// `rill-bench mpi --json`: one row, rill beside raw MPI.
#[derive(serde::Serialize)]
struct RowLine<'a> {
    row: &'a str,
    bytes: usize,
    rill: f64,
    mpi: f64,
    ratio: f64,
    verified: bool,
}
