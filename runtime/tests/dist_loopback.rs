//! Networks across ranks without MPI: ranks as threads of one process
//! (`rill::dist::Loopback`), each with its own runtime and bridge. The
//! bridge's flow control, end of stream, closing, termination and abort
//! are the same code under mpirun.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use rill::dist::{DistError, Loopback, Net, NetStats, Placement, RankTable};
use rill::{PollSet, Runtime};

/// Builds the network with `build` on `n` ranks of `workers` workers each
/// (one thread per rank) and runs it; each rank's result, by rank.
fn on_ranks<B>(n: usize, workers: usize, build: B) -> Vec<Result<NetStats, DistError>>
where
    B: Fn(&mut Net) + Send + Sync + 'static,
{
    let build = Arc::new(build);
    let handles: Vec<_> = Loopback::ranks(n)
        .into_iter()
        .map(|t| {
            let build = build.clone();
            thread::spawn(move || {
                let b = Runtime::builder().workers(workers).pin(false);
                let mut net = Net::loopback(t, b)?;
                build(&mut net);
                net.run()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn table(entries: &[(&str, usize, usize)]) -> Placement {
    let mut t = RankTable::new();
    for &(p, r, w) in entries {
        t = t.with(p, r, w);
    }
    Placement::Table(t)
}

#[test]
fn a_pipeline_through_another_rank_delivers_every_message_once_in_order() {
    const N: u64 = 100_000;
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let results = on_ranks(2, 1, move |net| {
        net.placement(table(&[("src", 0, 0), ("relay", 1, 0), ("sink", 0, 0)]));
        let (w1, r1) = net.stream::<u64>(4);
        let (w2, r2) = net.stream::<u64>(4);
        net.spawn_with("src", w1, |mut w| {
            for i in 0..N {
                w.write(i).unwrap();
            }
        });
        net.spawn_with("relay", (r1, w2), |(r, mut w)| {
            for v in r {
                w.write(v * 3).unwrap();
            }
        });
        let sink = sink.clone();
        net.spawn_with("sink", r2, move |r| {
            let v: Vec<u64> = r.collect();
            *sink.lock().unwrap() = v;
        });
    });
    for r in &results {
        let s = r.as_ref().expect("every rank ends");
        assert_eq!(s.cross_streams, 2);
    }
    let v = got.lock().unwrap();
    assert_eq!(v.len() as u64, N);
    assert!(v.iter().enumerate().all(|(i, &x)| x == 3 * i as u64));
    let s0 = results[0].as_ref().unwrap();
    assert_eq!(s0.bridge.messages_sent, N);
    assert_eq!(s0.bridge.messages_received, N);
    assert!(
        s0.bridge.frames_sent < N,
        "small messages go many to a frame ({} frames)",
        s0.bridge.frames_sent
    );
}

#[test]
fn the_capacity_bounds_the_messages_between_ranks() {
    const CAP: usize = 8;
    let written = Arc::new(AtomicU64::new(0));
    let seen_before_reading = Arc::new(AtomicU64::new(u64::MAX));
    let (w_count, seen) = (written.clone(), seen_before_reading.clone());
    let results = on_ranks(2, 1, move |net| {
        net.placement(table(&[("writer", 0, 0), ("reader", 1, 0)]));
        let (w, r) = net.stream::<u32>(CAP);
        let count = w_count.clone();
        net.spawn_with("writer", w, move |mut w| {
            for i in 0..1000 {
                w.write(i).unwrap();
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        let (count, seen) = (w_count.clone(), seen.clone());
        net.spawn_with("reader", r, move |r| {
            // The ranks share a process here, so the reader can see the
            // writer's count: however long it waits, no more than the
            // capacity can have been written before it reads.
            thread::sleep(Duration::from_millis(200));
            seen.store(count.load(Ordering::SeqCst), Ordering::SeqCst);
            assert_eq!(r.sum::<u32>(), (0..1000).sum::<u32>());
        });
    });
    results.into_iter().for_each(|r| {
        r.unwrap();
    });
    let seen = seen_before_reading.load(Ordering::SeqCst);
    assert!(
        seen <= CAP as u64,
        "{seen} written before the first read, capacity {CAP}"
    );
    assert_eq!(written.load(Ordering::SeqCst), 1000);
}

#[test]
fn a_reader_gone_early_closes_the_writer_on_the_other_rank() {
    let result = Arc::new(Mutex::new(None));
    let res = result.clone();
    let results = on_ranks(2, 1, move |net| {
        net.placement(table(&[("w", 0, 0), ("r", 1, 0)]));
        let (w, r) = net.stream::<u64>(2);
        let res = res.clone();
        net.spawn_with("w", w, move |mut w| {
            let mut n = 0u64;
            let err = loop {
                if let Err(e) = w.write(n) {
                    break e;
                }
                n += 1;
            };
            *res.lock().unwrap() = Some((n, err));
        });
        net.spawn_with("r", r, |mut r| {
            for _ in 0..10 {
                r.read().unwrap();
            }
        });
    });
    results.into_iter().for_each(|r| {
        r.unwrap();
    });
    let (n, _) = result
        .lock()
        .unwrap()
        .take()
        .expect("the writer saw the close");
    assert!(n >= 10, "{n}");
}

#[test]
fn fan_out_and_fan_in_over_three_ranks_with_a_poll_set() {
    const PER: u64 = 20_000;
    const SRC: usize = 5;
    let total = Arc::new(AtomicU64::new(0));
    let tot = total.clone();
    let results = on_ranks(3, 2, move |net| {
        let mut set = PollSet::new();
        for s in 0..SRC {
            let (w, r) = net.stream::<(u32, u64)>(16);
            set.push(r);
            net.spawn_with(format!("src/{s}"), w, move |mut w| {
                for i in 0..PER {
                    w.write((s as u32, i)).unwrap();
                }
            });
        }
        let tot = tot.clone();
        net.spawn_with("merge", set, move |mut set| {
            let mut next = [0u64; SRC];
            for (_, (s, i)) in set.by_ref() {
                assert_eq!(next[s as usize], i, "source {s} in order");
                next[s as usize] += 1;
            }
            assert!(next.iter().all(|&n| n == PER));
            tot.store(next.iter().sum(), Ordering::SeqCst);
        });
        net.placement(Placement::RoundRobin);
    });
    for r in results {
        r.unwrap();
    }
    assert_eq!(total.load(Ordering::SeqCst), PER * SRC as u64);
}

#[test]
fn a_panic_on_one_rank_ends_the_run_on_every_rank_naming_it() {
    let results = on_ranks(2, 1, |net| {
        net.placement(table(&[("calm", 0, 0), ("boom", 1, 0)]));
        let (w, r) = net.stream::<u8>(1);
        net.spawn_with("calm", r, |r| {
            // Waits on the other rank; its stream is closed by the abort.
            for _ in r {}
        });
        net.spawn_with("boom", w, |_w| panic!("planted failure"));
    });
    match &results[1] {
        Err(DistError::Run { rank: 1, source }) => {
            assert!(source.to_string().contains("boom"), "{source}")
        }
        other => panic!("rank 1: {other:?}"),
    }
    match &results[0] {
        Err(e @ DistError::Remote { rank: 1, message }) => {
            assert!(
                message.contains("boom") && message.contains("planted"),
                "{e}"
            );
            assert!(e.to_string().contains("rank 1"), "{e}");
        }
        other => panic!("rank 0: {other:?}"),
    }
}

#[test]
fn networks_every_rank_cannot_build_alike_are_refused() {
    let results = on_ranks(2, 1, |net| {
        let (w, r) = net.stream::<u8>(1);
        net.spawn_with("only-writer", w, |_| {});
        drop(r);
    });
    for r in results {
        let e = r.unwrap_err();
        assert!(e.to_string().contains("not handed to a task"), "{e}");
    }
    let results = on_ranks(2, 1, |net| {
        let (w, _r) = rill::stream::<u8>(1);
        net.spawn_with("stray", w, |_| {});
    });
    for r in results {
        let e = r.unwrap_err();
        assert!(e.to_string().contains("Net::stream"), "{e}");
    }
}

#[test]
fn a_wide_stream_and_an_answer_back() {
    const N: u64 = 100_000;
    let results = on_ranks(2, 1, |net| {
        net.placement(table(&[("a", 0, 0), ("b", 1, 0)]));
        let (ack_w, ack_r) = net.stream::<bool>(1);
        let (w, r) = net.stream::<u64>(1024);
        net.spawn_with("a", (w, ack_r), |(mut w, mut ack)| {
            (0..N).for_each(|i| w.write(i).unwrap());
            drop(w);
            assert_eq!(ack.read(), Some(true));
        });
        net.spawn_with("b", (r, ack_w), |(r, mut ack)| {
            let mut k = 0;
            let mut ok = true;
            for v in r {
                ok &= v == k;
                k += 1;
            }
            ack.write(ok && k == N).unwrap();
        });
    });
    for r in results {
        r.unwrap();
    }
}

#[test]
fn a_deadlock_across_ranks_is_reported_on_every_rank_with_its_blocked_tasks() {
    let results = on_ranks(2, 1, |net| {
        net.placement(table(&[("left", 0, 0), ("right", 1, 0)]));
        let (w1, r1) = net.stream::<u8>(1);
        let (w2, r2) = net.stream::<u8>(1);
        // Each waits for the other's message before it sends its own.
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
    });
    for (rank, (r, task)) in results.iter().zip(["left", "right"]).enumerate() {
        match r {
            Err(e @ DistError::Deadlock { rank: got, .. }) => {
                assert_eq!(*got, rank);
                let text = e.to_string();
                assert!(
                    text.contains("deadlock across ranks") && text.contains(task),
                    "{text}"
                );
            }
            other => panic!("rank {rank}: {other:?}"),
        }
    }
}

/// A ping-pong across two ranks: every ping is answered once and in order,
/// and the ranks' idle workers carried traffic themselves (the bridge lends
/// its state to a worker that has nothing to run), so that an answer does
/// not wait for a hand-over between the bridge's thread and the worker.
#[test]
fn idle_workers_carry_a_ping_pong_between_ranks() {
    const N: u64 = 2_000;
    let results = on_ranks(2, 1, |net| {
        net.placement(table(&[("ping", 0, 0), ("pong", 1, 0)]));
        let (to_w, to_r) = net.stream::<u64>(1);
        let (back_w, back_r) = net.stream::<u64>(1);
        net.spawn_with("ping", (to_w, back_r), |(mut to, mut back)| {
            for i in 0..N {
                to.write(i).unwrap();
                assert_eq!(back.read(), Some(i + 1), "the answer to ping {i}");
            }
        });
        net.spawn_with("pong", (to_r, back_w), |(to, mut back)| {
            let mut k = 0;
            for v in to {
                assert_eq!(v, k, "pings arrive once and in order");
                back.write(v + 1).unwrap();
                k += 1;
            }
            assert_eq!(k, N);
        });
    });
    for (rank, r) in results.into_iter().enumerate() {
        let stats = r.unwrap();
        assert_eq!(stats.bridge.messages_sent, N, "rank {rank}");
        assert_eq!(stats.bridge.messages_received, N, "rank {rank}");
        assert!(
            stats.bridge.carried_by_workers > 0,
            "rank {rank}: no idle worker carried the bridge's traffic: {:?}",
            stats.bridge
        );
    }
}

/// A task pinned with `spawn_with_on` runs where it says and does not
/// count in the placement: the other tasks' places are what `places_of`
/// gave before the pinned one was added; `graph` lists every stream's
/// two tasks.
#[test]
fn pinned_tasks_run_where_pinned_and_leave_the_placement_alone() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let results = on_ranks(2, 1, move |net| {
        let before = net.places_of(&["a", "b", "c", "d"]).unwrap();
        assert_eq!(before, vec![(0, 0), (0, 0), (1, 0), (1, 0)]);
        let (w1, r1) = net.stream::<u64>(2);
        let (w2, r2) = net.stream::<u64>(2);
        let (w3, r3) = net.stream::<(u64, u64)>(2);
        net.spawn_with("a", w1, |mut w| w.write(7).unwrap());
        // Pinned to rank 1 between "a" and "b": the blocks stay a,b | c,d.
        net.spawn_with_on(1, 0, "relay", (r1, w2), |(r, mut w)| {
            for v in r {
                w.write(v + 1).unwrap();
            }
        });
        net.spawn_with("b", (r2, w3), |(r, mut w)| {
            for v in r {
                w.write((v, 0)).unwrap();
            }
        });
        net.spawn("c", || {});
        let s = s.clone();
        net.spawn_with("d", r3, move |r| s.lock().unwrap().extend(r));
        let g = net.graph();
        assert_eq!(g.tasks, ["a", "relay", "b", "c", "d"]);
        assert_eq!(g.pinned[1], Some((1, 0)));
        assert_eq!(g.streams, vec![(0, 1), (1, 2), (2, 4)]);
        let plan = net.plan().unwrap();
        let at: Vec<(usize, usize)> = plan.iter().map(|(_, r, w)| (*r, *w)).collect();
        assert_eq!(at, vec![(0, 0), (1, 0), (0, 0), (1, 0), (1, 0)]);
    });
    for r in &results {
        let s = r.as_ref().expect("every rank ends");
        assert_eq!(s.local_tasks, if s.rank == 0 { 2 } else { 3 });
    }
    assert_eq!(*seen.lock().unwrap(), vec![(8, 0)]);
    let out_of_range = on_ranks(2, 1, |net| net.spawn_with_on(2, 0, "x", (), |()| {}));
    for r in out_of_range {
        let e = r.expect_err("a pin past the ranks is refused").to_string();
        assert!(e.contains("pinned to rank 2"), "{e}");
    }
}
