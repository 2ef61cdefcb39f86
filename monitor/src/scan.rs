//! A fast, allocation-free record scanner for the analysis passes.
//!
//! [`rill::monitor::format::Decoder`] yields owned [`Record`](rill::monitor::format::Record)s,
//! which allocates up to three vectors per period. The analyses read every
//! record of logs that can be gigabytes long, so they use this scanner instead:
//! it decodes the same format into buffers it reuses (a period's stream
//! entries, ops and op times stay valid until the next call), and task names
//! are borrowed from the data. It accepts exactly the data the runtime's
//! decoder accepts (checked by the equivalence tests in `tests/scan.rs`); when
//! it meets a damaged record it stops, and [`damage_reason`] asks the runtime's
//! decoder what is wrong, so messages stay the runtime's.

use rill::monitor::format::{
    DecodeErrorKind, Decoder, EndState, Op, Side, StreamIo, MAX_INTERLEAVED,
};

/// One scanned record. Period lists live in the [`Scanner`]'s buffers.
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
    /// `Period`: its lists are [`Scanner::io`], [`Scanner::ops`] and [`Scanner::op_times`].
    Period(PeriodHead),
}

/// The fixed fields of a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodHead {
    /// Dispatch time (ticks).
    pub start: u64,
    /// Stop time (ticks).
    pub end: u64,
    /// The task.
    pub task: u64,
    /// Why it stopped.
    pub end_state: EndState,
}

impl PeriodHead {
    /// `end - start`, 0 if the clock went backwards.
    pub fn dur(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
}

/// Record scanner over a log's bytes (see the module documentation).
#[derive(Clone, Debug)]
pub struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    last: u64,
    io: Vec<StreamIo>,
    ops: Vec<Op>,
    op_times: Vec<u64>,
    ops_recorded: bool,
    damaged_at: Option<u64>,
    done: bool,
}

/// Internal "this record is damaged" marker; the reason comes from the
/// runtime's decoder.
struct Bad;

type R<T> = Result<T, Bad>;

impl<'a> Scanner<'a> {
    /// A scanner over `data` starting at byte `pos` (the first record, after
    /// the header) with the time base 0.
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Scanner {
            data,
            pos,
            last: 0,
            io: Vec::with_capacity(8),
            ops: Vec::with_capacity(16),
            op_times: Vec::new(),
            ops_recorded: false,
            damaged_at: None,
            done: false,
        }
    }

    /// Offset of the next record; after the end, where scanning stopped.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Where the damaged record starts, if scanning stopped at one.
    pub fn damaged_at(&self) -> Option<u64> {
        self.damaged_at
    }

    /// The last period's stream entries.
    pub fn io(&self) -> &[StreamIo] {
        &self.io
    }

    /// The last period's ops: recorded ones, or (when the period stored none)
    /// the implied ops of its entries ([`rill::monitor::format::implied_ops`]).
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Whether the last period stored an op order (implied or explicit) rather
    /// than none at all.
    pub fn ops_recorded(&self) -> bool {
        self.ops_recorded
    }

    /// The last period's per-message times (empty unless recorded).
    pub fn op_times(&self) -> &[u64] {
        &self.op_times
    }

    /// The next record, or `None` at the end of the data, a zero tag or a
    /// damaged record (then [`damaged_at`](Self::damaged_at) is set).
    #[inline]
    #[allow(clippy::should_implement_trait)] // not an Iterator: periods borrow the scanner
    pub fn next(&mut self) -> Option<Item<'a>> {
        if self.done {
            return None;
        }
        let tag = match self.data.get(self.pos) {
            None | Some(0) => {
                self.done = true;
                return None;
            }
            Some(&t) => t,
        };
        let mut c = Cur {
            d: self.data,
            p: self.pos + 1,
        };
        match self.decode(&mut c, tag) {
            Ok(item) => {
                self.pos = c.p;
                Some(item)
            }
            Err(Bad) => {
                self.done = true;
                self.damaged_at = Some(self.pos as u64);
                None
            }
        }
    }

    #[inline]
    fn time(&mut self, c: &mut Cur<'a>) -> R<u64> {
        self.last = self.last.wrapping_add(unzigzag(c.var()?) as u64);
        Ok(self.last)
    }

    #[inline]
    fn decode(&mut self, c: &mut Cur<'a>, tag: u8) -> R<Item<'a>> {
        if tag & 0x80 != 0 {
            return self.period(c, tag);
        }
        // Times are committed to `last` only when the whole record decodes;
        // a damaged record ends the scan, so no rollback is needed.
        Ok(match tag {
            0x01 => Item::WorkerStart { t: self.time(c)? },
            0x02 => {
                let t = self.time(c)?;
                let dur = c.var()?;
                self.last = t.wrapping_add(dur);
                Item::WorkerWait { t, dur }
            }
            0x03 => Item::WorkerEnd { t: self.time(c)? },
            0x04 => {
                let t = self.time(c)?;
                let task = c.var()?;
                let parent = c.var()?;
                let worker = c.u32()?;
                let len = c.count(1)?;
                let bytes = c.bytes(len)?;
                let name = std::str::from_utf8(bytes).map_err(|_| Bad)?;
                Item::TaskAssign {
                    t,
                    task,
                    parent,
                    worker,
                    name,
                }
            }
            0x05 => Item::TaskMigrate {
                t: self.time(c)?,
                task: c.var()?,
                from: c.u32()?,
                to: c.u32()?,
            },
            0x06 => Item::StreamOpen {
                t: self.time(c)?,
                stream: c.var()?,
                capacity: c.u32()?,
                creator: c.var()?,
            },
            0x07 | 0x08 => Item::StreamBind {
                t: self.time(c)?,
                stream: c.var()?,
                task: c.var()?,
                side: side(tag),
            },
            0x09 | 0x0a => Item::StreamClose {
                t: self.time(c)?,
                stream: c.var()?,
                side: side(tag),
            },
            0x0b | 0x0c => Item::StreamReplace {
                t: self.time(c)?,
                old: c.var()?,
                new: c.var()?,
                side: side(tag),
            },
            _ => return Err(Bad),
        })
    }

    #[inline]
    fn period(&mut self, c: &mut Cur<'a>, tag: u8) -> R<Item<'a>> {
        let start = self.time(c)?;
        let end_code = tag & 7;
        let io_code = (tag >> 3) & 3;
        let mode = (tag >> 5) & 3;
        let dur = c.var()?;
        let end = start.wrapping_add(dur);
        let task = c.var()?;
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
                    return Err(Bad);
                }
                mark = Some(stream);
            }
            let rc = (h >> 1) & 7;
            let wc = (h >> 4) & 7;
            let reads = if rc == 7 { c.u32()? } else { rc.into() };
            let writes = if wc == 7 { c.u32()? } else { wc.into() };
            self.io.push(StreamIo {
                stream,
                reads,
                writes,
                woke_peer: h & 1 != 0,
            });
        }
        let blocked_on = match (blocked, mark) {
            (false, _) => 0,
            (true, Some(s)) => s,
            (true, None) => c.var()?,
        };
        let end_state = match end_code {
            0 => EndState::Yielded,
            1 => EndState::BlockedInput { stream: blocked_on },
            2 => EndState::BlockedOutput { stream: blocked_on },
            3 => EndState::BlockedAny,
            4 => EndState::Ended,
            5 => EndState::Panicked,
            _ => return Err(Bad),
        };
        self.ops.clear();
        self.op_times.clear();
        self.ops_recorded = mode != 0;
        match mode {
            0 | 1 => self.implied(),
            2 => self.interleaved()?,
            _ => {
                let h = c.var()?;
                match (h >> 1) & 3 {
                    0 => {
                        let n = c.count_of(h >> 3, 1)?;
                        self.read_ops(c, n)?;
                    }
                    form if h >> 3 != 0 || form == 3 => return Err(Bad),
                    1 => self.implied(),
                    _ => self.interleaved()?,
                }
                if h & 1 != 0 {
                    let nt = c.count(1)?;
                    let mut prev = start;
                    for _ in 0..nt {
                        prev = prev.wrapping_add(unzigzag(c.var()?) as u64);
                        self.op_times.push(prev);
                    }
                }
            }
        }
        self.last = end;
        Ok(Item::Period(PeriodHead {
            start,
            end,
            task,
            end_state,
        }))
    }

    /// Fills `ops` with the implied ops of `io` (by hand: the iterator
    /// adaptor chain is slow in this hot loop).
    #[inline]
    fn implied(&mut self) {
        for (i, s) in self.io.iter().enumerate() {
            let i = i as u16;
            if s.reads > 0 {
                self.ops.push(Op::read(i, s.reads));
            }
            if s.writes > 0 {
                self.ops.push(Op::write(i, s.writes));
            }
        }
    }

    /// Fills `ops` with the interleaved ops of `io`: its two implied runs one
    /// message at a time, alternately (by hand, as `implied`).
    #[inline]
    fn interleaved(&mut self) -> R<()> {
        let mut runs = [Op::read(0, 0); 2];
        let mut n = 0;
        for (i, s) in self.io.iter().enumerate() {
            let i = u16::try_from(i).map_err(|_| Bad)?;
            for op in [Op::read(i, s.reads), Op::write(i, s.writes)] {
                if op.count > 0 {
                    *runs.get_mut(n).ok_or(Bad)? = op;
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
            return Err(Bad);
        }
        let (a, b) = (Op { count: 1, ..a }, Op { count: 1, ..b });
        for k in 0..total {
            self.ops.push(if k % 2 == 0 { a } else { b });
        }
        Ok(())
    }

    fn read_ops(&mut self, c: &mut Cur<'a>, n: usize) -> R<()> {
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
                    return Err(Bad);
                }
                let io_index = u16::try_from(c.var()?).map_err(|_| Bad)?;
                Op {
                    write: b & 1 != 0,
                    io_index,
                    count: c.u32()?,
                }
            };
            if usize::from(op.io_index) >= nio {
                return Err(Bad);
            }
            self.ops.push(op);
        }
        Ok(())
    }
}

fn side(tag: u8) -> Side {
    if tag & 1 == 1 {
        Side::Reader
    } else {
        Side::Writer
    }
}

#[inline(always)]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Bounds-checked cursor.
struct Cur<'a> {
    d: &'a [u8],
    p: usize,
}

impl<'a> Cur<'a> {
    #[inline(always)]
    fn byte(&mut self) -> R<u8> {
        let b = *self.d.get(self.p).ok_or(Bad)?;
        self.p += 1;
        Ok(b)
    }

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
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self.d.get(self.p + i).ok_or(Bad)?;
            if i == 9 && b > 1 {
                return Err(Bad);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.p += i + 1;
                return Ok(v);
            }
        }
        Err(Bad)
    }

    #[inline(always)]
    fn u32(&mut self) -> R<u32> {
        u32::try_from(self.var()?).map_err(|_| Bad)
    }

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
            _ => Err(Bad),
        }
    }

    #[inline(always)]
    fn bytes(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.p.checked_add(n).ok_or(Bad)?;
        let b = self.d.get(self.p..end).ok_or(Bad)?;
        self.p = end;
        Ok(b)
    }
}

/// What is wrong with the record at `offset` of `data`, according to the
/// runtime's decoder (`None` if it finds nothing wrong there).
pub fn damage_reason(data: &[u8], offset: u64) -> Option<DecodeErrorKind> {
    let rest = data.get(usize::try_from(offset).ok()?..)?;
    match Decoder::records(rest).next() {
        Some(Err(e)) => Some(e.kind),
        _ => None,
    }
}
