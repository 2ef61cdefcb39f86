//! Safe programs that must neither corrupt memory nor hang nor abort: ends
//! that outlive their tasks, started tasks under work stealing, destructors
//! that panic or block where the runtime runs them, destructors that write
//! or spawn while a run drops its tasks, runs that fail before they start,
//! and capacity-1 streams of messages of every size and alignment (carried
//! intact, left ones dropped once). `scripts/test.sh` runs this file under
//! valgrind's memcheck too.

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{sample_hz, with_timeout};
use rill::{Mapping, MonitorConfig, MonitorFlags, RunError, Runtime, TryWriteError};

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rill-soundness-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A run of `workers` workers monitored with `flags` (as `--monitor` spells
/// them) into `dir`.
fn monitored(workers: usize, flags: &str, dir: &std::path::Path) -> Runtime {
    let flags: MonitorFlags = flags.parse().unwrap();
    Runtime::builder()
        .workers(workers)
        .monitor(MonitorConfig::new(flags, dir))
        .build()
        .unwrap()
}

/// A task leaks its reader (`Box::leak`) and blocks reading it; the run
/// ends in a deadlock; `main`, which kept the writer, writes after `run`
/// returned. The task's wait slot must not point at the freed task any more
/// (under memcheck this was an invalid read in the wake; in a release build
/// it wrote into freed memory silently).
#[test]
fn an_end_that_outlives_its_task_wakes_nothing_after_the_run() {
    with_timeout("leaked reader", 30, || {
        for workers in [1, 2] {
            let mut rt = Runtime::builder().workers(workers).build().unwrap();
            let (mut w, r) = rill::stream::<u64>(2);
            rt.spawn("leaker", move || {
                let r: &'static mut rill::Reader<u64> = Box::leak(Box::new(r));
                let _ = r.read();
            });
            let err = rt.run().expect_err("the reader waits forever");
            assert!(matches!(err, RunError::Deadlock { .. }), "{err}");
            // The slot must be IDLE: nothing to wake, nothing freed touched.
            assert!(w.try_write(1).is_ok());
            assert!(w.try_write(2).is_ok());
            assert!(matches!(w.try_write(3), Err(TryWriteError::Full(3))));
            // A later run reuses the task allocations the first one freed;
            // the leaked end must not reach into them either.
            let mut rt2 = Runtime::builder().workers(workers).build().unwrap();
            let (mut w2, mut r2) = rill::stream::<u64>(4);
            rt2.spawn("writer", move || {
                for i in 0..100 {
                    w2.write(i).unwrap();
                }
            });
            rt2.spawn("reader", move || {
                let mut n = 0;
                while r2.read().is_some() {
                    n += 1;
                }
                assert_eq!(n, 100);
            });
            rt2.run().expect("second run");
            drop(w);
        }
    });
}

/// An end kept by `main` in an `Arc<Mutex<_>>` while its task blocks on it
/// from the other side: after the deadlocked run, `main` uses the end.
#[test]
fn an_end_kept_outside_the_run_is_safe_to_use_after_it() {
    with_timeout("shared end", 30, || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        let (w, mut r) = rill::stream::<u64>(1);
        let kept = Arc::new(Mutex::new(Some(w)));
        let k2 = kept.clone();
        rt.spawn("holder", move || {
            // Fill the stream, then block writing: the reader never reads.
            let mut guard = k2.lock().unwrap();
            let w = guard.as_mut().unwrap();
            w.write(1).unwrap();
            drop(guard);
            let (mut w3, _r3) = rill::stream::<u64>(1);
            // Blocks forever on a full stream whose reader is kept alive.
            w3.write(1).unwrap();
            w3.write(2).unwrap();
        });
        let err = rt.run().expect_err("deadlock");
        assert!(matches!(err, RunError::Deadlock { .. }), "{err}");
        assert_eq!(r.try_read(), Ok(1));
        let mut w = kept.lock().unwrap().take().unwrap();
        assert!(w.try_write(5).is_ok());
        assert_eq!(r.try_read(), Ok(5));
    });
}

/// Work stealing takes only tasks that never ran: a task's code always goes
/// on on the thread it started on (its stack may hold values that are not
/// `Send`).
#[test]
fn stealing_never_moves_a_started_task() {
    with_timeout("steal", 60, || {
        for round in 0..5 {
            let moved = Arc::new(AtomicUsize::new(0));
            let mut rt = Runtime::builder()
                .workers(2)
                .mapping(Mapping::Steal)
                .build()
                .unwrap();
            for i in 0..16 {
                let moved = moved.clone();
                // All on worker 0, so worker 1 has only stealing to do.
                rt.try_spawn_on(0, format!("yielder/{i}"), move || {
                    yield_and_check(&moved);
                })
                .unwrap();
            }
            let stats = rt.run().expect("run");
            assert_eq!(
                moved.load(Ordering::Relaxed),
                0,
                "round {round}: a started task went on on another thread ({} steals)",
                stats.workers.iter().map(|w| w.steals).sum::<u64>()
            );
        }
    });
}

/// Yields 2,000 times, counting in `moved` each time it went on on
/// another thread than the one it started on.
fn yield_and_check(moved: &AtomicUsize) {
    let me = std::thread::current().id();
    for _ in 0..2_000 {
        rill::yield_now();
        if std::thread::current().id() != me {
            moved.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The same under the default mapping (adaptive), whose thieves take runs
/// of new tasks: tasks spawned from one task, all on its worker, are taken
/// by the idle worker before they start, never after.
#[test]
fn the_default_mapping_never_moves_a_started_task() {
    with_timeout("adaptive steal", 60, || {
        for round in 0..5 {
            let moved = Arc::new(AtomicUsize::new(0));
            let mut rt = Runtime::builder().workers(2).build().unwrap();
            assert_eq!(*rt.config().mapping(), Mapping::Adaptive);
            let m2 = moved.clone();
            rt.spawn("spawner", move || {
                for i in 0..32 {
                    let moved = m2.clone();
                    rill::spawn(format!("yielder/{i}"), move || yield_and_check(&moved));
                    if i % 4 == 0 {
                        // Some of them start here before the others are
                        // spawned: started tasks in the queue beside new ones.
                        rill::yield_now();
                    }
                }
            });
            let stats = rt.run().expect("run");
            assert_eq!(
                moved.load(Ordering::Relaxed),
                0,
                "round {round}: a started task went on on another thread ({} steals)",
                stats.steals
            );
        }
    });
}

/// Work stealing still balances new tasks: tasks spawned on a busy worker
/// are taken by an idle one.
#[test]
fn stealing_still_spreads_new_tasks() {
    with_timeout("steal spread", 60, || {
        let threads = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let mut rt = Runtime::builder()
            .workers(2)
            .mapping(Mapping::Steal)
            .build()
            .unwrap();
        let t2 = threads.clone();
        rt.try_spawn_on(0, "spawner", move || {
            for i in 0..64 {
                let t3 = t2.clone();
                // On this worker: only a steal can move it.
                rill::try_spawn_on(0, format!("work/{i}"), move || {
                    t3.lock().unwrap().insert(std::thread::current().id());
                    // Hold this worker until a task ran on the other one:
                    // only a steal lets that happen.
                    let t0 = std::time::Instant::now();
                    while t3.lock().unwrap().len() < 2
                        && t0.elapsed() < std::time::Duration::from_secs(20)
                    {
                        std::thread::yield_now();
                    }
                })
                .unwrap();
            }
        })
        .unwrap();
        let stats = rt.run().expect("run");
        let steals: u64 = stats.workers.iter().map(|w| w.steals).sum();
        assert!(steals > 0, "nothing was stolen");
        assert_eq!(threads.lock().unwrap().len(), 2, "both workers ran tasks");
    });
}

/// A message whose `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("a Bomb went off");
        }
    }
}

/// A stream whose last reference goes away in the worker's own code (count
/// mode keeps a reference in each end's binding, which the worker drops at
/// the end of a period), with unread messages whose `Drop` panics: the run
/// fails with the cause instead of losing the worker (a hang, or `Ok`).
#[test]
fn a_destructor_that_panics_in_the_worker_fails_the_run() {
    let dir = temp_dir("bomb");
    let d2 = dir.clone();
    let err = with_timeout("bomb", 30, move || {
        let mut rt = monitored(1, "map,worker,task,stream", &d2);
        let (mut w, r) = rill::stream::<Bomb>(4);
        rt.spawn("writer", move || {
            w.write(Bomb).ok();
            w.write(Bomb).ok();
        });
        rt.spawn("reader", move || {
            // Bind the end to this task, then drop it unread.
            let mut r = r;
            let _ = r.try_read().map(std::mem::forget);
            drop(r);
            rill::yield_now();
        });
        rt.run()
    });
    let _ = std::fs::remove_dir_all(&dir);
    match err {
        Err(RunError::WorkerFailed { message, .. }) => {
            assert!(message.contains("Bomb"), "{message}")
        }
        Err(RunError::TaskPanicked { message, .. }) => {
            // The last reference went in a task after all: still reported.
            assert!(message.contains("Bomb"), "{message}")
        }
        other => panic!("expected the panic to fail the run, got {other:?}"),
    }
}

/// Values whose `Drop` writes to a full stream and spawns a task, left on
/// the stack of a task that is blocked when the run ends: the run drops
/// them; the write fails (the stream counts as closed) and the spawn does
/// nothing, instead of aborting the process.
#[test]
fn destructors_at_the_run_end_that_write_or_spawn_do_not_abort() {
    struct Noisy {
        out: rill::Writer<u32>,
        seen: Arc<Mutex<Vec<String>>>,
    }
    impl Drop for Noisy {
        fn drop(&mut self) {
            let w = self.out.write(9);
            let id = rill::spawn("late", || {});
            let mut s = self.seen.lock().unwrap();
            s.push(format!("write: {w:?}"));
            s.push(format!("spawn: {id}"));
            s.push(format!("unwinding: {}", rill::forced_unwinding()));
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let res = with_timeout("noisy", 30, move || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (full_w, full_r) = rill::stream::<u32>(1);
        let (_keep_w, mut never) = rill::stream::<u32>(1);
        let keep = Arc::new(Mutex::new(Some((full_r, _keep_w))));
        let k2 = keep.clone();
        rt.spawn("blocked", move || {
            let mut out = full_w;
            out.write(1).unwrap();
            let _noisy = Noisy { out, seen: s2 };
            // Nobody writes `never`: the run deadlocks with us here.
            let _ = never.read();
        });
        let r = rt.run();
        drop(k2);
        drop(keep);
        r
    });
    assert!(
        matches!(res, Err(RunError::Deadlock { .. })),
        "expected a deadlock report, got {res:?}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].starts_with("write: Err(StreamClosed("), "{seen:?}");
    assert_eq!(seen[1], "spawn: 0");
    assert_eq!(seen[2], "unwinding: true");
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A run that fails before any task runs (too many initial tasks, a log
/// directory that cannot be made) drops the closures of the tasks it had
/// placed: what they own is released.
#[test]
fn a_run_that_fails_to_start_drops_its_tasks() {
    // More initial tasks than `max_tasks`.
    let drops = Arc::new(AtomicUsize::new(0));
    let mut rt = Runtime::builder().workers(2).max_tasks(2).build().unwrap();
    for i in 0..3 {
        let c = Counted(drops.clone());
        rt.spawn(format!("t/{i}"), move || drop(c));
    }
    let err = rt.run().expect_err("three tasks over a limit of two");
    assert!(matches!(err, RunError::NoStack { .. }), "{err}");
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "every closure was dropped"
    );

    // A log directory that is a file.
    let file = temp_dir("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut rt = monitored(2, "full", &file.join("logs"));
    for i in 0..2 {
        let c = Counted(drops.clone());
        rt.spawn(format!("t/{i}"), move || drop(c));
    }
    let err = rt.run().expect_err("the log directory cannot be made");
    assert!(matches!(err, RunError::Start(_)), "{err}");
    assert_eq!(
        drops.load(Ordering::Relaxed),
        2,
        "every closure was dropped"
    );
    let _ = std::fs::remove_file(&file);
}

/// Sends `n` values made by `make` through a capacity-1 stream from worker 0
/// to worker 1 and checks they arrive in order and intact (a layout that
/// special-cases small messages of one-cell streams must pass it for small,
/// large and over-aligned ones).
fn capacity_one_carries<T>(make: fn(u64) -> T, n: u64)
where
    T: Send + PartialEq + std::fmt::Debug + 'static,
{
    let mut rt = rill::Runtime::builder()
        .workers(2)
        .pin(false)
        .build()
        .unwrap();
    let (mut w, mut r) = rill::stream::<T>(1);
    rt.try_spawn_on(0, "writer", move || {
        for i in 0..n {
            w.write(make(i)).unwrap();
        }
    })
    .unwrap();
    let got = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let g = got.clone();
    rt.try_spawn_on(1, "reader", move || {
        let mut i = 0;
        while let Some(v) = r.read() {
            assert_eq!(v, make(i), "{}", std::any::type_name::<T>());
            i += 1;
        }
        g.store(i, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    rt.run().unwrap();
    assert_eq!(got.load(std::sync::atomic::Ordering::Relaxed), n);
}

#[test]
fn capacity_one_streams_carry_small_large_and_aligned_messages() {
    let n = 500;
    capacity_one_carries(|i| i as u8, n);
    capacity_one_carries(|i| i, n);
    capacity_one_carries(|i| (i, !i), n);
    capacity_one_carries(|i| [i, i + 1], n);
    capacity_one_carries(Box::new, n);
    capacity_one_carries(Arc::new, n);
    capacity_one_carries(|i| (i as u128) << 64 | 7, n);
    capacity_one_carries(|i| [i as u8; 17], n);
    capacity_one_carries(|i| i.to_string(), n);
    capacity_one_carries(|i| vec![i; 3], n);
}

/// Messages left in a capacity-1 stream are dropped once, with the stream,
/// small and large alike.
#[test]
fn capacity_one_streams_drop_what_is_left_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    struct Big {
        _counted: Counted,
        _pad: [u64; 4],
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let mut rt = rill::Runtime::builder()
        .workers(2)
        .pin(false)
        .build()
        .unwrap();
    let (d1, d2) = (drops.clone(), drops.clone());
    rt.try_spawn_on(0, "small", move || {
        let (mut w, mut r) = rill::stream::<Counted>(1);
        w.write(Counted(d1.clone())).unwrap();
        drop(r.read());
        w.write(Counted(d1.clone())).unwrap();
        drop((w, r));
    })
    .unwrap();
    rt.try_spawn_on(1, "big", move || {
        let (mut w, r) = rill::stream::<Big>(1);
        w.write(Big {
            _counted: Counted(d2.clone()),
            _pad: [0; 4],
        })
        .unwrap();
        drop(w);
        drop(r);
    })
    .unwrap();
    rt.run().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 3);
}

/// In sample mode a worker's timer signal names the running task from the
/// thread's current-task word, reading the task's id: thousands of tasks
/// that end (and are freed) while signals come at 10 kHz, under memcheck
/// in the test command, would show a read of a freed task. Under valgrind
/// the rate is 500 Hz (`common::sample_hz`): valgrind takes a thread's
/// pending signal only at its own scheduling points, so at 10 kHz most
/// periods came as overruns of fewer signals that each cost much, and the
/// run named no more distinct tasks (about 460 of the 3,000 either way)
/// while it took 2 times as long here, 9 with both cores busy (30 with
/// `--fair-sched=yes` too), and over 120 s on a slower host.
#[test]
fn samples_taken_while_tasks_end_read_only_live_tasks() {
    let dir = temp_dir("sampled-ends");
    let d2 = dir.clone();
    let ended = Arc::new(AtomicU64::new(0));
    let e2 = ended.clone();
    with_timeout("a sampled run of short tasks", 120, move || {
        let mut rt = monitored(2, &format!("sample:{}", sample_hz(10_000)), &d2);
        rt.spawn("spawner", move || {
            for i in 0..3_000u64 {
                let e = e2.clone();
                rill::spawn("short", move || {
                    let mut x = i;
                    for _ in 0..2_000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    if std::hint::black_box(x) != u64::MAX {
                        e.fetch_add(1, Ordering::Relaxed);
                    }
                });
                if i % 16 == 0 {
                    rill::yield_now();
                }
            }
        });
        rt.run().unwrap();
    });
    assert_eq!(ended.load(Ordering::Relaxed), 3_000);
    let log = std::fs::metadata(dir.join("sampler.rlog")).unwrap();
    assert!(log.len() > 56, "the sampler log holds no window: {log:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sample mode runs its sampler on the thread that called `run`, woken by
/// the last worker thread to leave: a run whose task panics still returns
/// (with the panic), and the same thread then runs a second sampled run to
/// its end, whose sampler log holds windows past its header.
#[test]
fn a_sampled_run_returns_to_its_caller_after_a_panic_and_runs_again() {
    let dir = temp_dir("sampled");
    let d2 = dir.clone();
    let (first, second) = with_timeout("sampled runs", 60, move || {
        // 10 kHz, so that even a run of a few milliseconds takes samples
        // (500 Hz under valgrind, whose runs are 20 to 50 times longer).
        let flags = format!("sample:{}", sample_hz(10_000));
        let sampled = |d: &std::path::Path| monitored(2, &flags, d);
        let mut rt = sampled(&d2);
        let (mut w, mut r) = rill::stream::<u64>(4);
        rt.spawn_on(0, "writer", move || {
            for i in 0..1_000 {
                if w.write(i).is_err() {
                    return;
                }
            }
        });
        rt.spawn_on(1, "reader", move || {
            for _ in 0..500 {
                r.read();
            }
            panic!("the reader gives up");
        });
        let first = rt.run();
        let mut rt = sampled(&d2);
        let (mut w, mut r) = rill::stream::<u64>(4);
        let sum = Arc::new(Mutex::new(0u64));
        let s2 = sum.clone();
        rt.spawn_on(0, "writer", move || {
            for i in 0..20_000 {
                w.write(i).unwrap();
            }
        });
        rt.spawn_on(1, "reader", move || {
            while let Some(v) = r.read() {
                *s2.lock().unwrap() += v;
            }
        });
        let second = rt.run().map(|_| *sum.lock().unwrap());
        (first, second)
    });
    match first {
        Err(RunError::TaskPanicked { message, .. }) => {
            assert!(message.contains("gives up"), "{message}")
        }
        other => panic!("expected the reader's panic, got {other:?}"),
    }
    assert_eq!(second.unwrap(), 20_000 * 19_999 / 2);
    let log = std::fs::metadata(dir.join("sampler.rlog")).unwrap();
    assert!(log.len() > 56, "the sampler log holds no window: {log:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Work stealing with full monitoring (`message` included): tasks that
/// worker 1 steals keep their ops-mode entries (`monitor/task_entries.rs`)
/// on the worker that runs them. Tasks of one to four ends, all spawned on
/// worker 0, carry their messages intact; memcheck in the test command
/// checks the recording of every period, stolen tasks' included.
#[test]
fn stolen_tasks_are_recorded_soundly_in_full_mode() {
    const MESSAGES: u64 = 500;
    let dir = temp_dir("steal-full");
    let d2 = dir.clone();
    let sums = Arc::new(Mutex::new(Vec::new()));
    let s2 = sums.clone();
    let stats = with_timeout("a stolen network, fully monitored", 120, move || {
        let mut rt = Runtime::builder()
            .workers(2)
            .mapping(Mapping::Steal)
            .monitor(MonitorConfig::new("full".parse().unwrap(), &d2))
            .build()
            .unwrap();
        rt.try_spawn_on(0, "main", move || {
            let main_thread = std::thread::current().id();
            let elsewhere = Arc::new(AtomicUsize::new(0));
            for _ in 0..4 {
                // source -> three relays -> merger -> sink: ends of one, two,
                // four and one streams per task.
                let (mut outs, mut ins) = (Vec::new(), Vec::new());
                for _ in 0..3 {
                    let (w, r) = rill::stream::<u64>(2);
                    outs.push(w);
                    ins.push(r);
                }
                let mut mr = Vec::new();
                for mut r in ins {
                    let (mut w, r2) = rill::stream::<u64>(1);
                    mr.push(r2);
                    let e = elsewhere.clone();
                    rill::try_spawn_on(0, "relay", move || {
                        if std::thread::current().id() != main_thread {
                            e.fetch_add(1, Ordering::Relaxed);
                        }
                        while let Some(v) = r.read() {
                            if v % 7 == 0 {
                                rill::yield_now();
                            }
                            w.write(v).unwrap();
                        }
                    })
                    .unwrap();
                }
                let (mut sw, mut sr) = rill::stream::<u64>(2);
                let e = elsewhere.clone();
                rill::try_spawn_on(0, "merger", move || {
                    if std::thread::current().id() != main_thread {
                        e.fetch_add(1, Ordering::Relaxed);
                    }
                    loop {
                        let got: Vec<_> = mr.iter_mut().map(|r| r.read()).collect();
                        if got.iter().all(Option::is_none) {
                            break;
                        }
                        sw.write(got.into_iter().flatten().sum()).unwrap();
                    }
                })
                .unwrap();
                let s3 = s2.clone();
                rill::try_spawn_on(0, "sink", move || {
                    let mut sum = 0;
                    while let Some(v) = sr.read() {
                        sum += v;
                    }
                    s3.lock().unwrap().push(sum);
                })
                .unwrap();
                rill::try_spawn_on(0, "source", move || {
                    for i in 0..MESSAGES {
                        for w in &mut outs {
                            w.write(i).unwrap();
                        }
                    }
                })
                .unwrap();
            }
            // Hold worker 0 (without yielding to the runtime) until a task
            // started on worker 1: only a steal lets that happen.
            let t0 = std::time::Instant::now();
            while elsewhere.load(Ordering::Relaxed) == 0
                && t0.elapsed() < std::time::Duration::from_secs(60)
            {
                std::thread::yield_now();
            }
        })
        .unwrap();
        rt.run().expect("run")
    });
    let steals: u64 = stats.workers.iter().map(|w| w.steals).sum();
    assert!(steals > 0, "nothing was stolen");
    assert_eq!(
        *sums.lock().unwrap(),
        [3 * MESSAGES * (MESSAGES - 1) / 2; 4]
    );
    // Tasks that ran on worker 1 were stolen; none ran on both workers.
    let ran_on = |w: usize| -> std::collections::BTreeSet<u64> {
        let log = rill_log::read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        assert_eq!(log.end, rill_log::EndReason::Clean, "worker {w}");
        log.records
            .iter()
            .filter_map(|r| match r {
                rill_log::Record::Period { task, .. } => Some(*task),
                _ => None,
            })
            .collect()
    };
    let (on0, on1) = (ran_on(0), ran_on(1));
    assert_eq!(on0.intersection(&on1).count(), 0, "a started task moved");
    assert!(!on1.is_empty(), "no stolen task was recorded");
    let _ = std::fs::remove_dir_all(&dir);
}
