//! The runtime: configuration, the shared state of a run, and `run`.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_deque::Worker as Deque;
use rill_log::MonitorFlags;

use crate::error::{BlockedTask, ConfigError, RunError, SpawnError};
use crate::mapper::{Mapper, Mapping};
use crate::monitor::log_dir;
use crate::profile::{self, ProfilePlanner};
use crate::registry::Registry;
use crate::run_threads::{log_handoffs, new_sampler, start_ticker, start_workers};
use crate::stack::{guarded_budget, GuardPolicy, PageBudget, StackSource};
use crate::stream::Ends;
use crate::sync::{AtomicU64, AtomicU8, AtomicUsize};
use crate::task::{BlockedOn, Task, TaskFn, TaskId, TaskRef};
use crate::worker::ticker::TickerShared;
use crate::worker::{WorkerShared, WorkerStats};

/// Monitoring settings of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonitorConfig {
    /// What to record; [`MonitorFlags::OFF`] records nothing (the default).
    pub flags: MonitorFlags,
    /// Where the per-worker logs go (`worker-N.rlog`); `rill-logs` when
    /// monitoring is on and no directory is given. A directory belongs to
    /// one live run at a time: a run given one that another live run holds
    /// fails at its start with [`ConfigError::LogDirInUse`].
    pub dir: Option<PathBuf>,
}

impl MonitorConfig {
    /// Monitoring with `flags` into `dir`.
    pub fn new(flags: MonitorFlags, dir: impl Into<PathBuf>) -> Self {
        MonitorConfig {
            flags,
            dir: Some(dir.into()),
        }
    }

    /// Monitoring off.
    pub fn off() -> Self {
        Self::default()
    }

    /// The log directory used when monitoring is on.
    pub fn log_dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("rill-logs"))
    }
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) workers: usize,
    pub(crate) pin: bool,
    pub(crate) stack_size: usize,
    pub(crate) capacity: usize,
    pub(crate) mapping: Mapping,
    pub(crate) max_tasks: usize,
    pub(crate) spin: Duration,
    /// Cores this process may run on, read once when the runtime is built:
    /// whether each worker has one decides whether idle spins may grow
    /// (`worker/idle_spin.rs`).
    pub(crate) cores: usize,
    pub(crate) monitor: MonitorConfig,
    pub(crate) guards: StackGuards,
    /// How long a run waits on ends held outside it, with every task
    /// blocked, before it says so on stderr (0: never).
    pub(crate) stall_report: Duration,
    /// [`Mapping::Profile`]'s planner (`profile.rs`).
    pub(crate) planner: Option<ProfilePlanner>,
}

/// How long a run whose every task is blocked on stream ends held outside
/// it waits before it says so on stderr (once per run; it goes on waiting).
pub const STALL_REPORT: Duration = Duration::from_secs(10);

/// How task stacks are guarded: the builder's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackGuards {
    /// `Builder::unguarded_stacks`.
    pub(crate) allow_unguarded: bool,
    /// False: do as if the kernel had no guard markers (tests).
    pub(crate) markers: bool,
    /// Guard pages allowed in place of the budget from `vm.max_map_count`
    /// (tests).
    pub(crate) page_budget: Option<usize>,
}

impl Default for StackGuards {
    fn default() -> Self {
        StackGuards {
            allow_unguarded: false,
            markers: true,
            page_budget: None,
        }
    }
}

impl Config {
    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }
    /// Default stream capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// `Mapping::Steal`: thieves may take any task that never ran, one
    /// placed with `spawn_on` too (the mode's purpose); under every other
    /// mapping a worker given at spawn always wins.
    pub(crate) fn mapping_steals_all(&self) -> bool {
        matches!(self.mapping, Mapping::Steal)
    }

    /// The mapping policy.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }
    /// Usable bytes per task stack.
    pub fn stack_size(&self) -> usize {
        self.stack_size
    }
}

/// Builds a [`Runtime`].
///
/// ```
/// let mut rt = rill::Runtime::builder().workers(2).build().unwrap();
/// let (sum, stats) = rt.run_main(|| {
///     let (mut w, mut r) = rill::stream::<u32>(4);
///     rill::spawn("producer", move || for i in 0..10 { w.write(i).unwrap(); });
///     std::iter::from_fn(|| r.read()).sum::<u32>()
/// }).unwrap();
/// assert_eq!(sum, 45);
/// assert_eq!(stats.tasks_created, 2);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    workers: Option<usize>,
    pin: bool,
    stack_size: usize,
    capacity: usize,
    mapping: Mapping,
    max_tasks: usize,
    /// None: `RILL_SPIN_US` if set, else [`DEFAULT_SPIN`].
    spin: Option<Duration>,
    monitor: MonitorConfig,
    guards: StackGuards,
    stall_report: Duration,
    planner: Option<ProfilePlanner>,
}

/// How long an idle worker spins before it parks, unless the builder or
/// `RILL_SPIN_US` says otherwise.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// The longest idle spin [`Builder::spin`] and `RILL_SPIN_US` accept: one
/// second. A deadlock is found only once every worker has spun and parked,
/// so the spin also bounds how late a deadlock is reported.
pub const MAX_SPIN: Duration = Duration::from_secs(1);

/// The most workers a runtime may have. Each is a thread with a log, an
/// inbox and a slab of stacks; the bound keeps the per-worker arrays and the
/// arithmetic on them (`workers * slab`) far from overflow.
pub const MAX_WORKERS: usize = 4096;

/// The largest task stack [`Builder::stack_size`] accepts: 1 GiB. Stacks are
/// cut from slabs of 32, so a slab of the largest is 32 GiB of address
/// space (reserved, not backed); the bound keeps the page rounding and the
/// slab's size from wrapping.
pub const MAX_STACK_SIZE: usize = 1 << 30;

/// The idle spin `RILL_SPIN_US` asks for: microseconds, a whole number up to
/// one second; None when the variable is unset.
fn spin_from_env(value: Option<std::ffi::OsString>) -> Result<Option<Duration>, ConfigError> {
    let Some(v) = value else { return Ok(None) };
    let bad = |reason: &str| ConfigError::BadSpin {
        value: v.to_string_lossy().into_owned(),
        reason: reason.into(),
    };
    let s = v.to_str().ok_or_else(|| bad("not UTF-8"))?;
    let us: u64 = s
        .trim()
        .parse()
        .map_err(|_| bad("expected a whole number of microseconds"))?;
    if us > MAX_SPIN.as_micros() as u64 {
        return Err(bad("at most 1000000 (one second)"));
    }
    Ok(Some(Duration::from_micros(us)))
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            pin: true,
            stack_size: 256 * 1024,
            capacity: 16,
            mapping: Mapping::Adaptive,
            max_tasks: 1 << 22,
            spin: None,
            monitor: MonitorConfig::default(),
            guards: StackGuards::default(),
            stall_report: STALL_REPORT,
            planner: None,
        }
    }
}

impl Builder {
    /// Threads this builder's runtime will run (its workers), and whether
    /// its idle spin was set (by the builder or `RILL_SPIN_US`), for a
    /// cross-rank network that shares the machine with other ranks.
    pub(crate) fn workers_and_spin_set(&self) -> (usize, bool) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin_set = self.spin.is_some() || std::env::var_os("RILL_SPIN_US").is_some();
        (self.workers.unwrap_or(cores), spin_set)
    }

    /// The monitoring settings, for a cross-rank network to point each
    /// rank's logs at its own directory.
    pub(crate) fn monitor_mut(&mut self) -> &mut MonitorConfig {
        &mut self.monitor
    }

    /// Number of worker threads (default: the cores available), 1 to
    /// [`MAX_WORKERS`].
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }
    /// Pin worker i to core i mod cores (default on).
    pub fn pin(mut self, on: bool) -> Self {
        self.pin = on;
        self
    }
    /// Usable stack bytes per task (default 256 KiB; virtual memory: only
    /// the pages a task touches cost memory), 16 KiB to [`MAX_STACK_SIZE`].
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// Default stream capacity for [`crate::stream_default`] (default 16),
    /// 1 to [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    pub fn capacity(mut self, n: usize) -> Self {
        self.capacity = n;
        self
    }
    /// Mapping policy (default round-robin).
    pub fn mapping(mut self, m: Mapping) -> Self {
        self.mapping = m;
        self
    }
    /// Most task stacks that may exist at once (default 4M).
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }
    /// How long an idle worker spins before it parks (default
    /// [`DEFAULT_SPIN`], 50 µs, or `RILL_SPIN_US` microseconds when that is
    /// set). Spinning longer makes a wake that comes within the spin cheap
    /// (no futex, no sleeping core to wake) and costs an idle core that long
    /// each time it runs out of work. Where every worker has a core of its
    /// own, a worker whose parks keep ending soon after they began grows its
    /// spin up to 4 times this (or as many times as there are workers, if
    /// more), and a long park brings it back. At most [`MAX_SPIN`]: `build`
    /// refuses a longer one.
    pub fn spin(mut self, d: Duration) -> Self {
        self.spin = Some(d);
        self
    }
    /// Monitoring settings.
    pub fn monitor(mut self, m: MonitorConfig) -> Self {
        self.monitor = m;
        self
    }

    /// Allows task stacks without a guard page (default: not allowed).
    ///
    /// Every stack normally has a guard page below it, so that a task that
    /// overflows its stack faults there and the process aborts with a report
    /// naming the task. Where the kernel has guard markers
    /// (`MADV_GUARD_INSTALL`, Linux 6.13 and later) every stack gets one and
    /// this setting changes nothing. On older kernels a guard page costs two
    /// kernel mappings, so the guards run out near 24,000 live tasks at the
    /// default `vm.max_map_count` (65530); past that, spawning fails with an
    /// error naming the limit, unless this is set. Raising the limit
    /// (`sysctl -w vm.max_map_count=N`) keeps every stack guarded and is the
    /// better fix where it is possible.
    ///
    /// With this set, stacks past the guard budget have only canary words at
    /// their bottom, checked each time their task stops: an overflow is
    /// reported by task name, but only after it has written into the stack
    /// next to it, which may belong to a task running on another worker
    /// right then, and a large enough frame can skip the canaries and go
    /// unnoticed.
    ///
    /// # Safety
    ///
    /// With `allow` true, a task that overflows its stack corrupts memory
    /// that safe code relies on (another task's stack), which is undefined
    /// behaviour. This is `unsafe` because the runtime can no longer stop
    /// that: the caller promises that no task of the runtime needs more stack
    /// than [`Builder::stack_size`] gives it (no unbounded recursion, no
    /// large arrays on the stack beyond what was measured). `allow` false
    /// has no such requirement.
    pub unsafe fn unguarded_stacks(mut self, allow: bool) -> Self {
        self.guards.allow_unguarded = allow;
        self
    }

    /// Tests only: whether to use guard markers where the kernel has them
    /// (default true); false exercises the guard-page fallback.
    #[doc(hidden)]
    pub fn guard_markers(mut self, on: bool) -> Self {
        self.guards.markers = on;
        self
    }

    /// Tests only: how long a run blocked on ends held outside it waits
    /// before it says so (default [`STALL_REPORT`]; 0: never).
    #[doc(hidden)]
    pub fn stall_report(mut self, after: Duration) -> Self {
        self.stall_report = after;
        self
    }

    /// Tests only: how many stacks may get an `mprotect` guard page when
    /// markers are not used, in place of the budget `vm.max_map_count` gives.
    #[doc(hidden)]
    pub fn guard_page_budget(mut self, stacks: usize) -> Self {
        self.guards.page_budget = Some(stacks);
        self
    }

    /// What plans a [`Mapping::Profile`] file at the end of a run that
    /// records one: `planner(log_dir, workers)` returns the file's text
    /// from the run's count-mode logs (`rill_monitor::profile_planner` is
    /// the planner of `rill-mon map`). Without one, the file records where
    /// each task started (see `Mapping::Profile`).
    pub fn profile_planner<F>(mut self, planner: F) -> Self
    where
        F: Fn(&std::path::Path, usize) -> Result<String, String> + Send + Sync + 'static,
    {
        self.planner = Some(ProfilePlanner(Arc::new(planner)));
        self
    }

    /// Checks the configuration and makes the runtime.
    pub fn build(self) -> Result<Runtime, ConfigError> {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        // Every value is checked against both bounds here, so that no
        // arithmetic on it later can wrap (slab sizes, per-worker arrays,
        // ring sizes, the spin's deadline).
        let workers = match self.workers {
            Some(0) => return Err(ConfigError::NoWorkers),
            Some(n) if n > MAX_WORKERS => return Err(ConfigError::TooManyWorkers(n)),
            Some(n) => n,
            None => cores.min(MAX_WORKERS),
        };
        if self.capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        if self.capacity > crate::stream::MAX_CAPACITY {
            return Err(ConfigError::CapacityTooLarge(self.capacity));
        }
        if self.stack_size < 16 * 1024 {
            return Err(ConfigError::StackTooSmall(self.stack_size));
        }
        if self.stack_size > MAX_STACK_SIZE {
            return Err(ConfigError::StackTooLarge(self.stack_size));
        }
        if self.max_tasks == 0 {
            return Err(ConfigError::NoTasks);
        }
        if let Mapping::Manual(t) = &self.mapping {
            t.validate(workers)?;
        }
        let spin = match self.spin {
            Some(d) if d > MAX_SPIN => return Err(ConfigError::SpinTooLong(d)),
            Some(d) => d,
            None => spin_from_env(std::env::var_os("RILL_SPIN_US"))?.unwrap_or(DEFAULT_SPIN),
        };
        Ok(Runtime {
            cfg: Config {
                workers,
                pin: self.pin,
                stack_size: self.stack_size,
                capacity: self.capacity,
                mapping: self.mapping,
                max_tasks: self.max_tasks,
                spin,
                cores,
                monitor: self.monitor,
                guards: self.guards,
                stall_report: self.stall_report,
                planner: self.planner,
            },
            initial: Vec::new(),
            run_id: next_run_id(),
            watch: None,
            idle_work: None,
        })
    }
}

/// What a finished run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Tasks created.
    pub tasks_created: u64,
    /// Task dispatches.
    pub dispatches: u64,
    /// Spins before a block (see [`WorkerStats::spins`](crate::WorkerStats::spins)).
    pub spins: u64,
    /// Messages written (counted when writers are dropped).
    pub messages: u64,
    /// Messages that crossed workers (see [`WorkerStats::crossed`]).
    pub crossed: u64,
    /// Tasks taken by a worker from another before they started (see
    /// [`WorkerStats::steals`]).
    pub steals: u64,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// Per worker.
    pub workers: Vec<WorkerStats>,
    /// Bytes of monitoring logs written (0 without monitoring).
    pub log_bytes: u64,
    /// Where the logs went, when monitoring was on.
    pub log_dir: Option<PathBuf>,
    /// Task stacks made during the run with a guard page (stacks are reused,
    /// so this is the most tasks that were alive at once, rounded up to
    /// slabs of 32 per worker).
    pub guarded_stacks: u64,
    /// Task stacks made without a guard page (only with
    /// [`Builder::unguarded_stacks`] on a kernel without guard markers, past
    /// the guard budget).
    pub unguarded_stacks: u64,
}

/// A rill runtime: a configuration and the tasks to start with.
pub struct Runtime {
    cfg: Config,
    initial: Vec<(Cow<'static, str>, Option<usize>, TaskFn)>,
    /// The number its next run will have (`Shared::run_id`), which ends
    /// handed over by `spawn_with` before the run record.
    run_id: u64,
    /// Where the run shows itself to a thread outside it (a cross-rank
    /// bridge), when one asked.
    watch: Option<Arc<RunWatch>>,
    /// What idle workers do between tasks (a cross-rank bridge's passes).
    idle_work: Option<Arc<dyn crate::worker::idle_work::IdleWork>>,
}

/// A run as a thread outside it sees it: a cross-rank bridge asks whether
/// every task waits on ends held outside the run, and ends the run as
/// deadlocked when every rank is so and nothing is in flight.
#[derive(Default)]
pub(crate) struct RunWatch {
    shared: Mutex<Option<Arc<Shared>>>,
}

impl RunWatch {
    /// Every worker idle, no task queued, and tasks left that wait on ends
    /// held outside the run (a snapshot: a wake may follow it at once).
    pub(crate) fn all_waiting_outside(&self) -> bool {
        let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        s.as_ref().is_some_and(|s| {
            s.phase() == Phase::Running
                && s.looks_deadlocked()
                && s.waits_outside.load(Ordering::SeqCst) > 0
        })
    }

    /// Ends the run as deadlocked: it returns [`RunError::Deadlock`] with
    /// its blocked tasks.
    pub(crate) fn end_deadlocked(&self) {
        let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = s.as_ref() {
            s.end(Phase::Deadlock);
        }
    }

    fn publish(&self, s: Option<Arc<Shared>>) {
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cfg", &self.cfg)
            .field("initial", &self.initial.len())
            .finish()
    }
}

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
    phase: AtomicU8,
    failure: Mutex<Option<RunError>>,
    pub(crate) registry: Registry,
    next_task: AtomicU64,
    pub(crate) stacks: Arc<StackSource>,
    stealing: bool,
    /// Thieves take contiguous runs of tasks ([`Mapping::Adaptive`]), not
    /// one task.
    steal_batches: bool,
    /// A run that records a [`Mapping::Profile`] without a planner: where
    /// its tasks started.
    pub(crate) profile_record: Option<profile::Record>,
    /// Tasks placed before the run: (id, worker, name), logged by their worker.
    pub(crate) initial_assigns: Vec<(TaskId, usize, String)>,
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

/// The next run's number (`Shared::run_id`): 1 and up, wrapping before
/// the number that means "outside every run" (`stream/holder.rs`).
fn next_run_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed) % (crate::stream::OUTSIDE_RUN - 1) + 1
}

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
        let mut task = Task::new(self, id, parent, name, worker, f);
        task.holder = crate::stream::holder_word(self.run_id, id);
        let t = TaskRef::new(task);
        self.registry.insert(t, worker);
        crate::hooks::task_assigned(id, parent, worker, &t.get().name);
        t
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Adds a task to start when the run begins, placed by the mapping
    /// policy; returns the id it will have (tasks added before a run are
    /// numbered 1, 2, ... in the order they are added). The spawn family
    /// is the one of [`spawn`](crate::spawn) inside a run: `spawn`,
    /// [`spawn_on`](Self::spawn_on), [`spawn_with`](Self::spawn_with), and
    /// [`try_spawn_on`](Self::try_spawn_on) for an error instead of a panic.
    /// (Limits such as `max_tasks` are checked when the run starts.)
    pub fn spawn<F>(&mut self, name: impl Into<Cow<'static, str>>, f: F) -> TaskId
    where
        F: FnOnce() + Send + 'static,
    {
        self.initial
            .push((name.into(), None, crate::task::task_fn(f)));
        self.initial.len() as TaskId
    }

    /// Adds a task to start on `worker` when the run begins.
    ///
    /// # Panics
    /// When there is no such worker.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, worker: usize, name: impl Into<Cow<'static, str>>, f: F) -> TaskId
    where
        F: FnOnce() + Send + 'static,
    {
        match self.try_spawn_on(worker, name, f) {
            Ok(id) => id,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`spawn_on`](Self::spawn_on), returning the error instead of
    /// panicking.
    pub fn try_spawn_on<F>(
        &mut self,
        worker: usize,
        name: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Result<TaskId, SpawnError>
    where
        F: FnOnce() + Send + 'static,
    {
        let name = name.into();
        if worker >= self.cfg.workers {
            return Err(SpawnError::NoSuchWorker {
                name: name.into_owned(),
                worker,
                workers: self.cfg.workers,
            });
        }
        self.initial
            .push((name, Some(worker), crate::task::task_fn(f)));
        Ok(self.initial.len() as TaskId)
    }

    /// Adds a task that is handed `ends` (see [`spawn_with`](crate::spawn_with)):
    /// it holds them from the start, for deadlock reports.
    pub fn spawn_with<E, F>(&mut self, name: impl Into<Cow<'static, str>>, ends: E, f: F) -> TaskId
    where
        E: Ends,
        F: FnOnce(E) + Send + 'static,
    {
        // As a plain thread (`tls::ThreadWords`), also when called in a task
        // of another run: the ends belong to a task of this runtime's next
        // run, not to the caller's.
        let words = crate::tls::ThreadWords::take();
        crate::tls::set_holding_for(self.run_id);
        ends.hold(self.initial.len() as TaskId + 1);
        words.restore();
        self.spawn(name, move || f(ends))
    }

    /// The run's watch, for a thread outside it (made on first call).
    pub(crate) fn watch(&mut self) -> Arc<RunWatch> {
        self.watch.get_or_insert_with(Default::default).clone()
    }

    /// Gives the run's idle workers `work` to do between their tasks (a
    /// cross-rank bridge's passes, `worker/idle_work.rs`).
    pub(crate) fn set_idle_work(&mut self, work: Arc<dyn crate::worker::idle_work::IdleWork>) {
        self.idle_work = Some(work);
    }

    /// [`spawn_with`](Self::spawn_with) on a given worker (a cross-rank
    /// network's placement).
    pub(crate) fn try_spawn_with_on<E, F>(
        &mut self,
        worker: usize,
        name: impl Into<Cow<'static, str>>,
        ends: E,
        f: F,
    ) -> Result<TaskId, SpawnError>
    where
        E: Ends,
        F: FnOnce(E) + Send + 'static,
    {
        let name = name.into();
        if worker >= self.cfg.workers {
            return Err(SpawnError::NoSuchWorker {
                name: name.into_owned(),
                worker,
                workers: self.cfg.workers,
            });
        }
        // As in `spawn_with`.
        let words = crate::tls::ThreadWords::take();
        crate::tls::set_holding_for(self.run_id);
        ends.hold(self.initial.len() as TaskId + 1);
        words.restore();
        self.try_spawn_on(worker, name, move || f(ends))
    }

    /// Spawns `f` as the task `main`, runs until every task has ended, and
    /// returns what `f` returned, with the run's statistics.
    pub fn run_main<F, R>(&mut self, f: F) -> Result<(R, RunStats), RunError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let out = Arc::new(Mutex::new(None));
        let put = out.clone();
        self.spawn("main", move || {
            let v = f();
            *put.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        });
        let stats = self.run()?;
        let v = out.lock().unwrap_or_else(|e| e.into_inner()).take();
        // A run that ends Ok ended every task, `main` included, normally.
        let v = v.ok_or_else(|| RunError::Start("the task `main` ended without a value".into()))?;
        Ok((v, stats))
    }

    /// Runs the tasks added so far, and all they spawn, until every task has
    /// ended. Fails when a task panics, when tasks are left that can never run
    /// (deadlock), or when a task cannot get a stack. Whatever the outcome,
    /// every task left is dropped (its stack unwound) before this returns.
    ///
    /// A run may be started from inside a task of another run, or from a
    /// destructor while a run drops its tasks: for its time the calling
    /// thread is a plain thread to both runs (no task of the outer run
    /// runs on it, and none of the inner run's spawns or blocks reach the
    /// outer run), and the outer task's state on the thread is put back when
    /// this returns. The outer worker's thread waits in here meanwhile, so
    /// its other tasks wait too.
    pub fn run(&mut self) -> Result<RunStats, RunError> {
        /// The calling thread's words, put back however the run leaves.
        struct Words(Option<crate::tls::ThreadWords>);
        impl Drop for Words {
            fn drop(&mut self) {
                if let Some(w) = self.0.take() {
                    w.restore();
                }
            }
        }
        let _words = Words(Some(crate::tls::ThreadWords::take()));
        self.run_here()
    }

    /// [`run`](Self::run) on a thread whose words are a new thread's.
    fn run_here(&mut self) -> Result<RunStats, RunError> {
        let t0 = Instant::now();
        let mut cfg = self.cfg.clone();
        let n = cfg.workers;
        // Mapping::Profile: load the file, or record this run (`profile.rs`).
        let (profile_table, recording) = match &cfg.mapping {
            Mapping::Profile(path) => match profile::start(path, n) {
                profile::Start::Loaded(t) => (Some(t), None),
                profile::Start::Record => (None, Some(path.clone())),
            },
            _ => (None, None),
        };
        let mut profile_logs = None;
        if let (Some(path), Some(_)) = (&recording, &cfg.planner) {
            if cfg.monitor.flags.is_off() {
                let dir = profile::log_dir(path);
                cfg.monitor = MonitorConfig::new(profile::PROFILE_MONITOR, &dir);
            }
            profile_logs = Some(cfg.monitor.log_dir());
        }
        let monitor = cfg.monitor.clone();
        let mapper = Mapper::new(cfg.mapping.clone(), n).with_profile(profile_table);
        crate::barrier::init();
        crate::overflow::install();
        crate::task_panic::install();
        let steal_batches = mapper.stealing();
        let stealing = steal_batches.is_some();
        let steal_batches = steal_batches == Some(true);
        let mut deques: Vec<Option<Deque<TaskRef>>> = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            if stealing {
                let d = if steal_batches {
                    Deque::new_lifo()
                } else {
                    Deque::new_fifo()
                };
                workers.push(WorkerShared::new(Some(d.stealer())));
                deques.push(Some(d));
            } else {
                workers.push(WorkerShared::new(None));
                deques.push(None);
            }
        }
        // Pools keep up to a slab each beyond the live tasks; the limit users set
        // is on live tasks and is enforced at spawn.
        let stack_cap = cfg.max_tasks.saturating_add(n * crate::stack::SLAB_STACKS);
        let g = cfg.guards;
        let budget = guarded_budget();
        let policy = GuardPolicy {
            markers: g.markers,
            pages: PageBudget {
                stacks: g.page_budget.unwrap_or(budget.stacks),
                ..budget
            },
            allow_unguarded: g.allow_unguarded,
        };
        let stacks = StackSource::new(cfg.stack_size, stack_cap, policy);
        let mut shared = Arc::new(Shared {
            mapper,
            profile_record: (recording.is_some() && profile_logs.is_none())
                .then(profile::Record::default),
            cfg,
            workers: workers.into_boxed_slice(),
            live: AtomicUsize::new(0),
            idle: AtomicUsize::new(0),
            phase: AtomicU8::new(Phase::Running as u8),
            failure: Mutex::new(None),
            registry: Registry::new(),
            next_task: AtomicU64::new(1),
            stacks,
            stealing,
            steal_batches,
            initial_assigns: Vec::new(),
            ticker: TickerShared::new(),
            waiter: std::sync::OnceLock::new(),
            workers_left: AtomicUsize::new(0),
            run_id: std::mem::replace(&mut self.run_id, next_run_id()),
            waits_outside: std::sync::atomic::AtomicUsize::new(0),
            waits_unknown: std::sync::atomic::AtomicUsize::new(0),
            stall_reported: std::sync::atomic::AtomicBool::new(false),
            idle_work: self.idle_work.clone(),
        });
        let initial: Vec<_> = self.initial.drain(..).collect();
        let created = match place_initial(&mut shared, initial) {
            Ok(c) => c,
            Err(e) => {
                // The tasks placed so far never ran: drop their closures.
                let _ = drop_left(&shared);
                return Err(e);
            }
        };
        let monitored = !monitor.flags.is_off();
        if shared.live.load(Ordering::Acquire) == 0 {
            // Nothing to run; a monitored run still leaves its (empty) logs.
            log_dir::open(&monitor, n)?;
            return Ok(RunStats {
                wall: t0.elapsed(),
                ..Default::default()
            });
        }
        if let Some(w) = &self.watch {
            w.publish(Some(shared.clone()));
        }
        let _active = monitored.then(ActiveGuard::new);
        if monitor.flags.is_sampled() {
            let _ = shared.waiter.set(std::thread::current());
        }
        // The sampler's first window begins now; the samples the workers
        // take before the sampler starts wait in their rings.
        let first_window = crate::monitor::sampler::WindowStart::now();
        // The workers start first: a new thread takes 100 to 700 µs here to
        // run and move to its core, time in which this thread sets the logs
        // up (the directory, its lock, the clock, the files: some 150 µs)
        // and hands each worker its log (`LogHandoff`).
        let (handoffs, senders) = log_handoffs(n, monitored);
        let handles = start_workers(&shared, deques, handoffs);
        let run_logs = match log_dir::open(&monitor, n) {
            Ok(l) => l,
            Err(e) => {
                // The workers leave without running anything: the phase is
                // over before they learn (their senders dropped) that no log
                // comes.
                shared.end(Phase::Failed);
                drop(senders);
                for h in handles {
                    let _ = h.join();
                }
                let _ = drop_left(&shared);
                return Err(e);
            }
        };
        let log_dir::RunLogs {
            logs,
            dir: log_dir,
            clock: run_clock,
            lock: _dir_lock,
        } = run_logs;
        for (tx, log) in senders.into_iter().zip(logs) {
            // A worker that failed to start dropped its receiver.
            let _ = tx.send(log);
        }
        // Started once the workers run, so that its spawn is not on the way
        // to their first dispatch. Windows sealed before it runs are covered
        // by its first look (`ticker::run`).
        let ticker = start_ticker(&shared);
        let mut sampler = log_dir
            .as_deref()
            .and_then(|dir| new_sampler(&shared, dir, run_clock.as_ref(), first_window));
        if let Some(s) = &mut sampler {
            s.run_until_end(&shared);
        }
        let mut stats = RunStats::default();
        let mut worker_crash = None;
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(mut s) => {
                    s.tasks_created += created[i];
                    stats.tasks_created += s.tasks_created;
                    stats.dispatches += s.dispatches;
                    stats.spins += s.spins;
                    stats.messages += s.messages;
                    stats.crossed += s.crossed;
                    stats.steals += s.steals;
                    stats.log_bytes += s.log_bytes;
                    stats.workers.push(s);
                }
                Err(_) => {
                    worker_crash = Some(RunError::Start(format!("worker thread {i} crashed")))
                }
            }
        }
        // Every worker has stopped, so the run is over: the ticker sees it.
        shared.end(Phase::Failed);
        if let Some(w) = &self.watch {
            w.publish(None);
        }
        if let Some(t) = ticker {
            let _ = t.join();
        }
        let sampler_log = sampler.map(|s| s.finish(&shared));
        stats.wall = t0.elapsed();
        if let (Some(dir), Some(rate)) = (&log_dir, run_clock.and_then(|c| c.refine())) {
            log_dir::set_rate(dir, n, rate);
            if let Some(path) = &sampler_log {
                // As for the workers' logs (`log_dir::set_rate`).
                let _ = rill_log::set_header_rate(path, rate);
            }
        }
        stats.log_dir = log_dir;
        let (guarded, unguarded) = shared.stacks.counts();
        stats.guarded_stacks = guarded as u64;
        stats.unguarded_stacks = unguarded as u64;
        if let (Some(path), Phase::Done) = (&recording, shared.phase()) {
            let record = shared.profile_record.as_ref();
            profile::finish(
                path,
                n,
                shared.cfg.planner.as_ref(),
                profile_logs.as_deref(),
                record.unwrap_or(&profile::Record::default()),
            );
        }
        let result = match shared.phase() {
            Phase::Done => Ok(stats),
            Phase::Deadlock => Err(deadlock_report(&shared)),
            Phase::Failed | Phase::Running => Err(shared
                .failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .or(worker_crash)
                .unwrap_or_else(|| RunError::Start("the run stopped without a reason".into()))),
        };
        // Drop what is left: force-unwind suspended coroutines (their stream
        // ends close; wakes are ignored now that the phase is not Running).
        // A fault or a panic that aborts the process meanwhile says how the
        // run was ending (`overflow.rs`, `task_panic.rs`).
        let ending = match &result {
            Ok(_) => "the run had ended normally".to_owned(),
            Err(e) => format!("the run was ending with this error: {e}"),
        };
        crate::tls::set_ending((&ending as *const String).cast());
        let teardown = drop_left(&shared);
        crate::tls::set_ending(std::ptr::null());
        drop(ending);
        match (result, teardown) {
            (Ok(_), Err(e)) => Err(e),
            (r, _) => r,
        }
    }
}

/// Places the tasks added before the run, each in its worker's inbox.
/// Returns how many each worker got.
fn place_initial(
    shared: &mut Arc<Shared>,
    initial: Vec<(Cow<'static, str>, Option<usize>, TaskFn)>,
) -> Result<Vec<u64>, RunError> {
    let n = shared.workers.len();
    let mut created = vec![0u64; n];
    let mut assigns = Vec::new();
    // The tasks the mapping places, numbered in spawn order for the
    // adaptive blocks.
    let placed = initial.iter().filter(|t| t.1.is_none()).count();
    let mut nth = 0;
    let mut initial = initial.into_iter().enumerate();
    for (k, (name, hint, f)) in initial.by_ref() {
        if k >= shared.cfg.max_tasks {
            return Err(RunError::NoStack {
                name: name.into_owned(),
                reason: format!(
                    "{} tasks are live, the configured limit (Builder::max_tasks)",
                    shared.cfg.max_tasks
                ),
            });
        }
        let target = match shared.mapper.place_initial(&name, hint, nth, placed) {
            Ok(w) => w,
            Err(e) => return Err(RunError::Start(e.to_string())),
        };
        nth += usize::from(hint.is_none());
        let label = name.to_string();
        let t = shared.new_task(name, 0, target, Some(f));
        t.get()
            .pinned
            .set(hint.is_some() && !shared.cfg.mapping_steals_all());
        // `Runtime::spawn` promised this id: the run numbers from 1 and
        // makes the tasks added before it first, in order.
        debug_assert_eq!(t.get().id, k as TaskId + 1);
        assigns.push((t.get().id, target, label));
        created[target] += 1;
        shared.workers[target].inbox.push(t);
    }
    if let Some(sh) = Arc::get_mut(shared) {
        sh.initial_assigns = assigns;
    }
    Ok(created)
}

/// Drops every task left in the registry once the workers have stopped:
/// force-unwinds suspended coroutines (their stream ends close; wakes are
/// ignored now that the phase is not Running) and drops the closures of
/// tasks that never ran. A destructor that panics there is reported, and
/// the other tasks are still dropped.
fn drop_left(shared: &Shared) -> Result<(), RunError> {
    let mut first = None;
    // The task stacks unwind on this thread: an overflow there is reported
    // from the signal stack, which this thread may not have yet.
    crate::overflow::ensure_signal_stack();
    for t in shared.registry.drain() {
        let name = t.get().name.to_string();
        let dropped = catch_unwind(AssertUnwindSafe(|| {
            let task = t.get();
            // SAFETY: every worker has stopped, so this thread owns every task
            // left in the registry; each is dropped exactly once.
            let coro = task.coro.with_mut(|p| unsafe { (*p).take() });
            crate::context::drop_suspended(coro, t.as_ptr());
            // SAFETY: as above.
            drop(task.start.with_mut(|p| unsafe { (*p).take() }));
            // SAFETY: as above; nothing refers to the task any more (its
            // slots were unregistered as its stack unwound). A destructor
            // that panics in there leaks the allocation, nothing worse.
            unsafe { t.free() };
        }));
        if let Err(p) = dropped {
            first.get_or_insert(RunError::TeardownPanicked {
                name,
                message: crate::worker::panic_message(p.as_ref()),
            });
        }
    }
    first.map_or(Ok(()), Err)
}

/// Counts this run in `hooks::ACTIVE` while it lives.
struct ActiveGuard;

impl ActiveGuard {
    fn new() -> Self {
        crate::hooks::ACTIVE.fetch_add(1, Ordering::Relaxed);
        ActiveGuard
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        crate::hooks::ACTIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Lists the blocked tasks and finds a waiting cycle among them.
fn deadlock_report(shared: &Shared) -> RunError {
    let mut blocked = Vec::new();
    for t in shared.registry.drain_view() {
        let task = t.get();
        // SAFETY: the workers have stopped; this thread reads task fields alone.
        let on = task.blocked_on.with(|p| unsafe { (*p).clone() });
        blocked.push(BlockedTask {
            id: task.id,
            name: task.name.to_string(),
            on,
        });
    }
    let cycle = find_cycle(&blocked);
    // Names now, while the streams live: the error is printed later.
    let mut stream_names = Vec::new();
    for b in &blocked {
        let ids: Vec<u64> = match &b.on {
            BlockedOn::Input { stream, .. } | BlockedOn::Output { stream, .. } => vec![*stream],
            BlockedOn::Any { streams } => streams.iter().map(|(s, _)| *s).collect(),
            BlockedOn::Nothing => Vec::new(),
        };
        for id in ids {
            if let Some(n) = crate::stream::names::name_of(id) {
                stream_names.push((id, n));
            }
        }
    }
    RunError::Deadlock {
        blocked,
        cycle,
        stream_names,
    }
}

/// A cycle in the waiting relation W(A,B), as task names.
pub(crate) fn find_cycle(blocked: &[BlockedTask]) -> Vec<String> {
    use std::collections::HashMap;
    let by_id: HashMap<TaskId, &BlockedTask> = blocked.iter().map(|b| (b.id, b)).collect();
    let next = |b: &BlockedTask| -> Vec<TaskId> {
        match &b.on {
            BlockedOn::Input { peer, .. } | BlockedOn::Output { peer, .. } => {
                peer.iter().copied().collect()
            }
            BlockedOn::Any { streams } => streams.iter().filter_map(|(_, p)| *p).collect(),
            BlockedOn::Nothing => Vec::new(),
        }
    };
    // Iterative DFS with colours.
    let mut colour: HashMap<TaskId, u8> = HashMap::new();
    for start in blocked {
        if colour.contains_key(&start.id) {
            continue;
        }
        let mut stack: Vec<(TaskId, Vec<TaskId>)> = vec![(start.id, next(start))];
        let mut path: Vec<TaskId> = vec![start.id];
        colour.insert(start.id, 1);
        while let Some((_, succ)) = stack.last_mut() {
            match succ.pop() {
                Some(s) => match colour.get(&s) {
                    Some(1) => {
                        let pos = path.iter().position(|&x| x == s).unwrap_or(0);
                        let mut names: Vec<String> = path[pos..]
                            .iter()
                            .map(|id| format!("{} ({id})", by_id[id].name))
                            .collect();
                        names.push(names[0].clone());
                        return names;
                    }
                    Some(_) => {}
                    None => {
                        if let Some(b) = by_id.get(&s) {
                            colour.insert(s, 1);
                            path.push(s);
                            stack.push((s, next(b)));
                        }
                    }
                },
                None => {
                    let (id, _) = stack.pop().expect("non-empty");
                    colour.insert(id, 2);
                    path.pop();
                }
            }
        }
    }
    Vec::new()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn spin_env_values() {
        let v = |s: &str| spin_from_env(Some(s.into()));
        assert_eq!(spin_from_env(None).unwrap(), None);
        assert_eq!(v("0").unwrap(), Some(Duration::ZERO));
        assert_eq!(v(" 500 ").unwrap(), Some(Duration::from_micros(500)));
        assert_eq!(v("1000000").unwrap(), Some(Duration::from_secs(1)));
        for bad in ["", "-1", "1.5", "50us", "1000001"] {
            let e = v(bad).unwrap_err().to_string();
            assert!(e.starts_with("RILL_SPIN_US="), "{bad}: {e}");
        }
    }
}
