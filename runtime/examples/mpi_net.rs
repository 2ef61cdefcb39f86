//! Cross-rank networks under mpirun: the checks the test command runs.
//!
//! ```sh
//! cargo build --release -p rill --features mpi --example mpi_net
//! mpirun -n 2 target/release/examples/mpi_net random --messages 1000000
//! ```
//!
//! - `random [--seed S] [--messages N] [--monitor DIR]`: a random network
//!   of chains, fan-outs, fan-ins through a `PollSet`, and readers that
//!   leave early, placed round-robin over every rank's workers (so most
//!   streams cross ranks); every sink checks that its messages came once
//!   and in order, every writer to an early-leaving reader sees the close;
//!   exit status 0 only when every rank verified all it expected.
//! - `panic`: a task on the last rank panics; every rank must end with an
//!   error naming it (exit status 3 when it does, 1 otherwise).
//! - `idle MS`: a reader waits MS milliseconds for a writer on another
//!   rank; each rank prints the CPU time it used meanwhile.
//! - `deadlock`: rank 0's task and the last rank's each wait for the
//!   other's message first; every rank must end with a deadlock report
//!   naming its blocked task (exit status 3 when it does).
//! - `pingpong [--messages N]`: rank 0's task sends an 8-byte message to
//!   rank 1's, which sends it back, N times; rank 0 prints the round
//!   trip's mean (for profiling the bridge's path with `perf` or `strace`).
//! - `stuck`: the last rank's task never ends; the mpirun job is ended from
//!   outside (a killed rank), and the others must not hang.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rill::dist::{DistError, Placement, World};
use rill::{MonitorConfig, MonitorFlags, PollSet, Runtime};

/// A small deterministic generator (every rank draws the same network).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct we pass and reads nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let world = match World::init() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("mpi_net: {e}");
            std::process::exit(2);
        }
    };
    let mode = args.first().map(String::as_str).unwrap_or("random");
    let code = match mode {
        "random" => random(&world, &args),
        "panic" => panic_check(&world),
        "idle" => idle(&world, &args),
        "stuck" => stuck(&world),
        "deadlock" => deadlock(&world),
        "pingpong" => pingpong(&world, &args),
        other => {
            eprintln!(
                "mpi_net: unknown mode '{other}' (random, panic, idle, deadlock, pingpong, stuck)"
            );
            2
        }
    };
    drop(world);
    std::process::exit(code);
}

fn builder(args: &[String]) -> rill::Builder {
    let mut b = Runtime::builder().workers(1).pin(false);
    if let Some(dir) = arg(args, "--monitor") {
        b = b.monitor(MonitorConfig::new(MonitorFlags::ALL, dir));
    }
    b
}

fn random(world: &World, args: &[String]) -> i32 {
    let seed: u64 = arg(args, "--seed")
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let total: u64 = arg(args, "--messages")
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut net = match world.net(builder(args)) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return 1;
        }
    };
    net.placement(Placement::RoundRobin);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // Messages each local sink verified, and what this rank's sinks must
    // see (counted from the placement, which every rank computes alike).
    let verified = Arc::new(AtomicU64::new(0));
    let mut expect_by_task: Vec<(String, u64)> = Vec::new();
    let mut left = total;
    let mut k = 0;
    while left > 0 {
        let n = (1 + rng.below(total / 4 + 1)).min(left);
        left -= n;
        let cap = 1 + rng.below(32) as usize;
        match rng.below(4) {
            0 => {
                // A chain of 2 to 6 stages.
                let stages = 2 + rng.below(5) as usize;
                let (w0, mut r) = net.stream::<u64>(cap);
                net.spawn_with(format!("c{k}/src"), w0, move |mut w| {
                    (0..n).for_each(|i| w.write(i).unwrap())
                });
                for s in 0..stages {
                    let (w, r2) = net.stream::<u64>(cap);
                    let prev = std::mem::replace(&mut r, r2);
                    net.spawn_with(format!("c{k}/stage{s}"), (prev, w), |(r, mut w)| {
                        r.for_each(|v| w.write(v + 1).unwrap())
                    });
                }
                let ver = verified.clone();
                let add = stages as u64;
                net.spawn_with(format!("c{k}/sink"), r, move |r| {
                    let mut i = 0;
                    for v in r {
                        assert_eq!(v, i + add, "chain {k}: message {i}");
                        i += 1;
                    }
                    assert_eq!(i, n, "chain {k}: count");
                    ver.fetch_add(i, Ordering::Relaxed);
                });
                expect_by_task.push((format!("c{k}/sink"), n));
            }
            1 => {
                // One source dealing to 2..5 readers in turn.
                let fan = 2 + rng.below(4);
                let mut ws = Vec::new();
                for j in 0..fan {
                    let (w, r) = net.stream::<(u32, u64)>(cap);
                    ws.push(w);
                    let ver = verified.clone();
                    let mine = (n + fan - 1 - j) / fan;
                    net.spawn_with(format!("f{k}/sink{j}"), r, move |r| {
                        let mut c = 0;
                        for (t, i) in r {
                            assert_eq!((t as u64, i), (j, c * fan + j), "fan {k}");
                            c += 1;
                        }
                        assert_eq!(c, mine);
                        ver.fetch_add(c, Ordering::Relaxed);
                    });
                    expect_by_task.push((format!("f{k}/sink{j}"), mine));
                }
                net.spawn_with(format!("f{k}/src"), ws, move |mut ws| {
                    for i in 0..n {
                        let j = (i % fan) as usize;
                        ws[j].write((j as u32, i)).unwrap();
                    }
                });
            }
            2 => {
                // 2..5 sources merged through a PollSet.
                let srcs = 2 + rng.below(4);
                let mut set = PollSet::new();
                for j in 0..srcs {
                    let (w, r) = net.stream::<Vec<u8>>(cap);
                    set.push(r);
                    let mine = (n + srcs - 1 - j) / srcs;
                    net.spawn_with(format!("m{k}/src{j}"), w, move |mut w| {
                        for i in 0..mine {
                            let len = (i % 97) as usize;
                            let mut v = vec![j as u8; len + 9];
                            v[..8].copy_from_slice(&i.to_le_bytes());
                            w.write(v).unwrap();
                        }
                    });
                }
                let ver = verified.clone();
                net.spawn_with(format!("m{k}/merge"), set, move |set| {
                    let mut next = vec![0u64; srcs as usize];
                    for (_, v) in set {
                        let j = v[8] as usize;
                        let i = u64::from_le_bytes(v[..8].try_into().unwrap());
                        assert_eq!(i, next[j], "merge {k} source {j}");
                        assert_eq!(v.len(), (i % 97) as usize + 9);
                        next[j] += 1;
                    }
                    ver.fetch_add(next.iter().sum(), Ordering::Relaxed);
                });
                expect_by_task.push((format!("m{k}/merge"), n));
            }
            _ => {
                // A reader that leaves after half: the writer must see the
                // close, and nothing before it may be lost.
                let (w, r) = net.stream::<u64>(cap);
                let half = n / 2;
                let ver = verified.clone();
                net.spawn_with(format!("e{k}/writer"), w, move |mut w| {
                    let mut i = 0u64;
                    while w.write(i).is_ok() {
                        i += 1;
                        assert!(i < n + 1_000_000, "early {k}: the close never came");
                    }
                });
                net.spawn_with(format!("e{k}/reader"), r, move |mut r| {
                    for i in 0..half {
                        assert_eq!(r.read(), Some(i), "early {k}");
                    }
                    ver.fetch_add(half, Ordering::Relaxed);
                });
                expect_by_task.push((format!("e{k}/reader"), half));
            }
        }
        k += 1;
    }
    let plan = match net.plan() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            return 1;
        }
    };
    let me = world.rank();
    let expect: u64 = expect_by_task
        .iter()
        .filter(|(name, _)| plan.iter().any(|(n, r, _)| n == name && *r == me))
        .map(|(_, c)| c)
        .sum();
    let t0 = Instant::now();
    match net.run() {
        Ok(s) => {
            let got = verified.load(Ordering::Relaxed);
            println!(
                "rank {me}: {k} components, {} local tasks, {} cross-rank streams, verified {got} of {expect} messages, {} frames out, {} in, clock residual {} ns, {:.0} ms",
                s.local_tasks,
                s.cross_streams,
                s.bridge.frames_sent,
                s.bridge.frames_received,
                s.bridge.clock_residual_ns,
                t0.elapsed().as_secs_f64() * 1e3
            );
            i32::from(got != expect)
        }
        Err(e) => {
            eprintln!("rank {me}: {e}");
            1
        }
    }
}

fn panic_check(world: &World) -> i32 {
    let last = world.size() - 1;
    let mut net = world.net(Runtime::builder().workers(1).pin(false)).unwrap();
    let mut t = rill::dist::RankTable::new();
    t = t.with("wait", 0, 0).with("boom", last, 0);
    net.placement(Placement::Table(t));
    let (w, r) = net.stream::<u64>(1);
    net.spawn_with("wait", r, |r| for _ in r {});
    net.spawn_with("boom", w, |_w| {
        std::thread::sleep(Duration::from_millis(100));
        panic!("planted failure")
    });
    match net.run() {
        Err(e @ (DistError::Run { .. } | DistError::Remote { .. })) => {
            let text = e.to_string();
            println!("rank {}: {text}", world.rank());
            if text.contains("boom") && text.contains(&format!("rank {last}")) {
                3
            } else {
                1
            }
        }
        other => {
            println!("rank {}: unexpected {other:?}", world.rank());
            1
        }
    }
}

fn idle(world: &World, args: &[String]) -> i32 {
    let ms: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut net = world.net(Runtime::builder().workers(1).pin(false)).unwrap();
    net.placement(Placement::RoundRobin);
    let (w, r) = net.stream::<u64>(1);
    net.spawn_with("late-writer", w, move |mut w| {
        std::thread::sleep(Duration::from_millis(ms));
        w.write(1).unwrap();
    });
    net.spawn_with("reader", r, |mut r| {
        r.read();
    });
    let (c0, t0) = (cpu_time(), Instant::now());
    let res = net.run();
    let (cpu, wall) = (cpu_time() - c0, t0.elapsed());
    // The writer's rank sleeps in its task (a blocked worker thread); the
    // reader's rank waits in its bridge and its parked worker.
    println!(
        "rank {}: idle {:.2}% of a core ({:.1} ms CPU over {:.0} ms)",
        world.rank(),
        cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
        cpu.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3
    );
    i32::from(res.is_err())
}

fn pingpong(world: &World, args: &[String]) -> i32 {
    let n: u64 = arg(args, "--messages")
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut net = world.net(builder(args)).unwrap();
    net.placement(Placement::RoundRobin);
    let (w1, r1) = net.stream::<u64>(1);
    let (w2, r2) = net.stream::<u64>(1);
    let rank = world.rank();
    net.spawn_with("ping", (w1, r2), move |(mut w, mut r)| {
        let t0 = Instant::now();
        for i in 0..n {
            w.write(i).unwrap();
            assert_eq!(r.read(), Some(i), "the answer came back changed");
        }
        println!(
            "rank {rank}: round trip {:.0} ns",
            t0.elapsed().as_nanos() as f64 / n as f64
        );
    });
    net.spawn_with("pong", (r1, w2), |(r, mut w)| {
        for v in r {
            w.write(v).unwrap();
        }
    });
    match net.run() {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("rank {rank}: {e}");
            1
        }
    }
}

fn deadlock(world: &World) -> i32 {
    let last = world.size() - 1;
    let mut net = world.net(Runtime::builder().workers(1).pin(false)).unwrap();
    net.placement(Placement::Table(
        rill::dist::RankTable::new()
            .with("left", 0, 0)
            .with("right", last, 0),
    ));
    let (w1, r1) = net.stream::<u8>(1);
    let (w2, r2) = net.stream::<u8>(1);
    net.spawn_with("left", (r1, w2), |(mut r, mut w)| {
        if r.read().is_some() {
            let _ = w.write(1);
        }
    });
    net.spawn_with("right", (r2, w1), |(mut r, mut w)| {
        if r.read().is_some() {
            let _ = w.write(1);
        }
    });
    match net.run() {
        Err(e @ DistError::Deadlock { .. }) => {
            println!("rank {}: {e}", world.rank());
            3
        }
        other => {
            println!("rank {}: unexpected {other:?}", world.rank());
            1
        }
    }
}

fn stuck(world: &World) -> i32 {
    let last = world.size() - 1;
    let mut net = world.net(Runtime::builder().workers(1).pin(false)).unwrap();
    net.placement(Placement::Table(
        rill::dist::RankTable::new()
            .with("wait", 0, 0)
            .with("forever", last, 0),
    ));
    let (w, r) = net.stream::<u64>(1);
    net.spawn_with("wait", r, |r| for _ in r {});
    net.spawn_with("forever", w, |_w| loop {
        std::thread::sleep(Duration::from_secs(1));
    });
    println!("rank {} running", world.rank());
    i32::from(net.run().is_err())
}
