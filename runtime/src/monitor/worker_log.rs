//! The per-worker monitoring state: the worker's log writer and encoder, and
//! the period being recorded (the paper's combining: a dispatch, its stream
//! counts and its messages go into the one record written when it stops).

use std::path::Path;

use super::clock;
use super::flags::MonitorFlags;
use super::format::{Encoder, EndState, Header, Op, PeriodRef, Side as LogSide, StreamIo};
use super::writer::LogWriter;
use crate::stream::Side;

/// Per-end monitoring state kept in each stream end: which dispatch last
/// listed the stream, and where.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct EndMon {
    epoch: u64,
    idx: u16,
}

/// One worker's log and the period in progress.
pub(crate) struct WorkerLog {
    pub(crate) flags: MonitorFlags,
    writer: LogWriter,
    enc: Encoder,
    /// Unique per dispatch across workers: `(worker + 1) << 40 | n`.
    epoch: u64,
    in_period: bool,
    /// Time of the last clock read at a dispatch boundary: the start of the
    /// next period, or of the next wait. One clock read per dispatch is all
    /// the hot path pays (rdtsc costs 15-30 ns in a VM).
    last: u64,
    io: Vec<StreamIo>,
    ops: Vec<Op>,
    op_times: Vec<u64>,
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
            epoch: ((worker as u64) + 1) << 40,
            in_period: false,
            last: 0,
            io: Vec::with_capacity(8),
            ops: Vec::with_capacity(64),
            op_times: Vec::new(),
        })
    }

    /// Trims and flushes the file; returns the bytes written.
    pub(crate) fn finish(self) -> std::io::Result<u64> {
        self.writer.finish_unsynced()
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

    pub(crate) fn stream_open(&mut self, stream: u64, cap: usize, creator: u64) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_open(&mut self.writer, clock::now(), stream, cap as u32, creator);
        }
    }

    pub(crate) fn stream_bind(&mut self, stream: u64, side: Side, task: u64) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_bind(&mut self.writer, clock::now(), stream, log_side(side), task);
        }
    }

    pub(crate) fn stream_close(&mut self, stream: u64, side: Side) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_close(&mut self.writer, clock::now(), stream, log_side(side));
        }
    }

    pub(crate) fn stream_replace(&mut self, side: Side, old: u64, new: u64) {
        if self.has(MonitorFlags::STREAM) {
            self.enc
                .stream_replace(&mut self.writer, clock::now(), log_side(side), old, new);
        }
    }

    /// A dispatch begins.
    #[inline]
    pub(crate) fn begin_period(&mut self) {
        self.epoch += 1;
        self.in_period = true;
    }

    /// The dispatch of `task` ended in `end_state`: write its record.
    #[inline]
    pub(crate) fn end_period(&mut self, task: u64, end_state: EndState) {
        self.in_period = false;
        let end = clock::now();
        let start = self.last;
        self.last = end;
        if self.has(MonitorFlags::SCHEDULER) {
            self.enc.period(
                &mut self.writer,
                &PeriodRef {
                    start,
                    end,
                    task,
                    end_state,
                    io: &self.io,
                    ops: &self.ops,
                    op_times: &self.op_times,
                },
            );
        }
        self.io.clear();
        self.ops.clear();
        self.op_times.clear();
    }

    /// Index of the stream in this period's io list, listing it on first use.
    #[inline]
    fn io_index(&mut self, end: &mut EndMon, stream: u64) -> usize {
        if end.epoch != self.epoch {
            end.epoch = self.epoch;
            end.idx = self.io.len().min(u16::MAX as usize) as u16;
            self.io.push(StreamIo {
                stream,
                reads: 0,
                writes: 0,
                woke_peer: false,
            });
        }
        end.idx as usize
    }

    /// A message moved through `end` of `stream`.
    #[inline]
    pub(crate) fn message(&mut self, end: &mut EndMon, stream: u64, write: bool) {
        if !self.in_period || !self.has(MonitorFlags::STREAM.union(MonitorFlags::MESSAGE)) {
            return;
        }
        let i = self.io_index(end, stream);
        let Some(io) = self.io.get_mut(i) else { return };
        if write {
            io.writes += 1;
        } else {
            io.reads += 1;
        }
        if self.has(MonitorFlags::MESSAGE) {
            match self.ops.last_mut() {
                Some(op) if op.io_index as usize == i && op.write == write => op.count += 1,
                _ => self.ops.push(Op {
                    io_index: i as u16,
                    write,
                    count: 1,
                }),
            }
            if self.has(MonitorFlags::MESSAGE_TIME) {
                self.op_times.push(clock::now());
            }
        }
    }

    /// The last operation on `end` woke the task on the other side.
    pub(crate) fn woke_peer(&mut self, end: &mut EndMon, stream: u64) {
        if !self.in_period || !self.has(MonitorFlags::STREAM.union(MonitorFlags::MESSAGE)) {
            return;
        }
        let i = self.io_index(end, stream);
        if let Some(io) = self.io.get_mut(i) {
            io.woke_peer = true;
        }
    }
}
