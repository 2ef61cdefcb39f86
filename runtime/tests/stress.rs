//! Stress tests: random networks built from fixed seeds, run on 1, 2 and 4
//! workers under every mapping policy. Every message is tagged with its
//! source and sequence number; the collector checks that each source's
//! messages arrive exactly once and in order, and the run's statistics are
//! checked against what the network spawned and wrote.
//!
//! Network kinds:
//! - pipelines of random depth and stream capacity (1..=8);
//! - fan-out: one distributor task spreads messages over k lanes (each a
//!   short pipeline), merged again by the collector through `rill::poll`;
//! - dynamic chains: each relay spawns its successor when it sees its first
//!   message;
//! - serial replication: a stage redirects its output (`Writer::replace`) to
//!   a stage it spawns, which takes over the old output;
//! - pipelines fed from outside the run: sources on plain threads and in a
//!   second runtime's tasks;
//! - pipelines whose sources take their messages from a run nested in them.

mod common;

use common::RunMainStats;

use std::sync::{Arc, Mutex};

use common::{mappings, with_timeout, Rng};
use rill::{Reader, RunStats, Runtime, TryReadError, TryWriteError, Writer};

/// (source id, sequence number).
type Msg = (u32, u64);

/// Name prefixes of the tasks below, for the manual and partitioned mappings.
const PREFIXES: &[&str] = &["main", "src/", "pipe/", "fan/", "dyn/", "rep/"];
const WORKERS: &[usize] = &[1, 2, 4];
/// Seconds a single run may take before it counts as a hang.
const RUN_GUARD_S: u64 = 30;

#[derive(Debug, Clone)]
struct Pipe {
    src: u32,
    n: u64,
    /// Capacities: source → relay 0 → ... → collector (depth + 1 streams).
    caps: Vec<usize>,
    yields: bool,
}

#[derive(Debug, Clone)]
struct Lane {
    src: u32,
    /// Capacities: distributor → lane relay 0 → ... → collector.
    caps: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Fan {
    id: u32,
    lanes: Vec<Lane>,
    /// The lane of each message, in the order the distributor sends them.
    assignment: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Dyn {
    src: u32,
    n: u64,
    /// Capacities: source → relay 0 → ... → collector; relay i+1 is spawned
    /// by relay i.
    caps: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Rep {
    src: u32,
    n: u64,
    /// Stage k forwards `after[k]` messages, then replicates; the last stage
    /// forwards the rest. The sum is below `n`.
    after: Vec<u64>,
    /// Capacities: source → stage 0, stage 0 → collector, then one per
    /// replication (stage k → stage k+1).
    caps: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
struct Plan {
    pipes: Vec<Pipe>,
    fans: Vec<Fan>,
    dyns: Vec<Dyn>,
    reps: Vec<Rep>,
    /// Number of sources (ids 0..sources).
    sources: u32,
}

/// What a run of a plan must do.
#[derive(Debug)]
struct Expect {
    per_source: Vec<u64>,
    tasks: u64,
    writes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pipe,
    Fan,
    Dyn,
    Rep,
}

fn caps(rng: &mut Rng, n: usize) -> Vec<usize> {
    (0..n).map(|_| rng.range(1, 8)).collect()
}

impl Plan {
    /// A random plan with `count` networks of each kind in `kinds`, about
    /// `msgs` messages per source.
    fn random(seed: u64, kinds: &[Kind], count: usize, msgs: usize) -> Plan {
        let mut rng = Rng::new(seed);
        let mut p = Plan::default();
        for &kind in kinds {
            for _ in 0..count {
                match kind {
                    Kind::Pipe => {
                        let depth = rng.range(0, 6);
                        let src = p.next_src();
                        p.pipes.push(Pipe {
                            src,
                            n: rng.range(1, msgs) as u64,
                            caps: caps(&mut rng, depth + 1),
                            yields: rng.range(0, 1) == 1,
                        });
                    }
                    Kind::Fan => {
                        let k = rng.range(1, 5);
                        let lanes = (0..k)
                            .map(|_| {
                                let depth = rng.range(1, 3);
                                Lane {
                                    src: p.next_src(),
                                    caps: caps(&mut rng, depth + 1),
                                }
                            })
                            .collect();
                        let n = rng.range(1, msgs * 2);
                        // Bursts to one lane, so that lanes fill up unevenly.
                        let mut assignment = Vec::with_capacity(n);
                        while assignment.len() < n {
                            let lane = rng.range(0, k - 1);
                            for _ in 0..rng.range(1, 12).min(n - assignment.len()) {
                                assignment.push(lane);
                            }
                        }
                        p.fans.push(Fan {
                            id: p.fans.len() as u32,
                            lanes,
                            assignment,
                        });
                    }
                    Kind::Dyn => {
                        let depth = rng.range(1, 8);
                        let src = p.next_src();
                        p.dyns.push(Dyn {
                            src,
                            n: rng.range(1, msgs) as u64,
                            caps: caps(&mut rng, depth + 1),
                        });
                    }
                    Kind::Rep => {
                        let n = rng.range(2, msgs.max(2)) as u64;
                        let reps = rng.range(1, 5);
                        let mut after = Vec::new();
                        let mut left = n - 1;
                        for _ in 0..reps {
                            if left == 0 {
                                break;
                            }
                            let a = rng.range(0, (left as usize).min(msgs / 3 + 1)) as u64;
                            after.push(a);
                            left -= a;
                        }
                        let c = caps(&mut rng, after.len() + 2);
                        let src = p.next_src();
                        p.reps.push(Rep {
                            src,
                            n,
                            after,
                            caps: c,
                        });
                    }
                }
            }
        }
        p
    }

    fn next_src(&mut self) -> u32 {
        self.sources += 1;
        self.sources - 1
    }

    fn expect(&self) -> Expect {
        let mut per_source = vec![0u64; self.sources as usize];
        let mut tasks = 1; // main, the collector
        let mut writes = 0;
        for p in &self.pipes {
            per_source[p.src as usize] = p.n;
            tasks += p.caps.len() as u64; // the source and the relays
            writes += p.n * p.caps.len() as u64;
        }
        for f in &self.fans {
            tasks += 1; // the distributor
            writes += f.assignment.len() as u64;
            for (i, lane) in f.lanes.iter().enumerate() {
                let n = f.assignment.iter().filter(|&&l| l == i).count() as u64;
                per_source[lane.src as usize] = n;
                let relays = lane.caps.len() as u64 - 1;
                tasks += relays;
                writes += n * relays;
            }
        }
        for d in &self.dyns {
            per_source[d.src as usize] = d.n;
            tasks += d.caps.len() as u64;
            writes += d.n * d.caps.len() as u64;
        }
        for r in &self.reps {
            per_source[r.src as usize] = r.n;
            tasks += 2 + r.after.len() as u64; // source, stage 0, one per replication
            writes += r.n; // the source
            let mut seen = r.n;
            writes += seen; // stage 0
            for a in &r.after {
                seen -= a;
                writes += seen; // the stage it spawned
            }
        }
        Expect {
            per_source,
            tasks,
            writes,
        }
    }

    /// Spawns the whole network (called in the collector task) and returns
    /// the streams the collector reads.
    fn build(&self) -> Vec<Reader<Msg>> {
        let mut sinks = Vec::new();
        for p in &self.pipes {
            build_pipe(p, &mut sinks);
        }
        for f in &self.fans {
            build_fan(f, &mut sinks);
        }
        for d in &self.dyns {
            build_dyn(d, &mut sinks);
        }
        for r in &self.reps {
            build_rep(r, &mut sinks);
        }
        sinks
    }
}

fn source(src: u32, n: u64, mut out: Writer<Msg>) {
    for seq in 0..n {
        out.write((src, seq)).expect("source: downstream closed");
    }
}

fn relay(mut input: Reader<Msg>, mut out: Writer<Msg>, yields: bool) {
    let mut k = 0u64;
    while let Some(m) = input.read() {
        out.write(m).expect("relay: downstream closed");
        k += 1;
        if yields && k.is_multiple_of(7) {
            rill::yield_now();
        }
    }
}

/// Source → relays → a stream for the collector.
fn chain(
    name: &str,
    first: Reader<Msg>,
    caps: &[usize],
    yields: bool,
    sinks: &mut Vec<Reader<Msg>>,
) {
    let mut r = first;
    for (i, &cap) in caps.iter().enumerate() {
        let (w2, r2) = rill::stream(cap);
        let input = std::mem::replace(&mut r, r2);
        rill::spawn(format!("{name}/relay/{i}"), move || {
            relay(input, w2, yields)
        });
    }
    sinks.push(r);
}

fn build_pipe(p: &Pipe, sinks: &mut Vec<Reader<Msg>>) {
    let (w, r) = rill::stream(p.caps[0]);
    let (src, n) = (p.src, p.n);
    rill::spawn(format!("src/pipe/{src}"), move || source(src, n, w));
    chain(&format!("pipe/{src}"), r, &p.caps[1..], p.yields, sinks);
}

fn build_fan(f: &Fan, sinks: &mut Vec<Reader<Msg>>) {
    let mut outs = Vec::new();
    let mut srcs = Vec::new();
    for lane in &f.lanes {
        let (w, r) = rill::stream(lane.caps[0]);
        outs.push(w);
        srcs.push(lane.src);
        chain(
            &format!("fan/{}/lane/{}", f.id, lane.src),
            r,
            &lane.caps[1..],
            false,
            sinks,
        );
    }
    let assignment = f.assignment.clone();
    rill::spawn(format!("fan/{}/dist", f.id), move || {
        let mut seqs = vec![0u64; outs.len()];
        for (j, &lane) in assignment.iter().enumerate() {
            let m = (srcs[lane], seqs[lane]);
            seqs[lane] += 1;
            if j % 2 == 0 {
                match outs[lane].try_write(m) {
                    Ok(()) => {}
                    Err(TryWriteError::Full(m)) => outs[lane].write(m).expect("lane closed"),
                    Err(TryWriteError::Closed(_)) => panic!("lane {lane} closed"),
                }
            } else {
                outs[lane].write(m).expect("lane closed");
            }
        }
    });
}

fn dyn_relay(
    idx: usize,
    src: u32,
    mut input: Reader<Msg>,
    caps: Arc<Vec<usize>>,
    last: Writer<Msg>,
) {
    let Some(first) = input.read() else {
        panic!("dyn relay {idx} of source {src} got no message");
    };
    let depth = caps.len() - 1;
    let mut out = if idx + 1 < depth {
        let (w, r) = rill::stream(caps[idx + 1]);
        let caps = caps.clone();
        rill::spawn(format!("dyn/{src}/relay/{}", idx + 1), move || {
            dyn_relay(idx + 1, src, r, caps, last)
        });
        w
    } else {
        last
    };
    out.write(first).expect("dyn relay: downstream closed");
    while let Some(m) = input.read() {
        out.write(m).expect("dyn relay: downstream closed");
    }
}

fn build_dyn(d: &Dyn, sinks: &mut Vec<Reader<Msg>>) {
    let (w, r) = rill::stream(d.caps[0]);
    let (last_w, last_r) = rill::stream(*d.caps.last().unwrap());
    let (src, n) = (d.src, d.n);
    rill::spawn(format!("src/dyn/{src}"), move || source(src, n, w));
    let caps = Arc::new(d.caps.clone());
    rill::spawn(format!("dyn/{src}/relay/0"), move || {
        dyn_relay(0, src, r, caps, last_w)
    });
    sinks.push(last_r);
}

fn rep_stage(k: usize, plan: Arc<Rep>, mut input: Reader<Msg>, mut out: Writer<Msg>) {
    if let Some(&after) = plan.after.get(k) {
        for _ in 0..after {
            let m = input.read().expect("rep stage: input ended early");
            out.write(m).expect("rep stage: downstream closed");
        }
        // Replicate: from now on our output goes to a new stage, which takes
        // over the old output.
        let (w, r) = rill::stream(plan.caps[k + 2]);
        let old = out.replace(w);
        let p = plan.clone();
        rill::spawn(format!("rep/{}/stage/{}", plan.src, k + 1), move || {
            rep_stage(k + 1, p, r, old)
        });
    }
    while let Some(m) = input.read() {
        out.write(m).expect("rep stage: downstream closed");
    }
}

fn build_rep(r: &Rep, sinks: &mut Vec<Reader<Msg>>) {
    let (w, rd) = rill::stream(r.caps[0]);
    let (out_w, out_r) = rill::stream(r.caps[1]);
    let (src, n) = (r.src, r.n);
    rill::spawn(format!("src/rep/{src}"), move || source(src, n, w));
    let plan = Arc::new(r.clone());
    rill::spawn(format!("rep/{src}/stage/0"), move || {
        rep_stage(0, plan, rd, out_w)
    });
    sinks.push(out_r);
}

/// Reads every sink to its end through `poll`, checking per-source order,
/// and returns the count per source.
fn collect(mut readers: Vec<Reader<Msg>>, sources: usize) -> Vec<u64> {
    let mut next = vec![0u64; sources];
    let mut check = |(src, seq): Msg| {
        let s = src as usize;
        assert_eq!(
            seq, next[s],
            "source {src}: got seq {seq}, expected {} (lost, duplicated or reordered)",
            next[s]
        );
        next[s] += 1;
    };
    let mut round = 0u64;
    while let Some(i) = rill::poll(&mut readers) {
        round += 1;
        if round.is_multiple_of(3) {
            // Drain what is there without blocking.
            loop {
                match readers[i].try_read() {
                    Ok(m) => check(m),
                    Err(TryReadError::Empty) => break,
                    Err(TryReadError::Closed) => {
                        readers.swap_remove(i);
                        break;
                    }
                }
            }
        } else {
            match readers[i].read() {
                Some(m) => check(m),
                None => {
                    readers.swap_remove(i);
                }
            }
        }
    }
    next
}

fn check_stats(label: &str, stats: &RunStats, exp: &Expect, workers: usize) {
    assert_eq!(stats.tasks_created, exp.tasks, "{label}: tasks_created");
    assert_eq!(stats.workers.len(), workers, "{label}: worker stats");
    let per_worker: u64 = stats.workers.iter().map(|w| w.tasks_created).sum();
    assert_eq!(per_worker, stats.tasks_created, "{label}: per-worker tasks");
    let dispatches: u64 = stats.workers.iter().map(|w| w.dispatches).sum();
    assert_eq!(
        dispatches, stats.dispatches,
        "{label}: per-worker dispatches"
    );
    assert!(
        stats.dispatches >= stats.tasks_created,
        "{label}: {} dispatches for {} tasks",
        stats.dispatches,
        stats.tasks_created
    );
    assert_eq!(stats.messages, exp.writes, "{label}: messages written");
}

/// A runtime of `workers` unpinned workers under `mapping`.
fn runtime(workers: usize, mapping: rill::Mapping) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .mapping(mapping)
        .build()
        .unwrap()
}

fn run_plan(label: &str, plan: &Plan, workers: usize, mapping: rill::Mapping) {
    let exp = plan.expect();
    let plan = Arc::new(plan.clone());
    let sources = plan.sources as usize;
    let label2 = label.to_string();
    let (stats, got) = with_timeout(label, RUN_GUARD_S, move || {
        let mut rt = runtime(workers, mapping);
        let got = Arc::new(Mutex::new(None));
        let g = got.clone();
        let stats = rt
            .run_main_stats(move || {
                let sinks = plan.build();
                *g.lock().unwrap() = Some(collect(sinks, sources));
            })
            .unwrap_or_else(|e| panic!("{label2}: {e}"));
        let got = got.lock().unwrap().take().expect("the collector's counts");
        (stats, got)
    });
    if std::env::var("RILL_STRESS_TIMES").is_ok() {
        eprintln!("{label}: {:?}", stats.wall);
    }
    assert_eq!(got, exp.per_source, "{label}: messages per source");
    check_stats(label, &stats, &exp, workers);
}

/// Runs plans from `seeds` on the given worker counts and every mapping.
fn sweep(
    workers: &[usize],
    kinds: &[Kind],
    seeds: std::ops::Range<u64>,
    count: usize,
    msgs: usize,
) {
    for seed in seeds {
        let plan = Plan::random(seed, kinds, count, msgs);
        for &workers in workers {
            for (mname, mapping) in mappings(workers, PREFIXES) {
                let label = format!("{kinds:?} seed {seed}, {workers} workers, {mname}");
                run_plan(&label, &plan, workers, mapping);
            }
        }
    }
}

// The same sweeps on 2 and 4 workers. They once caught a false deadlock
// report (an idle worker could wake, post a task and go idle again between
// the two reads of the idle count); see
// `errors::false_deadlock_between_a_producer_and_a_consumer`.

#[test]
fn pipelines() {
    sweep(&[1], &[Kind::Pipe], 0..8, 3, 400);
}

#[test]
fn pipelines_on_2_and_4_workers() {
    sweep(&[2, 4], &[Kind::Pipe], 0..3, 3, 400);
}

#[test]
fn fan_out_and_merge() {
    sweep(&[1], &[Kind::Fan], 100..108, 2, 300);
}

#[test]
fn fan_out_and_merge_on_2_and_4_workers() {
    sweep(&[2, 4], &[Kind::Fan], 100..103, 2, 300);
}

#[test]
fn dynamic_spawning() {
    sweep(&[1], &[Kind::Dyn], 200..208, 3, 300);
}

#[test]
fn dynamic_spawning_on_2_and_4_workers() {
    sweep(&[2, 4], &[Kind::Dyn], 200..203, 3, 300);
}

#[test]
fn serial_replication_with_replace() {
    sweep(&[1], &[Kind::Rep], 300..308, 3, 300);
}

#[test]
fn serial_replication_with_replace_on_2_and_4_workers() {
    sweep(&[2, 4], &[Kind::Rep], 300..303, 3, 300);
}

const ALL: &[Kind] = &[Kind::Pipe, Kind::Fan, Kind::Dyn, Kind::Rep];

#[test]
fn mixed_networks() {
    sweep(&[1], ALL, 400..406, 2, 300);
}

#[test]
fn mixed_networks_on_2_and_4_workers() {
    sweep(&[2, 4], ALL, 400..402, 2, 300);
}

/// A chain where every relay spawns its successor, long enough that the
/// chain outgrows one slab of stacks and the ready queues grow.
fn long_dynamic_chain_on(workers: &[usize]) {
    let plan = Plan {
        dyns: vec![Dyn {
            src: 0,
            n: 60,
            caps: (0..301).map(|i| 1 + i % 8).collect(),
        }],
        sources: 1,
        ..Plan::default()
    };
    for &workers in workers {
        for (mname, mapping) in mappings(workers, PREFIXES) {
            run_plan(
                &format!("long chain, {workers} workers, {mname}"),
                &plan,
                workers,
                mapping,
            );
        }
    }
}

#[test]
fn long_dynamic_chain() {
    long_dynamic_chain_on(&[1]);
}

#[test]
fn long_dynamic_chain_on_2_and_4_workers() {
    long_dynamic_chain_on(&[2, 4]);
}

/// Many seeds, more and longer networks: for manual runs
/// (`cargo test -p rill --release --test stress -- --ignored soak`; about
/// 4 s per seed in release on 2 cores; `RILL_SOAK_SEEDS` sets the count,
/// default 50; `RILL_STRESS_TIMES=1` prints each run's wall time). It runs
/// on 1, 2 and 4 workers, so it meets the false-deadlock bug noted above.
#[test]
#[ignore = "soak test: long; run by hand"]
fn soak() {
    let all = [Kind::Pipe, Kind::Fan, Kind::Dyn, Kind::Rep];
    let seeds: u64 = std::env::var("RILL_SOAK_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    sweep(WORKERS, &all, 10_000..10_000 + seeds, 4, 5_000);
}

/// `Reader::replace` moves a reader between streams mid-stream and back:
/// nothing is lost or reordered on either.
#[test]
fn reader_replace_switches_streams_mid_stream() {
    reader_replace_on(&[1]);
}

#[test]
fn reader_replace_switches_streams_mid_stream_on_2_and_4_workers() {
    reader_replace_on(&[2, 4]);
}

fn reader_replace_on(workers: &[usize]) {
    for &workers in workers {
        for (mname, mapping) in mappings(workers, PREFIXES) {
            let label = format!("reader replace, {workers} workers, {mname}");
            let l2 = label.clone();
            let stats = with_timeout(&label, RUN_GUARD_S, move || {
                let mut rt = runtime(workers, mapping);
                rt.run_main_stats(|| {
                    let mut readers = Vec::new();
                    for src in 0..3u32 {
                        let (w, r) = rill::stream(1 + src as usize * 3);
                        rill::spawn(format!("src/splice/{src}"), move || source(src, 300, w));
                        readers.push(r);
                    }
                    let mut next = [0u64; 3];
                    let mut take = |r: &mut Reader<Msg>, k: usize| {
                        for _ in 0..k {
                            let (src, seq) = r.read().expect("early end");
                            assert_eq!(seq, next[src as usize], "source {src}");
                            next[src as usize] += 1;
                        }
                    };
                    let mut c = readers.pop().unwrap(); // source 2
                    let mut b = readers.pop().unwrap(); // source 1
                    let mut a = readers.pop().unwrap(); // source 0
                    take(&mut a, 100);
                    let a_rest = a.replace(b); // a now reads source 1
                    take(&mut a, 150);
                    b = a.replace(a_rest); // back to source 0
                    take(&mut a, 200);
                    let a_rest = a.replace(c); // source 2, to its end
                    take(&mut a, 300);
                    assert_eq!(a.read(), None);
                    c = a.replace(b);
                    take(&mut a, 150);
                    assert_eq!(a.read(), None);
                    a = a_rest;
                    assert_eq!(a.received(), 300);
                    assert_eq!(a.read(), None);
                    assert_eq!(c.read(), None);
                    assert_eq!(next, [300, 300, 300]);
                })
                .unwrap_or_else(|e| panic!("{l2}: {e}"))
            });
            assert_eq!(stats.tasks_created, 4, "{label}");
            assert_eq!(stats.messages, 900, "{label}");
        }
    }
}

/// Tasks land where the mapping says: manual (longest prefix), partitioned
/// (block of the prefix list), `spawn_on` under any policy; round-robin uses
/// every worker.
#[test]
fn placement_follows_the_mapping() {
    let names = [
        "main", "src/a", "src/b", "pipe/1", "pipe/2", "fan/x", "dyn/y", "rep/z", "other/1",
        "other/2", "other/3", "other/4",
    ];
    for &workers in WORKERS {
        for (mname, mapping) in mappings(workers, PREFIXES) {
            let label = format!("placement, {workers} workers, {mname}");
            let m2 = mapping.clone();
            let placed = with_timeout(&label, RUN_GUARD_S, move || {
                let mut rt = runtime(workers, m2);
                let got = Arc::new(Mutex::new(Vec::new()));
                let g = got.clone();
                // The tasks report through a mutex, not streams: nothing
                // blocks, so this test is about placement alone.
                let stats = rt
                    .run_main_stats(move || {
                        let report = |name: String, on: Option<usize>| {
                            let g = g.clone();
                            let f = move || {
                                let me = rill::current().unwrap();
                                g.lock().unwrap().push((me.name, me.worker, on));
                            };
                            match on {
                                Some(k) => {
                                    rill::try_spawn_on(k, name, f).unwrap();
                                }
                                None => {
                                    rill::spawn(name, f);
                                }
                            }
                        };
                        for n in &names[1..] {
                            report(n.to_string(), None);
                        }
                        for k in 0..workers {
                            report(format!("pipe/pinned/{k}"), Some(k));
                        }
                        let me = rill::current().unwrap();
                        g.lock().unwrap().push((me.name, me.worker, None));
                    })
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(stats.tasks_created, (names.len() + workers) as u64);
                let v = got.lock().unwrap().clone();
                assert_eq!(v.len(), names.len() + workers);
                v
            });
            let mut used = vec![false; workers];
            for (name, worker, on) in &placed {
                used[*worker] = true;
                let want = match (on, &mapping) {
                    // A thief may take it before it first runs.
                    (Some(_), rill::Mapping::Steal) => None,
                    (Some(k), _) => Some(*k),
                    (None, rill::Mapping::Manual(t)) => t.lookup(name),
                    (None, rill::Mapping::Partitioned(list)) => list
                        .iter()
                        .enumerate()
                        .filter(|(_, p)| name.starts_with(p.as_str()))
                        .max_by_key(|(_, p)| p.len())
                        .map(|(i, _)| i * workers / list.len()),
                    _ => None,
                };
                if let Some(w) = want {
                    assert_eq!(*worker, w, "{label}: task '{name}'");
                }
            }
            if matches!(mapping, rill::Mapping::RoundRobin) {
                assert!(used.iter().all(|&u| u), "{label}: workers used {used:?}");
            }
        }
    }
}

/// A source outside the run: a plain thread (writing with `try_write`,
/// retrying while the stream is full) or a task of a second runtime on
/// another thread.
#[derive(Debug, Clone, Copy)]
enum Outside {
    Thread,
    Runtime,
}

/// Starts source `src` outside the run, writing `n` messages to `w`.
fn outside_source(how: Outside, src: u32, n: u64, w: Writer<Msg>) -> std::thread::JoinHandle<()> {
    match how {
        Outside::Thread => {
            w.hold_outside();
            std::thread::spawn(move || {
                let mut w = w;
                for seq in 0..n {
                    let mut m = (src, seq);
                    loop {
                        match w.try_write(m) {
                            Ok(()) => break,
                            Err(TryWriteError::Full(back)) => {
                                m = back;
                                std::thread::yield_now();
                            }
                            Err(e) => panic!("outside source {src}: {e}"),
                        }
                    }
                }
            })
        }
        Outside::Runtime => std::thread::spawn(move || {
            let mut rt = runtime(1, rill::Mapping::RoundRobin);
            rt.spawn_with(format!("other/src/{src}"), w, move |w| source(src, n, w));
            rt.run().expect("the feeding runtime");
        }),
    }
}

/// Random pipelines in the run fed by sources outside it (threads and a
/// second runtime's tasks, mixed), on 1, 2 and 4 workers under every
/// mapping: every message arrives once and in order, and every run ends.
#[test]
fn pipelines_fed_from_outside_the_run() {
    for seed in 0..4u64 {
        let mut rng = Rng::new(seed);
        let sources = rng.range(1, 4);
        let n = rng.range(200, 1500) as u64;
        let caps: Vec<Vec<usize>> = (0..sources)
            .map(|_| {
                let d = rng.range(1, 5);
                caps(&mut rng, d)
            })
            .collect();
        for &workers in WORKERS {
            for (mname, mapping) in mappings(workers, PREFIXES) {
                let label = format!("outside seed {seed}, {workers} workers, {mname}");
                let caps = caps.clone();
                let l2 = label.clone();
                let got = with_timeout(&label, RUN_GUARD_S, move || {
                    let mut feeders = Vec::new();
                    let mut firsts = Vec::new();
                    for (s, c) in caps.iter().enumerate() {
                        let (w, r) = rill::stream::<Msg>(c[0]);
                        let how = if s % 2 == 0 {
                            Outside::Thread
                        } else {
                            Outside::Runtime
                        };
                        feeders.push(outside_source(how, s as u32, n, w));
                        firsts.push(r);
                    }
                    let mut rt = runtime(workers, mapping);
                    let (got, _) = rt
                        .run_main(move || {
                            let mut sinks = Vec::new();
                            for (s, (r, c)) in firsts.into_iter().zip(&caps).enumerate() {
                                chain(&format!("pipe/{s}"), r, &c[1..], s % 2 == 1, &mut sinks);
                            }
                            collect(sinks, caps.len())
                        })
                        .unwrap_or_else(|e| panic!("{l2}: {e}"));
                    for f in feeders {
                        f.join().expect("a feeder");
                    }
                    got
                });
                assert_eq!(got, vec![n; sources], "{label}: messages per source");
            }
        }
    }
}

/// Sources whose messages come out of a run nested in the source task (a
/// pipeline of its own, on its own workers), under random outer networks:
/// both runs deliver every message once and in order, and the outer run's
/// counts leave out everything of the inner runs.
#[test]
fn pipelines_with_runs_nested_in_their_sources() {
    for seed in 0..3u64 {
        let plan = Plan::random(seed, &[Kind::Pipe], 2, 300);
        for &workers in &[1, 2] {
            for (mname, mapping) in mappings(workers, PREFIXES) {
                let label = format!("nested seed {seed}, {workers} workers, {mname}");
                let l2 = label.clone();
                let sources = plan.sources as usize;
                let exp = plan.expect();
                let per = exp.per_source.clone();
                let got = with_timeout(&label, RUN_GUARD_S, move || {
                    let mut rt = runtime(workers, mapping);
                    let (got, stats) = rt
                        .run_main(move || {
                            let mut sinks = Vec::new();
                            for (s, &n) in per.iter().enumerate() {
                                let (w, r) = rill::stream::<Msg>(4);
                                rill::spawn(format!("src/nested/{s}"), move || {
                                    let mut w = w;
                                    for m in nested_sequence(s as u32, n) {
                                        w.write(m).expect("nested source: downstream closed");
                                    }
                                });
                                chain(&format!("pipe/{s}"), r, &[2, 3], false, &mut sinks);
                            }
                            collect(sinks, sources)
                        })
                        .unwrap_or_else(|e| panic!("{l2}: {e}"));
                    // main, a source and two relays per source.
                    assert_eq!(stats.tasks_created, 1 + 3 * per_len(&got), "{l2}");
                    got
                });
                assert_eq!(got, exp.per_source, "{label}: messages per source");
            }
        }
    }
}

fn per_len(v: &[u64]) -> u64 {
    v.len() as u64
}

/// The messages of source `src`, made by a pipeline in a run of its own
/// (one worker of its own) and checked on the way.
fn nested_sequence(src: u32, n: u64) -> Vec<Msg> {
    let mut inner = runtime(1, rill::Mapping::RoundRobin);
    let (out, stats) = inner
        .run_main(move || {
            let (w, r) = rill::stream::<Msg>(3);
            rill::spawn("inner/src", move || source(src, n, w));
            let mut sinks = Vec::new();
            chain("inner/pipe", r, &[1, 2], true, &mut sinks);
            let mut r = sinks.pop().unwrap();
            std::iter::from_fn(|| r.read()).collect::<Vec<Msg>>()
        })
        .expect("the nested run");
    assert_eq!(stats.tasks_created, 4, "inner main, source and two relays");
    assert!(out.iter().enumerate().all(|(i, m)| *m == (src, i as u64)));
    assert_eq!(out.len() as u64, n);
    out
}
