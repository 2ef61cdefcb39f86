//! The read side: headers, errors, and the owning decoder built on the
//! [`Scanner`].

use std::fmt;
use std::path::{Path, PathBuf};

use super::record::{Record, Side};
use super::scan::Scanner;
use super::{Header, FORMAT_VERSION, HEADER_LEN, HEADER_RATE_AT, MAGIC};
use crate::monitor::clock::Calibration;
use crate::monitor::flags::MonitorFlags;
use crate::monitor::varint::VarintError;

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
                ticks_per_sec: f64::from_bits(u64_at(HEADER_RATE_AT).ok_or_else(truncated)?),
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

/// A streaming decoder: an iterator of owned records over a byte slice.
///
/// Yields `Ok` records until the end of the data or a zero tag, or one `Err`
/// for a damaged record, then `None` forever. It never panics, always
/// advances, and allocates only in proportion to what it actually decodes.
/// It is a [`Scanner`] that hands out owned [`Record`]s.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    sc: Scanner<'a>,
    /// The damaged record's error was returned.
    reported: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder over a whole log file's bytes: parses the header, then decodes
    /// the records after it. Offsets are file offsets.
    pub fn new(file: &'a [u8]) -> Result<(Header, Self), LogError> {
        let (header, start) = Header::parse(file)?;
        let dec = Decoder {
            sc: Scanner::new(file, start),
            reported: false,
        };
        Ok((header, dec))
    }

    /// A decoder over bare records (no header), e.g. a [`VecSink`](super::VecSink)'s bytes.
    pub fn records(data: &'a [u8]) -> Self {
        Decoder {
            sc: Scanner::new(data, 0),
            reported: false,
        }
    }

    /// Offset of the next record (after the end: where decoding stopped).
    pub fn offset(&self) -> u64 {
        self.sc.offset() as u64
    }

    /// The previous record's time, which the next one is relative to.
    pub fn last_time(&self) -> u64 {
        self.sc.last_time()
    }

    /// Why decoding stopped, once it has.
    pub fn end_reason(&self) -> Option<&EndReason> {
        self.sc.end_reason()
    }
}

impl Iterator for Decoder<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(item) = self.sc.next() {
            return Some(Ok(self.sc.to_record(item)));
        }
        match self.sc.end_reason() {
            Some(EndReason::Damaged { offset, reason }) if !self.reported => {
                self.reported = true;
                Some(Err(DecodeError {
                    offset: *offset,
                    kind: reason.clone(),
                }))
            }
            _ => None,
        }
    }
}

impl std::iter::FusedIterator for Decoder<'_> {}

impl Side {
    /// The side's name (`reader` / `writer`).
    pub fn name(self) -> &'static str {
        match self {
            Side::Reader => "reader",
            Side::Writer => "writer",
        }
    }
}
