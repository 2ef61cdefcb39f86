//! rill-log: the binary monitoring log format that the rill runtime writes
//! (one file per worker, written only by that worker) and `rill-mon` reads.
//! It depends on no part of the runtime.
//!
//! # What lives where
//!
//! | module | what |
//! |--------|------|
//! | `flags.rs` | [`MonitorFlags`]: which event classes a run records |
//! | `calibration.rs` | [`Calibration`]: raw clock ticks to nanoseconds and wall-clock time |
//! | `varint.rs` | [`varint`]: LEB128 and zig-zag integers |
//! | `error.rs` | what is wrong with data that is not a whole log ([`LogError`], [`DecodeErrorKind`], [`DecodeError`], [`EndReason`]) |
//! | `record.rs` | the decoded records ([`Record`], [`EndState`], [`StreamIo`], [`Op`], [`Side`]) and the op orders that take no bytes ([`implied_ops`], [`interleaved_ops`]) |
//! | `tag.rs` | the tag bytes (private) |
//! | `header.rs` | the file [`Header`], why a log ends early ([`Truncation`]) and the layout constants ([`MAGIC`], [`FORMAT_VERSION`], [`HEADER_LEN`], [`HEADER_RATE_AT`], [`HEADER_STATE_AT`], [`STATE_TRUNCATED`], [`STATE_PAGE_FAULT`]) |
//! | `encode.rs` | the allocation-free [`Encoder`] writing into a [`Sink`] ([`VecSink`] in memory) |
//! | `scan.rs` | the borrowing, allocation-free [`Scanner`], the one place records are decoded |
//! | `decode.rs` | the [`Decoder`] of owned records built on it, [`read_log`] and [`parse_log`] |
//! | `dir_lock.rs` | [`DirLock`]: a log directory belongs to one live run ([`LOCK_FILE_NAME`], [`DirLockError`]) |
//! | `space.rs` | reserving a log file's disk space before it is written (private) |
//! | `sigbus.rs` | the net under a log's mapping: [`rescue_fault`], for a SIGBUS handler |
//! | `writer.rs` | [`LogWriter`], a memory-mapped log file that is a [`Sink`]; [`log_file_name`], [`set_header_rate`] |
//! | `retire.rs` | a log directory's files set aside when a new run takes it ([`retire`], [`sweep_retired`], [`RETIRED_PREFIX`]) |
//!
//! Imports go one way: each module imports only modules above it in this
//! table. `scan` and `decode` share their error types through `error`, so
//! the scanner does not import the decoder built on it.
//!
//! # A log directory
//!
//! A run writes `worker-{id}.rlog` for each of its workers into one
//! directory, and holds an exclusive `flock` on the directory's
//! [`LOCK_FILE_NAME`] (`rill.lock`, holding the owner's pid) from before it
//! makes its logs until it has finished them ([`DirLock`]). Readers need no
//! lock; they ignore every other file.
//!
//! # Layout (version 6, little endian)
//!
//! A [`Header`] of [`HEADER_LEN`] (56) bytes:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8 | magic `b"RILLLOG\0"` |
//! | 8  | 2 | format version (2 to 5) |
//! | 10 | 2 | header length (56; records start here; 48 in older logs) |
//! | 12 | 4 | monitoring flags |
//! | 16 | 4 | worker id (the sampler's log: the worker count) |
//! | 20 | 4 | worker count |
//! | 24 | 8 | calibration: ticks per second (`f64` bits) |
//! | 32 | 8 | calibration: start ticks |
//! | 40 | 8 | calibration: start Unix time (ns) |
//! | 48 | 4 | log state: bit 0 [`STATE_TRUNCATED`] (the writer stopped before its run ended: the disk was full), bit 1 [`STATE_PAGE_FAULT`] (what stopped it was a page the filesystem could not back) |
//! | 52 | 4 | the OS error number that stopped the writer (0: none, or not an OS error) |
//!
//! The log state was added within version 3 without a new version number:
//! a reader skips to the header length, so an older reader reads a newer
//! log's records right (it only misses the state), and a header of 48
//! bytes, as versions 2 and 3 wrote before, is read as a log that was not
//! truncated. A writer marks the state in its mapped header when it stops,
//! so a truncated log says so even when its process dies afterwards.
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
//! | `0x0d` | `StreamName` (version 3) | Δt, stream, name length, name bytes |
//! | `0x0e` | `TaskTotals` (version 4) | Δt, task, dispatches |
//! | `0x0f`/`0x10` | `StreamTotals` reader/writer (version 4) | Δt, stream, messages, waits |
//! | `0x11` | `WorkerTotals` (version 4: sample mode; version 6: every monitored worker, at its end) | Δt, dispatches, spins, idles, parks |
//! | `0x12` | `Samples` (version 4, `sampler.rlog` only) | Δt, dur, worker, total, sched, spin, idle, parked, n, n × (Δtask, samples) (the next Δ is from t + dur; task ids ascend, each the step from the previous); read as one signal per sample |
//! | `0x13` | `Samples` (version 5, `sampler.rlog` only) | as `0x12` with `signals` after `total`: the timer signals behind the samples |
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

#![warn(missing_docs)]

mod calibration;
mod decode;
mod dir_lock;
mod encode;
mod error;
mod flags;
mod header;
mod record;
mod retire;
mod scan;
mod sigbus;
mod space;
mod tag;
#[cfg(test)]
mod test_fs;
pub mod varint;
mod writer;

pub use calibration::Calibration;
pub use decode::{parse_log, read_log, Decoder, Log};
pub use dir_lock::{DirLock, DirLockError, LOCK_FILE_NAME};
pub use encode::{Encoder, EndIo, OpsForm, PeriodHead, PeriodRef, PutIo, Sink, VecSink};
pub use error::{DecodeError, DecodeErrorKind, EndReason, LogError};
pub use flags::MonitorFlags;
pub use header::{
    Header, Truncation, FORMAT_VERSION, HEADER_LEN, HEADER_RATE_AT, HEADER_STATE_AT, MAGIC,
    STATE_PAGE_FAULT, STATE_TRUNCATED,
};
pub use record::{
    implied_ops, interleaved_ops, EndState, Op, Record, SampleWindow, Side, StreamIo,
    MAX_INTERLEAVED,
};
pub use retire::{retire, sweep as sweep_retired, RETIRED_PREFIX};
pub use scan::{Item, OpsKind, ScannedPeriod, ScannedSamples, Scanner};
pub use sigbus::rescue_fault;
pub use writer::{log_file_name, set_header_rate, LogWriter};
