//! Ops mode (`message`): a task's entries, kept from one of its periods to
//! the next, so that an end lists itself once per task that uses it, not
//! once per dispatch.
//!
//! An end listed by a task has the task's *base* as its stamp (with the
//! run's kind in the low bits) and its entry's index. At each of the task's
//! dispatches the worker loads the task's entries into the thread's recorder
//! ([`load`](TaskEntries::load)) and the recorder's epoch is the base, so
//! those ends match the ops stamp from their first message on; at the
//! period's end it saves the entries listed since
//! ([`save`](TaskEntries::save)). The record lists only the entries that
//! moved a message, woke their peer or are the stream the task blocked on,
//! in the order the period's ops need ([`order`]).
//!
//! An end that goes to another task lists itself there (its stamp is not
//! that task's base); if it comes back, it finds its old entry (an entry is
//! a stream and a side, [`Recorder::add_entry`]). A task whose entries grow
//! past [`MAX_IO`] takes a new base and starts again empty, which unlists
//! all its ends at once: the table never holds more than [`MAX_IO`] entries,
//! stale ones included.
//!
//! Who touches what: only the thread of the worker that runs the task (the
//! task's code, and the worker between its periods), as for the bindings of
//! count mode: a task that ran never changes workers (`scheduler.rs`), and
//! the thread that drops the tasks left at a run's end does so after every
//! worker has stopped.

use std::cell::{Cell, UnsafeCell};

use rill_log::{Op, StreamIo};

use super::period::{new_tag, Recorder, MAX_IO};

/// A task's ops-mode entries (see the module documentation).
#[derive(Default)]
pub(crate) struct TaskEntries {
    /// The stamp of the ends listed here, without the kind bits; 0 before
    /// the task's first ops-mode period.
    base: Cell<u64>,
    /// Bit i: entry i is a writing end.
    writes: Cell<u32>,
    /// Stream id per entry, at most [`MAX_IO`].
    ids: UnsafeCell<Vec<u64>>,
}

impl TaskEntries {
    /// Loads the entries into `r` for a period of the task; returns the base
    /// (the period's epoch).
    #[inline]
    pub(crate) fn load(&self, r: &Recorder) -> u64 {
        let mut base = self.base.get();
        if base == 0 {
            base = new_tag();
            self.base.set(base);
        }
        // SAFETY: only one thread touches the entries at a time (see the
        // module documentation), and the reference does not leave here.
        let ids = unsafe { &*self.ids.get() };
        r.load_entries(ids, self.writes.get());
        base
    }

    /// Saves the entries `r` listed in the task's period that just ended
    /// (before the recorder clears them). A task whose period listed more
    /// than [`MAX_IO`] starts again, under a new base.
    #[inline]
    pub(crate) fn save(&self, r: &Recorder) {
        // SAFETY: as in `load`.
        let ids = unsafe { &mut *self.ids.get() };
        let n = r.io_len();
        if n == ids.len() {
            return;
        }
        if n > MAX_IO {
            ids.clear();
            self.writes.set(0);
            self.base.set(new_tag());
            return;
        }
        r.save_entries(ids);
        self.writes.set(r.writes());
    }
}

/// Which of a period's entries its record lists, in which order: `lead`
/// first (the entry whose run the ops begin with, when that is not the
/// table's order), then those of `rest` (a bit per entry) in entry order.
///
/// The lead is kept as an index, [`NO_LEAD`] for none, not as the
/// `Option<usize>` that [`order`] is given: the payload of a `None` is
/// uninitialised, and an optimised build computed with it before testing
/// the discriminant (in `WorkerLog::period_entries`: a `rol %cl` by the
/// payload, and the lead's compare in `position` as `sete`, each masked by
/// the discriminant afterwards). Memcheck, exact about defined bits in
/// `and`, `or` and `cmov`, passes that, but reports any branch that LLVM
/// puts on the payload before the discriminant. Here the payload is read
/// once, in [`order`], and every bit of the index is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    lead: u32,
    rest: u32,
}

/// [`Order`]'s lead when there is none: no entry's index, and its
/// [`bit`] is 0.
const NO_LEAD: u32 = u32::MAX;

/// The bit of `i`, an entry below [`MAX_IO`] or [`NO_LEAD`], in a `u32` of
/// entries: one shift, no compare (a shift of a `u64` takes the low six
/// bits of its amount, 63 for `NO_LEAD`, whose bit falls outside the `u32`).
#[inline(always)]
fn bit(i: u32) -> u32 {
    const _: () = assert!(MAX_IO <= 32 && NO_LEAD & 63 >= 32);
    (1u64 << (i & 63)) as u32
}

impl Order {
    /// Entries the record lists.
    #[inline]
    pub(crate) fn len(self) -> usize {
        usize::from(self.lead != NO_LEAD) + self.rest.count_ones() as usize
    }

    /// The position in the record of entry `i`, which it lists.
    #[inline]
    pub(crate) fn position(self, i: usize) -> usize {
        if self.lead as usize == i {
            0
        } else {
            usize::from(self.lead != NO_LEAD)
                + (self.rest & ((1u32 << i) - 1)).count_ones() as usize
        }
    }

    /// The entries in record order, as an iterator of entry indices.
    #[inline]
    pub(crate) fn entries(self) -> impl Iterator<Item = usize> {
        let mut rest = self.rest;
        let lead = (self.lead != NO_LEAD).then_some(self.lead as usize);
        lead.into_iter().chain(std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let i = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                i
            })
        }))
    }
}

/// The record order of a period's entries: `lead` (see [`Order`]; an entry
/// below [`MAX_IO`]) and the others of `keep` (a bit per entry below
/// [`MAX_IO`]: those that moved a message, woke their peer or are the
/// blocked stream's).
#[inline]
pub(crate) fn order(lead: Option<usize>, keep: u32) -> Order {
    // The one read of the payload, masked by the discriminant (`sbb` and
    // `or`): from here on every bit is defined.
    let lead = match lead {
        Some(l) => {
            debug_assert!(l < MAX_IO, "lead {l}");
            l as u32
        }
        None => NO_LEAD,
    };
    Order {
        lead,
        rest: keep & !bit(lead),
    }
}

/// The listed path's record order: entries in the order of their first op,
/// then the other entries that woke their peer or are of `blocked`, the
/// stream the task blocked on (an entry listed in the table but idle in the
/// period is left out). Rewrites `io` in that order and the ops' indices to
/// match; `perm` is scratch.
pub(crate) fn renumber(
    io: &mut Vec<StreamIo>,
    ops: &mut [Op],
    blocked: Option<u64>,
    perm: &mut Vec<u32>,
    out: &mut Vec<StreamIo>,
) {
    const NONE: u32 = u32::MAX;
    perm.clear();
    perm.resize(io.len(), NONE);
    out.clear();
    let take = |i: usize, perm: &mut Vec<u32>, out: &mut Vec<StreamIo>| {
        if let (Some(p), Some(s)) = (perm.get_mut(i), io.get(i)) {
            if *p == NONE {
                *p = out.len() as u32;
                out.push(*s);
            }
        }
    };
    for op in ops.iter() {
        take(usize::from(op.io_index), perm, out);
    }
    let mut marked = false;
    for (i, s) in io.iter().enumerate() {
        let blocks = !marked && blocked == Some(s.stream);
        marked |= blocks;
        if s.woke_peer || blocks {
            take(i, perm, out);
        }
    }
    // The entries of ops come first, and ops index at most 65,536 entries,
    // so their new indices fit.
    for op in ops.iter_mut() {
        if let Some(&p) = perm.get(usize::from(op.io_index)) {
            op.io_index = p as u16;
        }
    }
    std::mem::swap(io, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_lists_the_lead_then_the_rest() {
        let o = order(Some(3), 0b1011);
        assert_eq!(o.entries().collect::<Vec<_>>(), [3, 0, 1]);
        assert_eq!(o.len(), 3);
        assert_eq!([3, 0, 1].map(|i| o.position(i)), [0, 1, 2]);
        let o = order(None, 0b1010);
        assert_eq!(o.entries().collect::<Vec<_>>(), [1, 3]);
        assert_eq!([1, 3].map(|i| o.position(i)), [0, 1]);
        let o = order(Some(0), 0b1);
        assert_eq!(o.entries().collect::<Vec<_>>(), [0]);
        assert_eq!(order(None, 0).len(), 0);
        let o = order(Some(31), u32::MAX);
        assert_eq!(o.len(), 32);
        assert_eq!(o.entries().take(3).collect::<Vec<_>>(), [31, 0, 1]);
        assert_eq!([31, 0, 30].map(|i| o.position(i)), [0, 1, 31]);
        assert_eq!(order(None, u32::MAX).len(), 32);
    }

    #[test]
    fn renumber_follows_first_use_and_drops_idle_entries() {
        let s = |stream, reads, writes, woke_peer| StreamIo {
            stream,
            reads,
            writes,
            woke_peer,
        };
        // Table: 10 (idle), 11 (written), 12 (read, first), 13 (woke only),
        // 14 (blocked on, idle).
        let mut io = vec![
            s(10, 0, 0, false),
            s(11, 0, 2, false),
            s(12, 3, 0, false),
            s(13, 0, 0, true),
            s(14, 0, 0, false),
        ];
        let mut ops = vec![
            Op::read(2, 3),
            Op::write(1, 1),
            Op::read(2, 1),
            Op::write(1, 1),
        ];
        let (mut perm, mut out) = (Vec::new(), Vec::new());
        renumber(&mut io, &mut ops, Some(14), &mut perm, &mut out);
        assert_eq!(
            io,
            [
                s(12, 3, 0, false),
                s(11, 0, 2, false),
                s(13, 0, 0, true),
                s(14, 0, 0, false)
            ]
        );
        assert_eq!(
            ops.iter().map(|o| o.io_index).collect::<Vec<_>>(),
            [0, 1, 0, 1]
        );
    }
}
