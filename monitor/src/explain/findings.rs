//! What `rill-mon bottleneck` finds: its options ([`BottleneckOptions`]),
//! its report ([`Bottlenecks`], [`Finding`]) and a finding's numbers
//! before they are put in words ([`Raw`], [`Placement`]).

use serde::Serialize;

/// The stream rule's version for cross-rank streams, in one sentence (for
/// the texts that define the findings of a run across ranks).
pub(crate) const CROSS_RANK_RULE: &str = "Across ranks, a cross-rank stream (⇄) is tested as a \
    stream between workers, with its ends' blocked time counted with their woken time (the \
    transport wakes the far end, which no logged period does).";

/// Options of [`bottleneck`](crate::bottleneck()).
#[derive(Clone, Copy, Debug)]
pub struct BottleneckOptions {
    /// Number of equal time windows (at least 1).
    pub windows: usize,
    /// α: the busy share of a window that saturates a worker.
    pub alpha: f64,
    /// β: the share of a window that others must wait on a task for it to
    /// be a bottleneck, and the idle share of an idle worker.
    pub beta: f64,
    /// γ: the share of a window that wake-ups across workers on one stream
    /// must cost for it to be a bottleneck.
    pub gamma: f64,
}

impl Default for BottleneckOptions {
    fn default() -> Self {
        BottleneckOptions {
            windows: 20,
            alpha: 0.9,
            beta: 0.5,
            gamma: 0.1,
        }
    }
}

/// What `rill-mon bottleneck` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Bottlenecks {
    /// The log directory.
    pub dir: String,
    /// Whether the run was one across ranks (its texts then define the
    /// cross-rank stream rule too).
    #[serde(skip)]
    pub(crate) across_ranks: bool,
    /// Number of windows.
    pub windows: usize,
    /// Length of a window.
    pub window_ns: u64,
    /// α.
    pub alpha: f64,
    /// β.
    pub beta: f64,
    /// γ.
    pub gamma: f64,
    /// All waiting in the run (the base of the shares).
    pub waiting_ns: u64,
    /// Findings, strongest (largest share) first.
    pub bottlenecks: Vec<Finding>,
    /// A short paragraph: what holds the run back.
    pub verdict: String,
    /// Analyses left out because the run did not record what they need.
    pub notes: Vec<String>,
    /// Problems with the logs.
    pub warnings: Vec<String>,
}

/// One thing that held the run back.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// `task`, `stream` or `worker`.
    pub kind: String,
    /// The task's name, `writer -> reader` for a stream (`writer -> reader
    /// ⇄ r0→r1` for a cross-rank stream), `worker N`.
    pub name: String,
    /// The waiting it accounts for, over all waiting in the run (for a
    /// placement finding, see `predicted_speedup`).
    pub share: f64,
    /// The numbers behind it.
    pub evidence: String,
    /// A placement finding only (`explain/placement.rs`): the speed-up the model
    /// predicts for the mapping `rill-mon map` proposes; its `share` is
    /// then the part of the observed mapping's predicted time it saves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_speedup: Option<f64>,
    /// A stream finding on a cross-rank stream: its halves' ranks and ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_rank: Option<crate::load::ranks::model::CrossStream>,
    /// The verdict's sentence about it.
    #[serde(skip)]
    pub(crate) sentence: String,
}

/// A finding's numbers, before they are put in words (`explain/verdict.rs`).
/// Shares are means over the windows in which it held.
pub(crate) enum Raw {
    Task {
        task: u64,
        worker: Option<u32>,
        windows: usize,
        busy: f64,
        worker_busy: f64,
        full: f64,
        empty: f64,
        behind: f64,
        /// The input its writer waited on most, and the output its reader
        /// waited on most.
        input: Option<u64>,
        output: Option<u64>,
    },
    Stream {
        stream: u64,
        writer: u64,
        reader: u64,
        workers: (u32, u32),
        windows: usize,
        latency: f64,
    },
    Worker {
        worker: u32,
        windows: usize,
        busy: f64,
        idle: f64,
        idle_worker: u32,
        /// Its busiest tasks in those windows, with their busy shares.
        tops: Vec<(u64, f64)>,
    },
    /// Streams across workers cost more than a mapping that keeps them on
    /// one (`explain/placement.rs`).
    Placement(Placement),
}

/// The model's figures behind a placement finding.
pub(crate) struct Placement {
    /// Workers (the run's, and the proposal's).
    pub workers: usize,
    /// The model's time under the observed and under the proposed mapping.
    pub observed_ns: u64,
    pub proposed_ns: u64,
    /// The observed span.
    pub span_ns: u64,
    /// Crossing cost per message in busy time, and per message or wait in
    /// the span.
    pub busy_cost_ns: f64,
    pub span_cost_ns: f64,
    /// Streams with known ends, and those across workers (observed).
    pub streams: u64,
    pub crossing: u64,
    /// All messages, and those on crossing streams (observed).
    pub messages: u64,
    pub crossing_messages: u64,
    /// The proposed mapping's crossing streams and their messages.
    pub proposed_crossing: u64,
    pub proposed_messages: u64,
    /// The heaviest crossing group pairs: writer group, reader group,
    /// streams, messages.
    pub pairs: Vec<(String, String, u64, u64)>,
    /// The heaviest crossing streams: stream, writer, reader, messages.
    pub heaviest: Vec<(u64, u64, u64, u64)>,
}
