//! Why data is not a whole log: [`LogError`] for a file or header that is
//! not a readable log at all, [`DecodeErrorKind`] and [`DecodeError`] for a
//! damaged record, [`EndReason`] for where and why reading stopped.

use std::fmt;
use std::path::PathBuf;

use crate::varint::VarintError;

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
        "unsupported rill log format version {found}: this build reads versions 2 to {supported}{}",
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
    /// [`interleaved_ops`](crate::interleaved_ops)).
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
