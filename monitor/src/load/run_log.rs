//! Finding, checking and scanning a run's logs: [`load_run`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context as _};
use indicatif::{ProgressBar, ProgressStyle};
use rill_log::{
    Calibration, EndReason, EndState, Header, LogError, MonitorFlags, Side, Truncation,
};

use crate::load::scan::{Item, ScannedPeriod, Scanner};
use crate::replay::latency::{feed, message_budget, replay, FeedTx, RawLatency};

/// Logs larger than this in total (bytes) get a progress bar on stderr.
pub const PROGRESS_THRESHOLD: u64 = 64 << 20;

/// A fast hasher for integer ids (the analyses look up a task or stream per
/// period; SipHash would dominate).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by ids.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Dense indices for ids: a direct table for small ids (the runtime numbers
/// tasks and streams from 1), a hash map for the rest.
#[derive(Debug, Default)]
pub(crate) struct IdIndex {
    /// `index + 1` by id; 0 = not seen.
    direct: Vec<u32>,
    map: IdMap<u64, u32>,
}

/// Ids below this go into the direct table (4 bytes each, grown on demand).
const DIRECT_IDS: u64 = 1 << 20;

impl IdIndex {
    /// The index of `id`; a new id gets `len` (the caller then pushes its
    /// entry) and `true`.
    #[inline]
    pub(crate) fn index(&mut self, id: u64, len: usize) -> (usize, bool) {
        match self.direct.get(id as usize) {
            Some(&i) if i != 0 && id < DIRECT_IDS => (i as usize - 1, false),
            _ => self.index_cold(id, len),
        }
    }

    /// The index of `id`, if it has one.
    pub(crate) fn get(&self, id: u64) -> Option<usize> {
        if id < DIRECT_IDS {
            match self.direct.get(id as usize) {
                Some(&i) if i != 0 => Some(i as usize - 1),
                _ => None,
            }
        } else {
            self.map.get(&id).map(|&i| i as usize)
        }
    }

    #[cold]
    #[inline(never)]
    fn index_cold(&mut self, id: u64, len: usize) -> (usize, bool) {
        if id >= DIRECT_IDS {
            let mut new = false;
            let i = *self.map.entry(id).or_insert_with(|| {
                new = true;
                len as u32
            });
            return (i as usize, new);
        }
        let id = id as usize;
        if id >= self.direct.len() {
            self.direct.resize((id + 1).next_power_of_two().max(64), 0);
        }
        match self.direct[id] {
            0 => {
                self.direct[id] = len as u32 + 1;
                (len, true)
            }
            i => (i as usize - 1, false),
        }
    }
}

/// A whole run's logs, checked and scanned once (see [`load_run`]).
///
/// Holds each log's bytes (not its decoded records) plus per-worker, per-task
/// and per-stream totals; the other analyses make their own streaming passes
/// over the bytes with [`WorkerLog::scanner`].
#[derive(Debug)]
pub struct RunLog {
    /// The directory the logs came from.
    pub dir: PathBuf,
    /// What the run recorded (from the headers).
    pub flags: MonitorFlags,
    /// Number of workers the headers announce.
    pub worker_count: u32,
    /// The run's clock calibration.
    pub calibration: Calibration,
    /// One entry per log file, by worker id.
    pub workers: Vec<WorkerLog>,
    /// Every task seen (assigned or dispatched), by id.
    pub tasks: BTreeMap<u64, TaskInfo>,
    /// Every stream seen (opened, bound or used), by id.
    pub streams: BTreeMap<u64, StreamInfo>,
    /// Problems that did not stop the analysis: damaged records (file, byte
    /// offset, reason), missing worker logs, unwritten tails.
    pub warnings: Vec<String>,
    /// Earliest time in the run (ticks); the origin of timelines and traces.
    pub t0: u64,
    /// Latest time in the run (ticks).
    pub t1: u64,
    /// The latency replay, when it ran during loading.
    pub(crate) latency: Option<RawLatency>,
    /// Sample mode: the sampler's windows and what was estimated from them
    /// (busy and waiting time per worker, busy time per task).
    pub sampled: Option<crate::load::sampled::Sampled>,
    /// A run across ranks (`DIR/rank-R/`, see [`Ranks`](crate::Ranks)):
    /// its ranks, how their ids and workers were renumbered, and its
    /// cross-rank streams. `None` for one process's run.
    pub ranks: Option<crate::load::ranks::Ranks>,
    /// Tasks whose periods lie in more than one log (they migrated): for
    /// them a log's order is not the task's order.
    pub(crate) split_tasks: u64,
    /// The waits of the tasks whose last period ended blocked (to the
    /// run's end), counting each task in one log only.
    pub(crate) open_waits: u64,
    /// Poll waits put on no stream (the next period read nothing, or
    /// there was none), and their ticks.
    pub(crate) unattributed_polls: u64,
    pub(crate) unattributed_poll_ticks: u64,
}

/// One worker's log.
pub struct WorkerLog {
    /// The worker id (from the header).
    pub worker: u32,
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Where the records start.
    pub records_start: usize,
    /// Bytes up to the end of the last intact record (header included).
    pub valid_len: u64,
    /// Why decoding stopped.
    pub end: EndReason,
    /// Totals over the log.
    pub stats: WorkerStats,
    /// The log's periods in stretches of [`CHUNK_PERIODS`] (see [`Chunk`]).
    pub(crate) chunks: Vec<Chunk>,
    data: Bytes,
}

/// Periods per [`Chunk`].
pub(crate) const CHUNK_PERIODS: u32 = 1024;

/// A stretch of a log's records holding [`CHUNK_PERIODS`] of its periods
/// (the last one fewer), noted by the load's scan: where a scanner resumes
/// to read it (the offset and the time base) and the range of times its
/// periods and worker waits cover (`min_t`, the earliest start; `max_t`,
/// the latest end). The range bounds every time in the chunk, whatever
/// their order, so what follows holds for a damaged log too:
///
/// - a pass that counts periods per time bucket takes a chunk whose range
///   lies in one bucket whole, without decoding it (`detail.rs`);
/// - a pass drawing a window of the run skips the chunks that end before
///   the window or start after it (`timeline.rs`).
///
/// Chunks follow one another: each starts where the one before ended, the
/// first at the log's first record, the last ends where the load's scan
/// stopped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub offset: usize,
    pub last: u64,
    pub periods: u32,
    pub min_t: u64,
    pub max_t: u64,
}

impl Chunk {
    fn at(offset: usize, last: u64) -> Self {
        Chunk {
            offset,
            last,
            periods: 0,
            min_t: u64::MAX,
            max_t: 0,
        }
    }

    #[inline]
    fn add(&mut self, start: u64, end: u64) {
        self.periods += 1;
        self.span(start, end.max(start));
    }

    #[inline]
    fn span(&mut self, a: u64, b: u64) {
        self.min_t = self.min_t.min(a);
        self.max_t = self.max_t.max(b);
    }

    /// Whether it holds a period or a wait.
    fn any(&self) -> bool {
        self.min_t <= self.max_t
    }
}

/// A log file's bytes: mapped, or (where mapping fails, or the bytes were
/// made in memory) read.
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

/// Pages released behind a pass at a time ([`Behind`]).
const RELEASE_STRIDE: usize = 16 << 20;

/// The alignment of released ranges: a multiple of every page size Linux
/// uses (4 KiB, 16 KiB, 64 KiB).
const RELEASE_ALIGN: usize = 64 << 10;

impl Bytes {
    /// Drops the pages of `[from, to)` (rounded inwards to
    /// [`RELEASE_ALIGN`]) from this process's resident memory, for a
    /// mapped file; they stay in the page cache, and a later read maps them
    /// again.
    fn release(&self, from: usize, to: usize) {
        let Bytes::Mapped(map) = self else { return };
        let a = from.next_multiple_of(RELEASE_ALIGN);
        let b = to.min(map.len()) / RELEASE_ALIGN * RELEASE_ALIGN;
        if b > a {
            // SAFETY: the map is a read-only shared mapping of a file that
            // nobody writes while it is mapped (see `map_or_read`). Dropping
            // its pages is what the kernel does to clean file pages under
            // memory pressure: the next access reads the same bytes from the
            // file again, so slices borrowed from the range stay valid and
            // unchanged. The range lies within the map.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
        }
    }
}

/// A front-to-back pass over a log releases the pages it has read, every
/// [`RELEASE_STRIDE`] bytes, so that a pass over a log of any size keeps
/// a bounded part of it resident (without this, the kernel leaves every
/// page read in the process's memory until it needs the room).
#[derive(Default)]
pub(crate) struct Behind {
    done: usize,
}

impl Behind {
    /// The pass has read the log up to `offset`.
    #[inline]
    pub(crate) fn advance(&mut self, log: &WorkerLog, offset: usize) {
        self.advance_bytes(&log.data, offset);
    }

    #[inline]
    fn advance_bytes(&mut self, data: &Bytes, offset: usize) {
        if offset >= self.done + RELEASE_STRIDE {
            data.release(self.done, offset);
            self.done = offset / RELEASE_ALIGN * RELEASE_ALIGN;
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }
}

impl fmt::Debug for WorkerLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerLog")
            .field("worker", &self.worker)
            .field("path", &self.path)
            .field("bytes", &self.data.len())
            .field("valid_len", &self.valid_len)
            .field("end", &self.end)
            .field("stats", &self.stats)
            .finish()
    }
}

/// The warning about a log whose writer stopped before its run ended.
fn truncation_warning(name: &str, worker: u32, stop: u64, t: &Truncation) -> String {
    format!(
        "{name}: truncated: the worker stopped writing its log at byte {stop} ({}) and the \
         run went on without it; what worker {worker} did after that is missing from every figure",
        t.cause()
    )
}

impl WorkerLog {
    /// If the log's writer stopped before its run ended (a full disk), the
    /// warning that says so (also in [`RunLog::warnings`]).
    pub fn truncation(&self) -> Option<String> {
        let t = self.header.truncated?;
        Some(truncation_warning(
            &self.file_name(),
            self.worker,
            self.valid_len,
            &t,
        ))
    }

    /// The file's bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the file goes on past its last intact record: its run is
    /// still writing it, or was killed (no end record).
    pub fn is_open(&self) -> bool {
        (self.valid_len as usize) < self.data.len()
    }

    /// Where the records loading accepted end (within the file's bytes).
    fn valid_end(&self) -> usize {
        (self.valid_len as usize).min(self.data.len())
    }

    /// A fresh scanner over the log's records (stops where loading stopped).
    pub fn scanner(&self) -> Scanner<'_> {
        Scanner::new(&self.data[..self.valid_end()], self.records_start)
    }

    /// A scanner at the start of `chunk` (one of [`chunks`](Self::chunks)).
    pub(crate) fn chunk_scanner(&self, chunk: &Chunk) -> Scanner<'_> {
        let end = self.valid_end();
        Scanner::resume(&self.data[..end], chunk.offset.min(end), chunk.last)
    }

    /// Adds to `counts[b]` the periods whose start `t` has
    /// `bucket(t) == Some(b)`, for a `bucket` that never decreases with `t`
    /// over the times where it is `Some`, which form one interval: a chunk
    /// whose range of times ([`Chunk`]) falls in one bucket is counted
    /// whole; only the others are decoded.
    pub(crate) fn count_starts(&self, counts: &mut [u64], bucket: impl Fn(u64) -> Option<usize>) {
        let mut behind = Behind::default();
        for c in self.chunks.iter().filter(|c| c.periods > 0) {
            // Every start lies in the chunk's range.
            let (a, b) = (bucket(c.min_t), bucket(c.max_t));
            if let (Some(a), true) = (a, a == b) {
                counts[a] += u64::from(c.periods);
                continue;
            }
            let mut sc = self.chunk_scanner(c);
            let mut seen = 0;
            while seen < c.periods {
                let Some(item) = sc.next() else { break };
                if let Item::Period(p) = item {
                    seen += 1;
                    if let Some(b) = bucket(p.start) {
                        counts[b] += 1;
                    }
                }
            }
            // The chunks are in the log's order: what lies behind this one
            // is read (the kernel maps pages around each one read, so
            // chunks decoded all over the log would otherwise keep most of
            // it resident).
            behind.advance(self, sc.offset());
        }
    }

    /// The stretches of the log made of the chunks `keep` accepts, as
    /// (scanner at the stretch's start, byte offset where it ends), in the
    /// log's order: a pass reads those and skips the rest.
    pub(crate) fn stretches(&self, keep: impl Fn(&Chunk) -> bool) -> Vec<(Scanner<'_>, usize)> {
        let end = self.valid_end();
        // Runs of kept chunks: (first chunk, byte offset where the run ends).
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut open = false;
        for (i, c) in self.chunks.iter().enumerate() {
            let stop = self.chunks.get(i + 1).map_or(end, |n| n.offset.min(end));
            let kept = keep(c);
            match runs.last_mut() {
                Some((_, to)) if kept && open => *to = stop,
                _ if kept => runs.push((i, stop)),
                _ => {}
            }
            open = kept;
        }
        runs.into_iter()
            .map(|(from, to)| (self.chunk_scanner(&self.chunks[from]), to))
            .collect()
    }

    /// The file name (for messages).
    pub fn file_name(&self) -> String {
        file_label(&self.path)
    }
}

/// Totals of one worker's log. Times are ticks.
#[derive(Clone, Debug, Default)]
pub struct WorkerStats {
    /// Earliest time in the log.
    pub begin: u64,
    /// Latest time in the log (a period's end or a wait's end included).
    pub finish: u64,
    /// Whether the log had any timed record.
    pub any_time: bool,
    /// Sum of period durations.
    pub busy: u64,
    /// Sum of wait durations.
    pub wait: u64,
    /// Number of `WorkerWait` records.
    pub waits: u64,
    /// Number of periods.
    pub dispatches: u64,
    /// Monitoring events (a period counts 1 + its messages).
    pub events: u64,
    /// Records decoded.
    pub records: u64,
    /// Messages read in this worker's periods.
    pub reads: u64,
    /// Messages written in this worker's periods.
    pub writes: u64,
    /// Periods carrying per-message times.
    pub timed_periods: u64,
    /// Periods that stored an op order.
    pub ordered_periods: u64,
}

/// What the logs say about a task.
#[derive(Clone, Debug, Default)]
pub struct TaskInfo {
    /// Task id.
    pub id: u64,
    /// Name from `TaskAssign`, if logged.
    pub name: Option<String>,
    /// Creating task (0 = none).
    pub parent: u64,
    /// The worker it was first mapped to.
    pub assigned: Option<u32>,
    /// When it was first mapped (its earliest `TaskAssign`, ticks), if
    /// logged.
    pub created: Option<u64>,
    /// Total execution time (sum of its periods), ticks.
    pub busy: u64,
    /// Number of periods.
    pub dispatches: u64,
    /// Messages read.
    pub reads: u64,
    /// Messages written.
    pub writes: u64,
    /// Migrations logged.
    pub migrations: u64,
    /// How its last period ended.
    pub last_end: Option<EndState>,
    /// End of its last period (ticks), to order `last_end` across workers.
    pub last_time: u64,
    /// The worker whose log holds most of its busy time (ties: the lower
    /// id); `None` when no log holds a period of it.
    pub ran_on: Option<u32>,
}

impl TaskInfo {
    /// The name, or `task#ID` when none was logged.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("task#{}", self.id),
        }
    }

    /// A task that reads messages but writes none (its reads are the run's outputs).
    pub fn is_sink(&self) -> bool {
        self.reads > 0 && self.writes == 0
    }
}

/// What the logs say about a stream.
#[derive(Clone, Debug, Default)]
pub struct StreamInfo {
    /// Stream id.
    pub id: u64,
    /// Capacity from `StreamOpen`.
    pub capacity: Option<u32>,
    /// The name the program gave it (`StreamName`), if any.
    pub name: Option<String>,
    /// Creating task (0 = none).
    pub creator: u64,
    /// Task bound to the writing end (the last bind logged).
    pub writer: Option<u64>,
    /// Task bound to the reading end (the last bind logged).
    pub reader: Option<u64>,
    /// Messages written to it.
    pub written: u64,
    /// Messages read from it.
    pub read: u64,
    /// Periods that ended blocked reading it (its reader blocked).
    pub reader_blocked: u64,
    /// Periods that ended blocked writing it (its writer blocked).
    pub writer_blocked: u64,
    /// Poll waits of its reader put on it: periods that ended blocked on
    /// several inputs (`BlockedAny`) whose task's next period in the same
    /// log read this stream first (as `waits` attributes them).
    pub poll_waits: u64,
    /// Ticks its reader waited on it: from each period that ended blocked
    /// reading it (or a poll put on it) to the task's next period in the
    /// same log, or to the run's end. The `waits` of a task whose periods
    /// lie in one log.
    pub reader_wait: u64,
    /// The same for its writer (periods that ended blocked writing it).
    pub writer_wait: u64,
    /// Ends closed (reader, writer).
    pub closed: (bool, bool),
}

/// Options for [`load_run_with`].
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Show a progress bar on stderr: `None` = when the logs exceed
    /// [`PROGRESS_THRESHOLD`] (and stderr is a terminal).
    pub progress: Option<bool>,
    /// Scanning threads (0 = one per available core, at most one per file).
    pub threads: usize,
    /// Also run the latency replay (on its own thread, beside the scans),
    /// when the flags allow it; otherwise [`summarize`](crate::summarize)
    /// runs it if needed.
    pub latency: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            progress: None,
            threads: 0,
            latency: true,
        }
    }
}

/// Loads a run: finds the `worker-*.rlog` files in `dir`, checks that their
/// headers agree (worker count, calibration), and scans every record once to
/// total busy and waiting time, task and stream statistics.
///
/// Errors (one line, naming the file): a missing directory, no logs, a file
/// that is not a rill log, an unsupported format version, a header whose
/// clock rate is not a finite number of at least 1 tick per second, headers
/// that disagree. Damaged records are not errors: the records before them
/// are used and the damage is listed in [`RunLog::warnings`].
///
/// Whatever the files hold, the work and memory stay bounded by their size
/// (and the number of files), not by the numbers in them: a forged worker
/// count, duration or message count cannot make loading (or the analyses)
/// allocate or loop in proportion to it, and totals saturate.
pub fn load_run(dir: &Path) -> anyhow::Result<RunLog> {
    load_run_with(dir, &LoadOptions::default())
}

/// [`load_run`] with options.
///
/// A directory holding no logs of its own but `rank-R/` directories that
/// do is a run across ranks: their logs are merged into one run (see
/// [`Ranks`](crate::Ranks) and the `ranks` module).
pub fn load_run_with(dir: &Path, opts: &LoadOptions) -> anyhow::Result<RunLog> {
    let cores = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Read every file and check its header first: header errors stop here.
    let (files, ranked) = match crate::load::ranks::load(dir, cores)? {
        Some(mut r) => (std::mem::take(&mut r.files), Some(r)),
        None => {
            let paths = find_logs(dir)?;
            let threads = cores.clamp(1, paths.len());
            (parallel(&paths, threads, |p| read_file(p))?, None)
        }
    };
    let threads = cores.clamp(1, files.len());
    let first = &files[0].header;
    let need = MonitorFlags::SCHEDULER | MonitorFlags::STREAM | MonitorFlags::MESSAGE;
    let with_latency = opts.latency && first.flags.contains(need);

    let total: u64 = files.iter().map(|f| f.data.len() as u64).sum();
    let show = opts.progress.unwrap_or(total > PROGRESS_THRESHOLD);
    let bar = show.then(|| {
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message("analysing logs");
        bar
    });

    // The per-file scans; with the latency replay, one scan thread per file
    // (each feeds the replay, which needs all of them to progress) and the
    // replay on this thread.
    let (scanned, latency) = if with_latency {
        std::thread::scope(|s| {
            let mut rxs = Vec::new();
            let mut handles = Vec::new();
            for f in &files {
                let (tx, rx) = feed();
                rxs.push(rx);
                let bar = bar.as_ref();
                handles.push(s.spawn(move || scan_file(f, bar, Some(tx))));
            }
            let latency = replay(rxs, message_budget(total));
            let scanned: Vec<Scanned> = handles
                .into_iter()
                .map(|h| h.join().expect("a log scan panicked"))
                .collect();
            (scanned, Some(latency))
        })
    } else {
        let scanned = parallel(&files, threads, |f| Ok(scan_file(f, bar.as_ref(), None)))?;
        (scanned, None)
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut run = merge(dir, scanned, files)?;
    run.latency = latency;
    let mut sampler = None;
    if let Some(r) = ranked {
        // What was wrong with the ranks comes first, as a log's own
        // problems do in one process's run.
        run.warnings.splice(0..0, r.warnings);
        run.ranks = Some(r.ranks);
        sampler = r.sampler;
    }
    if run.flags.is_sampled() {
        match sampler {
            Some((windows, problems)) => {
                crate::load::sampled::load_windows(&mut run, windows, problems)
            }
            None => crate::load::sampled::load(&mut run),
        }
    }
    Ok(run)
}

/// Runs `f` over `items` on up to `threads` threads; results in order.
pub(crate) fn parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<R>>>> =
        Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item processed"))
        .collect()
}

/// The `worker-*.rlog` files in `dir`, sorted by name.
pub(crate) fn find_logs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!("log directory {} not found", dir.display())
        } else {
            anyhow::anyhow!("cannot read log directory {}: {e}", dir.display())
        }
    })?;
    if !meta.is_dir() {
        bail!(
            "{} is not a directory (give the directory holding the worker-*.rlog files)",
            dir.display()
        );
    }
    let mut paths = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read log directory {}", dir.display()))?;
    for entry in entries {
        let entry =
            entry.with_context(|| format!("cannot read log directory {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("worker-") && name.ends_with(".rlog") {
            paths.push(entry.path());
        }
    }
    if paths.is_empty() {
        bail!("no rill logs (worker-*.rlog) in {}", dir.display());
    }
    // Numeric order of the worker id where the name has one.
    paths.sort_by_key(|p| {
        let n = file_label(p);
        let id = n
            .strip_prefix("worker-")
            .and_then(|s| s.strip_suffix(".rlog"))
            .and_then(|s| s.parse::<u64>().ok());
        (id.is_none(), id, n)
    });
    Ok(paths)
}

/// A log file's name for messages; in a rank's directory (`rank-R/`)
/// with that directory, since every rank has a `worker-0.rlog`.
pub(crate) fn file_label(p: &Path) -> String {
    let Some(name) = p.file_name() else {
        return p.display().to_string();
    };
    let name = name.to_string_lossy();
    match p
        .parent()
        .and_then(|d| d.file_name())
        .map(|d| d.to_string_lossy())
    {
        Some(d) if d.starts_with("rank-") => format!("{d}/{name}"),
        _ => name.into_owned(),
    }
}

/// The slowest clock a header may claim, in ticks per second. A rate below
/// it (or zero, negative, infinite or NaN: a damaged or forged header) would
/// turn every duration into nonsense or an infinity.
const MIN_TICKS_PER_SEC: f64 = 1.0;

/// Missing workers named one by one in the warning about them; the rest are
/// counted.
const MISSING_LISTED: usize = 16;

/// A log file mapped (or read) into memory, its header checked.
pub(crate) struct RawFile {
    pub path: PathBuf,
    pub data: Bytes,
    pub header: Header,
    pub records_start: usize,
}

impl RawFile {
    /// A log made in memory (`bytes` starting with `header`, records after
    /// it), standing for the file at `path`.
    pub(crate) fn in_memory(path: PathBuf, bytes: Vec<u8>, header: Header) -> Self {
        RawFile {
            path,
            data: Bytes::Read(bytes),
            header,
            records_start: rill_log::HEADER_LEN,
        }
    }
}

pub(crate) fn read_file(path: &Path) -> anyhow::Result<RawFile> {
    let label = path.display();
    let data = map_or_read(path).map_err(|e| anyhow::anyhow!("{label}: cannot read: {e}"))?;
    let (header, records_start) =
        Header::parse(&data).map_err(|e: LogError| anyhow::anyhow!("{label}: {e}"))?;
    let rate = header.calibration.ticks_per_sec;
    if !(rate.is_finite() && rate >= MIN_TICKS_PER_SEC) {
        bail!(
            "{label}: invalid rill log header: clock rate {rate} ticks per second \
             (the header's calibration must give a finite rate of at least {MIN_TICKS_PER_SEC})"
        );
    }
    Ok(RawFile {
        path: path.to_path_buf(),
        data,
        header,
        records_start,
    })
}

/// Maps a log file for one sequential pass (no copy into fresh, zeroed
/// memory: reading 1 GiB that way cost about a second of CPU); reads it
/// where it cannot be mapped (empty files, special files) or where its run
/// may still be writing it.
fn map_or_read(path: &Path) -> std::io::Result<Bytes> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > 0 && !may_be_live(&file, len) {
        // SAFETY: the map is only read, as a byte slice. Only a file that
        // shrinks while mapped could end this process (SIGBUS), and a log
        // shrinks once, when its writer trims it at the end of the run: a
        // file that was trimmed already is left alone (a later run into the
        // same directory unlinks it and writes a new file; see rill-log's
        // `LogWriter::create`), and files that may still be written are read
        // instead (`may_be_live`).
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            // Advice only: a failure changes nothing.
            let _ = map.advise(memmap2::Advice::Sequential);
            return Ok(Bytes::Mapped(map));
        }
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut data)?;
    Ok(Bytes::Read(data))
}

/// Whether `file` (of `len` bytes) may be a log its run is still writing:
/// such a file has the writer's untrimmed size, a multiple of 4096 bytes,
/// and ends in zeros. So does the log of a run that was killed, which is
/// then read rather than mapped (correct, a little slower); a trimmed log
/// ends in its last record.
pub(crate) fn may_be_live(file: &std::fs::File, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    const N: u64 = 8;
    let mut tail = [0u8; N as usize];
    len.is_multiple_of(4096)
        && len >= N
        && file.read_exact_at(&mut tail, len - N).is_ok()
        && tail == [0; N as usize]
}

/// One file after its scan.
struct Scanned {
    worker: u32,
    valid_len: u64,
    end: EndReason,
    stats: WorkerStats,
    tasks: Vec<TaskInfo>,
    /// Per task (as `tasks`): its last period in the log's order.
    last: Vec<Option<(u64, EndState)>>,
    streams: Vec<StreamInfo>,
    unattributed_polls: u64,
    unattributed_poll_ticks: u64,
    warnings: Vec<String>,
    chunks: Vec<Chunk>,
}

fn scan_file(f: &RawFile, bar: Option<&ProgressBar>, mut feed: Option<FeedTx>) -> Scanned {
    let data = &f.data;
    let header = f.header;
    let mut agg = Agg::default();
    let mut sc = Scanner::new(data, f.records_start);
    let mut reported = f.records_start;
    let mut n = 0u32;
    let mut behind = Behind::default();
    let mut chunks = Vec::new();
    let mut chunk = Chunk::at(sc.offset(), sc.last_time());
    loop {
        // Periods are matched straight off `next` (binding the whole item
        // first copies it through memory, with stalls).
        match sc.next() {
            Some(Item::Period(p)) => {
                if let Some(feed) = feed.as_mut() {
                    feed.period(&p, &sc);
                }
                agg.period(&p, &sc);
                chunk.add(p.start, p.end);
                if chunk.periods == CHUNK_PERIODS {
                    chunks.push(chunk);
                    chunk = Chunk::at(sc.offset(), sc.last_time());
                }
            }
            Some(item) => {
                if let Item::WorkerWait { t, dur } = item {
                    chunk.span(t, t.saturating_add(dur));
                }
                agg.item(&item)
            }
            None => break,
        }
        n = n.wrapping_add(1);
        if n & 0xffff == 0 {
            if let Some(bar) = bar {
                bar.inc((sc.offset() - reported) as u64);
                reported = sc.offset();
            }
            behind.advance_bytes(data, sc.offset());
        }
    }
    if let Some(feed) = feed {
        feed.finish();
    }
    if chunk.any() {
        chunks.push(chunk);
    }
    let stop = sc.offset();
    let mut warnings = Vec::new();
    let name = file_label(&f.path);
    let end = match sc.end_reason() {
        Some(EndReason::Damaged { offset, reason }) => {
            warnings.push(format!(
                "{name}: damaged record at byte {offset}: {reason}; the {} bytes from there on were skipped",
                data.len() as u64 - offset
            ));
            EndReason::Damaged {
                offset: *offset,
                reason: reason.clone(),
            }
        }
        _ => {
            if stop < data.len() {
                warnings.push(format!(
                    "{name}: records end at byte {stop} of {}: the rest is an unwritten (zero) tail, \
                     so the run probably did not finish cleanly",
                    data.len()
                ));
            }
            EndReason::Clean
        }
    };
    if let Some(t) = header.truncated {
        warnings.push(truncation_warning(&name, header.worker, stop as u64, &t));
    }
    if let Some(bar) = bar {
        bar.inc((data.len() - reported) as u64);
    }
    if let Some(stem) = name
        .strip_prefix("worker-")
        .and_then(|s| s.strip_suffix(".rlog"))
    {
        if stem.parse::<u32>().ok() != Some(header.worker) {
            warnings.push(format!(
                "{name}: the header says worker {}, the file name says otherwise",
                header.worker
            ));
        }
    }
    Scanned {
        worker: header.worker,
        valid_len: stop as u64,
        end,
        stats: agg.stats,
        tasks: agg.tasks,
        last: agg.prev,
        streams: agg.streams,
        unattributed_polls: agg.unattributed_polls,
        unattributed_poll_ticks: agg.unattributed_poll_ticks,
        warnings,
        chunks,
    }
}

/// Per-file totals, filled record by record.
#[derive(Default)]
struct Agg {
    stats: WorkerStats,
    tasks: Vec<TaskInfo>,
    task_ix: IdIndex,
    streams: Vec<StreamInfo>,
    stream_ix: IdIndex,
    /// Per task (by index): its previous period in this log, in the log's
    /// order (its end and end state).
    prev: Vec<Option<(u64, EndState)>>,
    /// Poll waits on no stream, and their ticks.
    unattributed_polls: u64,
    unattributed_poll_ticks: u64,
}

impl Agg {
    #[inline]
    fn time(&mut self, t0: u64, t1: u64) {
        let s = &mut self.stats;
        if s.any_time {
            s.begin = s.begin.min(t0);
            s.finish = s.finish.max(t1);
        } else {
            s.any_time = true;
            s.begin = t0;
            s.finish = t1;
        }
    }

    #[inline]
    fn task_index(&mut self, id: u64) -> usize {
        let (i, new) = self.task_ix.index(id, self.tasks.len());
        if new {
            self.tasks.push(TaskInfo {
                id,
                ..TaskInfo::default()
            });
            self.prev.push(None);
        }
        i
    }

    #[inline]
    fn task(&mut self, id: u64) -> &mut TaskInfo {
        let i = self.task_index(id);
        &mut self.tasks[i]
    }

    #[inline]
    fn stream(&mut self, id: u64) -> &mut StreamInfo {
        let (i, new) = self.stream_ix.index(id, self.streams.len());
        if new {
            self.streams.push(StreamInfo {
                id,
                ..StreamInfo::default()
            });
        }
        &mut self.streams[i]
    }

    #[inline(always)]
    fn period(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>) {
        self.stats.records += 1;
        self.time(p.start, p.end.max(p.start));
        let dur = p.dur();
        let mut reads = 0u64;
        let mut writes = 0u64;
        // Durations and message counts come from the file: the totals
        // saturate rather than overflow.
        for io in sc.io() {
            reads = reads.saturating_add(u64::from(io.reads));
            writes = writes.saturating_add(u64::from(io.writes));
            if io.reads | io.writes != 0 || io.woke_peer {
                let s = self.stream(io.stream);
                s.read = s.read.saturating_add(u64::from(io.reads));
                s.written = s.written.saturating_add(u64::from(io.writes));
            }
        }
        let st = &mut self.stats;
        st.busy = st.busy.saturating_add(dur);
        st.dispatches += 1;
        st.events = st
            .events
            .saturating_add(1)
            .saturating_add(reads)
            .saturating_add(writes);
        st.reads = st.reads.saturating_add(reads);
        st.writes = st.writes.saturating_add(writes);
        st.timed_periods += u64::from(!sc.op_times().is_empty());
        st.ordered_periods += u64::from(sc.ops_recorded());
        match p.end_state {
            EndState::BlockedInput { stream } => self.stream(stream).reader_blocked += 1,
            EndState::BlockedOutput { stream } => self.stream(stream).writer_blocked += 1,
            _ => {}
        }
        let i = self.task_index(p.task);
        if let Some((from, state)) = self.prev[i].replace((p.end, p.end_state)) {
            self.wait(from, p.start, state, sc);
        }
        let t = &mut self.tasks[i];
        t.busy = t.busy.saturating_add(dur);
        t.dispatches += 1;
        t.reads = t.reads.saturating_add(reads);
        t.writes = t.writes.saturating_add(writes);
        if t.last_end.is_none() || p.end >= t.last_time {
            t.last_end = Some(p.end_state);
            t.last_time = p.end;
        }
    }

    /// Books a task's time from its previous period's end (`from`, ended
    /// in `state`) to its next dispatch `to`, as the waits count it
    /// (`activity.rs`); the counts of blocked periods are booked by
    /// [`period`](Self::period). `sc` holds the next period.
    #[inline]
    fn wait(&mut self, from: u64, to: u64, state: EndState, sc: &Scanner<'_>) {
        let ticks = to.saturating_sub(from);
        match state {
            EndState::BlockedInput { stream } => {
                let s = self.stream(stream);
                s.reader_wait = s.reader_wait.saturating_add(ticks);
            }
            EndState::BlockedOutput { stream } => {
                let s = self.stream(stream);
                s.writer_wait = s.writer_wait.saturating_add(ticks);
            }
            // A poll wait goes to the first stream the next period reads.
            EndState::BlockedAny => match crate::replay::merge::first_read(sc) {
                Some(stream) => {
                    let s = self.stream(stream);
                    s.poll_waits += 1;
                    s.reader_wait = s.reader_wait.saturating_add(ticks);
                }
                None => {
                    self.unattributed_polls += 1;
                    self.unattributed_poll_ticks =
                        self.unattributed_poll_ticks.saturating_add(ticks);
                }
            },
            EndState::Yielded | EndState::Ended | EndState::Panicked => {}
        }
    }

    /// A record other than a period.
    fn item(&mut self, item: &Item<'_>) {
        self.stats.records += 1;
        match *item {
            Item::Period(_) => unreachable!("periods go to Agg::period"),
            Item::WorkerWait { t, dur } => {
                self.time(t, t.saturating_add(dur));
                self.stats.wait = self.stats.wait.saturating_add(dur);
                self.stats.waits += 1;
                self.stats.events += 1;
            }
            Item::WorkerStart { t } | Item::WorkerEnd { t } => {
                self.time(t, t);
                self.stats.events += 1;
            }
            Item::TaskAssign {
                t,
                task,
                parent,
                worker,
                name,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let info = self.task(task);
                info.created = Some(info.created.map_or(t, |c| c.min(t)));
                if info.name.is_none() {
                    info.name = Some(name.to_owned());
                    info.parent = parent;
                    info.assigned = Some(worker);
                }
            }
            Item::TaskMigrate { t, task, .. } => {
                self.time(t, t);
                self.stats.events += 1;
                self.task(task).migrations += 1;
            }
            Item::StreamOpen {
                t,
                stream,
                capacity,
                creator,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                s.capacity = Some(capacity);
                s.creator = creator;
            }
            Item::StreamName { t, stream, name } => {
                self.time(t, t);
                self.stats.events += 1;
                self.stream(stream).name = Some(name.to_owned());
            }
            Item::StreamBind {
                t,
                stream,
                side,
                task,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => s.reader = Some(task),
                    Side::Writer => s.writer = Some(task),
                }
            }
            Item::StreamClose { t, stream, side } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => s.closed.0 = true,
                    Side::Writer => s.closed.1 = true,
                }
            }
            Item::StreamReplace { t, .. } => {
                self.time(t, t);
                self.stats.events += 1;
            }
            // Sample mode's exact counts: a run in that mode has no periods,
            // so these are the only counts of their kind.
            Item::TaskTotals {
                t,
                task,
                dispatches,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let info = self.task(task);
                info.dispatches = info.dispatches.saturating_add(dispatches);
            }
            Item::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => {
                        s.read = s.read.saturating_add(messages);
                        s.reader_blocked = s.reader_blocked.saturating_add(waits);
                    }
                    Side::Writer => {
                        s.written = s.written.saturating_add(messages);
                        s.writer_blocked = s.writer_blocked.saturating_add(waits);
                    }
                }
            }
            Item::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                ..
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let st = &mut self.stats;
                st.dispatches = st.dispatches.saturating_add(dispatches);
                // As a period-recording run counts them: each idle stretch
                // and each spin before a block is a wait.
                st.waits = st.waits.saturating_add(idles).saturating_add(spins);
            }
            // Only the sampler's own log holds windows (`sampled.rs`).
            Item::Samples(_) => {}
        }
    }
}

/// The warning about the workers below `count` that have no log, if any.
///
/// `count` comes from a header, so it may be anything up to `u32::MAX`: the
/// work here is bounded by the logs present (`seen`) and [`MISSING_LISTED`],
/// not by `count`.
fn missing_workers(count: u32, seen: &BTreeMap<u32, String>) -> Option<String> {
    let present = seen.range(..count).count() as u64;
    let missing = u64::from(count) - present;
    if missing == 0 {
        return None;
    }
    // Every id present is passed at most once before MISSING_LISTED missing
    // ones are found.
    let listed: Vec<String> = (0..count)
        .filter(|w| !seen.contains_key(w))
        .take(MISSING_LISTED)
        .map(|w| w.to_string())
        .collect();
    let more = missing - listed.len() as u64;
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "the headers announce {count} workers but the logs of worker(s) {}{tail} are missing",
        listed.join(", ")
    ))
}

fn merge(dir: &Path, scanned: Vec<Scanned>, files: Vec<RawFile>) -> anyhow::Result<RunLog> {
    let (first_name, first_header) = (file_label(&files[0].path), files[0].header);
    let mut warnings = Vec::new();
    let mut seen = BTreeMap::new();
    for f in &files {
        let h = &f.header;
        let name = file_label(&f.path);
        if h.worker_count != first_header.worker_count {
            bail!(
                "{}: worker count {} differs from {first_name}'s {} (logs of different runs?)",
                f.path.display(),
                h.worker_count,
                first_header.worker_count
            );
        }
        if h.calibration != first_header.calibration {
            bail!(
                "{}: clock calibration differs from {first_name}'s (logs of different runs?)",
                f.path.display()
            );
        }
        if h.flags != first_header.flags {
            warnings.push(format!(
                "{name}: monitoring flags {} differ from {first_name}'s {}; using {first_name}'s",
                h.flags, first_header.flags
            ));
        }
        if let Some(other) = seen.insert(h.worker, name.clone()) {
            bail!(
                "{}: worker id {} is also claimed by {other}",
                f.path.display(),
                h.worker
            );
        }
        if h.worker >= h.worker_count {
            warnings.push(format!(
                "{name}: worker id {} is not below the worker count {}",
                h.worker, h.worker_count
            ));
        }
    }
    if let Some(w) = missing_workers(first_header.worker_count, &seen) {
        warnings.push(w);
    }
    if first_header.flags.unknown_bits() != 0 {
        warnings.push(format!(
            "the logs record event classes this rill-mon does not know ({}); they are ignored",
            first_header.flags
        ));
    }

    let mut tasks: BTreeMap<u64, TaskInfo> = BTreeMap::new();
    let mut streams: BTreeMap<u64, StreamInfo> = BTreeMap::new();
    let mut workers = Vec::with_capacity(scanned.len());
    // Per task with periods: (busy of its main worker so far, logs holding
    // periods, its last period in the last of them).
    type Ran = (u64, u32, Option<(u64, EndState)>);
    let mut ran: BTreeMap<u64, Ran> = BTreeMap::new();
    let (mut unattributed_polls, mut unattributed_poll_ticks) = (0u64, 0u64);
    for (s, f) in scanned.into_iter().zip(files) {
        warnings.extend(s.warnings);
        unattributed_polls += s.unattributed_polls;
        unattributed_poll_ticks = unattributed_poll_ticks.saturating_add(s.unattributed_poll_ticks);
        let mut ts: Vec<(TaskInfo, Option<(u64, EndState)>)> =
            s.tasks.into_iter().zip(s.last).collect();
        ts.sort_by_key(|t| t.0.id);
        for (t, last) in ts {
            let e = tasks.entry(t.id).or_insert_with(|| TaskInfo {
                id: t.id,
                ..TaskInfo::default()
            });
            if t.dispatches > 0 {
                let r = ran.entry(t.id).or_insert((0, 0, None));
                r.1 += 1;
                r.2 = last;
                let better = match e.ran_on {
                    None => true,
                    Some(w) => t.busy > r.0 || (t.busy == r.0 && s.worker < w),
                };
                if better {
                    r.0 = t.busy;
                    e.ran_on = Some(s.worker);
                }
            }
            if let Some(c) = t.created {
                e.created = Some(e.created.map_or(c, |x| x.min(c)));
            }
            if e.name.is_none() && t.name.is_some() {
                e.name = t.name;
                e.parent = t.parent;
                e.assigned = t.assigned;
            }
            e.busy = e.busy.saturating_add(t.busy);
            e.dispatches += t.dispatches;
            e.reads = e.reads.saturating_add(t.reads);
            e.writes = e.writes.saturating_add(t.writes);
            e.migrations += t.migrations;
            if t.last_end.is_some() && (e.last_end.is_none() || t.last_time >= e.last_time) {
                e.last_end = t.last_end;
                e.last_time = t.last_time;
            }
        }
        let mut ss = s.streams;
        ss.sort_by_key(|s| s.id);
        for st in ss {
            let e = streams.entry(st.id).or_insert_with(|| StreamInfo {
                id: st.id,
                ..StreamInfo::default()
            });
            if st.capacity.is_some() {
                e.capacity = st.capacity;
                e.creator = st.creator;
            }
            if st.name.is_some() {
                e.name = st.name;
            }
            e.writer = st.writer.or(e.writer);
            e.reader = st.reader.or(e.reader);
            e.written = e.written.saturating_add(st.written);
            e.read = e.read.saturating_add(st.read);
            e.reader_blocked += st.reader_blocked;
            e.writer_blocked += st.writer_blocked;
            e.poll_waits += st.poll_waits;
            e.reader_wait = e.reader_wait.saturating_add(st.reader_wait);
            e.writer_wait = e.writer_wait.saturating_add(st.writer_wait);
            e.closed.0 |= st.closed.0;
            e.closed.1 |= st.closed.1;
        }
        workers.push(WorkerLog {
            worker: s.worker,
            path: f.path,
            header: f.header,
            records_start: f.records_start,
            valid_len: s.valid_len,
            end: s.end,
            stats: s.stats,
            chunks: s.chunks,
            data: f.data,
        });
    }
    workers.sort_by_key(|w| w.worker);
    let timed: Vec<&WorkerLog> = workers.iter().filter(|w| w.stats.any_time).collect();
    let t0 = timed.iter().map(|w| w.stats.begin).min().unwrap_or(0);
    let t1 = timed.iter().map(|w| w.stats.finish).max().unwrap_or(t0);
    // Waits that never ended run to the run's end (for the tasks in one log).
    let mut open_waits = 0u64;
    for r in ran.values().filter(|r| r.1 == 1) {
        let Some((from, state)) = r.2 else { continue };
        let ticks = t1.saturating_sub(from);
        let (stream, reader) = match state {
            EndState::BlockedInput { stream } => (stream, true),
            EndState::BlockedOutput { stream } => (stream, false),
            EndState::BlockedAny => {
                open_waits += 1;
                unattributed_polls += 1;
                unattributed_poll_ticks = unattributed_poll_ticks.saturating_add(ticks);
                continue;
            }
            _ => continue,
        };
        open_waits += 1;
        let s = streams.entry(stream).or_insert_with(|| StreamInfo {
            id: stream,
            ..StreamInfo::default()
        });
        if reader {
            s.reader_wait = s.reader_wait.saturating_add(ticks);
        } else {
            s.writer_wait = s.writer_wait.saturating_add(ticks);
        }
    }
    Ok(RunLog {
        dir: dir.to_owned(),
        flags: first_header.flags,
        worker_count: first_header.worker_count,
        calibration: first_header.calibration,
        workers,
        tasks,
        streams,
        warnings,
        t0,
        t1,
        latency: None,
        sampled: None,
        ranks: None,
        split_tasks: ran.values().filter(|r| r.1 > 1).count() as u64,
        open_waits,
        unattributed_polls,
        unattributed_poll_ticks,
    })
}

impl RunLog {
    /// Converts a duration in ticks to nanoseconds.
    pub fn ns(&self, ticks: u64) -> u64 {
        self.calibration.ticks_to_ns(ticks)
    }

    /// Nanoseconds from the run's first time stamp [`t0`](Self::t0) to `t`.
    pub fn rel_ns(&self, t: u64) -> f64 {
        self.calibration.since_start_ns(t) as f64 - self.calibration.since_start_ns(self.t0) as f64
    }

    /// The run's span (first to last time stamp), nanoseconds.
    pub fn span_ns(&self) -> u64 {
        self.ns(self.t1.saturating_sub(self.t0))
    }

    /// Worker `w`'s name: its id, or in a run across ranks `rR/wK` (rank
    /// R's worker K).
    pub fn worker_name(&self, w: u32) -> String {
        match &self.ranks {
            Some(r) => r.worker_name(w),
            None => w.to_string(),
        }
    }

    /// A task's display name.
    pub fn task_label(&self, id: u64) -> String {
        self.tasks
            .get(&id)
            .map_or_else(|| format!("task#{id}"), TaskInfo::label)
    }

    /// Total log bytes analysed (headers and intact records).
    pub fn bytes(&self) -> u64 {
        self.workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(w.valid_len))
    }

    /// Total monitoring events (saturating: the counts come from the files).
    pub fn events(&self) -> u64 {
        self.workers
            .iter()
            .fold(0u64, |n, w| n.saturating_add(w.stats.events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrimmed_zero_tailed_files_are_read_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let live = |bytes: &[u8]| {
            std::fs::write(&p, bytes).unwrap();
            let f = std::fs::File::open(&p).unwrap();
            may_be_live(&f, bytes.len() as u64)
        };
        let mut page = vec![0u8; 8192];
        page[..100].fill(7);
        assert!(live(&page), "writer-sized, zero tail: maybe live");
        assert!(!live(&page[..8191]), "trimmed length");
        page[8191] = 1;
        assert!(!live(&page), "ends in a record");
        assert!(!live(&[]));
    }
}
