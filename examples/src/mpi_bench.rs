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
use rill::dist::{Net, Placement, RankTable, World};
use rill::Runtime;
use rill_examples::apps::auto::{AUTO_ROOT, MAX_PILOT_DIVISOR};
use rill_examples::bench;
use rill_examples::dist_place::Placing;

use crate::mpi_auto::{AutoOpts, Planned, PILOT_DIVISOR};
use crate::mpi_nets::RunOn;

/// The pilot's floor for the pipe's messages and the ring's hops.
const PILOT_MESSAGES: u64 = 1000;

/// A row of `rill-bench mpi`: rill's cross-rank stream beside raw MPI in
/// the same job, as the table and `--json` show it. A comparison of two
/// engines' figures in one row, not a run of one benchmark, so it is not a
/// `rill_examples::report::Record`.
#[derive(serde::Serialize)]
struct Row {
    row: &'static str,
    bytes: usize,
    /// MB/s for throughput, ns for a round trip.
    rill: f64,
    /// The same for raw MPI.
    mpi: f64,
    /// `rill` over `mpi`.
    ratio: f64,
    verified: bool,
}

impl Row {
    fn new(row: &'static str, bytes: usize, rill: f64, mpi: f64, verified: bool) -> Row {
        Row {
            row,
            bytes,
            rill,
            mpi,
            ratio: rill / mpi,
            verified,
        }
    }
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

/// How an application runs across the ranks: workers per rank, rounds,
/// and the placement `--mapping` asked for (`None`: the application's own).
pub(crate) struct AppOpts {
    pub workers: usize,
    pub rounds: usize,
    pub placing: Option<Placing>,
    /// `--mapping auto`: where the pilots go, and their size.
    pub auto: Option<AutoOpts>,
    /// The mapping's name for the table and the JSON.
    pub mapping: String,
}

/// An application's network at one size: how to run it on a net under a
/// placement (building it, placing it, running it: its wall ms on this
/// rank and, on the rank that collected it, its output), and whether an
/// output is right.
pub(crate) struct Workload<'a, T> {
    /// The size in words (`20000 of 300000 paths`), for a pilot.
    pub size: String,
    pub run: Box<dyn FnMut(Net, Option<Placing>) -> RunOn<T> + 'a>,
    pub check: Box<dyn FnMut(T) -> bool + 'a>,
}

impl<'a, T> Workload<'a, T> {
    pub fn new(
        size: impl Into<String>,
        run: impl FnMut(Net, Option<Placing>) -> RunOn<T> + 'a,
        check: impl FnMut(T) -> bool + 'a,
    ) -> Self {
        Workload {
            size: size.into(),
            run: Box::new(run),
            check: Box::new(check),
        }
    }
}

/// `n / divisor` with one process's pilot floors (`apps::auto::pilot_size`),
/// and the pilot's size in words.
pub(crate) fn pilot_size(opts: &AppOpts, n: u64, floor: u64, unit: &str) -> (u64, String) {
    let divisor = opts.auto.as_ref().map_or(PILOT_DIVISOR, |a| a.divisor);
    let k = rill_examples::apps::auto::pilot_size(n, divisor, floor);
    (k, format!("{k} of {n} {unit}"))
}

/// A row of an application under mpirun: the run, its ranks and workers
/// per rank, the median wall ms over the rounds, and whether every output
/// was right. Like the suite's rows it sums up several runs (and is
/// compared with the one-rank row), so it is not a
/// `rill_examples::report::Record`; `--json` writes it as an [`AppLine`].
pub(crate) struct AppRow {
    pub label: String,
    pub ranks: usize,
    pub workers: usize,
    pub ms: f64,
    pub verified: bool,
    /// Under `--mapping auto`: the pilots' and plans' figures (medians).
    pub auto: Option<AutoRow>,
}

/// The auto figures of a row (see `crate::mpi_auto`), medians over the
/// rounds; the files and the size are the last round's. `--json` writes
/// them into the row's line under these names.
#[derive(serde::Serialize)]
pub(crate) struct AutoRow {
    pub pilot_ms: f64,
    pub pilot_run_ms: f64,
    pub plan_ms: f64,
    pub total_ms: f64,
    #[serde(rename = "pilot_size")]
    pub size: String,
    #[serde(rename = "mapping_file")]
    pub file: String,
    #[serde(rename = "pilot_logs")]
    pub logs: String,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

impl AutoRow {
    /// From each round's plan and real run's wall ms.
    fn of(rounds: &[(Planned, f64)]) -> Option<AutoRow> {
        let last = &rounds.last()?.0;
        let col = |f: &dyn Fn(&Planned, f64) -> f64| {
            median(&mut rounds.iter().map(|(p, ms)| f(p, *ms)).collect::<Vec<_>>())
        };
        Some(AutoRow {
            pilot_ms: col(&|p, _| p.pilot_ms()),
            pilot_run_ms: col(&|p, _| p.pilot_run_ms),
            plan_ms: col(&|p, _| p.plan_ms),
            total_ms: col(&|p, ms| p.pilot_ms() + ms),
            size: last.size.clone(),
            file: last.file.display().to_string(),
            logs: last.logs.display().to_string(),
        })
    }
}

/// `p` for one rank with `ranks`·`workers` workers: a table's rank r
/// worker w becomes worker r·W + w (the global worker it named); the
/// other placements are defined over the global workers already (parts
/// cuts the one rank's graph over its R·W workers).
fn one_rank(p: &Placing, workers: usize) -> Placing {
    match p {
        Placing::Given(Placement::Table(t)) => Placing::Given(Placement::Table(
            t.entries()
                .iter()
                .fold(RankTable::new(), |acc, (prefix, r, w)| {
                    acc.with(prefix.clone(), 0, r * workers + w)
                }),
        )),
        other => other.clone(),
    }
}

/// Runs an application's network `rounds` times across the ranks (W
/// workers each) and, alternating, on rank 0 alone with R·W workers (a
/// one-rank network of the same code, under the same placement over the
/// same global workers). `full.run` builds the network on the net it is
/// given, applies the placement (when one is given) and runs it;
/// `full.check` says whether an output is right. Every rank's verdicts
/// are summed on every rank: a run across ranks must yield exactly one
/// output, on some rank, and it must be right. Under `--mapping auto`
/// each round first runs `pilot` and plans (`crate::mpi_auto`: across the
/// ranks for the first row, on rank 0 alone for the second). Rank 0 gets
/// the two rows (medians); the others none.
pub(crate) fn alternate<T>(
    world: &World,
    opts: &AppOpts,
    mut full: Workload<'_, T>,
    mut pilot: Option<Workload<'_, T>>,
) -> Result<Vec<AppRow>, String> {
    let (workers, ranks) = (opts.workers, world.size());
    let (mut across, mut local) = (Vec::new(), Vec::new());
    let (mut across_auto, mut local_auto) = (Vec::new(), Vec::new());
    // Outputs across ranks, wrong ones among them, failed one-rank runs.
    let (mut outputs, mut wrong, mut local_bad) = (0u64, 0u64, 0u64);
    // Every round starts with the ranks together (here, then after the
    // barrier that ends the round before), so that no rank's time counts
    // another's set-up (building the input and the reference).
    world.with_mpi(|w| {
        use mpi::collective::CommunicatorCollectives;
        w.barrier();
    });
    for round in 0..opts.rounds {
        let mut builder = Runtime::builder().workers(workers).pin(false);
        let (placing, planned) = match (opts.auto.as_ref(), pilot.as_mut()) {
            (Some(a), Some(pilot)) => {
                let dir = a.round_dir(round, opts.rounds);
                let planned = crate::mpi_auto::across(world, &dir, workers, pilot)?;
                builder = builder.mapping(planned.mapping_on(world.rank()));
                (Some(planned.placing()), Some(planned))
            }
            _ => (opts.placing.clone(), None),
        };
        let net = world.net(builder).map_err(|e| e.to_string())?;
        let (ms, out) = (full.run)(net, placing)?;
        if let Some(out) = out {
            outputs += 1;
            wrong += u64::from(!(full.check)(out));
        }
        across.push(ms);
        if let Some(p) = planned {
            across_auto.push((p, ms));
        }
        if world.rank() == 0 {
            // A failure here is counted, not returned: the other ranks
            // wait for this rank at the barrier below.
            let mut one = || -> Result<(f64, Option<T>, Option<Planned>), String> {
                let mut b = Runtime::builder().workers(ranks * workers).pin(false);
                let (placing, planned) = match (opts.auto.as_ref(), pilot.as_mut()) {
                    (Some(a), Some(pilot)) => {
                        let dir = a.round_dir(round, opts.rounds).join("one-rank");
                        let planned = crate::mpi_auto::one_rank(&dir, ranks * workers, pilot)?;
                        b = b.mapping(planned.mapping_on(0));
                        (Some(planned.placing()), Some(planned))
                    }
                    _ => (opts.placing.as_ref().map(|p| one_rank(p, workers)), None),
                };
                let t = rill::dist::Loopback::ranks(1).pop().expect("one rank");
                let net = rill::dist::Net::loopback(t, b).map_err(|e| e.to_string())?;
                let (ms, out) = (full.run)(net, placing)?;
                Ok((ms, out, planned))
            };
            match one() {
                Ok((ms, out, planned)) => {
                    local_bad += u64::from(!out.is_some_and(&mut full.check));
                    local.push(ms);
                    if let Some(p) = planned {
                        local_auto.push((p, ms));
                    }
                }
                Err(e) => {
                    eprintln!("rank 0: the one-rank run failed: {e}");
                    local_bad += 1;
                }
            }
        }
        // The other ranks wait for rank 0's one-rank run before the next round.
        world.with_mpi(|w| {
            use mpi::collective::CommunicatorCollectives;
            w.barrier();
        });
    }
    let sums = world.with_mpi(move |w| {
        use mpi::collective::{CommunicatorCollectives, SystemOperation};
        let mut sums = [0u64; 2];
        w.all_reduce_into(&[outputs, wrong][..], &mut sums[..], SystemOperation::sum());
        sums
    });
    if world.rank() != 0 {
        return Ok(Vec::new());
    }
    let w = |n: usize| if n == 1 { "worker" } else { "workers" };
    Ok(vec![
        AppRow {
            label: format!("{ranks} ranks x {workers} {}", w(workers)),
            ranks,
            workers,
            ms: median(&mut across),
            verified: sums == [opts.rounds as u64, 0],
            auto: AutoRow::of(&across_auto),
        },
        AppRow {
            label: format!("1 rank x {} {}", ranks * workers, w(ranks * workers)),
            ranks: 1,
            workers: ranks * workers,
            ms: median(&mut local),
            verified: local_bad == 0 && local.len() == opts.rounds,
            auto: AutoRow::of(&local_auto),
        },
    ])
}

/// The applications that run across ranks, and the number flags each
/// takes (besides --workers, --rounds) with their defaults.
pub(crate) const APPS: &[(&str, &[(&str, u64)])] = &[
    ("des", &[("--bytes", 20_000_000)]),
    ("mc", &[("--paths", 300_000)]),
    (
        "pipe",
        &[
            ("--depth", bench::DEFAULT_DEPTH as u64),
            ("--messages", bench::DEFAULT_MESSAGES),
            ("--capacity", bench::DEFAULT_CAPACITY as u64),
        ],
    ),
    (
        "ring",
        &[
            ("--size", bench::DEFAULT_RING_SIZE as u64),
            ("--hops", bench::DEFAULT_HOPS),
            ("--capacity", bench::DEFAULT_CAPACITY as u64),
        ],
    ),
    (
        "ant",
        &[
            ("--jobs", rill_examples::kernels::ant::DEFAULT_JOBS as u64),
            ("--ants", rill_examples::kernels::ant::DEFAULT_ANTS as u64),
            (
                "--iterations",
                rill_examples::kernels::ant::DEFAULT_ITERATIONS as u64,
            ),
            ("--seed", 1),
        ],
    ),
    (
        "rt",
        &[
            (
                "--scenes",
                rill_examples::kernels::rt::DEFAULT_SCENES as u64,
            ),
            ("--width", rill_examples::kernels::rt::DEFAULT_WIDTH as u64),
            (
                "--height",
                rill_examples::kernels::rt::DEFAULT_HEIGHT as u64,
            ),
            ("--solvers", rill_examples::apps::rt::DEFAULT_SOLVERS as u64),
        ],
    ),
    (
        "wordcount",
        &[
            (
                "--bytes",
                rill_examples::kernels::wordcount::DEFAULT_BYTES as u64,
            ),
            ("--counters", bench::DEFAULT_WC_COUNTERS as u64),
            ("--batch", bench::DEFAULT_WC_BATCH as u64),
            ("--chunk", bench::DEFAULT_WC_CHUNK as u64),
            ("--capacity", bench::DEFAULT_CAPACITY as u64),
        ],
    ),
];

/// The rank mpirun gave this process (before MPI starts), for printing
/// argument errors once.
fn env_rank() -> usize {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Refuses what `rill-bench mpi` does not take, before MPI starts: an
/// unknown row or flag, a number flag without a whole number, a mapping
/// that does not run across ranks.
fn check_args(args: &[String]) -> Result<(), String> {
    let app = args
        .first()
        .and_then(|a| APPS.iter().find(|(name, _)| name == a));
    let rest = if app.is_some() { &args[1..] } else { args };
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        let number = app.is_some_and(|(_, flags)| {
            flags.iter().any(|(f, _)| *f == a)
                || ["--workers", "--rounds", "--repeat", "--pilot"].contains(&a)
        });
        if number {
            let v = rest.get(i + 1).ok_or(format!("{a} needs a number"))?;
            match v.replace('_', "").parse::<u64>() {
                Ok(n) if n > 0 => {}
                _ => return Err(format!("{a} takes a whole number above 0, not '{v}'")),
            }
            i += 2;
        } else if a == "--mapping" && app.is_some() {
            let v = rest.get(i + 1).ok_or("--mapping needs a value")?;
            mapping(v)?;
            i += 2;
        } else if a == "--logs" && app.is_some() {
            rest.get(i + 1).ok_or("--logs needs a directory")?;
            i += 2;
        } else if a == "--json" || (a == "--quick" && app.is_none()) {
            i += 1;
        } else {
            return Err(format!("unexpected argument '{a}'"));
        }
    }
    match app {
        Some(("pipe", _)) if value(rest, "--depth").is_some_and(|d| d < 2) => {
            Err("--depth takes 2 or more (a source and a sink)".into())
        }
        _ if value(rest, "--pilot").is_some_and(|n| n > MAX_PILOT_DIVISOR) => Err(format!(
            "--pilot takes 1 to {MAX_PILOT_DIVISOR} (the pilot runs 1/N of the size)"
        )),
        _ => Ok(()),
    }
}

/// `--mapping` across ranks: `blocks` (contiguous blocks in spawn order
/// over every rank's workers), `parts` (a cut of the network's stream
/// graph, `rill_examples::dist_place`), `rr`, a file of `prefix =
/// RANK:WORKER` lines, or `auto` (`crate::mpi_auto`; the bool).
fn mapping(v: &str) -> Result<(Option<Placing>, bool), String> {
    Ok(match v {
        "blocks" | "contiguous" => (Some(Placing::Given(Placement::Contiguous)), false),
        "parts" => (Some(Placing::Parts), false),
        "rr" => (Some(Placing::Given(Placement::RoundRobin)), false),
        "auto" => (None, true),
        "steal" | "adaptive" | "manual" | "const" => {
            return Err(format!(
                "--mapping {v} does not run across ranks; use blocks, parts, rr, auto or a file \
                 of 'prefix = RANK:WORKER' lines"
            ))
        }
        file => (
            Some(Placing::Given(Placement::Table(
                RankTable::load(file).map_err(|e| format!("--mapping: {e}"))?,
            ))),
            false,
        ),
    })
}

fn value(args: &[String], name: &str) -> Option<u64> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.replace('_', "").parse().ok())
}

/// `rill-bench des|mc|pipe|ring` under mpirun (and `rill-bench mpi
/// des|mc`): the application's network across the ranks beside one rank
/// with as many workers in all, alternating; rank 0 prints the rows.
fn app_main(world: &World, args: &[String], json: bool, app: &str) -> ExitCode {
    let flags = APPS
        .iter()
        .find(|(name, _)| *name == app)
        .expect("a known application")
        .1;
    let params: Vec<(&str, u64)> = flags
        .iter()
        .map(|&(f, d)| (f, value(args, f).unwrap_or(d)))
        .collect();
    let p = |f: &str| params.iter().find(|(n, _)| *n == f).expect("a flag").1;
    let mapping_arg = args
        .iter()
        .position(|a| a == "--mapping")
        .and_then(|i| args.get(i + 1));
    let (placing, auto) = mapping_arg
        .map(|m| mapping(m).expect("checked before MPI started"))
        .unwrap_or((None, false));
    let opts = AppOpts {
        workers: value(args, "--workers").unwrap_or(1) as usize,
        rounds: value(args, "--rounds")
            .or(value(args, "--repeat"))
            .unwrap_or(5) as usize,
        placing,
        auto: auto.then(|| AutoOpts {
            dir: args
                .iter()
                .position(|a| a == "--logs")
                .and_then(|i| args.get(i + 1))
                .map_or_else(
                    || std::path::Path::new(AUTO_ROOT).join(format!("mpi-{app}")),
                    std::path::PathBuf::from,
                ),
            divisor: value(args, "--pilot").unwrap_or(PILOT_DIVISOR),
        }),
        mapping: mapping_arg.cloned().unwrap_or_else(|| "default".into()),
    };
    let auto = opts.auto.is_some();
    let rows = match app {
        "des" => crate::mpi_des::rows(world, p("--bytes") as usize, &opts),
        "mc" => crate::mpi_mc::rows(world, p("--paths"), &opts),
        "pipe" => {
            let (depth, messages, cap) = (
                p("--depth") as usize,
                p("--messages"),
                p("--capacity") as usize,
            );
            let make = |messages: u64, size: String| {
                Workload::new(
                    size,
                    move |net, pl| crate::mpi_nets::pipe(net, pl, depth, messages, cap),
                    report_wrong,
                )
            };
            let pilot = auto.then(|| {
                let (n, size) = pilot_size(&opts, messages, PILOT_MESSAGES, "messages");
                make(n, size)
            });
            alternate(world, &opts, make(messages, String::new()), pilot)
        }
        "ant" => {
            use rill_examples::kernels::ant as ak;
            let (ants, iterations, seed) =
                (p("--ants") as u32, p("--iterations") as u32, p("--seed"));
            let inst = std::sync::Arc::new(ak::generate(p("--jobs") as usize, seed));
            let make = |iterations: u32, size: String| {
                let reference = ak::solve_sequential(&inst, ants, iterations, seed);
                let inst = inst.clone();
                Workload::new(
                    size,
                    move |net, pl| crate::mpi_nets::ant(net, pl, &inst, ants, iterations, seed),
                    move |got| {
                        report_wrong(if got == reference {
                            Ok(())
                        } else {
                            Err(format!(
                                "best cost {}, the sequential colony's {}",
                                got.1, reference.1
                            ))
                        })
                    },
                )
            };
            let pilot = auto.then(|| {
                let (n, size) = pilot_size(&opts, u64::from(iterations), 1, "iterations");
                make(n as u32, size)
            });
            alternate(world, &opts, make(iterations, String::new()), pilot)
        }
        "rt" => {
            use rill_examples::kernels::rt as rk;
            let (scenes, size) = (
                p("--scenes") as u32,
                (p("--width") as u32, p("--height") as u32),
            );
            let solvers = p("--solvers") as usize;
            let make = |scenes: u32, words: String| {
                let reference = rk::checksum(&rk::render_all(scenes, size.0, size.1));
                Workload::new(
                    words,
                    move |net, pl| crate::mpi_nets::rt(net, pl, scenes, size, solvers),
                    move |got: crate::mpi_nets::RtOut| {
                        report_wrong(got.and_then(|(sum, n)| {
                            if (sum, n) == (reference, scenes) {
                                Ok(())
                            } else {
                                Err(format!(
                                "checksum {sum:#x} of {n} images, expected {reference:#x} of {scenes}"
                            ))
                            }
                        }))
                    },
                )
            };
            let pilot = auto.then(|| {
                let floor = 2 * solvers as u64;
                let (n, words) = pilot_size(&opts, u64::from(scenes), floor, "scenes");
                make(n as u32, words)
            });
            alternate(world, &opts, make(scenes, String::new()), pilot)
        }
        "wordcount" => {
            use rill_examples::kernels::wordcount::{compare, Corpus, TextSource};
            let make = |bytes: u64, size: String| -> Result<Workload<'static, _>, String> {
                let corpus = Corpus::new(TextSource::Generated {
                    bytes: bytes as usize,
                    seed: 1,
                })
                .map_err(|e| e.to_string())?;
                let wp = bench::WordcountParams {
                    counters: p("--counters") as usize,
                    batch: p("--batch") as usize,
                    chunk: p("--chunk") as usize,
                    capacity: p("--capacity") as usize,
                    ..bench::WordcountParams::new(corpus, opts.workers)
                };
                let reference = wp.corpus.reference().clone();
                Ok(Workload::new(
                    size,
                    move |net, pl| crate::mpi_nets::wordcount(net, pl, &wp),
                    move |got| report_wrong(compare(&got, &reference)),
                ))
            };
            let bytes = p("--bytes");
            let pilot = auto
                .then(|| {
                    let (n, size) = pilot_size(&opts, bytes, 64 << 10, "bytes");
                    make(n, size)
                })
                .transpose();
            pilot.and_then(|pilot| alternate(world, &opts, make(bytes, String::new())?, pilot))
        }
        _ => {
            let (size, hops, cap) = (p("--size") as usize, p("--hops"), p("--capacity") as usize);
            let make = |hops: u64, words: String| {
                Workload::new(
                    words,
                    move |net, pl| crate::mpi_nets::ring(net, pl, size, hops, cap),
                    report_wrong,
                )
            };
            let pilot = auto.then(|| {
                let (n, words) = pilot_size(&opts, hops, PILOT_MESSAGES, "hops");
                make(n, words)
            });
            alternate(world, &opts, make(hops, String::new()), pilot)
        }
    };
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return ExitCode::FAILURE;
        }
    };
    let ok = rows.iter().all(|r| r.verified);
    if world.rank() == 0 {
        let base = rows.get(1).map_or(f64::NAN, |r| r.ms);
        if !json {
            let shown: Vec<String> = params
                .iter()
                .map(|(f, v)| format!("{}={v}", &f[2..]))
                .collect();
            let pilot = opts.auto.as_ref().map_or(String::new(), |a| {
                format!(" (pilot 1/{} in {})", a.divisor, a.dir.display())
            });
            println!(
                "{app}  {} mapping={}{pilot} rounds={} (medians; ratio to the one-rank run)",
                shown.join(" "),
                opts.mapping,
                opts.rounds
            );
        }
        for r in &rows {
            if json {
                let line = AppLine {
                    row: app,
                    run: &r.label,
                    ranks: r.ranks,
                    workers: r.workers,
                    mapping: &opts.mapping,
                    rounds: opts.rounds,
                    params: Flags(&params),
                    wall_ms: r.ms,
                    ratio: r.ms / base,
                    auto: r.auto.as_ref(),
                    verified: r.verified,
                };
                println!(
                    "{}",
                    serde_json::to_string(&line).expect("a row serialises")
                );
            } else {
                let auto = r.auto.as_ref().map_or(String::new(), |a| {
                    format!(
                        "  pilot {:.1} ms (run {:.1} + plan {:.1}), total {:.1} ms",
                        a.pilot_ms, a.pilot_run_ms, a.plan_ms, a.total_ms
                    )
                });
                println!(
                    "{app}  {:<24} {:>9.1} ms  {:>5.2}x{auto}  verified {}",
                    r.label,
                    r.ms,
                    r.ms / base,
                    r.verified
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

/// An application's row under mpirun with `--json`, one object a line.
#[derive(serde::Serialize)]
struct AppLine<'a> {
    /// The application.
    row: &'a str,
    /// The row's label (`2 ranks x 1 worker`).
    run: &'a str,
    ranks: usize,
    /// Workers per rank.
    workers: usize,
    /// `--mapping`, or `default`.
    mapping: &'a str,
    rounds: usize,
    /// The application's number flags, by name without the dashes.
    #[serde(flatten)]
    params: Flags<'a>,
    /// The median over the rounds.
    wall_ms: f64,
    /// Over the one-rank row's.
    ratio: f64,
    /// `--mapping auto`'s pilot and plan.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    auto: Option<&'a AutoRow>,
    verified: bool,
}

/// An application's number flags and their values (`--bytes 20000000`),
/// written as fields named by the flags (`"bytes": 20000000`), in order.
struct Flags<'a>(&'a [(&'a str, u64)]);

impl serde::Serialize for Flags<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (flag, v) in self.0 {
            m.serialize_entry(flag.trim_start_matches('-'), v)?;
        }
        m.end()
    }
}

/// A verdict's check: says what was wrong, on the rank that saw it.
fn report_wrong(v: Result<(), String>) -> bool {
    v.map_err(|e| eprintln!("wrong output: {e}")).is_ok()
}

/// `rill-bench mpi ARGS`: runs the rows; rank 0 prints them.
pub fn main() -> ExitCode {
    main_with(std::env::args().skip(2).collect())
}

/// Runs `args` (`[des|mc|pipe|ring] FLAGS...`, or the stream rows).
pub fn main_with(mut args: Vec<String>) -> ExitCode {
    // `rill-bench des` names the input's size `--size`; `mpi des`, `--bytes`.
    if args.first().is_some_and(|a| a == "des") {
        for a in args.iter_mut().filter(|a| *a == "--size") {
            *a = "--bytes".into();
        }
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        if env_rank() == 0 {
            println!("{}", include_str!("mpi_bench_help.txt"));
        }
        return ExitCode::SUCCESS;
    }
    if let Err(e) = check_args(&args) {
        if env_rank() == 0 {
            eprintln!("rill-bench mpi: {e} (see rill-bench mpi --help)");
        }
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
    if let Some(app) = args
        .first()
        .and_then(|a| APPS.iter().find(|(name, _)| name == a))
    {
        return app_main(&world, &args[1..], json, app.0);
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
            Ok((v, ok)) => rows.push(Row::new("throughput", bytes, v, m, ok && mok)),
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
        Ok((v, ok)) => rows.push(Row::new("round_trip", 8, v, m, ok && mok)),
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
            if json {
                println!("{}", serde_json::to_string(r).expect("a row serialises"));
            } else {
                let unit = if r.row == "round_trip" { "ns" } else { "MB/s" };
                println!(
                    "{:<11} {:>8} {:>9.1} {unit:<4} {:>7.1} {unit:<4} {:>5.2}  {}",
                    r.row, r.bytes, r.rill, r.mpi, r.ratio, r.verified
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
