//! [`load_run`]: the load (`load::open`) with the latency replay beside
//! its scans.

use std::path::Path;

use rill_log::MonitorFlags;

use crate::load::model::RunLog;
use crate::load::open::{load_with, Beside, LoadOptions};
use crate::load::raw_latency::RawLatency;
use crate::replay::latency::{message_budget, replay};
use crate::replay::latency_feed::{feed, FeedRx, FeedTx};

/// Loads a run: finds the `worker-*.rlog` files in `dir`, checks that their
/// headers agree (worker count, calibration), and scans every record once to
/// total busy and waiting time, task and stream statistics.
///
/// Errors (one line, naming the file): a missing directory, no logs, a file
/// that is not a rill log, an unsupported format version, a header whose
/// clock rate is not a finite number of at least 1 tick per second, headers
/// that disagree. Damaged records are not errors: the records before them
/// are used and the damage is listed in [`RunLog::warnings`].
///
/// Whatever the files hold, the work and memory stay bounded by their size
/// (and the number of files), not by the numbers in them: a forged worker
/// count, duration or message count cannot make loading (or the analyses)
/// allocate or loop in proportion to it, and totals saturate.
pub fn load_run(dir: &Path) -> anyhow::Result<RunLog> {
    load_run_with(dir, &LoadOptions::default())
}

/// [`load_run`] with options.
///
/// A directory holding no logs of its own but `rank-R/` directories that
/// do is a run across ranks: their logs are merged into one run (see
/// [`Ranks`](crate::Ranks) and `load/ranks/`).
pub fn load_run_with(dir: &Path, opts: &LoadOptions) -> anyhow::Result<RunLog> {
    let (mut run, latency) = load_with(dir, opts, opts.latency.then_some(LatencyReplay))?;
    run.latency = latency;
    Ok(run)
}

/// The latency replay, fed by the load's scans.
struct LatencyReplay;

impl Beside for LatencyReplay {
    type Feed = FeedTx;
    type Rx = FeedRx;
    type Out = RawLatency;

    fn needs(&self) -> MonitorFlags {
        MonitorFlags::SCHEDULER | MonitorFlags::STREAM | MonitorFlags::MESSAGE
    }

    fn feed(&self) -> (FeedTx, FeedRx) {
        feed()
    }

    fn run(&self, feeds: Vec<FeedRx>, bytes: u64) -> RawLatency {
        replay(feeds, message_budget(bytes))
    }
}
