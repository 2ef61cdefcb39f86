//! The latency replay: every task's reads and writes, in order, over all
//! workers' logs, giving each message a latency (see [`summarize`](crate::summarize)).

use std::collections::VecDeque;

use crate::load::ids::IdIndex;

use crate::load::model::RunLog;

use crate::load::raw_latency::{Acc, RawLatency};
use crate::replay::latency_feed::{feed, feed_from, FeedRx};

/// A message read or write waiting for its task to be resumed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    stream: u32,
    write: bool,
    busy: u64,
}

#[derive(Debug, Default)]
struct TaskR {
    id: u64,
    /// Busy clock: ticks dispatched so far.
    busy: u64,
    /// The last op was a write.
    writing: bool,
    /// Ever wrote a message (so not a sink).
    wrote: bool,
    /// Busy clock at the start of the current component execution.
    ce_start: u64,
    /// Busy clock at the last write.
    last_write: u64,
    /// Largest latency among the current CE's parents.
    parent: Option<u64>,
    /// Ops not yet replayed because a read found its message not yet written.
    backlog: VecDeque<Pending>,
    /// Latencies of the messages it read, while it has written none.
    reads: Acc,
}

#[derive(Debug, Default)]
struct StreamR {
    /// Latencies of messages written and not yet read.
    queue: VecDeque<u64>,
    /// Tasks stalled reading it.
    waiting: Vec<u32>,
}

/// Periods claiming more messages than this are left out of the replay.
const MAX_PERIOD_MESSAGES: u64 = 1 << 24;

/// A stalled task whose backlog grows past this gives up waiting for the
/// message (its writer's log is damaged or missing).
const MAX_BACKLOG: usize = 1 << 20;

/// Bytes the replay's buffers of pending messages (queued latencies and
/// stalled tasks' backlogs, spare room included) may take: when one grows
/// past it, the replay first returns the spare room, then gives up the
/// largest holdings whole (see [`Replay::make_room`]). A run's messages in
/// flight take 8 bytes each and a stream holds few of them, so only logs
/// with a missing or damaged side (or forged counts) come near it.
const MAX_HELD_BYTES: usize = 64 << 20;

/// Messages the replay replays for logs of any size; see [`message_budget`].
const BUDGET_BASE: u64 = 1 << 24;

/// Messages the replay replays per byte of log, beyond [`BUDGET_BASE`]: far
/// more than a run can record per byte (a period of thousands of messages
/// still takes several bytes), far fewer than forged counts can claim.
const BUDGET_PER_BYTE: u64 = 1024;

/// How many messages the replay replays for logs of `bytes` bytes in all;
/// periods past that are left out (counted as skipped), so that a small log
/// claiming billions of messages cannot keep it busy for hours.
pub(crate) fn message_budget(bytes: u64) -> u64 {
    BUDGET_BASE.saturating_add(bytes.saturating_mul(BUDGET_PER_BYTE))
}

#[derive(Debug, Default)]
struct Replay {
    tasks: Vec<TaskR>,
    task_ix: IdIndex,
    streams: Vec<StreamR>,
    stream_ix: IdIndex,
    wake: Vec<u32>,
    unmatched: u64,
    /// Queued messages given up to make room (never read, as far as the
    /// replay can tell).
    dropped: u64,
    /// Bytes of the queues' and backlogs' buffers (their capacity).
    held: usize,
    /// Most bytes `held` may reach ([`MAX_HELD_BYTES`]; tests use less).
    max_held: usize,
    /// Messages left to replay.
    budget: u64,
}

/// Bytes a queued latency takes.
const QUEUED: usize = std::mem::size_of::<u64>();
/// Bytes a backlog entry takes.
const BACKLOGGED: usize = std::mem::size_of::<Pending>();

/// Halves the spare room of a queue or backlog that has drained to a
/// quarter of its buffer, so that the buffers a log's messages leave behind
/// stay in proportion to what is pending.
#[inline]
fn trim<T>(q: &mut std::collections::VecDeque<T>) -> usize {
    let cap = q.capacity();
    if cap > 16 && q.len() < cap / 4 {
        q.shrink_to(cap / 2);
        cap - q.capacity()
    } else {
        0
    }
}

impl Replay {
    fn new(budget: u64, max_held: usize) -> Self {
        Replay {
            budget,
            max_held,
            ..Replay::default()
        }
    }

    #[inline]
    fn task(&mut self, id: u64) -> u32 {
        let (i, new) = self.task_ix.index(id, self.tasks.len());
        if new {
            self.tasks.push(TaskR {
                id,
                ..TaskR::default()
            });
        }
        i as u32
    }

    #[inline]
    fn stream(&mut self, id: u64) -> u32 {
        let (i, new) = self.stream_ix.index(id, self.streams.len());
        if new {
            self.streams.push(StreamR::default());
        }
        i as u32
    }

    /// Replays one op of task `t`, or queues it behind the task's backlog.
    #[inline]
    fn op(&mut self, t: u32, op: Pending) {
        if !self.tasks[t as usize].backlog.is_empty() {
            self.backlog(t, op);
            if self.tasks[t as usize].backlog.len() > MAX_BACKLOG {
                self.force(t);
            }
        } else if !self.try_op(t, op) {
            self.backlog(t, op);
        }
        if self.held > self.max_held {
            self.make_room();
        }
    }

    /// Queues `op` behind task `t`'s backlog.
    fn backlog(&mut self, t: u32, op: Pending) {
        let b = &mut self.tasks[t as usize].backlog;
        let before = b.capacity();
        b.push_back(op);
        self.held += (b.capacity() - before) * BACKLOGGED;
    }

    /// Takes the front op off task `t`'s backlog.
    fn unbacklog(&mut self, t: u32) -> Option<Pending> {
        let b = &mut self.tasks[t as usize].backlog;
        let op = b.pop_front();
        self.held = self.held.saturating_sub(trim(b) * BACKLOGGED);
        op
    }

    /// Brings the pending messages' buffers back under half of
    /// `max_held`: first by returning their spare room (no message
    /// is lost), then by giving up the largest holdings whole, largest
    /// first: a stream's queued messages (counted as never read: typically
    /// its reader's log is missing) or a stalled task's backlog (its reads
    /// counted as unmatched, as when the backlog outgrows [`MAX_BACKLOG`]).
    /// Each call frees at least half the limit, so the scans here cost
    /// little per message.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        let mut held = 0;
        let mut big: Vec<(usize, bool, u32)> = Vec::new();
        for (i, s) in self.streams.iter_mut().enumerate() {
            s.queue.shrink_to_fit();
            held += s.queue.capacity() * QUEUED;
            if !s.queue.is_empty() {
                big.push((s.queue.capacity() * QUEUED, true, i as u32));
            }
        }
        for (i, t) in self.tasks.iter_mut().enumerate() {
            t.backlog.shrink_to_fit();
            held += t.backlog.capacity() * BACKLOGGED;
            if !t.backlog.is_empty() {
                big.push((t.backlog.capacity() * BACKLOGGED, false, i as u32));
            }
        }
        self.held = held;
        big.sort_unstable_by(|a, b| b.cmp(a));
        for (_, stream, i) in big {
            if self.held <= self.max_held / 2 {
                break;
            }
            if stream {
                let q = std::mem::take(&mut self.streams[i as usize].queue);
                self.dropped += q.len() as u64;
                self.held = self.held.saturating_sub(q.capacity() * QUEUED);
            } else {
                self.give_up_backlog(i);
            }
        }
        self.drain();
    }

    /// Replays task `t`'s whole backlog now, its reads that find no message
    /// counted as unmatched (as [`force`](Self::force) does, one by one).
    fn give_up_backlog(&mut self, t: u32) {
        let b = std::mem::take(&mut self.tasks[t as usize].backlog);
        self.held = self.held.saturating_sub(b.capacity() * BACKLOGGED);
        if let Some(front) = b.front() {
            self.streams[front.stream as usize]
                .waiting
                .retain(|&x| x != t);
        }
        for op in b {
            if op.write {
                self.try_op(t, op);
            } else {
                let lat = self.take_message(op.stream as usize);
                self.unmatched += u64::from(lat.is_none());
                self.read(t, lat);
            }
        }
    }

    /// The oldest message queued on stream `s`, if any.
    #[inline]
    fn take_message(&mut self, s: usize) -> Option<u64> {
        let q = &mut self.streams[s].queue;
        let lat = q.pop_front()?;
        self.held = self.held.saturating_sub(trim(q) * QUEUED);
        Some(lat)
    }

    /// Applies an op; false if it is a read of a message not yet written (the
    /// task is then registered as waiting on the stream).
    #[inline(always)]
    fn try_op(&mut self, t: u32, op: Pending) -> bool {
        let s = op.stream as usize;
        if op.write {
            let task = &mut self.tasks[t as usize];
            let lat = op
                .busy
                .saturating_sub(task.ce_start)
                .saturating_add(task.parent.unwrap_or(0));
            task.writing = true;
            task.wrote = true;
            task.last_write = op.busy;
            if task.parent.is_none() {
                // A write without inputs (a source) is an execution of its own.
                task.ce_start = op.busy;
            }
            let st = &mut self.streams[s];
            let before = st.queue.capacity();
            st.queue.push_back(lat);
            self.held += (st.queue.capacity() - before) * QUEUED;
            // One message satisfies one stalled reader: waking all of them
            // would cost each write as many steps as there are readers.
            if let Some(w) = st.waiting.pop() {
                self.wake.push(w);
            }
            true
        } else {
            let Some(lat) = self.take_message(s) else {
                let w = &mut self.streams[s].waiting;
                if !w.contains(&t) {
                    w.push(t);
                }
                return false;
            };
            self.read(t, Some(lat));
            true
        }
    }

    /// Task `t` read a message of latency `lat` (`None`: unknown).
    #[inline]
    fn read(&mut self, t: u32, lat: Option<u64>) {
        let task = &mut self.tasks[t as usize];
        if task.writing {
            task.writing = false;
            task.ce_start = task.last_write;
            task.parent = None;
        }
        if let Some(lat) = lat {
            task.parent = Some(task.parent.map_or(lat, |p| p.max(lat)));
            if !task.wrote {
                task.reads.add(lat);
            }
        }
    }

    /// Gives up waiting on the front read of `t`'s backlog.
    fn force(&mut self, t: u32) {
        if let Some(op) = self.unbacklog(t) {
            self.unmatched += 1;
            self.streams[op.stream as usize].waiting.retain(|&x| x != t);
            self.read(t, None);
            self.wake.push(t);
        }
    }

    /// Resumes woken tasks until none can progress.
    fn drain(&mut self) {
        while let Some(t) = self.wake.pop() {
            while let Some(&op) = self.tasks[t as usize].backlog.front() {
                if self.try_op(t, op) {
                    self.unbacklog(t);
                } else {
                    break;
                }
            }
        }
    }

    /// Replays one period in its feed form (see [`FeedTx::period`]).
    #[inline]
    fn period(&mut self, w: &[u64], raw: &mut RawLatency) {
        let (start, dur, task) = (w[0], w[1], w[2]);
        let n_ops = (w[3] >> 32) as usize;
        let ops = &w[4..4 + 2 * n_ops];
        let times = &w[4 + 2 * n_ops..];
        let t = self.task(task);
        // Durations and counts come from the files: the busy clock and the
        // message count saturate rather than overflow.
        let busy0 = self.tasks[t as usize].busy;
        self.tasks[t as usize].busy = busy0.saturating_add(dur);
        let n = ops
            .chunks_exact(2)
            .fold(0u64, |n, o| n.saturating_add(o[1] >> 1));
        if n == 0 {
            return;
        }
        if n > MAX_PERIOD_MESSAGES {
            // Implausible (a damaged but decodable record): replaying it
            // message by message could take minutes and gigabytes.
            raw.skipped_periods += 1;
            return;
        }
        if n > self.budget {
            // The logs claim more messages than their size makes plausible:
            // the rest of the replay is left out.
            self.budget = 0;
            raw.skipped_periods += 1;
            return;
        }
        self.budget -= n;
        raw.message_periods += 1;
        let timed = times.len() as u64 == n;
        raw.timed_periods += u64::from(timed);
        // The i-th message (from 1) sits at floor(dur * i / n), stepped
        // without a division per message: q + r/n advances by dur/n. (n is
        // mostly 1 or 2: a shift, not a division.)
        let (q_step, r_step) = if n.is_power_of_two() {
            (dur >> n.trailing_zeros(), dur & (n - 1))
        } else {
            (dur / n, dur % n)
        };
        let (mut q, mut r) = (0u64, 0u64);
        let mut i = 0usize;
        for op in ops.chunks_exact(2) {
            let stream = self.stream(op[0]);
            let write = op[1] & 1 != 0;
            for _ in 0..op[1] >> 1 {
                let at = if timed {
                    times[i].saturating_sub(start).min(dur)
                } else {
                    q += q_step;
                    r += r_step;
                    if r >= n {
                        q += 1;
                        r -= n;
                    }
                    q
                };
                i += 1;
                self.op(
                    t,
                    Pending {
                        stream,
                        write,
                        busy: busy0.saturating_add(at),
                    },
                );
            }
        }
        if !self.wake.is_empty() {
            self.drain();
            if self.held > self.max_held {
                self.make_room();
            }
        }
    }
}

/// Replays all periods of the feeds, merged by start time, up to `budget`
/// messages (see [`message_budget`]).
pub(crate) fn replay(mut feeds: Vec<FeedRx>, budget: u64) -> RawLatency {
    let mut rp = Replay::new(budget, MAX_HELD_BYTES);
    let mut raw = RawLatency::default();
    // The next period of each feed, smallest start first: a linear scan, as
    // there are few workers.
    let mut heads: Vec<(u64, usize)> = feeds
        .iter_mut()
        .enumerate()
        .filter_map(|(i, f)| f.peek_start().map(|s| (s, i)))
        .collect();
    while !heads.is_empty() {
        let mut hi = 0;
        for (j, h) in heads.iter().enumerate().skip(1) {
            if h.0 < heads[hi].0 {
                hi = j;
            }
        }
        // The chosen feed stays the choice while its next start is below
        // the heads before it and not above those after it (the same tie
        // order as choosing afresh each time), as the others do not move.
        let before = heads[..hi].iter().map(|h| h.0).min().unwrap_or(u64::MAX);
        let after = heads[hi + 1..]
            .iter()
            .map(|h| h.0)
            .min()
            .unwrap_or(u64::MAX);
        let f = &mut feeds[heads[hi].1];
        loop {
            rp.period(f.take(), &mut raw);
            match f.peek_start() {
                Some(s) if s < before && s <= after => {}
                Some(s) => {
                    heads[hi].0 = s;
                    break;
                }
                None => {
                    heads.swap_remove(hi);
                    break;
                }
            }
        }
    }
    // Reads still waiting: their messages were never logged.
    rp.unmatched += rp
        .tasks
        .iter()
        .map(|t| t.backlog.iter().filter(|op| !op.write).count() as u64)
        .sum::<u64>();
    raw.unmatched = rp.unmatched;
    raw.unread = rp.dropped + rp.streams.iter().map(|s| s.queue.len() as u64).sum::<u64>();
    raw.readers = rp
        .tasks
        .into_iter()
        .filter(|t| !t.wrote && t.reads.n > 0)
        .map(|t| (t.id, t.reads))
        .collect();
    raw
}

/// The replay over a loaded run: one feeding thread per log.
pub(crate) fn replay_run(run: &RunLog) -> RawLatency {
    let bytes = run
        .workers
        .iter()
        .fold(0u64, |n, w| n.saturating_add(w.data().len() as u64));
    std::thread::scope(|s| {
        let mut rxs = Vec::new();
        for w in &run.workers {
            let (tx, rx) = feed();
            rxs.push(rx);
            let sc = w.scanner();
            s.spawn(move || feed_from(sc, tx));
        }
        replay(rxs, message_budget(bytes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A period in feed words: `ops` as (stream, count, write).
    fn words(start: u64, dur: u64, task: u64, ops: &[(u64, u64, bool)]) -> Vec<u64> {
        let mut w = vec![start, dur, task, (ops.len() as u64) << 32];
        for &(stream, count, write) in ops {
            w.push(stream);
            w.push(count << 1 | u64::from(write));
        }
        w
    }

    /// What the replay's buffers take, counted afresh.
    fn held_now(rp: &Replay) -> usize {
        let q: usize = rp.streams.iter().map(|s| s.queue.capacity() * QUEUED).sum();
        let b: usize = rp
            .tasks
            .iter()
            .map(|t| t.backlog.capacity() * BACKLOGGED)
            .sum();
        q + b
    }

    #[test]
    fn unread_messages_are_given_up_past_the_limit() {
        let limit = 256 << 10;
        let mut rp = Replay::new(u64::MAX, limit);
        let mut raw = RawLatency::default();
        // 16 writers, 20 000 messages each on a stream nobody reads: 2.5
        // MiB of latencies.
        for k in 0..16u64 {
            rp.period(
                &words(k * 10, 10, k + 1, &[(100 + k, 20_000, true)]),
                &mut raw,
            );
            assert_eq!(rp.held, held_now(&rp), "accounting after period {k}");
            assert!(rp.held <= 2 * limit, "{} bytes held", rp.held);
        }
        assert!(rp.dropped > 0);
        let total: u64 = rp.dropped + rp.streams.iter().map(|s| s.queue.len() as u64).sum::<u64>();
        assert_eq!(
            total,
            16 * 20_000,
            "every message queued or counted as dropped"
        );
    }

    #[test]
    fn stalled_reads_are_given_up_past_the_limit() {
        let limit = 256 << 10;
        let mut rp = Replay::new(u64::MAX, limit);
        let mut raw = RawLatency::default();
        // 16 readers stalled on streams nobody writes: their backlogs.
        for k in 0..16u64 {
            rp.period(
                &words(k * 10, 10, k + 1, &[(100 + k, 20_000, false)]),
                &mut raw,
            );
            assert_eq!(rp.held, held_now(&rp), "accounting after period {k}");
            assert!(rp.held <= 2 * limit, "{} bytes held", rp.held);
        }
        let waiting: u64 = rp.tasks.iter().map(|t| t.backlog.len() as u64).sum();
        assert!(rp.unmatched > 0);
        assert_eq!(rp.unmatched + waiting, 16 * 20_000);
    }

    #[test]
    fn drained_buffers_return_their_room() {
        let mut rp = Replay::new(u64::MAX, MAX_HELD_BYTES);
        let mut raw = RawLatency::default();
        // Each stream in turn fills with 50 000 messages, then drains.
        for k in 0..8u64 {
            let t = k * 100;
            rp.period(&words(t, 10, 1, &[(100 + k, 50_000, true)]), &mut raw);
            rp.period(&words(t + 50, 10, 2, &[(100 + k, 50_000, false)]), &mut raw);
        }
        assert_eq!(rp.held, held_now(&rp));
        assert!(rp.held < 4096, "{} bytes left behind", rp.held);
        assert_eq!(rp.unmatched + rp.dropped, 0);
    }

    #[test]
    fn the_replay_stops_at_its_message_budget() {
        let mut rp = Replay::new(1000, MAX_HELD_BYTES);
        let mut raw = RawLatency::default();
        for k in 0..3 {
            rp.period(&words(k * 10, 10, 1, &[(7, 600, true)]), &mut raw);
        }
        // The first fits; the second does not, and the budget is spent.
        assert_eq!(raw.skipped_periods, 2);
        assert_eq!(rp.streams[0].queue.len(), 600);
        assert_eq!(message_budget(0), BUDGET_BASE);
        assert_eq!(message_budget(u64::MAX), u64::MAX);
    }

    #[test]
    fn huge_durations_saturate_the_busy_clock() {
        let mut rp = Replay::new(u64::MAX, MAX_HELD_BYTES);
        let mut raw = RawLatency::default();
        let big = u64::MAX - 5;
        rp.period(&words(0, big, 1, &[(7, 1, true)]), &mut raw);
        rp.period(
            &words(big, big, 2, &[(7, 1, false), (8, 1, true)]),
            &mut raw,
        );
        rp.period(&words(big, big, 2, &[(9, 1, true)]), &mut raw);
        rp.period(&words(u64::MAX, 1, 3, &[(8, 1, false)]), &mut raw);
        assert_eq!(rp.tasks[1].busy, u64::MAX);
        assert_eq!(rp.tasks[2].reads.max, u64::MAX);
    }

    #[test]
    fn each_message_wakes_one_stalled_reader() {
        let mut rp = Replay::new(u64::MAX, MAX_HELD_BYTES);
        let mut raw = RawLatency::default();
        for task in 1..=3 {
            rp.period(&words(task, 1, task, &[(7, 1, false)]), &mut raw);
        }
        rp.period(&words(10, 3, 9, &[(7, 3, true)]), &mut raw);
        assert!(rp.tasks.iter().all(|t| t.backlog.is_empty()));
        assert!(rp.streams[0].waiting.is_empty() && rp.streams[0].queue.is_empty());
        assert_eq!(rp.unmatched, 0);
    }
}
