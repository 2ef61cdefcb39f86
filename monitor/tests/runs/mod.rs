//! Real runs of the runtime (the `rill` dev-dependency) with monitoring on,
//! for the analyses that explain a run.
#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use rill::{MonitorConfig, MonitorFlags, Runtime};

/// Busy-waits for `d` (work the task does, as the CPU sees it).
pub fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn runtime(dir: &Path, workers: usize, mapping: rill::Mapping) -> Runtime {
    runtime_with(dir, workers, mapping, MonitorFlags::FULL)
}

/// A runtime monitoring with `flags` into `dir`.
pub fn runtime_with(
    dir: &Path,
    workers: usize,
    mapping: rill::Mapping,
    flags: MonitorFlags,
) -> Runtime {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .mapping(mapping)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .unwrap()
}

/// A pipe: `pipe/src` writes `messages` numbers through `relays` relays
/// (`pipe/relay/0`, ...) to `pipe/sink`; relay `slow` (if any) spins
/// `work` per message. Streams hold `capacity` messages.
pub fn pipe(
    dir: &Path,
    workers: usize,
    mapping: rill::Mapping,
    relays: usize,
    slow: Option<usize>,
    work: Duration,
    messages: u64,
) {
    let names: Vec<String> = (0..relays).map(|k| format!("pipe/relay/{k}")).collect();
    chain(dir, workers, mapping, &names, slow, work, messages);
}

/// A chain `pipe/src` -> `names[0]` -> ... -> `pipe/sink`; stage `slow`
/// spins `work` per message.
pub fn chain(
    dir: &Path,
    workers: usize,
    mapping: rill::Mapping,
    names: &[String],
    slow: Option<usize>,
    work: Duration,
    messages: u64,
) {
    chain_with(runtime(dir, workers, mapping), names, slow, work, messages);
}

/// [`chain`] on the runtime `rt`; the run's statistics.
pub fn chain_with(
    mut rt: Runtime,
    names: &[String],
    slow: Option<usize>,
    work: Duration,
    messages: u64,
) -> rill::RunStats {
    let names = names.to_vec();
    rt.run_main(move || {
        let (mut w, mut r) = rill::stream::<u64>(4);
        rill::spawn("pipe/src", move || {
            for i in 0..messages {
                w.write(i).unwrap();
            }
        });
        for (k, name) in names.into_iter().enumerate() {
            let (mut w2, r2) = rill::stream::<u64>(4);
            let mut input = std::mem::replace(&mut r, r2);
            let cost = if slow == Some(k) {
                work
            } else {
                Duration::ZERO
            };
            rill::spawn(name, move || {
                while let Some(v) = input.read() {
                    spin(cost);
                    w2.write(v + 1).unwrap();
                }
            });
        }
        rill::spawn("pipe/sink", move || {
            let mut n = 0;
            while r.read().is_some() {
                n += 1;
            }
            assert_eq!(n, messages);
        });
    })
    .unwrap()
    .1
}

/// A ring of `tasks` tasks (`ring/0`, ...) passing `tokens` tokens
/// `rounds` times around; task `slow` spins `work` per token.
pub fn ring(
    dir: &Path,
    workers: usize,
    tasks: usize,
    tokens: u64,
    rounds: u64,
    slow: usize,
    work: Duration,
) {
    let mut rt = runtime(dir, workers, rill::Mapping::RoundRobin);
    rt.run_main(move || {
        let mut ends: Vec<_> = (0..tasks).map(|_| rill::stream::<u64>(8)).collect();
        // Task k reads stream k and writes stream k + 1 (mod tasks).
        let mut readers: Vec<Option<rill::Reader<u64>>> = Vec::new();
        let mut writers: Vec<Option<rill::Writer<u64>>> = Vec::new();
        for (w, r) in ends.drain(..) {
            writers.push(Some(w));
            readers.push(Some(r));
        }
        for k in 0..tasks {
            let mut input = readers[k].take().unwrap();
            let mut output = writers[(k + 1) % tasks].take().unwrap();
            let cost = if k == slow { work } else { Duration::ZERO };
            let total = tokens * rounds;
            rill::spawn(format!("ring/{k}"), move || {
                // Task 0 injects the tokens, then every task passes on
                // what it reads; each token goes `rounds` times around.
                if k == 0 {
                    for t in 0..tokens {
                        output.write(t).unwrap();
                    }
                }
                let mut passed = 0;
                while passed < total {
                    let Some(v) = input.read() else { break };
                    spin(cost);
                    passed += 1;
                    // Task 0 retires a token after its last round.
                    if k == 0 && passed > total - tokens {
                        continue;
                    }
                    if output.write(v).is_err() {
                        break;
                    }
                }
            });
        }
    })
    .unwrap();
}
