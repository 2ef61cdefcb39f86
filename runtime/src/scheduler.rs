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
//!
//! Two ways to steal. [`Mapping::Steal`](crate::Mapping::Steal): the queue
//! of new tasks is a FIFO and a thief takes one task. [`Mapping::Adaptive`]
//! (crate::Mapping::Adaptive): the queue is a LIFO, so its owner runs the
//! newest task first while thieves take the oldest, and a thief takes a
//! contiguous run (crossbeam's `steal_batch`: about half the queue) and
//! keeps it where no other thief takes it again. A chain spawned in order
//! by one task thus splits at the point where owner and thief meet: with
//! one thief, it is cut once. (With several thieves on one queue, each
//! take is contiguous, but takes may alternate between thieves.) Tasks
//! placed before the run are kept too: they are the mapping's plan. So that the oldest new
//! task cannot wait forever behind newer ones, every [`OLDEST_EVERY`]-th
//! pop of a new task takes the oldest instead: a new task waits at most
//! that many pops of new tasks per task ahead of it. A worker that has had
//! no work yet gets its share without stealing: a spawn on a worker with
//! other work posts it the older half of that worker's new tasks, taken
//! through the owner's own stealer (`WorkerLocal::share_new_tasks`; decision
//! 0022).

use crossbeam_deque::{Steal, Stealer, Worker as Deque};

use crate::task::TaskRef;

/// The ready tasks of one worker, touched only by that worker's thread.
pub(crate) struct ReadyQueue {
    /// Tasks that ran before (all tasks, without work stealing).
    started: Fifo,
    /// Work stealing: tasks that never ran, open to thieves.
    fresh: Option<Deque<TaskRef>>,
    /// Adaptive stealing: this worker's own stealer on `fresh` (a LIFO),
    /// to take the oldest new task now and then.
    oldest: Option<Stealer<TaskRef>>,
    /// Pops of new tasks since the last one that took the oldest.
    fresh_pops: u32,
    /// Adaptive stealing: where a thief's batch lands before it is queued
    /// with the started tasks (`keep_scratch`).
    scratch: Option<Deque<TaskRef>>,
    /// Which queue `pop` tries first, alternating, so that neither starves.
    turn: bool,
}

impl ReadyQueue {
    /// A plain FIFO.
    pub(crate) fn fifo() -> Self {
        ReadyQueue {
            started: Fifo::default(),
            fresh: None,
            oldest: None,
            fresh_pops: 0,
            scratch: None,
            turn: false,
        }
    }

    /// A FIFO for started tasks and `fresh` for new ones, which other
    /// workers steal from; `lifo`: `fresh` is a LIFO (adaptive stealing).
    pub(crate) fn steal(fresh: Deque<TaskRef>, lifo: bool) -> Self {
        ReadyQueue {
            oldest: lifo.then(|| fresh.stealer()),
            started: Fifo::default(),
            fresh: Some(fresh),
            fresh_pops: 0,
            scratch: lifo.then(Deque::new_fifo),
            turn: false,
        }
    }

    /// Adaptive stealing: this worker's own stealer on its new tasks,
    /// which takes the oldest.
    pub(crate) fn oldest(&self) -> Option<&Stealer<TaskRef>> {
        self.oldest.as_ref()
    }

    /// Where a batch a thief takes lands (adaptive stealing only).
    pub(crate) fn scratch(&self) -> Option<&Deque<TaskRef>> {
        self.scratch.as_ref()
    }

    /// Queues what a batch left in the scratch queue with the started
    /// tasks, in its order, where no thief takes it again.
    pub(crate) fn keep_scratch(&mut self) {
        if let Some(s) = &self.scratch {
            while let Some(t) = s.pop() {
                self.started.push(t);
            }
        }
    }

    /// Queues `t`. Returns true when it went where thieves can take it.
    #[inline(always)]
    pub(crate) fn push(&mut self, t: TaskRef) -> bool {
        match &self.fresh {
            Some(d) if t.get().never_ran() && !t.get().pinned.get() => {
                d.push(t);
                true
            }
            _ => {
                self.started.push(t);
                false
            }
        }
    }

    /// Queues `t`, a task that ran, to run next (a task woken from another
    /// worker, `WorkerLocal::drain_inbox`).
    pub(crate) fn push_first(&mut self, t: TaskRef) {
        debug_assert!(!t.get().never_ran());
        self.started.push_front(t);
    }

    /// Queues `t` where thieves cannot take it: a task that ran (it
    /// yielded), or one this worker stole.
    #[inline(always)]
    pub(crate) fn push_kept(&mut self, t: TaskRef) {
        self.started.push(t);
    }

    /// [`push_kept`](Self::push_kept) when the FIFO has room without
    /// growing; false (and nothing queued) when it has none.
    #[inline(always)]
    pub(crate) fn try_push_kept(&mut self, t: TaskRef) -> bool {
        self.started.try_push(t)
    }

    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<TaskRef> {
        if self.fresh.is_none() {
            return self.started.pop();
        }
        self.turn = !self.turn;
        if self.turn {
            self.started.pop().or_else(|| self.pop_fresh())
        } else {
            self.pop_fresh().or_else(|| self.started.pop())
        }
    }

    /// A new task: the newest (or, in turn, the oldest) of a LIFO, the
    /// oldest of a FIFO.
    #[inline]
    fn pop_fresh(&mut self) -> Option<TaskRef> {
        let d = self.fresh.as_ref()?;
        if let Some(own) = &self.oldest {
            self.fresh_pops += 1;
            if self.fresh_pops >= OLDEST_EVERY {
                self.fresh_pops = 0;
                loop {
                    match own.steal() {
                        Steal::Success(t) => return Some(t),
                        Steal::Retry => continue,
                        Steal::Empty => return None,
                    }
                }
            }
        }
        d.pop()
    }

    /// How many tasks that ran are queued (ready again), by a scan of the
    /// FIFO (`worker/plan.rs`, only while blocks wait).
    pub(crate) fn started_ready(&self) -> usize {
        let f = &self.started;
        (0..f.tail.wrapping_sub(f.head))
            .filter(|k| {
                f.buf[f.head.wrapping_add(*k) & f.mask].is_some_and(|t| !t.get().never_ran())
            })
            .count()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.started.head == self.started.tail && self.fresh.as_ref().is_none_or(|d| d.is_empty())
    }
}

/// Adaptive stealing: every this many pops of a new task, the oldest is
/// taken instead of the newest.
pub(crate) const OLDEST_EVERY: u32 = 64;

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

    /// Queues `t` ahead of every queued task.
    pub(crate) fn push_front(&mut self, t: TaskRef) {
        if self.tail.wrapping_sub(self.head) > self.mask {
            self.grow();
        }
        self.head = self.head.wrapping_sub(1);
        let i = self.head & self.mask;
        // SAFETY: `mask` is the buffer's length minus one, so `i` is in bounds.
        *unsafe { self.buf.get_unchecked_mut(i) } = Some(t);
    }

    /// [`push`](Self::push) when the buffer has room; false (and nothing
    /// queued) when it is full.
    #[inline(always)]
    pub(crate) fn try_push(&mut self, t: TaskRef) -> bool {
        if self.tail.wrapping_sub(self.head) > self.mask {
            return false;
        }
        let i = self.tail & self.mask;
        // SAFETY: `mask` is the buffer's length minus one, so `i` is in bounds.
        *unsafe { self.buf.get_unchecked_mut(i) } = Some(t);
        self.tail = self.tail.wrapping_add(1);
        true
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
    #[inline(never)]
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

    /// A LIFO queue of new tasks runs the newest first, and the oldest at
    /// every OLDEST_EVERY-th pop, so none waits forever.
    /// `n` test-owned tasks, numbered from 0; freed by [`free_tasks`].
    fn make_tasks(n: usize) -> Vec<TaskRef> {
        (0..n)
            .map(|i| TaskRef::new(Task::new(i as u64, 0, "t".into(), 0, None)))
            .collect()
    }

    fn free_tasks(tasks: Vec<TaskRef>) {
        for t in tasks {
            // SAFETY: test-owned tasks, each freed once.
            unsafe { t.free() };
        }
    }

    #[test]
    fn lifo_takes_the_oldest_in_turn() {
        let n = OLDEST_EVERY as usize + 2;
        let tasks = make_tasks(n);
        let mut q = ReadyQueue::steal(Deque::new_lifo(), true);
        for t in &tasks {
            assert!(q.push(*t), "a new task is open to thieves");
        }
        let out: Vec<TaskRef> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out.len(), n);
        assert_eq!(out[0], tasks[n - 1], "newest first");
        assert_eq!(
            out[OLDEST_EVERY as usize - 1],
            tasks[0],
            "the oldest in turn"
        );
        free_tasks(tasks);
    }

    #[test]
    fn fifo_keeps_order_across_growth() {
        let tasks = make_tasks(300);
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
        free_tasks(tasks);
    }

    /// Tasks pushed to the front come out first, newest first, ahead of
    /// those pushed to the back, also where the ring wraps and grows.
    #[test]
    fn a_task_pushed_to_the_front_comes_out_first() {
        let tasks = make_tasks(200);
        let mut q = Fifo::default();
        let mut want = std::collections::VecDeque::new();
        let mut out = Vec::new();
        let mut expected = Vec::new();
        for (i, t) in tasks.iter().enumerate() {
            if i % 4 == 1 {
                q.push_front(*t);
                want.push_front(*t);
            } else {
                q.push(*t);
                want.push_back(*t);
            }
            if i % 5 == 0 {
                out.push(q.pop().unwrap());
                expected.push(want.pop_front().unwrap());
            }
        }
        while let Some(t) = q.pop() {
            out.push(t);
        }
        expected.extend(want);
        assert_eq!(out, expected);
        free_tasks(tasks);
    }
}
