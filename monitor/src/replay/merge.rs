//! Every log's periods in one time order, for the passes that need to see
//! a waking period before the dispatch it allowed (`replay/activity.rs`).
//!
//! Order: by start time, ties by the log's place in [`RunLog::workers`],
//! each log's periods in the log's own order (a heap of one cursor per
//! log, keyed by the cursor's next start).
//!
//! Decoding a record costs about as much as what the pass does with it, so
//! where the machine has a core to spare each log is decoded on a thread of
//! its own, in batches of owned periods sent through a bounded channel (at
//! most [`IN_FLIGHT`] batches per log wait, so the memory stays bounded
//! whatever the logs' size), and the calling thread only merges.
//!
//! Several passes can share one merge ([`shared`]): each reads the same
//! decoded batches on a thread of its own, following the order the merge
//! sends (log indices), so the logs are decoded and merged once for all.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use rill_log::StreamIo;

use crate::load::bytes::Behind;

use crate::load::model::RunLog;

use crate::load::scan::{first_read, Item, ScannedPeriod, Scanner};
use crate::load::worker_log::WorkerLog;

/// A period as a pass sees it.
pub(crate) struct Period<'a> {
    /// Its times, task and end state.
    pub p: ScannedPeriod,
    /// Its stream entries.
    pub io: &'a [StreamIo],
    /// The stream of its first read, if it read (see [`first_read`]).
    pub first_read: Option<u64>,
}

/// Periods per batch.
const BATCH: usize = 8192;

/// Batches per log decoded ahead of the merge.
const IN_FLIGHT: usize = 2;

/// Logs decoded on threads of their own at most (beyond, inline).
const MAX_THREADS: usize = 64;

/// What a merged pass hands over: a period, or (where asked for) a wait
/// of the worker between periods.
pub(crate) enum Event<'p, 'a> {
    Period(&'p Period<'a>),
    /// A worker wait: from `t`, `dur` ticks.
    Wait {
        t: u64,
        dur: u64,
    },
}

/// A decoded record as a batch holds it.
#[derive(Clone, Copy)]
enum Entry {
    /// (period, first entry in `io`, entries, first read)
    Period(ScannedPeriod, u32, u32, Option<u64>),
    Wait {
        t: u64,
        dur: u64,
    },
}

impl Entry {
    fn start(&self) -> u64 {
        match self {
            Entry::Period(p, ..) => p.start,
            Entry::Wait { t, .. } => *t,
        }
    }
}

/// Owned periods (and waits, if asked for) of one log, in its order.
#[derive(Default)]
struct Batch {
    periods: Vec<Entry>,
    io: Vec<StreamIo>,
}

/// Fills `b` with up to [`BATCH`] periods (and worker waits if `waits`);
/// false when the log had none left.
fn fill(sc: &mut Scanner<'_>, b: &mut Batch, waits: bool) -> bool {
    b.periods.clear();
    b.io.clear();
    while b.periods.len() < BATCH {
        match sc.next() {
            Some(Item::Period(p)) => {
                let io = sc.io();
                let at = b.io.len() as u32;
                // One or two entries, mostly: pushed, not copied by a call.
                for e in io {
                    b.io.push(*e);
                }
                b.periods
                    .push(Entry::Period(p, at, io.len() as u32, first_read(sc)));
            }
            Some(Item::WorkerWait { t, dur }) if waits => b.periods.push(Entry::Wait { t, dur }),
            Some(_) => {}
            None => break,
        }
    }
    !b.periods.is_empty()
}

/// Where a log's periods come from.
enum Source<'a> {
    /// Decoded here (with worker waits or not).
    Inline(&'a WorkerLog, Box<Scanner<'a>>, Behind, bool),
    /// Decoded on a thread, received in batches.
    Thread(Receiver<Batch>),
}

struct Cursor<'a> {
    source: Source<'a>,
    /// Shared with the consumers of [`shared`], which read it too.
    batch: Arc<Batch>,
    /// The next period's index in `batch`.
    at: usize,
}

impl Cursor<'_> {
    /// Makes the next period available; false at the log's end. A new
    /// batch was taken when it returns true with `at == 0`.
    fn ready(&mut self) -> bool {
        if self.at < self.batch.periods.len() {
            return true;
        }
        self.at = 0;
        match &mut self.source {
            Source::Inline(w, sc, behind, waits) => {
                // The batch's buffers are refilled unless a consumer still
                // holds it.
                let mut b = Arc::try_unwrap(std::mem::take(&mut self.batch)).unwrap_or_default();
                let more = fill(sc, &mut b, *waits);
                self.batch = Arc::new(b);
                behind.advance(w, sc.offset());
                more
            }
            Source::Thread(rx) => match rx.recv() {
                Ok(b) => {
                    self.batch = Arc::new(b);
                    !self.batch.periods.is_empty()
                }
                Err(_) => {
                    self.batch = Arc::default();
                    false
                }
            },
        }
    }

    fn start(&self) -> u64 {
        self.batch.periods[self.at].start()
    }
}

/// What [`shared`] sends its consumers: a log's next batch (the merge
/// moved on to it), or the merged order of the events since the last
/// message, as log indices (each the next event of that log's batch).
#[derive(Clone)]
enum Msg {
    Batch(usize, Arc<Batch>),
    Order(Arc<Vec<u32>>),
}

/// Events per [`Msg::Order`].
const ORDER_BATCH: usize = 16 * 1024;

/// Messages in flight to each consumer of [`shared`].
const SHARED_IN_FLIGHT: usize = 8;

/// One consumer's view of a merged pass run by [`shared`]: it follows the
/// merge's order through the decoded batches it shares.
pub(crate) struct Feed {
    rx: Receiver<Msg>,
    logs: usize,
}

impl Feed {
    fn for_each_event(self, mut f: impl FnMut(usize, Event<'_, '_>)) {
        let mut batches: Vec<(Arc<Batch>, usize)> = vec![(Arc::default(), 0); self.logs];
        for m in self.rx.iter() {
            match m {
                Msg::Batch(i, b) => batches[i] = (b, 0),
                Msg::Order(order) => {
                    for &i in order.iter() {
                        let (b, at) = &mut batches[i as usize];
                        emit(i as usize, b, *at, &mut f);
                        *at += 1;
                    }
                }
            }
        }
    }
}

/// Hands `f` event `at` of log `i`'s batch `b`.
#[inline]
fn emit(i: usize, b: &Batch, at: usize, f: &mut impl FnMut(usize, Event<'_, '_>)) {
    match b.periods[at] {
        Entry::Period(p, from, len, first_read) => {
            let io = &b.io[from as usize..(from + len) as usize];
            f(i, Event::Period(&Period { p, io, first_read }));
        }
        Entry::Wait { t, dur } => f(i, Event::Wait { t, dur }),
    }
}

/// What the merge does with each batch it takes and each event in order.
trait Sink {
    fn batch(&mut self, i: usize, b: &Arc<Batch>);
    fn event(&mut self, i: usize, b: &Batch, at: usize);
}

/// Hands each event to a function.
struct Direct<F>(F);

impl<F: FnMut(usize, Event<'_, '_>)> Sink for Direct<F> {
    fn batch(&mut self, _: usize, _: &Arc<Batch>) {}

    #[inline]
    fn event(&mut self, i: usize, b: &Batch, at: usize) {
        emit(i, b, at, &mut self.0)
    }
}

/// Sends the batches and the order to the consumers of [`shared`].
struct Tee {
    txs: Vec<Option<SyncSender<Msg>>>,
    order: Vec<u32>,
}

impl Tee {
    fn send(&mut self, m: Msg) {
        for tx in self.txs.iter_mut() {
            // A closed feed: that consumer has stopped reading.
            if tx.as_ref().is_some_and(|t| t.send(m.clone()).is_err()) {
                *tx = None;
            }
        }
    }

    fn flush(&mut self) {
        if !self.order.is_empty() {
            let order = std::mem::replace(&mut self.order, Vec::with_capacity(ORDER_BATCH));
            self.send(Msg::Order(Arc::new(order)));
        }
    }
}

impl Sink for Tee {
    fn batch(&mut self, i: usize, b: &Arc<Batch>) {
        // The order so far refers to the log's previous batch.
        self.flush();
        self.send(Msg::Batch(i, Arc::clone(b)));
    }

    #[inline]
    fn event(&mut self, i: usize, _: &Batch, _: usize) {
        self.order.push(i as u32);
        if self.order.len() >= ORDER_BATCH {
            self.flush();
        }
    }
}

/// Where a pass takes its merged events from: a merged pass of its own over
/// the run, or its share of one that several passes read ([`shared`]).
pub(crate) enum Events<'r> {
    Run(&'r RunLog),
    Feed(Feed),
}

impl Events<'_> {
    /// [`for_each_event`] over this source.
    pub(crate) fn for_each_event(self, waits: bool, mut f: impl FnMut(usize, Event<'_, '_>)) {
        match self {
            Events::Run(run) => for_each_event(run, waits, f),
            Events::Feed(feed) => feed.for_each_event(|i, e| {
                if waits || matches!(e, Event::Period(_)) {
                    f(i, e)
                }
            }),
        }
    }
}

/// A pass reading its share of a merged pass ([`shared`]).
pub(crate) type Consumer<'s> = Box<dyn FnOnce(Events<'_>) + Send + 's>;

/// Runs the `consumers` side by side, each on a thread of its own, over
/// one merged pass of `run`'s periods and worker waits: the logs are
/// decoded and merged once (here, with the decoders of
/// [`for_each_event`]); all read the same decoded batches, following the
/// merge's order (at most [`SHARED_IN_FLIGHT`] messages ahead of the
/// slowest). A consumer that stops reading its feed (dropping it) no longer
/// gets messages; the others go on. A panic in one is raised here once all
/// have ended.
pub(crate) fn shared(run: &RunLog, consumers: Vec<Consumer<'_>>) {
    std::thread::scope(|s| {
        let logs = run.workers.len();
        let mut txs = Vec::new();
        let handles: Vec<_> = consumers
            .into_iter()
            .map(|c| {
                let (tx, rx) = sync_channel::<Msg>(SHARED_IN_FLIGHT);
                txs.push(Some(tx));
                s.spawn(move || c(Events::Feed(Feed { rx, logs })))
            })
            .collect();
        let mut tee = Tee {
            txs,
            order: Vec::with_capacity(ORDER_BATCH),
        };
        merged(run, threaded(run), true, &mut tee);
        tee.flush();
        drop(tee);
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        for r in results {
            if let Err(e) = r {
                std::panic::resume_unwind(e);
            }
        }
    })
}

/// Hands `f` every period of every log of `run` in the merged order (see
/// the module documentation), with the index of its log in `run.workers`,
/// and each log's worker waits among its periods (in the log's order,
/// merged by their start) if `waits`.
pub(crate) fn for_each_event(run: &RunLog, waits: bool, f: impl FnMut(usize, Event<'_, '_>)) {
    merged(run, threaded(run), waits, &mut Direct(f));
}

/// Whether the logs are decoded on threads of their own.
fn threaded(run: &RunLog) -> bool {
    let spare = std::thread::available_parallelism().map_or(1, |n| n.get()) > 1;
    spare && run.workers.len() <= MAX_THREADS
}

/// The merge: hands `sink` each batch it takes and each event in the
/// merged order, decoding on threads or not.
fn merged(run: &RunLog, threaded: bool, waits: bool, sink: &mut impl Sink) {
    std::thread::scope(|s| {
        let mut cursors: Vec<Cursor<'_>> = run
            .workers
            .iter()
            .map(|w| {
                let source = if threaded {
                    let (tx, rx) = sync_channel::<Batch>(IN_FLIGHT);
                    let mut sc = w.scanner();
                    s.spawn(move || {
                        let mut behind = Behind::default();
                        loop {
                            let mut b = Batch::default();
                            let more = fill(&mut sc, &mut b, waits);
                            behind.advance(w, sc.offset());
                            // A closed channel: the merge stopped (or ended).
                            if !more || tx.send(b).is_err() {
                                break;
                            }
                        }
                    });
                    Source::Thread(rx)
                } else {
                    Source::Inline(w, Box::new(w.scanner()), Behind::default(), waits)
                };
                Cursor {
                    source,
                    batch: Arc::default(),
                    at: 0,
                }
            })
            .collect();
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        for (i, c) in cursors.iter_mut().enumerate() {
            if c.ready() {
                sink.batch(i, &c.batch);
                heap.push(Reverse((c.start(), i)));
            }
        }
        while let Some(Reverse((_, i))) = heap.pop() {
            let c = &mut cursors[i];
            sink.event(i, &c.batch, c.at);
            c.at += 1;
            if c.ready() {
                if c.at == 0 {
                    sink.batch(i, &c.batch);
                }
                heap.push(Reverse((c.start(), i)));
            }
        }
        // The receivers go here, before the scope waits for the decoders.
        drop(cursors);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_log::{Calibration, Encoder, EndState, Header, LogWriter, MonitorFlags, PeriodRef};

    /// The same order, entries and first reads with and without threads,
    /// over batch boundaries, equal start times and a log with no periods.
    #[test]
    fn threads_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cal = Calibration::nanos();
        for w in 0..3u32 {
            let header = Header::new(MonitorFlags::FULL, w, 3, cal);
            let mut out = LogWriter::create(dir.path(), w, &header).unwrap();
            let mut enc = Encoder::new();
            enc.worker_start(&mut out, 0);
            let n = if w == 2 { 0 } else { 3 * BATCH as u64 + 7 };
            for k in 0..n {
                let io = [StreamIo {
                    stream: 100 + k % 3,
                    reads: (k % 2) as u32,
                    writes: 1,
                    woke_peer: k % 5 == 0,
                }];
                // Worker 1 starts every other period at worker 0's times.
                let start = k * 10 + u64::from(w) * (k % 2);
                enc.period(
                    &mut out,
                    &PeriodRef {
                        start,
                        end: start + 5,
                        task: u64::from(w) * 1000 + k % 4,
                        end_state: EndState::Yielded,
                        io: &io,
                        ops: &[],
                        op_times: &[],
                    },
                );
                if k % 7 == 3 {
                    enc.worker_wait(&mut out, start + 6, 2);
                }
            }
            enc.worker_end(&mut out, 1_000_000);
            out.finish().unwrap();
        }
        let run = crate::replay::load_run::load_run(dir.path()).unwrap();
        let seq = |threaded: bool, waits: bool| {
            let mut v = Vec::new();
            merged(
                &run,
                threaded,
                waits,
                &mut Direct(|i, e: Event<'_, '_>| match e {
                    Event::Period(p) => {
                        v.push((i, p.p.start, p.p.task, p.io.to_vec(), p.first_read))
                    }
                    Event::Wait { t, dur } => v.push((i, t, dur, Vec::new(), None)),
                }),
            );
            v
        };
        let (a, b) = (seq(true, false), seq(false, false));
        assert_eq!(a.len(), 2 * (3 * BATCH + 7));
        assert!(a.windows(2).all(|w| (w[0].1, w[0].0) <= (w[1].1, w[1].0)));
        assert_eq!(a, b);
        // With the waits: each log's in its order among its periods.
        let (c, d) = (seq(true, true), seq(false, true));
        let waits = (0..3 * BATCH + 7).filter(|k| k % 7 == 3).count();
        assert_eq!(c.len(), a.len() + 2 * waits);
        assert!(c.windows(2).all(|w| (w[0].1, w[0].0) <= (w[1].1, w[1].0)));
        assert_eq!(c, d);
        let periods: Vec<_> = c.iter().filter(|e| e.3.len() == 1).cloned().collect();
        assert_eq!(periods, a, "the periods as without the waits");
        // Two consumers of one shared pass see what a pass of their own
        // sees, with or without the waits; one that drops its feed at once
        // leaves the other its whole pass.
        let collect = |ev: Events<'_>, waits: bool| {
            let mut v = Vec::new();
            ev.for_each_event(waits, |i, e| match e {
                Event::Period(p) => v.push((i, p.p.start, p.p.task, p.io.to_vec(), p.first_read)),
                Event::Wait { t, dur } => v.push((i, t, dur, Vec::new(), None)),
            });
            v
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        shared(
            &run,
            vec![
                Box::new(|ev| x = collect(ev, true)),
                Box::new(|ev| y = collect(ev, false)),
            ],
        );
        assert_eq!((&x, &y), (&c, &a));
        let mut z = Vec::new();
        shared(
            &run,
            vec![
                Box::new(|ev| z = collect(ev, true)),
                Box::new(|ev: Events<'_>| drop(ev)),
            ],
        );
        assert_eq!(z, c);
    }
}
