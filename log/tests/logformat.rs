//! Tests of the monitoring log format: encoder/decoder round trips, damaged
//! input (truncation, byte flips, zero tails), the memory-mapped writer
//! (growth, a writer killed with SIGKILL) and header errors.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use proptest::prelude::*;
use rill_log::{
    implied_ops, interleaved_ops, parse_log, read_log, Calibration, DecodeErrorKind, Decoder,
    Encoder, EndReason, EndState, Header, LogError, LogWriter, MonitorFlags, Op, PeriodRef, Record,
    SampleWindow, Scanner, Side, Sink, StreamIo, Truncation, VecSink, FORMAT_VERSION, HEADER_LEN,
    HEADER_STATE_AT, STATE_PAGE_FAULT, STATE_TRUNCATED,
};

// ---------------------------------------------------------------------------
// A per-thread allocation meter, to check that decoding never allocates more
// than its input justifies.

struct Meter;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn account(delta: isize) {
    let _ = LIVE.try_with(|l| {
        let v = l.get() + delta;
        l.set(v);
        let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

// SAFETY: forwards to the system allocator unchanged; the bookkeeping touches
// only const-initialised thread locals without destructors (no allocation).
unsafe impl GlobalAlloc for Meter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static METER: Meter = Meter;

/// Runs `f` and returns its result and the peak of extra bytes it had allocated.
fn peak_alloc<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get) - base;
    (r, peak.max(0) as usize)
}

// ---------------------------------------------------------------------------
// Helpers.

fn encode_all(records: &[Record]) -> (Vec<u8>, Vec<usize>) {
    let mut enc = Encoder::new();
    let mut sink = VecSink::new();
    let mut bounds = vec![0];
    for r in records {
        enc.record(&mut sink, r);
        bounds.push(sink.len());
    }
    (sink.into_bytes(), bounds)
}

/// Decodes bare records; returns them and the end reason.
fn decode_all(data: &[u8]) -> (Vec<Record>, EndReason, u64) {
    let mut dec = Decoder::records(data);
    let mut out = Vec::new();
    let mut steps = 0;
    while let Some(r) = dec.next() {
        steps += 1;
        assert!(steps <= data.len() + 1, "decoder does not advance");
        match r {
            Ok(r) => out.push(r),
            Err(e) => {
                assert_eq!(
                    dec.end_reason(),
                    Some(&EndReason::Damaged {
                        offset: e.offset,
                        reason: e.kind.clone()
                    })
                );
            }
        }
    }
    assert!(dec.next().is_none(), "decoder is fused");
    let end = dec
        .end_reason()
        .cloned()
        .expect("an end reason after the end");
    (out, end, dec.offset())
}

fn io(stream: u64, reads: u32, writes: u32) -> StreamIo {
    StreamIo {
        stream,
        reads,
        writes,
        woke_peer: false,
    }
}

fn header(worker: u32) -> Header {
    Header::new(
        MonitorFlags::FULL,
        worker,
        4,
        Calibration {
            ticks_per_sec: 2.5e9,
            start_ticks: 123_456_789,
            start_unix_ns: 1_700_000_000_000_000_000,
        },
    )
}

fn set_time(rec: &mut Record, time: u64) {
    match rec {
        Record::WorkerStart { t }
        | Record::WorkerWait { t, .. }
        | Record::WorkerEnd { t }
        | Record::TaskAssign { t, .. }
        | Record::TaskMigrate { t, .. }
        | Record::StreamOpen { t, .. }
        | Record::StreamName { t, .. }
        | Record::StreamBind { t, .. }
        | Record::StreamClose { t, .. }
        | Record::TaskTotals { t, .. }
        | Record::StreamTotals { t, .. }
        | Record::WorkerTotals { t, .. }
        | Record::Samples(SampleWindow { t, .. })
        | Record::StreamReplace { t, .. } => *t = time,
        Record::Period { start, end, .. } => {
            let dur = end.wrapping_sub(*start);
            *start = time;
            *end = time.wrapping_add(dur);
        }
    }
}

// ---------------------------------------------------------------------------
// Strategies.

fn small_or_any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..200, 2 => 0u64..100_000, 1 => any::<u64>()]
}

fn small_or_any_u32() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..10, 1 => any::<u32>()]
}

fn arb_side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Reader), Just(Side::Writer)]
}

fn arb_io() -> impl Strategy<Value = StreamIo> {
    (
        small_or_any_u64(),
        small_or_any_u32(),
        small_or_any_u32(),
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
        any::<u64>(),
        small_or_any_u64(),
        small_or_any_u64(),
        proptest::collection::vec(arb_io(), 0..12),
        0u8..6,
        small_or_any_u64(),
        0u8..4,
        proptest::collection::vec(any::<u64>(), 0..6),
    )
        .prop_flat_map(
            |(start, dur, task, io, end_kind, other_stream, ops_kind, times)| {
                let nio = io.len();
                let op = (
                    0..(nio.max(1) as u16),
                    any::<bool>(),
                    prop_oneof![4 => 1u32..10, 1 => any::<u32>()],
                )
                    .prop_map(|(io_index, write, count)| Op {
                        io_index,
                        write,
                        count,
                    });
                let ops = proptest::collection::vec(op, 0..if nio == 0 { 1 } else { 20 });
                (
                    Just((
                        start,
                        dur,
                        task,
                        io,
                        end_kind,
                        other_stream,
                        ops_kind,
                        times,
                    )),
                    ops,
                    any::<prop::sample::Index>(),
                    any::<bool>(),
                )
            },
        )
        .prop_map(
            |(
                (start, dur, task, io, end_kind, other_stream, ops_kind, times),
                ops,
                pick,
                timed,
            )| {
                let blocked_on = if !io.is_empty() && pick.index(2) == 0 {
                    io[pick.index(io.len())].stream
                } else {
                    other_stream
                };
                let end_state =
                    EndState::from_code(end_kind, blocked_on).expect("codes 0 to 5 are states");
                let mut io = io;
                let ops = match ops_kind {
                    0 => Vec::new(),
                    1 => implied_ops(&io).collect(),
                    3 if !io.is_empty() => {
                        // Two runs that interleave: a reads on the first
                        // entry, then b = a or a - 1 writes on the last.
                        let a = pick.index(16) as u32 + 2;
                        let b = a - pick.index(2) as u32;
                        for s in &mut io {
                            s.reads = 0;
                            s.writes = 0;
                        }
                        io[0].reads = a;
                        io.last_mut().expect("not empty").writes = b;
                        interleaved_ops(&io).expect("interleaves").collect()
                    }
                    _ => ops,
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
    prop_oneof![
        1 => any::<u64>().prop_map(|t| Record::WorkerStart { t }),
        1 => (any::<u64>(), small_or_any_u64()).prop_map(|(t, dur)| Record::WorkerWait { t, dur }),
        1 => any::<u64>().prop_map(|t| Record::WorkerEnd { t }),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            small_or_any_u64(),
            small_or_any_u32(),
            ".{0,24}"
        )
            .prop_map(|(t, task, parent, worker, name)| Record::TaskAssign {
                t,
                task,
                parent,
                worker,
                name
            }),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            small_or_any_u32(),
            small_or_any_u32()
        )
            .prop_map(|(t, task, from, to)| Record::TaskMigrate { t, task, from, to }),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            small_or_any_u32(),
            small_or_any_u64()
        )
            .prop_map(|(t, stream, capacity, creator)| Record::StreamOpen {
                t,
                stream,
                capacity,
                creator
            }),
        1 => (any::<u64>(), small_or_any_u64(), "[a-z/#= 0-9]{0,12}")
            .prop_map(|(t, stream, name)| Record::StreamName { t, stream, name }),
        1 => (any::<u64>(), small_or_any_u64(), arb_side(), small_or_any_u64())
            .prop_map(|(t, stream, side, task)| Record::StreamBind { t, stream, side, task }),
        1 => (any::<u64>(), small_or_any_u64(), arb_side())
            .prop_map(|(t, stream, side)| Record::StreamClose { t, stream, side }),
        1 => (any::<u64>(), arb_side(), small_or_any_u64(), small_or_any_u64())
            .prop_map(|(t, side, old, new)| Record::StreamReplace { t, side, old, new }),
        1 => (any::<u64>(), small_or_any_u64(), small_or_any_u64()).prop_map(
            |(t, task, dispatches)| Record::TaskTotals { t, task, dispatches }
        ),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            arb_side(),
            small_or_any_u64(),
            small_or_any_u64()
        )
            .prop_map(|(t, stream, side, messages, waits)| Record::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits
            }),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            small_or_any_u64(),
            small_or_any_u64(),
            small_or_any_u64()
        )
            .prop_map(|(t, dispatches, spins, idles, parks)| Record::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                parks
            }),
        1 => (
            any::<u64>(),
            small_or_any_u64(),
            small_or_any_u32(),
            proptest::array::uniform6(small_or_any_u32()),
            proptest::collection::vec((small_or_any_u64(), small_or_any_u32()), 0..8)
        )
            .prop_map(|(t, dur, worker, n, tasks)| Record::Samples(SampleWindow {
                t,
                dur,
                worker,
                total: n[0],
                signals: n[5],
                sched: n[1],
                spin: n[2],
                idle: n[3],
                parked: n[4],
                tasks
            })),
        4 => arb_period(),
    ]
}

/// A sequence of records whose times advance by random deltas (mostly
/// small, sometimes backwards or huge) from a random base.
fn arb_sequence(max: usize) -> impl Strategy<Value = Vec<Record>> {
    (
        any::<u64>(),
        proptest::collection::vec(
            (
                arb_record(),
                prop_oneof![
                    6 => 0u64..5_000,
                    1 => (0u64..5_000).prop_map(|d| d.wrapping_neg()),
                    1 => any::<u64>()
                ],
            ),
            0..max,
        ),
    )
        .prop_map(|(base, recs)| {
            let mut t = base;
            recs.into_iter()
                .map(|(mut r, d)| {
                    t = t.wrapping_add(d);
                    set_time(&mut r, t);
                    r
                })
                .collect()
        })
}

// ---------------------------------------------------------------------------
// Round trips.

/// Cases per property: 512, or `PROPTEST_CASES` for longer fuzzing runs.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_record_round_trips(rec in arb_record()) {
        let (bytes, _) = encode_all(std::slice::from_ref(&rec));
        let (out, end, off) = decode_all(&bytes);
        prop_assert_eq!(out, vec![rec]);
        prop_assert_eq!(end, EndReason::Clean);
        prop_assert_eq!(off, bytes.len() as u64);
    }

    #[test]
    fn sequences_round_trip(seq in arb_sequence(40)) {
        let (bytes, _) = encode_all(&seq);
        let (out, end, _) = decode_all(&bytes);
        prop_assert_eq!(out, seq);
        prop_assert_eq!(end, EndReason::Clean);
    }

    #[test]
    fn the_first_read_is_the_first_read_op(seq in arb_sequence(30)) {
        let (bytes, _) = encode_all(&seq);
        let mut sc = Scanner::new(&bytes, 0);
        while let Some(item) = sc.next() {
            if let rill_log::Item::Period(_) = item {
                let mut want = None;
                sc.for_each_op(|op| {
                    if want.is_none() && !op.write {
                        want = Some(op);
                    }
                });
                prop_assert_eq!(sc.first_read_op(), want);
            }
        }
    }

    #[test]
    fn truncation_yields_a_prefix(seq in arb_sequence(12)) {
        let (bytes, bounds) = encode_all(&seq);
        for cut in 0..=bytes.len() {
            let (out, end, off) = decode_all(&bytes[..cut]);
            // Complete records before the cut.
            let k = bounds.iter().rposition(|&b| b <= cut).unwrap();
            prop_assert_eq!(&out[..], &seq[..k]);
            prop_assert_eq!(off, bounds[k] as u64);
            if bounds[k] == cut {
                prop_assert_eq!(end, EndReason::Clean);
            } else {
                prop_assert_eq!(
                    end,
                    EndReason::Damaged { offset: bounds[k] as u64, reason: DecodeErrorKind::Truncated }
                );
            }
        }
    }

    #[test]
    fn a_scan_resumed_as_the_log_grows_reads_every_record_once(
        seq in arb_sequence(20),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let (bytes, _) = encode_all(&seq);
        // The log as a reader finds it at a few moments: a prefix that grows,
        // ending anywhere (inside a record too).
        let mut ends: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        ends.sort_unstable();
        ends.push(bytes.len());
        let (mut pos, mut last) = (0usize, 0u64);
        let mut out = Vec::new();
        for end in ends {
            // Only the bytes from the next record on, as a reader of new
            // bytes holds them.
            let mut sc = Scanner::resume(&bytes[pos..end], 0, last);
            while let Some(item) = sc.next() {
                out.push(sc.to_record(item));
            }
            match sc.end_reason() {
                Some(EndReason::Clean) => {}
                Some(EndReason::Damaged { reason, .. }) => {
                    prop_assert_eq!(reason, &DecodeErrorKind::Truncated)
                }
                None => prop_assert!(false, "no end reason"),
            }
            pos += sc.offset();
            last = sc.last_time();
        }
        prop_assert_eq!(pos, bytes.len());
        prop_assert_eq!(out, seq);
    }

    #[test]
    fn zero_tail_is_a_clean_end(seq in arb_sequence(20), zeros in 0usize..300) {
        let (mut bytes, _) = encode_all(&seq);
        let len = bytes.len();
        bytes.resize(len + zeros, 0);
        let (out, end, off) = decode_all(&bytes);
        prop_assert_eq!(out, seq);
        prop_assert_eq!(end, EndReason::Clean);
        prop_assert_eq!(off, len as u64);
    }

    #[test]
    fn byte_flips_never_panic_or_hang(
        seq in arb_sequence(30),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
    ) {
        let (mut bytes, bounds) = encode_all(&seq);
        prop_assume!(!bytes.is_empty());
        let first = flips.iter().map(|(i, _)| i.index(bytes.len())).min().unwrap();
        for (i, x) in &flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x;
        }
        let ((out, _end, off), peak) = peak_alloc(|| decode_all(&bytes));
        prop_assert!(off as usize <= bytes.len());
        // Records wholly before the first flipped byte are intact.
        let intact = bounds.iter().rposition(|&b| b <= first).unwrap();
        prop_assert!(out.len() >= intact);
        prop_assert_eq!(&out[..intact], &seq[..intact]);
        // Bounded memory: a small multiple of the input.
        prop_assert!(peak <= 256 * bytes.len() + 16 * 1024, "peak {} for {} bytes", peak, bytes.len());
    }

    #[test]
    fn header_damage_never_panics(
        cut in 0usize..=HEADER_LEN + 8,
        flips in proptest::collection::vec((0usize..HEADER_LEN, any::<u8>()), 0..4),
    ) {
        let mut file = header(1).to_bytes().to_vec();
        file.extend_from_slice(&encode_all(&[Record::WorkerStart { t: 1 }]).0);
        for (i, x) in flips {
            file[i] ^= x;
        }
        file.truncate(cut);
        match parse_log(&file) {
            Ok(log) => prop_assert!(log.end_offset as usize <= file.len()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let ((_, _, off), peak) = peak_alloc(|| decode_all(&bytes));
        prop_assert!(off as usize <= bytes.len());
        prop_assert!(peak <= 256 * bytes.len() + 16 * 1024);
        // With a header in front too.
        let mut file = header(0).to_bytes().to_vec();
        file.extend_from_slice(&bytes);
        let log = parse_log(&file).unwrap();
        prop_assert!(log.end_offset as usize <= file.len());
    }
}

#[test]
fn huge_counts_do_not_allocate() {
    let big = |v: u64| {
        let mut b = [0u8; 10];
        let n = rill_log::varint::write_u64(&mut b, v);
        b[..n].to_vec()
    };
    let cases: Vec<Vec<u8>> = vec![
        // TaskAssign with a name length of 2^40.
        [vec![0x04, 0, 1, 0, 0], big(1 << 40), vec![b'x'; 16]].concat(),
        // A period (io count in a varint) claiming 2^50 stream entries.
        [vec![0x80 | 3 << 3, 0, 0, 1], big(1 << 50), vec![0; 16]].concat(),
        // Listed explicit ops claiming 2^60 ops.
        [vec![0x80 | 3 << 5, 0, 0, 1], big(1 << 63), vec![0; 16]].concat(),
        // Timed explicit ops claiming 2^60 ops, and many times.
        [vec![0x80 | 3 << 5, 0, 0, 1], big(1 << 63 | 1), vec![0; 16]].concat(),
        [vec![0x80 | 3 << 5, 0, 0, 1, 1], big(u64::MAX), vec![0; 16]].concat(),
        // Interleaved ops of 2^31 + 2^31 - 1 messages.
        [
            vec![0x80 | 2 << 5 | 2 << 3, 0, 0, 1, 0x0e, 5],
            big(1 << 31),
            vec![0x70, 6],
            big((1 << 31) - 1),
            vec![0; 16],
        ]
        .concat(),
    ];
    for bytes in cases {
        let ((out, end, _), peak) = peak_alloc(|| decode_all(&bytes));
        assert!(out.is_empty());
        assert!(
            matches!(end, EndReason::Damaged { offset: 0, .. }),
            "{end:?}"
        );
        assert!(peak < 4096, "peak {peak}");
    }
}

#[test]
fn overlong_varints_are_errors() {
    let mut bytes = vec![0x01];
    bytes.extend_from_slice(&[0xff; 11]);
    bytes.push(0);
    let (out, end, _) = decode_all(&bytes);
    assert!(out.is_empty());
    assert_eq!(
        end,
        EndReason::Damaged {
            offset: 0,
            reason: DecodeErrorKind::BadVarint
        }
    );
}

#[test]
fn malformed_records_say_why() {
    let cases: Vec<(Vec<u8>, DecodeErrorKind)> = vec![
        (vec![0x7f, 0], DecodeErrorKind::UnknownTag(0x7f)),
        (vec![0x14, 0], DecodeErrorKind::UnknownTag(0x14)),
        // A window of samples that lists more tasks than its bytes can hold.
        (
            vec![0x12, 0, 0, 0, 0, 0, 0, 0, 0, 100, 1, 1],
            DecodeErrorKind::Truncated,
        ),
        (vec![0x86, 0, 0, 1], DecodeErrorKind::BadEndState(6)),
        // An io entry with the reserved bit.
        (
            vec![0x88, 0, 0, 1, 0x80, 1],
            DecodeErrorKind::ReservedBits("stream entry header"),
        ),
        // Two entries marked as the blocked-on stream.
        (
            vec![0x91, 0, 0, 1, 0x82, 5, 0x82, 6],
            DecodeErrorKind::ReservedBits("stream entry header"),
        ),
        // Explicit op on entry 1 of 1.
        (
            vec![0xe8, 0, 0, 1, 0x02, 5, 1 << 3, 0x01],
            DecodeErrorKind::BadIndex {
                field: "op",
                index: 1,
                len: 1,
            },
        ),
        // Interleaved ops over one run.
        (
            vec![0xc8, 0, 0, 1, 0x02, 5],
            DecodeErrorKind::NotInterleaved,
        ),
        // Listed ops of form 3, and of form 1 (implied) with a count.
        (
            vec![0xe8, 0, 0, 1, 0x02, 5, 3 << 1],
            DecodeErrorKind::ReservedBits("listed ops header"),
        ),
        (
            vec![0xe8, 0, 0, 1, 0x02, 5, 1 << 3 | 1 << 1],
            DecodeErrorKind::ReservedBits("listed ops header"),
        ),
        // Reads count over u32.
        (
            vec![0x88, 0, 0, 1, 0x0e, 5, 0x80, 0x80, 0x80, 0x80, 0x10],
            DecodeErrorKind::OutOfRange {
                field: "reads",
                value: 1 << 32,
            },
        ),
        (
            vec![0x04, 0, 1, 0, 0, 2, 0xff, 0xfe],
            DecodeErrorKind::BadUtf8,
        ),
    ];
    for (bytes, kind) in cases {
        let mut data = encode_all(&[Record::WorkerStart { t: 5 }]).0;
        let at = data.len() as u64;
        data.extend_from_slice(&bytes);
        let (out, end, _) = decode_all(&data);
        assert_eq!(out, [Record::WorkerStart { t: 5 }]);
        assert_eq!(
            end,
            EndReason::Damaged {
                offset: at,
                reason: kind.clone()
            },
            "{bytes:x?}"
        );
        let msg = Decoder::records(&data)
            .nth(1)
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with(&format!("damaged record at byte {at}: ")),
            "{msg}"
        );
    }
}

// ---------------------------------------------------------------------------
// Sizes.

fn encoded_len(enc: &mut Encoder, f: impl FnOnce(&mut Encoder, &mut VecSink)) -> usize {
    let mut sink = VecSink::new();
    f(enc, &mut sink);
    sink.len()
}

#[test]
fn typical_record_sizes() {
    let mut enc = Encoder::new();
    let base = 1u64 << 40;
    enc.worker_start(&mut VecSink::new(), base);
    // A relay period, dispatched 150 ticks after the previous record, running
    // 2000 ticks, reading one message and writing one: implied ops.
    let ios = [io(12, 1, 0), io(13, 0, 1)];
    let ops = [Op::read(0, 1), Op::write(1, 1)];
    let n = encoded_len(&mut enc, |e, s| {
        e.period(
            s,
            &PeriodRef {
                start: base + 150,
                end: base + 2150,
                task: 7,
                end_state: EndState::BlockedInput { stream: 12 },
                io: &ios,
                ops: &ops,
                op_times: &[],
            },
        )
    });
    println!("relay period, 2 streams, implied ops: {n} bytes");
    assert!(n <= 10, "{n}");
    // The same, blocked on a stream it did not use.
    let n = encoded_len(&mut enc, |e, s| {
        e.period(
            s,
            &PeriodRef {
                start: base + 2200,
                end: base + 2300,
                task: 7,
                end_state: EndState::BlockedOutput { stream: 14 },
                io: &ios,
                ops: &ops,
                op_times: &[],
            },
        )
    });
    println!("relay period, blocked on another stream: {n} bytes");
    assert!(n <= 10, "{n}");
    // One stream, two reads, yielded.
    let n = encoded_len(&mut enc, |e, s| {
        e.period(
            s,
            &PeriodRef {
                start: base + 2400,
                end: base + 3300,
                task: 8,
                end_state: EndState::Yielded,
                io: &[io(13, 2, 0)],
                ops: &[Op::read(0, 2)],
                op_times: &[],
            },
        )
    });
    println!("period, 1 stream, implied ops: {n} bytes");
    assert!(n <= 8, "{n}");
    // Interleaved relay: R1 W1 R1 W1 (explicit ops).
    let ios = [io(12, 2, 0), io(13, 0, 2)];
    let ops = [
        Op::read(0, 1),
        Op::write(1, 1),
        Op::read(0, 1),
        Op::write(1, 1),
    ];
    let n = encoded_len(&mut enc, |e, s| {
        e.period(
            s,
            &PeriodRef {
                start: base + 3400,
                end: base + 6400,
                task: 7,
                end_state: EndState::BlockedInput { stream: 12 },
                io: &ios,
                ops: &ops,
                op_times: &[],
            },
        )
    });
    println!("interleaved relay period, 4 explicit ops: {n} bytes");
    assert!(n <= 15, "{n}");
    let n = encoded_len(&mut enc, |e, s| e.worker_wait(s, base + 6500, 40_000));
    println!("worker wait: {n} bytes");
    assert!(n <= 6);
    let n = encoded_len(&mut enc, |e, s| e.stream_open(s, base + 46_600, 20, 64, 7));
    println!("stream open: {n} bytes");
    assert!(n <= 6);
}

/// A pipeline workload: a producer, `stages` relays and a consumer on one
/// worker, dispatched round robin, each moving one message per period.
fn pipeline_bytes_per_event(stages: u64, messages: u64, batch: u32) -> f64 {
    let mut enc = Encoder::new();
    let mut sink = VecSink::new();
    let mut t = 1u64 << 42;
    let mut events = 0u64;
    let next = |t: &mut u64, d: u64| {
        *t += d;
        *t
    };
    for m in 0..messages / u64::from(batch) {
        for task in 0..stages + 2 {
            let start = next(&mut t, 120 + (m * 7 + task * 13) % 60);
            let end = next(&mut t, 900 + (m * 31 + task * 17) % 700);
            let (ios, ops): (Vec<StreamIo>, Vec<Op>) = if task == 0 {
                (vec![io(1, 0, batch)], vec![Op::write(0, batch)])
            } else if task == stages + 1 {
                (vec![io(task, batch, 0)], vec![Op::read(0, batch)])
            } else if batch == 1 {
                (
                    vec![io(task, 1, 0), io(task + 1, 0, 1)],
                    vec![Op::read(0, 1), Op::write(1, 1)],
                )
            } else {
                let ops = (0..batch)
                    .flat_map(|_| [Op::read(0, 1), Op::write(1, 1)])
                    .collect();
                (vec![io(task, batch, 0), io(task + 1, 0, batch)], ops)
            };
            let end_state = if task == 0 {
                EndState::BlockedOutput { stream: 1 }
            } else {
                EndState::BlockedInput { stream: task }
            };
            let rec = Record::Period {
                start,
                end,
                task: task + 1,
                end_state,
                io: ios,
                ops,
                op_times: Vec::new(),
            };
            events += rec.events();
            enc.record(&mut sink, &rec);
        }
    }
    let (out, end, _) = decode_all(sink.bytes());
    assert_eq!(end, EndReason::Clean);
    assert_eq!(out.iter().map(Record::events).sum::<u64>(), events);
    sink.len() as f64 / events as f64
}

#[test]
fn pipeline_bytes_per_event_is_small() {
    for (stages, batch) in [(1, 1), (4, 1), (4, 8)] {
        let bpe = pipeline_bytes_per_event(stages, 2400, batch);
        println!("pipeline with {stages} relays, batch {batch}: {bpe:.2} bytes/event");
        assert!(bpe < 4.5, "{bpe}");
    }
}

// ---------------------------------------------------------------------------
// Headers and files.

#[test]
fn header_round_trips() {
    let h = header(3);
    let bytes = h.to_bytes();
    assert_eq!(bytes.len(), HEADER_LEN);
    assert_eq!(&bytes[..8], b"RILLLOG\0");
    assert_eq!(Header::parse(&bytes).unwrap(), (h, HEADER_LEN));
    let log = parse_log(&bytes).unwrap();
    assert_eq!(log.header, h);
    assert!(log.records.is_empty());
    assert_eq!(log.end, EndReason::Clean);
}

/// The log's state (truncated, and why) round-trips; a header of 48 bytes,
/// as versions 2 and 3 wrote before the state was added, reads as a log
/// that was not truncated, its records from byte 48.
#[test]
fn header_state_round_trips_and_older_headers_read() {
    let mut h = header(1);
    h.truncated = Some(Truncation::os(28));
    let bytes = h.to_bytes();
    assert_eq!(Header::parse(&bytes).unwrap(), (h, HEADER_LEN));
    assert_eq!(
        u32::from_le_bytes(
            bytes[HEADER_STATE_AT..HEADER_STATE_AT + 4]
                .try_into()
                .unwrap()
        ),
        STATE_TRUNCATED
    );
    let cause = Truncation::os(28).cause();
    assert!(cause.contains("No space left"), "{cause}");
    assert!(!Truncation::os(0).cause().is_empty());
    assert!(!Truncation::os(u32::MAX).cause().is_empty());
    let fault = Truncation {
        os_error: 0,
        page_fault: true,
    };
    h.truncated = Some(fault);
    let bytes = h.to_bytes();
    assert_eq!(Header::parse(&bytes).unwrap().0.truncated, Some(fault));
    assert_eq!(
        u32::from_le_bytes(
            bytes[HEADER_STATE_AT..HEADER_STATE_AT + 4]
                .try_into()
                .unwrap()
        ),
        STATE_TRUNCATED | STATE_PAGE_FAULT
    );
    assert!(
        fault.cause().contains("could not back"),
        "{}",
        fault.cause()
    );

    for version in [2u16, 3] {
        let mut old = header(1).to_bytes()[..48].to_vec();
        old[8..10].copy_from_slice(&version.to_le_bytes());
        old[10..12].copy_from_slice(&48u16.to_le_bytes());
        old.extend_from_slice(&encode_all(&[Record::WorkerEnd { t: 9 }]).0);
        let log = parse_log(&old).unwrap();
        assert_eq!(log.header.truncated, None);
        assert_eq!(log.header.version, version);
        assert_eq!(log.records, [Record::WorkerEnd { t: 9 }]);
    }
}

#[test]
fn header_errors_are_clear() {
    let good = header(0).to_bytes();

    let mut bad = good;
    bad[0] = b'X';
    let e = parse_log(&bad).unwrap_err();
    assert!(matches!(e, LogError::NotRillLog));
    assert!(e.to_string().contains("not a rill log"), "{e}");
    assert!(matches!(
        parse_log(b"hello, world, this is text"),
        Err(LogError::NotRillLog)
    ));

    let mut newer = good;
    newer[8..10].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let e = parse_log(&newer).unwrap_err();
    assert!(
        matches!(
            e,
            LogError::UnsupportedVersion { found, supported }
                if found == FORMAT_VERSION + 1 && supported == FORMAT_VERSION
        ),
        "{e:?}"
    );
    // Older versions, which lack only records added since, read.
    let mut older = good;
    older[8..10].copy_from_slice(&2u16.to_le_bytes());
    assert!(parse_log(&older).is_ok());
    let mut oldest = good;
    oldest[8..10].copy_from_slice(&1u16.to_le_bytes());
    assert!(parse_log(&oldest).is_err());
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("version {}", FORMAT_VERSION + 1))
            && msg.contains(&format!("versions 2 to {FORMAT_VERSION}"))
            && msg.contains("newer"),
        "{msg}"
    );

    let e = parse_log(&good[..20]).unwrap_err();
    assert!(
        matches!(
            e,
            LogError::TruncatedHeader {
                len: 20,
                need: HEADER_LEN
            }
        ),
        "{e:?}"
    );
    assert!(matches!(
        parse_log(b"RILL"),
        Err(LogError::TruncatedHeader { .. })
    ));

    let mut short = good;
    short[10..12].copy_from_slice(&8u16.to_le_bytes());
    assert!(matches!(parse_log(&short), Err(LogError::BadHeader(_))));

    // A longer header (a future extension within the version) is skipped.
    let mut longer = good.to_vec();
    longer[10..12].copy_from_slice(&((HEADER_LEN + 8) as u16).to_le_bytes());
    longer.extend_from_slice(&[0xee; 8]);
    longer.extend_from_slice(&encode_all(&[Record::WorkerEnd { t: 9 }]).0);
    let log = parse_log(&longer).unwrap();
    assert_eq!(log.records, [Record::WorkerEnd { t: 9 }]);

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.rlog");
    let e = read_log(&missing).unwrap_err();
    assert!(matches!(e, LogError::NotFound { .. }));
    assert!(e.to_string().contains("nope.rlog"), "{e}");
}

/// Deterministic record `i` of the writer tests: mixed kinds and sizes.
fn record_i(i: u64) -> Record {
    let t = 1_000_000 + i * 1_000;
    match i % 7 {
        0 => Record::TaskAssign {
            t,
            task: i,
            parent: i / 2,
            worker: (i % 4) as u32,
            name: format!("task-{i}-{}", "x".repeat((i % 50) as usize)),
        },
        1 => Record::StreamOpen {
            t,
            stream: i,
            capacity: 16,
            creator: i / 3,
        },
        2 => Record::WorkerWait { t, dur: 300 },
        _ => Record::Period {
            start: t,
            end: t + 500 + i % 300,
            task: i % 100,
            end_state: EndState::BlockedInput { stream: i % 10 },
            io: vec![io(i % 10, 1, 0), io(i % 10 + 1, 0, 1)],
            ops: vec![Op::read(0, 1), Op::write(1, 1)],
            op_times: Vec::new(),
        },
    }
}

#[test]
fn log_writer_grows_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::create_with_len(dir.path(), 2, &header(99), 4096).unwrap();
    let path = w.path().to_owned();
    assert_eq!(path, dir.path().join("worker-2.rlog"));
    let mut enc = Encoder::new();
    let mut caps = vec![w.capacity()];
    let n = 60_000;
    for i in 0..n {
        enc.record(&mut w, &record_i(i));
        if w.capacity() != *caps.last().unwrap() {
            caps.push(w.capacity());
        }
    }
    assert!(caps.len() >= 5, "grew only {caps:?}");
    let written = w.written();
    assert_eq!(w.finish().unwrap(), written);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
    let log = read_log(&path).unwrap();
    assert_eq!(
        log.header,
        Header {
            worker: 2,
            ..header(99)
        }
    );
    assert_eq!(log.end, EndReason::Clean);
    assert_eq!(log.end_offset, written);
    assert_eq!(log.records.len(), n as usize);
    for (i, r) in log.records.iter().enumerate() {
        assert_eq!(r, &record_i(i as u64));
    }
}

#[test]
fn log_writer_drop_trims() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::create(dir.path(), 0, &header(0)).unwrap();
    assert_eq!(w.capacity(), 4 << 20);
    let mut enc = Encoder::new();
    for i in 0..100 {
        enc.record(&mut w, &record_i(i));
    }
    let written = w.written();
    let path = w.path().to_owned();
    drop(w);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
    assert_eq!(read_log(&path).unwrap().records.len(), 100);
}

#[test]
fn untrimmed_file_reads_cleanly() {
    // What a killed writer leaves: the records, then the zeroed rest of the file.
    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::create(dir.path(), 1, &header(1)).unwrap();
    let mut enc = Encoder::new();
    for i in 0..50 {
        enc.record(&mut w, &record_i(i));
    }
    let written = w.written();
    let path = w.path().to_owned();
    std::mem::forget(w); // neither trimmed nor unmapped
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4 << 20);
    let log = read_log(&path).unwrap();
    assert_eq!(log.records.len(), 50);
    assert_eq!(log.end, EndReason::Clean);
    assert_eq!(log.end_offset, written);
}

const CHILD_ENV: &str = "RILL_LOGFMT_KILL_CHILD_DIR";

/// The child's side of `sigkill_leaves_a_clean_log`: writes records forever.
fn child_writer(dir: &Path) -> ! {
    use std::io::Write;
    let mut w = LogWriter::create_with_len(dir, 0, &header(0), 8192).unwrap();
    let mut enc = Encoder::new();
    let mut i = 0u64;
    loop {
        enc.record(&mut w, &record_i(i));
        i += 1;
        if i == 20_000 {
            println!("CHILD_READY");
            std::io::stdout().flush().unwrap();
        }
    }
}

#[test]
#[cfg(unix)]
fn sigkill_leaves_a_clean_log() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child_writer(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigkill_leaves_a_clean_log",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.any(|l| l.map(|l| l.contains("CHILD_READY")).unwrap_or(false));
    assert!(ready, "child did not start writing");
    std::thread::sleep(Duration::from_millis(30));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success());

    let path = dir.path().join("worker-0.rlog");
    let len = std::fs::metadata(&path).unwrap().len();
    let log = read_log(&path).unwrap();
    assert_eq!(log.end, EndReason::Clean, "{}", log.end);
    assert!(log.records.len() >= 20_000, "{} records", log.records.len());
    for (i, r) in log.records.iter().enumerate() {
        assert_eq!(r, &record_i(i as u64), "record {i}");
    }
    // Everything after the last record is zeros except, possibly, the body
    // of the one record being written when the child was killed.
    let data = std::fs::read(&path).unwrap();
    let tail = &data[log.end_offset as usize..];
    let nonzero = tail.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    assert!(nonzero <= 128, "{nonzero} non-zero tail bytes");
    println!(
        "killed writer: {} records, {} of {len} bytes used",
        log.records.len(),
        log.end_offset
    );
}

const FULL_DISK_ENV: &str = "RILL_LOGFMT_FULL_DISK_DIR";

/// The child's side of `log_writer_survives_a_full_disk`: with a 256 KiB file
/// size limit, writes far more than that.
#[cfg(unix)]
fn full_disk_child(dir: &Path) {
    // SAFETY: plain libc calls with valid arguments; the child is
    // single-threaded at this point of the test (run with one test thread).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: 256 << 10,
            rlim_max: 256 << 10,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let mut w = LogWriter::create_with_len(dir, 5, &header(5), 16 << 10).unwrap();
    let mut enc = Encoder::new();
    for i in 0..100_000 {
        enc.record(&mut w, &record_i(i));
    }
    assert!(w.error().is_some(), "the file size limit was not hit");
    assert!(w.dropped() > 0);
    let written = w.written();
    let err = w.finish().unwrap_err();
    println!("FULL_DISK_OK {written} {err}");
}

#[test]
#[cfg(unix)]
fn log_writer_survives_a_full_disk() {
    use std::process::Command;

    if let Some(dir) = std::env::var_os(FULL_DISK_ENV) {
        full_disk_child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "log_writer_survives_a_full_disk",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FULL_DISK_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout
        .split_once("FULL_DISK_OK ")
        .unwrap_or_else(|| panic!("no child report in: {stdout}"))
        .1;
    let written: u64 = report.split(' ').next().unwrap().parse().unwrap();
    let path = dir.path().join("worker-5.rlog");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
    let log = read_log(&path).unwrap();
    assert_eq!(log.end, EndReason::Clean);
    assert!(!log.records.is_empty());
    for (i, r) in log.records.iter().enumerate() {
        assert_eq!(r, &record_i(i as u64));
    }
}

// ---------------------------------------------------------------------------
// Encoding cost (run with `cargo test --release -p rill-log --test logformat -- --ignored --nocapture`).

/// This thread's CPU time in ns (unaffected by time spent descheduled on a
/// loaded machine).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Best of `rounds` runs of `f(n)`: (wall ns, thread CPU ns) per iteration.
fn best_of(rounds: usize, n: u64, mut f: impl FnMut(u64)) -> (f64, f64) {
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let w0 = std::time::Instant::now();
        let c0 = thread_cpu_ns();
        f(n);
        let cpu = (thread_cpu_ns() - c0) as f64 / n as f64;
        let wall = w0.elapsed().as_nanos() as f64 / n as f64;
        best = (best.0.min(wall), best.1.min(cpu));
    }
    best
}

#[test]
#[ignore = "timing; run in release"]
fn encode_cost() {
    use std::hint::black_box;

    fn periods<S: Sink>(sink: &mut S, enc: &mut Encoder, n: u64, reset: &mut impl FnMut(&mut S)) {
        let ios = [io(3, 1, 0)];
        let ops = [Op::read(0, 1)];
        let mut t = enc.last_time().max(1 << 40);
        for i in 0..n {
            t += 1500 + (i & 255);
            enc.period(
                sink,
                black_box(&PeriodRef {
                    start: t,
                    end: t + 900,
                    task: 17,
                    end_state: EndState::BlockedInput { stream: 3 },
                    io: &ios,
                    ops: &ops,
                    op_times: &[],
                }),
            );
            if i & 0xffff == 0xffff {
                reset(sink);
            }
        }
    }
    let n = std::env::var("RILL_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    // The loop alone (building the PeriodRef), to subtract.
    let (wall, cpu) = best_of(5, n, |n| {
        let ios = [io(3, 1, 0)];
        let ops = [Op::read(0, 1)];
        let mut t = 1u64 << 40;
        for i in 0..n {
            t += 1500 + (i & 255);
            black_box(&PeriodRef {
                start: t,
                end: t + 900,
                task: 17,
                end_state: EndState::BlockedInput { stream: 3 },
                io: &ios,
                ops: &ops,
                op_times: &[],
            });
        }
    });
    println!("loop overhead: {wall:.2} ns wall, {cpu:.2} ns CPU");
    let mut enc = Encoder::new();
    let mut sink = VecSink::new();
    let (wall, cpu) = best_of(5, n, |n| {
        periods(&mut sink, &mut enc, n, &mut VecSink::clear)
    });
    println!("period (1 stream) into VecSink: {wall:.2} ns wall, {cpu:.2} ns CPU");

    let dir = tempfile::tempdir().unwrap();
    let mut w = LogWriter::create(dir.path(), 0, &header(0)).unwrap();
    let mut enc = Encoder::new();
    let (wall, cpu) = best_of(5, n, |n| periods(&mut w, &mut enc, n, &mut |_| {}));
    println!(
        "period (1 stream) into LogWriter (fresh pages, file grows): {wall:.2} ns wall, {cpu:.2} ns CPU; {} bytes/period",
        w.written() / (5 * n)
    );
}

/// A version-4 window (tag 0x12, no signal count) still reads, its samples
/// standing for one signal each; the current encoder writes the signals.
#[test]
fn a_version_4_window_reads_with_one_signal_per_sample() {
    let mut data = encode_all(&[Record::WorkerStart { t: 5 }]).0;
    // Δt +1 (zigzag: 2), dur 10, worker 1, total 8, sched 1, spin 1, idle
    // 1, parked 2, one task: Δid 7, 3 samples (each a one-byte varint).
    data.extend_from_slice(&[0x12, 2, 10, 1, 8, 1, 1, 1, 2, 1, 7, 3]);
    let (out, end, _) = decode_all(&data);
    assert_eq!(end, EndReason::Clean, "{out:?}");
    let want = SampleWindow {
        t: 6,
        dur: 10,
        worker: 1,
        total: 8,
        signals: 8,
        sched: 1,
        spin: 1,
        idle: 1,
        parked: 2,
        tasks: vec![(7, 3)],
    };
    assert_eq!(out[1], Record::Samples(want.clone()));
    // Written now, a window keeps its own signal count.
    let now = SampleWindow { signals: 3, ..want };
    let recs = [Record::WorkerStart { t: 5 }, Record::Samples(now)];
    let (out, _, _) = decode_all(&encode_all(&recs).0);
    assert_eq!(out, recs);
}
