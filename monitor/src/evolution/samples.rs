//! The evolution of a sample-mode run: the sampler's windows spread over
//! the buckets, and the tasks' lifetimes from the worker logs' exact
//! records.

use super::{Groups, Sums};
use crate::load::ids::IdMap;
use crate::load::model::RunLog;
use crate::load::samples::Sampled;

/// Task states in [`Sums::task`] (the third, not running, is derived).
const RUNNING: usize = 0;
const SPINNING: usize = 1;

/// Fills `sums` from `sm`'s windows; false when no task's creation was
/// logged (no live tasks to share over).
pub(super) fn samples(run: &RunLog, sm: &Sampled, groups: &Groups, sums: &mut Sums) -> bool {
    let grid = sums.grid.clone();
    let log_of: IdMap<u32, usize> = run
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| (w.worker, i))
        .collect();
    let mut slots: IdMap<u64, usize> = IdMap::default();
    for w in &sm.windows {
        let Some(&li) = log_of.get(&w.worker) else {
            continue;
        };
        if w.total == 0 || w.dur == 0 {
            continue;
        }
        let (a, b) = (w.t, w.t.saturating_add(w.dur));
        let per = w.dur as f64 / f64::from(w.total);
        let running = w.running() as f64;
        let states = &mut sums.worker[li];
        for (k, n) in [
            running,
            f64::from(w.spin),
            f64::from(w.sched),
            f64::from(w.idle),
            f64::from(w.parked),
        ]
        .into_iter()
        .enumerate()
        {
            Sums::add_spread(&grid, &mut states[k], a, b, n * per);
        }
        Sums::add_spread(&grid, &mut sums.samples[li], a, b, f64::from(w.total));
        Sums::add_spread(&grid, &mut sums.task[RUNNING], a, b, running * per);
        Sums::add_spread(
            &grid,
            &mut sums.task[SPINNING],
            a,
            b,
            f64::from(w.spin) * per,
        );
        for &(task, k) in &w.tasks {
            let slot = *slots.entry(task).or_insert_with(|| groups.slot(run, task));
            Sums::add_spread(&grid, &mut sums.group[slot], a, b, f64::from(k) * per);
        }
    }
    // Live tasks: from creation to end (or the window's end).
    let (created, ended) = super::replay::lifetimes(run, &grid);
    if created.is_empty() {
        return false;
    }
    let end = run.t1.max(grid.t0.saturating_add(grid.span));
    let mut live = vec![0.0; grid.n];
    for (&task, &t) in &created {
        let until = ended.get(&task).copied().unwrap_or(end);
        Sums::add(&grid, &mut live, t, until);
    }
    sums.live = Some(live);
    true
}
