//! The blocks of tasks added before the run, under the adaptive mapping:
//! when they start, and where.
//!
//! The mapper cuts the tasks added before the run into W blocks along the
//! graph of the streams they were handed (`cut.rs`). Worker 0 starts its block at once; the others wait,
//! unstarted, until the run shows whether it can use more than one worker:
//!
//! - Worker 0 sees two started tasks ready at once after a dispatch (a
//!   pipeline's stage woke its writer and its reader): the network has
//!   work for two workers, and every worker starts its own block, as
//!   planned.
//! - Worker 0, after its first dispatch, stays in one dispatch for
//!   [`PLAN_STALL_SPINS`] configured spins (a computation, not a
//!   hand-off), or a waiting
//!   worker's grace ends ([`PLAN_GRACE_SPINS`] configured spins, spent
//!   spinning, never parked): the waiting worker starts its own block, as
//!   planned. So computations that do not talk still spread. Both times
//!   are worker 0's CPU time (`thread_clock.rs`): on a shared host worker 0
//!   is off its core for milliseconds at a time, and a wall clock would
//!   read that as a computation and start the blocks of a one-token ring.
//!   Where worker 0 ran less than the wall clock says because it sleeps
//!   in a system call (the kernel's thread state says which), the wall
//!   clock counts, as for a computation. A wall-clock backstop
//!   ([`PLAN_BACKSTOP_SPINS`]) bounds the wait.
//! - Worker 0 runs out of work first, without that sign. Then what its
//!   blocked tasks wait on decides (`work_waits_elsewhere`):
//!   - One of them waits writing a full stream (its reader waits in
//!     another block, with a stream's worth of work), or most of them (and
//!     at least two) wait on a stream side that nobody has used yet (the
//!     network has not started talking: consumers added before their
//!     producers, a farm's workers before its dealer). Every worker starts
//!     its own block, as planned.
//!   - Else the tasks waited on each other after talking: it takes every
//!     block still waiting (counted as steals). A ring that passes one
//!     token has one task ready at a time, and runs on one worker instead
//!     of crossing at each block's edge.
//!
//! Only tasks that never ran move; worker 0's watch (a scan of its ready
//! queue after each dispatch) runs only while a block waits, in a loop of
//! its own, so the dispatch loop is the same as without it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Dispatched, WorkerLocal};
use crate::run::shared::Phase;
use crate::task::TaskRef;
use crate::vocab::BlockedOn;

impl WorkerLocal {
    /// Worker 0, while blocks wait: dispatches until the sign of
    /// parallelism (two started tasks ready) or until it runs dry, then
    /// takes the blocks still waiting. Returns to the dispatch loop.
    pub(super) fn watch_plan<const MON: bool, const SAMPLE: bool>(&self) {
        // Tasks started here during the watch that have not ended: at the
        // point of running dry, every one of them is blocked.
        let mut started: Vec<TaskRef> = Vec::new();
        while self.shared.blocks_wait() {
            if self.shared.phase() != Phase::Running {
                return;
            }
            let Some(t) = self.next_task() else {
                // Dry before any sign.
                if self.work_waits_elsewhere(&started) {
                    self.shared.parallel.store(true, Ordering::Release);
                    return;
                }
                // One worker's work: a token went round.
                for w in 1..self.shared.workers.len() {
                    for t in self.shared.take_block(w) {
                        self.ready().push_kept(t);
                    }
                }
                return;
            };
            let first = t.get().never_ran();
            match self.dispatch::<MON, SAMPLE>(t) {
                // Only the pointer is compared: the task is gone.
                Dispatched::Gone => started.retain(|s| *s != t),
                _ if first => started.push(t),
                _ => {}
            }
            self.shared.plan_progress.fetch_add(1, Ordering::Relaxed);
            if self.ready().started_ready() >= 2 {
                self.shared.parallel.store(true, Ordering::Release);
                return;
            }
        }
    }

    /// Worker 0 ran dry before the sign of parallelism, `started` being
    /// the tasks it started that have not ended (all blocked now): whether
    /// the run has work waiting for another worker, so that the blocks
    /// should start as planned rather than be taken.
    ///
    /// - A task blocked writing: its stream is full and its reader is not
    ///   on worker 0 (nothing here is ready), so a block holds a consumer
    ///   with a stream's worth of work (a splitter added before its lanes).
    /// - Most of them (at least two) blocked on a stream side that nobody
    ///   has used yet (the run's `waits_unknown`, kept by the block path
    ///   for the stall rule): the network has not started talking and its
    ///   producers wait in the blocks (consumers added before their
    ///   sources). A ring that passed its token through worker 0's block
    ///   has one such task (the first, reading from the last); the others
    ///   wait on neighbours that wrote.
    fn work_waits_elsewhere(&self, started: &[TaskRef]) -> bool {
        let writing = started.iter().any(|t| {
            // SAFETY: the task ran on this worker and has not ended, so it
            // is alive and suspended; only it writes `blocked_on`, while it
            // runs, which happens on this thread only.
            t.get()
                .blocked_on
                .with(|b| matches!(unsafe { &*b }, BlockedOn::Output { .. }))
        });
        // SeqCst: the counts are updated SeqCst by the block path before a
        // task suspends (`stream/block.rs`), and every task here has
        // suspended.
        let unknown = self.shared.waits_unknown.load(Ordering::SeqCst)
            + self.shared.waits_outside.load(Ordering::SeqCst);
        let alive = started.len();
        writing || (alive >= 2 && unknown * 2 > alive)
    }

    /// A worker whose block waits, with nothing else to run: waits for
    /// worker 0's sign or the end of its grace, spinning (taking new tasks
    /// from others meanwhile), then starts its block if worker 0 has not
    /// taken it. `None` when its block no longer waits; else what `idle`
    /// returns.
    #[cold]
    pub(super) fn wait_for_plan(&self) -> Option<bool> {
        if self.plan_done.get() {
            return None;
        }
        let spin = self.shared.cfg.spin;
        // Worker 0's CPU time: 0 until it names its clock (on a shared host
        // its thread may start milliseconds after this one), `None` where
        // the clock cannot be read.
        let lead_ns = || {
            let clock = &self.shared.lead_clock;
            if clock.is_set() {
                clock.cpu_ns()
            } else {
                Some(0)
            }
        };
        let (since, lead_since) = match self.plan_since.get() {
            Some(s) => s,
            None => {
                let s = (Instant::now(), lead_ns());
                self.plan_since.set(Some(s));
                s
            }
        };
        let me = &self.shared.workers[self.id];
        struct Waits<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Waits<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Relaxed);
            }
        }
        // Relaxed: a hint for spawns on other workers (`WorkerShared`).
        me.waits_for_plan.store(true, Ordering::Relaxed);
        let _waits = Waits(&me.waits_for_plan);
        let (mut seen, mut moved, mut lead_moved) = (0, Instant::now(), lead_since);
        loop {
            if self.shared.phase() != Phase::Running {
                return Some(false);
            }
            let now = Instant::now();
            let lead_now = lead_ns();
            let p = self.shared.plan_progress.load(Ordering::Relaxed);
            if p != seen {
                (seen, moved, lead_moved) = (p, now, lead_now);
            }
            // How long worker 0 has run since `at`: its CPU time where its
            // clock reads, else the wall clock. On a shared host worker 0
            // may be off its core for milliseconds; that time is neither a
            // computation nor a sign.
            let ran = |at: Instant, lead_at: Option<u64>| match (lead_now, lead_at) {
                (Some(n), Some(a)) => Duration::from_nanos(n.saturating_sub(a)),
                _ => now.saturating_duration_since(at),
            };
            // Worker 0 started and then stayed in one dispatch for a
            // while: a computation, not a hand-off.
            let (stall, grace) = (spin * PLAN_STALL_SPINS, spin * PLAN_GRACE_SPINS);
            let mut stalled = seen > 0 && ran(moved, lead_moved) >= stall;
            let mut graced =
                ran(since, lead_since) >= grace || now >= since + spin * PLAN_BACKSTOP_SPINS;
            let stalled_wall = seen > 0 && now >= moved + stall;
            let graced_wall = now >= since + grace;
            if (stalled_wall && !stalled) || (graced_wall && !graced) {
                // Worker 0 ran less than the wall clock says: it was off
                // its core (wait for it) or asleep in a system call its
                // task made (its other tasks cannot run meanwhile: as a
                // computation).
                if self.shared.lead_clock.waits_for_core() == Some(false) {
                    stalled |= stalled_wall;
                    graced |= graced_wall;
                }
            }
            if self.shared.parallel.load(Ordering::Acquire)
                || !self.shared.blocks_wait()
                || stalled
                || graced
            {
                break;
            }
            if !me.inbox.is_empty() {
                return Some(true);
            }
            if self.shared.stealing() && self.try_steal() {
                return Some(true);
            }
            // Give the core away at each turn: where workers share cores
            // with each other or with other processes, worker 0 is the one
            // that must run now.
            std::thread::yield_now();
        }
        self.plan_done.set(true);
        let block = self.shared.take_block(self.id);
        if block.is_empty() {
            return None;
        }
        for t in block {
            self.ready().push_kept(t);
        }
        Some(true)
    }
}

/// A waiting block's grace, in configured spins of worker 0's CPU time
/// (of wall time where its clock cannot be read).
pub(crate) const PLAN_GRACE_SPINS: u32 = 40;

/// How long worker 0 may stay in one dispatch before a waiting worker
/// starts its block, in configured spins of worker 0's CPU time (of wall
/// time where its clock cannot be read).
pub(crate) const PLAN_STALL_SPINS: u32 = 4;

/// The most a block waits in wall time, in configured spins, however
/// little worker 0 ran meanwhile (a host that keeps it off its core that
/// long has a core for the waiting worker).
pub(crate) const PLAN_BACKSTOP_SPINS: u32 = 400;
