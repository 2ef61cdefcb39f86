//! Performance monitoring: what the runtime records, and how. The log format
//! itself (records, encoder, decoder, the memory-mapped [`LogWriter`], the
//! [`MonitorFlags`] and the clock [`Calibration`]) is the `rill-log` crate.
//!
//! * `clock`: cheap raw-tick time stamps, and measuring their rate.
//! * `hint`, `binding`, `period`, `task_entries`, `task_mon`: the state a
//!   stream operation consults and a period is built from: the per-side
//!   hint, count mode's bindings of ends to tasks, the thread-local period
//!   being recorded (what a message touches) and the stamps, ops mode's
//!   per-task entries, and a task's part of all this.
//! * `worker_log`: the per-worker log state behind the period, and the
//!   records the worker writes itself (periods, waits, placement).
//! * `log_dir`: the run's log directory: taking it for the run (one live
//!   run per directory), creating the workers' logs, and the warning when
//!   a log stops early (a full disk).
//! * `sample_state`: the word that says what a worker is doing (sample mode).
//! * `self_sample`: the workers' signal-driven samples of their own word.
//! * `sampler`: sample mode's sampler (run on the thread that called `run`) and its log.
//! * `hooks`: what the rest of the runtime calls. Without the `monitor`
//!   cargo feature `hooks_off.rs` stands in for `hooks.rs`, with the same
//!   functions empty (and constant `false` checks), so no call site carries
//!   a `cfg`. The worker still writes the records of its own then.
//!
//! How a period is recorded, and why nothing dangles, is in `README.md`
//! beside this file.
//!
//! Imports go one way inside this module, in the order of the list above.
//! With the rest of the runtime: the stream ends, tasks and workers hold
//! this module's state and call its hooks; the hooks and bindings name the
//! types they share from `vocab` (the stream side and its re-check, a
//! task's blocking state) and read the current task and worker
//! (`context`), so the hooks are callbacks inside the runtime's one circle
//! (`lib.rs`), and so is `self_sample`, whose signal handler reads the
//! worker's shared half.
//!
//! [`LogWriter`]: rill_log::LogWriter
//! [`MonitorFlags`]: rill_log::MonitorFlags
//! [`Calibration`]: rill_log::Calibration

// What only the hooks use (most of `period`, `binding`, parts of
// `worker_log`) is dead code with them compiled out.
#![cfg_attr(not(feature = "monitor"), allow(dead_code))]

pub(crate) mod binding;
pub(crate) mod clock;
pub(crate) mod hint;
#[cfg_attr(not(feature = "monitor"), path = "hooks_off.rs")]
pub(crate) mod hooks;
pub(crate) mod log_dir;
pub(crate) mod period;
pub(crate) mod sample_state;
pub(crate) mod sampler;
pub(crate) mod self_sample;
pub(crate) mod task_entries;
pub(crate) mod task_mon;
pub(crate) mod worker_log;
