//! Performance monitoring: the clock, the monitoring flags, and the binary log
//! format each worker writes (one memory-mapped file per worker).
//!
//! * [`clock`]: cheap raw-tick time stamps and their calibration.
//! * [`flags`]: which event classes are recorded.
//! * [`format`](mod@format): the log header and records, the allocation-free [`format::Encoder`]
//!   and the robust [`format::Decoder`].
//! * [`writer`]: [`writer::LogWriter`], a memory-mapped per-worker log file.
//! * `hooks` and `worker_log`: what the runtime calls, and the per-worker
//!   recording state behind it.

pub mod clock;
pub mod flags;
pub mod format;
pub(crate) mod hooks;
pub(crate) mod period;
pub mod varint;
pub(crate) mod worker_log;
pub mod writer;
