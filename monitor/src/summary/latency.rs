//! Per-input latency and jitter as the summary reports them
//! ([`LatencySummary`]), from what the latency replay left on the run.

use serde::Serialize;

use crate::load::model::RunLog;
use crate::load::raw_latency::{Acc, RawLatency};

/// Latency statistics of a set of outputs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyStats {
    /// Number of outputs.
    pub outputs: u64,
    /// Mean latency.
    pub mean_ns: f64,
    /// Standard deviation of the latency.
    pub stddev_ns: f64,
    /// Smallest latency.
    pub min_ns: f64,
    /// Largest latency.
    pub max_ns: f64,
    /// Jitter: mean absolute difference of consecutive outputs' latencies.
    pub jitter_ns: f64,
}

/// Per-input latency (the paper's Equations 1 to 3, see [`summarize`](crate::summarize)).
#[derive(Clone, Debug, Serialize)]
pub struct LatencySummary {
    /// `"message times"` (MESSAGE_TIME recorded) or `"apportioned"` (each
    /// period's duration split evenly over its messages).
    pub timing: String,
    /// Over all outputs. With several sinks, `jitter_ns` is the mean of the
    /// sinks' jitters weighted by their outputs (consecutive outputs of one sink).
    pub all: LatencyStats,
    /// Per sink task.
    pub sinks: Vec<SinkLatency>,
    /// Reads whose message was never logged as written (damaged or missing logs).
    pub unmatched_reads: u64,
    /// Messages written but never read in the logs (including any the
    /// replay gave up to bound its memory: see `skipped_periods`' note on
    /// damaged logs).
    pub unread_messages: u64,
    /// Periods left out because they claim implausibly many messages (over
    /// 16 Mi in one period, or more in all than the logs' size makes
    /// plausible: damaged or forged records); the latencies are unreliable
    /// when nonzero.
    pub skipped_periods: u64,
}

/// Latency of one sink task's outputs.
#[derive(Clone, Debug, Serialize)]
pub struct SinkLatency {
    /// Task id.
    pub task: u64,
    /// Task name.
    pub name: String,
    /// Its statistics.
    #[serde(flatten)]
    pub stats: LatencyStats,
}

impl Acc {
    pub(crate) fn stats(&self, ns_per_tick: f64, jitter_pairs: u64) -> LatencyStats {
        if self.n == 0 {
            return LatencyStats::default();
        }
        LatencyStats {
            outputs: self.n,
            mean_ns: self.mean * ns_per_tick,
            stddev_ns: (self.m2 / self.n as f64).sqrt() * ns_per_tick,
            min_ns: self.min as f64 * ns_per_tick,
            max_ns: self.max as f64 * ns_per_tick,
            jitter_ns: if jitter_pairs > 0 {
                self.jitter_sum / jitter_pairs as f64 * ns_per_tick
            } else {
                0.0
            },
        }
    }
}

impl RawLatency {
    /// The summary, with the run's sink tasks as outputs.
    pub(crate) fn finish(&self, run: &RunLog) -> LatencySummary {
        let npt = run.calibration.ns_per_tick();
        let mut all = Acc::default();
        let mut pairs = 0;
        let mut sinks: Vec<SinkLatency> = Vec::new();
        for (id, acc) in &self.readers {
            if !run.tasks.get(id).is_some_and(|t| t.is_sink()) || acc.n == 0 {
                continue;
            }
            all.merge(acc);
            pairs += acc.n - 1;
            sinks.push(SinkLatency {
                task: *id,
                name: run.task_label(*id),
                stats: acc.stats(npt, acc.n - 1),
            });
        }
        sinks.sort_by_key(|s| s.task);
        let timing = if self.message_periods > 0 && self.timed_periods == self.message_periods {
            "message times"
        } else if self.timed_periods > 0 {
            "message times where recorded, apportioned elsewhere"
        } else {
            "apportioned"
        };
        LatencySummary {
            timing: timing.to_owned(),
            all: all.stats(npt, pairs),
            sinks,
            unmatched_reads: self.unmatched,
            unread_messages: self.unread,
            skipped_periods: self.skipped_periods,
        }
    }
}
