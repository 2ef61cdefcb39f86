//! The write side: an allocation-free encoder writing into a [`Sink`].

use std::sync::atomic::{compiler_fence, Ordering};

use crate::record::{
    ops_are_implied, ops_are_interleaved, EndState, Op, Record, SampleWindow, Side, StreamIo,
};
use crate::tag;
use crate::varint::{zigzag, MAX_LEN as V};
use sealed::Put;

/// Where encoded records go: a growable byte region written front to back.
///
/// The encoder calls [`reserve`](Sink::reserve) with an upper bound of the
/// record's size, writes the record into the returned slice (body first, tag
/// byte last), then calls [`commit`](Sink::commit) with the actual size.
pub trait Sink {
    /// Returns a writable slice of at least `max_len` bytes starting at the
    /// current end of the data. Bytes of a reservation that are not committed
    /// are not part of the data; the next reservation starts at the same place.
    fn reserve(&mut self, max_len: usize) -> &mut [u8];

    /// Appends the first `len` bytes of the last reservation to the data.
    /// `len` must not exceed the reservation.
    fn commit(&mut self, len: usize);
}

impl<S: Sink + ?Sized> Sink for &mut S {
    #[inline]
    fn reserve(&mut self, max_len: usize) -> &mut [u8] {
        (**self).reserve(max_len)
    }

    #[inline]
    fn commit(&mut self, len: usize) {
        (**self).commit(len)
    }
}

/// A [`Sink`] into memory (tests, tools, buffering).
#[derive(Clone, Debug, Default)]
pub struct VecSink {
    buf: Vec<u8>,
    len: usize,
    reserved: usize,
}

impl VecSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes committed so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Number of bytes committed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was committed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets all data (keeps the memory).
    pub fn clear(&mut self) {
        self.buf[..self.len].fill(0);
        self.len = 0;
        self.reserved = 0;
    }

    /// The committed bytes.
    pub fn into_bytes(mut self) -> Vec<u8> {
        self.buf.truncate(self.len);
        self.buf
    }
}

impl Sink for VecSink {
    #[inline]
    fn reserve(&mut self, max_len: usize) -> &mut [u8] {
        let need = self.len + max_len;
        if self.buf.len() < need {
            let new_len = need.max(self.buf.len() * 2).max(256);
            self.buf.resize(new_len, 0);
        }
        self.reserved = max_len;
        &mut self.buf[self.len..need]
    }

    #[inline]
    fn commit(&mut self, len: usize) {
        assert!(
            len <= self.reserved,
            "commit({len}) beyond reservation of {}",
            self.reserved
        );
        self.len += len;
        self.reserved = 0;
    }
}

/// Cursor over a reservation of exactly the record's size bound.
///
/// The writes skip bounds checks: each record computes an upper bound of the
/// bytes its body writes (counting every varint at its maximum length, see
/// the `*_MAX` constants) and `emit` hands the body a slice of exactly that
/// length, so `n` stays within the slice. Debug builds check every write.
/// (`pub` only for the sealed [`PutIo`]; not reachable from outside.)
pub struct Out<'a> {
    buf: &'a mut [u8],
    n: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn byte(&mut self, b: u8) {
        debug_assert!(self.n < self.buf.len(), "record size bound exceeded");
        // SAFETY: `n < buf.len()` because the record's size bound (the slice
        // length) counts this byte; see the type's documentation.
        unsafe { *self.buf.get_unchecked_mut(self.n) = b };
        self.n += 1;
    }

    #[inline(always)]
    fn var(&mut self, v: u64) {
        if v < 1 << 7 {
            self.byte(v as u8);
        } else if v < 1 << 14 {
            self.byte(v as u8 | 0x80);
            self.byte((v >> 7) as u8);
        } else {
            self.var_long(v);
        }
    }

    #[inline(always)]
    fn var_long(&mut self, v: u64) {
        debug_assert!(self.n + crate::varint::len_u64(v) <= self.buf.len());
        // SAFETY: the record's size bound counts this varint at its maximum
        // length, so the bytes from `n` on hold it; see the type's documentation.
        self.n += unsafe { write_var_raw(self.buf.as_mut_ptr().add(self.n), v) };
    }

    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.n..self.n + b.len()].copy_from_slice(b);
        self.n += b.len();
    }
}

/// Writes `v` as a varint at `p`; returns its length.
///
/// # Safety
/// `p` must be valid for writing `varint::len_u64(v)` bytes.
#[inline(never)]
unsafe fn write_var_raw(p: *mut u8, mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        // SAFETY: `i < len_u64(v)`, guaranteed writable by the caller.
        unsafe { p.add(i).write(v as u8 | 0x80) };
        v >>= 7;
        i += 1;
    }
    // SAFETY: as above, this is the last byte of the varint.
    unsafe { p.add(i).write(v as u8) };
    i + 1
}

/// Writes one record: reserves `max_len`, lets `body` fill bytes 1.. and return
/// the tag, stores the tag into byte 0 after everything else, commits.
///
/// `max_len` must bound the bytes `body` writes, tag included.
#[inline(always)]
fn emit<S: Sink + ?Sized>(sink: &mut S, max_len: usize, body: impl FnOnce(&mut Out<'_>) -> u8) {
    // Slicing checks that the sink kept its promise of `max_len` bytes.
    let buf = &mut sink.reserve(max_len)[..max_len];
    let mut out = Out { buf, n: 1 };
    let tag = body(&mut out);
    debug_assert_ne!(tag, 0);
    let n = out.n;
    // The body must be in memory before the tag: a process killed between the
    // two leaves a zero tag, which readers take as the clean end of the log.
    compiler_fence(Ordering::Release);
    out.buf[0] = tag;
    sink.commit(n);
}

/// Upper bound of a period's size, excluding the per-entry parts.
const PERIOD_FIXED_MAX: usize = 1 + 3 * V + V + V + 2 * V;
/// Upper bound of one `StreamIo` entry: header byte, stream, reads, writes.
const IO_MAX: usize = 1 + V + 5 + 5;
/// Upper bound of one op: header byte, io index, count.
const OP_MAX: usize = 1 + 3 + 5;

/// The form of a period's op list, when the caller knows it (see
/// [`Encoder::period_as`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpsForm {
    /// Unknown: the encoder finds it from the ops.
    Check,
    /// No ops.
    None,
    /// The [`implied_ops`](crate::implied_ops) of the entries.
    Implied,
    /// The [`interleaved_ops`](crate::interleaved_ops) of the entries.
    Interleaved,
    /// Neither: the ops are listed.
    Explicit,
}

/// A period's fixed part (see [`Encoder::period_parts`]).
#[derive(Clone, Copy, Debug)]
pub struct PeriodHead {
    /// When the task was dispatched (ticks).
    pub start: u64,
    /// When it stopped (ticks).
    pub end: u64,
    /// The task id.
    pub task: u64,
    /// Why it stopped.
    pub end_state: EndState,
}

/// A period to encode, borrowing its lists (see [`Encoder::period`]).
#[derive(Clone, Copy, Debug)]
pub struct PeriodRef<'a> {
    /// When the task was dispatched (ticks).
    pub start: u64,
    /// When it stopped (ticks).
    pub end: u64,
    /// The task id.
    pub task: u64,
    /// Why it stopped.
    pub end_state: EndState,
    /// Messages moved per stream.
    pub io: &'a [StreamIo],
    /// Order of reads and writes; empty unless the `MESSAGE` flag is on.
    pub ops: &'a [Op],
    /// A time per message; empty unless the `MESSAGE_TIME` flag is on.
    pub op_times: &'a [u64],
}

/// Encodes records into a [`Sink`]. Keeps the previous record's time (times
/// are stored as deltas), so use one encoder per log, for the log's lifetime.
///
/// Nothing allocates; each call is a handful of stores.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    last: u64,
}

impl Encoder {
    /// An encoder for a new log.
    pub const fn new() -> Self {
        Encoder { last: 0 }
    }

    /// The time the next record's time is stored relative to.
    pub fn last_time(&self) -> u64 {
        self.last
    }

    /// Zig-zag delta of `t` from the previous time, which becomes `t`.
    #[inline(always)]
    fn delta(&mut self, t: u64) -> u64 {
        let d = zigzag(t.wrapping_sub(self.last) as i64);
        self.last = t;
        d
    }

    /// The worker started at `t`.
    #[inline]
    pub fn worker_start<S: Sink + ?Sized>(&mut self, sink: &mut S, t: u64) {
        let d = self.delta(t);
        emit(sink, 1 + V, |o| {
            o.var(d);
            tag::WORKER_START
        });
    }

    /// The worker idled from `t` for `dur` ticks (write it when it resumes).
    #[inline]
    pub fn worker_wait<S: Sink + ?Sized>(&mut self, sink: &mut S, t: u64, dur: u64) {
        let d = self.delta(t);
        self.last = t.wrapping_add(dur);
        emit(sink, 1 + 2 * V, |o| {
            o.var(d);
            o.var(dur);
            tag::WORKER_WAIT
        });
    }

    /// The worker stopped at `t`.
    #[inline]
    pub fn worker_end<S: Sink + ?Sized>(&mut self, sink: &mut S, t: u64) {
        let d = self.delta(t);
        emit(sink, 1 + V, |o| {
            o.var(d);
            tag::WORKER_END
        });
    }

    /// Task `task`, created by `parent` (0 = none), was mapped to `worker`.
    #[inline]
    pub fn task_assign<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        task: u64,
        parent: u64,
        worker: u32,
        name: &str,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 5 * V + name.len(), |o| {
            o.var(d);
            o.var(task);
            o.var(parent);
            o.var(worker.into());
            o.var(name.len() as u64);
            o.bytes(name.as_bytes());
            tag::TASK_ASSIGN
        });
    }

    /// Task `task` moved from worker `from` to worker `to`.
    #[inline]
    pub fn task_migrate<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        task: u64,
        from: u32,
        to: u32,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 4 * V, |o| {
            o.var(d);
            o.var(task);
            o.var(from.into());
            o.var(to.into());
            tag::TASK_MIGRATE
        });
    }

    /// Stream `stream` with room for `capacity` messages was created by task
    /// `creator` (0 = none).
    #[inline]
    pub fn stream_open<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        stream: u64,
        capacity: u32,
        creator: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 4 * V, |o| {
            o.var(d);
            o.var(stream);
            o.var(capacity.into());
            o.var(creator);
            tag::STREAM_OPEN
        });
    }

    /// `stream` is named `name`.
    #[inline]
    pub fn stream_name<S: Sink + ?Sized>(&mut self, sink: &mut S, t: u64, stream: u64, name: &str) {
        let d = self.delta(t);
        emit(sink, 1 + 3 * V + name.len(), |o| {
            o.var(d);
            o.var(stream);
            o.var(name.len() as u64);
            o.bytes(name.as_bytes());
            tag::STREAM_NAME
        });
    }

    /// Task `task` used the `side` end of `stream` for the first time.
    #[inline]
    pub fn stream_bind<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        stream: u64,
        side: Side,
        task: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 3 * V, |o| {
            o.var(d);
            o.var(stream);
            o.var(task);
            tag::with_side(tag::STREAM_BIND, side)
        });
    }

    /// The `side` end of `stream` was closed.
    #[inline]
    pub fn stream_close<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        stream: u64,
        side: Side,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 2 * V, |o| {
            o.var(d);
            o.var(stream);
            tag::with_side(tag::STREAM_CLOSE, side)
        });
    }

    /// Task `task` ended after `dispatches` dispatches (sample mode).
    #[inline]
    pub fn task_totals<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        task: u64,
        dispatches: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 3 * V, |o| {
            o.var(d);
            o.var(task);
            o.var(dispatches);
            tag::TASK_TOTALS
        });
    }

    /// The `side` end of `stream` moved `messages` and waited `waits` times
    /// over its life (sample mode).
    #[inline]
    pub fn stream_totals<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        stream: u64,
        side: Side,
        messages: u64,
        waits: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 4 * V, |o| {
            o.var(d);
            o.var(stream);
            o.var(messages);
            o.var(waits);
            tag::with_side(tag::STREAM_TOTALS, side)
        });
    }

    /// The worker's exact counts at its end (sample mode).
    #[inline]
    pub fn worker_totals<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        dispatches: u64,
        spins: u64,
        idles: u64,
        parks: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 5 * V, |o| {
            o.var(d);
            o.var(dispatches);
            o.var(spins);
            o.var(idles);
            o.var(parks);
            tag::WORKER_TOTALS
        });
    }

    /// A window of samples of one worker (the sampler's log). The next
    /// record's Δt is from the window's end.
    pub fn samples<S: Sink + ?Sized>(&mut self, sink: &mut S, w: &SampleWindow) {
        let d = self.delta(w.t);
        self.last = w.t.wrapping_add(w.dur);
        emit(sink, 1 + 10 * V + w.tasks.len() * 2 * V, |o| {
            o.var(d);
            o.var(w.dur);
            o.var(w.worker.into());
            o.var(w.total.into());
            o.var(w.signals.into());
            o.var(w.sched.into());
            o.var(w.spin.into());
            o.var(w.idle.into());
            o.var(w.parked.into());
            o.var(w.tasks.len() as u64);
            let mut prev = 0u64;
            for &(task, n) in &w.tasks {
                // Tasks ascending: each id as the step from the previous.
                o.var(task.wrapping_sub(prev));
                o.var(n.into());
                prev = task;
            }
            tag::SAMPLES_SIGNALS
        });
    }

    /// A task replaced its `side` end of stream `old` by stream `new`.
    #[inline]
    pub fn stream_replace<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        t: u64,
        side: Side,
        old: u64,
        new: u64,
    ) {
        let d = self.delta(t);
        emit(sink, 1 + 3 * V, |o| {
            o.var(d);
            o.var(old);
            o.var(new);
            tag::with_side(tag::STREAM_REPLACE, side)
        });
    }

    /// One dispatch of a task (write it when the task stops).
    ///
    /// Every `op.io_index` must be below `p.io.len()`: a reader rejects the
    /// record (and the rest of the log) otherwise. The cheapest ops are the ones
    /// [`implied_ops`](crate::implied_ops) or [`interleaved_ops`](crate::interleaved_ops)
    /// yield: they take no bytes at all.
    #[inline]
    pub fn period<S: Sink + ?Sized>(&mut self, sink: &mut S, p: &PeriodRef<'_>) {
        self.period_as(sink, p, OpsForm::Check)
    }

    /// [`period`](Self::period) with the form of its ops known to the caller,
    /// which then need not pass them unless the form is `Explicit` or `Check`
    /// (or the period is timed).
    #[inline]
    pub fn period_as<S: Sink + ?Sized>(&mut self, sink: &mut S, p: &PeriodRef<'_>, form: OpsForm) {
        debug_assert!(
            p.ops.iter().all(|op| usize::from(op.io_index) < p.io.len()),
            "op io_index out of range"
        );
        let form = match form {
            _ if !p.op_times.is_empty() => {
                if !p.ops.is_empty() && ops_are_implied(p.io, p.ops) {
                    OpsForm::Implied
                } else if ops_are_interleaved(p.io, p.ops) {
                    OpsForm::Interleaved
                } else {
                    OpsForm::Explicit
                }
            }
            OpsForm::Check if p.ops.is_empty() => OpsForm::None,
            OpsForm::Check if ops_are_implied(p.io, p.ops) => OpsForm::Implied,
            OpsForm::Check if ops_are_interleaved(p.io, p.ops) => OpsForm::Interleaved,
            OpsForm::Check => OpsForm::Explicit,
            f => f,
        };
        self.period_parts(
            sink,
            PeriodHead {
                start: p.start,
                end: p.end,
                task: p.task,
                end_state: p.end_state,
            },
            p.io.len(),
            |i| p.io[i],
            p.end_state
                .stream()
                .and_then(|b| p.io.iter().position(|s| s.stream == b)),
            p.ops,
            p.op_times,
            form,
        )
    }

    /// A period whose entries come from `io(0)`, ..., `io(n_io - 1)`, called
    /// once each in order (so that the runtime can encode them from where it
    /// keeps them, without a list); `mark` is the entry of the stream the
    /// period blocked on, if its end state names one and an entry has it;
    /// `form` is resolved (not `Check`) unless there are `op_times`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn period_parts<S: Sink + ?Sized, E: PutIo>(
        &mut self,
        sink: &mut S,
        h: PeriodHead,
        n_io: usize,
        mut io: impl FnMut(usize) -> E,
        mark: Option<usize>,
        ops: &[Op],
        op_times: &[u64],
        form: OpsForm,
    ) {
        let max_len = PERIOD_FIXED_MAX + n_io * IO_MAX + ops.len() * OP_MAX + op_times.len() * V;
        self.emit_period(sink, h, max_len, |o| {
            let io_code = match n_io {
                n @ 0..=2 => n as u8,
                n => {
                    o.var(n as u64);
                    3
                }
            };
            // The entry of the stream the task blocked on is marked; if there
            // is none, the stream id follows the entries.
            let blocked = h.end_state.stream();
            for i in 0..n_io {
                io(i).put(o, mark == Some(i));
            }
            if let (Some(stream), None) = (blocked, mark) {
                o.var(stream);
            }
            let mode = if op_times.is_empty() {
                match form {
                    OpsForm::None => tag::OPS_NONE,
                    OpsForm::Implied => tag::OPS_IMPLIED,
                    OpsForm::Interleaved => tag::OPS_INTERLEAVED,
                    OpsForm::Explicit | OpsForm::Check => {
                        o.var((ops.len() as u64) << 3 | tag::FORM_EXPLICIT << 1);
                        for op in ops {
                            put_op(o, op);
                        }
                        tag::OPS_LISTED
                    }
                }
            } else {
                // Timed: the caller resolved the form from the lists.
                if form == OpsForm::Implied {
                    o.byte((tag::FORM_IMPLIED << 1 | 1) as u8);
                } else if form == OpsForm::Interleaved {
                    o.byte((tag::FORM_INTERLEAVED << 1 | 1) as u8);
                } else {
                    o.var((ops.len() as u64) << 3 | tag::FORM_EXPLICIT << 1 | 1);
                    for op in ops {
                        put_op(o, op);
                    }
                }
                o.var(op_times.len() as u64);
                let mut prev = h.start;
                for &t in op_times {
                    o.var(zigzag(t.wrapping_sub(prev) as i64));
                    prev = t;
                }
                tag::OPS_LISTED
            };
            tag::PERIOD | mode << 5 | io_code << 3 | h.end_state.code()
        });
    }

    /// A period record of at most `max_len` bytes: its start (a delta from
    /// the last record), duration and task, then what `rest` writes; `rest`
    /// returns the tag.
    #[inline(always)]
    fn emit_period<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        h: PeriodHead,
        max_len: usize,
        rest: impl FnOnce(&mut Out<'_>) -> u8,
    ) {
        let dstart = self.delta(h.start);
        self.last = h.end;
        let dur = h.end.wrapping_sub(h.start);
        emit(
            sink,
            max_len,
            #[inline(always)]
            |o| {
                o.var(dstart);
                o.var(dur);
                o.var(h.task);
                rest(o)
            },
        );
    }

    /// A period of at most two entries whose ops need no list (`form` is
    /// `None`, `Implied` or `Interleaved`): the same bytes as
    /// [`period_parts`](Self::period_parts) with the entries of `ends` that
    /// are there, in one pass with no list in between. Count mode, and ops
    /// mode's tasks of one or two entries.
    #[inline(always)]
    pub fn period_two<S: Sink + ?Sized>(
        &mut self,
        sink: &mut S,
        h: PeriodHead,
        ends: [Option<EndIo>; 2],
        form: OpsForm,
    ) {
        debug_assert!(matches!(
            form,
            OpsForm::None | OpsForm::Implied | OpsForm::Interleaved
        ));
        self.emit_period(
            sink,
            h,
            PERIOD_FIXED_MAX + 2 * IO_MAX,
            #[inline(always)]
            |o| {
                let blocked = h.end_state.stream();
                let mut n = 0;
                let mut marked = false;
                // Each entry on its own, not a loop over the array: a loop keeps
                // the array in memory, stores and loads for every record.
                let [a, b] = ends;
                let mut put = |e: EndIo| {
                    let mark = !marked && blocked == Some(e.stream);
                    marked |= mark;
                    n += 1;
                    e.put(o, mark);
                };
                if let Some(e) = a {
                    put(e);
                }
                if let Some(e) = b {
                    put(e);
                }
                if let (Some(stream), false) = (blocked, marked) {
                    o.var(stream);
                }
                let mode = match form {
                    OpsForm::Implied => tag::OPS_IMPLIED,
                    OpsForm::Interleaved => tag::OPS_INTERLEAVED,
                    _ => tag::OPS_NONE,
                };
                tag::PERIOD | mode << 5 | n << 3 | h.end_state.code()
            },
        );
    }

    /// Encodes any record (the convenience form of the calls above).
    pub fn record<S: Sink + ?Sized>(&mut self, sink: &mut S, rec: &Record) {
        match *rec {
            Record::WorkerStart { t } => self.worker_start(sink, t),
            Record::WorkerWait { t, dur } => self.worker_wait(sink, t, dur),
            Record::WorkerEnd { t } => self.worker_end(sink, t),
            Record::TaskAssign {
                t,
                task,
                parent,
                worker,
                ref name,
            } => self.task_assign(sink, t, task, parent, worker, name),
            Record::TaskMigrate { t, task, from, to } => self.task_migrate(sink, t, task, from, to),
            Record::Period {
                start,
                end,
                task,
                end_state,
                ref io,
                ref ops,
                ref op_times,
            } => self.period(
                sink,
                &PeriodRef {
                    start,
                    end,
                    task,
                    end_state,
                    io,
                    ops,
                    op_times,
                },
            ),
            Record::StreamOpen {
                t,
                stream,
                capacity,
                creator,
            } => self.stream_open(sink, t, stream, capacity, creator),
            Record::StreamName {
                t,
                stream,
                ref name,
            } => self.stream_name(sink, t, stream, name),
            Record::StreamBind {
                t,
                stream,
                side,
                task,
            } => self.stream_bind(sink, t, stream, side, task),
            Record::StreamClose { t, stream, side } => self.stream_close(sink, t, stream, side),
            Record::StreamReplace { t, side, old, new } => {
                self.stream_replace(sink, t, side, old, new)
            }
            Record::TaskTotals {
                t,
                task,
                dispatches,
            } => self.task_totals(sink, t, task, dispatches),
            Record::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits,
            } => self.stream_totals(sink, t, stream, side, messages, waits),
            Record::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                parks,
            } => self.worker_totals(sink, t, dispatches, spins, idles, parks),
            Record::Samples(ref w) => self.samples(sink, w),
        }
    }
}

/// An entry as [`Encoder::period_parts`] takes it: a [`StreamIo`], or an
/// [`EndIo`] (one end's messages, all one way). Sealed: only the encoder
/// writes entries.
pub trait PutIo: sealed::Put {}

impl PutIo for StreamIo {}
impl PutIo for EndIo {}

mod sealed {
    /// Writes the entry (marked if the period blocked on its stream):
    /// header byte `b www rrr k` (b = the blocked-on stream, k = woke_peer;
    /// counts 0..=6 inline, 7 = a varint follows), stream id, then the long
    /// counts.
    pub trait Put {
        fn put(&self, o: &mut super::Out<'_>, blocked_on: bool);
    }
}

impl sealed::Put for StreamIo {
    #[inline(always)]
    fn put(&self, o: &mut Out<'_>, blocked_on: bool) {
        put_io(o, self, blocked_on)
    }
}

/// An entry of one stream end: its messages all go one way (what the
/// runtime's periods hold), so the header byte is a shift, not two clamps.
/// Encodes as the [`StreamIo`] with `count` in `reads` or `writes`.
#[derive(Clone, Copy, Debug)]
pub struct EndIo {
    /// The stream id.
    pub stream: u64,
    /// Messages the end moved during the period.
    pub count: u32,
    /// Whether it is the writing end.
    pub write: bool,
    /// Whether the end woke the task on the other side.
    pub woke_peer: bool,
}

impl From<EndIo> for StreamIo {
    /// The entry as both sides: `count` in `reads` or `writes`.
    fn from(e: EndIo) -> StreamIo {
        StreamIo {
            stream: e.stream,
            reads: if e.write { 0 } else { e.count },
            writes: if e.write { e.count } else { 0 },
            woke_peer: e.woke_peer,
        }
    }
}

impl sealed::Put for EndIo {
    #[inline(always)]
    fn put(&self, o: &mut Out<'_>, blocked_on: bool) {
        let c = self.count.min(7) as u8;
        let shift = 1 + 3 * u8::from(self.write);
        o.byte(u8::from(blocked_on) << 7 | u8::from(self.woke_peer) | c << shift);
        o.var(self.stream);
        if c == 7 {
            o.var(self.count.into());
        }
    }
}

#[inline(always)]
fn put_io(o: &mut Out<'_>, s: &StreamIo, blocked_on: bool) {
    let rc = s.reads.min(7) as u8;
    let wc = s.writes.min(7) as u8;
    o.byte(u8::from(blocked_on) << 7 | u8::from(s.woke_peer) | rc << 1 | wc << 4);
    o.var(s.stream);
    if rc == 7 {
        o.var(s.reads.into());
    }
    if wc == 7 {
        o.var(s.writes.into());
    }
}

/// An op: `0 ccc w iii` (count 1..=8 as c+1, io index 0..=7), or the long
/// form `1000000 w` followed by varint io index and varint count.
#[inline(always)]
fn put_op(o: &mut Out<'_>, op: &Op) {
    if op.io_index < 8 && (1..=8).contains(&op.count) {
        o.byte(op.io_index as u8 | u8::from(op.write) << 3 | ((op.count - 1) as u8) << 4);
    } else {
        o.byte(0x80 | u8::from(op.write));
        o.var(op.io_index.into());
        o.var(op.count.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(f: impl FnOnce(&mut Out<'_>)) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        let mut o = Out {
            buf: &mut buf,
            n: 0,
        };
        f(&mut o);
        let n = o.n;
        buf.truncate(n);
        buf
    }

    proptest! {
        /// The runtime's one-sided entry encodes exactly as the general one.
        #[test]
        fn end_io_encodes_as_stream_io(
            stream in any::<u64>(),
            count in prop_oneof![0u32..20, any::<u32>()],
            write: bool,
            woke: bool,
            blocked: bool,
        ) {
            let e = EndIo { stream, count, write, woke_peer: woke };
            let s = StreamIo {
                stream,
                reads: if write { 0 } else { count },
                writes: if write { count } else { 0 },
                woke_peer: woke,
            };
            prop_assert_eq!(bytes(|o| e.put(o, blocked)), bytes(|o| s.put(o, blocked)));
        }

        /// Count mode's one-pass record of at most two entries is the same
        /// bytes as the general encoder's with the entries that are there,
        /// the first of the blocked stream marked.
        #[test]
        fn period_two_encodes_as_period_parts(
            start in 0u64..1 << 40,
            dur in prop_oneof![0u64..300, any::<u32>().prop_map(u64::from)],
            task in 0u64..1 << 20,
            state in 0u8..6,
            blocked in 0u64..4,
            ends in proptest::array::uniform2(proptest::option::of(
                (0u64..4, prop_oneof![0u32..9, any::<u32>()], any::<bool>(), any::<bool>())
            )),
            form in prop_oneof![
                Just(OpsForm::None),
                Just(OpsForm::Implied),
                Just(OpsForm::Interleaved)
            ],
        ) {
            let end_state = EndState::from_code(state, blocked).expect("codes 0 to 5 are states");
            let ends = ends.map(|e| e.map(|(stream, count, write, woke_peer)| EndIo {
                stream,
                count,
                write,
                woke_peer,
            }));
            let h = PeriodHead { start, end: start + dur, task, end_state };
            let mut two = VecSink::new();
            Encoder::new().period_two(&mut two, h, ends, form);
            let listed: Vec<EndIo> = ends.into_iter().flatten().collect();
            let mark = end_state.stream().and_then(|b| listed.iter().position(|e| e.stream == b));
            let mut parts = VecSink::new();
            Encoder::new().period_parts(
                &mut parts, h, listed.len(), |i| listed[i], mark, &[], &[], form,
            );
            prop_assert_eq!(two.bytes(), parts.bytes());
        }
    }
}
