//! How long an idle worker spins before it parks: the configured spin, grown
//! while parks keep ending soon after they began.
//!
//! A park is dear where the work comes back quickly: the worker settles its
//! stream sides with a heavy barrier (an interrupt to every core running the
//! process), the waker makes a system call, and the sleeping core takes tens
//! of microseconds to run again under a hypervisor. A worker that parks
//! between turns that are only a little further apart than its spin pays this
//! on every turn, and the time it pays lengthens the gap between turns of
//! every other worker in the chain: a ring of 100 tasks on 16 workers settled
//! into parking at every crossing, about 10 µs a hop where a crossing that
//! finds its worker spinning costs well under 1 µs. Growing the spin to cover
//! such gaps gets the run out of that state; a long park (the run has
//! nothing for this worker for a while) brings the spin back to the
//! configured one, so an idle runtime still parks after it.
//!
//! The cap is 4 spins, or a spin per worker with more than 4 workers: the
//! gap between a worker's turns when every crossing parks grows with the
//! number of workers, and a cap below it would leave the run parking.
//!
//! Growing is only for workers that have a core each: where workers share
//! cores, a spinning worker takes the time another worker on its core needs.
//! There an idle worker's spin gives the core away at every turn
//! (`sched_yield`), so that a worker with work on the same core runs at once
//! rather than after the spin or the kernel's time slice.

use std::cell::Cell;
use std::time::Duration;

/// The most the spin grows to, as a multiple of the configured spin, with
/// few workers; with more, the multiple is the number of workers.
pub(crate) const SPIN_GROWTH: u32 = 4;

/// One worker's idle spin (used by its own thread only).
pub(crate) struct IdleSpin {
    base: Duration,
    max: Duration,
    now: Cell<Duration>,
    /// More workers than cores: spin by giving the core away.
    shares_core: bool,
    /// A task about to block may spin first (`stream::block::spin_on`).
    task_spins: bool,
}

impl IdleSpin {
    /// A spin of `base`, growing up to [`SPIN_GROWTH`] or `workers` times
    /// it (the larger) when `workers` is at most `cores`. The gap a worker
    /// sees between its turns in a chain of crossings that all park is
    /// about the other workers' number times a park and wake (10-25 µs
    /// under a hypervisor): a cap of a 50 µs spin per worker covers it.
    pub(crate) fn new(base: Duration, workers: usize, cores: usize) -> Self {
        let max = if workers <= cores {
            let times = u32::try_from(workers).unwrap_or(u32::MAX).max(SPIN_GROWTH);
            base.saturating_mul(times)
        } else {
            base
        };
        IdleSpin {
            base,
            max,
            now: Cell::new(base),
            shares_core: workers > cores,
            task_spins: workers <= cores && !base.is_zero(),
        }
    }

    /// Whether a task about to block may spin first: only where the worker
    /// would spin idle itself, since the spin stands in for the worker's.
    /// Not where workers share cores (the work it waits for may be that of
    /// a worker waiting for this very core), nor with no idle spin: a run
    /// across ranks on a crowded machine sets none, and there the message
    /// a task waits for can only come from its own worker's bridge pass,
    /// which a task's spin would hold back (about 10 µs a block, 18 µs of
    /// the 8-byte round trip's 21 µs).
    #[inline(always)]
    pub(crate) fn task_spins(&self) -> bool {
        self.task_spins
    }

    /// Whether workers share cores (more workers than cores). Then an idle
    /// worker gives its core away at each turn of its spin
    /// (`sched_yield`) instead of pausing, and a task about to block does
    /// not spin first: the work it waits for may be that of a worker
    /// waiting for this very core.
    #[inline]
    pub(crate) fn shares_core(&self) -> bool {
        self.shares_core
    }

    /// How long to spin before parking this time.
    #[inline]
    pub(crate) fn budget(&self) -> Duration {
        self.now.get()
    }

    /// After a park that ended with work: `gap` is the time from running out
    /// of work to the wake. A gap the grown spin would have covered grows
    /// the spin to half as much again as the gap; a longer one means the
    /// worker really had nothing to do, and brings the spin back to the
    /// configured one.
    pub(crate) fn after_park(&self, gap: Duration) {
        let next = if gap <= self.max {
            (gap + gap / 2).clamp(self.now.get(), self.max)
        } else {
            self.base
        };
        self.now.set(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn short_parks_grow_the_spin_up_to_its_cap() {
        let s = IdleSpin::new(50 * US, 2, 2);
        assert_eq!(s.budget(), 50 * US);
        s.after_park(60 * US);
        assert_eq!(s.budget(), 90 * US);
        // A shorter gap never shrinks it.
        s.after_park(55 * US);
        assert_eq!(s.budget(), 90 * US);
        s.after_park(150 * US);
        assert_eq!(s.budget(), 200 * US);
        s.after_park(200 * US);
        assert_eq!(s.budget(), 200 * US);
    }

    #[test]
    fn the_cap_is_a_spin_per_worker_with_many_workers() {
        let s = IdleSpin::new(50 * US, 16, 16);
        s.after_park(700 * US);
        assert_eq!(s.budget(), 800 * US);
        s.after_park(801 * US);
        assert_eq!(s.budget(), 50 * US);
    }

    #[test]
    fn a_long_park_restores_the_configured_spin() {
        let s = IdleSpin::new(50 * US, 2, 2);
        s.after_park(150 * US);
        assert_eq!(s.budget(), 200 * US);
        s.after_park(201 * US);
        assert_eq!(s.budget(), 50 * US);
        s.after_park(Duration::from_secs(1));
        assert_eq!(s.budget(), 50 * US);
    }

    #[test]
    fn workers_sharing_cores_and_a_zero_spin_never_grow() {
        let s = IdleSpin::new(50 * US, 16, 2);
        assert!(s.shares_core());
        s.after_park(60 * US);
        assert_eq!(s.budget(), 50 * US);
        assert!(!IdleSpin::new(50 * US, 2, 2).shares_core());
        assert!(IdleSpin::new(50 * US, 2, 2).task_spins());
        assert!(!IdleSpin::new(50 * US, 16, 2).task_spins());
        assert!(!IdleSpin::new(Duration::ZERO, 2, 2).task_spins());
        let z = IdleSpin::new(Duration::ZERO, 2, 2);
        z.after_park(Duration::from_nanos(10));
        assert_eq!(z.budget(), Duration::ZERO);
    }
}
