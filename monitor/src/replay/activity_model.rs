//! What the activity pass measures ([`Activity`]): per task, stream and
//! worker, busy, ready and blocked time per window of a [`Grid`].

use std::collections::BTreeMap;

use rill_log::EndState;

use crate::load::ids::IdMap;
use crate::load::model::RunLog;
use crate::replay::grid::{Grid, Strip};

/// Waits on one stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamAct {
    /// Waits of its reader on it (reading it empty), and their ticks (to
    /// the next dispatch).
    pub reader_waits: u64,
    pub reader_wait: u64,
    /// Waits of its writer on it (writing it full), and their ticks.
    pub writer_waits: u64,
    pub writer_wait: u64,
    /// The blocked parts (up to the wake-up) per window.
    pub reader_blocked: Strip,
    pub writer_blocked: Strip,
    /// The parts after a wake-up on this stream (to the dispatch) per window.
    pub reader_woken: Strip,
    pub writer_woken: Strip,
    /// Messages it carried (sample mode only: the exact count).
    pub messages: u64,
    /// The first task seen writing it / reading it (or blocked on that side).
    pub writer: Option<u64>,
    pub reader: Option<u64>,
    /// The end of the last period that woke its reader / its writer.
    pub(crate) woke_reader: Option<u64>,
    pub(crate) woke_writer: Option<u64>,
}

/// One task's activity over the whole run.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskAct {
    /// Busy ticks per window.
    pub busy: Strip,
    /// Ready ticks (after a yield or a wake-up) per window.
    pub ready: Strip,
    /// Busy ticks in all.
    pub busy_ticks: u64,
    /// The worker that ran most of it.
    pub worker: Option<u32>,
    /// Busy ticks per worker it ran on.
    pub(crate) on: Vec<(u32, u64)>,
    /// Its last period's end and end state (none before its first).
    pub(crate) last: Option<(u64, EndState)>,
}

/// Everything [`activity`] finds.
#[derive(Debug)]
pub(crate) struct Activity {
    pub grid: Grid,
    pub tasks: IdMap<u64, TaskAct>,
    pub streams: IdMap<u64, StreamAct>,
    /// Busy ticks per window, per worker with a log (by id).
    pub workers: BTreeMap<u32, Strip>,
    /// Waits that never ended (the task's last period ended blocked).
    pub open_waits: u64,
    /// Poll waits (`BlockedAny`) whose next period read nothing, and their ticks.
    pub unattributed_polls: u64,
    pub unattributed_poll_ticks: u64,
    /// Built from a sample-mode run's windows (`replay/sampled_activity.rs`): busy time is
    /// estimated, waits are exact counts without times (no blocked or ready
    /// time).
    pub sampled: bool,
}

impl TaskAct {
    /// Books `ticks` of busy time on `worker` in all (the per-window strip is
    /// the caller's).
    pub(crate) fn add_busy(&mut self, worker: u32, ticks: u64) {
        self.busy_ticks = self.busy_ticks.saturating_add(ticks);
        match self.on.iter_mut().find(|(w, _)| *w == worker) {
            Some((_, b)) => *b = b.saturating_add(ticks),
            None => self.on.push((worker, ticks)),
        }
    }

    /// Sets the worker that ran most of the task's busy time.
    pub(crate) fn settle_worker(&mut self) {
        self.worker = self
            .on
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|&(w, _)| w);
    }
}

impl Activity {
    /// An empty activity over `grid`.
    pub(crate) fn empty(grid: Grid) -> Self {
        Activity {
            grid,
            tasks: IdMap::default(),
            streams: IdMap::default(),
            workers: BTreeMap::new(),
            open_waits: 0,
            unattributed_polls: 0,
            unattributed_poll_ticks: 0,
            sampled: false,
        }
    }

    /// A stream's writer and reader: the tasks bound to its ends (from the
    /// log's `StreamBind` records), else the tasks seen using them.
    pub fn ends(&self, run: &RunLog, stream: u64) -> (Option<u64>, Option<u64>) {
        let info = run.streams.get(&stream);
        let act = self.streams.get(&stream);
        (
            info.and_then(|s| s.writer)
                .or_else(|| act.and_then(|a| a.writer)),
            info.and_then(|s| s.reader)
                .or_else(|| act.and_then(|a| a.reader)),
        )
    }

    /// The worker a task ran on (most of its busy time), else the worker it
    /// was assigned to.
    pub fn worker_of(&self, run: &RunLog, task: u64) -> Option<u32> {
        self.tasks
            .get(&task)
            .and_then(|t| t.worker)
            .or_else(|| run.tasks.get(&task).and_then(|t| t.assigned))
    }
}
