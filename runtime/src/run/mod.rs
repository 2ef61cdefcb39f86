//! A run: [`Runtime`] (a configuration and the tasks to start with) and
//! [`Runtime::run`], which starts the workers, waits for them, and drops
//! what is left. The state the run's threads share is in `shared.rs`, the
//! threads in `threads.rs`, the view a thread outside the run has of it in
//! `watch.rs`, and the report of a deadlock in `deadlock.rs`.

pub(crate) mod deadlock;
pub(crate) mod shared;
pub(crate) mod threads;
pub(crate) mod watch;

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_deque::Worker as Deque;

use crate::config::{Config, MonitorConfig};
use crate::error::RunError;
use crate::mapper::{Mapper, Mapping};
use crate::monitor::log_dir;
use crate::profile;
use crate::registry::Registry;
use crate::stack::{guarded_budget, GuardPolicy, PageBudget, StackSource};
use crate::sync::{AtomicU64, AtomicU8, AtomicUsize};
use crate::task::{TaskFn, TaskRef};
use crate::vocab::TaskId;
use crate::worker::ticker::TickerShared;
use crate::worker::{WorkerShared, WorkerStats};
use shared::{Phase, Shared};
use threads::{log_handoffs, new_sampler, start_ticker, start_workers};
use watch::RunWatch;

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
    /// [`Builder::unguarded_stacks`](crate::Builder::unguarded_stacks) on a
    /// kernel without guard markers, past the guard budget).
    pub unguarded_stacks: u64,
}

/// A task added before the run.
pub(crate) struct InitialTask {
    pub(crate) name: Cow<'static, str>,
    /// The worker given at spawn (`spawn_on`), if any.
    pub(crate) hint: Option<usize>,
    pub(crate) f: TaskFn,
    /// The stream ends it was handed (`spawn_with`): stream id and side.
    pub(crate) ends: Vec<(u64, crate::vocab::Side)>,
}

/// A rill runtime: a configuration and the tasks to start with.
pub struct Runtime {
    pub(crate) cfg: Config,
    pub(crate) initial: Vec<InitialTask>,
    /// The number its next run will have (`Shared::run_id`), which ends
    /// handed over by `spawn_with` before the run record.
    pub(crate) run_id: u64,
    /// Where the run shows itself to a thread outside it (a cross-rank
    /// bridge), when one asked.
    watch: Option<Arc<RunWatch>>,
    /// What idle workers do between tasks (a cross-rank bridge's passes).
    idle_work: Option<Arc<dyn crate::worker::idle_work::IdleWork>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cfg", &self.cfg)
            .field("initial", &self.initial.len())
            .finish()
    }
}

/// The next run's number (`Shared::run_id`): 1 and up, wrapping before
/// the number that means "outside every run" (`stream/holder.rs`).
fn next_run_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed) % (crate::vocab::OUTSIDE_RUN - 1) + 1
}

impl Runtime {
    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// A runtime with a checked configuration and no tasks yet
    /// ([`Builder::build`](crate::Builder::build)).
    pub(crate) fn new(cfg: Config) -> Runtime {
        Runtime {
            cfg,
            initial: Vec::new(),
            run_id: next_run_id(),
            watch: None,
            idle_work: None,
        }
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

    /// Spawns `f` as the task `main`, runs until every task has ended, and
    /// returns what `f` returned, with the run's statistics.
    pub fn run_main<F, R>(&mut self, f: F) -> Result<(R, RunStats), RunError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.run_main_as("main", f)
    }

    /// [`run_main`](Self::run_main) with the main task called `name`: a
    /// network whose last task added before the run computes its result (a
    /// collector) makes that task its main one, and keeps its name, so that
    /// a mapping and the logs place and name it as any other.
    pub fn run_main_as<F, R>(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Result<(R, RunStats), RunError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let name = name.into();
        let out = Arc::new(Mutex::new(None));
        let put = out.clone();
        self.spawn(name.clone(), move || {
            let v = f();
            *put.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        });
        let stats = self.run()?;
        let v = out.lock().unwrap_or_else(|e| e.into_inner()).take();
        // A run that ends Ok ended every task, the main one included, normally.
        let v =
            v.ok_or_else(|| RunError::Start(format!("the task `{name}` ended without a value")))?;
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
            deferred: (0..n).map(|_| Mutex::new(Vec::new())).collect(),
            deferred_open: AtomicUsize::new(0),
            parallel: std::sync::atomic::AtomicBool::new(false),
            plan_progress: std::sync::atomic::AtomicU64::new(0),
            lead_clock: crate::thread_clock::ThreadCpuClock::unset(),
            ticker: TickerShared::new(),
            waiter: std::sync::OnceLock::new(),
            workers_left: AtomicUsize::new(0),
            run_id: std::mem::replace(&mut self.run_id, next_run_id()),
            waits_outside: std::sync::atomic::AtomicUsize::new(0),
            waits_unknown: std::sync::atomic::AtomicUsize::new(0),
            stall_reported: std::sync::atomic::AtomicBool::new(false),
            idle_work: self.idle_work.clone(),
        });
        if shared.mapper.spawns_near_spawner() {
            // Every worker but 0 begins by waiting for its block
            // (`worker/plan.rs`), so it counts as waiting from the start,
            // also before its thread runs (`WorkerLocal::share_new_tasks`).
            for w in shared.workers.iter().skip(1) {
                w.waits_for_plan.store(true, Ordering::Relaxed);
            }
        }
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
            Phase::Deadlock => {
                let r = deadlock::report(&shared.registry, &shared.initial_assigns);
                Err(RunError::Deadlock {
                    blocked: r.blocked,
                    cycle: r.cycle,
                    stream_names: r.stream_names,
                    ended: r.ended,
                })
            }
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
    initial: Vec<InitialTask>,
) -> Result<Vec<u64>, RunError> {
    let n = shared.workers.len();
    let mut created = vec![0u64; n];
    let mut assigns = Vec::new();
    // The block of each task the mapping places (those without a worker of
    // their own), from their order and the ends they were handed.
    let blocks = if shared.mapper.cuts_initial() {
        let ends: Vec<&[_]> = initial
            .iter()
            .filter(|t| t.hint.is_none())
            .map(|t| t.ends.as_slice())
            .collect();
        crate::cut::blocks(&ends, n)
    } else {
        Vec::new()
    };
    let mut blocks = blocks.into_iter();
    let mut initial = initial.into_iter().enumerate();
    for (k, InitialTask { name, hint, f, .. }) in initial.by_ref() {
        if k >= shared.cfg.max_tasks {
            return Err(RunError::NoStack {
                name: name.into_owned(),
                reason: format!(
                    "{} tasks are live, the configured limit (Builder::max_tasks)",
                    shared.cfg.max_tasks
                ),
            });
        }
        let block = if hint.is_none() {
            blocks.next().unwrap_or(0)
        } else {
            0
        };
        let target = match shared.mapper.place_initial(&name, hint, block) {
            Ok(w) => w,
            Err(e) => return Err(RunError::Start(e.to_string())),
        };
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
        if shared.steals_batches() && hint.is_none() && target != 0 {
            // A block of the plan beyond worker 0's: it waits for its
            // worker until the run shows it can use more than one
            // (`worker/plan.rs`).
            let mut b = shared.deferred[target]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if b.is_empty() {
                shared.deferred_open.fetch_add(1, Ordering::AcqRel);
            }
            b.push(t);
        } else {
            shared.workers[target].inbox.push(t);
        }
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
