//! What crossing workers and crossing ranks cost, as the run measured it:
//! for `rill-mon map --ranks` (`plan/rankmap.rs`).
//!
//! A wait crosses where its stream does: the waiting end and the end it
//! waits for ran on one worker, on two workers of one rank, or on two
//! ranks. Its *delay* is the time from the peer's operation that let it go
//! on to its own next dispatch: for a reader blocked on an empty stream,
//! from the first write to the stream after it blocked to its dispatch; for
//! a writer blocked on a full one, from the first read after it blocked.
//! That is the time a wake-up costs at that level: within a worker, the
//! writer's switch to the reader; across workers, a wake-up of the other
//! worker (a parked one takes longer); across ranks, the transport's time
//! as well.
//!
//! One pass over all periods merged in time order (`replay/merge.rs`). An
//! operation's time is the end of its period (the periods hold no time per
//! operation unless MESSAGE_TIME was on, and the merged pass does not read
//! those): the latest it can have happened, so a delay is a lower bound,
//! short by the part of the writing period after its write. Across ranks
//! the clocks agree within the residual the ranks state: a peer's operation
//! up to that much after the dispatch still counts, with a delay of 0.
//! Each stream keeps its last [`RECENT`] operation times per end, so
//! memory stays bounded.

use std::collections::VecDeque;

use rill_log::EndState;
use serde::Serialize;

use crate::load::ids::IdMap;

use crate::load::model::RunLog;
use crate::replay::activity_model::Activity;
use crate::replay::merge::{for_each_event, Event};

/// Operation times kept per stream end.
const RECENT: usize = 64;

/// Where a stream's two ends ran in the observed run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Worker,
    Workers,
    Ranks,
}

/// The delays measured at one level.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Delays {
    /// Waits whose delay was measured.
    pub waits: u64,
    /// Their median delay, nanoseconds.
    pub median_ns: Option<u64>,
    /// Their mean delay, nanoseconds.
    pub mean_ns: Option<f64>,
}

impl Delays {
    fn of(mut v: Vec<u64>) -> Self {
        if v.is_empty() {
            return Delays::default();
        }
        v.sort_unstable();
        let sum: u128 = v.iter().map(|&d| u128::from(d)).sum();
        Delays {
            waits: v.len() as u64,
            median_ns: Some(v[v.len() / 2]),
            mean_ns: Some(sum as f64 / v.len() as f64),
        }
    }
}

/// The delays of the waits at each level.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CrossingDelays {
    /// Both ends on one worker.
    pub same_worker: Delays,
    /// On two workers of one rank (of the one process).
    pub workers: Delays,
    /// On two ranks.
    pub ranks: Delays,
}

/// The level of each stream whose two ends' workers are known.
fn levels(run: &RunLog, act: &Activity) -> IdMap<u64, Level> {
    let mut out = IdMap::default();
    let ids = act
        .streams
        .keys()
        .chain(run.streams.keys().filter(|s| !act.streams.contains_key(s)));
    for &s in ids {
        let (Some(w), Some(r)) = act.ends(run, s) else {
            continue;
        };
        let (Some(a), Some(b)) = (act.worker_of(run, w), act.worker_of(run, r)) else {
            continue;
        };
        let rank = |x: u32| run.ranks.as_ref().and_then(|r| r.worker(x)).map(|(r, _)| r);
        let level = if a == b {
            Level::Worker
        } else if rank(a) != rank(b) {
            Level::Ranks
        } else {
            Level::Workers
        };
        out.insert(s, level);
    }
    out
}

/// A stream's recent operation times: writes and reads.
#[derive(Default)]
struct Recent {
    writes: VecDeque<u64>,
    reads: VecDeque<u64>,
}

fn push(q: &mut VecDeque<u64>, t: u64) {
    if q.len() == RECENT {
        q.pop_front();
    }
    q.push_back(t);
}

/// Measures the delays of the run's waits (see the module documentation).
pub(crate) fn measure(run: &RunLog, act: &Activity) -> CrossingDelays {
    let levels = levels(run, act);
    let slack = run
        .ranks
        .as_ref()
        .and_then(|r| r.clock_residual_ns)
        .map_or(0, |ns| run.calibration.ns_to_ticks(ns));
    // Per task blocked on a stream: (stream, blocked writing, since).
    let mut blocked: IdMap<u64, (u64, bool, u64)> = IdMap::default();
    let mut recent: IdMap<u64, Recent> = IdMap::default();
    let mut samples: [Vec<u64>; 3] = Default::default();
    for_each_event(run, false, |_, e| {
        let Event::Period(p) = e else { return };
        let (start, end, task) = (p.p.start, p.p.end.max(p.p.start), p.p.task);
        if let Some((s, writing, since)) = blocked.remove(&task) {
            let level = levels.get(&s).copied();
            let ops = recent
                .get(&s)
                .map(|r| if writing { &r.reads } else { &r.writes });
            let first = ops.and_then(|q| {
                q.iter()
                    .copied()
                    .filter(|&t| t >= since && t <= start.saturating_add(slack))
                    .min()
            });
            if let (Some(level), Some(t)) = (level, first) {
                let k = match level {
                    Level::Worker => 0,
                    Level::Workers => 1,
                    Level::Ranks => 2,
                };
                samples[k].push(run.ns(start.saturating_sub(t)));
            }
        }
        for e in p.io {
            if e.reads | e.writes == 0 {
                continue;
            }
            let r = recent.entry(e.stream).or_default();
            if e.writes > 0 {
                push(&mut r.writes, end);
            }
            if e.reads > 0 {
                push(&mut r.reads, end);
            }
        }
        match p.p.end_state {
            EndState::BlockedInput { stream } => {
                blocked.insert(task, (stream, false, end));
            }
            EndState::BlockedOutput { stream } => {
                blocked.insert(task, (stream, true, end));
            }
            _ => {}
        }
    });
    let [same, workers, ranks] = samples;
    CrossingDelays {
        same_worker: Delays::of(same),
        workers: Delays::of(workers),
        ranks: Delays::of(ranks),
    }
}
