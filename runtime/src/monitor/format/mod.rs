//! The binary log format: one file per worker, written only by that worker.
//!
//! # Layout (version 2, little endian)
//!
//! A fixed 48-byte [`Header`]:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8 | magic `b"RILLLOG\0"` |
//! | 8  | 2 | format version (2) |
//! | 10 | 2 | header length (48; records start here) |
//! | 12 | 4 | monitoring flags |
//! | 16 | 4 | worker id |
//! | 20 | 4 | worker count |
//! | 24 | 8 | calibration: ticks per second (`f64` bits) |
//! | 32 | 8 | calibration: start ticks |
//! | 40 | 8 | calibration: start Unix time (ns) |
//!
//! Then records, back to back, until the end of the data or a zero byte where
//! a tag would be (the unused, zeroed tail of a log that was not trimmed).
//! Each record is a tag byte followed by fields; integers are LEB128 varints,
//! times are zig-zag varint deltas from the previous record's time (starting
//! from 0), strings are a varint length and UTF-8 bytes.
//!
//! | tag | record | fields after the tag |
//! |----:|--------|----------------------|
//! | `0x01` | `WorkerStart` | Δt |
//! | `0x02` | `WorkerWait` | Δt, dur (the next Δ is from t + dur) |
//! | `0x03` | `WorkerEnd` | Δt |
//! | `0x04` | `TaskAssign` | Δt, task, parent, worker, name |
//! | `0x05` | `TaskMigrate` | Δt, task, from, to |
//! | `0x06` | `StreamOpen` | Δt, stream, capacity, creator |
//! | `0x07`/`0x08` | `StreamBind` reader/writer | Δt, stream, task |
//! | `0x09`/`0x0a` | `StreamClose` reader/writer | Δt, stream |
//! | `0x0b`/`0x0c` | `StreamReplace` reader/writer | Δt, old, new |
//! | `0x80..=0xff` | `Period` | see below |
//!
//! A period's tag is `1 mm nn eee`: `eee` the [`EndState`] (0 yielded, 1
//! blocked on input, 2 blocked on output, 3 blocked on any, 4 ended, 5
//! panicked), `nn` the number of [`StreamIo`] entries (0..=2; 3 = a varint
//! count follows), `mm` the ops mode. Fields: Δstart, end − start, task,
//! (count), the entries, (blocked-on stream), (ops). The next Δ is from `end`.
//!
//! * Entry: a byte `b www rrr k` (k = woke peer; reads and writes 0..=6
//!   inline, 7 = a varint follows; b = this is the stream the task blocked
//!   on), the stream id, then the long counts.
//! * Blocked-on stream: present only for end states 1 and 2 when no entry has
//!   its `b` bit set: the stream id.
//! * Ops mode 0: no ops. 1: the ops are [`implied_ops`] of the entries (each
//!   entry's reads, then its writes: no bytes). 2: the ops are
//!   [`interleaved_ops`] of the entries (the two implied runs one message at
//!   a time, alternately, as a relay does; no bytes). 3: listed: a varint
//!   `h = n << 3 | form << 1 | timed`, where form 0 means `n` ops follow,
//!   form 1 implied and form 2 interleaved ops (then `n` is 0; form 3 is
//!   invalid); if `timed`, a varint time count and the times as zig-zag
//!   deltas (the first from `start`) follow.
//! * Op: `0 ccc w iii` (count c + 1 = 1..=8, entry index 0..=7), or
//!   `1000000 w` followed by varint index and varint count.
//!
//! A writer writes a record's body before its tag byte, so a writer killed
//! mid-record leaves a zero tag: the log then ends cleanly before that record.
//! Message ids take no bytes: a worker's written messages are numbered
//! 0, 1, 2 ... in log order (id = (worker, seq)), and the k-th message read
//! from a stream is the k-th written to it.

mod decode;
mod encode;
mod record;
mod scan;

pub use decode::{
    parse_log, read_log, DecodeError, DecodeErrorKind, Decoder, EndReason, Log, LogError,
};
pub use encode::{Encoder, PeriodRef, Sink, VecSink};
pub(crate) use encode::{EndIo, OpsForm, PeriodHead};
pub use record::{
    implied_ops, interleaved_ops, EndState, Op, Record, Side, StreamIo, MAX_INTERLEAVED,
};
pub use scan::{Item, OpsKind, ScannedPeriod, Scanner};

use super::clock::Calibration;
use super::flags::MonitorFlags;

/// The bytes every log starts with.
pub const MAGIC: [u8; 8] = *b"RILLLOG\0";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 2;
/// Size of the header this build writes.
pub const HEADER_LEN: usize = 48;
/// Where the header keeps the tick rate (an `f64`, little-endian), which a
/// finished run may rewrite with a better measurement
/// ([`set_header_rate`](crate::monitor::writer::set_header_rate)).
pub const HEADER_RATE_AT: usize = 24;

/// Tag bytes.
mod tag {
    use super::Side;

    pub const WORKER_START: u8 = 0x01;
    pub const WORKER_WAIT: u8 = 0x02;
    pub const WORKER_END: u8 = 0x03;
    pub const TASK_ASSIGN: u8 = 0x04;
    pub const TASK_MIGRATE: u8 = 0x05;
    pub const STREAM_OPEN: u8 = 0x06;
    /// Reader side; the writer side is the next tag.
    pub const STREAM_BIND: u8 = 0x07;
    pub const STREAM_BIND_W: u8 = 0x08;
    pub const STREAM_CLOSE: u8 = 0x09;
    pub const STREAM_CLOSE_W: u8 = 0x0a;
    pub const STREAM_REPLACE: u8 = 0x0b;
    pub const STREAM_REPLACE_W: u8 = 0x0c;
    /// High bit: a period.
    pub const PERIOD: u8 = 0x80;

    pub const OPS_NONE: u8 = 0;
    pub const OPS_IMPLIED: u8 = 1;
    pub const OPS_INTERLEAVED: u8 = 2;
    pub const OPS_LISTED: u8 = 3;

    /// Forms of a listed period's ops (bits 1-2 of its ops header).
    pub const FORM_EXPLICIT: u64 = 0;
    pub const FORM_IMPLIED: u64 = 1;
    pub const FORM_INTERLEAVED: u64 = 2;

    /// The tag of a sided record from its reader-side tag.
    pub const fn with_side(reader_tag: u8, side: Side) -> u8 {
        match side {
            Side::Reader => reader_tag,
            Side::Writer => reader_tag + 1,
        }
    }

    /// The side of a sided record's tag.
    pub const fn side(tag: u8) -> Side {
        // Reader tags are odd (0x07, 0x09, 0x0b).
        if tag & 1 == 1 {
            Side::Reader
        } else {
            Side::Writer
        }
    }
}

/// The fixed header at the start of each log file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Header {
    /// Format version ([`FORMAT_VERSION`] when written by this build).
    pub version: u16,
    /// What the run recorded.
    pub flags: MonitorFlags,
    /// The worker that wrote this log.
    pub worker: u32,
    /// Number of workers in the run (= number of log files).
    pub worker_count: u32,
    /// The run's clock calibration.
    pub calibration: Calibration,
}

impl Header {
    /// A header of the current format version.
    pub fn new(
        flags: MonitorFlags,
        worker: u32,
        worker_count: u32,
        calibration: Calibration,
    ) -> Self {
        Header {
            version: FORMAT_VERSION,
            flags,
            worker,
            worker_count,
            calibration,
        }
    }

    /// The encoded header.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.bits().to_le_bytes());
        b[16..20].copy_from_slice(&self.worker.to_le_bytes());
        b[20..24].copy_from_slice(&self.worker_count.to_le_bytes());
        b[HEADER_RATE_AT..HEADER_RATE_AT + 8]
            .copy_from_slice(&self.calibration.ticks_per_sec.to_bits().to_le_bytes());
        b[32..40].copy_from_slice(&self.calibration.start_ticks.to_le_bytes());
        b[40..48].copy_from_slice(&self.calibration.start_unix_ns.to_le_bytes());
        b
    }
}
