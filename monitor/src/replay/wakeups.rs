//! Which logged wake-up ended which wait: the bookkeeping that the passes
//! replaying a run in time order share (the trace, `trace/perfetto/pass.rs`, and
//! the evolution, `evolution/replay.rs`).
//!
//! A period that woke its stream's peer says so (`woke_peer`); the peer is
//! the task holding the other end, known from the run's bindings or from
//! the periods seen so far. The wake-up happened at the waking period's end.
//! Two things make its wait not simply the peer's next one:
//!
//! - The merged pass visits periods in the order of their starts. A waker's
//!   period can start before the woken task's period and end, waking it,
//!   after that period blocked: the wake-up belongs to the wait after the
//!   woken task's period, not the one before it, and a pass that handed it
//!   to the wait before lost it.
//! - The runtime may signal a waiting task again before it runs. The
//!   earliest wake-up is the one that made it ready; one before the task's
//!   last period ended woke no wait of it.

use rill_log::StreamIo;

use crate::load::ids::IdIndex;

/// Each stream's writer and reader task, as far as known.
#[derive(Debug, Default)]
pub(crate) struct StreamEnds {
    ix: IdIndex,
    ends: Vec<(Option<u64>, Option<u64>)>,
}

impl StreamEnds {
    /// Stream `stream`'s (writer, reader).
    #[inline]
    pub(crate) fn ends(&mut self, stream: u64) -> &mut (Option<u64>, Option<u64>) {
        let (i, new) = self.ix.index(stream, self.ends.len());
        if new {
            self.ends.push((None, None));
        }
        &mut self.ends[i]
    }

    /// Notes `task` as the writer or reader of `io`'s stream where it moved
    /// messages there and the side was not known; returns the task `io`
    /// woke, if it woke one (never `task` itself).
    #[inline]
    pub(crate) fn woken_by(&mut self, task: u64, io: &StreamIo) -> Option<u64> {
        if io.reads | io.writes == 0 && !io.woke_peer {
            return None;
        }
        let e = self.ends(io.stream);
        if io.writes > 0 {
            e.0.get_or_insert(task);
        }
        if io.reads > 0 {
            e.1.get_or_insert(task);
        }
        if !io.woke_peer {
            return None;
        }
        let peer = if io.writes > 0 { e.1 } else { e.0 };
        peer.filter(|&t| t != task)
    }
}

/// A task's wake-up not yet matched to a wait: when, and what the pass
/// keeps with it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Wake<W> {
    pub(crate) at: u64,
    pub(crate) what: W,
}

/// Offers the wake-up `at` to a task whose last period ended at `last_end`
/// (`None`: none seen yet) and that holds `pending`. It is kept when it is
/// the earliest since that end. Returns the wake-up it replaced, if any, or
/// `Err(())` when the offer was not kept.
pub(crate) fn offer<W>(
    pending: &mut Option<Wake<W>>,
    last_end: Option<u64>,
    at: u64,
    what: W,
) -> Result<Option<Wake<W>>, ()> {
    if last_end.is_some_and(|end| at < end) {
        return Err(());
    }
    if pending.as_ref().is_some_and(|p| p.at <= at) {
        return Err(());
    }
    Ok(pending.replace(Wake { at, what }))
}

/// At a task's period ending at `end`: the wake-up that ended the wait
/// before it, taken from `pending`. One after `end` stays pending: it
/// belongs to the wait after this period.
pub(crate) fn take_before<W>(pending: &mut Option<Wake<W>>, end: u64) -> Option<Wake<W>> {
    if pending.as_ref().is_some_and(|p| p.at > end) {
        return None;
    }
    pending.take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_wake_up_after_the_last_period_wins() {
        let mut p: Option<Wake<u8>> = None;
        assert_eq!(offer(&mut p, Some(50), 40, 1), Err(()), "before the end");
        assert_eq!(offer(&mut p, Some(50), 90, 2), Ok(None));
        assert_eq!(offer(&mut p, Some(50), 95, 3), Err(()), "a later one");
        assert_eq!(
            offer(&mut p, Some(50), 70, 4),
            Ok(Some(Wake { at: 90, what: 2 }))
        );
        assert_eq!(p, Some(Wake { at: 70, what: 4 }));
        assert_eq!(offer(&mut None::<Wake<u8>>, None, 1, 5), Ok(None));
    }

    #[test]
    fn a_wake_up_after_the_period_waits_for_the_next_gap() {
        let mut p = Some(Wake { at: 100, what: () });
        assert_eq!(take_before(&mut p, 50), None);
        assert!(p.is_some(), "kept for the wait after the period");
        assert_eq!(take_before(&mut p, 130), Some(Wake { at: 100, what: () }));
        assert!(p.is_none());
    }

    #[test]
    fn stream_ends_name_the_peer_a_wake_up_reached() {
        let mut s = StreamEnds::default();
        *s.ends(7) = (Some(1), None);
        let io = |reads, writes, woke_peer| StreamIo {
            stream: 7,
            reads,
            writes,
            woke_peer,
        };
        assert_eq!(
            s.woken_by(2, &io(3, 0, true)),
            Some(1),
            "the reader woke the writer"
        );
        assert_eq!(s.ends(7).1, Some(2));
        assert_eq!(s.woken_by(1, &io(0, 2, true)), Some(2));
        assert_eq!(s.woken_by(1, &io(0, 2, false)), None);
        assert_eq!(s.woken_by(2, &io(0, 0, false)), None);
    }
}
