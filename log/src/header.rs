//! The fixed header at the start of every log file: [`Header`], its
//! encoding and parsing, and the constants of the layout.

use crate::calibration::Calibration;
use crate::error::LogError;
use crate::flags::MonitorFlags;

/// The bytes every log starts with.
pub const MAGIC: [u8; 8] = *b"RILLLOG\0";
/// The format version this build writes. It reads this one and
/// the older ones back to `OLDEST_VERSION`: version 3 added the
/// `StreamName` record, version 4 sample mode's records (`TaskTotals`,
/// `StreamTotals`, `WorkerTotals`, `Samples`), which older files never hold;
/// version 5 the signal count of a window of samples (a new tag; version 4's
/// windows are still read, their samples standing for one signal each);
/// version 6 a `WorkerTotals` record at the end of every monitored worker's
/// log, periods or not (a reader of version 5 would count the dispatches of
/// a log of periods twice).
pub const FORMAT_VERSION: u16 = 6;
/// The oldest format version this build reads.
pub const OLDEST_VERSION: u16 = 2;
/// Size of the header this build writes.
pub const HEADER_LEN: usize = 56;
/// Size of the fields every header has (all that versions 2 and 3 wrote
/// before the log's state was added, which readers of a shorter header take
/// to be whole).
const BASE_LEN: usize = 48;
/// Where the header keeps the log's state: a `u32` of flags
/// ([`STATE_TRUNCATED`]) and the `u32` OS error number that stopped the
/// writer, which the writer sets when it stops
/// ([`LogWriter`](crate::LogWriter)).
pub const HEADER_STATE_AT: usize = 48;
/// State flag: the writer stopped before its run ended (the disk was full,
/// the file could not be extended); the records after the stop are missing.
pub const STATE_TRUNCATED: u32 = 1;
/// State flag, with [`STATE_TRUNCATED`]: what stopped the writer was a page
/// of its mapping that the filesystem could not back (a SIGBUS, caught).
pub const STATE_PAGE_FAULT: u32 = 2;
/// Where the header keeps the tick rate (an `f64`, little-endian), which a
/// finished run may rewrite with a better measurement
/// ([`set_header_rate`](crate::set_header_rate)).
pub const HEADER_RATE_AT: usize = 24;

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
    /// Set when the writer stopped writing before its run ended.
    pub truncated: Option<Truncation>,
}

/// Why a log ends before its run did: the writer could not reserve space
/// for more records and stopped writing (the run went on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// The OS error number of the failure (`ENOSPC`, `EDQUOT`, `EIO` ...),
    /// or 0 when it was no OS error.
    pub os_error: u32,
    /// The writer stopped because a page of its mapping could not be
    /// backed by the filesystem (a SIGBUS, caught), not on an error code.
    pub page_fault: bool,
}

impl Truncation {
    /// A stop on the OS error `e` (0: not an OS error).
    pub fn os(e: u32) -> Self {
        Truncation {
            os_error: e,
            page_fault: false,
        }
    }

    /// The cause in words ("No space left on device (os error 28)").
    pub fn cause(&self) -> String {
        if self.page_fault {
            return "the filesystem could not back a page of the log (most likely it is full)"
                .to_owned();
        }
        match i32::try_from(self.os_error) {
            Ok(0) | Err(_) => "an error that is not an OS error".to_owned(),
            Ok(n) => std::io::Error::from_raw_os_error(n).to_string(),
        }
    }

    /// The state word's two halves as the header stores them.
    pub(crate) fn to_bytes(self) -> [u8; 8] {
        let mut state = STATE_TRUNCATED;
        if self.page_fault {
            state |= STATE_PAGE_FAULT;
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&state.to_le_bytes());
        b[4..].copy_from_slice(&self.os_error.to_le_bytes());
        b
    }
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
            truncated: None,
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
        if let Some(t) = self.truncated {
            b[HEADER_STATE_AT..HEADER_STATE_AT + 8].copy_from_slice(&t.to_bytes());
        }
        b
    }

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
        if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(LogError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let header_len = usize::from(u16_at(10).ok_or_else(truncated)?);
        if header_len < BASE_LEN {
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
            // A header too short for the state (versions 2 and 3 before it
            // was added) is of a log that was never marked truncated.
            truncated: match (header_len >= HEADER_LEN)
                .then(|| (u32_at(HEADER_STATE_AT), u32_at(HEADER_STATE_AT + 4)))
            {
                Some((Some(state), Some(os_error))) if state & STATE_TRUNCATED != 0 => {
                    Some(Truncation {
                        os_error,
                        page_fault: state & STATE_PAGE_FAULT != 0,
                    })
                }
                _ => None,
            },
        };
        Ok((header, header_len))
    }
}
