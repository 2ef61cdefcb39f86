//! The run's ticker: a thread that runs the heavy barrier for the workers'
//! sealed windows (`settle.rs`), so that a missed stream wake-up is found
//! within a bounded time even on a worker that never idles (a task that
//! yields or computes beside the blocked one). See `README.md` beside this
//! file for the bound.
//!
//! Every [`TICK`] it looks for windows owed a barrier; if there are any, one
//! membarrier covers them all. After [`QUIET_TICKS`] ticks with nothing owed
//! it sleeps until a worker seals a window (the worker wakes it; see
//! `Settle::step`), so an idle runtime costs no wake-ups.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use crate::run::shared::{Phase, Shared};
use crate::sync::{fence, AtomicBool};

/// How often the ticker looks for sealed windows.
pub(crate) const TICK: Duration = Duration::from_millis(1);
/// Ticks with nothing owed before the ticker sleeps until woken.
const QUIET_TICKS: u32 = 16;
/// The longest deep sleep (a safety net: a seal always wakes the ticker).
const DEEP_SLEEP: Duration = Duration::from_millis(200);

/// What workers share with the ticker.
pub(crate) struct TickerShared {
    thread: OnceLock<Thread>,
    /// Set while the ticker sleeps until woken.
    deep: AtomicBool,
}

impl TickerShared {
    pub(crate) fn new() -> Self {
        TickerShared {
            thread: OnceLock::new(),
            deep: AtomicBool::new(false),
        }
    }

    /// After a worker sealed a window (and ran a SeqCst fence): wake the
    /// ticker if it sleeps until woken.
    pub(crate) fn sealed(&self) {
        // Relaxed: the caller's fence orders it after the seal's store;
        // pairs with the fence in `run` (see `Settle::step`).
        if self.deep.load(Ordering::Relaxed) {
            self.unpark();
        }
    }

    pub(crate) fn unpark(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// The ticker's loop, until the run ends.
pub(crate) fn run(shared: Arc<Shared>) {
    let me = &shared.ticker;
    let _ = me.thread.set(std::thread::current());
    // Nothing is sealed before the workers run: start asleep until woken.
    let mut quiet = QUIET_TICKS;
    while shared.phase() == Phase::Running {
        if cover(&shared) {
            quiet = 0;
        } else {
            quiet += 1;
        }
        if quiet < QUIET_TICKS {
            std::thread::park_timeout(TICK);
            continue;
        }
        me.deep.store(true, Ordering::Relaxed);
        // Store-load barrier between the flag and the look for seals; pairs
        // with the sealing worker's fence between its seal and its load of
        // the flag. Either we see its seal or it sees the flag and wakes us.
        fence(Ordering::SeqCst);
        let owed = shared.workers.iter().any(|w| w.settle.owed().is_some());
        if !owed && shared.phase() == Phase::Running {
            std::thread::park_timeout(DEEP_SLEEP);
        }
        me.deep.store(false, Ordering::Relaxed);
        quiet = 0;
    }
}

/// One heavy barrier for every window owed one. Returns whether any was.
fn cover(shared: &Shared) -> bool {
    let owed: Vec<(usize, u64)> = shared
        .workers
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.settle.owed().map(|g| (i, g)))
        .collect();
    if owed.is_empty() {
        return false;
    }
    crate::barrier::heavy();
    for (i, g) in owed {
        shared.workers[i].settle.cover(g);
    }
    true
}
