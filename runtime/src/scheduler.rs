//! A worker's ready queue: a FIFO, plus, when work stealing is on, a
//! crossbeam-deque queue of the tasks that never ran, which idle workers may
//! steal (its stealers live in the shared runtime state).
//!
//! Only tasks that never ran are stolen. A task that ran keeps the worker it
//! first ran on: its stack may hold values that are not `Send` (an `Rc`
//! also kept in a `thread_local!`, a reference into thread-local data, a
//! thread id), and moving it to another thread would be a data race
//! reachable from safe code. A task that never ran holds nothing but its
//! closure, which `spawn` requires to be `Send`.

use crossbeam_deque::Worker as Deque;

use crate::task::TaskRef;

/// The ready tasks of one worker, touched only by that worker's thread.
pub(crate) struct ReadyQueue {
    /// Tasks that ran before (all tasks, without work stealing).
    started: Fifo,
    /// Work stealing: tasks that never ran, open to thieves.
    fresh: Option<Deque<TaskRef>>,
    /// Which queue `pop` tries first, alternating, so that neither starves.
    turn: bool,
}

impl ReadyQueue {
    /// A plain FIFO.
    pub(crate) fn fifo() -> Self {
        ReadyQueue {
            started: Fifo::default(),
            fresh: None,
            turn: false,
        }
    }

    /// A FIFO for started tasks and `fresh` for new ones, which other
    /// workers steal from.
    pub(crate) fn steal(fresh: Deque<TaskRef>) -> Self {
        ReadyQueue {
            started: Fifo::default(),
            fresh: Some(fresh),
            turn: false,
        }
    }

    /// Queues `t`. Returns true when it went where thieves can take it.
    #[inline(always)]
    pub(crate) fn push(&mut self, t: TaskRef) -> bool {
        match &self.fresh {
            Some(d) if t.get().never_ran() => {
                d.push(t);
                true
            }
            _ => {
                self.started.push(t);
                false
            }
        }
    }

    /// Queues `t` where thieves cannot take it: a task that ran (it
    /// yielded), or one this worker stole.
    #[inline(always)]
    pub(crate) fn push_kept(&mut self, t: TaskRef) {
        self.started.push(t);
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<TaskRef> {
        match &self.fresh {
            None => self.started.pop(),
            Some(d) => {
                self.turn = !self.turn;
                if self.turn {
                    self.started.pop().or_else(|| d.pop())
                } else {
                    d.pop().or_else(|| self.started.pop())
                }
            }
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.started.head == self.started.tail && self.fresh.as_ref().is_none_or(|d| d.is_empty())
    }
}

/// A growable power-of-two ring: push and pop are a mask, a load and a store
/// (VecDeque's general wrap-around handling cost four times as many
/// instructions on the yield path).
///
/// Slots outside `head..tail` keep stale copies of tasks that were popped
/// (a `TaskRef` is a plain pointer); they are never read.
pub(crate) struct Fifo {
    buf: Box<[Option<TaskRef>]>,
    /// `buf.len() - 1`; the length is a power of two.
    mask: usize,
    head: usize,
    tail: usize,
}

impl Default for Fifo {
    fn default() -> Self {
        let buf: Box<[Option<TaskRef>]> = vec![None; 64].into();
        Fifo {
            mask: buf.len() - 1,
            buf,
            head: 0,
            tail: 0,
        }
    }
}

impl Fifo {
    #[inline(always)]
    pub(crate) fn push(&mut self, t: TaskRef) {
        if self.tail.wrapping_sub(self.head) > self.mask {
            self.grow();
        }
        let i = self.tail & self.mask;
        // SAFETY: `mask` is the buffer's length minus one, so `i` is in bounds.
        *unsafe { self.buf.get_unchecked_mut(i) } = Some(t);
        self.tail = self.tail.wrapping_add(1);
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<TaskRef> {
        if self.head == self.tail {
            return None;
        }
        let i = self.head & self.mask;
        // SAFETY: as in `push`. The slot is in `head..tail`, so it holds the
        // task pushed there (`Some`); the copy left behind is never read.
        let t = *unsafe { self.buf.get_unchecked(i) };
        self.head = self.head.wrapping_add(1);
        t
    }

    #[cold]
    fn grow(&mut self) {
        let n = self.buf.len();
        let mut nb: Box<[Option<TaskRef>]> = vec![None; n * 2].into();
        for (k, slot) in nb.iter_mut().enumerate().take(n) {
            *slot = self.buf[self.head.wrapping_add(k) & self.mask];
        }
        self.buf = nb;
        self.mask = 2 * n - 1;
        self.head = 0;
        self.tail = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Task, TaskRef};

    #[test]
    fn fifo_keeps_order_across_growth() {
        let tasks: Vec<TaskRef> = (0..300)
            .map(|i| TaskRef::new(Task::new(std::ptr::null(), i, 0, "t".into(), 0, None)))
            .collect();
        let mut q = Fifo::default();
        let mut out = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            q.push(*t);
            if i % 3 == 0 {
                out.push(q.pop().unwrap());
            }
        }
        while let Some(t) = q.pop() {
            out.push(t);
        }
        assert_eq!(out, tasks);
        for t in tasks {
            // SAFETY: test-owned tasks, freed once.
            unsafe { t.free() };
        }
    }
}
