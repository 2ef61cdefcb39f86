//! The trace's tracks besides the workers': the task groups' parents and
//! counters, the detail marks, and the counters' values.

use std::io;

use super::pass::Pass;
use crate::trace::perfetto::writer::{Kind, Track};

/// Groups with counters of their own, heaviest first (each holds three
/// sums per bucket: memory).
pub(super) const MAX_GROUP_COUNTERS: usize = 32;

/// Run-wide counters: sums per bucket.
pub(super) const BUSY: usize = 0;
pub(super) const READY: usize = 1;
pub(super) const BLOCKED_READ: usize = 2;
pub(super) const BLOCKED_WRITE: usize = 3;
pub(super) const CROSS: usize = 4;
pub(super) const RUN_COUNTERS: [(&str, &str, &str); 5] = [
    (
        "busy workers",
        "workers",
        "workers running a task (= running tasks), averaged over the bucket",
    ),
    (
        "ready tasks",
        "tasks",
        "tasks that could run but waited for their worker (after a yield or a wake-up)",
    ),
    (
        "tasks blocked reading",
        "tasks",
        "tasks blocked on an empty stream or a poll, up to their wake-up",
    ),
    (
        "tasks blocked writing",
        "tasks",
        "tasks blocked on a full stream, up to their wake-up",
    ),
    (
        "cross-worker wake-ups",
        "per ms",
        "wake-ups whose woken task ran on another worker than the waker",
    ),
];

impl Pass<'_, '_> {
    pub(super) fn declare_group(&mut self, g: usize, rank: i32) -> io::Result<()> {
        let root = self.root;
        let name = self.groups[g].name.clone();
        let tasks = self.groups[g].tasks;
        let with_counters = self.counted_groups < MAX_GROUP_COUNTERS;
        let desc = if with_counters {
            format!("{tasks} task(s); counters averaged over each bucket")
        } else {
            format!("{tasks} task(s); no counters (only the {MAX_GROUP_COUNTERS} heaviest groups have them)")
        };
        let parent = self.w.track(
            &format!("group {name}"),
            Some(&desc),
            Some(root),
            Kind::Slices,
            rank,
            true,
        )?;
        self.groups[g].parent = Some(parent);
        if !with_counters {
            return Ok(());
        }
        self.counted_groups += 1;
        let share = format!("group {name}");
        for (i, what) in ["running", "ready", "blocked"].iter().enumerate() {
            let t = self.w.track(
                &format!("{name}: {what} tasks"),
                None,
                Some(parent),
                Kind::Counter {
                    unit: "tasks",
                    share: Some(&share),
                },
                i as i32,
                false,
            )?;
            self.groups[g].counters[i] = Some(t);
        }
        Ok(())
    }

    /// Slices on the detail track over each run of merged buckets.
    pub(super) fn detail_marks(&mut self, track: Track) -> io::Result<()> {
        let n = self.grid.n;
        let mut b = 0;
        while b < n {
            if self.plan.detailed[b] {
                b += 1;
                continue;
            }
            let first = b;
            let mut periods = 0u64;
            while b < n && !self.plan.detailed[b] {
                periods += u64::from(self.plan.counts[b]);
                b += 1;
            }
            let name = self.w.name(&format!("merged: {periods} periods"));
            let (x, y) = (self.ns(self.grid.start(first)), self.ns(self.grid.start(b)));
            self.w.slice(track, x, y, name, &[], &[], &[])?;
        }
        Ok(())
    }

    /// Writes the bucket averages of every counter, skipping repeats.
    pub(super) fn write_counters(&mut self, run_counters: &[Track]) -> io::Result<()> {
        let sums = std::mem::take(&mut self.sums);
        for (i, v) in sums.iter().enumerate() {
            let per_ms = i == CROSS;
            self.counter_series(run_counters[i], v, per_ms)?;
        }
        for g in 0..self.groups.len() {
            let sums = std::mem::take(&mut self.groups[g].sums);
            for (i, v) in sums.iter().enumerate() {
                if let Some(t) = self.groups[g].counters[i] {
                    self.counter_series(t, v, false)?;
                }
            }
        }
        Ok(())
    }

    /// One counter's values: per bucket, the sum over the bucket's length
    /// (or, `per_ms`, the count per millisecond).
    pub(super) fn counter_series(
        &mut self,
        track: Track,
        v: &[f64],
        per_ms: bool,
    ) -> io::Result<()> {
        let grid = self.grid;
        let mut last = f64::NAN;
        for b in 0..grid.n {
            let len = (grid.start(b + 1) - grid.start(b)).max(1) as f64;
            let x = v.get(b).copied().unwrap_or(0.0);
            let val = if per_ms {
                // Over the bucket's length as written, so that the
                // counter's integral is the count.
                let ns = self.ns(grid.start(b + 1)) - self.ns(grid.start(b));
                x / (ns.max(1) as f64 / 1e6)
            } else {
                x / len
            };
            if val != last {
                let ts = self.ns(grid.start(b));
                self.w.counter(track, ts, val)?;
                last = val;
            }
        }
        let end = self.ns(grid.start(grid.n));
        if last != 0.0 {
            self.w.counter(track, end, 0.0)?;
        }
        Ok(())
    }
}
