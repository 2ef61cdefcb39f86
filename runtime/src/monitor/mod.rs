//! Performance monitoring: the clock, the monitoring flags, and the binary log
//! format each worker writes (one memory-mapped file per worker).
//!
//! * [`clock`]: cheap raw-tick time stamps and their calibration.
//! * [`flags`]: which event classes are recorded.
//! * [`format`](mod@format): the log header and records, the allocation-free [`format::Encoder`],
//!   the borrowing, allocation-free [`format::Scanner`] and the robust
//!   [`format::Decoder`] of owned records built on it.
//! * [`writer`]: [`writer::LogWriter`], a memory-mapped per-worker log file.
//! * `hooks`, `period` and `worker_log`: what the runtime calls, the
//!   thread-local state of the period being recorded (what a message
//!   touches), and the per-worker log state behind it. How a period is
//!   recorded, and why nothing dangles, is in `README.md` beside this file.

pub(crate) mod binding;
pub mod clock;
pub mod flags;
pub mod format;
pub(crate) mod hint;
pub(crate) mod hooks;
pub(crate) mod period;
pub(crate) mod task_entries;
pub mod varint;
pub(crate) mod worker_log;
pub mod writer;
