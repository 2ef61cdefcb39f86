//! [`LogWriter`]: a worker's memory-mapped log file.
//!
//! The file is grown with `set_len` in chunks (starting at
//! [`LogWriter::INITIAL_LEN`], doubling up to [`LogWriter::MAX_GROW`] per step) and mapped into memory;
//! records are stored straight into the mapping, but only into space
//! reserved on the disk beforehand (`space.rs`), in chunks that start at
//! [`LogWriter::FIRST_CHUNK`] and double up to [`LogWriter::MAX_CHUNK`]. A
//! store into a page the filesystem cannot back would end the process with
//! SIGBUS; a reservation that fails is an error code, on which the writer
//! stops: it marks its header truncated ([`Header::truncated`]), tells the
//! hook set with [`on_stop`](LogWriter::on_stop), and drops the later
//! records. Where a filesystem still fails to back a reserved page (ext4
//! nearly full, copy-on-write filesystems), the store raises SIGBUS, which
//! the net (`sigbus.rs`, [`rescue_fault`](crate::rescue_fault)) turns into
//! the same stop, the log cut at its last whole record before that page.
//! Reserving (and growing, which remaps) is the only slow path: a record's
//! write makes no system call.
//!
//! [`finish`](LogWriter::finish) (or dropping the writer) trims the file to
//! the bytes written. A process killed before that leaves a file whose tail
//! is zeros, which readers take as the clean end. The mapping is advised
//! random access, so that the kernel faults in only the pages written rather
//! than reading ahead blocks of the sparse file (`no_readahead`).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use crate::encode::Sink;
use crate::header::{Header, Truncation, HEADER_LEN, HEADER_RATE_AT, HEADER_STATE_AT, MAGIC};
use crate::scan::Scanner;
use crate::sigbus::Watch;
use crate::space::{self, Method};

/// The file name of worker `worker`'s log: `worker-{id}.rlog`.
pub fn log_file_name(worker: u32) -> String {
    format!("worker-{worker}.rlog")
}

/// The error of a writer stopped by the SIGBUS net.
const PAGE_FAULT: &str = "the filesystem could not back a page of the log (most likely it is full)";

/// What a writer calls when it stops: the file and the cause.
type StopHook = Box<dyn FnOnce(&Path, &io::Error) + Send>;

/// A log file being written by one worker. Implements [`Sink`] for the
/// [`Encoder`](crate::Encoder).
///
/// If space for more records cannot be reserved (disk full, quota, I/O
/// error), the writer stops: later records are dropped, the header says the
/// log is truncated, and [`finish`](LogWriter::finish) reports the error;
/// writing never panics, raises a signal or blocks the worker on I/O
/// errors.
pub struct LogWriter {
    map: ManuallyDrop<MmapMut>,
    /// Usable length: `backed`, or 0 once stopped (forces the slow path).
    limit: usize,
    /// Bytes written (header included).
    pos: usize,
    /// Length of the last [`Sink::reserve`].
    claimed: usize,
    /// Bytes of the file, from its start, whose disk space is reserved: a
    /// multiple of the page size, at most `map.len()`.
    backed: usize,
    /// Size of the next disk reservation.
    chunk: usize,
    /// How disk space is reserved on this file's filesystem.
    method: Method,
    /// The system's page size.
    page: usize,
    /// The largest size the file may have: the process's file size limit
    /// (`RLIMIT_FSIZE`, past which the kernel sends SIGXFSZ, whose default
    /// action ends the process), rounded down to a page.
    max_len: usize,
    /// The mapping's slot in the SIGBUS net (`sigbus.rs`).
    watch: Watch,
    file: File,
    path: PathBuf,
    error: Option<io::Error>,
    on_stop: Option<StopHook>,
    /// Where records go once writing failed.
    scratch: Vec<u8>,
    dropped: u64,
    closed: bool,
}

impl fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogWriter")
            .field("path", &self.path)
            .field("pos", &self.pos)
            .field("backed", &self.backed)
            .field("mapped", &self.map.len())
            .field("method", &self.method)
            .field("error", &self.error)
            .field("dropped", &self.dropped)
            .finish_non_exhaustive()
    }
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
    /// Initial file size (the mapping's; disk space is reserved in chunks).
    pub const INITIAL_LEN: usize = 4 << 20;
    /// Largest growth step of the file and its mapping.
    pub const MAX_GROW: usize = 64 << 20;
    /// The first chunk of disk space, reserved with the first records (the
    /// file's first page is reserved when it is made, for its header).
    pub const FIRST_CHUNK: usize = 64 << 10;
    /// Largest disk reservation at once (each doubles the last, from
    /// [`FIRST_CHUNK`](Self::FIRST_CHUNK)). The first that fails stops the
    /// log.
    pub const MAX_CHUNK: usize = 1 << 20;

    /// Creates (or truncates) `dir/worker-{worker}.rlog`, creating `dir` if
    /// needed, and writes `header` with its worker field set to `worker`.
    /// Fails if the file cannot be made, or if not even its first page
    /// (the header's) can be reserved.
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
        // with SIGBUS; retired (renamed, deleted in the background), the old
        // file lives on until it is unmapped.
        crate::retire(&path)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        let made = Self::start(file, path.clone(), worker, header, initial_len);
        if made.is_err() {
            // Best effort: leave no headerless file behind.
            let _ = std::fs::remove_file(&path);
        }
        made
    }

    /// Sizes, maps and reserves the new `file` and writes the header.
    fn start(
        file: File,
        path: PathBuf,
        worker: u32,
        header: &Header,
        initial_len: usize,
    ) -> io::Result<Self> {
        let page = page_size();
        let max_len = size_limit() / page * page;
        let len = initial_len
            .max(4096)
            .next_multiple_of(page.max(4096))
            .min(max_len);
        if len < page {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        file.set_len(len as u64)?;
        // SAFETY: the mapping is of a file we just created and exclusively own;
        // nothing in this process writes it except through this mapping, and
        // its length only changes through `grow`/`close`, which remap or stop
        // using the mapping first. (Another process truncating the file would
        // break any mmap writer; that is outside what we can defend against.)
        // Only its reserved part (`backed`) is ever written.
        let map = unsafe { MmapMut::map_mut(&file)? };
        no_readahead(&map);
        let watch = Watch::new(page);
        watch.set(map.as_ptr() as usize, map.len());
        let mut w = LogWriter {
            limit: 0,
            map: ManuallyDrop::new(map),
            pos: 0,
            claimed: 0,
            backed: 0,
            chunk: Self::FIRST_CHUNK,
            method: Method::Allocate,
            page,
            max_len,
            watch,
            file,
            path,
            error: None,
            on_stop: None,
            scratch: Vec::new(),
            dropped: 0,
            closed: false,
        };
        // Only the header's page: a log that can have that much starts,
        // and its first chunk is reserved with its first records.
        space::reserve(&w.file, 0, page as u64, &mut w.method)?;
        w.backed = page;
        let mut h = *header;
        h.worker = worker;
        h.truncated = None;
        let bytes = h.to_bytes();
        w.map[..bytes.len()].copy_from_slice(&bytes);
        if w.watch.fault().is_some() {
            return Err(io::Error::other(PAGE_FAULT));
        }
        w.pos = bytes.len();
        w.limit = w.backed;
        Ok(w)
    }

    /// Sets what the writer calls, once, if it stops for lack of space (or
    /// any other failure to reserve it): with the file's path and the
    /// cause. Called on the writing thread, from the record that could not
    /// be written.
    pub fn on_stop(&mut self, hook: impl FnOnce(&Path, &io::Error) + Send + 'static) {
        self.on_stop = Some(Box::new(hook));
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

    /// Bytes of the file whose disk space is reserved (from its start).
    pub fn reserved(&self) -> u64 {
        self.backed as u64
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
        if self.error.is_none() {
            self.check_fault();
        }
        self.closed = true;
        let flushed = if flush {
            self.map.flush_range(0, self.pos)
        } else {
            Ok(())
        };
        // Unwatched before it is unmapped (`sigbus.rs`).
        self.watch.clear();
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

    /// The slow path of `reserve`: reserves more disk space (growing the
    /// file first if needed), or hands out scratch memory once writing has
    /// stopped.
    #[cold]
    #[inline(never)]
    fn reserve_slow(&mut self, max_len: usize) -> &mut [u8] {
        if self.error.is_none() && !self.check_fault() {
            let end = self.pos.saturating_add(max_len);
            match self.make_room(end) {
                Ok(()) => {
                    self.limit = self.backed;
                    return &mut self.map[self.pos..end];
                }
                Err(e) => self.stop(e, false),
            }
        }
        self.scratch.clear();
        self.scratch.resize(max_len, 0);
        &mut self.scratch
    }

    /// Makes the file's first `need` bytes mapped and reserved on disk.
    fn make_room(&mut self, need: usize) -> io::Result<()> {
        if need > self.map.len() {
            self.grow(need)?;
        }
        if self.backed >= need {
            return Ok(());
        }
        // `map.len()` is a multiple of the page size, so this is at most it.
        let least = need.next_multiple_of(self.page);
        let end = (self.backed + self.chunk).min(self.map.len()).max(least);
        // The first failure is the last: smaller reservations after a
        // failed one may well succeed, but on ext2 and ext4 the pages of a
        // range whose reservation failed once could not be written through
        // the mapping afterwards (SIGBUS), whatever succeeded since.
        space::reserve(
            &self.file,
            self.backed as u64,
            (end - self.backed) as u64,
            &mut self.method,
        )?;
        self.backed = end;
        self.chunk = (self.chunk * 2).min(Self::MAX_CHUNK);
        Ok(())
    }

    /// If the SIGBUS net caught a store into a page of this log: cuts the
    /// log at the last whole record before that page, stops, and says so.
    #[cold]
    fn check_fault(&mut self) -> bool {
        let Some(at) = self.watch.fault() else {
            return false;
        };
        // The pages before `at` hold what was written; a record that ran
        // into the lost page ends the scan at its start.
        let end = at.min(self.pos).max(HEADER_LEN);
        let mut sc = Scanner::new(&self.map[..end], HEADER_LEN);
        while sc.next().is_some() {}
        self.pos = sc.offset();
        self.stop(io::Error::other(PAGE_FAULT), true);
        true
    }

    /// Stops writing for good: marks the header truncated (its page was
    /// written when the file was made) and tells the hook. `page_fault`:
    /// the cause is a page the SIGBUS net caught.
    #[cold]
    fn stop(&mut self, e: io::Error, page_fault: bool) {
        self.limit = 0;
        let t = Truncation {
            os_error: e.raw_os_error().map_or(0, |n| n as u32),
            page_fault,
        };
        self.map[HEADER_STATE_AT..HEADER_STATE_AT + 8].copy_from_slice(&t.to_bytes());
        if let Some(hook) = self.on_stop.take() {
            hook(&self.path, &e);
        }
        self.error = Some(e);
    }

    fn grow(&mut self, need: usize) -> io::Result<()> {
        let mut len = self.map.len();
        while len < need {
            len = len
                .checked_add(len.min(Self::MAX_GROW))
                .ok_or_else(|| io::Error::other("log file size overflow"))?;
        }
        // Never past the file size limit (SIGXFSZ): as far as it, if the
        // records fit, else the log is full.
        let len = len.min(self.max_len);
        if len < need {
            return Err(io::Error::from_raw_os_error(libc::EFBIG));
        }
        self.file.set_len(len as u64)?;
        // SAFETY: as in `start`: our own file, only accessed through this
        // writer; the file is at least `len` bytes long now.
        let map = unsafe { MmapMut::map_mut(&self.file)? };
        no_readahead(&map);
        // Unwatched while no mapping is ours alone (`sigbus.rs`).
        self.watch.clear();
        // The old mapping is unmapped here; its data lives on in the file.
        *self.map = map;
        self.watch.set(self.map.as_ptr() as usize, self.map.len());
        Ok(())
    }
}

/// The process's file size limit in bytes (`RLIMIT_FSIZE`'s soft limit;
/// `usize::MAX` when there is none).
fn size_limit() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into `lim`, which we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return usize::MAX;
    }
    usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
}

/// The system's page size (4 KiB where it cannot be known): the unit in
/// which a mapping is backed, so the unit of reservations.
fn page_size() -> usize {
    // SAFETY: sysconf reads a system constant; no memory of ours is touched.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

// Always inlined: every record goes through both, and a period's record
// path is large enough that LLVM otherwise calls them.
impl Sink for LogWriter {
    #[inline(always)]
    fn reserve(&mut self, max_len: usize) -> &mut [u8] {
        self.claimed = max_len;
        let end = self.pos + max_len;
        if end > self.limit {
            return self.reserve_slow(max_len);
        }
        &mut self.map[self.pos..end]
    }

    #[inline(always)]
    fn commit(&mut self, len: usize) {
        assert!(len <= self.claimed, "commit beyond reservation");
        self.claimed = 0;
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
    use crate::test_fs::SmallFs;
    use std::os::unix::fs::MetadataExt;
    use std::sync::{Arc, Mutex};

    /// Writes wait records into a log in `dir` until it has stopped and
    /// 1,000 more were dropped; checks the stop and the log left behind.
    /// `zeros`: reserve by writing zeros from the start.
    fn fill_until_stopped(dir: &Path, zeros: bool, expect: Method) {
        let header = Header::new(crate::MonitorFlags::FULL, 0, 1, crate::Calibration::nanos());
        let mut w = LogWriter::create(dir, 0, &header).unwrap();
        if zeros {
            w.method = Method::WriteZeros;
        }
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = calls.clone();
        w.on_stop(move |path, e| {
            seen.lock()
                .unwrap()
                .push((path.to_path_buf(), e.raw_os_error()))
        });
        let mut enc = crate::Encoder::new();
        let mut kept = 0u64;
        let mut t = 0;
        while w.dropped() < 1_000 {
            assert!(kept < 10_000_000, "never stopped");
            t += 1000;
            enc.worker_wait(&mut w, t, 17);
            if w.error().is_none() {
                kept += 1;
            }
            assert!(w.reserved() >= w.written());
        }
        assert_eq!(w.method, expect);
        let e = w.error().expect("stopped");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
        assert_eq!(
            *calls.lock().unwrap(),
            [(dir.join(log_file_name(0)), Some(libc::ENOSPC))],
            "the hook is called once"
        );
        let written = w.written();
        assert!(w.finish().is_err(), "finish reports the stop");
        let path = dir.join(log_file_name(0));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
        let log = crate::read_log(&path).unwrap();
        assert_eq!(
            log.header.truncated,
            Some(Truncation::os(libc::ENOSPC as u32))
        );
        assert_eq!(log.end, crate::EndReason::Clean);
        assert_eq!(log.records.len() as u64, kept);
        assert!(kept > 1_000, "only {kept} records before the stop");
    }

    /// On a full tmpfs the writer stops with ENOSPC instead of dying of
    /// SIGBUS, by either way of reserving. (Without the reservation, this
    /// test ends with SIGBUS.)
    #[test]
    fn a_full_disk_stops_the_log_not_the_process() {
        for zeros in [false, true] {
            let Some(fs) = SmallFs::tmpfs("256k") else {
                return;
            };
            let expect = if zeros {
                Method::WriteZeros
            } else {
                Method::Allocate
            };
            fill_until_stopped(fs.path(), zeros, expect);
        }
    }

    /// ext2 has no fallocate: the writer finds out, writes zeros instead,
    /// and stops cleanly when that filesystem is full.
    #[test]
    fn a_filesystem_without_fallocate_is_reserved_with_zeros() {
        let Some(fs) = SmallFs::ext2(2 << 20) else {
            return;
        };
        fill_until_stopped(fs.path(), false, Method::WriteZeros);
    }

    /// A SIGBUS handler that hands faults to the net, as the rill runtime's
    /// does; installed once for the test process.
    fn install_net() {
        extern "C" fn on_bus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
            // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
            let addr = unsafe { (*info).si_addr() } as usize;
            if !crate::rescue_fault(addr) {
                // SAFETY: back to the default action: the fault repeats and
                // ends the process, as it would have without this handler.
                unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            }
        }
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: a zeroed sigaction with a three-argument handler and
            // SA_SIGINFO is a valid action.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_bus as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut sa.sa_mask);
                assert_eq!(libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()), 0);
            }
        });
    }

    /// A file cut short behind the writer's back ends its mapping early:
    /// the next store past the end raises SIGBUS, which the net catches;
    /// the writer then stops, keeps the records before the lost page and
    /// marks the log truncated by a page fault. Without the net this test
    /// dies of SIGBUS.
    #[test]
    fn a_page_lost_under_the_writer_is_caught_by_the_net() {
        install_net();
        let dir = tempfile::tempdir().unwrap();
        let header = Header::new(crate::MonitorFlags::FULL, 0, 1, crate::Calibration::nanos());
        let mut w = LogWriter::create(dir.path(), 0, &header).unwrap();
        let calls = Arc::new(Mutex::new(0));
        let seen = calls.clone();
        w.on_stop(move |_, _| *seen.lock().unwrap() += 1);
        let mut enc = crate::Encoder::new();
        let mut t = 0;
        let mut ends = Vec::new();
        while w.written() < 100_000 {
            t += 1000;
            enc.worker_wait(&mut w, t, 17);
            ends.push(w.written());
        }
        let cut = w.written().next_multiple_of(4096);
        let path = dir.path().join(log_file_name(0));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut)
            .unwrap();
        while w.error().is_none() {
            assert!(w.written() < 64 << 20, "the writer never noticed");
            t += 1000;
            enc.worker_wait(&mut w, t, 17);
            if w.error().is_none() {
                ends.push(w.written());
            }
        }
        assert_eq!(*calls.lock().unwrap(), 1);
        let kept = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(w.written(), *ends.iter().rfind(|&&e| e <= cut).unwrap());
        let written = w.written();
        assert!(w.finish().is_err());
        assert_eq!(std::fs::metadata(&path).unwrap().len(), written);
        let log = crate::read_log(&path).unwrap();
        let trunc = log.header.truncated.expect("marked truncated");
        assert!(trunc.page_fault, "{trunc:?}");
        assert!(
            trunc.cause().contains("could not back"),
            "{}",
            trunc.cause()
        );
        assert_eq!(log.records.len(), kept);
        assert_eq!(log.end, crate::EndReason::Clean);
    }

    /// Space is reserved in growing chunks, never much more than a chunk
    /// ahead of the records, and the file is trimmed at the end.
    #[test]
    fn space_is_reserved_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let header = Header::new(crate::MonitorFlags::FULL, 0, 1, crate::Calibration::nanos());
        let mut w = LogWriter::create(dir.path(), 0, &header).unwrap();
        assert_eq!(w.reserved(), page_size() as u64, "the header's page");
        let mut enc = crate::Encoder::new();
        let mut t = 0;
        while w.reserved() == page_size() as u64 {
            t += 1000;
            enc.worker_wait(&mut w, t, 17);
        }
        assert!(w.written() > page_size() as u64 - 64, "{}", w.written());
        assert_eq!(w.reserved(), (page_size() + LogWriter::FIRST_CHUNK) as u64);
        let mut steps = vec![w.reserved()];
        for i in 0..3_000_000u64 {
            enc.worker_wait(&mut w, i * 1000, 17);
            if w.reserved() != *steps.last().unwrap() {
                steps.push(w.reserved());
            }
            assert!(w.reserved() - w.written() <= LogWriter::MAX_CHUNK as u64 + 4096);
        }
        assert!(w.written() > 8 << 20, "{}", w.written());
        // 64 KiB, 128 KiB, ... doubling to 1 MiB, then 1 MiB at a time.
        let sizes: Vec<u64> = steps.windows(2).map(|p| p[1] - p[0]).collect();
        assert_eq!(sizes[0], 2 * LogWriter::FIRST_CHUNK as u64, "{sizes:?}");
        assert!(
            sizes.iter().all(|&s| s <= LogWriter::MAX_CHUNK as u64),
            "{sizes:?}"
        );
        assert!(
            steps.len() as u64 <= 8 + w.written() / LogWriter::MAX_CHUNK as u64,
            "{steps:?}"
        );
        let blocks = std::fs::metadata(w.path()).unwrap().blocks() * 512;
        assert!(blocks >= w.written(), "the written part is allocated");
        let n = w.finish().unwrap();
        assert_eq!(
            std::fs::metadata(dir.path().join(log_file_name(0)))
                .unwrap()
                .len(),
            n
        );
    }

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
