//! A run as a thread outside it sees it ([`RunWatch`]), for a cross-rank
//! bridge.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::shared::{Phase, Shared};

/// A run as a thread outside it sees it: a cross-rank bridge asks whether
/// every task waits on ends held outside the run, and ends the run as
/// deadlocked when every rank is so and nothing is in flight.
#[derive(Default)]
pub(crate) struct RunWatch {
    shared: Mutex<Option<Arc<Shared>>>,
}

impl RunWatch {
    /// Every worker idle, no task queued, and tasks left that wait on ends
    /// held outside the run (a snapshot: a wake may follow it at once).
    pub(crate) fn all_waiting_outside(&self) -> bool {
        let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        s.as_ref().is_some_and(|s| {
            s.phase() == Phase::Running
                && s.looks_deadlocked()
                && s.waits_outside.load(Ordering::SeqCst) > 0
        })
    }

    /// Ends the run as deadlocked: it returns [`RunError::Deadlock`] with
    /// its blocked tasks.
    pub(crate) fn end_deadlocked(&self) {
        let s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = s.as_ref() {
            s.end(Phase::Deadlock);
        }
    }

    pub(super) fn publish(&self, s: Option<Arc<Shared>>) {
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
}
