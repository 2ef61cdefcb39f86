//! rill-mon's scanner (the runtime's borrowing scanner, re-exported) yields
//! exactly the records that were encoded, and on damaged or random data
//! stops where the runtime's owning decoder stops, with the same verdict.

use proptest::prelude::*;
use rill_log::{
    implied_ops, interleaved_ops, Decoder, Encoder, EndReason, EndState, Op, Record, Side,
    StreamIo, VecSink,
};
use rill_monitor::scan::Scanner;

/// The scanner's records (owned through `Scanner::to_record`, which the
/// first property checks against the records that were encoded), its stop
/// offset, and where it found damage.
fn scan_all(data: &[u8]) -> (Vec<Record>, usize, Option<u64>) {
    let mut sc = Scanner::new(data, 0);
    let mut out = Vec::new();
    while let Some(item) = sc.next() {
        out.push(sc.to_record(item));
    }
    (out, sc.offset(), sc.damaged_at())
}

fn decode_all(data: &[u8]) -> (Vec<Record>, usize, Option<u64>) {
    let mut dec = Decoder::records(data);
    let recs: Vec<Record> = dec.by_ref().map_while(Result::ok).collect();
    let damaged = match dec.end_reason() {
        Some(EndReason::Damaged { offset, .. }) => Some(*offset),
        _ => None,
    };
    (recs, dec.offset() as usize, damaged)
}

fn small() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..200, any::<u64>()]
}

fn arb_io() -> impl Strategy<Value = StreamIo> {
    (
        small(),
        prop_oneof![0u32..9, any::<u32>()],
        prop_oneof![0u32..9, any::<u32>()],
        any::<bool>(),
    )
        .prop_map(|(stream, reads, writes, woke_peer)| StreamIo {
            stream,
            reads,
            writes,
            woke_peer,
        })
}

fn arb_period() -> impl Strategy<Value = Record> {
    (
        small(),
        small(),
        small(),
        prop::collection::vec(arb_io(), 0..5),
        0u8..6,
        small(),
        0u8..4,
        prop::collection::vec(
            (
                any::<u16>(),
                any::<bool>(),
                prop_oneof![1u32..9, any::<u32>()],
            ),
            0..6,
        ),
        prop::collection::vec(small(), 0..5),
        any::<bool>(),
    )
        .prop_map(
            |(start, dur, task, mut io, end, other, ops_kind, raw_ops, times, timed)| {
                let end_state = match end {
                    0 => EndState::Yielded,
                    1 => EndState::BlockedInput {
                        stream: io.first().map_or(other, |s| s.stream),
                    },
                    2 => EndState::BlockedOutput { stream: other },
                    3 => EndState::BlockedAny,
                    4 => EndState::Ended,
                    _ => EndState::Panicked,
                };
                let ops: Vec<Op> = match (ops_kind, io.len()) {
                    (0, _) | (_, 0) => Vec::new(),
                    (1, _) => implied_ops(&io).collect(),
                    (3, _) => {
                        // Two runs that interleave: a reads on the first
                        // entry, b = a or a - 1 writes on the last.
                        let a = (dur % 16) as u32 + 2;
                        let b = a - (task % 2) as u32;
                        for s in &mut io {
                            s.reads = 0;
                            s.writes = 0;
                        }
                        io[0].reads = a;
                        io.last_mut().expect("not empty").writes = b;
                        interleaved_ops(&io).expect("interleaves").collect()
                    }
                    (_, n) => raw_ops
                        .into_iter()
                        .map(|(i, w, c)| Op {
                            io_index: i % n as u16,
                            write: w,
                            count: c.max(1),
                        })
                        .collect(),
                };
                Record::Period {
                    start,
                    end: start.wrapping_add(dur),
                    task,
                    end_state,
                    io,
                    ops,
                    op_times: if timed { times } else { Vec::new() },
                }
            },
        )
}

fn arb_record() -> impl Strategy<Value = Record> {
    let side = prop_oneof![Just(Side::Reader), Just(Side::Writer)];
    prop_oneof![
        1 => small().prop_map(|t| Record::WorkerStart { t }),
        1 => (small(), small()).prop_map(|(t, dur)| Record::WorkerWait { t, dur }),
        1 => small().prop_map(|t| Record::WorkerEnd { t }),
        1 => (small(), small(), small(), any::<u32>(), "[a-zé ]{0,12}").prop_map(
            |(t, task, parent, worker, name)| Record::TaskAssign { t, task, parent, worker, name }
        ),
        1 => (small(), small(), any::<u32>(), any::<u32>())
            .prop_map(|(t, task, from, to)| Record::TaskMigrate { t, task, from, to }),
        1 => (small(), small(), any::<u32>(), small())
            .prop_map(|(t, stream, capacity, creator)| Record::StreamOpen { t, stream, capacity, creator }),
        1 => (small(), small(), side.clone(), small())
            .prop_map(|(t, stream, side, task)| Record::StreamBind { t, stream, side, task }),
        1 => (small(), small(), side.clone()).prop_map(|(t, stream, side)| Record::StreamClose { t, stream, side }),
        1 => (small(), side, small(), small())
            .prop_map(|(t, side, old, new)| Record::StreamReplace { t, side, old, new }),
        4 => arb_period(),
    ]
}

fn encode(records: &[Record]) -> Vec<u8> {
    let mut enc = Encoder::new();
    let mut sink = VecSink::new();
    for r in records {
        enc.record(&mut sink, r);
    }
    sink.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256)
    ))]

    #[test]
    fn same_records_as_the_runtime_decoder(records in prop::collection::vec(arb_record(), 0..40)) {
        let data = encode(&records);
        let (ours, stop, damaged) = scan_all(&data);
        prop_assert_eq!(&ours, &records);
        prop_assert_eq!(stop, data.len());
        prop_assert_eq!(damaged, None);
        prop_assert_eq!((ours, stop, damaged), decode_all(&data));
    }

    #[test]
    fn same_verdict_on_damaged_data(
        records in prop::collection::vec(arb_record(), 1..20),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut data = encode(&records);
        for (i, b) in flips {
            let i = i.index(data.len());
            data[i] ^= b;
        }
        let cut = cut.index(data.len() + 1);
        data.truncate(cut);
        prop_assert_eq!(scan_all(&data), decode_all(&data));
    }

    #[test]
    fn same_verdict_on_random_bytes(data in prop::collection::vec(any::<u8>(), 0..200)) {
        prop_assert_eq!(scan_all(&data), decode_all(&data));
    }
}
