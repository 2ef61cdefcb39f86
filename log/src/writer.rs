//! [`LogWriter`]: a worker's memory-mapped log file.
//!
//! The file is grown with `set_len` in chunks (starting at
//! [`LogWriter::INITIAL_LEN`], doubling up to [`LogWriter::MAX_GROW`] per step) and mapped into memory;
//! records are stored straight into the mapping. Growing (remapping) is the
//! only slow path. [`finish`](LogWriter::finish) (or dropping the writer)
//! trims the file to the bytes written. A process killed before that leaves
//! a file whose tail is zeros, which readers take as the clean end.
//! The mapping is advised random access, so that the kernel faults in only
//! the pages written rather than reading ahead blocks of the sparse file
//! (`no_readahead`).

use std::fs::{File, OpenOptions};
use std::io;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::encode::Sink;
use crate::header::{Header, HEADER_LEN, HEADER_RATE_AT, MAGIC};

/// The file name of worker `worker`'s log: `worker-{id}.rlog`.
pub fn log_file_name(worker: u32) -> String {
    format!("worker-{worker}.rlog")
}

/// A log file being written by one worker. Implements [`Sink`] for the
/// [`Encoder`](crate::Encoder).
///
/// If the file cannot be grown (disk full, ...), later records are dropped
/// and [`finish`](LogWriter::finish) reports the error; writing never panics
/// or blocks the worker on I/O errors.
#[derive(Debug)]
pub struct LogWriter {
    map: ManuallyDrop<MmapMut>,
    /// Usable length: `map.len()`, or 0 once failed (forces the slow path).
    limit: usize,
    /// Bytes written (header included).
    pos: usize,
    /// Length of the last reservation.
    reserved: usize,
    file: File,
    path: PathBuf,
    error: Option<io::Error>,
    /// Where records go once writing failed.
    scratch: Vec<u8>,
    dropped: u64,
    closed: bool,
}

/// Rewrites the tick rate in the header of the finished log at `path`: the
/// runtime does so when it measured the rate again over a whole run.
pub fn set_header_rate(path: &Path, ticks_per_sec: f64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    let mut head = [0u8; HEADER_LEN];
    // Only a rill log's header is rewritten (the file could have been
    // replaced while the run went on).
    if f.read_exact(&mut head).is_err() || head[..MAGIC.len()] != MAGIC {
        return Err(io::Error::other("not a rill log"));
    }
    f.seek(SeekFrom::Start(HEADER_RATE_AT as u64))?;
    f.write_all(&ticks_per_sec.to_bits().to_le_bytes())
}

/// Asks the kernel to fault the log's pages in one at a time as they are
/// first written. The file is sparse, so by default a fault on it "reads
/// ahead" a large block of holes: the kernel zeroes pages far beyond what the
/// log will hold and trims them away again when the file is cut to length.
/// On a short monitored run (50,000 ring hops) that was most of the
/// monitoring's cost. Only advice: if the kernel declines, writing still works.
fn no_readahead(map: &MmapMut) {
    let _ = map.advise(memmap2::Advice::Random);
}

impl LogWriter {
    /// Initial file size.
    pub const INITIAL_LEN: usize = 4 << 20;
    /// Largest growth step.
    pub const MAX_GROW: usize = 64 << 20;

    /// Creates (or truncates) `dir/worker-{worker}.rlog`, creating `dir` if
    /// needed, and writes `header` with its worker field set to `worker`.
    pub fn create(dir: &Path, worker: u32, header: &Header) -> io::Result<Self> {
        Self::create_with_len(dir, worker, header, Self::INITIAL_LEN)
    }

    /// [`create`](Self::create) with a chosen initial file size (rounded up
    /// to a multiple of 4 KiB: an untrimmed log's size always is one, which
    /// is how rill-mon tells a log that may still be written).
    pub fn create_with_len(
        dir: &Path,
        worker: u32,
        header: &Header,
        initial_len: usize,
    ) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(log_file_name(worker));
        // A new file, never the old one truncated: a reader (rill-mon) may
        // have the old log mapped, and shrinking a mapped file would end it
        // with SIGBUS; unlinked, the old file lives on until it is unmapped.
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        let len = initial_len.max(4096).next_multiple_of(4096);
        file.set_len(len as u64)?;
        // SAFETY: the mapping is of a file we just created and exclusively own;
        // nothing in this process writes it except through this mapping, and
        // its length only changes through `grow`/`close`, which remap or stop
        // using the mapping first. (Another process truncating the file would
        // break any mmap writer; that is outside what we can defend against.)
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        no_readahead(&map);
        let mut h = *header;
        h.worker = worker;
        let bytes = h.to_bytes();
        map[..bytes.len()].copy_from_slice(&bytes);
        Ok(LogWriter {
            limit: map.len(),
            map: ManuallyDrop::new(map),
            pos: bytes.len(),
            reserved: 0,
            file,
            path,
            error: None,
            scratch: Vec::new(),
            dropped: 0,
            closed: false,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far, header included.
    pub fn written(&self) -> u64 {
        self.pos as u64
    }

    /// Current file size (mapped length).
    pub fn capacity(&self) -> u64 {
        self.map.len() as u64
    }

    /// The error that stopped writing, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Number of records dropped after an error.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Flushes the written data to the file, trims the file to it and closes
    /// it; returns the file length. If writing failed earlier, trims the
    /// file to the records written before the failure and returns that error.
    pub fn finish(mut self) -> io::Result<u64> {
        self.close(true)
    }

    /// Trims the file to the written data and closes it without waiting for
    /// the data to reach the disk: the kernel writes the pages back on its
    /// own, and a process that dies (even by SIGKILL) leaves them in the page
    /// cache. What the runtime uses at the end of a run, so that a run's time
    /// does not include a synchronous flush.
    pub fn finish_unsynced(mut self) -> io::Result<u64> {
        self.close(false)
    }

    fn close(&mut self, flush: bool) -> io::Result<u64> {
        if self.closed {
            return Ok(self.pos as u64);
        }
        self.closed = true;
        let flushed = if flush {
            self.map.flush_range(0, self.pos)
        } else {
            Ok(())
        };
        // SAFETY: `closed` was false and is now true, so this runs once; no
        // other method touches `map` after `closed` is set (`finish` consumes
        // the writer, and `drop` only calls `close`, which returns early).
        unsafe { ManuallyDrop::drop(&mut self.map) };
        let trimmed = self.file.set_len(self.pos as u64);
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        flushed?;
        trimmed?;
        Ok(self.pos as u64)
    }

    /// The slow path of `reserve`: grows the file, or hands out scratch
    /// memory once writing has failed.
    #[cold]
    #[inline(never)]
    fn reserve_slow(&mut self, max_len: usize) -> &mut [u8] {
        if self.error.is_none() {
            match self.grow(self.pos.saturating_add(max_len)) {
                Ok(()) => {
                    self.limit = self.map.len();
                    return &mut self.map[self.pos..self.pos + max_len];
                }
                Err(e) => {
                    self.error = Some(e);
                    self.limit = 0;
                }
            }
        }
        self.scratch.clear();
        self.scratch.resize(max_len, 0);
        &mut self.scratch
    }

    fn grow(&mut self, need: usize) -> io::Result<()> {
        let mut len = self.map.len();
        while len < need {
            len = len
                .checked_add(len.min(Self::MAX_GROW))
                .ok_or_else(|| io::Error::other("log file size overflow"))?;
        }
        self.file.set_len(len as u64)?;
        // SAFETY: as in `create_with_len`: our own file, only accessed through
        // this writer; the file is at least `len` bytes long now.
        let map = unsafe { MmapMut::map_mut(&self.file)? };
        no_readahead(&map);
        // The old mapping is unmapped here; its data lives on in the file.
        *self.map = map;
        Ok(())
    }
}

// Always inlined: every record goes through both, and a period's record
// path is large enough that LLVM otherwise calls them.
impl Sink for LogWriter {
    #[inline(always)]
    fn reserve(&mut self, max_len: usize) -> &mut [u8] {
        self.reserved = max_len;
        let end = self.pos + max_len;
        if end > self.limit {
            return self.reserve_slow(max_len);
        }
        &mut self.map[self.pos..end]
    }

    #[inline(always)]
    fn commit(&mut self, len: usize) {
        assert!(len <= self.reserved, "commit beyond reservation");
        self.reserved = 0;
        if self.limit == 0 {
            self.dropped += 1;
        } else {
            self.pos += len;
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // Best effort: trim the file, no flush (the data is in the page cache).
        let _ = self.close(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A new log never reuses the old file: a reader that has the old one
    /// mapped keeps it whole.
    #[test]
    fn a_new_log_is_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let header = Header::new(crate::MonitorFlags::FULL, 0, 1, crate::Calibration::nanos());
        let w = LogWriter::create(dir.path(), 0, &header).unwrap();
        w.finish_unsynced().unwrap();
        let path = dir.path().join(log_file_name(0));
        let old = std::fs::File::open(&path).unwrap();
        let old_len = old.metadata().unwrap().len();
        let w = LogWriter::create(dir.path(), 0, &header).unwrap();
        assert_ne!(
            old.metadata().unwrap().ino(),
            std::fs::metadata(&path).unwrap().ino()
        );
        assert_eq!(
            old.metadata().unwrap().len(),
            old_len,
            "the old file is untouched"
        );
        w.finish_unsynced().unwrap();
    }

    #[test]
    fn a_finished_log_takes_a_new_rate() {
        let dir = tempfile::tempdir().unwrap();
        let cal = crate::Calibration {
            ticks_per_sec: 2.5e9,
            start_ticks: 7,
            start_unix_ns: 11,
        };
        let header = Header::new(crate::MonitorFlags::FULL, 0, 1, cal);
        let w = LogWriter::create(dir.path(), 0, &header).unwrap();
        w.finish_unsynced().unwrap();
        let path = dir.path().join(log_file_name(0));
        set_header_rate(&path, 2.4e9).unwrap();
        let (h, _) = Header::parse(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(h.calibration.ticks_per_sec, 2.4e9);
        assert_eq!(
            (h.calibration.start_ticks, h.calibration.start_unix_ns),
            (7, 11)
        );
        // A file too short to be a log, or another file, is left alone.
        let short = dir.path().join("short.rlog");
        std::fs::write(&short, b"RILL").unwrap();
        assert!(set_header_rate(&short, 1e9).is_err());
        assert_eq!(std::fs::read(&short).unwrap(), b"RILL");
        let other = dir.path().join("other.rlog");
        std::fs::write(&other, [7u8; 64]).unwrap();
        assert!(set_header_rate(&other, 1e9).is_err());
        assert_eq!(std::fs::read(&other).unwrap(), [7u8; 64]);
    }
}
