//! The owning read side: [`Decoder`], an iterator of owned records built
//! on the [`Scanner`], and whole logs read into memory ([`read_log`],
//! [`parse_log`]).

use std::path::Path;

use crate::error::{DecodeError, EndReason, LogError};
use crate::header::Header;
use crate::record::Record;
use crate::scan::Scanner;

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

    /// A decoder over bare records (no header), e.g. a [`VecSink`](crate::VecSink)'s bytes.
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
