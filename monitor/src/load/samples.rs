//! What a sample-mode run's sampler recorded ([`Sampled`], per worker
//! [`WorkerSamples`]) and the error bound of its estimates: data, filled by
//! `load::sampled`.

use rill_log::SampleWindow;

/// The sampler log's file name in a log directory.
pub const SAMPLER_FILE: &str = "sampler.rlog";

/// Sample mode's estimates are kept for workers with ids below this.
pub(crate) const MAX_WORKER_ID: usize = 1 << 16;

/// What a sample-mode run's sampler recorded, and its totals per worker.
#[derive(Debug, Clone, Default)]
pub struct Sampled {
    /// The sampling rate the run asked for (`sample:HZ`), if not the default.
    pub hz: Option<u32>,
    /// Every window of every worker, in log order.
    pub windows: Vec<SampleWindow>,
    /// Per worker (by id): samples in all, and by state.
    pub workers: Vec<WorkerSamples>,
    /// Estimated busy time per task (ticks).
    pub task_busy: std::collections::BTreeMap<u64, u64>,
    /// Estimated busy and waiting time per worker (ticks), by id.
    pub worker_time: Vec<(u64, u64)>,
}

/// How far a run's samples are from its periods, when it recorded both:
/// the largest difference of a busy share, in percentage points.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SamplerCheck {
    /// Of a worker's span.
    pub worker_pp: f64,
    /// Of all workers' time, per task group.
    pub group_pp: f64,
}

/// One worker's samples over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerSamples {
    /// Samples taken.
    pub total: u64,
    /// The timer signals that took them (see
    /// [`SampleWindow::signals`](rill_log::SampleWindow)).
    pub signals: u64,
    /// Samples that found a task running.
    pub running: u64,
    /// Samples between tasks.
    pub sched: u64,
    /// Samples of a task spinning before a block.
    pub spin: u64,
    /// Samples of the worker idle and awake.
    pub idle: u64,
    /// Samples of the worker asleep.
    pub parked: u64,
}

impl WorkerSamples {
    /// The independent observations the worker's busy share stands on, for
    /// [`Sampled::share_error`]: its signals, over the square of the share
    /// of its samples that found it awake (its parked time is measured, so
    /// the error of a share of its whole time is the awake share times the
    /// error of the signals' share). 0 without samples; `u64::MAX` for a
    /// worker parked throughout (its shares are exact).
    pub fn observations(&self) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let awake = self.total.saturating_sub(self.parked) as f64 / self.total as f64;
        if awake <= 0.0 {
            return u64::MAX;
        }
        (self.signals as f64 / (awake * awake)).round() as u64
    }
}

impl Sampled {
    /// The 95% bound of a share estimated from `n` samples (0 to 1; 1 when
    /// there are none).
    pub fn share_error(n: u64) -> f64 {
        if n == 0 {
            1.0
        } else {
            1.96 * 0.5 / (n as f64).sqrt()
        }
    }

    /// The fewest independent observations any worker's estimates stand
    /// on ([`WorkerSamples::observations`]): what bounds the error of the
    /// run's estimates.
    pub fn min_samples(&self) -> u64 {
        self.workers
            .iter()
            .map(WorkerSamples::observations)
            .min()
            .unwrap_or(0)
    }
}

/// What one running sample of a window is charged (ticks): its own share of
/// the window, `per` ticks, plus the window's scheduler samples (`sched`)
/// spread over its `running` samples, as a period-recording run charges
/// the step between two dispatches to the next period. A window with no
/// task running keeps them unattributed (0).
pub(crate) fn charge(per: f64, running: u64, sched: u32) -> f64 {
    if running > 0 {
        per * (1.0 + f64::from(sched) / running as f64)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_bound_shrinks_with_the_root_of_the_samples() {
        assert_eq!(Sampled::share_error(0), 1.0);
        let e100 = Sampled::share_error(100);
        let e400 = Sampled::share_error(400);
        assert!((e100 - 0.098).abs() < 1e-9, "{e100}");
        assert!((e100 / e400 - 2.0).abs() < 1e-9);
    }
}
