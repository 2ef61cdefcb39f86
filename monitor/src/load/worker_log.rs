//! One worker's log as loaded: [`WorkerLog`] (its bytes, header and
//! chunk index) and its totals, [`WorkerStats`].

use std::fmt;
use std::path::PathBuf;

use rill_log::{EndReason, Header, Truncation};

use crate::load::bytes::{Behind, Bytes};
use crate::load::chunks::Chunk;
use crate::load::files::file_label;
use crate::load::scan::{Item, Scanner};

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
    pub(crate) data: Bytes,
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
pub(crate) fn truncation_warning(name: &str, worker: u32, stop: u64, t: &Truncation) -> String {
    format!(
        "{name}: truncated: the worker stopped writing its log at byte {stop} ({}) and the \
         run went on without it; what worker {worker} did after that is missing from every figure",
        t.cause()
    )
}

impl WorkerLog {
    /// If the log's writer stopped before its run ended (a full disk), the
    /// warning that says so (also in [`RunLog::warnings`](crate::RunLog::warnings)).
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
    /// Number of periods (in a log without periods, as in sample mode, the
    /// dispatches the worker's totals record). A spin before a block is
    /// logged as a period more: the worker's dispatches (resumptions, as
    /// `rill::RunStats` counts them) are [`resumptions`](Self::resumptions).
    pub dispatches: u64,
    /// Spins before a block inferred from the shape of the log's periods
    /// (see `load/aggregate.rs`'s `Spin`): what [`spins`](Self::spins)
    /// falls back to in a log without [`totals`](Self::totals).
    pub inferred_spins: u64,
    /// Periods that ended blocked (on a stream or a poll).
    pub blocked_periods: u64,
    /// Stream entries of its periods whose operation woke the peer.
    pub wakes: u64,
    /// The worker's own counts, from the `WorkerTotals` record it writes
    /// at its end (every monitored worker since format version 6, sample
    /// mode before); `None` in an older log or one cut short.
    pub totals: Option<LoggedTotals>,
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

/// A worker's counts as the runtime kept them (`rill::WorkerStats`), from
/// the `WorkerTotals` record of its log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoggedTotals {
    /// Task dispatches (resumptions).
    pub dispatches: u64,
    /// Spins before a block.
    pub spins: u64,
    /// Times the worker ran out of tasks.
    pub idles: u64,
    /// Times it went to sleep.
    pub parks: u64,
}

impl WorkerStats {
    /// The worker's dispatches as the runtime counts them (resumptions of
    /// a task, `rill::WorkerStats::dispatches`): those its totals record,
    /// or in a log without them its periods less the spins inferred among
    /// them.
    pub fn resumptions(&self) -> u64 {
        match self.totals {
            Some(t) => t.dispatches,
            None => self.dispatches.saturating_sub(self.inferred_spins),
        }
    }

    /// Its spins before a block (`rill::WorkerStats::spins`): those its
    /// totals record, or in a log without them those inferred from its
    /// periods' shape.
    pub fn spins(&self) -> u64 {
        self.totals.map_or(self.inferred_spins, |t| t.spins)
    }
}

impl Behind {
    /// The pass has read the log up to `offset`.
    #[inline]
    pub(crate) fn advance(&mut self, log: &WorkerLog, offset: usize) {
        self.advance_bytes(&log.data, offset);
    }
}
