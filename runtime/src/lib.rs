//! rill: a user-mode lightweight-task stream runtime, in the style of LPEL.
//!
//! Tasks are stackful coroutines mapped onto worker threads (one per core,
//! pinned). They talk over bounded single-writer single-reader [streams](mod@stream),
//! and block only on them: reading an empty stream, writing a full one, or
//! polling several. A runtime ends its run when every task has ended, and
//! reports a deadlock (with the waiting cycle) instead of hanging.
//!
//! # Where things live
//!
//! Bottom up, one layer a row:
//!
//! | modules | what they hold |
//! | --- | --- |
//! | `vocab`; `sync`, `tls`, `barrier`, `stack`; `stream::names`; monitoring's leaves (`monitor::{hint, clock, period, sample_state, task_mon, task_entries}`) | the words every layer shares ([`TaskId`], [`BlockedOn`], a stream's [`Side`](stream::Side) and its re-check, the holder word); the atomics loom can swap in, the thread-local words, the asymmetric store-load barrier, the stack pool; stream names; what a stream operation and a sample consult |
//! | [`task`] | the control block, its state word, the coroutine and its boundary |
//! | `scheduler`, `registry`, [`error`], [`mapper`], `cut`, `profile`, `config`, `run::deadlock`, `monitor::{worker_log, binding}` | a worker's ready queues; a run's live tasks; errors; placement policies, the adaptive cut of the tasks added before the run and the profile mapping; the checked [`Config`]; the deadlock report (the blocked tasks, a waiting cycle, the ends no live task holds, its text); a worker's log |
//! | `context`, `worker` (`park`, `ticker`, `settle`, `inbox`, `post`, `idle_spin`), `run::shared`, `monitor::self_sample`, `overflow` | the current task and worker (thread-local accessors) and yield; the worker threads, their loop, park/wake, the settle windows and the ticker, handing a task to its worker; the state one run's threads share; a worker's samples of itself; stack-overflow reports |
//! | [`stream`](mod@stream) (`ring`, `slot`, `holder`, `ends`, `poll`, `block`), `monitor::hooks`, `task_panic` | rings, wait slots, holders, ends, poll, and blocking on them; what monitoring records, called back by the worker and the streams; naming the task in a panic's message |
//! | `spawn`, `run` (`threads`, `watch`), `builder`, `monitor::{sampler, log_dir}` | the spawn family, in a run and on [`Runtime`]; [`Runtime`] and its run, the run's threads and its view from outside; [`Builder`], its defaults and bounds; the sampler and the log directory |
//! | [`dist`] | networks across ranks, built on the rest |
//!
//! Imports go one way: a module uses modules of its own row and the rows
//! above it, never those below. Inside a row they go one way too, but for
//! one circle in the fourth: a worker runs its run's tasks and holds the
//! run's shared state (`run::shared`), which holds the workers' shared
//! halves and the ticker's (`worker::ticker`); the current worker is a
//! thread-local word typed as the worker (`context`); and a worker samples
//! itself from a signal handler that reads its shared half
//! (`monitor::self_sample`). That circle holds 5 modules (`context`,
//! `worker`, `worker::ticker`, `run::shared`, `monitor::self_sample`), as
//! `scripts/import_cycles.py runtime/src` measures it. The monitoring hooks
//! belong to it too, as callbacks: the worker calls them, and they read the
//! current task and worker; the measure does not follow the `crate::hooks`
//! alias, and with it the circle holds 6. The streams sit above it (stream
//! → block → worker → task): the worker reaches a stream back only through
//! the re-check of a side (`vocab`) and the hooks.
//!
//! The monitoring log format (records, encoder, decoder, [`MonitorFlags`])
//! is the `rill-log` crate; read logs with it or with `rill-mon`.

#![warn(missing_docs)]

mod barrier;
mod builder;
mod config;
mod context;
mod cut;
pub mod dist;
pub mod error;
mod monitor;
pub(crate) use monitor::hooks;
pub mod mapper;
mod overflow;
mod profile;
mod registry;
mod run;
mod scheduler;
mod spawn;
mod stack;
pub mod stream;
mod sync;
pub mod task;
mod task_panic;
mod thread_clock;
mod tls;
mod vocab;
mod worker;

#[cfg(all(test, loom))]
mod loom_models;

pub use builder::{Builder, DEFAULT_SPIN, MAX_SPIN, MAX_STACK_SIZE, MAX_WORKERS, STALL_REPORT};
pub use config::{Config, MonitorConfig};
pub use context::{current, forced_unwinding, worker_count, yield_now, TaskInfo};
pub use error::{BlockedTask, ConfigError, RunError, SpawnError};
pub use mapper::{ManualTable, Mapping};
pub use profile::{PlanFn, ProfilePlanner, PROFILE_MONITOR};
pub use rill_log::MonitorFlags;
pub use run::shared::UNKNOWN_PEER_GRACE;
pub use run::{RunStats, Runtime};
pub use spawn::{spawn, spawn_on, spawn_with, try_spawn, try_spawn_on};
pub use stream::{
    named_stream, poll, stream, stream_default, try_stream, CapacityError, Ends, PollSet, Reader,
    StreamClosed, TryReadError, TryWriteError, Writer, MAX_CAPACITY,
};
pub use task::{BlockedOn, TaskId};
pub use worker::WorkerStats;

/// Whether this kernel guards task stacks with guard markers
/// (`madvise(MADV_GUARD_INSTALL)`, Linux 6.13 and later), which cost no
/// kernel mappings: then every task stack has a guard page, however many
/// tasks are alive. Without them guard pages run out near 24,000 live tasks
/// at the default `vm.max_map_count`, and further spawns fail unless
/// [`Builder::unguarded_stacks`] allows stacks without one. Probed once per
/// process.
pub fn stack_guard_markers_supported() -> bool {
    stack::guard_markers_supported()
}

/// The README's examples, compiled and run as doc tests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
