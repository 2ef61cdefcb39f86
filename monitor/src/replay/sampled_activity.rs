//! A sample-mode run's activity, from its sampler's windows.

use crate::load::model::RunLog;
use crate::load::samples::{charge, Sampled};
use crate::replay::activity_model::Activity;
use crate::replay::grid::Grid;

/// A sample-mode run's activity (`replay/activity.rs`) on `grid`: each window's
/// estimated busy time per task and worker spread over the grid's windows in
/// proportion to their overlap; per stream the exact wait counts (no times:
/// sample mode measures no wait).
pub(crate) fn activity(run: &RunLog, sm: &Sampled, grid: Grid) -> Activity {
    let mut act = Activity::empty(grid.clone());
    act.sampled = true;
    for w in &run.workers {
        act.workers.entry(w.worker).or_default();
    }
    for w in &sm.windows {
        let running = w.running();
        if w.total == 0 || running == 0 || w.dur == 0 {
            continue;
        }
        let per = w.dur as f64 / f64::from(w.total);
        let charge = charge(per, running, w.sched);
        let (a, b) = (w.t, w.t.saturating_add(w.dur));
        // The grid windows the sample window overlaps, and how much.
        let mut parts: Vec<(usize, f64)> = Vec::new();
        grid.split(a, b, |g, t| parts.push((g, t as f64 / w.dur as f64)));
        let strip = act.workers.entry(w.worker).or_default();
        for &(g, f) in &parts {
            strip.add(g, (running as f64 * charge * f) as u64);
        }
        for &(task, k) in &w.tasks {
            let busy = f64::from(k) * charge;
            let t = act.tasks.entry(task).or_default();
            for &(g, f) in &parts {
                t.busy.add(g, (busy * f) as u64);
            }
            t.add_busy(w.worker, busy as u64);
        }
    }
    for t in act.tasks.values_mut() {
        t.settle_worker();
    }
    for s in run.streams.values() {
        let a = act.streams.entry(s.id).or_default();
        a.reader_waits = s.reader_blocked;
        a.writer_waits = s.writer_blocked;
        a.messages = s.written.max(s.read);
        a.reader = s.reader;
        a.writer = s.writer;
    }
    act
}
