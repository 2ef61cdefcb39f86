//! The vocabulary the layers share, below all of them: a task's id, what a
//! blocked task waits for, a stream's side and its re-check after a
//! barrier, and the holder word with which a stream side records who holds
//! it (`stream/holder.rs` says how it is used). Only `sync` and the
//! monitoring hint are below this module.

use crate::monitor::hint::Hint;
use crate::sync::AtomicUsize;

/// Identifies a task within one run. 0 is never used.
pub type TaskId = u64;

/// What a blocked task waits for (kept for deadlock reports and monitoring).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BlockedOn {
    /// Not blocked.
    #[default]
    Nothing,
    /// Reading an empty stream.
    Input {
        /// The stream's id.
        stream: u64,
        /// The task holding its writer end, when known.
        peer: Option<TaskId>,
    },
    /// Writing a full stream.
    Output {
        /// The stream's id.
        stream: u64,
        /// The task holding its reader end, when known.
        peer: Option<TaskId>,
    },
    /// Polling several streams.
    Any {
        /// The streams' ids and their writers, when known.
        streams: Vec<(u64, Option<TaskId>)>,
    },
}

/// Which end of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The reading end.
    Reader,
    /// The writing end.
    Writer,
}

/// A stream side that a worker re-checks after a barrier, in case its peer
/// missed the registration (see `barrier.rs`).
pub(crate) trait Recheck: Send + Sync {
    /// Wakes the side's waiter if what it waits for is there now.
    fn recheck(&self, side: Side);
    /// The side's settle-window mark.
    fn pend_mark(&self, side: Side) -> &std::sync::atomic::AtomicU64;
    /// The side's position: messages written (`tail`) or read (`head`)
    /// so far, as its end last published them. (Count mode's bindings read
    /// it and the hint; with the hooks compiled out nothing does.)
    #[cfg_attr(not(feature = "monitor"), allow(dead_code))]
    fn position(&self, side: Side) -> &AtomicUsize;
    /// The side's monitoring hint.
    #[cfg_attr(not(feature = "monitor"), allow(dead_code))]
    fn hint(&self, side: Side) -> &Hint;
}

/// Bits of a holder word that hold the run.
pub(crate) const RUN_BITS: u32 = 24;
pub(crate) const TASK_BITS: u32 = 64 - RUN_BITS;
pub(crate) const TASK_MASK: u64 = (1 << TASK_BITS) - 1;
/// The run of a side used from outside every run (a plain thread); no run
/// has this number.
pub(crate) const OUTSIDE_RUN: u64 = (1 << RUN_BITS) - 1;
/// The word of a side used from outside every run: no task.
pub(crate) const OUTSIDE: u64 = OUTSIDE_RUN << TASK_BITS;

/// The holder word of task `task` of run `run` (`run` below
/// [`OUTSIDE_RUN`]; a task id past 2^40 keeps only its low bits, which
/// only a report would show).
pub(crate) fn holder_word(run: u64, task: TaskId) -> u64 {
    (run << TASK_BITS) | (task & TASK_MASK)
}

/// The run part of a holder word.
#[inline(always)]
pub(crate) fn run_of(word: u64) -> u64 {
    word >> TASK_BITS
}

/// The task part of a holder word, 0 when not a task.
#[inline(always)]
pub(crate) fn task_of(word: u64) -> TaskId {
    word & TASK_MASK
}
