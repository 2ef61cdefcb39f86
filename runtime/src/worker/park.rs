//! The shared half of a worker: its inbox and the park/wake protocol
//! (described in `README.md` beside this file).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::thread::Thread;

use crossbeam_deque::Stealer;

use super::inbox::Inbox;
use super::settle::SettleWords;

use crate::run::shared::{Phase, Shared};
use crate::sync::{fence, AtomicBool, AtomicU64};
use crate::task::TaskRef;

/// The idle word counts idle workers in its low 20 bits and the number of
/// times any worker left idle above them.
pub(crate) const IDLE_GEN: usize = 1 << 20;

/// What other threads may touch of a worker.
pub(crate) struct WorkerShared {
    /// Tasks woken or spawned for this worker by other threads.
    pub(crate) inbox: Inbox,
    /// Set while the worker is on its way to sleep or asleep.
    pub(crate) sleeping: AtomicBool,
    /// Set while the worker waits for its block of the tasks added before
    /// the run to start (`plan.rs`), with nothing else to run: a hint for
    /// spawns (`WorkerLocal::share_new_tasks`), written and read Relaxed.
    pub(crate) waits_for_plan: std::sync::atomic::AtomicBool,
    /// A spawn on another worker has handed this worker a new task
    /// (`WorkerLocal::share_new_tasks`, once per run and worker).
    pub(crate) handed: std::sync::atomic::AtomicBool,
    /// The worker's thread, for unpark; set by the thread before it can sleep.
    pub(crate) thread: OnceLock<Thread>,
    /// Steal handle of the worker's queue of tasks that never ran
    /// (work-stealing mode only).
    pub(crate) stealer: Option<Stealer<TaskRef>>,
    /// The worker's sealed window and the ticker's cover (`settle.rs`).
    pub(crate) settle: crossbeam_utils::CachePadded<SettleWords>,
    /// In sample mode, what the worker is doing now (`monitor/sampler.rs`):
    /// written by the worker, read by the sampler. On a line of its own, so
    /// that the worker's stores never touch a line other threads write.
    pub(crate) now: crossbeam_utils::CachePadded<AtomicU64>,
    /// In sample mode, the samples the worker took of its own `now`
    /// (`monitor/self_sample.rs`), for the sampler.
    pub(crate) samples: crate::monitor::self_sample::SampleRing,
}

impl WorkerShared {
    pub(crate) fn new(stealer: Option<Stealer<TaskRef>>) -> Self {
        WorkerShared {
            inbox: Inbox::new(),
            sleeping: AtomicBool::new(false),
            waits_for_plan: std::sync::atomic::AtomicBool::new(false),
            handed: std::sync::atomic::AtomicBool::new(false),
            thread: OnceLock::new(),
            stealer,
            settle: SettleWords::new(),
            now: crossbeam_utils::CachePadded::new(AtomicU64::new(0)),
            samples: crate::monitor::self_sample::SampleRing::new(),
        }
    }

    /// Post-work steps: queue `t` for this worker, then wake it if it sleeps.
    pub(crate) fn post(&self, t: TaskRef) {
        self.inbox.push(t);
        // Store-load barrier between the push and the load of `sleeping`; pairs
        // with the sleeper's SeqCst store of `sleeping` before it looks at the
        // inbox. One of the two sees the other: no lost wakeup.
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) {
            self.unpark();
        }
    }

    pub(crate) fn unpark(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

impl Shared {
    /// Fall-asleep steps for worker `id`. Returns false when the run is over.
    pub(crate) fn sleep(&self, id: usize) -> bool {
        let me = &self.workers[id];
        me.sleeping.store(true, Ordering::SeqCst);
        self.idle.fetch_add(1, Ordering::SeqCst);
        // Store-load barrier between announcing sleep and looking at the inbox;
        // pairs with the poster's fence in `post`.
        fence(Ordering::SeqCst);
        // While every task waits and some wait on sides nobody used yet: the
        // idle word when that was first seen, and when the grace ends.
        let mut grace: Option<(usize, std::time::Instant)> = None;
        loop {
            // Re-check after announcing ourselves: any post made before the
            // poster's barrier is visible now, and any later post sees
            // `sleeping` and unparks us (unpark before park is not lost: the
            // thread's park token remembers it).
            // A worker counted as idle never takes a task: it leaves the idle
            // count first (below) and steals from its loop, so the deadlock
            // check never misses a task in flight between two queues.
            if self.phase() != Phase::Running || !me.inbox.is_empty() || self.stealable(id) {
                break;
            }
            if self.looks_deadlocked() {
                // Every task is blocked. A side held outside the run may
                // still write, read or close, and each of those wakes its
                // waiter through an inbox: wait for it (parked, no spin).
                if self.waits_outside.load(Ordering::SeqCst) > 0 {
                    self.wait_for_outside();
                    continue;
                }
                // A side nobody used yet may be held outside too: report
                // only once the grace has passed with no worker waking.
                if self.waits_unknown.load(Ordering::SeqCst) > 0 {
                    let seen = self.idle.load(Ordering::SeqCst);
                    let now = std::time::Instant::now();
                    let until = match grace {
                        Some((w, until)) if w == seen => until,
                        _ => now + crate::run::shared::UNKNOWN_PEER_GRACE,
                    };
                    grace = Some((seen, until));
                    if now < until {
                        std::thread::park_timeout(until - now);
                        continue;
                    }
                }
                self.end(Phase::Deadlock);
                break;
            }
            std::thread::park();
        }
        me.sleeping.store(false, Ordering::Relaxed);
        // Leaving idle bumps the generation in the high bits, so a deadlock
        // check that saw this worker idle before and after its scan notices
        // that it woke (and perhaps posted a task) in between.
        self.idle.fetch_add(IDLE_GEN - 1, Ordering::SeqCst);
        self.phase() == Phase::Running
    }

    /// Parks while every task waits and some wait on sides held outside the
    /// run. A run that stays so for [`Config::stall_report`] says so on
    /// stderr, once per run, and goes on waiting: an end held outside that
    /// never acts (kept by a thread that forgot it) would otherwise hang the
    /// run with nothing said.
    fn wait_for_outside(&self) {
        let seen = self.idle.load(Ordering::SeqCst);
        let after = self.cfg.stall_report;
        if self.stall_reported.load(Ordering::Relaxed) || after.is_zero() {
            std::thread::park();
            return;
        }
        let t0 = std::time::Instant::now();
        std::thread::park_timeout(after);
        if t0.elapsed() >= after
            && self.idle.load(Ordering::SeqCst) == seen
            && self.looks_deadlocked()
            && !self.stall_reported.swap(true, Ordering::Relaxed)
        {
            eprintln!(
                "rill: the run has waited {:.1} s with every task blocked: {} task(s) wait on \
                 stream ends held outside the run (a thread, or a task of another runtime), and \
                 it ends only when those ends act or are dropped",
                after.as_secs_f64(),
                self.waits_outside.load(Ordering::SeqCst)
            );
        }
    }

    /// Whether another worker's deque has a task to steal.
    fn stealable(&self, me: usize) -> bool {
        self.stealing()
            && self
                .workers
                .iter()
                .enumerate()
                .any(|(i, w)| i != me && w.stealer.as_ref().is_some_and(|s| !s.is_empty()))
    }

    /// Every worker is asleep, no inbox or deque holds a task, and tasks are
    /// left: none can ever run again. The idle count is read before and after
    /// the inbox scan, so a worker that was woken in between is not missed
    /// (a woken worker leaves the idle count before it drains its inbox).
    pub(crate) fn looks_deadlocked(&self) -> bool {
        let w = self.workers.len();
        let before = self.idle.load(Ordering::SeqCst);
        if before & (IDLE_GEN - 1) != w {
            return false;
        }
        let empty = self.workers.iter().all(|x| {
            x.inbox.is_empty() && x.stealer.as_ref().map(|s| s.is_empty()).unwrap_or(true)
        });
        // Same count *and* same generation: nobody left idle during the scan.
        empty && self.idle.load(Ordering::SeqCst) == before && self.live.load(Ordering::SeqCst) > 0
    }

    /// In work-stealing mode: a worker queued a task locally; wake a sleeper so
    /// it can steal it.
    pub(crate) fn notify_thief(&self, from: usize) {
        fence(Ordering::SeqCst);
        if self.idle.load(Ordering::Relaxed) & (IDLE_GEN - 1) == 0 {
            return;
        }
        for (i, w) in self.workers.iter().enumerate() {
            if i != from && w.sleeping.load(Ordering::Relaxed) {
                w.unpark();
                return;
            }
        }
    }
}
