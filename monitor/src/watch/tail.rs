//! Reading a log while its run writes it: [`Tail`].
//!
//! A worker's log is a memory-mapped sparse file: its size is the writer's
//! reservation (a multiple of 4 KiB), the records are followed by zeros, and
//! a record's body is stored before its tag byte, so a zero where a tag
//! would be is where the written records end for now. At the run's end the
//! file is trimmed to its records. The sampler's log grows by plain appends.
//! A tail keeps the offset of the next unread record and the time base
//! there (times are deltas from the previous record), reads the bytes from
//! there on at each poll and hands over the whole records; a record cut by
//! the end of what was written is read again at the next poll.
//!
//! Reading a file that another process stores into is not atomic: a read
//! may see a record's tag but not yet all of its body. So the new bytes are
//! read twice and only the prefix on which both reads agree is scanned. A
//! tag that the first read saw was stored after its body, so the second
//! read sees the whole body (on x86-64 loads are not reordered with older
//! loads); where the first read saw an older body, the reads differ inside
//! the record, which then counts as cut off and is read again later.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use rill_log::{DecodeErrorKind, EndReason, Header, Scanner};

use crate::load::files::may_be_live;
use crate::load::scan::Item;

/// Bytes read per step while looking for the end of a live log's records.
const STEP: usize = 64 << 10;
/// A live log's records end before a zero run this long (its unwritten
/// tail); reading stops there. Records hold no such runs of zeros.
const ZERO_RUN: usize = 4096;
/// Most bytes read from one log per poll: a log written faster than that
/// is caught up with over several polls.
pub(crate) const MAX_READ: u64 = 32 << 20;
/// Most bytes a header may take (its own length field says how many).
const MAX_HEADER: usize = 4096;

/// A file's identity: device and inode. A run that starts in the same
/// directory writes new files (it unlinks the old ones), so a path whose
/// identity changed holds another run's log.
pub(crate) type FileId = (u64, u64);

/// The identity of the file at `path`, if there is one.
pub(crate) fn file_id(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// How a log is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A worker's memory-mapped log: finished once trimmed.
    Mapped,
    /// The sampler's log: plain appends, never known to be finished.
    Appended,
}

/// Why a tail reads no more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The log was trimmed (its run finished it) and read to its end.
    Finished,
    /// A damaged record, or a finished log that ends inside a record: the
    /// records before it were read.
    Damaged(String),
}

/// What opening a log found.
pub(crate) enum Opened {
    /// No file there (yet).
    Missing,
    /// A file whose header is not written yet.
    NotYet,
    /// A log, ready to be read.
    Log(Box<Tail>),
}

/// A log read as it grows (see the module documentation).
pub(crate) struct Tail {
    path: PathBuf,
    file: File,
    id: FileId,
    kind: Kind,
    header: Header,
    /// Offset of the next unread record.
    pos: u64,
    /// The time base at `pos`.
    last: u64,
    stop: Option<Stop>,
    /// The two reads of the new bytes.
    first: Vec<u8>,
    second: Vec<u8>,
}

impl Tail {
    /// Opens the log at `path`. A file that is not a rill log, or whose
    /// header is invalid, is an error (one line naming the file).
    pub(crate) fn open(path: &Path, kind: Kind) -> Result<Opened, String> {
        let label = path.display();
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
            Err(e) => return Err(format!("{label}: cannot read: {e}")),
        };
        let meta = file
            .metadata()
            .map_err(|e| format!("{label}: cannot read: {e}"))?;
        let len = meta.len();
        let n = (len as usize).min(MAX_HEADER);
        let mut a = vec![0u8; n];
        let mut b = vec![0u8; n];
        let got_a = read_at(&file, &mut a, 0).map_err(|e| format!("{label}: cannot read: {e}"))?;
        let got_b = read_at(&file, &mut b, 0).map_err(|e| format!("{label}: cannot read: {e}"))?;
        let (a, b) = (&a[..got_a], &b[..got_b]);
        // Being written: empty, zeros, or two reads that differ.
        if a.len() < rill_log::HEADER_LEN || a != b || a[..8].iter().all(|&x| x == 0) {
            return Ok(Opened::NotYet);
        }
        let (header, start) = Header::parse(b).map_err(|e| format!("{label}: {e}"))?;
        let rate = header.calibration.ticks_per_sec;
        if !(rate.is_finite() && rate >= 1.0) {
            return Err(format!(
                "{label}: invalid rill log header: clock rate {rate} ticks per second"
            ));
        }
        Ok(Opened::Log(Box::new(Tail {
            path: path.to_path_buf(),
            file,
            id: (meta.dev(), meta.ino()),
            kind,
            header,
            pos: start as u64,
            last: 0,
            stop: None,
            first: Vec::new(),
            second: Vec::new(),
        })))
    }

    /// The log's header.
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// The file's identity.
    pub(crate) fn id(&self) -> FileId {
        self.id
    }

    /// When the file was last written.
    pub(crate) fn modified(&self) -> Option<std::time::SystemTime> {
        self.file.metadata().and_then(|m| m.modified()).ok()
    }

    /// Why reading stopped, if it has.
    pub(crate) fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// Bytes read so far (the offset of the next record).
    #[cfg(test)]
    pub(crate) fn offset(&self) -> u64 {
        self.pos
    }

    /// Reads what was written since the last poll and calls `f` with each
    /// whole record (and the scanner, for a period's or a window's lists).
    /// Returns how many bytes of records were read.
    pub(crate) fn poll(&mut self, mut f: impl FnMut(Item<'_>, &Scanner<'_>)) -> u64 {
        if self.stop.is_some() {
            return 0;
        }
        let len = match self.file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                self.stop = Some(Stop::Damaged(format!(
                    "{}: cannot read: {e}",
                    self.path.display()
                )));
                return 0;
            }
        };
        let live = match self.kind {
            Kind::Mapped => may_be_live(&self.file, len),
            Kind::Appended => true,
        };
        if len < self.pos {
            self.stop = Some(Stop::Damaged(format!(
                "{}: the file shrank below the records read (byte {})",
                self.path.display(),
                self.pos
            )));
            return 0;
        }
        let end = len.min(self.pos.saturating_add(MAX_READ));
        let read = match self.read_stable(end, live) {
            Ok(n) => n,
            Err(e) => {
                self.stop = Some(Stop::Damaged(format!(
                    "{}: cannot read: {e}",
                    self.path.display()
                )));
                return 0;
            }
        };
        let data = std::mem::take(&mut self.second);
        let mut sc = Scanner::resume(&data[..read], 0, self.last);
        while let Some(item) = sc.next() {
            f(item, &sc);
        }
        let used = sc.offset() as u64;
        let reason = sc.end_reason().cloned();
        self.last = sc.last_time();
        drop(sc);
        self.second = data;
        let at = self.pos;
        self.pos += used;
        let to_eof = self.pos >= len || (at + read as u64 >= len && !live);
        match reason {
            Some(EndReason::Damaged {
                reason: DecodeErrorKind::Truncated,
                ..
            }) if !live && at + read as u64 >= len => {
                self.stop = Some(Stop::Damaged(format!(
                    "{}: the log ends inside a record at byte {}; the records before it are shown",
                    self.path.display(),
                    self.pos
                )));
            }
            Some(EndReason::Damaged {
                reason: DecodeErrorKind::Truncated,
                ..
            })
            | Some(EndReason::Clean)
            | None => {
                if self.kind == Kind::Mapped && !live && to_eof {
                    self.stop = Some(Stop::Finished);
                }
            }
            Some(EndReason::Damaged { reason, .. }) => {
                self.stop = Some(Stop::Damaged(format!(
                    "{}: damaged record at byte {}: {reason}; the records before it are shown",
                    self.path.display(),
                    self.pos
                )));
            }
        }
        used
    }

    /// Reads the bytes from `pos` up to `end` (a live log: up to its first
    /// long run of zeros) twice, and leaves in `second` the prefix on which
    /// both reads agree; returns its length.
    fn read_stable(&mut self, end: u64, live: bool) -> io::Result<usize> {
        let first = &mut self.first;
        first.clear();
        let mut at = self.pos;
        while at < end {
            let n = STEP.min((end - at) as usize);
            let old = first.len();
            first.resize(old + n, 0);
            let got = read_at(&self.file, &mut first[old..], at)?;
            first.truncate(old + got);
            at += got as u64;
            if got < n {
                break;
            }
            if live
                && first.len() >= ZERO_RUN
                && first[first.len() - ZERO_RUN..].iter().all(|&b| b == 0)
            {
                break;
            }
        }
        let second = &mut self.second;
        second.clear();
        second.resize(first.len(), 0);
        let got = read_at(&self.file, second, self.pos)?;
        second.truncate(got);
        let same = first
            .iter()
            .zip(second.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(got.min(first.len()));
        second.truncate(same);
        Ok(same)
    }
}

/// Reads into `buf` from `offset` until it is full or the file ends;
/// returns the bytes read.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_log::{Calibration, Encoder, MonitorFlags, Record, VecSink};
    use std::io::Write;

    fn records(n: u64) -> Vec<Record> {
        (0..n)
            .map(|i| Record::TaskAssign {
                t: 100 + i * 10,
                task: i + 1,
                parent: 0,
                worker: 0,
                name: format!("task/{i}"),
            })
            .collect()
    }

    fn encode(recs: &[Record]) -> Vec<u8> {
        let mut enc = Encoder::new();
        let mut sink = VecSink::new();
        for r in recs {
            enc.record(&mut sink, r);
        }
        sink.into_bytes()
    }

    fn header() -> Vec<u8> {
        Header::new(MonitorFlags::SAMPLED, 0, 1, Calibration::nanos())
            .to_bytes()
            .to_vec()
    }

    fn names(tail: &mut Tail) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        tail.poll(|item, _| {
            if let Item::TaskAssign { t, task, .. } = item {
                out.push((t, task));
            }
        });
        out
    }

    fn open(path: &Path, kind: Kind) -> Tail {
        match Tail::open(path, kind).unwrap() {
            Opened::Log(t) => *t,
            _ => panic!("not opened"),
        }
    }

    #[test]
    fn a_growing_log_is_read_record_by_record_with_its_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sampler.rlog");
        assert!(matches!(
            Tail::open(&path, Kind::Appended).unwrap(),
            Opened::Missing
        ));
        let mut f = File::create(&path).unwrap();
        assert!(matches!(
            Tail::open(&path, Kind::Appended).unwrap(),
            Opened::NotYet
        ));
        f.write_all(&header()).unwrap();
        let mut tail = open(&path, Kind::Appended);
        assert!(names(&mut tail).is_empty());
        let bytes = encode(&records(5));
        // Two whole records and half of the third.
        let cut = encode(&records(2)).len() + 3;
        f.write_all(&bytes[..cut]).unwrap();
        assert_eq!(names(&mut tail), vec![(100, 1), (110, 2)]);
        // The rest: the third record is read whole, with its time.
        f.write_all(&bytes[cut..]).unwrap();
        assert_eq!(names(&mut tail), vec![(120, 3), (130, 4), (140, 5)]);
        assert!(names(&mut tail).is_empty());
        // Appended logs are never finished.
        assert_eq!(tail.stop(), None);
    }

    #[test]
    fn a_mapped_log_is_finished_once_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("worker-0.rlog");
        let mut data = header();
        data.extend(encode(&records(3)));
        let used = data.len();
        // The writer's reservation: zeros up to 8 KiB.
        data.resize(8192, 0);
        std::fs::write(&path, &data).unwrap();
        let mut tail = open(&path, Kind::Mapped);
        assert_eq!(names(&mut tail).len(), 3);
        assert_eq!(tail.stop(), None, "untrimmed: maybe live");
        // Trimmed by its writer at the run's end.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(used as u64).unwrap();
        assert!(names(&mut tail).is_empty());
        assert_eq!(tail.stop(), Some(&Stop::Finished));
        assert_eq!(tail.offset(), used as u64);
    }

    #[test]
    fn damage_stops_the_tail_after_the_records_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("worker-0.rlog");
        let mut data = header();
        data.extend(encode(&records(2)));
        data.push(0x7f); // no such tag
        data.extend([1, 2, 3]);
        std::fs::write(&path, &data).unwrap();
        let mut tail = open(&path, Kind::Mapped);
        assert_eq!(names(&mut tail).len(), 2);
        match tail.stop() {
            Some(Stop::Damaged(m)) => assert!(m.contains("damaged record"), "{m}"),
            s => panic!("{s:?}"),
        }
        // A finished log cut inside a record says so.
        let mut data = header();
        data.extend(encode(&records(2)));
        data.truncate(data.len() - 2);
        std::fs::write(&path, &data).unwrap();
        let mut tail = open(&path, Kind::Mapped);
        assert_eq!(names(&mut tail).len(), 1);
        match tail.stop() {
            Some(Stop::Damaged(m)) => assert!(m.contains("inside a record"), "{m}"),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn not_a_log_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("worker-0.rlog");
        std::fs::write(&path, vec![b'x'; 100]).unwrap();
        let e = Tail::open(&path, Kind::Mapped).err().unwrap();
        assert!(e.contains("worker-0.rlog"), "{e}");
    }
}
