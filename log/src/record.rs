//! The decoded form of log records.

/// Which end of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The reading end.
    Reader,
    /// The writing end.
    Writer,
}

impl Side {
    /// The side's name (`reader` / `writer`).
    pub fn name(self) -> &'static str {
        match self {
            Side::Reader => "reader",
            Side::Writer => "writer",
        }
    }
}

/// How a task's dispatch (period) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndState {
    /// The task gave up the worker voluntarily and is ready to run again.
    Yielded,
    /// Blocked reading the empty stream `stream`.
    BlockedInput {
        /// The stream id.
        stream: u64,
    },
    /// Blocked writing the full stream `stream`.
    BlockedOutput {
        /// The stream id.
        stream: u64,
    },
    /// Blocked waiting on several input streams at once.
    BlockedAny,
    /// The task function returned.
    Ended,
    /// The task function panicked.
    Panicked,
}

impl EndState {
    /// The 3-bit code stored in a period's tag byte.
    pub(crate) fn code(self) -> u8 {
        match self {
            EndState::Yielded => 0,
            EndState::BlockedInput { .. } => 1,
            EndState::BlockedOutput { .. } => 2,
            EndState::BlockedAny => 3,
            EndState::Ended => 4,
            EndState::Panicked => 5,
        }
    }

    /// The end state of tag code `code` (what the encoder writes for it), with
    /// `stream` as the blocked-on stream where the state names one; `None`
    /// for a code no state has.
    pub fn from_code(code: u8, stream: u64) -> Option<EndState> {
        Some(match code {
            0 => EndState::Yielded,
            1 => EndState::BlockedInput { stream },
            2 => EndState::BlockedOutput { stream },
            3 => EndState::BlockedAny,
            4 => EndState::Ended,
            5 => EndState::Panicked,
            _ => return None,
        })
    }

    /// The stream the task blocked on, if any.
    pub fn stream(self) -> Option<u64> {
        match self {
            EndState::BlockedInput { stream } | EndState::BlockedOutput { stream } => Some(stream),
            _ => None,
        }
    }
}

/// Messages a period moved over one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamIo {
    /// The stream id.
    pub stream: u64,
    /// Messages read from the stream during the period.
    pub reads: u32,
    /// Messages written to the stream during the period.
    pub writes: u32,
    /// Whether this period woke the task on the other end of the stream.
    pub woke_peer: bool,
}

/// A run of consecutive reads or writes on one stream within a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Op {
    /// Index of the stream in the period's `io` list.
    pub io_index: u16,
    /// Writes (`true`) or reads (`false`).
    pub write: bool,
    /// How many messages in a row.
    pub count: u32,
}

impl Op {
    /// A run of `count` reads on `io[io_index]`.
    pub const fn read(io_index: u16, count: u32) -> Self {
        Op {
            io_index,
            write: false,
            count,
        }
    }

    /// A run of `count` writes on `io[io_index]`.
    pub const fn write(io_index: u16, count: u32) -> Self {
        Op {
            io_index,
            write: true,
            count,
        }
    }
}

/// The op list that the format stores for free: for each `io` entry in order,
/// its reads as one run, then its writes as one run (zero counts omitted).
/// A period whose ops equal this list stores no op bytes at all.
pub fn implied_ops(io: &[StreamIo]) -> impl Iterator<Item = Op> + '_ {
    io.iter().enumerate().flat_map(|(i, s)| {
        let i = i as u16;
        let r = (s.reads > 0).then_some(Op::read(i, s.reads));
        let w = (s.writes > 0).then_some(Op::write(i, s.writes));
        r.into_iter().chain(w)
    })
}

/// Whether `ops` equals [`implied_ops(io)`](implied_ops) (allocation free).
#[inline]
pub(crate) fn ops_are_implied(io: &[StreamIo], ops: &[Op]) -> bool {
    // Fast path: the common single-stream period.
    if let [s] = io {
        let r = Op::read(0, s.reads);
        let w = Op::write(0, s.writes);
        return match (ops, s.reads > 0, s.writes > 0) {
            ([], false, false) => true,
            ([a], true, false) => *a == r,
            ([a], false, true) => *a == w,
            ([a, b], true, true) => *a == r && *b == w,
            _ => false,
        };
    }
    if ops.len() > 2 * io.len() || io.len() > usize::from(u16::MAX) + 1 {
        return false;
    }
    let mut rest = ops;
    let mut next = |want: Op| match rest.split_first() {
        Some((op, tail)) if *op == want => {
            rest = tail;
            true
        }
        _ => false,
    };
    for (i, s) in io.iter().enumerate() {
        let i = i as u16;
        if (s.reads > 0 && !next(Op::read(i, s.reads)))
            || (s.writes > 0 && !next(Op::write(i, s.writes)))
        {
            return false;
        }
    }
    rest.is_empty()
}

/// Most ops an interleaved period may stand for (its `a + b`): bounds what a
/// decoder allocates for one record of a few bytes.
pub const MAX_INTERLEAVED: u32 = 4096;

/// The two runs of [`implied_ops(io)`](implied_ops) when there are exactly
/// two, their counts `a` (first) and `b` fit an interleaving (`a == b` or
/// `a == b + 1`) and `a + b` is at most [`MAX_INTERLEAVED`].
#[inline]
fn interleave_pair(io: &[StreamIo]) -> Option<(Op, Op)> {
    let mut runs = [Op::read(0, 0); 2];
    let mut n = 0;
    for (i, s) in io.iter().enumerate() {
        let i = u16::try_from(i).ok()?;
        for op in [Op::read(i, s.reads), Op::write(i, s.writes)] {
            if op.count > 0 {
                *runs.get_mut(n)? = op;
                n += 1;
            }
        }
    }
    let [a, b] = runs;
    let fits = n == 2
        && (a.count == b.count || a.count == b.count.wrapping_add(1))
        && u64::from(a.count) + u64::from(b.count) <= u64::from(MAX_INTERLEAVED);
    fits.then_some((a, b))
}

/// The op list of an interleaved period, if `io` admits one: the two runs of
/// [`implied_ops`] taken one message at a time, alternately, starting with
/// the first (`A1 B1 A1 B1 ...`). What a relay stage does: read one, write
/// one. A period whose ops equal this list stores no op bytes either.
pub fn interleaved_ops(io: &[StreamIo]) -> Option<impl Iterator<Item = Op>> {
    let (a, b) = interleave_pair(io)?;
    let n = a.count + b.count;
    Some((0..n).map(move |k| {
        let r = if k % 2 == 0 { a } else { b };
        Op { count: 1, ..r }
    }))
}

/// Whether `ops` equals [`interleaved_ops(io)`](interleaved_ops)
/// (allocation free).
#[inline]
pub(crate) fn ops_are_interleaved(io: &[StreamIo], ops: &[Op]) -> bool {
    let Some((a, b)) = interleave_pair(io) else {
        return false;
    };
    if ops.len() as u64 != u64::from(a.count) + u64::from(b.count) {
        return false;
    }
    let (a, b) = (Op { count: 1, ..a }, Op { count: 1, ..b });
    ops.chunks(2).all(|pair| match pair {
        [x, y] => *x == a && *y == b,
        [x] => *x == a,
        _ => false,
    })
}

/// One record of a worker's log. Times are raw clock ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// The worker thread started.
    WorkerStart {
        /// When.
        t: u64,
    },
    /// The worker was idle (no task ready) from `t` for `dur` ticks; written
    /// when it resumes.
    WorkerWait {
        /// When the wait began.
        t: u64,
        /// How long it lasted.
        dur: u64,
    },
    /// The worker thread stopped.
    WorkerEnd {
        /// When.
        t: u64,
    },
    /// A task was created and mapped to `worker`.
    TaskAssign {
        /// When.
        t: u64,
        /// The new task's id.
        task: u64,
        /// The creating task's id, 0 if none.
        parent: u64,
        /// The worker it was mapped to.
        worker: u32,
        /// The task's name.
        name: String,
    },
    /// A task moved from one worker to another.
    TaskMigrate {
        /// When.
        t: u64,
        /// The task id.
        task: u64,
        /// Old worker.
        from: u32,
        /// New worker.
        to: u32,
    },
    /// One dispatch of a task, written when it stopped.
    Period {
        /// When the task was dispatched.
        start: u64,
        /// When it stopped.
        end: u64,
        /// The task id.
        task: u64,
        /// Why it stopped.
        end_state: EndState,
        /// Messages moved per stream.
        io: Vec<StreamIo>,
        /// Order of reads and writes (empty unless the `MESSAGE` flag is on).
        ops: Vec<Op>,
        /// A time per message read or written (empty unless `MESSAGE_TIME` is on).
        op_times: Vec<u64>,
    },
    /// A stream was created.
    StreamOpen {
        /// When.
        t: u64,
        /// The stream id.
        stream: u64,
        /// Its capacity in messages.
        capacity: u32,
        /// The creating task, 0 if none.
        creator: u64,
    },
    /// A stream's name, given by the program (format version 3).
    StreamName {
        /// When.
        t: u64,
        /// The stream id.
        stream: u64,
        /// Its name.
        name: String,
    },
    /// A task used one end of a stream for the first time.
    StreamBind {
        /// When.
        t: u64,
        /// The stream id.
        stream: u64,
        /// Which end.
        side: Side,
        /// The task.
        task: u64,
    },
    /// One end of a stream was closed.
    StreamClose {
        /// When.
        t: u64,
        /// The stream id.
        stream: u64,
        /// Which end.
        side: Side,
    },
    /// A task replaced one of its stream ends by another.
    StreamReplace {
        /// When.
        t: u64,
        /// Which end.
        side: Side,
        /// The stream replaced.
        old: u64,
        /// Its replacement.
        new: u64,
    },
    /// A task's exact counts, written when it ends (sample mode, version 4).
    TaskTotals {
        /// When.
        t: u64,
        /// The task.
        task: u64,
        /// Its dispatches.
        dispatches: u64,
    },
    /// One end's exact counts, written when it is dropped (sample mode,
    /// version 4).
    StreamTotals {
        /// When.
        t: u64,
        /// The stream id.
        stream: u64,
        /// Which end.
        side: Side,
        /// Messages the end moved over its life.
        messages: u64,
        /// Times an operation on the end found the stream empty (reader) or
        /// full (writer) and waited (spun or blocked).
        waits: u64,
    },
    /// A worker's exact counts, written when it stops (sample mode since
    /// version 4; every monitored worker since version 6). A log of periods
    /// holds `dispatches + spins` of them.
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
    /// What the sampler saw one worker doing over a window (sample mode,
    /// version 4, with its signal count version 5; only in `sampler.rlog`).
    Samples(SampleWindow),
}

/// A window of samples of one worker: how many samples found it in each
/// state, and per task how many found that task running.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SampleWindow {
    /// The window's start (ticks).
    pub t: u64,
    /// Its length (ticks).
    pub dur: u64,
    /// The worker sampled.
    pub worker: u32,
    /// Samples in the window (all states): each stands for one period of
    /// the sampling rate.
    pub total: u32,
    /// The independent observations behind them: the timer signals that
    /// took the window's samples of the worker awake (a signal also counts
    /// the periods it missed, its overrun, as the state it finds: ticks
    /// missed while the worker was preempted, or on a CPU-time timer the
    /// periods of CPU time between two scheduler ticks).
    /// The statistical error of a share goes with this count, not with
    /// `total`. Version 4's windows read it as `total`.
    pub signals: u32,
    /// Samples that found the worker between tasks (its scheduler).
    pub sched: u32,
    /// Samples that found a task spinning before a block.
    pub spin: u32,
    /// Samples that found the worker idle and awake (looking for work).
    pub idle: u32,
    /// Samples that found it asleep.
    pub parked: u32,
    /// Samples that found a task running: (task, samples), tasks ascending.
    pub tasks: Vec<(u64, u32)>,
}

impl SampleWindow {
    /// Samples that found a task running.
    pub fn running(&self) -> u64 {
        self.tasks.iter().map(|&(_, n)| u64::from(n)).sum()
    }
}

impl Record {
    /// The record's time: `t`, or a period's `start`.
    pub fn time(&self) -> u64 {
        match *self {
            Record::WorkerStart { t }
            | Record::WorkerWait { t, .. }
            | Record::WorkerEnd { t }
            | Record::TaskAssign { t, .. }
            | Record::TaskMigrate { t, .. }
            | Record::StreamOpen { t, .. }
            | Record::StreamName { t, .. }
            | Record::StreamBind { t, .. }
            | Record::StreamClose { t, .. }
            | Record::TaskTotals { t, .. }
            | Record::StreamTotals { t, .. }
            | Record::WorkerTotals { t, .. }
            | Record::Samples(SampleWindow { t, .. })
            | Record::StreamReplace { t, .. } => t,
            Record::Period { start, .. } => start,
        }
    }

    /// Number of monitoring events the record stands for: 1, plus for a period
    /// the number of messages it read and wrote.
    pub fn events(&self) -> u64 {
        match self {
            Record::Period { io, .. } => {
                1 + io
                    .iter()
                    .map(|s| u64::from(s.reads) + u64::from(s.writes))
                    .sum::<u64>()
            }
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(stream: u64, reads: u32, writes: u32) -> StreamIo {
        StreamIo {
            stream,
            reads,
            writes,
            woke_peer: false,
        }
    }

    #[test]
    fn implied() {
        let ios = [io(5, 1, 0), io(6, 0, 2), io(7, 3, 4), io(8, 0, 0)];
        let ops: Vec<Op> = implied_ops(&ios).collect();
        assert_eq!(
            ops,
            [
                Op::read(0, 1),
                Op::write(1, 2),
                Op::read(2, 3),
                Op::write(2, 4)
            ]
        );
        assert!(ops_are_implied(&ios, &ops));
        assert!(!ops_are_implied(&ios, &ops[..3]));
        assert!(!ops_are_implied(&ios, &[]));
        assert!(ops_are_implied(&[], &[]));
        assert!(ops_are_implied(&[io(1, 0, 0)], &[]));
        let mut extra = ops.clone();
        extra.push(Op::read(0, 1));
        assert!(!ops_are_implied(&ios, &extra));
        let swapped = [ops[1], ops[0], ops[2], ops[3]];
        assert!(!ops_are_implied(&ios, &swapped));
    }

    #[test]
    fn interleaved() {
        let ios = [io(5, 3, 0), io(6, 0, 2)];
        let ops: Vec<Op> = interleaved_ops(&ios).expect("fits").collect();
        let (r, w) = (Op::read(0, 1), Op::write(1, 1));
        assert_eq!(ops, [r, w, r, w, r]);
        assert!(ops_are_interleaved(&ios, &ops));
        assert!(!ops_are_interleaved(&ios, &ops[..4]));
        assert!(!ops_are_interleaved(&ios, &[r, w, r, r, w]));
        // Equal counts, both runs on one entry.
        let one = [io(1, 2, 2)];
        let ops: Vec<Op> = interleaved_ops(&one).expect("fits").collect();
        assert_eq!(
            ops,
            [
                Op::read(0, 1),
                Op::write(0, 1),
                Op::read(0, 1),
                Op::write(0, 1)
            ]
        );
        // Counts that cannot interleave, three runs, one run, too many.
        assert!(interleaved_ops(&[io(1, 1, 0), io(2, 0, 3)]).is_none());
        assert!(interleaved_ops(&[io(1, 1, 1), io(2, 0, 1)]).is_none());
        assert!(interleaved_ops(&[io(1, 2, 0)]).is_none());
        assert!(interleaved_ops(&[io(1, MAX_INTERLEAVED / 2 + 1, MAX_INTERLEAVED / 2)]).is_none());
        assert!(!ops_are_interleaved(&[], &[]));
    }
}
