//! Waiting on several readers at once (LPEL's stream poll; blocked-by-any).

use super::holder::Peer;
use super::{block, nonzero, spin_first, Reader, Recheck, Side, Waits};
use crate::vocab::BlockedOn;

/// Waits until one of `readers` has a message or has ended, and returns its
/// index; `None` for an empty slice, or while the run that owned the task
/// is unwinding it (see [`forced_unwinding`](crate::forced_unwinding)). Scans start after the last reader
/// that was returned, so a busy stream does not starve the others.
#[track_caller]
pub fn poll<T: Send + 'static>(readers: &mut [Reader<T>]) -> Option<usize> {
    let n = readers.len();
    if n == 0 {
        return None;
    }
    let start = readers[0].poll_cursor % n;
    loop {
        for k in 0..n {
            let i = (start + k) % n;
            if readers[i].is_ready() {
                readers[0].poll_cursor = i + 1;
                return Some(i);
            }
        }
        // As in `Reader::read_empty`.
        let w = crate::context::worker();
        if spin_first(w, &mut Polled(&*readers), |p| {
            p.0.iter()
                .any(|r| r.core.has_data(r.head) || r.core.back.wslot.is_closed())
        }) {
            continue;
        }
        let on = Polled(&*readers).blocked_on();
        let slots: Vec<&super::slot::Slot> = readers.iter().map(|r| &r.core.fwd.rslot).collect();
        let heads: Vec<usize> = readers.iter().map(|r| r.head).collect();
        if !block::block(
            w,
            &slots,
            on,
            |me| {
                for r in readers.iter() {
                    r.core.reader.note_as(me, &r.core.back.wslot);
                }
            },
            |mine| {
                readers
                    .iter()
                    .fold(Peer::Inside, |p, r| p.or(r.core.writer.peer_of(mine)))
            },
            || {
                readers
                    .iter()
                    .zip(&heads)
                    .any(|(r, &h)| r.core.has_data(h) || r.core.back.wslot.is_closed())
            },
            || {
                for r in readers.iter() {
                    r.core.recheck(Side::Writer);
                }
            },
            |pending| {
                for r in readers.iter() {
                    crate::worker::note_pending(pending, &r.core, Side::Reader);
                }
            },
        ) {
            // The run is unwinding this task: nothing will arrive.
            return None;
        }
    }
}

/// A poll's readers, as one thing a task waits on.
struct Polled<'a, T: Send + 'static>(&'a [Reader<T>]);

impl<T: Send + 'static> Waits for Polled<'_, T> {
    // A poll moves no message itself, so it has no period bracket.
    fn enter(&mut self) {}
    fn leave(&self) {}
    fn note_owner(&self) {
        for r in self.0.iter() {
            r.note_owner();
        }
    }
    fn blocked_on(&self) -> BlockedOn {
        BlockedOn::Any {
            streams: self
                .0
                .iter()
                .map(|r| (r.core.id, nonzero(r.core.writer.task())))
                .collect(),
        }
    }
}
