//! The fixed header at the start of every log file: [`Header`], its
//! encoding and parsing, and the constants of the layout.

use crate::calibration::Calibration;
use crate::error::LogError;
use crate::flags::MonitorFlags;

/// The bytes every log starts with.
pub const MAGIC: [u8; 8] = *b"RILLLOG\0";
/// The format version this build writes. It reads this one and
/// the older ones back to [`OLDEST_VERSION`]: version 3 added the
/// `StreamName` record, version 4 sample mode's records (`TaskTotals`,
/// `StreamTotals`, `WorkerTotals`, `Samples`), which older files never hold.
pub const FORMAT_VERSION: u16 = 4;
/// The oldest format version this build reads.
pub const OLDEST_VERSION: u16 = 2;
/// Size of the header this build writes.
pub const HEADER_LEN: usize = 48;
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
