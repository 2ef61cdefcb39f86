//! The load's one scan of a log file: [`scan_file`] totals its records
//! ([`Agg`](crate::load::aggregate::Agg)) and notes its chunks.

use indicatif::ProgressBar;
use rill_log::EndReason;

use rill_log::EndState;

use crate::load::aggregate::Agg;
use crate::load::bytes::Behind;
use crate::load::chunks::{Chunk, CHUNK_PERIODS};
use crate::load::files::{file_label, RawFile};
use crate::load::model::{StreamInfo, TaskInfo};
use crate::load::scan::{Item, ScannedPeriod, Scanner};
use crate::load::worker_log::{truncation_warning, WorkerStats};

/// A consumer of a log's periods, fed by the load's scan of that log as it
/// reads them (the latency replay's feed): the loader hands the records on
/// and does not know what takes them.
pub(crate) trait PeriodFeed {
    /// The scanner's current period `p`.
    fn period(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>);
    /// The log has no more periods.
    fn finish(self);
}

/// No consumer: a scan that only totals its log.
pub(crate) enum NoFeed {}

impl PeriodFeed for NoFeed {
    fn period(&mut self, _: &ScannedPeriod, _: &Scanner<'_>) {
        match *self {}
    }
    fn finish(self) {
        match self {}
    }
}

/// One file after its scan.
pub(crate) struct Scanned {
    pub(crate) worker: u32,
    pub(crate) valid_len: u64,
    pub(crate) end: EndReason,
    pub(crate) stats: WorkerStats,
    pub(crate) tasks: Vec<TaskInfo>,
    /// Per task (as `tasks`): its last period in the log's order.
    pub(crate) last: Vec<Option<(u64, EndState)>>,
    pub(crate) streams: Vec<StreamInfo>,
    pub(crate) unattributed_polls: u64,
    pub(crate) unattributed_poll_ticks: u64,
    pub(crate) warnings: Vec<String>,
    pub(crate) chunks: Vec<Chunk>,
}

pub(crate) fn scan_file<F: PeriodFeed>(
    f: &RawFile,
    bar: Option<&ProgressBar>,
    mut feed: Option<F>,
) -> Scanned {
    let data = &f.data;
    let header = f.header;
    let mut agg = Agg::new(header.flags);
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
    agg.settle_spins();
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
