//! Workers: one OS thread each, optionally pinned to a core, running the tasks
//! mapped to it one at a time. The park/wake protocol is in `README.md` beside
//! this file; `park.rs` holds the shared half of it.

mod idle_spin;
pub(crate) mod idle_work;
mod inbox;
#[cfg(all(test, loom))]
pub(crate) use inbox::Inbox;
mod park;
mod plan;
mod post;
pub(crate) mod settle;
pub(crate) mod ticker;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use corosensei::CoroutineResult;
use rill_log::EndState;

pub(crate) use park::WorkerShared;
pub(crate) use post::{hand_to, post, worker_if_mine};
pub(crate) use settle::{note_pending, PendingList};

use crate::context;
use crate::error::RunError;
use crate::monitor::sample_state as state;
use crate::monitor::worker_log::WorkerLog;
use crate::run::shared::{Phase, Shared};
use crate::scheduler::ReadyQueue;
use crate::stack::{StackError, StackPool, TaskStack};
use crate::sync::UnsafeCell;
use crate::task::{Suspend, TaskOutcome, TaskRef};

/// How often (in dispatches) a busy worker looks at its inbox and takes its
/// settle step (`settle.rs`).
const INBOX_EVERY: u32 = 32;

/// Posted tasks that may go to the front of the ready queue between two
/// scheduling points (`INBOX_EVERY` dispatches apart), the others going to
/// its back: at least half the dispatches then take from the FIFO, so a
/// queued task is not passed over for as long as other workers keep
/// posting (`drain_inbox`).
const FIRST_BUDGET: u32 = INBOX_EVERY / 2;
/// How often (in turns of its idle loop, each a look at the inbox and a
/// `pause`) an idle worker looks at its noted stream sides.
const IDLE_LOOK_EVERY: u32 = 16;

/// Counters of one worker over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// The worker's index.
    pub worker: usize,
    /// Task dispatches (resumptions).
    pub dispatches: u64,
    /// Times a task about to block spun first, its worker having nothing else
    /// to run (`stream::block::before_block`). On a monitored worker each one is
    /// logged as a period that ended blocked, a wait, and a new period, so
    /// such a log holds `dispatches + spins` periods.
    pub spins: u64,
    /// Tasks spawned from tasks on this worker (or placed here before the run).
    pub tasks_created: u64,
    /// Messages written by writers dropped on this worker.
    pub messages: u64,
    /// Tasks that the mapping placed on this worker and that started here
    /// (one placed here and taken by another worker before it started
    /// counts there, in [`steals`](Self::steals)).
    pub placed: u64,
    /// Messages that crossed workers: read by readers dropped on this
    /// worker from writers first used on another worker (counted when the
    /// reader is dropped, so a stream whose ends moved between tasks counts
    /// where its ends were first used and last read).
    pub crossed: u64,
    /// Time from the worker's start to its end.
    pub wall: Duration,
    /// Time spent idle (spinning or parked).
    pub idle: Duration,
    /// Times the worker ran out of tasks (and went idle).
    pub idles: u64,
    /// Times the worker parked.
    pub parks: u64,
    /// Tasks this worker took from others before they started (work
    /// stealing, under [`Mapping::Steal`](crate::Mapping::Steal) and
    /// [`Mapping::Adaptive`](crate::Mapping::Adaptive)), or that a spawn
    /// on another worker handed it before they started (the adaptive
    /// mapping's share for a worker that had no work yet).
    pub steals: u64,
    /// Bytes this worker's monitoring log holds (0 without monitoring).
    pub log_bytes: u64,
    /// Whether this worker's log stopped before the run's end (its disk
    /// space ran out): the log says so in its header, and holds the
    /// records up to the stop.
    pub log_truncated: bool,
}

/// The thread-local part of a worker. Fields in cells are touched only by the
/// worker's own thread, never across a resume (each access is a short borrow).
pub(crate) struct WorkerLocal {
    pub(crate) id: usize,
    /// This worker's shared half, `&shared.workers[id]`: what wait slots
    /// name as the worker of a registered task.
    me: *const WorkerShared,
    pub(crate) shared: Arc<Shared>,
    ready: UnsafeCell<ReadyQueue>,
    pool: UnsafeCell<StackPool>,
    settle: UnsafeCell<settle::Settle>,
    stats: UnsafeCell<WorkerStats>,
    use_barrier: bool,
    /// The run's only worker: no ticker runs, and the worker covers its own
    /// sealed windows with the heavy barrier, at most once per tick.
    solo: bool,
    /// `solo` and `use_barrier`: see [`peer_here`](Self::peer_here).
    peer_here: bool,
    /// When the worker may next cover its own window (`solo` only): a
    /// [`TICK`](ticker::TICK) after it last did. Kept as the time to compare
    /// with, which is one compare of two instants at each scheduling point
    /// (`duration_since`, with its checked subtraction, cost more than the
    /// clock read).
    next_cover: std::cell::Cell<Instant>,
    /// Its block of the tasks added before the run no longer waits
    /// (`plan.rs`).
    plan_done: std::cell::Cell<bool>,
    /// A task posted by another worker runs next, ahead of the ready queue
    /// (the adaptive mapping: see [`take_mail_first`](Self::take_mail_first)).
    mail_first: bool,
    /// How many more posted tasks may go to the front of the ready queue
    /// before the next scheduling point (`drain_inbox`).
    first_budget: std::cell::Cell<u32>,
    /// When its block's wait began (`plan.rs`): the wall clock and worker
    /// 0's CPU time, once it began.
    plan_since: std::cell::Cell<Option<(Instant, Option<u64>)>>,
    /// How long the worker spins when it runs out of work.
    spin: idle_spin::IdleSpin,
    /// A task about to block may make the run's idle-work passes first
    /// (`stream::block::before_block`): the run carries a layer's work (the
    /// bridge across ranks), the worker is not monitored, and task stacks
    /// are large enough for the layer's calls (MPI's).
    task_passes: bool,
    log: UnsafeCell<Option<WorkerLog>>,
    /// The worker records periods (a log, not in sample mode).
    monitoring: bool,
    /// The worker publishes its state for the sampler (`monitor/sampler.rs`).
    sampled: bool,
    /// Sample mode only: the worker logs each task's dispatches when it
    /// ends (`TaskTotals`); its own totals every monitored worker logs.
    task_totals: bool,
    /// Sample mode: the worker's sample timer, from the loop's start to its
    /// end (a wall-clock one is paused while the worker is parked).
    sample_timer: UnsafeCell<Option<crate::monitor::self_sample::SampleTimer>>,
}

/// The smallest task stack on which a task about to block makes the run's
/// idle-work passes itself (`task_passes`): the passes call MPI, whose
/// progress engine needs some kilobytes of stack.
const TASK_PASS_STACK: usize = 64 << 10;

impl WorkerLocal {
    pub(crate) fn new(
        id: usize,
        shared: Arc<Shared>,
        ready: ReadyQueue,
        log: Option<WorkerLog>,
    ) -> Self {
        let pool = StackPool::new(shared.stacks.clone());
        // Also with one worker: an end may be used by a thread outside the
        // run, whose fast path can miss this worker's registrations
        // (`tests/outside_writer.rs`).
        let use_barrier = crate::barrier::heavy_needed();
        let solo = shared.workers.len() == 1;
        let spin =
            idle_spin::IdleSpin::new(shared.cfg.spin, shared.workers.len(), shared.cfg.cores);
        let task_passes =
            shared.idle_work.is_some() && shared.cfg.stack_size >= TASK_PASS_STACK && log.is_none();
        if id == 0 && !solo {
            // Called on the worker's own thread (`run/threads.rs`).
            shared.lead_clock.set_to_current();
        }
        let mail_first = shared.steals_batches();
        WorkerLocal {
            id,
            me: &shared.workers[id],
            shared,
            ready: UnsafeCell::new(ready),
            pool: UnsafeCell::new(pool),
            settle: UnsafeCell::new(settle::Settle::new(id)),
            stats: UnsafeCell::new(WorkerStats {
                worker: id,
                ..Default::default()
            }),
            use_barrier,
            solo,
            peer_here: solo && use_barrier,
            next_cover: std::cell::Cell::new(Instant::now() + ticker::TICK),
            plan_done: std::cell::Cell::new(id == 0),
            mail_first,
            first_budget: std::cell::Cell::new(FIRST_BUDGET),
            plan_since: std::cell::Cell::new(None),
            spin,
            task_passes,
            sampled: log.as_ref().is_some_and(|l| l.is_sampled()),
            task_totals: log.as_ref().is_some_and(|l| l.is_sample_only()),
            monitoring: log.as_ref().is_some_and(|l| !l.is_sample_only()),
            log: UnsafeCell::new(log),
            sample_timer: UnsafeCell::new(None),
        }
    }

    /// The worker's monitoring log.
    ///
    /// # Safety
    /// Only on the worker's own thread, and the borrow must end before any
    /// other call that may borrow the log (hooks borrow it for one call).
    // The worker is confined to its thread; its cells hand out short borrows
    // (see the struct doc), which is what this lint cannot see.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn log_mut(&self) -> Option<&mut WorkerLog> {
        // SAFETY: per the contract above, this is the only live borrow.
        self.log.with_mut(|p| unsafe { (*p).as_mut() })
    }

    #[allow(clippy::mut_from_ref)]
    #[inline]
    fn log(&self) -> Option<&mut WorkerLog> {
        // SAFETY: called from the worker loop, never across a resume.
        unsafe { self.log_mut() }
    }

    /// This worker's shared half (see the field).
    #[inline(always)]
    pub(crate) fn me(&self) -> *const WorkerShared {
        self.me
    }

    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    fn ready(&self) -> &mut ReadyQueue {
        // SAFETY: only this worker's thread touches its ready queue, and no
        // borrow of it lives across a resume or another call that borrows it.
        self.ready.with_mut(|p| unsafe { &mut *p })
    }

    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    fn stats(&self) -> &mut WorkerStats {
        // SAFETY: as for `ready`.
        self.stats.with_mut(|p| unsafe { &mut *p })
    }

    /// Queues a task on this worker (called on its own thread).
    #[inline]
    pub(crate) fn push_local(&self, t: TaskRef) {
        if self.ready().push(t) {
            self.shared.notify_thief(self.id);
        }
    }

    /// The adaptive mapping, after a spawn here while this worker had
    /// other work: when another worker has had none yet (it waits for its
    /// block to start, or is parked), nothing is posted to it, and it was
    /// never given tasks this way, gives it the older half of the new
    /// tasks queued here (at least one), in its inbox, as a thief would
    /// take them. Once per worker and run. A thief that sleeps, or whose
    /// core another program holds, comes back only after a network that
    /// unfolds (each task spawning the next within microseconds) has
    /// started every new task where it was spawned; this hands it its
    /// share first (Monte Carlo's chains beside busy loops: decision 0022).
    #[cold]
    #[inline(never)]
    pub(crate) fn share_new_tasks(&self) {
        let ws = &self.shared.workers;
        // Relaxed: hints only (a worker that woke meanwhile finds the tasks
        // in its inbox); the swap lets one spawn claim the worker, and the
        // tasks themselves are handed over by the posts.
        let Some(to) = (1..ws.len()).map(|k| (self.id + k) % ws.len()).find(|&i| {
            let x = &ws[i];
            (x.sleeping.load(Ordering::Relaxed) || x.waits_for_plan.load(Ordering::Relaxed))
                && x.inbox.is_empty()
                && !x.handed.load(Ordering::Relaxed)
                && !x.handed.swap(true, Ordering::Relaxed)
        }) else {
            return;
        };
        let Some(own) = self.ready().oldest() else {
            return;
        };
        let n = own.len().div_ceil(2);
        let mut given = 0;
        while given < n {
            match own.steal() {
                crossbeam_deque::Steal::Success(t) => {
                    ws[to].post(t);
                    given += 1;
                }
                crossbeam_deque::Steal::Retry => continue,
                crossbeam_deque::Steal::Empty => break,
            }
        }
    }

    /// Queues a task that a waker on this worker's thread won: it ran (it
    /// registered in a wait slot while running), so it goes where thieves
    /// cannot take it, which is where [`push_local`](Self::push_local) would
    /// put it, without looking at the task.
    /// Nothing of the worker is needed after the push, so that the wake
    /// that calls it needs no frame: a FIFO that must grow takes a call
    /// (a tail call) of its own.
    #[inline(always)]
    pub(crate) fn push_woken(&self, t: TaskRef) {
        debug_assert!(!t.get().never_ran());
        if !self.ready().try_push_kept(t) {
            self.push_woken_cold(t);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_woken_cold(&self, t: TaskRef) {
        self.ready().push_kept(t);
    }

    pub(crate) fn note_spawn(&self, _t: TaskRef) {
        self.stats().tasks_created += 1;
    }

    pub(crate) fn add_messages(&self, n: u64) {
        self.stats().messages += n;
    }

    pub(crate) fn add_crossed(&self, n: u64) {
        self.stats().crossed += n;
    }

    /// Whether a task of this worker that blocks on a stream side whose
    /// peer is held in its own run (`Peer::Inside`, from the side's holder
    /// word, loaded after the task registered) may leave out the
    /// registration fence and the re-check of the peer (`stream::block`):
    /// true in a run of one worker whose fast paths use the light barrier.
    ///
    /// Why that is sound. Both serve a peer on another thread: the fence is
    /// this side's half of the store-load pair with the peer's fast path or
    /// close, and the re-check wakes a peer whose registration this task's
    /// own earlier fast-path operations missed. A run of one worker runs
    /// all its tasks on this thread, and a started task never moves
    /// (`worker/README.md`, work stealing; with one worker there is no thief
    /// anyway), so a peer end used by a task of the run is used on this
    /// thread: its operations and ours are in program order, and neither
    /// can miss the other (nor can its registration have been missed: it
    /// would have been seen by our operation that came after it).
    ///
    /// The holder word is not exact: it is noted at an end's first use, at
    /// each block and by `hold`/`hold_outside`, so an end used in the run
    /// and then handed to a thread outside it (or to another run's task
    /// that has not blocked on it yet) without `hold_outside` (which its
    /// documentation asks for) still reads as inside, and that thread's
    /// fast path, or its drop, may then run at the same time as our block.
    /// Nothing is lost then either: with the light barrier every block
    /// that does not find what it waits for is still noted in the
    /// worker's window (`note_pending`), and the liveness rule
    /// (`worker/README.md`) re-checks it after a heavy barrier within two
    /// ticks plus two scheduling points, and before the worker parks.
    /// That rule needs no registration fence: the barrier begins after the
    /// window's seal, which the registration precedes in program order.
    /// The same holds for a peer of another run that registered (it
    /// noted itself as the holder before it registered, so the side reads
    /// as inside only while its registration is not yet visible here either,
    /// and its own run's window rescues it). Where the fast path fences
    /// for real (no membarrier) nothing is noted and the fence is the only
    /// guard, so this is false there.
    #[inline(always)]
    pub(crate) fn peer_here(&self) -> bool {
        self.peer_here
    }

    /// Records registrations that a peer on another core may have missed.
    pub(crate) fn note_pending(&self, pend: impl FnOnce(&mut PendingList)) {
        if self.use_barrier {
            // SAFETY: as for `ready`.
            pend(&mut self.settle_mut().open);
        }
    }

    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    fn settle_mut(&self) -> &mut settle::Settle {
        // SAFETY: as for `ready`: only this worker's thread touches its
        // windows, and no borrow lives across a call that borrows them again
        // (re-checks run after the borrow ends, see `settle_step`).
        self.settle.with_mut(|p| unsafe { &mut *p })
    }

    /// A scheduling point's settle step (`settle.rs`), when anything is
    /// noted: re-check a covered window, look at a sealed one, seal the
    /// open one.
    #[inline]
    fn settle_step(&self) {
        if self.use_barrier && !self.settle_mut().is_empty() {
            self.settle_step_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn settle_step_cold(&self) {
        let words = &self.shared.workers[self.id].settle;
        if self.solo {
            self.cover_own(words);
        }
        let done = self.settle_mut().step(
            words,
            |s| settle::recheck_all(s),
            || self.shared.ticker.sealed(),
        );
        settle::recheck_all(&done);
        let mut done = done;
        done.clear();
        self.settle_mut().recycle(done);
    }

    /// The ticker's work on a run of one worker, which has none: a heavy
    /// barrier for the sealed window, at most once per tick. The barrier
    /// begins after the seal (`owed` pairs with the seal's Release), and the
    /// window is re-checked at this worker's next scheduling point, as a
    /// ticker's cover would have it. The only peers that can miss this
    /// worker's registrations are threads outside the run.
    fn cover_own(&self, words: &settle::SettleWords) {
        let Some(generation) = words.owed() else {
            return;
        };
        let now = Instant::now();
        if now >= self.next_cover.get() {
            crate::barrier::heavy();
            words.cover(generation);
            self.next_cover.set(now + ticker::TICK);
        }
    }

    /// Heavy barrier, then re-check every registration noted so far, waking
    /// tasks whose peer missed them: the settle before parking.
    fn settle_all(&self) {
        let noted = self.settle_mut().take_all();
        if noted.is_empty() {
            return;
        }
        crate::barrier::heavy();
        settle::recheck_all(&noted);
    }

    /// The worker's loop. Returns its statistics.
    pub(crate) fn run(&self) -> WorkerStats {
        let start = Instant::now();
        context::set_current_worker(self);
        crate::overflow::enter_worker();
        if let Some(log) = self.log() {
            log.worker_start();
            for (id, worker, name) in &self.shared.initial_assigns {
                if *worker == self.id {
                    log.task_assign(*id, 0, *worker, name);
                }
            }
        }
        // Under Mapping::Adaptive the tasks placed here before the run are
        // the mapping's plan (the blocks of the network's cut): kept here,
        // out of thieves' reach. A task spawned onto this worker by one
        // that already runs elsewhere may be among them, which is harmless.
        if self.shared.steals_batches() {
            self.shared.workers[self.id]
                .inbox
                .drain(|t| self.ready().push_kept(t));
        }
        // Sample mode: the worker's timer samples it until the loop is over
        // (dropped, so deleted, right after it, on this thread, also when a
        // panic unwinds out of the loop).
        let _timer = if self.sampled {
            let timer = self.start_sample_timer();
            // SAFETY: the worker's own thread; no other borrow of the cell.
            self.sample_timer.with_mut(|p| unsafe { *p = timer });
            Some(TimerGuard(self))
        } else {
            None
        };
        if self.monitoring && self.sampled {
            self.work::<true, true>();
        } else if self.monitoring {
            self.work::<true, false>();
        } else if self.sampled {
            self.work::<false, true>();
        } else {
            self.work::<false, false>();
        }
        drop(_timer);
        let mut log_end = (0, false);
        // SAFETY: the loop is over; nothing else borrows the log.
        if let Some(mut log) = self.log.with_mut(|p| unsafe { (*p).take() }) {
            // Every monitored worker, once, at its end: its exact counts
            // (in a log of periods, a spin before a block shows only by the
            // periods' shape; the loader takes dispatches and spins from here).
            let s = self.stats();
            log.worker_totals(s.dispatches, s.spins, s.idles, s.parks);
            log.worker_end();
            log_end = log.finish();
        }
        context::set_current_worker(std::ptr::null());
        let mut s = self.stats().clone();
        s.wall = start.elapsed();
        (s.log_bytes, s.log_truncated) = log_end;
        s
    }

    /// Runs tasks until the run is over. `MON`: whether this worker records
    /// periods; `SAMPLE`: whether it publishes its state for the sampler. A
    /// loop per value, so that an unmonitored worker's dispatch has no
    /// monitoring test at all.
    fn work<const MON: bool, const SAMPLE: bool>(&self) {
        if self.id == 0 && self.shared.blocks_wait() {
            self.watch_plan::<MON, SAMPLE>();
        }
        loop {
            if let Some(t) = self.next_task() {
                self.dispatch::<MON, SAMPLE>(t);
                continue;
            }
            let t0 = Instant::now();
            self.stats().idles += 1;
            if SAMPLE {
                self.say(state::IDLE);
            }
            let go_on = self.idle();
            if SAMPLE {
                self.say(state::SCHED);
            }
            self.stats().idle += t0.elapsed();
            if MON {
                if let Some(log) = self.log() {
                    log.worker_resumed();
                }
            }
            if !go_on {
                break;
            }
        }
    }

    /// After a panic escaped the worker's loop (a destructor it ran
    /// panicked): forget the thread's worker and task, which are going away.
    /// The tasks it held stay in the registry, which the run drops.
    pub(crate) fn abandon(&self) {
        context::set_current_task(std::ptr::null());
        context::set_current_worker(std::ptr::null());
    }

    /// Whether this worker records periods (it writes a log, and not in
    /// sample mode).
    #[inline]
    pub(crate) fn is_monitored(&self) -> bool {
        self.monitoring
    }

    /// Whether this worker publishes its state for the sampler.
    #[inline]
    pub(crate) fn is_sampled(&self) -> bool {
        self.sampled
    }

    /// Sample mode: publishes what the worker does now (a `state` word) for
    /// the sampler. Relaxed: the sampler takes snapshots, ordered with
    /// nothing.
    #[inline(always)]
    pub(crate) fn say(&self, word: u64) {
        // SAFETY: `me` points into the run's `Shared`, which the worker's
        // `shared` keeps alive.
        unsafe { &*self.me }.now.store(word, Ordering::Relaxed);
    }

    /// Starts this worker's sample timer (`monitor/self_sample.rs`).
    /// Without a timer the run goes on unsampled here, with one warning.
    #[cold]
    fn start_sample_timer(&self) -> Option<crate::monitor::self_sample::SampleTimer> {
        let flags = self.shared.cfg.monitor.flags;
        let hz = flags
            .sample_hz()
            .unwrap_or(crate::monitor::sample_state::DEFAULT_HZ);
        // SAFETY: `me` points into the run's `Shared`, which the worker's
        // `shared` keeps alive.
        let me = unsafe { &*self.me };
        let n = self.shared.workers.len();
        let phase = (self.id + 1) as f64 / (n + 1) as f64;
        crate::monitor::self_sample::SampleTimer::start(me, hz, flags.is_cpu_clock(), phase)
            .map_err(|e| eprintln!("rill: worker {} takes no samples: {e}", self.id))
            .ok()
    }

    /// Before a park: its time is counted from now. A timer on the
    /// thread's CPU time takes no samples while it is parked; one on the
    /// wall clock is paused.
    #[cold]
    fn park_sampled(&self) {
        // SAFETY: the worker's own thread; a short borrow that calls out to
        // nothing that could borrow the cell again.
        self.sample_timer.with(|p| {
            if let Some(t) = unsafe { &*p } {
                t.pause();
            }
        });
        let now = crate::monitor::self_sample::mono_ns();
        // SAFETY: `me` points into the run's `Shared` (see `say`).
        unsafe { &*self.me }.samples.park_begin(now);
    }

    /// After a park: counts its time up to now (and runs a wall-clock
    /// timer again).
    #[cold]
    fn unpark_sampled(&self) {
        let now = crate::monitor::self_sample::mono_ns();
        // SAFETY: `me` points into the run's `Shared` (see `say`).
        unsafe { &*self.me }.samples.park_end(now);
        // SAFETY: as in `park_sampled`.
        self.sample_timer.with(|p| {
            if let Some(t) = unsafe { &*p } {
                t.resume(now);
            }
        });
    }

    /// Counts a spin before a block (see [`WorkerStats::spins`]).
    #[inline]
    pub(crate) fn count_spin(&self) {
        self.stats().spins += 1;
    }

    /// Whether anything other than the running task could run here now: a
    /// ready task, or one posted to the inbox.
    #[inline]
    pub(crate) fn has_other_work(&self) -> bool {
        !self.ready().is_empty() || !self.shared.workers[self.id].inbox.is_empty()
    }

    /// Whether a task about to block may make the run's idle-work passes
    /// first (`stream::block::before_block`).
    #[inline(always)]
    pub(crate) fn task_passes(&self) -> bool {
        self.task_passes
    }

    /// One pass of the run's idle work from inside a task about to block,
    /// as the worker's idle loop makes it ([`as_outside`](Self::as_outside)).
    #[cold]
    pub(crate) fn task_pass(&self) -> idle_work::IdlePass {
        match self.shared.idle_work.as_deref() {
            Some(work) => self.as_outside(|| work.pass()),
            None => idle_work::IdlePass::Closed,
        }
    }

    /// Runs `f` with the thread's current worker and task cleared, so that
    /// its stream operations are those of a thread outside the run (a pass
    /// of the run's idle work); both are put back after it, also if it
    /// unwinds.
    fn as_outside<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(*const WorkerLocal, *const crate::task::Task);
        impl Drop for Restore {
            fn drop(&mut self) {
                context::set_current_task(self.1);
                context::set_current_worker(self.0);
            }
        }
        let _restore = Restore(self, context::current_task_ptr());
        context::set_current_task(std::ptr::null());
        context::set_current_worker(std::ptr::null());
        f()
    }

    /// Whether a task about to block may spin first (`stream::block::spin_on`):
    /// not where workers share cores, nor with no idle spin (`idle_spin.rs`).
    #[inline(always)]
    pub(crate) fn may_spin(&self) -> bool {
        self.spin.task_spins()
    }

    #[inline(always)]
    fn next_task(&self) -> Option<TaskRef> {
        // Every INBOX_EVERY dispatches, counted by the statistics the loop
        // keeps anyway (a counter of its own cost a load, a store and a
        // compare more per dispatch).
        if self
            .stats()
            .dispatches
            .is_multiple_of(u64::from(INBOX_EVERY))
            && !self.scheduling_point()
        {
            return None;
        }
        if self.mail_first {
            self.take_mail_first();
        }
        if let Some(t) = self.ready().pop() {
            return Some(t);
        }
        if self.drain_inbox() {
            return self.ready().pop();
        }
        None
    }

    /// A busy worker's look around, every [`INBOX_EVERY`] dispatches: the
    /// run's phase, the settle step, the inbox. False when the run is over
    /// (a task failed elsewhere, or the run deadlocked): stop even if tasks
    /// here could go on forever. Out of line, so that the dispatch loop
    /// stays small.
    #[inline(never)]
    fn scheduling_point(&self) -> bool {
        if self.shared.phase() != Phase::Running {
            return false;
        }
        self.settle_step();
        self.first_budget.set(FIRST_BUDGET);
        self.drain_inbox();
        true
    }

    /// Moves tasks posted by other threads into the ready queue: a task
    /// that ran to its front under the adaptive mapping, within the budget
    /// (see [`take_mail_first`](Self::take_mail_first)); else where `push`
    /// puts it (the FIFO's back, or the queue of new tasks).
    fn drain_inbox(&self) -> bool {
        let first = self.mail_first;
        self.shared.workers[self.id].inbox.drain(|t| {
            let budget = self.first_budget.get();
            if first && budget > 0 && !t.get().never_ran() {
                self.first_budget.set(budget - 1);
                self.ready().push_first(t);
            } else {
                self.ready().push(t);
            }
        })
    }

    /// Under the adaptive mapping, a task posted by another thread runs
    /// next, ahead of the tasks queued here. The mapping keeps talking
    /// tasks on one worker, so a wake from another worker is a message
    /// across a cut, and the worker that sent it often waits for the
    /// answer; behind a queue of long computations it would wait for all
    /// of them (a farm's dealer behind its solvers). One load of the mail
    /// slot's line a dispatch; the slot holds the first task posted since
    /// the last look, and a look takes every posted task. Under the static
    /// mappings the queue stays FIFO: round-robin crosses at every stream,
    /// and taking each woken stage first there cuts a pipeline's batches
    /// to a message (decision 0023).
    #[inline(always)]
    fn take_mail_first(&self) {
        // SAFETY: `me` points into the run's `Shared` (see `say`).
        if unsafe { &*self.me }.inbox.has_mail() {
            self.drain_inbox_cold();
        }
    }

    #[cold]
    #[inline(never)]
    fn drain_inbox_cold(&self) {
        self.drain_inbox();
    }

    // Always inlined: the dispatch loop and worker 0's watch
    // (`plan.rs`) both call it, and the loop's copy is the hot path.
    #[inline(always)]
    fn dispatch<const MON: bool, const SAMPLE: bool>(&self, t: TaskRef) -> Dispatched {
        let task = t.get();
        // SAFETY: we own the task (it came from our queue); only we touch its
        // coroutine now, and the borrow ends before start_task (in the None
        // arm) or lives to the resume below, the only one until then. The
        // coroutine is taken from the one look at the option, which the
        // resume below uses (looked at again after the stores between, LLVM
        // compared it twice per dispatch).
        let coro = match task.coro.with_mut(|p| unsafe { (*p).as_mut() }) {
            Some(c) => c,
            None => {
                if !self.start_task(t) {
                    return Dispatched::Gone;
                }
                // SAFETY: as above; `start_task` installed the coroutine.
                match task.coro.with_mut(|p| unsafe { (*p).as_mut() }) {
                    Some(c) => c,
                    None => unreachable!("a started task has a coroutine"),
                }
            }
        };
        // Copied before the resume: once the task is suspended as blocked it
        // belongs to its waker.
        let canary_at = task.canary_at.get();
        if task.never_ran() {
            self.first_dispatch(task);
        }
        task.transition_to_running();
        if MON {
            if let Some(log) = self.log() {
                log.begin_period(task);
            }
        }
        if SAMPLE {
            // The dispatch stores no state word: while the thread's
            // current-task word (set next) names a task, a sample names it
            // (`self_sample::sampled_word`).
            task.dispatches.set(task.dispatches.get() + 1);
        }
        context::set_current_task(task);
        // No unwind guard here: the task body catches its own panic (see
        // `task::make_coroutine`), so a dispatch is a plain resume.
        let res = coro.resume(());
        context::set_current_task(std::ptr::null());
        if MON {
            self.end_period(task, &res);
        }
        let st = self.stats();
        st.dispatches += 1;
        match res {
            CoroutineResult::Yield(Suspend::Yield) => {
                self.check_canary(canary_at, task);
                task.transition_to_ready_after_yield();
                // It ran, so it is not for thieves: straight to the FIFO.
                self.ready().push_kept(t);
                Dispatched::Kept
            }
            CoroutineResult::Yield(Suspend::Blocked) => {
                // The task is owned by whoever wakes it now, but wakers only
                // queue it to this worker, which runs it after this returns.
                self.check_canary(canary_at, task);
                Dispatched::Blocked
            }
            CoroutineResult::Return(false) => {
                // Checked before the stack goes back to the pool, so that an
                // overflow is blamed on the task that caused it.
                self.check_canary(canary_at, task);
                self.finish(t);
                Dispatched::Gone
            }
            CoroutineResult::Return(true) => {
                // The panic was reported where it was caught (task::make_coroutine).
                self.finish(t);
                Dispatched::Gone
            }
        }
    }

    /// A stack from this worker's pool.
    pub(crate) fn take_stack(&self) -> Result<TaskStack, StackError> {
        // SAFETY: as for `ready`.
        self.pool.with_mut(|p| unsafe { &mut *p }).take()
    }

    /// Creates a task's coroutine on `stack`, running `f` (`task::install`;
    /// a panic of `f` ends the run, [`report_panic`]).
    #[inline]
    pub(crate) fn install_coroutine<F: FnOnce() + Send + 'static>(
        &self,
        t: TaskRef,
        stack: TaskStack,
        f: F,
    ) {
        crate::task::install(t, stack, f, report_panic);
    }

    /// Writes the record of the dispatch that just ended.
    #[cold]
    #[inline(never)]
    fn end_period(&self, task: &crate::task::Task, res: &CoroutineResult<Suspend, TaskOutcome>) {
        let state = match res {
            CoroutineResult::Yield(Suspend::Yield) => EndState::Yielded,
            CoroutineResult::Yield(Suspend::Blocked) => {
                // SAFETY: the task is suspended and owned by this worker until
                // it is woken, which only queues it to us.
                task.blocked_on
                    .with(|p| crate::hooks::end_state_of(true, unsafe { &*p }))
            }
            CoroutineResult::Return(false) => EndState::Ended,
            CoroutineResult::Return(true) => EndState::Panicked,
        };
        let dead = self.log().and_then(|log| {
            log.end_period(task, state);
            log.take_dead()
        });
        // Dropped once the log is no longer borrowed: a binding may hold the
        // last reference to a stream, whose messages' destructors run user
        // code.
        drop(dead);
    }

    /// Creates the coroutine of a task spawned before the run, at its first
    /// dispatch. False when the run failed for want of a stack.
    #[cold]
    fn start_task(&self, t: TaskRef) -> bool {
        let task = t.get();
        let stack = match self.take_stack() {
            Ok(s) => s,
            Err(e) => {
                self.shared.fail(RunError::NoStack {
                    name: task.name.to_string(),
                    reason: e.to_string(),
                });
                return false;
            }
        };
        // SAFETY: we own the task; `start` is taken exactly once.
        let f = task
            .start
            .with_mut(|p| unsafe { (*p).take() })
            .expect("a new task has its closure");
        f.install(t, stack, report_panic);
        true
    }

    /// A task's first dispatch: counted as placed here, or as taken from
    /// the worker it was placed on.
    #[cold]
    #[inline(never)]
    fn first_dispatch(&self, task: &crate::task::Task) {
        // Relaxed: we own the task; the field is read by the task itself
        // (`current()`), which runs on this thread from now on.
        let placed_on = task.worker.load(Ordering::Relaxed);
        if let Some(r) = &self.shared.profile_record {
            r.started(&task.name, self.id);
        }
        if placed_on == self.id {
            self.stats().placed += 1;
        } else {
            // Taken from another worker before it ran (only such tasks are
            // stealable): it runs here from now on, and its registrations
            // will name this worker.
            task.worker.store(self.id, Ordering::Relaxed);
            self.stats().steals += 1;
            crate::hooks::task_migrated(task.id, placed_on, self.id);
        }
    }

    /// Checks the canary of an unguarded stack (`canary_at` 0: guarded).
    #[inline]
    fn check_canary(&self, canary_at: usize, task: &crate::task::Task) {
        if canary_at != 0 {
            // SAFETY: canary_at is the lowest word of an unguarded stack from
            // our slabs, which stay mapped for the whole run.
            if !unsafe { crate::stack::canaries_intact(canary_at) } {
                crate::overflow::report_canary(&task.name);
            }
        }
    }

    fn finish(&self, t: TaskRef) {
        let task = t.get();
        task.transition_to_done();
        if self.task_totals {
            if let Some(log) = self.log() {
                log.task_totals(task.id, task.dispatches.get());
            }
        }
        // SAFETY: we own the task and its coroutine has finished (returned or
        // panicked), so taking it out is sound.
        if let Some(coro) = task.coro.with_mut(|p| unsafe { (*p).take() }) {
            if coro.done() {
                // SAFETY: as for `ready`.
                self.pool
                    .with_mut(|p| unsafe { &mut *p })
                    .give(coro.into_stack());
            }
        }
        self.shared.registry.remove(t);
        // SAFETY: the task is out of the registry and we own it; nothing else
        // refers to it (a finished task is in no slot and no queue).
        unsafe { t.free() };
        if self.shared.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.end(Phase::Done);
        }
    }

    /// Nothing to run. Spins, steals, settles and finally parks. Returns false
    /// when the run is over.
    #[cold]
    fn idle(&self) -> bool {
        if !self.plan_done.get() {
            if let Some(found) = self.wait_for_plan() {
                return found;
            }
        }
        let me = &self.shared.workers[self.id];
        if let Some(work) = self.shared.idle_work.as_deref() {
            let found = idle_work::look(
                work,
                || self.shared.phase() == Phase::Running,
                || !me.inbox.is_empty() || !self.ready().is_empty(),
                // The pass's stream operations are those of a thread
                // outside the run (no current worker or task here).
                |pass| self.as_outside(pass),
            );
            if let Some(found) = found {
                return found;
            }
        }
        let idle_from = Instant::now();
        let spin_until = idle_from + self.spin.budget();
        let mut i = 0u32;
        loop {
            if self.shared.phase() != Phase::Running {
                return false;
            }
            if !me.inbox.is_empty() {
                return true;
            }
            if self.shared.stealing() && self.try_steal() {
                return true;
            }
            i += 1;
            if i.is_multiple_of(IDLE_LOOK_EVERY) && self.use_barrier && self.idle_look() {
                return true;
            }
            // Where workers share cores a turn is a system call: look at the
            // clock at each one, else every 64th.
            let shares = self.spin.shares_core();
            if (shares || i.is_multiple_of(64)) && Instant::now() >= spin_until {
                break;
            }
            if shares {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if self.use_barrier {
            self.settle_all();
            if !self.ready().is_empty() {
                return true;
            }
        }
        self.stats().parks += 1;
        if self.sampled {
            // A parked worker is not woken to sample itself (its wall-clock
            // timer is paused; a CPU-time one stops by itself): its parked
            // time is measured (`SampleRing::park_begin`).
            self.say(state::PARK);
            self.park_sampled();
        }
        let go_on = self.shared.sleep(self.id);
        if self.sampled {
            self.unpark_sampled();
            self.say(state::IDLE);
        }
        if go_on {
            self.spin.after_park(idle_from.elapsed());
        }
        go_on
    }

    /// An idle worker's look at every noted stream side, without a barrier
    /// (`settle.rs`), and its settle step. True when a task became ready.
    fn idle_look(&self) -> bool {
        let s = self.settle_mut();
        if s.is_empty() {
            return false;
        }
        settle::recheck_all(s.noted());
        self.settle_step_cold();
        !self.ready().is_empty()
    }

    /// Takes tasks that never ran from another worker: one
    /// ([`Mapping::Steal`](crate::Mapping::Steal)), or a contiguous run of
    /// about half of its new tasks (`scheduler.rs`), queued here out of
    /// other thieves' reach. What is taken is counted and logged when it
    /// starts (`start_task`).
    fn try_steal(&self) -> bool {
        let n = self.shared.workers.len();
        let batch = self.shared.steals_batches();
        for k in 1..n {
            let victim = (self.id + k) % n;
            if let Some(st) = &self.shared.workers[victim].stealer {
                loop {
                    let got = match self.ready().scratch() {
                        Some(scratch) if batch => st.steal_batch_and_pop(scratch),
                        _ => st.steal(),
                    };
                    match got {
                        crossbeam_deque::Steal::Success(t) => {
                            // What was taken stays here (a thief's take is
                            // not taken again): one thief cuts a chain
                            // spawned in order once.
                            self.ready().push_kept(t);
                            self.ready().keep_scratch();
                            return true;
                        }
                        crossbeam_deque::Steal::Retry => continue,
                        crossbeam_deque::Steal::Empty => break,
                    }
                }
            }
        }
        false
    }
}

/// Reports the panic of a task's body, caught at the task's boundary
/// (`task::make_coroutine`): ends the run with an error that names the
/// task. It runs in the task's coroutine, so on the worker that runs the
/// task, whose run is the task's.
fn report_panic(task: &crate::task::Task, p: Box<dyn std::any::Any + Send>) {
    let w = context::worker().expect("a task's body runs on a worker of its run");
    w.shared.fail(RunError::TaskPanicked {
        id: task.id,
        name: task.name.to_string(),
        message: panic_message(p.as_ref()),
    });
}

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".into()
    }
}

/// Deletes the worker's sample timer when the loop ends, on the worker's
/// thread, also when a panic unwinds out of it.
struct TimerGuard<'a>(&'a WorkerLocal);

impl Drop for TimerGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the worker's own thread; the loop that borrowed the cell
        // is over.
        drop(self.0.sample_timer.with_mut(|p| unsafe { (*p).take() }));
    }
}

/// How a dispatch ended, for worker 0's watch while blocks wait
/// (`plan.rs`); the dispatch loop ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dispatched {
    /// Yielded: back in the ready queue.
    Kept,
    /// Suspended on a stream.
    Blocked,
    /// Ended, panicked, or could not start.
    Gone,
}
