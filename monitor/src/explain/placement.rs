//! The placement finding of `rill-mon bottleneck`: streams that cross
//! workers cost the run more than a mapping that keeps them on one worker.
//!
//! The window rules see waiting. Crossing workers also costs busy time: a
//! message written on one core and read on another moves its cache lines,
//! and the tasks do that work while they run, so on saturated workers no
//! wait shows it. This rule asks `rill-mon map`'s what-if model instead
//! (`plan/planner.rs`: `T(m) = max over workers of B(x) + crossing time`, with
//! the crossing cost calibrated on the run: its busy part from the busy
//! time of tasks of one group that cross in different proportions, the rest
//! from the span). It holds when, for the run's own worker count,
//!
//! 1. the model predicts the mapping `map` proposes at least [`GAIN`] times
//!    faster than the observed mapping (both under the model, so the
//!    calibration's error is shared);
//! 2. the observed mapping's cross-worker streams carry at least
//!    [`CROSS_SHARE`] of all messages; and
//! 3. the proposed mapping carries at most [`CUT`] of those crossing
//!    messages: the gain comes from keeping streams on one worker, not only
//!    from balancing busy time (which the worker rule covers).
//!
//! A run on one worker, or one whose logs name no task, has no such finding;
//! nor has a run across ranks (its model would price crossing ranks as
//! crossing workers; `rill-mon map --ranks` plans over ranks).
//! The finding names the heaviest crossing streams, folded by task group
//! and one by one; its `share` is the part of the observed mapping's
//! predicted time the proposed mapping saves. It comes first: the window
//! findings say who waited, this one what the placement costs.

use crate::explain::findings::{Placement, Raw};
use crate::explain::task_graph::Graph;
use crate::load::groups::group_of;
use crate::load::model::RunLog;
use crate::plan::planner::{plan_from, MAX_MAP_WORKERS};
use crate::replay::activity_model::Activity;

/// The least predicted speed-up (observed mapping's time over the
/// proposed one's) for a placement finding.
pub(crate) const GAIN: f64 = 1.15;

/// The least share of all messages the observed cross-worker streams carry.
pub(crate) const CROSS_SHARE: f64 = 0.25;

/// The most of the observed crossing messages the proposed mapping may
/// still carry across workers.
pub(crate) const CUT: f64 = 0.5;

/// The rule in one sentence, with its thresholds (for the texts that
/// define the findings).
pub(crate) fn rule_text() -> String {
    format!(
        "Over the whole run, placement (a stream finding, listed first): the mapping rill-mon \
         map proposes for the run's worker count is predicted at least {GAIN:.2}x faster than \
         the observed one, the observed cross-worker streams carry at least {:.0}% of the \
         messages, and the proposal keeps at least {:.0}% of those on one worker; its share is \
         the part of the predicted time the proposal saves.",
        CROSS_SHARE * 100.0,
        (1.0 - CUT) * 100.0
    )
}

/// How many streams and group pairs the finding names.
const NAMED: usize = 3;

/// The placement finding, if its rule holds (see the module
/// documentation), with its share.
pub(crate) fn placement(run: &RunLog, act: &Activity, g: &Graph) -> Option<(Raw, f64)> {
    let workers = run.worker_count as usize;
    // Across ranks the model of one process's workers prices a crossing
    // of ranks as one of workers, and its mapping is not one of ranks:
    // `rill-mon map --ranks` plans those.
    if run.ranks.is_some() || !(2..=MAX_MAP_WORKERS).contains(&workers) || g.crossing.is_empty() {
        return None;
    }
    let plan = plan_from(run, workers, act).ok()?;
    let e = &plan.estimate;
    if !e.calibrated || e.proposed_ns == 0 || e.messages == 0 {
        return None;
    }
    let gain = e.observed_mapping_ns as f64 / e.proposed_ns as f64;
    let share = e.observed_cut.messages as f64 / e.messages as f64;
    let cut = e.proposed_cut.messages as f64 / e.observed_cut.messages.max(1) as f64;
    if gain < GAIN || share < CROSS_SHARE || cut > CUT {
        return None;
    }
    let messages = |s: u64| run.streams.get(&s).map_or(0, |i| i.written.max(i.read));
    let mut heaviest: Vec<(u64, u64, u64, u64)> = g
        .crossing
        .iter()
        .map(|&(s, w, r)| (s, g.tasks[w], g.tasks[r], messages(s)))
        .collect();
    heaviest.sort_by_key(|&(s, _, _, m)| (std::cmp::Reverse(m), s));
    let mut pairs: Vec<(String, String, u64, u64)> = Vec::new();
    for &(_, w, r, m) in &heaviest {
        let (w, r) = (run.task_label(w), run.task_label(r));
        let (w, r) = (group_of(&w).into_owned(), group_of(&r).into_owned());
        match pairs.iter_mut().find(|p| p.0 == w && p.1 == r) {
            Some(p) => {
                p.2 += 1;
                p.3 = p.3.saturating_add(m);
            }
            None => pairs.push((w, r, 1, m)),
        }
    }
    pairs.sort_by(|a, b| b.3.cmp(&a.3).then(b.2.cmp(&a.2)));
    pairs.truncate(NAMED);
    let crossing = heaviest.len() as u64;
    heaviest.truncate(NAMED);
    let streams = g.streams as u64;
    let raw = Raw::Placement(Placement {
        workers,
        observed_ns: e.observed_mapping_ns,
        proposed_ns: e.proposed_ns,
        span_ns: e.observed_span_ns,
        busy_cost_ns: e.busy_crossing_cost_ns,
        span_cost_ns: e.crossing_cost_ns,
        streams,
        crossing,
        messages: e.messages,
        crossing_messages: e.observed_cut.messages,
        proposed_crossing: e.proposed_cut.streams,
        proposed_messages: e.proposed_cut.messages,
        pairs,
        heaviest,
    });
    Some((raw, 1.0 - 1.0 / gain))
}
