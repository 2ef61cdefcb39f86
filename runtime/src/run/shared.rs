//! The state one run's threads share ([`Shared`]): the phase, the live
//! count, the task registry, the workers' shared halves, the counters of
//! the stall rule; how a run ends ([`Shared::end`], [`Shared::fail`]) and
//! how it makes tasks ([`Shared::new_task`]). Its sleep half (the
//! fall-asleep steps and the deadlock check) is in `worker/park.rs`,
//! beside the park/wake protocol it belongs to.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::error::RunError;
use crate::mapper::Mapper;
use crate::profile;
use crate::registry::Registry;
use crate::stack::StackSource;
use crate::sync::{AtomicU64, AtomicU8, AtomicUsize};
use crate::task::{Task, TaskFn, TaskRef};
use crate::vocab::TaskId;
use crate::worker::ticker::TickerShared;
use crate::worker::WorkerShared;

/// Phase of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    Running = 0,
    Done = 1,
    Failed = 2,
    Deadlock = 3,
}

/// State shared by the workers of one run.
pub(crate) struct Shared {
    pub(crate) cfg: Config,
    pub(crate) workers: Box<[WorkerShared]>,
    pub(crate) mapper: Mapper,
    pub(crate) live: AtomicUsize,
    pub(crate) idle: AtomicUsize,
    pub(super) phase: AtomicU8,
    pub(super) failure: Mutex<Option<RunError>>,
    pub(crate) registry: Registry,
    pub(super) next_task: AtomicU64,
    pub(crate) stacks: Arc<StackSource>,
    pub(super) stealing: bool,
    /// Thieves take contiguous runs of tasks ([`Mapping::Adaptive`]), not
    /// one task.
    pub(super) steal_batches: bool,
    /// A run that records a [`Mapping::Profile`] without a planner: where
    /// its tasks started.
    pub(crate) profile_record: Option<profile::Record>,
    /// Tasks placed before the run: (id, worker, name), logged by their worker.
    pub(crate) initial_assigns: Vec<(TaskId, usize, String)>,
    /// The blocks of tasks added before the run that wait for their worker
    /// (`worker/plan.rs`): entry `w` is worker `w`'s block, in spawn order;
    /// worker 0's is always empty.
    pub(crate) deferred: Box<[Mutex<Vec<TaskRef>>]>,
    /// How many entries of `deferred` still hold tasks.
    pub(crate) deferred_open: AtomicUsize,
    /// Worker 0 saw two started tasks ready at once while the blocks
    /// waited: the network has work for more than one worker.
    pub(crate) parallel: std::sync::atomic::AtomicBool,
    /// Worker 0's dispatches while blocks wait (`worker/plan.rs`): a
    /// waiting worker sees from it whether worker 0 still moves.
    pub(crate) plan_progress: std::sync::atomic::AtomicU64,
    /// Worker 0's CPU-time clock, which it names when it starts: a waiting
    /// block counts worker 0's stall and its own grace in the time worker
    /// 0 ran, not in the time the host kept it off its core
    /// (`worker/plan.rs`).
    pub(crate) lead_clock: crate::thread_clock::ThreadCpuClock,
    /// The ticker's shared half (`worker/ticker.rs`).
    pub(crate) ticker: TickerShared,
    /// The thread that called `run`, when it does more than wait for the
    /// workers (the sampler runs on it): the last worker thread to leave
    /// wakes it.
    pub(crate) waiter: std::sync::OnceLock<std::thread::Thread>,
    /// Worker threads started and not yet left.
    pub(crate) workers_left: AtomicUsize,
    /// This run's number in the process (from 1), which stream sides held
    /// by its tasks record (`stream/holder.rs`).
    pub(crate) run_id: u64,
    /// Blocked tasks whose peer side is held outside the run (a plain
    /// thread, another runtime's task): while any is, a run whose workers
    /// are all idle waits for the outside instead of reporting a deadlock.
    pub(crate) waits_outside: std::sync::atomic::AtomicUsize,
    /// Blocked tasks whose peer side nobody has used yet: a run whose
    /// workers are all idle reports a deadlock only after
    /// [`UNKNOWN_PEER_GRACE`] without progress.
    pub(crate) waits_unknown: std::sync::atomic::AtomicUsize,
    /// Whether the run has said that it waits on the outside
    /// (`Shared::wait_for_outside`).
    pub(crate) stall_reported: std::sync::atomic::AtomicBool,
    /// What idle workers do between tasks (`worker/idle_work.rs`).
    pub(crate) idle_work: Option<Arc<dyn crate::worker::idle_work::IdleWork>>,
}

/// How long a run whose every task is blocked waits before it reports a
/// deadlock, when some task waits on a stream side that nobody has used
/// yet: an end moved to a thread outside the run counts as outside from
/// its first use there (or from `hold_outside`), and this is the time its
/// thread has for that first use. Deadlocks among ends that have all been
/// used are reported at once.
pub const UNKNOWN_PEER_GRACE: Duration = Duration::from_millis(250);

impl Shared {
    pub(crate) fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Running,
            1 => Phase::Done,
            2 => Phase::Failed,
            _ => Phase::Deadlock,
        }
    }

    #[inline]
    pub(crate) fn stealing(&self) -> bool {
        self.stealing
    }

    /// Whether a thief takes a contiguous run of tasks (`scheduler.rs`).
    pub(crate) fn steals_batches(&self) -> bool {
        self.steal_batches
    }

    /// Whether some block of tasks added before the run still waits for
    /// its worker (`worker/plan.rs`).
    #[inline]
    pub(crate) fn blocks_wait(&self) -> bool {
        self.deferred_open.load(Ordering::Acquire) > 0
    }

    /// Takes worker `w`'s waiting block, if it still waits.
    pub(crate) fn take_block(&self, w: usize) -> Vec<TaskRef> {
        let mut b = self.deferred[w].lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *b);
        if !taken.is_empty() {
            self.deferred_open.fetch_sub(1, Ordering::AcqRel);
        }
        taken
    }

    /// Ends the run (first caller wins) and wakes every worker.
    pub(crate) fn end(&self, p: Phase) {
        if self
            .phase
            .compare_exchange(
                Phase::Running as u8,
                p as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            for w in self.workers.iter() {
                w.unpark();
            }
            self.ticker.unpark();
        }
    }

    /// Whether every worker thread started has left.
    pub(crate) fn workers_gone(&self) -> bool {
        // Acquire: pairs with the Release decrement of `WorkerLeaves`.
        self.workers_left.load(Ordering::Acquire) == 0
    }

    /// Records the first failure and ends the run.
    pub(crate) fn fail(&self, e: RunError) {
        let mut f = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_none() && self.phase() == Phase::Running {
            *f = Some(e);
        }
        drop(f);
        self.end(Phase::Failed);
    }

    /// Creates a task control block and registers it as live.
    pub(crate) fn new_task(
        &self,
        name: Cow<'static, str>,
        parent: TaskId,
        worker: usize,
        f: Option<TaskFn>,
    ) -> TaskRef {
        self.new_task_as(self.next_task_id(), name, parent, worker, f)
    }

    /// The id the next task will have; the caller makes it with
    /// [`new_task_as`](Self::new_task_as) (ids taken and not used are
    /// skipped, which nothing relies on).
    pub(crate) fn next_task_id(&self) -> TaskId {
        self.next_task.fetch_add(1, Ordering::Relaxed)
    }

    /// [`new_task`](Self::new_task) with an id taken by
    /// [`next_task_id`](Self::next_task_id).
    pub(crate) fn new_task_as(
        &self,
        id: TaskId,
        name: Cow<'static, str>,
        parent: TaskId,
        worker: usize,
        f: Option<TaskFn>,
    ) -> TaskRef {
        self.live.fetch_add(1, Ordering::AcqRel);
        let mut task = Task::new(id, parent, name, worker, f);
        task.holder = crate::vocab::holder_word(self.run_id, id);
        let t = TaskRef::new(task);
        self.registry.insert(t, worker);
        crate::hooks::task_assigned(id, parent, worker, &t.get().name);
        t
    }
}
