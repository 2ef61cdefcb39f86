//! Performance monitoring: the clock, the monitoring flags, and the binary log
//! format each worker writes (one memory-mapped file per worker).
//!
//! * [`clock`]: cheap raw-tick time stamps and their calibration.
//! * [`flags`]: which event classes are recorded.
//! * [`format`](mod@format): the log header and records, the allocation-free [`format::Encoder`]
//!   and the robust [`format::Decoder`].
//! * [`writer`]: [`writer::LogWriter`], a memory-mapped per-worker log file.

pub mod clock;
pub mod flags;
pub mod format;
pub mod varint;
pub mod writer;
