//! rill: a user-mode lightweight-task stream runtime, in the style of LPEL.
//!
//! Tasks are stackful coroutines mapped onto worker threads (one per core,
//! pinned). They talk over bounded single-writer single-reader [streams](mod@stream),
//! and block only on them: reading an empty stream, writing a full one, or
//! polling several. A runtime ends its run when every task has ended, and
//! reports a deadlock (with the waiting cycle) instead of hanging.
//!
//! Where things live: [`task`] (control block and state word), `stack` (the
//! stack pool), [`stream`](mod@stream) (rings, ends, poll), `worker` (threads, park/wake),
//! `scheduler` (ready queues), [`mapper`] (placement policies), `runtime`
//! (builder and run), `context` (the current task: spawn, yield), `barrier`
//! (the asymmetric store-load barrier), `overflow` (stack-overflow reports),
//! `monitor` (what monitoring records, through `hooks`), `tls` (the
//! thread-local words that code inlined into a task reads).
//!
//! The monitoring log format (records, encoder, decoder, [`MonitorFlags`])
//! is the `rill-log` crate; read logs with it or with `rill-mon`.

#![warn(missing_docs)]

mod barrier;
mod context;
pub mod dist;
pub mod error;
mod monitor;
pub(crate) use monitor::hooks;
pub mod mapper;
mod overflow;
mod profile;
mod registry;
mod run_threads;
mod runtime;
mod scheduler;
mod stack;
pub mod stream;
mod sync;
pub mod task;
mod task_panic;
mod tls;
mod worker;

#[cfg(all(test, loom))]
mod loom_models;

pub use context::{
    current, forced_unwinding, spawn, spawn_on, spawn_with, try_spawn, try_spawn_on, worker_count,
    yield_now, TaskInfo,
};
pub use error::{BlockedTask, ConfigError, RunError, SpawnError};
pub use mapper::{ManualTable, Mapping};
pub use profile::{PlanFn, ProfilePlanner, PROFILE_MONITOR};
pub use rill_log::MonitorFlags;
pub use runtime::{
    Builder, Config, MonitorConfig, RunStats, Runtime, DEFAULT_SPIN, MAX_SPIN, MAX_STACK_SIZE,
    MAX_WORKERS, STALL_REPORT, UNKNOWN_PEER_GRACE,
};
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
