//! Per-file totals, filled record by record: [`Agg`].

use rill_log::{EndState, MonitorFlags, Side};

use crate::load::ids::IdIndex;
use crate::load::model::{StreamInfo, TaskInfo};
use crate::load::scan::{Item, ScannedPeriod, Scanner};
use crate::load::worker_log::{LoggedTotals, WorkerStats};

/// Per-file totals, filled record by record.
#[derive(Default)]
pub(crate) struct Agg {
    /// The log records periods (its flags have `SCHEDULER`).
    pub(crate) periods: bool,
    /// The log is sample mode's only (no periods, no worker waits): its
    /// worker totals stand for both.
    pub(crate) sample_only: bool,
    pub(crate) stats: WorkerStats,
    pub(crate) tasks: Vec<TaskInfo>,
    pub(crate) task_ix: IdIndex,
    pub(crate) streams: Vec<StreamInfo>,
    pub(crate) stream_ix: IdIndex,
    /// Per task (by index): its previous period in this log, in the log's
    /// order (its end and end state).
    pub(crate) prev: Vec<Option<(u64, EndState)>>,
    /// Poll waits on no stream, and their ticks.
    pub(crate) unattributed_polls: u64,
    pub(crate) unattributed_poll_ticks: u64,
    /// Where the log stands in the pattern of a spin before a block.
    pub(crate) spin: Spin,
}

/// A spin before a block (`rill::WorkerStats::spins`) as a log shows it: a
/// period of task T ends blocked, a worker wait starts at its end, and T's
/// next period starts at that wait's end. The runtime counts no dispatch
/// for the new period (the task never left its worker), so a worker's log
/// holds its dispatches plus its spins periods. A spin that failed (nothing
/// came) is followed by a period of T that did nothing and ended blocked
/// the same way: the real block, whose wait and dispatch are not a spin.
/// Where workers share cores the runtime does not spin, and a real block
/// that its worker idled through shows the same pattern. The count is the
/// fallback for a log without the worker's own totals (`WorkerTotals`,
/// which hold its exact spins): with them, a worker that did not spin has
/// no spin per task either ([`Agg::settle_spins`]); without them the loader
/// drops the count where the run leaves no room for it
/// (`load/merge_files.rs`).
#[derive(Clone, Copy, Default)]
pub(crate) enum Spin {
    /// No spin under way.
    #[default]
    None,
    /// Task `task`'s period ended blocked (`state`) at `end`; `real`: it
    /// was the block after a failed spin.
    Blocked {
        task: u64,
        end: u64,
        state: EndState,
        real: bool,
    },
    /// Then the worker waited until `until`; `acted`: a record other than
    /// a period came after the wait (a stream closed, a task spawned: the
    /// next period did something).
    Waited {
        task: u64,
        until: u64,
        state: EndState,
        acted: bool,
    },
}

impl Agg {
    /// An empty aggregate for a log with `flags`.
    pub(crate) fn new(flags: MonitorFlags) -> Self {
        Agg {
            periods: flags.contains(MonitorFlags::SCHEDULER),
            sample_only: flags.is_sampled() && !flags.contains(MonitorFlags::SCHEDULER),
            ..Agg::default()
        }
    }

    /// After the last record: a worker whose totals say it never spun has
    /// no spin in any task's count either (the shape was a block its worker
    /// idled through). Otherwise each task keeps the spins its periods'
    /// shape shows, which is how the worker's exact count is split.
    pub(crate) fn settle_spins(&mut self) {
        if self.stats.totals.is_some_and(|t| t.spins == 0) {
            for t in &mut self.tasks {
                t.spins = 0;
            }
        }
    }

    #[inline]
    pub(crate) fn time(&mut self, t0: u64, t1: u64) {
        let s = &mut self.stats;
        if s.any_time {
            s.begin = s.begin.min(t0);
            s.finish = s.finish.max(t1);
        } else {
            s.any_time = true;
            s.begin = t0;
            s.finish = t1;
        }
    }

    #[inline]
    pub(crate) fn task_index(&mut self, id: u64) -> usize {
        let (i, new) = self.task_ix.index(id, self.tasks.len());
        if new {
            self.tasks.push(TaskInfo {
                id,
                ..TaskInfo::default()
            });
            self.prev.push(None);
        }
        i
    }

    #[inline]
    pub(crate) fn task(&mut self, id: u64) -> &mut TaskInfo {
        let i = self.task_index(id);
        &mut self.tasks[i]
    }

    #[inline]
    pub(crate) fn stream(&mut self, id: u64) -> &mut StreamInfo {
        let (i, new) = self.stream_ix.index(id, self.streams.len());
        if new {
            self.streams.push(StreamInfo {
                id,
                ..StreamInfo::default()
            });
        }
        &mut self.streams[i]
    }

    #[inline(always)]
    pub(crate) fn period(&mut self, p: &ScannedPeriod, sc: &Scanner<'_>) {
        self.stats.records += 1;
        self.time(p.start, p.end.max(p.start));
        let dur = p.dur();
        let mut reads = 0u64;
        let mut writes = 0u64;
        // Durations and message counts come from the file: the totals
        // saturate rather than overflow.
        for io in sc.io() {
            reads = reads.saturating_add(u64::from(io.reads));
            writes = writes.saturating_add(u64::from(io.writes));
            self.stats.wakes += u64::from(io.woke_peer);
            if io.reads | io.writes != 0 || io.woke_peer {
                let s = self.stream(io.stream);
                s.read = s.read.saturating_add(u64::from(io.reads));
                s.written = s.written.saturating_add(u64::from(io.writes));
            }
        }
        let st = &mut self.stats;
        st.busy = st.busy.saturating_add(dur);
        st.dispatches += 1;
        st.events = st
            .events
            .saturating_add(1)
            .saturating_add(reads)
            .saturating_add(writes);
        st.reads = st.reads.saturating_add(reads);
        st.writes = st.writes.saturating_add(writes);
        st.timed_periods += u64::from(!sc.op_times().is_empty());
        st.ordered_periods += u64::from(sc.ops_recorded());
        match p.end_state {
            EndState::BlockedInput { stream } => self.stream(stream).reader_blocked += 1,
            EndState::BlockedOutput { stream } => self.stream(stream).writer_blocked += 1,
            _ => {}
        }
        let spun = matches!(self.spin, Spin::Waited { task, until, .. }
            if task == p.task && until == p.start);
        let blocked = matches!(
            p.end_state,
            EndState::BlockedInput { .. } | EndState::BlockedOutput { .. } | EndState::BlockedAny
        );
        self.spin = if blocked {
            // After a spin, a period that did nothing and blocked the same
            // way is the block the spin tried to save.
            let real = spun
                && reads == 0
                && writes == 0
                && matches!(self.spin, Spin::Waited { state, acted: false, .. }
                    if state == p.end_state);
            Spin::Blocked {
                task: p.task,
                end: p.end,
                state: p.end_state,
                real,
            }
        } else {
            Spin::None
        };
        self.stats.blocked_periods += u64::from(blocked);
        if spun {
            self.stats.inferred_spins += 1;
        }
        let i = self.task_index(p.task);
        if spun {
            self.tasks[i].spins += 1;
        }
        if let Some((from, state)) = self.prev[i].replace((p.end, p.end_state)) {
            self.wait(from, p.start, state, sc);
        }
        let t = &mut self.tasks[i];
        t.busy = t.busy.saturating_add(dur);
        t.dispatches += 1;
        t.reads = t.reads.saturating_add(reads);
        t.writes = t.writes.saturating_add(writes);
        if t.last_end.is_none() || p.end >= t.last_time {
            t.last_end = Some(p.end_state);
            t.last_time = p.end;
        }
    }

    /// Books a task's time from its previous period's end (`from`, ended
    /// in `state`) to its next dispatch `to`, as the waits count it
    /// (`replay/activity.rs`); the counts of blocked periods are booked by
    /// [`period`](Self::period). `sc` holds the next period.
    #[inline]
    pub(crate) fn wait(&mut self, from: u64, to: u64, state: EndState, sc: &Scanner<'_>) {
        let ticks = to.saturating_sub(from);
        match state {
            EndState::BlockedInput { stream } => {
                let s = self.stream(stream);
                s.reader_wait = s.reader_wait.saturating_add(ticks);
            }
            EndState::BlockedOutput { stream } => {
                let s = self.stream(stream);
                s.writer_wait = s.writer_wait.saturating_add(ticks);
            }
            // A poll wait goes to the first stream the next period reads.
            EndState::BlockedAny => match crate::load::scan::first_read(sc) {
                Some(stream) => {
                    let s = self.stream(stream);
                    s.poll_waits += 1;
                    s.reader_wait = s.reader_wait.saturating_add(ticks);
                }
                None => {
                    self.unattributed_polls += 1;
                    self.unattributed_poll_ticks =
                        self.unattributed_poll_ticks.saturating_add(ticks);
                }
            },
            EndState::Yielded | EndState::Ended | EndState::Panicked => {}
        }
    }

    /// A record other than a period.
    pub(crate) fn item(&mut self, item: &Item<'_>) {
        self.stats.records += 1;
        if let Spin::Waited { acted, .. } = &mut self.spin {
            *acted = true;
        }
        match *item {
            Item::Period(_) => unreachable!("periods go to Agg::period"),
            Item::WorkerWait { t, dur } => {
                self.spin = match self.spin {
                    Spin::Blocked {
                        task,
                        end,
                        state,
                        real: false,
                    } if end == t => Spin::Waited {
                        task,
                        until: t.saturating_add(dur),
                        state,
                        acted: false,
                    },
                    _ => Spin::None,
                };
                self.time(t, t.saturating_add(dur));
                self.stats.wait = self.stats.wait.saturating_add(dur);
                self.stats.waits += 1;
                self.stats.events += 1;
            }
            Item::WorkerStart { t } | Item::WorkerEnd { t } => {
                self.time(t, t);
                self.stats.events += 1;
            }
            Item::TaskAssign {
                t,
                task,
                parent,
                worker,
                name,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let info = self.task(task);
                info.created = Some(info.created.map_or(t, |c| c.min(t)));
                if info.name.is_none() {
                    info.name = Some(name.to_owned());
                    info.parent = parent;
                    info.assigned = Some(worker);
                }
            }
            Item::TaskMigrate { t, task, .. } => {
                self.time(t, t);
                self.stats.events += 1;
                self.task(task).migrations += 1;
            }
            Item::StreamOpen {
                t,
                stream,
                capacity,
                creator,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                s.capacity = Some(capacity);
                s.creator = creator;
            }
            Item::StreamName { t, stream, name } => {
                self.time(t, t);
                self.stats.events += 1;
                self.stream(stream).name = Some(name.to_owned());
            }
            Item::StreamBind {
                t,
                stream,
                side,
                task,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => s.reader = Some(task),
                    Side::Writer => s.writer = Some(task),
                }
            }
            Item::StreamClose { t, stream, side } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => s.closed.0 = true,
                    Side::Writer => s.closed.1 = true,
                }
            }
            Item::StreamReplace { t, .. } => {
                self.time(t, t);
                self.stats.events += 1;
            }
            // Sample mode's exact counts: a run in that mode has no periods,
            // so these are the only counts of their kind.
            Item::TaskTotals {
                t,
                task,
                dispatches,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let info = self.task(task);
                info.dispatches = info.dispatches.saturating_add(dispatches);
            }
            Item::StreamTotals {
                t,
                stream,
                side,
                messages,
                waits,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let s = self.stream(stream);
                match side {
                    Side::Reader => {
                        s.read = s.read.saturating_add(messages);
                        s.reader_blocked = s.reader_blocked.saturating_add(waits);
                    }
                    Side::Writer => {
                        s.written = s.written.saturating_add(messages);
                        s.writer_blocked = s.writer_blocked.saturating_add(waits);
                    }
                }
            }
            Item::WorkerTotals {
                t,
                dispatches,
                spins,
                idles,
                parks,
            } => {
                self.time(t, t);
                self.stats.events += 1;
                let st = &mut self.stats;
                // One per log; a second (a log written twice over) adds up.
                let tot = st.totals.get_or_insert_with(LoggedTotals::default);
                tot.dispatches = tot.dispatches.saturating_add(dispatches);
                tot.spins = tot.spins.saturating_add(spins);
                tot.idles = tot.idles.saturating_add(idles);
                tot.parks = tot.parks.saturating_add(parks);
                if !self.periods {
                    // No period to count: the totals are the dispatches.
                    st.dispatches = st.dispatches.saturating_add(dispatches);
                }
                if self.sample_only {
                    // No worker wait logged either. As a period-recording
                    // run counts them: each idle stretch and each spin
                    // before a block is a wait.
                    st.waits = st.waits.saturating_add(idles).saturating_add(spins);
                }
            }
            // Only the sampler's own log holds windows (`load/sampled.rs`).
            Item::Samples(_) => {}
        }
    }
}
