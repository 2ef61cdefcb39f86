//! The read side: a streaming, never-panicking decoder.

use std::fmt;
use std::path::{Path, PathBuf};

use super::record::{implied_ops, interleaved_ops, EndState, Op, Record, Side, StreamIo};
use super::{tag, Header, FORMAT_VERSION, HEADER_LEN, MAGIC};
use crate::monitor::clock::Calibration;
use crate::monitor::flags::MonitorFlags;
use crate::monitor::varint::{self, unzigzag, VarintError};

/// Why a log file could not be opened as a rill log at all.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file does not exist.
    #[error("log file {} not found", path.display())]
    NotFound {
        /// The path asked for.
        path: PathBuf,
    },
    /// Reading the file failed.
    #[error("cannot read log file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The data does not start with the rill log magic.
    #[error("not a rill log (the data does not start with the \"RILLLOG\\0\" magic)")]
    NotRillLog,
    /// The log was written in a format version this build cannot read.
    #[error(
        "unsupported rill log format version {found}: this build reads version {supported}{}",
        if .found > .supported { " (the log was written by a newer rill; use a newer rill-mon)" } else { "" }
    )]
    UnsupportedVersion {
        /// The version in the file.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// The data ends inside the header.
    #[error("truncated rill log header: {len} bytes, the header needs {need}")]
    TruncatedHeader {
        /// Bytes available.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A header field is invalid.
    #[error("invalid rill log header: {0}")]
    BadHeader(&'static str),
}

impl Header {
    /// Parses a header from the start of `data`; returns it and the offset of
    /// the first record.
    pub fn parse(data: &[u8]) -> Result<(Header, usize), LogError> {
        let magic_len = MAGIC.len().min(data.len());
        if data[..magic_len] != MAGIC[..magic_len] {
            return Err(LogError::NotRillLog);
        }
        let truncated = || LogError::TruncatedHeader {
            len: data.len(),
            need: HEADER_LEN,
        };
        let u16_at = |i: usize| data.get(i..i + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
        let u32_at = |i: usize| {
            data.get(i..i + 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        let u64_at = |i: usize| {
            data.get(i..i + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let version = u16_at(8).ok_or_else(truncated)?;
        if version != FORMAT_VERSION {
            return Err(LogError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let header_len = usize::from(u16_at(10).ok_or_else(truncated)?);
        if header_len < HEADER_LEN {
            return Err(LogError::BadHeader("header length field below the minimum"));
        }
        if data.len() < header_len {
            return Err(LogError::TruncatedHeader {
                len: data.len(),
                need: header_len,
            });
        }
        let header = Header {
            version,
            flags: MonitorFlags::from_bits(u32_at(12).ok_or_else(truncated)?),
            worker: u32_at(16).ok_or_else(truncated)?,
            worker_count: u32_at(20).ok_or_else(truncated)?,
            calibration: Calibration {
                ticks_per_sec: f64::from_bits(u64_at(24).ok_or_else(truncated)?),
                start_ticks: u64_at(32).ok_or_else(truncated)?,
                start_unix_ns: u64_at(40).ok_or_else(truncated)?,
            },
        };
        Ok((header, header_len))
    }
}

/// What is wrong with a damaged record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// The data ends inside the record.
    #[error("the data ends inside the record (truncated)")]
    Truncated,
    /// A varint over 10 bytes or 64 bits.
    #[error("malformed varint (longer than 10 bytes or over 64 bits)")]
    BadVarint,
    /// A tag byte that names no record kind.
    #[error("unknown record tag {0:#04x}")]
    UnknownTag(u8),
    /// A period's end state code is undefined.
    #[error("undefined period end state {0}")]
    BadEndState(u8),
    /// A value too large for its field.
    #[error("{field} value {value} out of range")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// Bits that must be zero are set.
    #[error("reserved bits set in {0}")]
    ReservedBits(&'static str),
    /// An op or end state refers to a stream entry the period does not have.
    #[error("{field} refers to stream entry {index} of a period with {len}")]
    BadIndex {
        /// Which reference.
        field: &'static str,
        /// The index found.
        index: u64,
        /// Number of stream entries in the period.
        len: usize,
    },
    /// A period says its ops interleave two runs, but its stream entries do
    /// not have exactly two runs of fitting counts (see
    /// [`interleaved_ops`](super::interleaved_ops)).
    #[error("interleaved ops, but the stream entries do not hold two runs that interleave")]
    NotInterleaved,
    /// A task name is not UTF-8.
    #[error("task name is not valid UTF-8")]
    BadUtf8,
}

impl From<VarintError> for DecodeErrorKind {
    fn from(e: VarintError) -> Self {
        match e {
            VarintError::Truncated => DecodeErrorKind::Truncated,
            VarintError::Overflow => DecodeErrorKind::BadVarint,
        }
    }
}

/// A damaged record: where it starts and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("damaged record at byte {offset}: {kind}")]
pub struct DecodeError {
    /// Byte offset of the damaged record (in the file, when decoding a file).
    pub offset: u64,
    /// What is wrong.
    pub kind: DecodeErrorKind,
}

/// Why decoding stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The end of the data, or a zero tag byte (the unwritten tail of a log
    /// whose writer did not trim it, e.g. because it was killed).
    Clean,
    /// A record could not be decoded; the records before it are intact.
    Damaged {
        /// Byte offset of the damaged record.
        offset: u64,
        /// What is wrong with it.
        reason: DecodeErrorKind,
    },
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndReason::Clean => f.write_str("clean end"),
            EndReason::Damaged { offset, reason } => {
                write!(f, "damaged at byte {offset}: {reason}")
            }
        }
    }
}

/// A whole decoded log.
#[derive(Clone, Debug, PartialEq)]
pub struct Log {
    /// The header.
    pub header: Header,
    /// Every record decoded, in log order.
    pub records: Vec<Record>,
    /// Why decoding stopped.
    pub end: EndReason,
    /// Byte offset where decoding stopped (the end of the last good record).
    pub end_offset: u64,
}

/// Reads and decodes a whole log file.
///
/// Holds every record in memory (roughly 100 bytes per record): for very large
/// logs, iterate a [`Decoder`] over the file's bytes instead.
pub fn read_log(path: impl AsRef<Path>) -> Result<Log, LogError> {
    let path = path.as_ref();
    let data = std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            LogError::NotFound {
                path: path.to_owned(),
            }
        } else {
            LogError::Io {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    parse_log(&data)
}

/// Decodes a whole log held in memory.
pub fn parse_log(data: &[u8]) -> Result<Log, LogError> {
    let (header, mut dec) = Decoder::new(data)?;
    let mut records = Vec::new();
    for rec in &mut dec {
        match rec {
            Ok(r) => records.push(r),
            Err(_) => break,
        }
    }
    Ok(Log {
        header,
        records,
        end: dec.end_reason().cloned().unwrap_or(EndReason::Clean),
        end_offset: dec.offset(),
    })
}

/// A streaming decoder: an iterator of records over a byte slice.
///
/// Yields `Ok` records until the end of the data or a zero tag, or one `Err`
/// for a damaged record, then `None` forever. It never panics, always
/// advances, and allocates only in proportion to what it actually decodes.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    last: u64,
    end: Option<EndReason>,
}

impl<'a> Decoder<'a> {
    /// A decoder over a whole log file's bytes: parses the header, then decodes
    /// the records after it. Offsets are file offsets.
    pub fn new(file: &'a [u8]) -> Result<(Header, Self), LogError> {
        let (header, start) = Header::parse(file)?;
        let dec = Decoder {
            data: file,
            pos: start,
            last: 0,
            end: None,
        };
        Ok((header, dec))
    }

    /// A decoder over bare records (no header), e.g. a [`VecSink`](super::VecSink)'s bytes.
    pub fn records(data: &'a [u8]) -> Self {
        Decoder {
            data,
            pos: 0,
            last: 0,
            end: None,
        }
    }

    /// Offset of the next record (after the end: where decoding stopped).
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// The previous record's time, which the next one is relative to.
    pub fn last_time(&self) -> u64 {
        self.last
    }

    /// Why decoding stopped, once it has.
    pub fn end_reason(&self) -> Option<&EndReason> {
        self.end.as_ref()
    }

    fn decode_one(&mut self, tag_byte: u8) -> Result<(Record, usize), DecodeErrorKind> {
        let mut r = In {
            d: self.data,
            p: self.pos + 1,
        };
        let mut last = self.last;
        let mut time = |r: &mut In<'_>| -> Result<u64, DecodeErrorKind> {
            last = last.wrapping_add(unzigzag(r.var()?) as u64);
            Ok(last)
        };
        let rec = match tag_byte {
            tag::WORKER_START => Record::WorkerStart { t: time(&mut r)? },
            tag::WORKER_WAIT => {
                let t = time(&mut r)?;
                let dur = r.var()?;
                last = t.wrapping_add(dur);
                Record::WorkerWait { t, dur }
            }
            tag::WORKER_END => Record::WorkerEnd { t: time(&mut r)? },
            tag::TASK_ASSIGN => {
                let t = time(&mut r)?;
                let task = r.var()?;
                let parent = r.var()?;
                let worker = r.u32("worker")?;
                let len = r.count(1)?;
                let bytes = r.bytes(len)?;
                let name = std::str::from_utf8(bytes)
                    .map_err(|_| DecodeErrorKind::BadUtf8)?
                    .to_owned();
                Record::TaskAssign {
                    t,
                    task,
                    parent,
                    worker,
                    name,
                }
            }
            tag::TASK_MIGRATE => Record::TaskMigrate {
                t: time(&mut r)?,
                task: r.var()?,
                from: r.u32("from worker")?,
                to: r.u32("to worker")?,
            },
            tag::STREAM_OPEN => Record::StreamOpen {
                t: time(&mut r)?,
                stream: r.var()?,
                capacity: r.u32("capacity")?,
                creator: r.var()?,
            },
            t @ (tag::STREAM_BIND | tag::STREAM_BIND_W) => Record::StreamBind {
                t: time(&mut r)?,
                stream: r.var()?,
                task: r.var()?,
                side: tag::side(t),
            },
            t @ (tag::STREAM_CLOSE | tag::STREAM_CLOSE_W) => Record::StreamClose {
                t: time(&mut r)?,
                stream: r.var()?,
                side: tag::side(t),
            },
            t @ (tag::STREAM_REPLACE | tag::STREAM_REPLACE_W) => Record::StreamReplace {
                t: time(&mut r)?,
                old: r.var()?,
                new: r.var()?,
                side: tag::side(t),
            },
            t if t & tag::PERIOD != 0 => {
                let start = time(&mut r)?;
                let rec = period(&mut r, t, start)?;
                if let Record::Period { end, .. } = rec {
                    last = end;
                }
                rec
            }
            t => return Err(DecodeErrorKind::UnknownTag(t)),
        };
        self.last = last;
        Ok((rec, r.p))
    }
}

/// Decodes a period's body after its start time.
fn period(r: &mut In<'_>, tag_byte: u8, start: u64) -> Result<Record, DecodeErrorKind> {
    let end_code = tag_byte & 7;
    let io_code = (tag_byte >> 3) & 3;
    let mode = (tag_byte >> 5) & 3;
    let dur = r.var()?;
    let end = start.wrapping_add(dur);
    let task = r.var()?;
    // Each entry takes at least 2 bytes (header + stream).
    let nio = if io_code < 3 {
        usize::from(io_code)
    } else {
        r.count(2)?
    };
    let blocked = matches!(end_code, 1 | 2);
    let mut mark = None;
    let mut io = Vec::with_capacity(nio.min(64));
    for _ in 0..nio {
        let h = r.byte()?;
        let stream = r.var()?;
        if h & 0x80 != 0 {
            if !blocked || mark.is_some() {
                return Err(DecodeErrorKind::ReservedBits("stream entry header"));
            }
            mark = Some(stream);
        }
        let rc = (h >> 1) & 7;
        let wc = (h >> 4) & 7;
        let reads = if rc == 7 { r.u32("reads")? } else { rc.into() };
        let writes = if wc == 7 { r.u32("writes")? } else { wc.into() };
        io.push(StreamIo {
            stream,
            reads,
            writes,
            woke_peer: h & 1 != 0,
        });
    }
    let blocked_on = match (blocked, mark) {
        (false, _) => 0,
        (true, Some(stream)) => stream,
        (true, None) => r.var()?,
    };
    let end_state = match end_code {
        0 => EndState::Yielded,
        1 => EndState::BlockedInput { stream: blocked_on },
        2 => EndState::BlockedOutput { stream: blocked_on },
        3 => EndState::BlockedAny,
        4 => EndState::Ended,
        5 => EndState::Panicked,
        c => return Err(DecodeErrorKind::BadEndState(c)),
    };
    let mut op_times = Vec::new();
    let ops = match mode {
        tag::OPS_NONE => Vec::new(),
        tag::OPS_IMPLIED => implied_ops(&io).collect(),
        tag::OPS_INTERLEAVED => interleaved(&io)?,
        _ => {
            let h = r.var()?;
            let ops = match (h >> 1) & 3 {
                tag::FORM_EXPLICIT => {
                    let n = r.count_of(h >> 3, 1)?;
                    read_ops(r, n, io.len())?
                }
                form if h >> 3 != 0 || form == 3 => {
                    return Err(DecodeErrorKind::ReservedBits("listed ops header"))
                }
                tag::FORM_IMPLIED => implied_ops(&io).collect(),
                _ => interleaved(&io)?,
            };
            if h & 1 != 0 {
                let nt = r.count(1)?;
                op_times.reserve(nt.min(256));
                let mut prev = start;
                for _ in 0..nt {
                    prev = prev.wrapping_add(unzigzag(r.var()?) as u64);
                    op_times.push(prev);
                }
            }
            ops
        }
    };
    Ok(Record::Period {
        start,
        end,
        task,
        end_state,
        io,
        ops,
        op_times,
    })
}

/// The ops of an interleaved period, or why its entries admit none.
fn interleaved(io: &[StreamIo]) -> Result<Vec<Op>, DecodeErrorKind> {
    interleaved_ops(io)
        .map(Iterator::collect)
        .ok_or(DecodeErrorKind::NotInterleaved)
}

fn read_ops(r: &mut In<'_>, n: usize, nio: usize) -> Result<Vec<Op>, DecodeErrorKind> {
    let mut ops = Vec::with_capacity(n.min(256));
    for _ in 0..n {
        let b = r.byte()?;
        let op = if b & 0x80 == 0 {
            Op {
                io_index: u16::from(b & 7),
                write: b & 8 != 0,
                count: u32::from(b >> 4) + 1,
            }
        } else {
            if b & 0x7e != 0 {
                return Err(DecodeErrorKind::ReservedBits("op header"));
            }
            Op {
                write: b & 1 != 0,
                io_index: r.u16("op stream index")?,
                count: r.u32("op count")?,
            }
        };
        if usize::from(op.io_index) >= nio {
            return Err(DecodeErrorKind::BadIndex {
                field: "op",
                index: op.io_index.into(),
                len: nio,
            });
        }
        ops.push(op);
    }
    Ok(ops)
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.end.is_some() {
            return None;
        }
        let tag_byte = match self.data.get(self.pos) {
            None | Some(0) => {
                self.end = Some(EndReason::Clean);
                return None;
            }
            Some(&t) => t,
        };
        match self.decode_one(tag_byte) {
            Ok((rec, next)) => {
                debug_assert!(next > self.pos);
                self.pos = next;
                Some(Ok(rec))
            }
            Err(kind) => {
                let offset = self.pos as u64;
                self.end = Some(EndReason::Damaged {
                    offset,
                    reason: kind.clone(),
                });
                Some(Err(DecodeError { offset, kind }))
            }
        }
    }
}

impl std::iter::FusedIterator for Decoder<'_> {}

/// Bounds-checked reading cursor.
struct In<'a> {
    d: &'a [u8],
    p: usize,
}

impl<'a> In<'a> {
    fn remaining(&self) -> usize {
        self.d.len().saturating_sub(self.p)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, DecodeErrorKind> {
        let b = *self.d.get(self.p).ok_or(DecodeErrorKind::Truncated)?;
        self.p += 1;
        Ok(b)
    }

    #[inline]
    fn var(&mut self) -> Result<u64, DecodeErrorKind> {
        let (v, n) = varint::read_u64(self.d.get(self.p..).unwrap_or(&[]))?;
        self.p += n;
        Ok(v)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, DecodeErrorKind> {
        let v = self.var()?;
        u32::try_from(v).map_err(|_| DecodeErrorKind::OutOfRange { field, value: v })
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, DecodeErrorKind> {
        let v = self.var()?;
        u16::try_from(v).map_err(|_| DecodeErrorKind::OutOfRange { field, value: v })
    }

    /// A count of items taking at least `min_size` bytes each: larger than
    /// the remaining data can hold means truncated (or corrupt) data.
    fn count(&mut self, min_size: usize) -> Result<usize, DecodeErrorKind> {
        let n = self.var()?;
        self.count_of(n, min_size)
    }

    fn count_of(&self, n: u64, min_size: usize) -> Result<usize, DecodeErrorKind> {
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() / min_size => Ok(n),
            _ => Err(DecodeErrorKind::Truncated),
        }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeErrorKind> {
        let end = self.p.checked_add(n).ok_or(DecodeErrorKind::Truncated)?;
        let b = self.d.get(self.p..end).ok_or(DecodeErrorKind::Truncated)?;
        self.p = end;
        Ok(b)
    }
}

impl Side {
    /// The side's name (`reader` / `writer`).
    pub fn name(self) -> &'static str {
        match self {
            Side::Reader => "reader",
            Side::Writer => "writer",
        }
    }
}
