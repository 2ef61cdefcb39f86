//! The period being recorded on this thread: the part of a worker's
//! monitoring state that the stream hot path touches, kept in thread-locals
//! so that recording a message is a few fs-relative loads and stores inline
//! at the call site, with no function call and no pointer chase.
//!
//! Each dispatch has an *epoch*, a multiple of 4 unique in the process (see
//! [`WorkerLog`](super::worker_log::WorkerLog)). A stream end that moves a
//! message compares its [`EndMon`]'s *stamp* (the epoch of the period that
//! listed it, plus its [`kind`] in the low bits) with this thread's stamps:
//! on the first message of a period none matches, and the end lists itself
//! in the worker's period (the cold path: an entry index and a kind); after
//! that each message is one of:
//!
//! * count mode (`stream` without `message`): one increment of the entry's
//!   counter in [`Recorder::counts`];
//! * ops mode (`message`): a run-length push onto [`Recorder::ops`]
//!   (increment the last run, or start a new one); the entries' counts then
//!   follow from the ops at the period's end.
//!
//! Nothing here points into a stream end, so an end that is dropped, or moved
//! to another task or worker, in the middle of a period leaves nothing
//! dangling: its messages so far are counted here, and where it goes next it
//! lists itself again under that period's epoch.
//!
//! Who may touch what: everything is thread-local; the worker owning the
//! thread resets it at each dispatch ([`begin`](Recorder::begin) /
//! [`take_counts`](Recorder::take_counts) / [`take_ops`](Recorder::take_ops)),
//! and the stream ends used by the running task fill it in between.

use std::cell::Cell;

use super::format::{Op, OpsForm};

/// Entries per period whose counts live in [`Recorder::counts`] (a power of
/// two); later entries of a (rare) period that uses more ends count on the
/// slow path.
pub(crate) const MAX_IO: usize = 32;
/// Op runs held here before they spill into the worker's log (a power of two).
pub(crate) const MAX_OPS: usize = 256;
/// `run_key` when the period has no op run yet.
const NO_KEY: u32 = u32::MAX;

/// How an end records its messages in the period it is listed in: the low
/// two bits of its stamp.
pub(crate) mod kind {
    /// Nothing to record (the run records no messages).
    pub(crate) const NONE: u64 = 0;
    /// Count in [`Recorder::counts`](super::Recorder::counts).
    pub(crate) const COUNT: u64 = 1;
    /// Push op runs onto [`Recorder::ops`](super::Recorder::ops).
    pub(crate) const OPS: u64 = 2;
    /// The out-of-line path: per-message times, or an entry beyond
    /// [`MAX_IO`](super::MAX_IO) in count mode.
    pub(crate) const SLOW: u64 = 3;
}

/// Per-end monitoring state kept in each stream end: the stamp (epoch and
/// kind) of the period that last listed the end, and its entry there.
///
/// The default (stamp 0) equals this thread's epoch outside any period,
/// where messages are not recorded.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct EndMon {
    pub(crate) stamp: u64,
    pub(crate) idx: u16,
}

impl EndMon {
    /// The epoch of the period that last listed the end.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.stamp & !3
    }

    /// How the end records in that period.
    #[inline]
    pub(crate) fn kind(&self) -> u64 {
        self.stamp & 3
    }
}

/// The thread's period state (see the module documentation).
pub(crate) struct Recorder {
    /// The running dispatch's epoch; 0 when none runs on this thread.
    epoch: Cell<u64>,
    /// `epoch | COUNT` when the running period counts messages, else
    /// `u64::MAX` (no end's stamp).
    count_stamp: Cell<u64>,
    /// `epoch | OPS` when the running period records op runs, else `u64::MAX`.
    ops_stamp: Cell<u64>,
    /// Messages per entry in count mode, for entries below [`MAX_IO`].
    /// Zero between periods.
    counts: [Cell<u32>; MAX_IO],
    /// The key (`entry << 1 | write`) of the last op run, or [`NO_KEY`].
    run_key: Cell<u32>,
    /// Op runs held in `ops`.
    ops_len: Cell<u32>,
    /// Op runs, `key << 32 | count`; the first `ops_len` are this period's
    /// latest (earlier ones spilled into the worker's log).
    ops: [Cell<u64>; MAX_OPS],
}

thread_local! {
    // Const-initialised and without a destructor: each access is a
    // thread-pointer-relative load or store.
    static REC: Recorder = const {
        Recorder {
            epoch: Cell::new(0),
            count_stamp: Cell::new(u64::MAX),
            ops_stamp: Cell::new(u64::MAX),
            counts: [const { Cell::new(0) }; MAX_IO],
            run_key: Cell::new(NO_KEY),
            ops_len: Cell::new(0),
            ops: [const { Cell::new(0) }; MAX_OPS],
        }
    };
}

/// Runs `f` on this thread's recorder.
///
/// `LocalKey::with` is only cheap when it inlines, which LLVM declines for
/// large closures (it then calls the key's getter through a pointer on every
/// message); so only the address is taken inside it.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Recorder) -> R) -> R {
    let p = REC.with(|r| r as *const Recorder);
    // SAFETY: the recorder is const-initialised and has no destructor, so it
    // lives, never moved, as long as this thread; `f` runs on this thread now.
    f(unsafe { &*p })
}

impl Recorder {
    /// The running dispatch's epoch (0: none).
    #[inline(always)]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.get()
    }

    /// The stamp of ends listed for counting in the running period.
    #[inline(always)]
    pub(crate) fn count_stamp(&self) -> u64 {
        self.count_stamp.get()
    }

    /// The stamp of ends listed for op runs in the running period.
    #[inline(always)]
    pub(crate) fn ops_stamp(&self) -> u64 {
        self.ops_stamp.get()
    }

    /// A dispatch with `epoch` (a nonzero multiple of 4) begins on this
    /// thread; its ends record as `run_kind` says.
    #[inline]
    pub(crate) fn begin(&self, epoch: u64, run_kind: u64) {
        debug_assert!(epoch != 0 && epoch & 3 == 0);
        self.epoch.set(epoch);
        let stamp = |k| if run_kind == k { epoch | k } else { u64::MAX };
        self.count_stamp.set(stamp(kind::COUNT));
        self.ops_stamp.set(stamp(kind::OPS));
    }

    /// The dispatch ended: messages from now on are not recorded.
    #[inline]
    pub(crate) fn end(&self) {
        self.epoch.set(0);
        self.count_stamp.set(u64::MAX);
        self.ops_stamp.set(u64::MAX);
    }

    /// Counts one message of entry `idx` (count mode).
    #[inline(always)]
    pub(crate) fn count(&self, idx: u16) {
        let c = &self.counts[usize::from(idx) & (MAX_IO - 1)];
        c.set(c.get().wrapping_add(1));
    }

    /// Records one message of entry `idx` (ops mode); false when the op list
    /// is full and the caller must [`spill`](Self::spill) first.
    #[inline(always)]
    #[must_use]
    pub(crate) fn push_op(&self, idx: u16, write: bool) -> bool {
        let key = u32::from(idx) << 1 | u32::from(write);
        let n = self.ops_len.get() as usize;
        if self.run_key.get() == key {
            // `run_key` is a key only after a run was stored, so n >= 1.
            let op = &self.ops[n.wrapping_sub(1) & (MAX_OPS - 1)];
            op.set(op.get().wrapping_add(1));
            true
        } else if n < MAX_OPS {
            self.ops[n].set(u64::from(key) << 32 | 1);
            self.ops_len.set(n as u32 + 1);
            self.run_key.set(key);
            true
        } else {
            false
        }
    }

    /// Moves all but the last held op run to `out` (the op list was full);
    /// the last run stays, so that it can still grow.
    #[cold]
    pub(crate) fn spill(&self, out: &mut Vec<Op>) {
        let n = self.ops_len.get() as usize;
        if let Some(last) = n.checked_sub(1) {
            out.extend(self.ops[..last].iter().map(|c| op_of(c.get())));
            self.ops[0].set(self.ops[last].get());
            self.ops_len.set(1);
        }
    }

    /// Appends this period's remaining op runs to `out` and clears them.
    #[inline]
    pub(crate) fn take_ops(&self, out: &mut Vec<Op>) {
        let n = (self.ops_len.replace(0) as usize).min(MAX_OPS);
        out.extend(self.ops[..n].iter().map(|c| op_of(c.get())));
        self.run_key.set(NO_KEY);
    }

    /// One pass over this period's held op runs (none spilled): calls
    /// `f(entry, write, count)` for each and says which form the list has,
    /// so that the common forms need no op list at all. Leaves the runs.
    #[inline]
    pub(crate) fn scan_ops(&self, mut f: impl FnMut(u16, bool, u32)) -> OpsForm {
        let n = (self.ops_len.get() as usize).min(MAX_OPS);
        let runs = &self.ops[..n];
        let (Some(first), Some(second)) = (runs.first(), runs.get(1)) else {
            // No run, or one: implied by its entry's count.
            if let Some(r) = runs.first() {
                let op = op_of(r.get());
                f(op.io_index, op.write, op.count);
                return OpsForm::Implied;
            }
            return OpsForm::None;
        };
        let (a, b) = (first.get(), second.get());
        // Interleaved: runs of one message alternating between two keys, the
        // lower first (the order of implied runs).
        let mut interleaved = a as u32 == 1 && b as u32 == 1 && a < b;
        // Implied: keys strictly increasing (one run per entry and side, in
        // entry order, reads before writes).
        let mut implied = true;
        let mut prev_key = None;
        for (i, r) in runs.iter().enumerate() {
            let v = r.get();
            interleaved &= v == if i % 2 == 0 { a } else { b };
            let key = v >> 32;
            implied &= prev_key.is_none_or(|p| key > p);
            prev_key = Some(key);
            let op = op_of(v);
            f(op.io_index, op.write, op.count);
        }
        if implied {
            OpsForm::Implied
        } else if interleaved {
            OpsForm::Interleaved
        } else {
            OpsForm::Explicit
        }
    }

    /// Forgets this period's held op runs.
    #[inline]
    pub(crate) fn clear_ops(&self) {
        self.ops_len.set(0);
        self.run_key.set(NO_KEY);
    }

    /// Calls `f(i, count)` for the counts of the first `n` entries and
    /// clears them.
    #[inline]
    pub(crate) fn take_counts(&self, n: usize, mut f: impl FnMut(usize, u32)) {
        for (i, c) in self.counts[..n.min(MAX_IO)].iter().enumerate() {
            f(i, c.replace(0));
        }
    }
}

/// An op from its packed form `key << 32 | count`.
#[inline]
fn op_of(v: u64) -> Op {
    let key = (v >> 32) as u32;
    Op {
        io_index: (key >> 1) as u16,
        write: key & 1 != 0,
        count: v as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_spill_in_order() {
        with(|r| {
            let mut out = Vec::new();
            for (idx, w) in [(0, false), (0, false), (1, true), (0, false)] {
                assert!(r.push_op(idx, w));
            }
            r.take_ops(&mut out);
            assert_eq!(out, [Op::read(0, 2), Op::write(1, 1), Op::read(0, 1)]);
            out.clear();
            let mut n = 0;
            for i in 0..MAX_OPS + 3 {
                let w = i % 2 == 1;
                if !r.push_op(0, w) {
                    r.spill(&mut out);
                    assert!(r.push_op(0, w));
                }
                n += 1;
            }
            r.take_ops(&mut out);
            assert_eq!(out.len(), n);
            assert!(out
                .iter()
                .enumerate()
                .all(|(i, op)| op.count == 1 && op.write == (i % 2 == 1)));
        });
    }

    #[test]
    fn counts_clear_when_taken() {
        with(|r| {
            r.count(0);
            r.count(2);
            r.count(2);
            let mut got = Vec::new();
            r.take_counts(3, |i, c| got.push((i, c)));
            assert_eq!(got, [(0, 1), (1, 0), (2, 2)]);
            got.clear();
            r.take_counts(3, |i, c| got.push((i, c)));
            assert_eq!(got, [(0, 0), (1, 0), (2, 0)]);
        });
    }
}
