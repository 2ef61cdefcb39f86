//! Where the default mapping (`Mapping::Adaptive`) puts tasks, what a run's
//! statistics say about it, and `Mapping::Profile`'s round trip.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::with_timeout;
use rill::{Mapping, Reader, Runtime, Writer};

/// Where each task (by name) started.
type Seen = Arc<Mutex<HashMap<String, usize>>>;

fn note(seen: &Seen) {
    let me = rill::current().expect("in a task");
    seen.lock().unwrap().insert(me.name, me.worker);
}

/// A relay: passes every message on, then ends.
fn relay(seen: Seen, mut r: Reader<u64>, mut w: Writer<u64>) {
    note(&seen);
    while let Some(v) = r.read() {
        if w.write(v + 1).is_err() {
            return;
        }
    }
}

/// How many of the tasks in `seen` started on worker `w`.
fn started_on(seen: &Seen, w: usize) -> usize {
    seen.lock().unwrap().values().filter(|&&x| x == w).count()
}

/// Asserts that the `n` tasks of `what` all ran (each noted where it
/// started) and worker 1 started at least one of them.
fn all_ran_some_on_worker_1(seen: &Seen, n: usize, what: &str) {
    let on_1 = started_on(seen, 1);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), n, "{what}: every task ran: {seen:?}");
    assert!(on_1 >= 1, "{what}: worker 1 started none: {seen:?}");
}

/// How often neighbours of the chain `names` started on different workers.
fn cuts(seen: &Seen, names: &[String]) -> usize {
    let s = seen.lock().unwrap();
    let ws: Vec<usize> = names.iter().map(|n| s[n]).collect();
    ws.windows(2).filter(|p| p[0] != p[1]).count()
}

/// A chain of 40 relays spawned in order by one task on 2 workers: the
/// idle worker takes a contiguous run of new tasks (never one here and
/// one there), so the chain is cut at most once (W - 1), and the messages
/// arrive in order.
#[test]
fn a_chain_spawned_by_one_task_is_cut_at_most_w_minus_1_times() {
    with_timeout("chain cuts", 120, || {
        for round in 0..10 {
            let seen: Seen = Arc::default();
            let s2 = seen.clone();
            let mut rt = Runtime::builder().workers(2).build().unwrap();
            let n = 40;
            let ((), stats) = rt
                .run_main(move || {
                    let (mut head, mut r) = rill::stream::<u64>(4);
                    for i in 0..n {
                        let (w, next) = rill::stream::<u64>(4);
                        let s3 = s2.clone();
                        rill::spawn_with(format!("chain/{i:02}"), (r, w), move |(r, w)| {
                            relay(s3, r, w)
                        });
                        r = next;
                    }
                    rill::spawn("chain/source", move || {
                        for v in 0..1_000u64 {
                            head.write(v).unwrap();
                        }
                    });
                    let got: Vec<u64> = std::iter::from_fn(|| r.read()).collect();
                    assert_eq!(got, (n..1_000 + n).collect::<Vec<_>>());
                })
                .expect("run");
            let names: Vec<String> = (0..n).map(|i| format!("chain/{i:02}")).collect();
            let c = cuts(&seen, &names);
            assert!(
                c <= 1,
                "round {round}: the chain was cut {c} times: {seen:?}"
            );
            // Every task started once: placed where it started, or taken.
            let started: u64 = stats.workers.iter().map(|w| w.placed + w.steals).sum();
            assert_eq!(started, n + 2, "{stats:?}");
        }
    });
}

/// Tasks handed their ends before the run (`Runtime::spawn_with`) are cut
/// into W blocks along the graph of their streams (`cut.rs`): two chains
/// of a source and 6 relays on 2 workers, and a sink added first, land
/// whole, one per worker; a chain of 9 relays on 3 workers is cut exactly
/// twice, in flow order. Nothing is taken from these blocks.
#[test]
fn a_graph_handed_over_before_the_run_is_partitioned_with_its_chains_whole() {
    with_timeout("blocks", 120, || {
        for (workers, chains, len) in [(2usize, 2usize, 6usize), (3, 1, 9)] {
            let seen: Seen = Arc::default();
            let mut rt = Runtime::builder().workers(workers).build().unwrap();
            let mut heads = Vec::new();
            let mut tails = Vec::new();
            for _ in 0..chains {
                let (w, r) = rill::stream::<u64>(4);
                heads.push((w, r));
            }
            let mut chains_io = Vec::new();
            for (w, r) in heads {
                let (tw, tr) = rill::stream::<u64>(4);
                tails.push(tr);
                chains_io.push((w, r, tw));
            }
            // The sink first: task 0.
            let sums = Arc::new(Mutex::new(Vec::new()));
            let s2 = sums.clone();
            rt.spawn_with("g/sink", tails, move |outs| {
                for mut r in outs {
                    s2.lock()
                        .unwrap()
                        .push(std::iter::from_fn(|| r.read()).sum::<u64>());
                }
            });
            let mut names = Vec::new();
            for (c, (head, mut r, tail)) in chains_io.into_iter().enumerate() {
                let s = seen.clone();
                rt.spawn_with(format!("g/{c}/source"), head, move |mut head| {
                    note(&s);
                    for v in 0..100 {
                        head.write(v).unwrap();
                    }
                });
                let mut chain = vec![format!("g/{c}/source")];
                let mut tail = Some(tail);
                for i in 0..len {
                    let w = if i + 1 == len {
                        tail.take().unwrap()
                    } else {
                        let (w, next) = rill::stream::<u64>(4);
                        let s = seen.clone();
                        let name = format!("g/{c}/{i}");
                        chain.push(name.clone());
                        rt.spawn_with(name, (r, w), move |(r, w)| relay(s, r, w));
                        r = next;
                        continue;
                    };
                    let s = seen.clone();
                    let name = format!("g/{c}/{i}");
                    chain.push(name.clone());
                    rt.spawn_with(name, (r, w), move |(r, w)| relay(s, r, w));
                    break;
                }
                names.push(chain);
            }
            let stats = rt.run().expect("run");
            let expect = (0..100).map(|v| v + len as u64).sum::<u64>();
            assert_eq!(*sums.lock().unwrap(), vec![expect; chains]);
            assert_eq!(stats.steals, 0, "blocks placed before the run stay");
            let s = seen.lock().unwrap();
            for (c, chain) in names.iter().enumerate() {
                let ws: Vec<usize> = chain.iter().map(|n| s[n]).collect();
                assert_eq!(ws.len(), len + 1);
                // In flow order, from worker 0 up.
                assert!(
                    ws.windows(2).all(|p| p[0] <= p[1]),
                    "{workers} workers: {chain:?}: {ws:?}"
                );
                let cuts = ws.windows(2).filter(|p| p[0] != p[1]).count();
                assert_eq!(cuts, if chains > 1 { 0 } else { workers - 1 }, "{ws:?}");
                if chains > 1 {
                    assert_eq!(ws[0], c, "chain {c} on worker {c}: {chain:?}");
                }
            }
            if chains == 2 {
                assert_ne!(s["g/0/0"], s["g/1/0"], "the two chains share the workers");
            }
        }
    });
}

/// The statistics say where messages went: a stream between two tasks on
/// different workers counts every message as crossed, one on a single
/// worker none.
#[test]
fn crossed_messages_are_counted() {
    with_timeout("crossed", 60, || {
        for (on, crossed) in [(1usize, 500u64), (0, 0)] {
            let mut rt = Runtime::builder()
                .workers(2)
                .mapping(Mapping::RoundRobin)
                .build()
                .unwrap();
            let (mut w, mut r) = rill::stream::<u64>(8);
            rt.spawn_on(0, "src", move || {
                for v in 0..500 {
                    w.write(v).unwrap();
                }
            });
            rt.spawn_on(on, "dst", move || while r.read().is_some() {});
            let stats = rt.run().expect("run");
            assert_eq!(stats.crossed, crossed, "reader on worker {on}");
            assert_eq!(stats.messages, 500);
            let placed: Vec<u64> = stats.workers.iter().map(|w| w.placed).collect();
            assert_eq!(placed, if on == 1 { vec![1, 1] } else { vec![2, 0] });
        }
    });
}

/// A pipeline of named stages, each noting where it started.
fn pipeline(rt: &mut Runtime, seen: &Seen, stages: usize) {
    let (mut head, mut r) = rill::stream::<u64>(4);
    for i in 0..stages {
        let (w, next) = rill::stream::<u64>(4);
        let s = seen.clone();
        rt.spawn_with(format!("p/{i}"), (r, w), move |(r, w)| relay(s, r, w));
        r = next;
    }
    let s = seen.clone();
    rt.spawn("p/source", move || {
        note(&s);
        for v in 0..200 {
            head.write(v).unwrap();
        }
    });
    let s = seen.clone();
    rt.spawn_with("p/sink", r, move |mut r| {
        note(&s);
        // A task the profile has not seen: placed adaptively (beside its
        // spawner), also on the second run.
        let s2 = s.clone();
        rill::spawn("late/one", move || note(&s2));
        while r.read().is_some() {}
    });
}

fn profiled(path: &Path, seen: &Seen) -> rill::RunStats {
    let mut rt = Runtime::builder()
        .workers(2)
        .mapping(Mapping::Profile(path.to_path_buf()))
        .build()
        .unwrap();
    pipeline(&mut rt, seen, 6);
    rt.run().expect("run")
}

/// `Mapping::Profile`: the first run (no file) records where its tasks
/// started and writes the file; the second loads it, places every task
/// it names there and steals nothing; names it does not know are placed
/// beside their spawner; a stale file (made for another worker count) is
/// replaced by the run that finds it.
#[test]
fn a_profile_is_written_then_loaded_and_a_stale_one_replaced() {
    with_timeout("profile", 120, || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.profile");
        let first: Seen = Arc::default();
        profiled(&path, &first);
        let text = std::fs::read_to_string(&path).expect("the profile was written");
        assert!(text.starts_with("# rill profile: 2 workers\n"), "{text}");
        let table = rill::ManualTable::parse(&text).unwrap();
        for (name, w) in first.lock().unwrap().iter() {
            assert_eq!(table.lookup(name), Some(*w), "{name}: {text}");
        }
        // Edit the plan: the stages to worker 1, the rest to 0.
        let mut plan = String::from("# rill profile: 2 workers\n\"p/\" = 1\n\"p/source\" = 0\n");
        plan.push_str("\"p/sink\" = 0\n");
        std::fs::write(&path, &plan).unwrap();
        let second: Seen = Arc::default();
        let stats = profiled(&path, &second);
        assert_eq!(stats.steals, 0, "a loaded profile is kept");
        let s = second.lock().unwrap();
        for i in 0..6 {
            assert_eq!(s[&format!("p/{i}")], 1);
        }
        assert_eq!(s["p/source"], 0);
        assert_eq!(s["late/one"], s["p/sink"], "unknown: beside its spawner");
        drop(s);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), plan, "kept");
        // Stale: made for 3 workers. The run warns (stderr), places
        // adaptively and writes a profile for 2.
        std::fs::write(&path, "# rill profile: 3 workers\n\"p/\" = 2\n").unwrap();
        profiled(&path, &Arc::default());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# rill profile: 2 workers\n"), "{text}");
    });
}

/// With a planner, the recording run is monitored in count mode into
/// `PATH.logs` and the planner's text (under the header) is the profile.
#[cfg(feature = "monitor")]
#[test]
fn a_planner_plans_the_profile_from_the_recording_runs_logs() {
    with_timeout("planner", 120, || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net.profile");
        let called = Arc::new(Mutex::new(None));
        let c2 = called.clone();
        let mut rt = Runtime::builder()
            .workers(2)
            .mapping(Mapping::Profile(path.clone()))
            .profile_planner(move |logs: &Path, workers| {
                let files = std::fs::read_dir(logs)
                    .map_err(|e| e.to_string())?
                    .filter(|e| {
                        e.as_ref()
                            .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".rlog"))
                    })
                    .count();
                *c2.lock().unwrap() = Some((logs.to_path_buf(), workers, files));
                Ok("\"p/\" = 1\n".into())
            })
            .build()
            .unwrap();
        pipeline(&mut rt, &Arc::default(), 3);
        let stats = rt.run().expect("run");
        let (logs, workers, files) = called.lock().unwrap().clone().expect("planner called");
        assert_eq!(logs, dir.path().join("net.profile.logs"));
        assert_eq!(stats.log_dir.as_deref(), Some(logs.as_path()));
        assert_eq!((workers, files), (2, 2), "one log per worker");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# rill profile: 2 workers\n\"p/\" = 1\n"
        );
    });
}

/// A worker given at spawn always wins under the default: idle workers
/// take never-started tasks from busy ones, but not one placed with
/// `spawn_on` (a program that places two tasks together on purpose, one
/// waiting for the other without blocking, would hang if a thief split
/// them).
#[test]
fn tasks_placed_with_spawn_on_are_never_taken_by_another_worker() {
    with_timeout("spawn_on under the default", 60, || {
        for _ in 0..20 {
            let mut rt = Runtime::builder().workers(2).pin(false).build().unwrap();
            let wrong = Arc::new(Mutex::new(Vec::new()));
            let w = wrong.clone();
            rt.spawn_on(0, "parent", move || {
                for i in 0..64 {
                    let w = w.clone();
                    rill::spawn_on(0, format!("child/{i}"), move || {
                        let at = rill::current().map(|t| t.worker);
                        if at != Some(0) {
                            w.lock().unwrap().push((i, at));
                        }
                    });
                }
                // Keep worker 0 busy while worker 1 idles, hungry for work.
                let t0 = std::time::Instant::now();
                while t0.elapsed() < std::time::Duration::from_millis(2) {
                    std::hint::spin_loop();
                }
            });
            rt.run().unwrap();
            let wrong = wrong.lock().unwrap();
            assert!(wrong.is_empty(), "ran elsewhere: {wrong:?}");
        }
    });
}

/// No worker stays idle while another holds unstarted tasks: a task on
/// worker 0 spawns 16 tasks that each compute for 3 ms without yielding,
/// so all 16 wait in worker 0's queue. The spawn that queues a task wakes
/// a parked worker (`notify_thief`), which takes a contiguous run of them
/// at its next idle turn: worker 1 starts some, and the run takes about
/// half the 48 ms one worker would need. The bound stated: an idle worker
/// is woken by the spawn itself, so it waits at most one park and wake
/// (tens of microseconds), not a tick; the test checks the behaviour (the
/// idle worker took tasks), not the time, which a loaded host decides.
#[test]
fn an_idle_worker_takes_unstarted_tasks_from_a_busy_one() {
    with_timeout("idle worker takes tasks", 120, || {
        let mut rt = Runtime::builder().workers(2).pin(false).build().unwrap();
        let seen: Seen = Arc::default();
        let s = seen.clone();
        rt.spawn_on(0, "parent", move || {
            for i in 0..16 {
                let s = s.clone();
                rill::spawn(format!("work/{i}"), move || {
                    note(&s);
                    let t0 = std::time::Instant::now();
                    while t0.elapsed() < std::time::Duration::from_millis(3) {
                        std::hint::spin_loop();
                    }
                });
            }
        });
        let stats = rt.run().unwrap();
        all_ran_some_on_worker_1(&seen, 16, "the 16 unstarted tasks worker 0 held");
        assert!(stats.steals >= 1, "{stats:?}");
    });
}

/// Tasks added before the run, `n` of them in a cycle of streams (task i
/// reads stream i, writes stream i+1) when `ring`, else a chain from a
/// source of `messages` values to a sink; returns where each started and
/// the run's statistics. The spin (so each waiting block's grace) is long,
/// so that what decides is what worker 0 sees, not the clock.
fn before_the_run(ring: bool, n: usize, messages: u64) -> (Vec<usize>, rill::RunStats) {
    let seen: Seen = Arc::default();
    let mut rt = Runtime::builder()
        .workers(2)
        .spin(std::time::Duration::from_millis(50))
        .build()
        .unwrap();
    let (mut ws, mut rs): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| {
            let (w, r) = rill::stream::<u64>(4);
            (Some(w), Some(r))
        })
        .unzip();
    for i in 0..n {
        let mut r = rs[i].take();
        let mut w = if ring || i + 1 < n {
            ws[(i + 1) % n].take()
        } else {
            None
        };
        let s = seen.clone();
        rt.spawn(format!("t/{i:02}"), move || {
            note(&s);
            if i == 0 {
                let w = w.as_mut().unwrap();
                if ring {
                    w.write(0).unwrap();
                } else {
                    for v in 0..messages {
                        w.write(v).unwrap();
                    }
                    return;
                }
            }
            let r = r.as_mut().unwrap();
            while let Some(h) = r.read() {
                if ring && h >= messages {
                    return;
                }
                if let Some(w) = w.as_mut() {
                    if w.write(h + 1).is_err() {
                        return;
                    }
                }
            }
        });
        // Stream 0's ends: the ring's last task writes it, task 0 reads
        // it; the chain's source reads nothing.
        if i == 0 && !ring {
            drop(rs[0].take());
        }
    }
    drop(ws);
    let stats = rt.run().expect("run");
    let s = seen.lock().unwrap();
    let at = (0..n).map(|i| s[&format!("t/{i:02}")]).collect();
    (at, stats)
}

/// A ring that passes one token has one task ready at a time: worker 0
/// starts its block, runs dry when the token reaches the other block, and
/// takes that block before it started (the waiting worker's grace is
/// long here), so the whole ring starts on worker 0 and no message
/// crosses. A chain from a source has two tasks ready at once after a few
/// dispatches, and its blocks start as planned (task i of n on worker
/// i·2/n), nothing taken.
#[test]
fn a_one_token_ring_added_before_the_run_starts_on_one_worker_a_chain_on_its_blocks() {
    with_timeout("plan", 120, || {
        for _ in 0..5 {
            let (at, stats) = before_the_run(true, 20, 2_000);
            assert_eq!(at, vec![0; 20], "the ring started on one worker");
            assert_eq!(stats.steals, 10, "worker 0 took the waiting block");
            assert_eq!(stats.crossed, 0, "{stats:?}");
            let (at, stats) = before_the_run(false, 20, 2_000);
            let want: Vec<usize> = (0..20).map(|i| i * 2 / 20).collect();
            assert_eq!(at, want, "the chain's blocks as planned");
            assert_eq!(stats.steals, 0, "{stats:?}");
        }
    });
}

/// A block's wait counts the time worker 0 ran, not the wall clock (on a
/// shared host worker 0 is off its core for milliseconds, which is no
/// sign of a computation); but a task of worker 0 asleep in a system call
/// is one (worker 0 can run nothing else meanwhile), and the kernel's
/// thread state tells it from a preempted one. Here worker 0's first task
/// sleeps for a second; the waiting worker's grace is 200 ms of wall
/// time (a spin of 5 ms), so worker 1 starts its block, as planned, while
/// the sleep lasts. Counting worker 0's CPU time alone, it would wait the
/// whole second, and worker 0, dry after the sleep, would take the block.
#[test]
fn a_block_starts_while_worker_0_sleeps_in_a_system_call() {
    use std::sync::atomic::{AtomicBool, Ordering};
    with_timeout("sleeping worker 0", 120, || {
        for _ in 0..3 {
            let seen: Seen = Arc::default();
            let slept = Arc::new(AtomicBool::new(false));
            let early: Arc<Mutex<Vec<bool>>> = Arc::default();
            let mut rt = Runtime::builder()
                .workers(2)
                .spin(std::time::Duration::from_millis(5))
                .build()
                .unwrap();
            for i in 0..4 {
                let (s, slept, early) = (seen.clone(), slept.clone(), early.clone());
                rt.spawn(format!("t/{i:02}"), move || {
                    note(&s);
                    if i == 0 {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                        slept.store(true, Ordering::SeqCst);
                    } else if i >= 2 {
                        early.lock().unwrap().push(!slept.load(Ordering::SeqCst));
                    }
                });
            }
            let stats = rt.run().expect("run");
            let s = seen.lock().unwrap();
            let at: Vec<usize> = (0..4).map(|i| s[&format!("t/{i:02}")]).collect();
            assert_eq!(at, vec![0, 0, 1, 1], "the blocks as planned: {stats:?}");
            assert_eq!(*early.lock().unwrap(), vec![true, true], "during the sleep");
            assert_eq!(stats.steals, 0, "{stats:?}");
        }
    });
}

/// Consumers added before their source (a farm's workers before its
/// dealer, as DES, RT and ANT do): worker 0 starts its block, whose tasks
/// all block reading streams that nobody has written yet, and runs dry.
/// That is not a network with one worker's work, as a ring's token is:
/// the producers wait in the other block. So every block starts on its
/// worker as planned (task k of n on worker k·2/n) and nothing is taken.
/// The spin is long, so the grace and the stall rule cannot decide.
#[test]
fn consumers_added_before_their_source_start_on_their_blocks() {
    with_timeout("farm plan", 120, || {
        blocks_start_as_planned(|rt, seen| {
            let seen = seen.clone();
            let n = 8;
            let mut outs = Vec::new();
            for i in 0..n {
                let (w, mut r) = rill::stream::<u64>(4);
                outs.push(w);
                let s = seen.clone();
                rt.spawn(format!("t/{i:02}"), move || {
                    note(&s);
                    let mut sum = 0;
                    while let Some(v) = r.read() {
                        sum += v;
                    }
                    assert_eq!(sum, (0..100u64).sum::<u64>());
                });
            }
            let s = seen.clone();
            rt.spawn(format!("t/{n:02}"), move || {
                note(&s);
                for v in 0..100u64 {
                    for w in outs.iter_mut() {
                        w.write(v).unwrap();
                    }
                }
            });
            n
        });
    });
}

/// A producer added before its consumers (a splitter before its lanes):
/// worker 0 starts the source and the consumers of its block; the source
/// fills the stream of a consumer in the other block and waits writing,
/// its own consumers drain theirs and wait reading, and worker 0 runs dry.
/// A task waiting on a full stream is work waiting for another worker, so
/// the blocks start as planned (task k of n on worker k·2/n), nothing
/// taken. The spin is long, so the grace and the stall rule cannot decide.
#[test]
fn a_source_added_before_its_consumers_starts_them_on_their_blocks() {
    with_timeout("source plan", 120, || {
        blocks_start_as_planned(|rt, seen| {
            let seen = seen.clone();
            let n = 4;
            let (mut outs, mut ins) = (Vec::new(), Vec::new());
            for _ in 0..n {
                let (w, r) = rill::stream::<u64>(4);
                outs.push(w);
                ins.push(r);
            }
            let s = seen.clone();
            rt.spawn("t/00", move || {
                note(&s);
                // The last consumer first: its stream (in the other block)
                // fills before any of worker 0's consumers could wake the
                // source by reading.
                for v in 0..100u64 {
                    for w in outs.iter_mut().rev() {
                        w.write(v).unwrap();
                    }
                }
            });
            for (i, mut r) in ins.into_iter().enumerate() {
                let s = seen.clone();
                rt.spawn(format!("t/{:02}", i + 1), move || {
                    note(&s);
                    let mut sum = 0;
                    while let Some(v) = r.read() {
                        sum += v;
                    }
                    assert_eq!(sum, (0..100u64).sum::<u64>());
                });
            }
            n
        });
    });
}

/// Five runs of the network `add` adds to a 2-worker runtime with a long
/// spin (so that the grace and the stall rule cannot decide), tasks
/// `t/00..=t/NN` noting where they start (`add` returns NN): every block
/// starts on its worker as planned (task k of n on worker k·2/n), nothing
/// taken.
fn blocks_start_as_planned(add: impl Fn(&mut Runtime, &Seen) -> usize) {
    for _ in 0..5 {
        let seen: Seen = Arc::default();
        let mut rt = Runtime::builder()
            .workers(2)
            .spin(std::time::Duration::from_millis(50))
            .build()
            .unwrap();
        let n = add(&mut rt, &seen);
        let stats = rt.run().expect("run");
        let s = seen.lock().unwrap();
        let at: Vec<usize> = (0..=n).map(|i| s[&format!("t/{i:02}")]).collect();
        let want: Vec<usize> = (0..=n).map(|k| k * 2 / (n + 1)).collect();
        assert_eq!(at, want, "the blocks as planned");
        assert_eq!(stats.steals, 0, "{stats:?}");
    }
}

/// A network that unfolds while it runs, each task spawning the next on
/// its first message (Monte Carlo's chains), from worker 0 while worker 1
/// has had no work yet: the spawn that finds worker 0 with other work
/// gives worker 1 the older half of the new tasks (`spawn.rs`,
/// `share_new_tasks`), so worker 1 starts some of the chains' links even
/// when it is asleep through the unfolding (a spin of zero parks it at
/// once). The messages arrive, in order, through both chains.
#[test]
fn a_network_that_unfolds_on_one_worker_shares_its_new_tasks() {
    /// A link that passes messages on, spawning the next link (up to
    /// `left` more) when its first message arrives.
    fn link(seen: Seen, chain: usize, k: usize, left: usize, mut r: Reader<u64>, out: Writer<u64>) {
        note(&seen);
        let mut out = Some(out);
        let mut w = None;
        while let Some(v) = r.read() {
            if w.is_none() {
                w = Some(if left == 0 {
                    out.take().unwrap()
                } else {
                    let (nw, nr) = rill::stream::<u64>(4);
                    let (s, o) = (seen.clone(), out.take().unwrap());
                    rill::spawn(format!("c{chain}/{:02}", k + 1), move || {
                        link(s, chain, k + 1, left - 1, nr, o)
                    });
                    nw
                });
            }
            if w.as_mut().unwrap().write(v).is_err() {
                return;
            }
        }
    }
    with_timeout("unfolding network", 120, || {
        for round in 0..10 {
            let seen: Seen = Arc::default();
            let s = seen.clone();
            let mut rt = Runtime::builder()
                .workers(2)
                .pin(false)
                .spin(std::time::Duration::ZERO)
                .build()
                .unwrap();
            let arrived = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let a = arrived.clone();
            rt.spawn_on(0, "root", move || {
                let mut heads = Vec::new();
                for chain in 0..2 {
                    let (hw, hr) = rill::stream::<u64>(4);
                    let (tw, mut tr) = rill::stream::<u64>(4);
                    let s = s.clone();
                    rill::spawn(format!("c{chain}/00"), move || link(s, chain, 0, 7, hr, tw));
                    let a = a.clone();
                    rill::spawn_on(0, format!("sink/{chain}"), move || {
                        let got: Vec<u64> = std::iter::from_fn(|| tr.read()).collect();
                        assert_eq!(got, (0..2_000).collect::<Vec<_>>());
                        a.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                    heads.push(hw);
                }
                for v in 0..2_000u64 {
                    for h in heads.iter_mut() {
                        h.write(v).unwrap();
                    }
                }
            });
            rt.run().unwrap();
            assert_eq!(arrived.load(std::sync::atomic::Ordering::Relaxed), 2);
            all_ran_some_on_worker_1(&seen, 16, &format!("round {round}: the links"));
        }
    });
}

/// Under the adaptive mapping a task woken from another worker runs next,
/// ahead of the tasks queued on its worker (`WorkerLocal::take_mail_first`).
/// Worker 0 holds a reader blocked on an empty stream and eight tasks that
/// count their turns and yield; a task on worker 1 writes once, which
/// posts the reader to worker 0. The reader notes how many turns the
/// yielders took after the write returned: at most the turn in progress
/// and one that began before the post landed. Queued behind the yielders
/// (FIFO), it would wait eight turns or more. Turns, not time: a loaded
/// host that delays the writer after its write only makes the count
/// smaller.
#[test]
fn a_task_woken_from_another_worker_runs_before_the_queued_ones() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    with_timeout("mail first", 60, || {
        for round in 0..10 {
            let mut rt = Runtime::builder().workers(2).pin(false).build().unwrap();
            let turns = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let after_write = Arc::new(AtomicU64::new(0));
            let lag = Arc::new(AtomicU64::new(u64::MAX));
            let (mut w, mut r) = rill::stream::<u64>(1);
            {
                let (turns, stop, after_write, lag) = (
                    turns.clone(),
                    stop.clone(),
                    after_write.clone(),
                    lag.clone(),
                );
                rt.spawn_on(0, "reader", move || {
                    assert_eq!(r.read(), Some(7));
                    let now = turns.load(Ordering::SeqCst);
                    lag.store(
                        now.saturating_sub(after_write.load(Ordering::SeqCst)),
                        Ordering::SeqCst,
                    );
                    stop.store(true, Ordering::SeqCst);
                });
            }
            for k in 0..8 {
                let (turns, stop) = (turns.clone(), stop.clone());
                rt.spawn_on(0, format!("yielder/{k}"), move || {
                    while !stop.load(Ordering::SeqCst) {
                        turns.fetch_add(1, Ordering::SeqCst);
                        rill::yield_now();
                    }
                });
            }
            {
                let (turns, after_write) = (turns.clone(), after_write.clone());
                rt.spawn_on(1, "writer", move || {
                    // The reader has run and blocked once the yielders
                    // have gone round a few times.
                    while turns.load(Ordering::SeqCst) < 100 {
                        std::thread::yield_now();
                    }
                    // The reader's lag is counted from after the write, so
                    // the reader cannot have run yet: publish first, as far
                    // as the write allows, by storing a bound no turn count
                    // reaches, then the count after the write.
                    after_write.store(u64::MAX, Ordering::SeqCst);
                    w.write(7).unwrap();
                    after_write.store(turns.load(Ordering::SeqCst), Ordering::SeqCst);
                });
            }
            rt.run().unwrap();
            let lag = lag.load(Ordering::SeqCst);
            assert!(
                lag <= 2,
                "round {round}: the woken reader waited {lag} turns of the queued tasks"
            );
        }
    });
}

/// Posted tasks go first only within a budget (`FIRST_BUDGET` per
/// `INBOX_EVERY` dispatches), so a task queued on a worker is not passed
/// over for as long as another worker keeps waking its neighbours. Four
/// readers on worker 0 are fed by writers on worker 1 that write until a
/// yielding task on worker 0 has had 2,000 turns; without its turns the
/// writers would never stop, and the run would not end.
#[test]
fn a_queued_task_runs_while_another_worker_keeps_posting() {
    use std::sync::atomic::{AtomicBool, Ordering};
    with_timeout("posted tasks within a budget", 120, || {
        for _ in 0..10 {
            let mut rt = Runtime::builder().workers(2).pin(false).build().unwrap();
            let done = Arc::new(AtomicBool::new(false));
            for p in 0..4 {
                let (mut w, mut r) = rill::stream::<u64>(16);
                let d = done.clone();
                rt.spawn_on(
                    0,
                    format!("reader/{p}"),
                    move || while r.read().is_some() {},
                );
                rt.spawn_on(1, format!("writer/{p}"), move || {
                    while !d.load(Ordering::Relaxed) {
                        if w.write(1).is_err() {
                            break;
                        }
                    }
                });
            }
            let d = done.clone();
            rt.spawn_on(0, "yielder", move || {
                for _ in 0..2_000 {
                    rill::yield_now();
                }
                d.store(true, Ordering::Relaxed);
            });
            rt.run().unwrap();
            assert!(done.load(Ordering::Relaxed));
        }
    });
}
