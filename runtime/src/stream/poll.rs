//! Waiting on several readers at once (LPEL's stream poll; blocked-by-any).

use std::sync::atomic::Ordering;

use super::{nonzero, Reader, Side};
use crate::context;
use crate::task::{BlockedOn, TaskId};

/// Waits until one of `readers` has a message or has ended, and returns its
/// index; `None` only for an empty slice. Scans start after the last reader
/// that was returned, so a busy stream does not starve the others.
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
        // As in `Reader::read_empty`: spin a little first while the worker
        // has nothing else to run.
        let ready = |rs: &[Reader<T>]| {
            rs.iter()
                .any(|r| r.core.has_data(r.head) || r.core.back.wslot.is_closed())
        };
        if let Some(w) = context::spin_worker() {
            let mon = w.is_monitored();
            if mon {
                for r in readers.iter() {
                    r.note_owner();
                }
                crate::hooks::spin_begin(&BlockedOn::Any {
                    streams: blocked_streams(readers),
                });
            }
            let got = context::spin_on(w, || ready(readers));
            if mon {
                crate::hooks::spin_end();
            }
            if got {
                continue;
            }
        }
        for r in readers.iter() {
            r.note_owner();
        }
        let streams = blocked_streams(readers);
        let slots: Vec<&super::slot::Slot> = readers.iter().map(|r| &r.core.fwd.rslot).collect();
        let heads: Vec<usize> = readers.iter().map(|r| r.head).collect();
        context::block(
            &slots,
            BlockedOn::Any { streams },
            || {
                readers
                    .iter()
                    .zip(&heads)
                    .any(|(r, &h)| r.core.has_data(h) || r.core.back.wslot.is_closed())
            },
            |pending| {
                for r in readers.iter() {
                    context::note_pending(pending, &r.core, Side::Reader);
                }
            },
        );
    }
}

/// The streams a poll waits on and their writers, for `BlockedOn::Any`.
fn blocked_streams<T: Send + 'static>(readers: &[Reader<T>]) -> Vec<(u64, Option<TaskId>)> {
    readers
        .iter()
        .map(|r| {
            (
                r.core.id,
                nonzero(r.core.writer_task.load(Ordering::Relaxed)),
            )
        })
        .collect()
}
