//! A worker's ready queue: FIFO by default, a crossbeam-deque worker queue
//! when work stealing is on (its stealers live in the shared runtime state).

use std::collections::VecDeque;

use crossbeam_deque::Worker as Deque;

use crate::task::TaskRef;

/// The ready tasks of one worker, touched only by that worker's thread.
pub(crate) enum ReadyQueue {
    /// Plain FIFO.
    Fifo(VecDeque<TaskRef>),
    /// FIFO that idle workers may steal from.
    Steal(Deque<TaskRef>),
}

impl ReadyQueue {
    #[inline(always)]
    pub(crate) fn push(&mut self, t: TaskRef) {
        match self {
            ReadyQueue::Fifo(q) => q.push_back(t),
            ReadyQueue::Steal(q) => q.push(t),
        }
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<TaskRef> {
        match self {
            ReadyQueue::Fifo(q) => q.pop_front(),
            ReadyQueue::Steal(q) => q.pop(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            ReadyQueue::Fifo(q) => q.is_empty(),
            ReadyQueue::Steal(q) => q.is_empty(),
        }
    }
}
