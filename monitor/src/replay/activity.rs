//! What each task did between its dispatches, from one pass over all
//! workers' periods merged in time order: `waits` and `bottleneck` are
//! built on it.
//!
//! A task's time after a period, up to its next dispatch, is
//!
//! * *ready* when the period yielded (it waited for its worker only);
//! * a *wait on stream S* when the period ended blocked on S: reading the
//!   empty S (`BlockedInput`, the reader waits for S's writer) or writing the
//!   full S (`BlockedOutput`, the writer waits for S's reader);
//! * a wait on a poll (`BlockedAny`): it is put on the first stream the
//!   task reads when it next runs (the input that most likely woke it; with
//!   several inputs ready at the wake-up it names one of them), or counted
//!   as unattributed when that period reads nothing.
//!
//! A wait lasts from the end of the blocked period to the task's next
//! dispatch (the waiting relation's definition). For the time windows it is
//! split at the wake-up: the peer's period that woke the task (its stream
//! entry for S has the woke-peer bit) ends the *blocked* part, and the rest,
//! up to the dispatch, is *ready* time (the task could go on, its worker was
//! busy or waking up). The wake-up is taken at the end of the waking period,
//! clamped to the wait, so the blocked part is at most a period too long;
//! without a woke-peer bit (a wait that a spin caught, a poll, a close) the
//! whole wait is blocked. A task whose last period ended blocked waits until
//! the run's end (an *open* wait: a deadlock, or logs cut short).
//!
//! Times are also split over the run's time windows ([`Grid`]): busy and
//! ready time per task, busy time per worker, and how long each stream's
//! reader and writer were blocked on it (the blocked parts).

use rill_log::EndState;

use crate::load::ids::{IdIndex, IdMap};

use crate::load::model::RunLog;
use crate::replay::activity_model::{Activity, StreamAct, TaskAct};
use crate::replay::grid::{Grid, Strip};
use crate::replay::merge::{Event, Events, Period};

/// Entries by id, stored densely while a pass runs: a lookup is an index
/// into a table for the runtime's small ids, where a hash map would probe
/// entries of a few hundred bytes each.
struct Dense<T> {
    ix: IdIndex,
    v: Vec<(u64, T)>,
}

impl<T: Default> Dense<T> {
    fn new() -> Self {
        Dense {
            ix: IdIndex::default(),
            v: Vec::new(),
        }
    }

    #[inline]
    fn entry(&mut self, id: u64) -> &mut T {
        let (i, new) = self.ix.index(id, self.v.len());
        if new {
            self.v.push((id, T::default()));
        }
        &mut self.v[i].1
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let i = self.ix.get(id)?;
        Some(&mut self.v[i].1)
    }

    fn into_map(self) -> IdMap<u64, T> {
        self.v.into_iter().collect()
    }
}

/// The state of [`activity`]'s pass.
struct Pass {
    grid: Grid,
    tasks: Dense<TaskAct>,
    streams: Dense<StreamAct>,
    /// Unattributed poll waits and their ticks.
    polls: (u64, u64),
}

impl Pass {
    /// Books the time from a task's last period's end (`from`, ended in
    /// `state`) to `to` (its next dispatch, or the run's end for an open
    /// wait); `next_read` is the first stream its next period reads.
    fn gap(&mut self, task: u64, from: u64, to: u64, state: EndState, next_read: Option<u64>) {
        let gap = Gap {
            task,
            from,
            to,
            state,
            next_read,
        };
        let ready = self.tasks.get_mut(task).map(|t| &mut t.ready);
        book_gap(
            &self.grid,
            &mut self.streams,
            (&mut self.polls.0, &mut self.polls.1),
            ready,
            gap,
        );
    }

    /// Books a period of worker `worker`, whose busy time per window is
    /// `busy`.
    fn period(&mut self, worker: u32, busy: &mut Strip, period: &Period<'_>) {
        let p = &period.p;
        let Pass {
            grid,
            tasks,
            streams,
            polls,
        } = self;
        let t = tasks.entry(p.task);
        if let Some((from, state)) = t.last {
            let next_read = match state {
                EndState::BlockedAny => period.first_read,
                _ => None,
            };
            let gap = Gap {
                task: p.task,
                from,
                to: p.start,
                state,
                next_read,
            };
            book_gap(
                grid,
                streams,
                (&mut polls.0, &mut polls.1),
                Some(&mut t.ready),
                gap,
            );
        }
        for io in period.io {
            if io.reads | io.writes == 0 && !io.woke_peer {
                continue;
            }
            let s = streams.entry(io.stream);
            if io.writes > 0 {
                s.writer.get_or_insert(p.task);
                if io.woke_peer {
                    s.woke_reader = Some(p.end);
                }
            }
            if io.reads > 0 {
                s.reader.get_or_insert(p.task);
                if io.woke_peer {
                    s.woke_writer = Some(p.end);
                }
            }
        }
        busy.add_span(grid, p.start, p.end);
        t.busy.add_span(grid, p.start, p.end);
        t.busy_ticks = t.busy_ticks.saturating_add(p.dur());
        match t.on.iter_mut().find(|(w, _)| *w == worker) {
            Some((_, b)) => *b = b.saturating_add(p.dur()),
            None => t.on.push((worker, p.dur())),
        }
        t.last = Some((p.end, p.end_state));
    }
}

/// A task's time between two dispatches (see [`Pass::gap`]).
struct Gap {
    task: u64,
    from: u64,
    to: u64,
    state: EndState,
    next_read: Option<u64>,
}

/// Books `gap` on its stream (or as unattributed poll time, counted in
/// `polls`), and its ready part on the task's `ready` strip.
fn book_gap(
    grid: &Grid,
    streams: &mut Dense<StreamAct>,
    polls: (&mut u64, &mut u64),
    ready: Option<&mut Strip>,
    gap: Gap,
) {
    let Gap {
        task,
        from,
        to,
        state,
        next_read,
    } = gap;
    let ticks = to.saturating_sub(from);
    let (stream, reader) = match state {
        EndState::Yielded => {
            if let Some(r) = ready {
                r.add_span(grid, from, to);
            }
            return;
        }
        EndState::BlockedInput { stream } => (stream, true),
        EndState::BlockedOutput { stream } => (stream, false),
        EndState::BlockedAny => match next_read {
            Some(stream) => (stream, true),
            None => {
                *polls.0 += 1;
                *polls.1 = polls.1.saturating_add(ticks);
                return;
            }
        },
        // A period after the task ended: nothing to book.
        EndState::Ended | EndState::Panicked => return,
    };
    let s = streams.entry(stream);
    // The wake-up, if a period of the peer woke it during the wait.
    let woke = if matches!(state, EndState::BlockedAny) {
        None
    } else if reader {
        s.woke_reader
    } else {
        s.woke_writer
    };
    let wake = woke.filter(|&w| w >= from && w <= to).unwrap_or(to);
    if reader {
        s.reader_waits += 1;
        s.reader_wait = s.reader_wait.saturating_add(ticks);
        s.reader_blocked.add_span(grid, from, wake);
        s.reader_woken.add_span(grid, wake, to);
        s.reader.get_or_insert(task);
    } else {
        s.writer_waits += 1;
        s.writer_wait = s.writer_wait.saturating_add(ticks);
        s.writer_blocked.add_span(grid, from, wake);
        s.writer_woken.add_span(grid, wake, to);
        s.writer.get_or_insert(task);
    }
    if wake < to {
        if let Some(r) = ready {
            r.add_span(grid, wake, to);
        }
    }
}

/// The whole-run figures of an [`Activity`] (one window, no per-window
/// times) from the totals [`load_run`](crate::load_run) keeps, with no pass
/// over the records: per task its busy time and main worker, per stream its
/// waits, the open and unattributed waits. `None` where they could differ
/// from [`activity`]'s: when a task's periods lie in more than one log (a
/// log's order is then not the task's), or a stream side that was used was
/// never bound (the pass takes the first task seen there). The runtime
/// never moves a task that ran and binds every end it uses, so runs have
/// neither.
pub(crate) fn activity_from_totals(run: &RunLog) -> Option<Activity> {
    // A sample-mode run's activity comes from its windows.
    if run.split_tasks > 0 || crate::load::sampled::is_sample_only(run) {
        return None;
    }
    let unbound = run.streams.values().any(|s| {
        (s.writer.is_none() && (s.written > 0 || s.writer_blocked > 0))
            || (s.reader.is_none() && (s.read > 0 || s.reader_blocked > 0 || s.poll_waits > 0))
    });
    if unbound {
        return None;
    }
    let mut act = Activity {
        grid: Grid::new(run.t0, run.t1, 1),
        tasks: IdMap::default(),
        streams: IdMap::default(),
        workers: run
            .workers
            .iter()
            .map(|w| (w.worker, Strip::default()))
            .collect(),
        open_waits: run.open_waits,
        unattributed_polls: run.unattributed_polls,
        unattributed_poll_ticks: run.unattributed_poll_ticks,
        sampled: false,
    };
    for t in run.tasks.values().filter(|t| t.dispatches > 0) {
        act.tasks.insert(
            t.id,
            TaskAct {
                busy_ticks: t.busy,
                worker: t.ran_on,
                ..TaskAct::default()
            },
        );
    }
    for s in run.streams.values() {
        act.streams.insert(
            s.id,
            StreamAct {
                reader_waits: s.reader_blocked.saturating_add(s.poll_waits),
                reader_wait: s.reader_wait,
                writer_waits: s.writer_blocked,
                writer_wait: s.writer_wait,
                ..StreamAct::default()
            },
        );
    }
    Some(act)
}

/// The whole-run [`Activity`] (one window): [`activity_from_totals`] where
/// it applies, else the pass.
pub(crate) fn whole_run(run: &RunLog) -> Activity {
    activity_from_totals(run).unwrap_or_else(|| activity(run, 1))
}

/// One pass over every log's periods, merged by start time (so that a
/// waking period is seen before the dispatch it allowed), with the run's
/// span cut into `windows` windows.
///
/// A sample-mode run has no periods: its activity comes from the sampler's
/// windows instead (`replay/sampled_activity.rs`).
pub(crate) fn activity(run: &RunLog, windows: usize) -> Activity {
    activity_from(run, windows, Events::Run(run))
}

/// [`activity`], reading the periods from `events` (a merged pass of its
/// own, or a share of one, `replay/merge.rs`).
pub(crate) fn activity_from(run: &RunLog, windows: usize, events: Events<'_>) -> Activity {
    if let Some(sm) = run
        .sampled
        .as_ref()
        .filter(|_| crate::load::sampled::is_sample_only(run))
    {
        return crate::replay::sampled_activity::activity(
            run,
            sm,
            Grid::new(run.t0, run.t1, windows),
        );
    }
    let mut pass = Pass {
        grid: Grid::new(run.t0, run.t1, windows),
        tasks: Dense::new(),
        streams: Dense::new(),
        polls: (0, 0),
    };
    let mut busy: Vec<(u32, Strip)> = run
        .workers
        .iter()
        .map(|w| (w.worker, Strip::default()))
        .collect();
    events.for_each_event(false, |i, e| {
        if let Event::Period(period) = e {
            let (worker, strip) = &mut busy[i];
            pass.period(*worker, strip, period);
        }
    });
    // Open waits, to the run's end; each task's main worker.
    let end = run.t1;
    let mut open: Vec<(u64, u64, EndState)> = Vec::new();
    for (id, t) in pass.tasks.v.iter_mut() {
        t.settle_worker();
        if let Some((from, state)) = t.last {
            if matches!(
                state,
                EndState::BlockedInput { .. }
                    | EndState::BlockedOutput { .. }
                    | EndState::BlockedAny
            ) {
                open.push((*id, from, state));
            }
        }
    }
    open.sort_unstable_by_key(|o| o.0);
    let open_waits = open.len() as u64;
    for (id, from, state) in open {
        pass.gap(id, from, end.max(from), state, None);
    }
    Activity {
        grid: pass.grid,
        tasks: pass.tasks.into_map(),
        streams: pass.streams.into_map(),
        workers: busy.into_iter().collect(),
        open_waits,
        unattributed_polls: pass.polls.0,
        unattributed_poll_ticks: pass.polls.1,
        sampled: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::grid::Near;

    #[test]
    fn grid_splits_exactly() {
        let g = Grid::new(100, 110, 3);
        assert_eq!(
            (g.start(0), g.start(1), g.start(2), g.start(3)),
            (100, 103, 106, 110)
        );
        let mut got = Vec::new();
        g.split(101, 108, |w, t| got.push((w, t)));
        assert_eq!(got, [(0, 2), (1, 3), (2, 2)]);
        let mut total = 0;
        g.split(0, u64::MAX, |_, t| total += t);
        assert_eq!(total, 10, "clamped to the grid");
        for t in 100..=110 {
            let i = g.index(t);
            assert!(g.start(i) <= t && (t < g.start(i + 1) || t == 110), "{t}");
        }
        // Spans whose products overflow 64 bits.
        let huge = Grid::new(1, u64::MAX, 7);
        for t in [1, 2, u64::MAX / 3, u64::MAX / 2 + 5, u64::MAX - 1, u64::MAX] {
            let i = huge.index(t);
            assert!(huge.start(i) <= t, "{t}");
            assert!(t < huge.start(i + 1) || i == 6, "{t}");
        }
        assert_eq!(huge.start(7), u64::MAX);
        let one = Grid::new(10, 20, 1);
        let mut got = Vec::new();
        one.split(5, 15, |w, t| got.push((w, t)));
        assert_eq!((one.index(19), got), (0, vec![(0, 5)]));
        let empty = Grid::new(5, 5, 4);
        empty.split(0, 10, |_, _| panic!("no time"));
        assert_eq!(empty.index(7), 0);
    }

    proptest::proptest! {
        /// A remembered window changes nothing: each span gets the
        /// overlaps `split` gives it, whatever spans came before.
        #[test]
        fn split_near_hands_over_what_split_does(
            t0 in 0u64..50,
            span in 0u64..200,
            n in 1usize..9,
            spans in proptest::collection::vec((0u64..300, 0u64..60), 1..40),
        ) {
            let g = Grid::new(t0, t0 + span, n);
            let mut near = Near::default();
            for (a, len) in spans {
                let (mut want, mut got) = (Vec::new(), Vec::new());
                g.split(a, a + len, |w, t| want.push((w, t)));
                g.split_near(&mut near, a, a + len, |w, t| got.push((w, t)));
                proptest::prop_assert_eq!(got, want, "[{}, {})", a, a + len);
            }
        }
    }

    proptest::proptest! {
        /// A strip's spans and additions add up per window as `split`
        /// cuts them, reversed and empty spans adding nothing, whatever
        /// came before (the remembered window included).
        #[test]
        fn strips_add_what_split_cuts(
            span in 1u64..200,
            n in 1usize..9,
            ops in proptest::collection::vec((0u64..260, 0u64..260, 0usize..12), 1..40),
        ) {
            let g = Grid::new(10, 10 + span, n);
            let mut s = Strip::default();
            let mut want = vec![0u64; n];
            for (a, b, w) in ops {
                if w >= 9 {
                    s.add(w % n, 5);
                    want[w % n] += 5;
                } else {
                    s.add_span(&g, a, b);
                    g.split(a, b, |i, t| want[i] += t);
                }
            }
            for (i, &v) in want.iter().enumerate() {
                proptest::prop_assert_eq!(s.get(i), v, "window {}", i);
            }
        }
    }

    #[test]
    fn strips_grow_both_ways() {
        let mut s = Strip::default();
        s.add(5, 1);
        s.add(2, 2);
        s.add(7, 3);
        assert_eq!(
            (s.get(1), s.get(2), s.get(5), s.get(7), s.get(9)),
            (0, 2, 1, 3, 0)
        );
    }
}
