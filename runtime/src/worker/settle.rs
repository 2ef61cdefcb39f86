//! Finding stream wake-ups that a peer on another core missed (the liveness
//! rule of `README.md` beside this file).
//!
//! A stream's fast path has only a compiler fence between its store and its
//! load of the peer's wait slot (`barrier.rs`), so a peer on another core can
//! miss a registration. Every registration that could have been missed is
//! noted in its worker's *open window* (once per stream side and window).
//! The worker *seals* the open window at a scheduling point; the run's
//! ticker (`ticker.rs`) then runs the heavy barrier (membarrier) and marks
//! the sealed window *covered*; at its next scheduling point the worker
//! re-checks every side of the covered window and wakes the tasks whose
//! condition already holds. A busy worker gets there within two ticks; an
//! idle one settles everything itself before it parks. Meanwhile the worker
//! also looks at the sealed window once without a barrier, and an idle
//! worker looks at all its noted sides while it spins: on x86 a store leaves
//! its core's store buffer within nanoseconds, so these cheap looks find
//! nearly every miss long before the barrier makes it certain.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_utils::CachePadded;

use crate::sync::{fence, AtomicU64};
use crate::vocab::{Recheck, Side};

/// A noted stream side: what to re-check, and which side.
type Noted = (Arc<dyn Recheck>, Side);

/// Stream sides whose registration a peer on another core may have missed,
/// noted since the worker last sealed its window.
pub(crate) struct PendingList {
    pub(crate) items: Vec<Noted>,
    /// Identifies the worker's open window; a stream side whose mark equals
    /// it is in `items` already.
    pub(crate) mark: u64,
}

impl PendingList {
    fn new(worker: usize) -> Self {
        PendingList {
            items: Vec::new(),
            mark: ((worker as u64 + 1) << 40) | 1,
        }
    }
}

/// Notes a stream side in the worker's open window, once per window (the
/// side's mark says whether this window noted it already; another worker
/// overwriting the mark only costs a duplicate entry).
pub(crate) fn note_pending<T: Recheck + 'static>(
    list: &mut PendingList,
    core: &Arc<T>,
    side: Side,
) {
    let m = core.pend_mark(side);
    if m.load(Ordering::Relaxed) == list.mark {
        return;
    }
    m.store(list.mark, Ordering::Relaxed);
    list.items.push((core.clone(), side));
}

/// The words a worker and the ticker exchange about its sealed window.
pub(crate) struct SettleWords {
    /// The generation of the worker's last sealed window. Written by the
    /// worker (Release, after the window's registrations), read by the
    /// ticker (Acquire) before its barrier.
    sealed: AtomicU64,
    /// The last generation a barrier covered. Written by the ticker
    /// (Release, after the barrier returned), read by the worker (Acquire)
    /// before it re-checks.
    covered: AtomicU64,
}

impl SettleWords {
    pub(crate) fn new() -> CachePadded<Self> {
        CachePadded::new(SettleWords {
            sealed: AtomicU64::new(0),
            covered: AtomicU64::new(0),
        })
    }

    /// The ticker's view: the sealed generation when a barrier is still
    /// owed to it.
    pub(crate) fn owed(&self) -> Option<u64> {
        // Acquire: pairs with the worker's Release in `seal`; the barrier that
        // follows therefore begins after every registration of the window.
        let s = self.sealed.load(Ordering::Acquire);
        (s != self.covered.load(Ordering::Relaxed)).then_some(s)
    }

    /// The ticker: a barrier that began after the worker sealed `generation`
    /// has returned.
    pub(crate) fn cover(&self, generation: u64) {
        // Release: pairs with the worker's Acquire in `Settle::step`, so that
        // its re-checks come after the barrier.
        self.covered.store(generation, Ordering::Release);
    }
}

/// A worker's windows (touched by its thread only).
pub(crate) struct Settle {
    pub(crate) open: PendingList,
    sealed: Vec<Noted>,
    /// An empty list with room, handed back after a covered window's
    /// re-check ([`recycle`](Self::recycle)): the next open window starts
    /// in it, where a fresh one grew from nothing by reallocations.
    spare: Vec<Noted>,
    generation: u64,
    /// Whether the sealed window got its one look without a barrier.
    looked: bool,
}

impl Settle {
    pub(crate) fn new(worker: usize) -> Self {
        Settle {
            open: PendingList::new(worker),
            sealed: Vec::new(),
            spare: Vec::new(),
            generation: 0,
            looked: false,
        }
    }

    /// Whether anything is noted.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.open.items.is_empty() && self.sealed.is_empty()
    }

    /// A scheduling point: take the sealed window if a barrier covered it
    /// (else have `look` re-check it once without one), and seal the open
    /// window when nothing is sealed; `wake_ticker` runs after a seal.
    /// Returns the covered sides, for the caller to re-check after this
    /// borrow ends (dropping them may drop the last reference to a stream,
    /// and with it messages whose destructors run user code).
    pub(crate) fn step(
        &mut self,
        words: &SettleWords,
        look: impl FnOnce(&[Noted]),
        wake_ticker: impl FnOnce(),
    ) -> Vec<Noted> {
        let mut done = Vec::new();
        if !self.sealed.is_empty() {
            // Acquire: pairs with the ticker's Release in `cover`.
            if words.covered.load(Ordering::Acquire) == self.generation {
                done = std::mem::take(&mut self.sealed);
            } else if !self.looked {
                self.looked = true;
                look(&self.sealed);
            }
        }
        if self.sealed.is_empty() && !self.open.items.is_empty() {
            self.sealed = std::mem::replace(&mut self.open.items, std::mem::take(&mut self.spare));
            self.open.mark += 1;
            self.generation += 1;
            self.looked = false;
            // Release: pairs with the ticker's Acquire in `owed`, so its
            // barrier begins after every registration of the window.
            words.sealed.store(self.generation, Ordering::Release);
            // Store-load barrier between publishing the seal and loading the
            // ticker's sleep flag in `wake_ticker`; pairs with the ticker's
            // fence between setting that flag and looking for seals
            // (`ticker.rs`). One of the two sees the other.
            fence(Ordering::SeqCst);
            wake_ticker();
        }
        done
    }

    /// Takes back a list that [`step`](Self::step) returned, emptied by the
    /// caller (outside this borrow, since dropping its entries may run user
    /// code), for a later window.
    pub(crate) fn recycle(&mut self, list: Vec<Noted>) {
        debug_assert!(list.is_empty());
        if list.capacity() > self.spare.capacity() {
            self.spare = list;
        }
    }

    /// Everything noted, for the settle before parking, which runs its own
    /// barrier; the windows start afresh.
    pub(crate) fn take_all(&mut self) -> Vec<Noted> {
        let mut all = std::mem::take(&mut self.sealed);
        all.append(&mut self.open.items);
        self.open.mark += 1;
        self.looked = false;
        all
    }

    /// Every noted side, for a look without a barrier.
    pub(crate) fn noted(&self) -> impl Iterator<Item = &Noted> {
        self.sealed.iter().chain(self.open.items.iter())
    }
}

/// Re-checks each side (waking the tasks whose condition holds).
pub(crate) fn recheck_all<'a>(sides: impl IntoIterator<Item = &'a Noted>) {
    for (core, side) in sides {
        core.recheck(*side);
    }
}
