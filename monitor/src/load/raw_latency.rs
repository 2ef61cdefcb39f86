//! What the latency replay leaves on a run ([`RawLatency`], with the
//! streaming statistics [`Acc`] it keeps per reading task): data only; the
//! replay (`replay::latency`) fills it, the summary (`summary::latency`)
//! reads it.

/// Streaming count / mean / variance / min / max / jitter over latencies in ticks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Acc {
    pub(crate) n: u64,
    pub(crate) mean: f64,
    pub(crate) m2: f64,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) jitter_sum: f64,
    pub(crate) last: u64,
}

impl Acc {
    #[inline]
    pub(crate) fn add(&mut self, v: u64) {
        self.n += 1;
        let x = v as f64;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
        if self.n == 1 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            self.jitter_sum += v.abs_diff(self.last) as f64;
        }
        self.last = v;
    }

    /// Combines two accumulators' count, mean, variance, min and max
    /// (Chan et al.); the jitters are added (see [`LatencySummary::all`](crate::LatencySummary::all)).
    pub(crate) fn merge(&mut self, o: &Acc) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let n = self.n + o.n;
        let d = o.mean - self.mean;
        self.m2 += o.m2 + d * d * self.n as f64 * o.n as f64 / n as f64;
        self.mean += d * o.n as f64 / n as f64;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.jitter_sum += o.jitter_sum;
        self.n = n;
    }
}

/// The replay's result before the sink tasks are known.
#[derive(Clone, Debug, Default)]
pub struct RawLatency {
    /// Per task that read messages and never wrote one (so far), its reads' latencies.
    pub(crate) readers: Vec<(u64, Acc)>,
    pub(crate) unmatched: u64,
    pub(crate) unread: u64,
    pub(crate) timed_periods: u64,
    pub(crate) message_periods: u64,
    pub(crate) skipped_periods: u64,
}
