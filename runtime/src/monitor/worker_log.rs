//! The per-worker monitoring state: the worker's log writer and encoder, and
//! the period being recorded (the paper's combining: a dispatch, its stream
//! counts and its messages go into the one record written when it stops).
//! The per-message part of the period lives in thread-locals (`period.rs`);
//! this holds the per-entry part (which streams, woke flags) and the rest.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rill_log::{
    Encoder, EndIo, EndState, Header, LogWriter, MonitorFlags, Op, OpsForm, PeriodHead, PeriodRef,
    Side as LogSide, StreamIo,
};

use super::binding::Binding;
use super::clock;
pub(crate) use super::period::EndMon;
use super::period::{self, kind, Recorder, MAX_IO};
use super::task_entries;
use crate::task::Task;
use crate::vocab::{BlockedOn, Side};

/// Logs created in this process so far; each takes the next as the top bits
/// of its epochs, so that no two dispatches in the process share an epoch
/// (an end listed by an earlier run never matches a later one).
static LOGS: AtomicU64 = AtomicU64::new(0);

/// Adds `n` messages to entry `i` of `io`, on its writing side if `write`.
#[inline]
fn add(io: &mut [StreamIo], i: u16, write: bool, n: u32) {
    if let Some(s) = io.get_mut(usize::from(i)) {
        if write {
            s.writes = s.writes.wrapping_add(n);
        } else {
            s.reads = s.reads.wrapping_add(n);
        }
    }
}

/// The form of a period's ops, found from the list (debug checks).
#[cfg(debug_assertions)]
fn ops_form(p: &PeriodRef<'_>) -> OpsForm {
    use rill_log::{implied_ops, interleaved_ops};
    if p.ops.is_empty() {
        OpsForm::None
    } else if implied_ops(p.io).eq(p.ops.iter().copied()) {
        OpsForm::Implied
    } else if interleaved_ops(p.io).is_some_and(|ops| ops.eq(p.ops.iter().copied())) {
        OpsForm::Interleaved
    } else {
        OpsForm::Explicit
    }
}

/// Checks the form found on the fly for the period `h` against its op list,
/// with the entries in the record's `order` (debug builds). Leaves the
/// counts as they were; takes the keys.
#[cfg(debug_assertions)]
fn check_form(r: &Recorder, h: PeriodHead, order: task_entries::Order, form: OpsForm) {
    let io: Vec<_> = order
        .entries()
        .map(|i| {
            let e = r.take_entry(i, true);
            r.add_count(i as u16, e.count);
            StreamIo::from(e)
        })
        .collect();
    let mut ops = Vec::new();
    r.take_ops(&mut ops);
    for op in &mut ops {
        op.io_index = order.position(usize::from(op.io_index)) as u16;
    }
    let p = PeriodRef {
        start: h.start,
        end: h.end,
        task: h.task,
        end_state: h.end_state,
        io: &io,
        ops: &ops,
        op_times: &[],
    };
    debug_assert_eq!(ops_form(&p), form, "ops form for {p:?}");
}

/// Whether a run with `flags` is in sample mode only: no periods, exact
/// counts as totals. (A run may sample and record periods both, through the
/// API, to check the sampler against the periods; it writes no totals.)
pub(crate) fn sample_only(flags: MonitorFlags) -> bool {
    flags.is_sampled() && !flags.contains(MonitorFlags::SCHEDULER)
}

/// How ends record messages in a run with `flags` (a [`kind`]).
fn run_kind(flags: MonitorFlags) -> u64 {
    // Sample mode records nothing per message: its ends skip monitoring after
    // their first operation, as in a run without stream monitoring.
    if sample_only(flags) || !flags.intersects(MonitorFlags::STREAM.union(MonitorFlags::MESSAGE)) {
        kind::NONE
    } else if !flags.contains(MonitorFlags::MESSAGE) {
        kind::COUNT
    } else if flags.contains(MonitorFlags::MESSAGE_TIME) {
        kind::SLOW
    } else {
        kind::OPS
    }
}

/// The end state of a period from what the coroutine handed back.
pub(crate) fn end_state_of(blocked: bool, on: &BlockedOn) -> EndState {
    if !blocked {
        return EndState::Yielded;
    }
    match on {
        BlockedOn::Input { stream, .. } => EndState::BlockedInput { stream: *stream },
        BlockedOn::Output { stream, .. } => EndState::BlockedOutput { stream: *stream },
        BlockedOn::Any { .. } => EndState::BlockedAny,
        BlockedOn::Nothing => EndState::Yielded,
    }
}

/// One worker's log and the period in progress.
pub(crate) struct WorkerLog {
    pub(crate) flags: MonitorFlags,
    writer: LogWriter,
    enc: Encoder,
    /// Unique per dispatch in the process: `log number << 40 | 4n`, never 0.
    epoch: u64,
    /// How ends record messages in this run's periods (a [`kind`]).
    run_kind: u64,
    /// Time of the last clock read at a dispatch boundary: the start of the
    /// next period, or of the next wait. One clock read per dispatch is all
    /// the hot path pays (rdtsc costs 15-30 ns in a VM).
    last: u64,
    /// The period's entries, one per stream end used, in first-use order
    /// (gathered at its end).
    io: Vec<StreamIo>,
    /// The period's entries from `MAX_IO` on (the thread-local recorder
    /// holds the others), with their counts.
    over: Vec<StreamIo>,
    /// The period's op runs (spilled from the thread-local list, then all).
    ops: Vec<Op>,
    op_times: Vec<u64>,
    /// Count mode: the entries of the period that ended.
    ends: Vec<EndIo>,
    /// Count mode: bindings a period's end forgot, dropped by the worker
    /// after its borrow of the log ends ([`take_dead`](Self::take_dead)).
    dead: Vec<Arc<Binding>>,
    /// Scratch for `task_entries::renumber`.
    perm: Vec<u32>,
    io_out: Vec<StreamIo>,
}

pub(crate) fn log_side(s: Side) -> LogSide {
    match s {
        Side::Reader => LogSide::Reader,
        Side::Writer => LogSide::Writer,
    }
}

impl WorkerLog {
    /// Creates `dir/worker-{id}.rlog`.
    pub(crate) fn create(dir: &Path, worker: usize, header: &Header) -> std::io::Result<Self> {
        let writer = LogWriter::create(dir, worker as u32, header)?;
        Ok(WorkerLog {
            flags: header.flags,
            writer,
            enc: Encoder::new(),
            // Relaxed: only uniqueness matters, which the RMW gives.
            epoch: (LOGS.fetch_add(1, Ordering::Relaxed) + 1) << 40,
            run_kind: run_kind(header.flags),
            last: 0,
            io: Vec::with_capacity(8),
            over: Vec::new(),
            ops: Vec::with_capacity(64),
            op_times: Vec::new(),
            ends: Vec::with_capacity(8),
            dead: Vec::new(),
            perm: Vec::new(),
            io_out: Vec::with_capacity(8),
        })
    }

    /// Sets what the log calls if it stops early
    /// ([`LogWriter::on_stop`]).
    pub(crate) fn on_stop(&mut self, hook: impl FnOnce(&Path, &std::io::Error) + Send + 'static) {
        self.writer.on_stop(hook);
    }

    /// Trims the file (the kernel writes it back on its own); returns the
    /// bytes it holds and whether it stopped early (then marked truncated,
    /// and reported when it stopped). Never fails the run: a log that
    /// cannot be trimmed is reported on stderr and keeps a zero tail, which
    /// readers take as its end.
    pub(crate) fn finish(self) -> (u64, bool) {
        let written = self.writer.written();
        let stopped = self.writer.error().is_some();
        let path = self.writer.path().to_path_buf();
        match self.writer.finish_unsynced() {
            Ok(n) => (n, false),
            Err(_) if stopped => (written, true),
            Err(e) => {
                eprintln!(
                    "rill: warning: could not trim monitoring log {}: {e}",
                    path.display()
                );
                (written, false)
            }
        }
    }

    /// Whether the run samples its workers (`sampler.rs`).
    pub(crate) fn is_sampled(&self) -> bool {
        self.flags.is_sampled()
    }

    /// Whether the run is in sample mode only (see [`sample_only`]).
    pub(crate) fn is_sample_only(&self) -> bool {
        sample_only(self.flags)
    }

    #[inline]
    fn has(&self, f: MonitorFlags) -> bool {
        self.flags.intersects(f)
    }

    pub(crate) fn worker_start(&mut self) {
        self.last = clock::now();
        if self.has(MonitorFlags::WORKER) {
            self.enc.worker_start(&mut self.writer, self.last);
        }
    }

    pub(crate) fn worker_end(&mut self) {
        if self.has(MonitorFlags::WORKER) {
            self.enc.worker_end(&mut self.writer, clock::now());
        }
    }

    /// The worker was idle from the end of its last period until now.
    pub(crate) fn worker_resumed(&mut self) {
        let now = clock::now();
        let t = self.last;
        self.last = now;
        if self.has(MonitorFlags::WORKER) {
            self.enc
                .worker_wait(&mut self.writer, t, now.saturating_sub(t));
        }
    }

    pub(crate) fn task_assign(&mut self, task: u64, parent: u64, worker: usize, name: &str) {
        if self.has(MonitorFlags::MAPPING) {
            self.enc.task_assign(
                &mut self.writer,
                clock::now(),
                task,
                parent,
                worker as u32,
                name,
            );
        }
    }

    pub(crate) fn task_migrate(&mut self, task: u64, from: usize, to: usize) {
        if self.has(MonitorFlags::MAPPING) {
            self.enc
                .task_migrate(&mut self.writer, clock::now(), task, from as u32, to as u32);
        }
    }

    pub(crate) fn stream_open(
        &mut self,
        stream: u64,
        cap: usize,
        creator: u64,
        name: Option<&str>,
    ) {
        if self.has(MonitorFlags::STREAM) {
            let t = clock::now();
            let cap = u32::try_from(cap).unwrap_or(u32::MAX);
            self.enc
                .stream_open(&mut self.writer, t, stream, cap, creator);
            if let Some(n) = name {
                self.enc.stream_name(&mut self.writer, t, stream, n);
            }
        }
    }

    pub(crate) fn stream_bind(&mut self, stream: u64, side: Side, task: u64) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_bind(&mut self.writer, clock::now(), stream, log_side(side), task);
        }
    }

    /// The `side` end of `stream` was dropped, having moved `messages` and
    /// waited `waits` times; sample mode logs those totals as well.
    pub(crate) fn stream_close(&mut self, stream: u64, side: Side, messages: u64, waits: u64) {
        if self.has(MonitorFlags::STREAM) {
            let t = clock::now();
            let side = log_side(side);
            self.enc.stream_close(&mut self.writer, t, stream, side);
            if sample_only(self.flags) {
                self.enc
                    .stream_totals(&mut self.writer, t, stream, side, messages, waits);
            }
        }
    }

    /// Sample mode: task `task` ended after `dispatches` dispatches.
    pub(crate) fn task_totals(&mut self, task: u64, dispatches: u64) {
        self.enc
            .task_totals(&mut self.writer, clock::now(), task, dispatches);
    }

    /// The worker's counts at its end (every monitored worker).
    pub(crate) fn worker_totals(&mut self, dispatches: u64, spins: u64, idles: u64, parks: u64) {
        self.enc.worker_totals(
            &mut self.writer,
            clock::now(),
            dispatches,
            spins,
            idles,
            parks,
        );
    }

    pub(crate) fn stream_replace(&mut self, side: Side, old: u64, new: u64) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_replace(&mut self.writer, clock::now(), log_side(side), old, new);
        }
    }

    /// A dispatch of `task` begins. In ops mode its epoch is the task's
    /// base, and the task's entries are loaded (`task_entries.rs`).
    #[inline]
    pub(crate) fn begin_period(&mut self, task: &Task) {
        self.epoch += 4;
        let k = self.run_kind;
        period::with(|r| match k {
            kind::COUNT => {
                task.mon.arm();
                r.begin(self.epoch, k, task.mon.tag())
            }
            kind::NONE => r.begin(self.epoch, k, 0),
            _ => r.begin(task.mon.entries.load(r), k, 0),
        });
    }

    /// The bindings that periods' ends forgot since the last call: the
    /// caller drops them once it no longer borrows the log.
    #[inline]
    pub(crate) fn take_dead(&mut self) -> Option<Vec<Arc<Binding>>> {
        (!self.dead.is_empty()).then(|| std::mem::take(&mut self.dead))
    }

    /// The dispatch of `task` ended in `end_state`: write its record.
    #[inline]
    pub(crate) fn end_period(&mut self, task: &Task, end_state: EndState) {
        let end = clock::now();
        let start = self.last;
        self.last = end;
        if self.run_kind == kind::COUNT {
            period::with(Recorder::end);
            return self.end_period_counted(start, end, task, end_state);
        }
        let entries = &task.mon.entries;
        let task = task.id;
        let head = PeriodHead {
            start,
            end,
            task,
            end_state,
        };
        let fast = period::with(|r| {
            r.end();
            if self.run_kind != kind::NONE {
                entries.save(r);
            }
            if !self.over.is_empty() || !self.ops.is_empty() {
                return false;
            }
            let blocked = end_state.stream();
            let (form, lead) = match self.run_kind {
                kind::NONE => (OpsForm::None, None),
                kind::OPS => {
                    let (form, lead) = r.scan_ops(|i, _, n| r.add_count(i, n));
                    if form == OpsForm::Explicit {
                        // Listed ops: the general path below (counts from the
                        // list again, so undo the scan's).
                        r.clear_counts();
                        return false;
                    }
                    #[cfg(debug_assertions)]
                    check_form(r, head, task_entries::order(lead, r.keep(blocked)), form);
                    r.clear_ops();
                    (form, lead)
                }
                _ => return false,
            };
            if !self.has(MonitorFlags::SCHEDULER) {
                r.clear_counts();
            } else if let Some(ends) = r.take_two(lead, blocked) {
                // One pass, no list: every relay and ring task.
                self.enc.period_two(&mut self.writer, head, ends, form);
            } else {
                self.period_entries(r, head, lead, form);
            }
            r.clear_entries();
            true
        });
        if !fast {
            self.end_period_listed(start, end, task, end_state);
        }
    }

    /// [`end_period`](Self::end_period)'s record of an ops-mode period with
    /// more than two entries whose ops need no list: the entries it keeps
    /// in record order (`task_entries::Order`). Out of line, so that the
    /// period of one or two entries stays small enough to inline the
    /// encoder.
    #[inline(never)]
    fn period_entries(
        &mut self,
        r: &Recorder,
        head: PeriodHead,
        lead: Option<usize>,
        form: OpsForm,
    ) {
        let blocked = head.end_state.stream();
        let order = task_entries::order(lead, r.keep(blocked));
        let mark = blocked
            .and_then(|b| r.entry_of(b))
            .map(|i| order.position(i));
        let mut listed = order.entries();
        self.enc.period_parts(
            &mut self.writer,
            head,
            order.len(),
            |_| r.take_entry(listed.next().unwrap_or(0), true),
            mark,
            &[],
            &[],
            form,
        );
    }

    /// [`end_period`](Self::end_period) in count mode: each of the task's
    /// bindings gives what its end moved since the task's last period
    /// (`binding.rs`); the record lists those that moved a message, woke
    /// the peer or are the stream the task blocked on.
    #[inline]
    fn end_period_counted(&mut self, start: u64, end: u64, task: &Task, end_state: EndState) {
        let blocked = end_state.stream();
        let head = PeriodHead {
            start,
            end,
            task: task.id,
            end_state,
        };
        if let Some(ends) = task.mon.take_two(blocked, &mut self.dead) {
            // One pass, no list: every relay and ring task.
            if self.has(MonitorFlags::SCHEDULER) {
                self.enc
                    .period_two(&mut self.writer, head, ends, OpsForm::None);
            }
            return;
        }
        let ends = &mut self.ends;
        task.mon
            .take_ends(blocked, |e| ends.push(e), &mut self.dead);
        if self.has(MonitorFlags::SCHEDULER) {
            let mark = blocked.and_then(|s| self.ends.iter().position(|e| e.stream == s));
            let ends = &self.ends;
            self.enc.period_parts(
                &mut self.writer,
                head,
                ends.len(),
                |i| ends[i],
                mark,
                &[],
                &[],
                OpsForm::None,
            );
        }
        self.ends.clear();
    }

    /// [`end_period`](Self::end_period) for a period whose entries or ops do
    /// not all fit the thread-local recorder, or whose ops are listed, or
    /// with message times: the entries and ops are gathered into lists,
    /// the entries put in the order of their first op (the task's idle ones
    /// left out, `task_entries::renumber`), and the encoder finds the form.
    #[cold]
    #[inline(never)]
    fn end_period_listed(&mut self, start: u64, end: u64, task: u64, end_state: EndState) {
        let form = period::with(|r| {
            r.take_entries(&mut self.io, false);
            if !self.over.is_empty() {
                self.io.append(&mut self.over);
            }
            match self.run_kind {
                kind::OPS | kind::SLOW => {
                    r.take_ops(&mut self.ops);
                    for op in &self.ops {
                        add(&mut self.io, op.io_index, op.write, op.count);
                    }
                    task_entries::renumber(
                        &mut self.io,
                        &mut self.ops,
                        end_state.stream(),
                        &mut self.perm,
                        &mut self.io_out,
                    );
                    OpsForm::Check
                }
                _ => OpsForm::None,
            }
        });
        if self.has(MonitorFlags::SCHEDULER) {
            let p = PeriodRef {
                start,
                end,
                task,
                end_state,
                io: &self.io,
                ops: &self.ops,
                op_times: &self.op_times,
            };
            self.enc.period_as(&mut self.writer, &p, form);
        }
        self.io.clear();
        self.ops.clear();
        self.op_times.clear();
    }

    /// Lists `end` (of `stream`, a writing end if `write`) in the period
    /// running on this thread, under `r`'s epoch, unless it is listed there
    /// already: what [`Recorder::list`] leaves to the log (entries from
    /// `MAX_IO` on, the `SLOW` run kind). False when no period runs.
    fn list(&mut self, r: &Recorder, end: &mut EndMon, stream: u64, write: bool) -> bool {
        let epoch = r.epoch();
        if epoch == 0 {
            return false;
        }
        if end.epoch() == epoch || r.list(end, stream, write) {
            return true;
        }
        let idx = r.add_entry(stream, write);
        if idx >= MAX_IO {
            self.over.push(StreamIo {
                stream,
                ..StreamIo::default()
            });
        }
        let k = if idx > usize::from(u16::MAX) {
            kind::NONE
        } else {
            self.run_kind
        };
        end.stamp = epoch | k;
        end.set_entry(idx as u16, write);
        true
    }

    /// Entry `idx` of the running period if the log holds it (from `MAX_IO`
    /// on).
    fn over_mut(&mut self, idx: u16) -> Option<&mut StreamIo> {
        self.over.get_mut(usize::from(idx).checked_sub(MAX_IO)?)
    }

    /// A message moved through `end` of `stream`, and the end's epoch is not
    /// this period's, or its kind is `SLOW`: list it if needed, then record.
    pub(crate) fn message(&mut self, end: &mut EndMon, stream: u64, write: bool) {
        period::with(|r| {
            if !self.list(r, end, stream, write) {
                return;
            }
            match end.kind() {
                kind::OPS => self.push_key(r, end.key),
                kind::SLOW => {
                    self.push_key(r, end.key);
                    if self.has(MonitorFlags::MESSAGE_TIME) {
                        self.op_times.push(clock::now());
                    }
                }
                _ => {}
            }
        })
    }

    /// One op (its key) on the thread-local list, spilling it here when it
    /// is full.
    #[inline]
    fn push_key(&mut self, r: &Recorder, key: u32) {
        if !r.push_key(key) {
            self.spill(r);
            let pushed = r.push_key(key);
            debug_assert!(pushed, "a spilled op list has room");
        }
    }

    /// Moves the thread-local op runs into the log's list (it was full).
    pub(crate) fn spill(&mut self, r: &Recorder) {
        r.spill(&mut self.ops);
    }

    /// The last operation on `end` woke the task on the other side; `end`
    /// is listed in the running period with an entry the log holds (from
    /// `MAX_IO` on; [`hooks::woke_peer`](super::hooks::woke_peer) marks the
    /// others).
    pub(crate) fn woke_peer(&mut self, end: &EndMon) {
        if let Some(s) = self.over_mut(end.idx()) {
            s.woke_peer = true;
        }
    }

    /// Takes back the message that [`message`](Self::message) recorded for
    /// an operation on `end` (listed in the running period) that moved
    /// nothing. Only the `SLOW` kind records here; the thread-local recorder
    /// takes back the others itself ([`Recorder::leave`]).
    pub(crate) fn unmessage(&mut self, end: &EndMon) {
        if end.kind() != kind::SLOW {
            return;
        }
        period::with(|r| r.pop_op());
        if self.has(MonitorFlags::MESSAGE_TIME) {
            self.op_times.pop();
        }
    }
}
