//! A log's *feed* to the latency replay: its periods in a compact word
//! form, made by the thread that scans the log ([`FeedTx`], a
//! [`PeriodFeed`] of the load's scan) and read by the replay ([`FeedRx`]).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::load::scan::{Item, OpsKind, ScannedPeriod, Scanner};
use crate::load::scan_file::PeriodFeed;

/// Words per feed chunk.
const CHUNK: usize = 1 << 15;
/// Chunks in flight per log.
const IN_FLIGHT: usize = 4;

/// Words a feed chunk keeps beyond [`CHUNK`]: room for one common period.
const SLACK: usize = 64;

/// The sending end of a log's *feed*: its periods in a compact word form,
/// produced by the thread that scans the log and consumed by the replay, so
/// that the replay's thread decodes no varints.
pub(crate) struct FeedTx {
    tx: SyncSender<Vec<u64>>,
    back: Receiver<Vec<u64>>,
    /// The chunk being filled: its first `used` words; it is kept at least
    /// `CHUNK + SLACK` words long (zeros past `used`), so that the common
    /// period is written in place without capacity checks.
    buf: Vec<u64>,
    used: usize,
}

/// The receiving end of a feed.
pub(crate) struct FeedRx {
    rx: Receiver<Vec<u64>>,
    back: SyncSender<Vec<u64>>,
    buf: Vec<u64>,
    pos: usize,
}

/// A new feed.
pub(crate) fn feed() -> (FeedTx, FeedRx) {
    let (tx, rx) = sync_channel(IN_FLIGHT);
    let (back_tx, back_rx) = sync_channel(IN_FLIGHT + 2);
    (
        FeedTx {
            tx,
            back: back_rx,
            buf: vec![0; CHUNK + SLACK],
            used: 0,
        },
        FeedRx {
            rx,
            back: back_tx,
            buf: Vec::new(),
            pos: 0,
        },
    )
}

impl PeriodFeed for FeedTx {
    fn period(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>) {
        FeedTx::period(self, p, sc);
    }
    fn finish(self) {
        FeedTx::finish(self);
    }
}

impl FeedTx {
    /// Appends a period: `start, dur, task, n_ops << 32 | n_times`, then per op
    /// `stream, count << 1 | write`, then the message times.
    #[inline(always)]
    pub(crate) fn period(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>) {
        let io = sc.io();
        let common = matches!(
            (io, sc.op_times(), sc.ops_kind()),
            ([] | [_] | [_, _], [], OpsKind::None | OpsKind::Implied)
        );
        // At most four implied ops, no times: written in place. (Words built
        // on the stack and copied as vectors stall on store forwarding.)
        let room = self
            .buf
            .get_mut(self.used..)
            .and_then(|b| b.first_chunk_mut::<12>());
        match (common, room) {
            (true, Some(w)) => {
                w[0] = p.start;
                w[1] = p.dur();
                w[2] = p.task;
                let mut k = 4;
                for s in io {
                    if s.reads > 0 {
                        w[k] = s.stream;
                        w[k + 1] = u64::from(s.reads) << 1;
                        k += 2;
                    }
                    if s.writes > 0 {
                        w[k] = s.stream;
                        w[k + 1] = u64::from(s.writes) << 1 | 1;
                        k += 2;
                    }
                }
                w[3] = ((k as u64 - 4) / 2) << 32;
                self.used += k;
            }
            _ => self.period_general(p, sc),
        }
        if self.used >= CHUNK {
            self.flush();
        }
    }

    /// [`period`](Self::period) for any period.
    #[inline(never)]
    fn period_general(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>) {
        let io = sc.io();
        let times = sc.op_times();
        let times = &times[..times.len().min(u32::MAX as usize)];
        let head = self.used;
        for w in [p.start, p.dur(), p.task, times.len() as u64] {
            self.put(w);
        }
        let mut n = 0u64;
        sc.for_each_op(|op| {
            self.put(io[usize::from(op.io_index)].stream);
            self.put(u64::from(op.count) << 1 | u64::from(op.write));
            n += 1;
        });
        self.buf[head + 3] |= n << 32;
        for &t in times {
            self.put(t);
        }
    }

    #[inline]
    fn put(&mut self, w: u64) {
        match self.buf.get_mut(self.used) {
            Some(slot) => *slot = w,
            None => self.buf.push(w),
        }
        self.used += 1;
    }

    fn flush(&mut self) {
        let mut next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + SLACK));
        // Old words past `used` are never read: no need to clear them.
        next.resize(next.len().max(CHUNK + SLACK), 0);
        let mut full = std::mem::replace(&mut self.buf, next);
        full.truncate(self.used);
        self.used = 0;
        // An error means the replay is gone (it panicked): drop the data.
        let _ = self.tx.send(full);
    }

    /// Sends what is left; dropping the sender ends the feed.
    pub(crate) fn finish(mut self) {
        if self.used > 0 {
            self.flush();
        }
    }
}

impl FeedRx {
    /// The next period's start, or `None` at the end of the feed.
    #[inline]
    pub(crate) fn peek_start(&mut self) -> Option<u64> {
        match self.buf.get(self.pos) {
            Some(&s) => Some(s),
            None => self.refill(),
        }
    }

    /// Takes the next chunk; its first period's start.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Option<u64> {
        let next = self.rx.recv().ok()?;
        let old = std::mem::replace(&mut self.buf, next);
        let _ = self.back.try_send(old);
        self.pos = 0;
        self.buf.first().copied()
    }

    /// The next period's words (after [`peek_start`](Self::peek_start) said there is one).
    #[inline]
    pub(crate) fn take(&mut self) -> &[u64] {
        let h = self.buf[self.pos + 3];
        let len = 4 + 2 * (h >> 32) as usize + (h & 0xffff_ffff) as usize;
        let w = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        w
    }
}

/// Feeds a log's periods (from `sc`) into `tx`.
pub(crate) fn feed_from(mut sc: Scanner<'_>, mut tx: FeedTx) {
    while let Some(item) = sc.next() {
        if let Item::Period(p) = item {
            tx.period(&p, &sc);
        }
    }
    tx.finish();
}
