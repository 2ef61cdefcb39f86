//! The edges of the API that a program without `unsafe` can reach: numbers
//! that would wrap (capacities, stack sizes, worker counts, spins), faults
//! and panics while a run drops the tasks it left, runs started inside a
//! task or a destructor, spawns whose `Ends::hold` panics, and streams fed
//! from outside the run. The test command runs this file under valgrind's
//! memcheck too. Cases that end the process run in a child process (this
//! binary again, for one test).

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::with_timeout;
use rill::{
    CapacityError, ConfigError, Ends, RunError, Runtime, TaskId, TryReadError, MAX_CAPACITY,
    MAX_SPIN, MAX_STACK_SIZE, MAX_WORKERS,
};

const CHILD: &str = "RILL_EDGES_CHILD";

/// Runs this test binary again for the test `name` with `CHILD` set, and
/// returns its status and stderr.
fn run_child(name: &str) -> (std::process::ExitStatus, String) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("re-run the test binary");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn in_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

fn killed_by_abort(status: &std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(libc::SIGABRT)
}

// ---- numbers that would wrap ----

#[test]
fn stream_capacities_above_the_bound_are_refused() {
    for cap in [usize::MAX, (1usize << 63) + 1, MAX_CAPACITY + 1] {
        assert_eq!(
            rill::try_stream::<u64>(cap).unwrap_err(),
            CapacityError::TooLarge(cap)
        );
    }
    assert_eq!(rill::try_stream::<u64>(0).unwrap_err(), CapacityError::Zero);
    // The largest capacity with a message too large for any memory.
    match rill::try_stream::<[u8; 1 << 20]>(MAX_CAPACITY) {
        Err(CapacityError::NoMemory { capacity, size }) => {
            assert_eq!((capacity, size), (MAX_CAPACITY, 1 << 20))
        }
        other => panic!("expected NoMemory, got {:?}", other.map(|_| ())),
    }
    // The bound itself works for a message that takes no room.
    let (mut w, mut r) = rill::try_stream::<()>(MAX_CAPACITY).unwrap();
    for _ in 0..1000 {
        w.try_write(()).unwrap();
    }
    assert_eq!(w.capacity(), MAX_CAPACITY);
    for _ in 0..1000 {
        r.try_read().unwrap();
    }
    assert_eq!(r.try_read(), Err(TryReadError::Empty));
}

#[test]
fn stream_panics_name_the_callers_line() {
    if in_child() {
        let _ = rill::stream::<u64>(usize::MAX);
        std::process::exit(3);
    }
    let (status, err) = run_child("stream_panics_name_the_callers_line");
    assert!(!status.success(), "{status:?}");
    assert!(err.contains("runtime/tests/edges.rs:"), "{err}");
    assert!(
        err.contains("a stream capacity of 18446744073709551615 is too large"),
        "{err}"
    );
}

#[test]
fn builder_values_are_checked_against_both_bounds() {
    let b = Runtime::builder;
    assert_eq!(
        b().capacity(usize::MAX).build().unwrap_err(),
        ConfigError::CapacityTooLarge(usize::MAX)
    );
    assert_eq!(
        b().capacity(MAX_CAPACITY + 1).build().unwrap_err(),
        ConfigError::CapacityTooLarge(MAX_CAPACITY + 1)
    );
    assert!(b().capacity(MAX_CAPACITY).build().is_ok());
    assert_eq!(
        b().stack_size(usize::MAX).build().unwrap_err(),
        ConfigError::StackTooLarge(usize::MAX)
    );
    assert_eq!(
        b().stack_size(MAX_STACK_SIZE + 1).build().unwrap_err(),
        ConfigError::StackTooLarge(MAX_STACK_SIZE + 1)
    );
    assert_eq!(
        b().workers(usize::MAX).build().unwrap_err(),
        ConfigError::TooManyWorkers(usize::MAX)
    );
    assert_eq!(
        b().workers(MAX_WORKERS + 1).build().unwrap_err(),
        ConfigError::TooManyWorkers(MAX_WORKERS + 1)
    );
    assert_eq!(
        b().workers(1 << 40).build().unwrap_err(),
        ConfigError::TooManyWorkers(1 << 40)
    );
    for d in [
        Duration::from_secs(3600),
        Duration::MAX,
        MAX_SPIN + Duration::from_nanos(1),
    ] {
        assert_eq!(
            b().spin(d).build().unwrap_err(),
            ConfigError::SpinTooLong(d)
        );
    }
    assert!(b().spin(MAX_SPIN).build().is_ok());
    for e in [
        ConfigError::CapacityTooLarge(usize::MAX),
        ConfigError::StackTooLarge(usize::MAX),
        ConfigError::TooManyWorkers(usize::MAX),
        ConfigError::SpinTooLong(Duration::MAX),
    ] {
        assert!(e.to_string().contains("at most"), "{e}");
    }
}

/// The largest stack and the longest spin still run a program, and a
/// deadlock under the longest spin is still reported.
#[test]
fn the_largest_stack_and_spin_run() {
    let mut rt = Runtime::builder()
        .workers(2)
        .stack_size(MAX_STACK_SIZE)
        .spin(MAX_SPIN)
        .build()
        .unwrap();
    let ((), _) = rt
        .run_main(|| {
            let (mut w, mut r) = rill::stream::<u64>(4);
            rill::spawn("writer", move || {
                for i in 0..100 {
                    w.write(i).unwrap();
                }
            });
            assert_eq!(std::iter::from_fn(|| r.read()).sum::<u64>(), 4950);
        })
        .unwrap();
    let err = with_timeout("a deadlock under the longest spin", 60, || {
        let mut rt = Runtime::builder()
            .workers(2)
            .spin(MAX_SPIN)
            .build()
            .unwrap();
        let (w, r) = rill::stream::<u64>(1);
        rt.spawn_with("stuck", (w, r), |(_w, mut r)| {
            r.read();
        });
        rt.run().unwrap_err()
    });
    assert!(matches!(err, RunError::Deadlock { .. }), "{err}");
}

// ---- a run that drops the tasks it left ----

/// A list whose drop recurses once per node.
#[allow(dead_code)]
struct List(Option<Box<List>>);

fn long_list(n: usize) -> List {
    let mut l = List(None);
    for _ in 0..n {
        l = List(Some(Box::new(l)));
    }
    l
}

/// A task blocked at the run's end holds a list whose recursive drop
/// overflows its stack while the run unwinds it: the report names the task
/// and says how the run was ending (another task's panic).
#[test]
fn an_overflow_while_the_run_drops_a_task_names_it_and_the_runs_error() {
    if in_child() {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        // The holder waits on a stream whose writer it holds itself: only
        // the run's end takes it out of the read.
        let (w, r) = rill::stream::<u64>(1);
        rt.spawn_with("holder", (w, r), |(_w, mut r)| {
            let list = long_list(200_000);
            r.read();
            drop(list);
        });
        rt.spawn("boom", || {
            rill::yield_now();
            panic!("planned failure");
        });
        let _ = rt.run();
        // Not reached: the overflow aborts the process.
        std::process::exit(3);
    }
    let (status, err) =
        run_child("an_overflow_while_the_run_drops_a_task_names_it_and_the_runs_error");
    assert!(killed_by_abort(&status), "{status:?}\n{err}");
    assert!(
        err.contains("rill: task 'holder' (id 1) overflowed its stack while the run dropped it"),
        "{err}"
    );
    assert!(
        err.contains(
            "the run was ending with this error: task 'boom' (id 2) panicked: planned failure"
        ),
        "{err}"
    );
}

/// A destructor that panics while the run unwinds a blocked task's stack
/// is a panic during an unwind, which aborts the process: rill's report
/// names the task and the error the run was ending with first.
#[test]
fn a_panicking_destructor_during_the_forced_unwind_is_reported_before_the_abort() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("bomb went off");
        }
    }
    if in_child() {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (w, r) = rill::stream::<u64>(1);
        rt.spawn_with("armed", (w, r), |(_w, mut r)| {
            let _b = Bomb;
            r.read();
        });
        let _ = rt.run();
        std::process::exit(3);
    }
    let (status, err) =
        run_child("a_panicking_destructor_during_the_forced_unwind_is_reported_before_the_abort");
    assert!(killed_by_abort(&status), "{status:?}\n{err}");
    assert!(
        err.contains("rill: a destructor panicked while the run dropped task 'armed' (id 1)"),
        "{err}"
    );
    assert!(
        err.contains("the run was ending with this error: deadlock"),
        "{err}"
    );
}

// ---- runs inside runs ----

/// What the inner run's teardown saw, for the outer task to check.
#[derive(Debug, Default)]
struct Seen {
    read_in_drop: Option<Option<u64>>,
    spawn_in_drop: Option<TaskId>,
    inner: Option<String>,
}

/// A value whose drop reads an empty stream and spawns: during a run's
/// forced unwind the read finds the stream closed and the spawn makes
/// nothing, whatever runs on the thread.
struct Probe {
    r: rill::Reader<u64>,
    seen: Arc<Mutex<Seen>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let v = self.r.read();
        let id = rill::spawn("from-a-destructor", || {});
        let mut s = self.seen.lock().unwrap();
        s.read_in_drop = Some(v);
        s.spawn_in_drop = Some(id);
    }
}

/// An inner run that deadlocks, with a task holding a [`Probe`].
fn deadlocking_inner_run(seen: Arc<Mutex<Seen>>) -> Result<rill::RunStats, RunError> {
    let mut inner = Runtime::builder().workers(1).build().unwrap();
    // The writer of the probe's stream stays alive in another stuck task,
    // so the read in the destructor would wait if it could.
    let (pw, pr) = rill::stream::<u64>(1);
    let (w, r) = rill::stream::<u64>(1);
    let probe = Probe { r: pr, seen };
    inner.spawn_with("inner/probe", (r, w), move |(mut r, _w)| {
        let _p = probe;
        r.read();
    });
    let (w2, r2) = rill::stream::<u64>(1);
    inner.spawn_with("inner/stuck", (r2, w2, pw), |(mut r2, _w2, _pw)| {
        r2.read();
    });
    inner.run()
}

#[test]
fn a_run_inside_a_task_keeps_the_teardown_rules() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s2 = seen.clone();
    let stats = with_timeout("a run inside a task", 60, move || {
        let mut outer = Runtime::builder().workers(2).build().unwrap();
        let (_, stats) = outer
            .run_main(move || {
                let inner = deadlocking_inner_run(s2.clone());
                s2.lock().unwrap().inner = Some(match inner {
                    Ok(_) => "ok".into(),
                    Err(e) => e.to_string(),
                });
                // The outer task goes on as a task of the outer run.
                let me = rill::current().expect("still a task of the outer run");
                assert_eq!(me.name, "main");
                let (mut w, mut r) = rill::stream::<u64>(1);
                rill::spawn("outer/after", move || w.write(7).unwrap());
                assert_eq!(r.read(), Some(7));
            })
            .unwrap();
        stats
    });
    let s = seen.lock().unwrap();
    assert!(
        s.inner.as_deref().unwrap().starts_with("deadlock"),
        "{:?}",
        s.inner
    );
    assert_eq!(
        s.read_in_drop,
        Some(None),
        "the read in the destructor saw a value"
    );
    assert_eq!(
        s.spawn_in_drop,
        Some(0),
        "a spawn in the destructor made a task"
    );
    // main and outer/after: nothing of the inner teardown landed here.
    assert_eq!(stats.tasks_created, 2);
}

#[test]
fn a_run_inside_a_destructor_during_a_teardown_keeps_the_outer_unwind() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let after = Arc::new(Mutex::new(None));
    struct RunsInDrop {
        seen: Arc<Mutex<Seen>>,
        r: rill::Reader<u64>,
        after: Arc<Mutex<Option<Option<u64>>>>,
    }
    impl Drop for RunsInDrop {
        fn drop(&mut self) {
            let inner = deadlocking_inner_run(self.seen.clone());
            self.seen.lock().unwrap().inner = Some(match inner {
                Ok(_) => "ok".into(),
                Err(e) => e.to_string(),
            });
            // Still in the outer teardown: the read fails, it does not panic.
            assert!(rill::forced_unwinding());
            *self.after.lock().unwrap() = Some(self.r.read());
        }
    }
    let (s2, a2) = (seen.clone(), after.clone());
    let err = with_timeout("a run inside a destructor", 60, move || {
        let mut outer = Runtime::builder().workers(1).build().unwrap();
        let (w, r) = rill::stream::<u64>(1);
        let (w2, r2) = rill::stream::<u64>(1);
        let guard = RunsInDrop {
            seen: s2,
            r: r2,
            after: a2,
        };
        outer.spawn_with("outer/stuck", (w, r, w2), move |(_w, mut r, _w2)| {
            let _g = guard;
            r.read();
        });
        outer.run().unwrap_err()
    });
    assert!(matches!(err, RunError::Deadlock { .. }), "{err}");
    let s = seen.lock().unwrap();
    assert!(
        s.inner.as_deref().unwrap().starts_with("deadlock"),
        "{:?}",
        s.inner
    );
    assert_eq!(s.read_in_drop, Some(None));
    assert_eq!(*after.lock().unwrap(), Some(None));
}

// ---- spawns ----

/// Ends whose `hold` panics.
struct BadEnds;

impl Ends for BadEnds {
    fn hold(&self, _: TaskId) {
        panic!("hold refuses");
    }
}

#[test]
fn a_panicking_hold_leaves_no_task_behind() {
    let (caught, stats) = with_timeout("a spawn whose hold panics", 60, || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        rt.run_main(|| {
            let r = std::panic::catch_unwind(|| {
                rill::spawn_with("bad", BadEnds, |_| {});
            });
            r.is_err()
        })
        .unwrap()
    });
    assert!(caught);
    assert_eq!(stats.tasks_created, 1, "only main");
}

// ---- feeding a run from outside ----

/// Writes `v` from a thread outside the run: `try_write`, retried while the
/// stream is full (a plain thread cannot block on it).
fn write_from_outside(w: &mut rill::Writer<u64>, mut v: u64) {
    loop {
        match w.try_write(v) {
            Ok(()) => return,
            Err(rill::TryWriteError::Full(back)) => {
                v = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Runs `r`'s reader as the task `main` of a run on `workers` workers and
/// returns every message it read, to the end of the stream.
fn read_all_in_a_run(workers: usize, mut r: rill::Reader<u64>) -> Vec<u64> {
    let mut rt = Runtime::builder().workers(workers).build().unwrap();
    let (got, _) = rt
        .run_main(move || std::iter::from_fn(|| r.read()).collect::<Vec<u64>>())
        .unwrap();
    got
}

/// A plain thread writes one message at a time, far apart, to a reader in
/// the run: the run waits for it, and ends when the thread drops its end.
#[test]
fn a_thread_outside_the_run_feeds_a_reader() {
    let got = with_timeout("a reader fed by a thread", 60, || {
        let (mut w, r) = rill::stream::<u64>(4);
        w.hold_outside();
        let feeder = std::thread::spawn(move || {
            for i in 0..20 {
                std::thread::sleep(Duration::from_millis(5));
                write_from_outside(&mut w, i);
            }
        });
        let got = read_all_in_a_run(2, r);
        feeder.join().unwrap();
        got
    });
    assert_eq!(got, (0..20).collect::<Vec<_>>());
}

/// The same without `hold_outside`: the thread's first write, made before
/// the run can stall, marks its end as held outside.
#[test]
fn an_end_first_used_outside_the_run_counts_as_outside() {
    let got = with_timeout("a reader fed by a thread, unmarked", 60, || {
        let (mut w, r) = rill::stream::<u64>(4);
        w.try_write(0).unwrap();
        let feeder = std::thread::spawn(move || {
            for i in 1..10 {
                std::thread::sleep(Duration::from_millis(5));
                write_from_outside(&mut w, i);
            }
        });
        let got = read_all_in_a_run(1, r);
        feeder.join().unwrap();
        got
    });
    assert_eq!(got, (0..10).collect::<Vec<_>>());
}

/// A task of a second runtime on another thread writes to a reader of the
/// first: the first run waits for it and drains every message.
#[test]
fn a_task_of_another_runtime_feeds_a_reader() {
    let got = with_timeout("a reader fed by another runtime", 60, || {
        let (w, r) = rill::stream::<u64>(2);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let other = std::thread::spawn(move || {
            let mut rt = Runtime::builder().workers(1).build().unwrap();
            rt.spawn_with("other/writer", w, move |mut w| {
                // The first write marks the end as held by another run.
                w.write(0).unwrap();
                ready_tx.send(()).unwrap();
                for i in 1..200 {
                    if i % 50 == 0 {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    w.write(i).unwrap();
                }
            });
            rt.run().unwrap();
        });
        ready_rx.recv().unwrap();
        let got = read_all_in_a_run(2, r);
        other.join().unwrap();
        got
    });
    assert_eq!(got, (0..200).collect::<Vec<_>>());
}

/// Every task waits on an end held outside; the outside drops it: the run
/// ends with the usual end of stream, not a deadlock.
#[test]
fn an_outside_end_dropped_while_every_task_waits_ends_the_stream() {
    let n = Arc::new(AtomicU64::new(u64::MAX));
    let n2 = n.clone();
    with_timeout("an outside end dropped", 60, move || {
        let mut rt = Runtime::builder().workers(2).build().unwrap();
        let (w, r) = rill::stream::<u64>(4);
        w.hold_outside();
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(w);
        });
        rt.spawn_with("reader", r, move |mut r| {
            n2.store(
                std::iter::from_fn(|| r.read()).count() as u64,
                Ordering::SeqCst,
            );
        });
        rt.run().unwrap();
        dropper.join().unwrap();
    });
    assert_eq!(n.load(Ordering::SeqCst), 0);
}

/// An outside reader that drains a stream written by a task: the writer
/// waits on the full stream while the reader lives, and gets
/// `StreamClosed` once it is dropped.
#[test]
fn an_outside_reader_drains_and_then_leaves() {
    let (sent, got) = with_timeout("an outside reader", 60, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (w, r) = rill::stream::<u64>(2);
        r.hold_outside();
        let reader = std::thread::spawn(move || {
            let mut r = r;
            let mut got = 0u64;
            while got < 10 {
                match r.try_read() {
                    Ok(_) => got += 1,
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            got
        });
        let (sent, _) = rt
            .run_main(move || {
                let mut w = w;
                let mut sent = 0u64;
                while w.write(sent).is_ok() {
                    sent += 1;
                }
                sent
            })
            .unwrap();
        (sent, reader.join().unwrap())
    });
    assert_eq!(got, 10);
    assert!((10..=12).contains(&sent), "{sent}");
}

/// A run whose every task waits on an end held outside that does not act
/// says so on stderr once the stall has lasted `stall_report`, and goes on
/// waiting: the end's drop still ends the run normally.
#[test]
fn a_run_stalled_on_an_outside_end_says_so_and_goes_on() {
    if in_child() {
        let mut rt = Runtime::builder()
            .workers(2)
            .stall_report(Duration::from_millis(100))
            .build()
            .unwrap();
        let (w, r) = rill::stream::<u64>(4);
        w.hold_outside();
        let keeper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            drop(w);
        });
        rt.spawn_with("reader", r, |mut r| assert_eq!(r.read(), None));
        rt.run().unwrap();
        keeper.join().unwrap();
        eprintln!("child: the run ended");
        std::process::exit(0);
    }
    let (status, err) = run_child("a_run_stalled_on_an_outside_end_says_so_and_goes_on");
    assert!(status.success(), "{status:?}\n{err}");
    assert_eq!(
        err.matches("rill: the run has waited 0.1 s with every task blocked: 1 task(s) wait on stream ends held outside the run").count(),
        1,
        "{err}"
    );
    assert!(err.contains("child: the run ended"), "{err}");
}

/// A deadlock report names the holder of the other end by name, and says
/// when that holder has ended while its end lives on (here leaked).
#[test]
fn a_deadlock_report_names_holders_and_says_when_one_has_ended() {
    let err = with_timeout("a leaked writer", 60, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (w, r) = rill::stream::<u64>(1);
        let (w2, r2) = rill::stream::<u64>(1);
        rt.spawn_with("leaker", w, std::mem::forget);
        rt.spawn_with("waiter", r, |mut r| {
            r.read();
        });
        rt.spawn_with("cycle/a", (r2, w2), |(mut r2, _w2)| {
            r2.read();
        });
        rt.run().unwrap_err()
    });
    let text = err.to_string();
    assert!(
        text.contains("task 'waiter' (id 2): reading empty stream")
            && text.contains("(writer: task 'leaker' (id 1), which has ended; its end outlived it"),
        "{text}"
    );
    assert!(text.contains("(writer: task 'cycle/a' (id 3))"), "{text}");
}
