//! The read side's core: a borrowing, allocation-free record scanner.
//!
//! [`Scanner`] decodes one record per [`next`](Scanner::next) call into a
//! small [`Item`] that borrows from the data (task names) and from the
//! scanner (a period's lists, which stay valid until the next call). It
//! reuses its buffers, so scanning a log of any length allocates only as
//! much as its largest period needs. The owning [`Decoder`](crate::Decoder)
//! is built on it, and so are the analyses in `rill-mon`: the format is
//! decoded in this one place.
//!
//! Damaged data stops the scan: [`next`](Scanner::next) returns `None` and
//! [`end_reason`](Scanner::end_reason) says where and why. The scanner
//! never panics, always advances, and bounds every count by the bytes left
//! (an interleaved period by [`MAX_INTERLEAVED`]).

use crate::error::{DecodeErrorKind, EndReason};
use crate::record::{EndState, Op, Record, SampleWindow, Side, StreamIo, MAX_INTERLEAVED};
use crate::tag;
use crate::varint::{self, unzigzag};

/// One scanned record. A period's lists live in the [`Scanner`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// `WorkerStart`.
    WorkerStart {
        /// When.
        t: u64,
    },
    /// `WorkerWait`.
    WorkerWait {
        /// When the wait began.
        t: u64,
        /// How long it lasted.
        dur: u64,
    },
    /// `WorkerEnd`.
    WorkerEnd {
        /// When.
        t: u64,
    },
    /// `TaskAssign`.
    TaskAssign {
        /// When.
        t: u64,
        /// The task.
        task: u64,
        /// Its creator (0 = none).
        parent: u64,
        /// The worker it was mapped to.
        worker: u32,
        /// Its name (borrowed from the log data).
        name: &'a str,
    },
    /// `TaskMigrate`.
    TaskMigrate {
        /// When.
        t: u64,
        /// The task.
        task: u64,
        /// Old worker.
        from: u32,
        /// New worker.
        to: u32,
    },
    /// `StreamOpen`.
    StreamOpen {
        /// When.
        t: u64,
        /// The stream.
        stream: u64,
        /// Its capacity.
        capacity: u32,
        /// The creating task.
        creator: u64,
    },
    /// `StreamName`.
    StreamName {
        /// When.
        t: u64,
        /// The stream.
        stream: u64,
        /// Its name (borrowed from the log data).
        name: &'a str,
    },
    /// `StreamBind`.
    StreamBind {
        /// When.
        t: u64,
        /// The stream.
        stream: u64,
        /// Which end.
        side: Side,
        /// The task.
        task: u64,
    },
    /// `StreamClose`.
    StreamClose {
        /// When.
        t: u64,
        /// The stream.
        stream: u64,
        /// Which end.
        side: Side,
    },
    /// `StreamReplace`.
    StreamReplace {
        /// When.
        t: u64,
        /// Which end.
        side: Side,
        /// Replaced stream.
        old: u64,
        /// Replacement.
        new: u64,
    },
    /// `TaskTotals`.
    TaskTotals {
        /// When.
        t: u64,
        /// The task.
        task: u64,
        /// Its dispatches.
        dispatches: u64,
    },
    /// `StreamTotals`.
    StreamTotals {
        /// When.
        t: u64,
        /// The stream.
        stream: u64,
        /// Which end.
        side: Side,
        /// Messages the end moved.
        messages: u64,
        /// Times it waited.
        waits: u64,
    },
    /// `WorkerTotals`.
    WorkerTotals {
        /// When.
        t: u64,
        /// Task dispatches.
        dispatches: u64,
        /// Spins before a block.
        spins: u64,
        /// Times the worker ran out of tasks.
        idles: u64,
        /// Times it went to sleep.
        parks: u64,
    },
    /// `Samples`: its task list is [`Scanner::sample_tasks`].
    Samples(ScannedSamples),
    /// `Period`: its lists are [`Scanner::io`], [`Scanner::ops`] (or
    /// [`Scanner::for_each_op`]) and [`Scanner::op_times`].
    Period(ScannedPeriod),
}

/// The fixed fields of a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScannedPeriod {
    /// Dispatch time (ticks).
    pub start: u64,
    /// Stop time (ticks).
    pub end: u64,
    /// The task.
    pub task: u64,
    /// Why it stopped.
    pub end_state: EndState,
}

impl ScannedPeriod {
    /// `end - start`, 0 if the clock went backwards.
    pub fn dur(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// The fixed fields of a window of samples (see
/// [`SampleWindow`](crate::SampleWindow), which adds the task list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScannedSamples {
    /// The window's start (ticks).
    pub t: u64,
    /// Its length (ticks).
    pub dur: u64,
    /// The worker sampled.
    pub worker: u32,
    /// Samples in the window.
    pub total: u32,
    /// Timer signals behind them (see
    /// [`SampleWindow::signals`](crate::SampleWindow)).
    pub signals: u32,
    /// Samples between tasks.
    pub sched: u32,
    /// Samples of a task spinning before a block.
    pub spin: u32,
    /// Samples of the worker idle and awake.
    pub idle: u32,
    /// Samples of the worker asleep.
    pub parked: u32,
}

/// How a period stored its op order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpsKind {
    /// Not at all (the period's ops are taken to be the implied ones).
    None,
    /// The [`implied_ops`](crate::implied_ops) of its entries.
    Implied,
    /// The [`interleaved_ops`](crate::interleaved_ops) of its entries.
    Interleaved,
    /// Listed op by op.
    Listed,
}

/// Record scanner over a log's bytes (see the module documentation).
#[derive(Clone, Debug)]
pub struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    last: u64,
    io: Vec<StreamIo>,
    /// Listed ops, or (once [`ops`](Self::ops) expanded them) the implied or
    /// interleaved ones.
    ops: Vec<Op>,
    op_times: Vec<u64>,
    kind: OpsKind,
    /// `ops` holds the period's ops (listed, or expanded).
    ops_ready: bool,
    /// An interleaved period's two runs, one message each.
    pair: (Op, Op),
    /// Length of an interleaved period's op list.
    pair_len: u32,
    /// The last `Samples` record's (task, samples) list.
    samples: Vec<(u64, u32)>,
    end: Option<EndReason>,
}

type R<T> = Result<T, DecodeErrorKind>;

impl<'a> Scanner<'a> {
    /// A scanner over `data` starting at byte `pos` (the first record, after
    /// the header) with the time base 0. Offsets are offsets into `data`.
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Scanner {
            data,
            pos,
            last: 0,
            io: Vec::new(),
            ops: Vec::new(),
            op_times: Vec::new(),
            kind: OpsKind::None,
            ops_ready: false,
            pair: (Op::read(0, 0), Op::read(0, 0)),
            pair_len: 0,
            samples: Vec::new(),
            end: None,
        }
    }

    /// A scanner over `data` starting at byte `pos` with the time base
    /// `last`: it goes on where another scan of the same log stopped, whose
    /// [`offset`](Self::offset) was `pos` and [`last_time`](Self::last_time)
    /// `last` (a log read piece by piece as it grows; `data` may hold only
    /// the bytes from that record on, `pos` then being 0).
    pub fn resume(data: &'a [u8], pos: usize, last: u64) -> Self {
        let mut sc = Self::new(data, pos);
        sc.last = last;
        sc
    }

    /// Offset of the next record; after the end, where scanning stopped
    /// (the start of the damaged record, if any).
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// The previous record's time, which the next one is relative to.
    pub fn last_time(&self) -> u64 {
        self.last
    }

    /// Why scanning stopped, once it has.
    pub fn end_reason(&self) -> Option<&EndReason> {
        self.end.as_ref()
    }

    /// Where the damaged record starts, if scanning stopped at one.
    pub fn damaged_at(&self) -> Option<u64> {
        match self.end {
            Some(EndReason::Damaged { offset, .. }) => Some(offset),
            _ => None,
        }
    }

    /// The last period's stream entries.
    #[inline]
    pub fn io(&self) -> &[StreamIo] {
        &self.io
    }

    /// How the last period stored its op order.
    #[inline]
    pub fn ops_kind(&self) -> OpsKind {
        self.kind
    }

    /// Whether the last period stored an op order (implied, interleaved or
    /// listed) rather than none at all.
    #[inline]
    pub fn ops_recorded(&self) -> bool {
        self.kind != OpsKind::None
    }

    /// The last period's ops: listed ones, or the implied or interleaved ops
    /// of its entries; when the period stored none, its implied ops. Expands
    /// them on the first call per period ([`for_each_op`](Self::for_each_op)
    /// walks them without that).
    pub fn ops(&mut self) -> &[Op] {
        if !self.ops_ready {
            self.ops_ready = true;
            self.ops.clear();
            let ops = &mut self.ops;
            match self.kind {
                OpsKind::Listed => {}
                OpsKind::None | OpsKind::Implied => implied(&self.io, |op| ops.push(op)),
                OpsKind::Interleaved => interleave(self.pair, self.pair_len, |op| ops.push(op)),
            }
        }
        &self.ops
    }

    /// Calls `f` with each of the ops [`ops`](Self::ops) lists, in order,
    /// without expanding them into a buffer.
    #[inline]
    pub fn for_each_op(&self, f: impl FnMut(Op)) {
        match self.kind {
            OpsKind::None | OpsKind::Implied => implied(&self.io, f),
            OpsKind::Interleaved => interleave(self.pair, self.pair_len, f),
            OpsKind::Listed => self.ops.iter().copied().for_each(f),
        }
    }

    /// The first read among the ops [`ops`](Self::ops) lists, if any, as
    /// [`for_each_op`](Self::for_each_op) would meet it, without going
    /// through the others.
    #[inline]
    pub fn first_read_op(&self) -> Option<Op> {
        match self.kind {
            OpsKind::None | OpsKind::Implied => self
                .io
                .iter()
                .position(|s| s.reads > 0)
                .map(|i| Op::read(i as u16, self.io[i].reads)),
            OpsKind::Interleaved => {
                let (a, b) = self.pair;
                [(a, 1), (b, 2)]
                    .into_iter()
                    .find(|(op, at_least)| !op.write && self.pair_len >= *at_least)
                    .map(|(op, _)| op)
            }
            OpsKind::Listed => self.ops.iter().copied().find(|op| !op.write),
        }
    }

    /// The number of ops [`ops`](Self::ops) lists.
    #[inline]
    pub fn op_count(&self) -> usize {
        match self.kind {
            OpsKind::None | OpsKind::Implied => self
                .io
                .iter()
                .map(|s| usize::from(s.reads > 0) + usize::from(s.writes > 0))
                .sum(),
            OpsKind::Interleaved => self.pair_len as usize,
            OpsKind::Listed => self.ops.len(),
        }
    }

    /// The last `Samples` record's tasks and their samples, ascending by task.
    #[inline]
    pub fn sample_tasks(&self) -> &[(u64, u32)] {
        &self.samples
    }

    /// The last period's per-message times (empty unless recorded).
    #[inline]
    pub fn op_times(&self) -> &[u64] {
        &self.op_times
    }

    /// The next record, or `None` at the end of the data, a zero tag or a
    /// damaged record (then [`end_reason`](Self::end_reason) says why).
    ///
    /// Always inlined (with the period path), so that the caller's match on
    /// the item folds into the decoding; other records are out of line.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // not an Iterator: periods borrow the scanner
    pub fn next(&mut self) -> Option<Item<'a>> {
        if self.end.is_some() {
            return None;
        }
        let tag = match self.data.get(self.pos) {
            None | Some(0) => {
                self.end = Some(EndReason::Clean);
                return None;
            }
            Some(&t) => t,
        };
        let mut c = Cur {
            d: self.data,
            p: self.pos + 1,
        };
        let last = self.last;
        // Each path builds its own `Some(item)`: converting a built
        // `Result<Item, _>` copies the item through memory with wide loads
        // that stall on the narrow stores that just wrote it.
        if tag & tag::PERIOD != 0 {
            match self.period(&mut c, tag) {
                Ok(head) => {
                    self.pos = c.p;
                    Some(Item::Period(head))
                }
                Err(reason) => self.damaged(last, reason),
            }
        } else {
            match self.other(&mut c, tag) {
                Ok(item) => {
                    self.pos = c.p;
                    Some(item)
                }
                Err(reason) => self.damaged(last, reason),
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn damaged(&mut self, last: u64, reason: DecodeErrorKind) -> Option<Item<'a>> {
        self.last = last;
        self.end = Some(EndReason::Damaged {
            offset: self.pos as u64,
            reason,
        });
        None
    }

    #[inline(always)]
    fn time(&mut self, c: &mut Cur<'a>) -> R<u64> {
        self.last = self.last.wrapping_add(unzigzag(c.var()?) as u64);
        Ok(self.last)
    }

    /// A record other than a period.
    #[inline(never)]
    fn other(&mut self, c: &mut Cur<'a>, tag: u8) -> R<Item<'a>> {
        Ok(match tag {
            tag::WORKER_START => Item::WorkerStart { t: self.time(c)? },
            tag::WORKER_WAIT => {
                let t = self.time(c)?;
                let dur = c.var()?;
                self.last = t.wrapping_add(dur);
                Item::WorkerWait { t, dur }
            }
            tag::WORKER_END => Item::WorkerEnd { t: self.time(c)? },
            tag::TASK_ASSIGN => {
                let t = self.time(c)?;
                let task = c.var()?;
                let parent = c.var()?;
                let worker = c.u32("worker")?;
                let len = c.count(1)?;
                let bytes = c.bytes(len)?;
                let name = std::str::from_utf8(bytes).map_err(|_| DecodeErrorKind::BadUtf8)?;
                Item::TaskAssign {
                    t,
                    task,
                    parent,
                    worker,
                    name,
                }
            }
            tag::TASK_MIGRATE => Item::TaskMigrate {
                t: self.time(c)?,
                task: c.var()?,
                from: c.u32("from worker")?,
                to: c.u32("to worker")?,
            },
            tag::STREAM_NAME => {
                let t = self.time(c)?;
                let stream = c.var()?;
                let len = c.count(1)?;
                let bytes = c.bytes(len)?;
                let name = std::str::from_utf8(bytes).map_err(|_| DecodeErrorKind::BadUtf8)?;
                Item::StreamName { t, stream, name }
            }
            tag::STREAM_OPEN => Item::StreamOpen {
                t: self.time(c)?,
                stream: c.var()?,
                capacity: c.u32("capacity")?,
                creator: c.var()?,
            },
            t @ (tag::STREAM_BIND | tag::STREAM_BIND_W) => Item::StreamBind {
                t: self.time(c)?,
                stream: c.var()?,
                task: c.var()?,
                side: tag::side(t),
            },
            t @ (tag::STREAM_CLOSE | tag::STREAM_CLOSE_W) => Item::StreamClose {
                t: self.time(c)?,
                stream: c.var()?,
                side: tag::side(t),
            },
            t @ (tag::STREAM_REPLACE | tag::STREAM_REPLACE_W) => Item::StreamReplace {
                t: self.time(c)?,
                old: c.var()?,
                new: c.var()?,
                side: tag::side(t),
            },
            tag::TASK_TOTALS => Item::TaskTotals {
                t: self.time(c)?,
                task: c.var()?,
                dispatches: c.var()?,
            },
            t @ (tag::STREAM_TOTALS | tag::STREAM_TOTALS_W) => Item::StreamTotals {
                t: self.time(c)?,
                stream: c.var()?,
                messages: c.var()?,
                waits: c.var()?,
                side: tag::side(t),
            },
            tag::WORKER_TOTALS => Item::WorkerTotals {
                t: self.time(c)?,
                dispatches: c.var()?,
                spins: c.var()?,
                idles: c.var()?,
                parks: c.var()?,
            },
            tag::SAMPLES => Item::Samples(self.samples(c, false)?),
            tag::SAMPLES_SIGNALS => Item::Samples(self.samples(c, true)?),
            t => return Err(DecodeErrorKind::UnknownTag(t)),
        })
    }

    /// A `Samples` record after its tag (with its signal count when
    /// `signals`, version 5); its task list goes to `samples`.
    fn samples(&mut self, c: &mut Cur<'a>, signals: bool) -> R<ScannedSamples> {
        let t = self.time(c)?;
        let dur = c.var()?;
        self.last = t.wrapping_add(dur);
        let worker = c.u32("worker")?;
        let total = c.u32("samples")?;
        let signals = if signals { c.u32("signals")? } else { total };
        let head = ScannedSamples {
            t,
            dur,
            worker,
            total,
            signals,
            sched: c.u32("samples")?,
            spin: c.u32("samples")?,
            idle: c.u32("samples")?,
            parked: c.u32("samples")?,
        };
        let n = c.count(2)?;
        self.samples.clear();
        let mut task = 0u64;
        for _ in 0..n {
            task = task.wrapping_add(c.var()?);
            self.samples.push((task, c.u32("samples")?));
        }
        Ok(head)
    }

    /// A period (`tag` has the period bit).
    #[inline(always)]
    fn period(&mut self, c: &mut Cur<'a>, tag_byte: u8) -> R<ScannedPeriod> {
        let start = self.time(c)?;
        let end_code = tag_byte & 7;
        let io_code = (tag_byte >> 3) & 3;
        let mode = (tag_byte >> 5) & 3;
        let dur = c.var()?;
        let end = start.wrapping_add(dur);
        let task = c.var()?;
        // Each entry takes at least 2 bytes (header + stream).
        let nio = if io_code < 3 {
            usize::from(io_code)
        } else {
            c.count(2)?
        };
        let blocked = matches!(end_code, 1 | 2);
        let mut mark = None;
        self.io.clear();
        for _ in 0..nio {
            let h = c.byte()?;
            let stream = c.var()?;
            if h & 0x80 != 0 {
                if !blocked || mark.is_some() {
                    return Err(DecodeErrorKind::ReservedBits("stream entry header"));
                }
                mark = Some(stream);
            }
            let rc = (h >> 1) & 7;
            let wc = (h >> 4) & 7;
            let reads = if rc == 7 { c.u32("reads")? } else { rc.into() };
            let writes = if wc == 7 { c.u32("writes")? } else { wc.into() };
            self.io.push(StreamIo {
                stream,
                reads,
                writes,
                woke_peer: h & 1 != 0,
            });
        }
        let blocked_on = match (blocked, mark) {
            (false, _) => 0,
            (true, Some(stream)) => stream,
            (true, None) => c.var()?,
        };
        let end_state = EndState::from_code(end_code, blocked_on)
            .ok_or(DecodeErrorKind::BadEndState(end_code))?;
        self.ops_ready = false;
        self.op_times.clear();
        match mode {
            tag::OPS_NONE => self.kind = OpsKind::None,
            tag::OPS_IMPLIED => self.kind = OpsKind::Implied,
            tag::OPS_INTERLEAVED => self.interleaved()?,
            _ => self.listed(c, start)?,
        }
        self.last = end;
        Ok(ScannedPeriod {
            start,
            end,
            task,
            end_state,
        })
    }

    /// Ops mode 3: the ops header, then listed ops and times.
    fn listed(&mut self, c: &mut Cur<'a>, start: u64) -> R<()> {
        let h = c.var()?;
        match (h >> 1) & 3 {
            tag::FORM_EXPLICIT => {
                let n = c.count_of(h >> 3, 1)?;
                self.read_ops(c, n)?;
            }
            form if h >> 3 != 0 || form == 3 => {
                return Err(DecodeErrorKind::ReservedBits("listed ops header"))
            }
            tag::FORM_IMPLIED => self.kind = OpsKind::Implied,
            _ => self.interleaved()?,
        }
        if h & 1 != 0 {
            let nt = c.count(1)?;
            // Reserve little: the count is bounded by the bytes left, not by
            // what a damaged record's neighbourhood justifies.
            self.op_times.reserve(nt.min(256));
            let mut prev = start;
            for _ in 0..nt {
                prev = prev.wrapping_add(unzigzag(c.var()?) as u64);
                self.op_times.push(prev);
            }
        }
        Ok(())
    }

    /// Checks that the entries hold two runs that interleave (see
    /// [`interleaved_ops`](crate::interleaved_ops)) and keeps them.
    fn interleaved(&mut self) -> R<()> {
        let mut runs = [Op::read(0, 0); 2];
        let mut n = 0;
        for (i, s) in self.io.iter().enumerate() {
            let i = u16::try_from(i).map_err(|_| DecodeErrorKind::NotInterleaved)?;
            for op in [Op::read(i, s.reads), Op::write(i, s.writes)] {
                if op.count > 0 {
                    *runs.get_mut(n).ok_or(DecodeErrorKind::NotInterleaved)? = op;
                    n += 1;
                }
            }
        }
        let [a, b] = runs;
        let total = u64::from(a.count) + u64::from(b.count);
        if n != 2
            || !(a.count == b.count || a.count == b.count.wrapping_add(1))
            || total > u64::from(MAX_INTERLEAVED)
        {
            return Err(DecodeErrorKind::NotInterleaved);
        }
        self.kind = OpsKind::Interleaved;
        self.pair = (Op { count: 1, ..a }, Op { count: 1, ..b });
        self.pair_len = total as u32;
        Ok(())
    }

    fn read_ops(&mut self, c: &mut Cur<'a>, n: usize) -> R<()> {
        self.kind = OpsKind::Listed;
        self.ops_ready = true;
        self.ops.clear();
        self.ops.reserve(n.min(256));
        let nio = self.io.len();
        for _ in 0..n {
            let b = c.byte()?;
            let op = if b & 0x80 == 0 {
                Op {
                    io_index: u16::from(b & 7),
                    write: b & 8 != 0,
                    count: u32::from(b >> 4) + 1,
                }
            } else {
                if b & 0x7e != 0 {
                    return Err(DecodeErrorKind::ReservedBits("op header"));
                }
                Op {
                    write: b & 1 != 0,
                    io_index: c.u16("op stream index")?,
                    count: c.u32("op count")?,
                }
            };
            if usize::from(op.io_index) >= nio {
                return Err(DecodeErrorKind::BadIndex {
                    field: "op",
                    index: op.io_index.into(),
                    len: nio,
                });
            }
            self.ops.push(op);
        }
        Ok(())
    }

    /// The owned form of `item`, the record just scanned. Moves the period's
    /// lists out of the scanner (they are the record's now).
    pub fn to_record(&mut self, item: Item<'_>) -> Record {
        match item {
            Item::WorkerStart { t } => Record::WorkerStart { t },
            Item::WorkerWait { t, dur } => Record::WorkerWait { t, dur },
            Item::WorkerEnd { t } => Record::WorkerEnd { t },
            Item::TaskAssign {
                t,
                task,
                parent,
                worker,
                name,
            } => Record::TaskAssign {
                t,
                task,
                parent,
                worker,
                name: name.to_owned(),
            },
            Item::TaskMigrate { t, task, from, to } => Record::TaskMigrate { t, task, from, to },
            Item::StreamOpen {
                t,
                stream,
                capacity,
                creator,
            } => Record::StreamOpen {
                t,
                stream,
                capacity,
                creator,
            },
            Item::StreamName { t, stream, name } => Record::StreamName {
                t,
                stream,
                name: name.to_owned(),
            },
            Item::StreamBind {
                t,
                stream,
                side,
                task,
            } => Record::StreamBind {
                t,
                stream,
                side,
                task,
            },
            Item::StreamClose { t, stream, side } => Record::StreamClose { t, stream, side },
            Item::StreamReplace { t, side, old, new } => {
                Record::StreamReplace { t, side, old, new }
            }
            Item::TaskTotals {
                t,
                task,
                dispatches,
            } => Record::TaskTotals {
                t,
                task,
                dispatches,
            },
            Item::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits,
            } => Record::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits,
            },
            Item::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                parks,
            } => Record::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                parks,
            },
            Item::Samples(h) => Record::Samples(SampleWindow {
                t: h.t,
                dur: h.dur,
                worker: h.worker,
                total: h.total,
                signals: h.signals,
                sched: h.sched,
                spin: h.spin,
                idle: h.idle,
                parked: h.parked,
                tasks: self.samples.clone(),
            }),
            Item::Period(p) => {
                // A period that stored no op order has no ops here.
                let ops = if self.ops_recorded() {
                    self.ops();
                    std::mem::take(&mut self.ops)
                } else {
                    Vec::new()
                };
                self.ops_ready = false;
                Record::Period {
                    start: p.start,
                    end: p.end,
                    task: p.task,
                    end_state: p.end_state,
                    io: std::mem::take(&mut self.io),
                    ops,
                    op_times: std::mem::take(&mut self.op_times),
                }
            }
        }
    }
}

/// Calls `f` with the [`implied_ops`](crate::implied_ops) of `io` (by hand:
/// the iterator adaptor chain is slow in hot loops).
#[inline(always)]
fn implied(io: &[StreamIo], mut f: impl FnMut(Op)) {
    for (i, s) in io.iter().enumerate() {
        let i = i as u16;
        if s.reads > 0 {
            f(Op::read(i, s.reads));
        }
        if s.writes > 0 {
            f(Op::write(i, s.writes));
        }
    }
}

/// Calls `f` with `n` ops alternating between the two of `pair`.
#[inline(always)]
fn interleave(pair: (Op, Op), n: u32, mut f: impl FnMut(Op)) {
    for k in 0..n {
        f(if k % 2 == 0 { pair.0 } else { pair.1 });
    }
}

/// Bounds-checked reading cursor.
struct Cur<'a> {
    d: &'a [u8],
    p: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    fn byte(&mut self) -> R<u8> {
        let b = *self.d.get(self.p).ok_or(DecodeErrorKind::Truncated)?;
        self.p += 1;
        Ok(b)
    }

    /// A varint; one- and two-byte ones (almost all) inline.
    #[inline(always)]
    fn var(&mut self) -> R<u64> {
        match self.d.get(self.p..self.p + 2) {
            Some(&[b, _]) if b < 0x80 => {
                self.p += 1;
                Ok(u64::from(b))
            }
            Some(&[b0, b1]) if b1 < 0x80 => {
                self.p += 2;
                Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
            }
            _ => self.var_long(),
        }
    }

    #[inline(never)]
    fn var_long(&mut self) -> R<u64> {
        let (v, n) = varint::read_u64(self.d.get(self.p..).unwrap_or(&[]))?;
        self.p += n;
        Ok(v)
    }

    #[inline(always)]
    fn u32(&mut self, field: &'static str) -> R<u32> {
        let v = self.var()?;
        u32::try_from(v).map_err(|_| DecodeErrorKind::OutOfRange { field, value: v })
    }

    #[inline(always)]
    fn u16(&mut self, field: &'static str) -> R<u16> {
        let v = self.var()?;
        u16::try_from(v).map_err(|_| DecodeErrorKind::OutOfRange { field, value: v })
    }

    /// A count of items taking at least `min_size` bytes each: larger than
    /// the remaining data can hold means truncated (or corrupt) data.
    #[inline(always)]
    fn count(&mut self, min_size: usize) -> R<usize> {
        let n = self.var()?;
        self.count_of(n, min_size)
    }

    #[inline(always)]
    fn count_of(&self, n: u64, min_size: usize) -> R<usize> {
        let remaining = self.d.len().saturating_sub(self.p);
        match usize::try_from(n) {
            Ok(n) if n <= remaining / min_size => Ok(n),
            _ => Err(DecodeErrorKind::Truncated),
        }
    }

    #[inline(always)]
    fn bytes(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.p.checked_add(n).ok_or(DecodeErrorKind::Truncated)?;
        let b = self.d.get(self.p..end).ok_or(DecodeErrorKind::Truncated)?;
        self.p = end;
        Ok(b)
    }
}
