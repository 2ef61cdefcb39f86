//! `waits` and `map` read the totals the load kept instead of passing over
//! the records again; their answers must be the ones the merged pass gives
//! (`waits_by_pass`, `plan_mapping_by_pass`), on any logs.

mod common;
mod runs;

use std::path::Path;
use std::time::Duration;

use common::*;
use proptest::prelude::*;
use rill_log::{Calibration, EndState, MonitorFlags, Op, Record, Side, StreamIo};
use rill_monitor::{load_run, plan_mapping, plan_mapping_by_pass, waits, waits_by_pass, RunLog};

/// The two waits tables (grouped and not) and the two plans for 1 to 3
/// workers, as JSON (or both errors).
fn assert_same_answers(run: &RunLog) {
    for group in [true, false] {
        let fast = serde_json::to_value(waits(run, group)).unwrap();
        let slow = serde_json::to_value(waits_by_pass(run, group)).unwrap();
        assert_eq!(fast, slow, "waits, group {group}");
    }
    for workers in 1..=3 {
        let fast = plan_mapping(run, workers).map(|p| serde_json::to_value(p).unwrap());
        let slow = plan_mapping_by_pass(run, workers).map(|p| serde_json::to_value(p).unwrap());
        match (fast, slow) {
            (Ok(f), Ok(s)) => assert_eq!(f, s, "{workers} workers"),
            (Err(f), Err(s)) => assert_eq!(f.to_string(), s.to_string()),
            (f, s) => panic!("{workers} workers: {f:?} against {s:?}"),
        }
    }
}

/// A period of a generated log.
#[derive(Clone, Debug)]
struct Gen {
    task: usize,
    gap: u64,
    dur: u64,
    /// 0 yield, 1 blocked reading, 2 blocked writing, 3 poll, 4 ended.
    state: u8,
    stream: usize,
    io: Vec<(usize, u32, u32, bool)>,
    /// Record the op order (reads of the io entries in reverse order first).
    ops: bool,
}

#[derive(Clone, Debug)]
struct Net {
    /// Per task: its name (None: unnamed) and the log it runs in.
    tasks: Vec<(Option<&'static str>, usize)>,
    /// Per stream: writer, reader, whether each end is bound.
    streams: Vec<(usize, usize, bool, bool)>,
    /// Per log: its periods.
    logs: Vec<Vec<Gen>>,
    /// Let a task's periods fall in any log (as if it migrated).
    migrate: bool,
}

fn arb_net() -> impl Strategy<Value = Net> {
    (1usize..=3, 1usize..=6, 0usize..=4, any::<bool>()).prop_flat_map(
        |(logs, tasks, streams, migrate)| {
            let name = prop_oneof![
                Just(Some("t/0")),
                Just(Some("t/1")),
                Just(Some("x")),
                Just(Some("t/1")),
                Just(None),
            ];
            let bound = prop_oneof![4 => Just(true), 1 => Just(false)];
            let io = (0..streams.max(1), 0u32..3, 0u32..3, any::<bool>());
            let period = (
                0..tasks,
                0u64..10,
                0u64..20,
                0u8..5,
                0..streams.max(1),
                prop::collection::vec(io, 0..3),
                any::<bool>(),
            )
                .prop_map(|(task, gap, dur, state, stream, io, ops)| Gen {
                    task,
                    gap,
                    dur,
                    state,
                    stream,
                    io,
                    ops,
                });
            (
                prop::collection::vec((name, 0..logs), tasks),
                prop::collection::vec((0..tasks, 0..tasks, bound.clone(), bound), streams),
                prop::collection::vec(prop::collection::vec(period, 0..30), logs),
                Just(migrate),
            )
                .prop_map(|(tasks, streams, logs, migrate)| Net {
                    tasks,
                    streams,
                    logs,
                    migrate,
                })
        },
    )
}

fn write_net(dir: &Path, net: &Net) {
    let nlogs = net.logs.len();
    for (w, periods) in net.logs.iter().enumerate() {
        let mut recs = vec![Record::WorkerStart { t: 0 }];
        if w == 0 {
            for (i, (name, home)) in net.tasks.iter().enumerate() {
                if let Some(name) = name {
                    recs.push(Record::TaskAssign {
                        t: 0,
                        task: i as u64 + 1,
                        parent: 0,
                        worker: *home as u32,
                        name: (*name).into(),
                    });
                }
            }
            for (s, &(wr, rd, bw, br)) in net.streams.iter().enumerate() {
                let stream = s as u64 + 100;
                if bw {
                    recs.push(Record::StreamBind {
                        t: 0,
                        stream,
                        side: Side::Writer,
                        task: wr as u64 + 1,
                    });
                }
                if br {
                    recs.push(Record::StreamBind {
                        t: 0,
                        stream,
                        side: Side::Reader,
                        task: rd as u64 + 1,
                    });
                }
            }
        }
        let mut t = 1;
        for g in periods {
            // Without migration a task runs only in its own log.
            let task = if net.migrate || net.tasks[g.task].1 == w {
                g.task
            } else {
                match net.tasks.iter().position(|x| x.1 == w) {
                    Some(k) => k,
                    None => continue,
                }
            };
            let stream = g.stream as u64 + 100;
            let end_state = match g.state {
                0 => EndState::Yielded,
                1 => EndState::BlockedInput { stream },
                2 => EndState::BlockedOutput { stream },
                3 => EndState::BlockedAny,
                _ => EndState::Ended,
            };
            let mut io: Vec<StreamIo> = Vec::new();
            for &(s, reads, writes, woke_peer) in &g.io {
                let stream = s as u64 + 100;
                if net.streams.is_empty() || io.iter().any(|x| x.stream == stream) {
                    continue;
                }
                io.push(StreamIo {
                    stream,
                    reads,
                    writes,
                    woke_peer,
                });
            }
            let ops = if g.ops {
                let mut ops = Vec::new();
                for (k, x) in io.iter().enumerate().rev() {
                    if x.reads > 0 {
                        ops.push(Op::read(k as u16, x.reads));
                    }
                }
                for (k, x) in io.iter().enumerate() {
                    if x.writes > 0 {
                        ops.push(Op::write(k as u16, x.writes));
                    }
                }
                ops
            } else {
                Vec::new()
            };
            let start = t + g.gap;
            recs.push(period(
                start,
                start + g.dur,
                task as u64 + 1,
                end_state,
                io,
                ops,
                vec![],
            ));
            t = start + g.dur;
        }
        recs.push(Record::WorkerEnd { t: t + 1 });
        write_log(
            dir,
            w as u32,
            nlogs as u32,
            MonitorFlags::FULL,
            Calibration::nanos(),
            &recs,
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    /// Generated runs: polls, unbound ends, zero-length periods, names
    /// shared by several tasks, unnamed tasks, tasks in several logs.
    #[test]
    fn generated_runs_answer_alike(net in arb_net()) {
        let dir = tempfile::tempdir().unwrap();
        write_net(dir.path(), &net);
        let run = load_run(dir.path()).unwrap();
        assert_same_answers(&run);
    }
}

#[test]
fn real_runs_answer_alike() {
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        2,
        rill::Mapping::RoundRobin,
        6,
        Some(2),
        Duration::from_micros(50),
        300,
    );
    assert_same_answers(&load_run(dir.path()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    runs::ring(dir.path(), 2, 4, 3, 20, 1, Duration::from_micros(20));
    assert_same_answers(&load_run(dir.path()).unwrap());
    let dir = tempfile::tempdir().unwrap();
    runs::pipe(
        dir.path(),
        3,
        rill::Mapping::Steal,
        8,
        None,
        Duration::ZERO,
        500,
    );
    assert_same_answers(&load_run(dir.path()).unwrap());
}

/// A stream seen only in a stream entry with no messages that woke the
/// other end (as a close may): the pass lists it, so must the totals.
#[test]
fn a_stream_seen_only_waking_its_peer() {
    let net = Net {
        tasks: vec![(Some("a"), 0), (Some("b"), 0)],
        streams: vec![(0, 1, true, true), (0, 1, true, true)],
        logs: vec![vec![
            Gen {
                task: 0,
                gap: 0,
                dur: 5,
                state: 0,
                stream: 0,
                io: vec![(0, 0, 2, false), (1, 0, 0, true)],
                ops: false,
            },
            Gen {
                task: 1,
                gap: 1,
                dur: 5,
                state: 4,
                stream: 0,
                io: vec![(0, 2, 0, false)],
                ops: false,
            },
        ]],
        migrate: false,
    };
    let dir = tempfile::tempdir().unwrap();
    write_net(dir.path(), &net);
    let run = load_run(dir.path()).unwrap();
    assert!(run.streams.contains_key(&101), "{:?}", run.streams);
    assert_same_answers(&run);
    assert_eq!(waits(&run, false).streams.len(), 2);
}
