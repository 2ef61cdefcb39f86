//! Handing a task its stream ends at spawn (`rill::spawn_with`), so that the
//! runtime knows who holds each end before it is first used: a deadlock
//! between tasks that each wait before their first write is then reported
//! with its waiting cycle. A task added before the run
//! (`Runtime::spawn_with`) also tells the run which streams it holds
//! ([`collect_handed`]): the adaptive mapping cuts that graph into blocks
//! (`cut.rs`).

use std::cell::RefCell;

use super::{PollSet, Reader, Writer};
use crate::vocab::{Side, TaskId};

thread_local! {
    /// The ends handed over while [`collect_handed`] runs on this thread:
    /// the stream's id and the side. `None` otherwise, so that a
    /// `rill::spawn_with` inside a run records nothing.
    static HANDED: RefCell<Option<Vec<(u64, Side)>>> = const { RefCell::new(None) };
}

/// Runs `hold` (an [`Ends::hold`]) and returns the stream ends it recorded,
/// in the order it recorded them: every [`Reader`] and [`Writer`] whose
/// `hold` it called, a [`PollSet`]'s readers included. A program's own
/// `Ends` that does not hand its streams' ends to theirs records nothing.
pub(crate) fn collect_handed(hold: impl FnOnce()) -> Vec<(u64, Side)> {
    /// Puts back what was there (`None` but inside a nested call), also
    /// when `hold` unwinds.
    struct Restore(Option<Vec<(u64, Side)>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            let _ = HANDED.try_with(|h| *h.borrow_mut() = prev);
        }
    }
    let restore = Restore(HANDED.with(|h| h.borrow_mut().replace(Vec::new())));
    hold();
    let got = HANDED.with(|h| h.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    got
}

/// Records end `side` of stream `id` for [`collect_handed`], when it runs.
fn note_handed(id: u64, side: Side) {
    HANDED.with(|h| {
        if let Some(v) = h.borrow_mut().as_mut() {
            v.push((id, side));
        }
    });
}

/// Stream ends handed to a task when it is spawned: a [`Reader`], a
/// [`Writer`], a [`PollSet`], or tuples, arrays, `Vec`s, `Option`s and
/// `Box`es of them.
pub trait Ends: Send + 'static {
    /// Records `task` as the holder of every end here.
    fn hold(&self, task: TaskId);
}

impl<T: Send + 'static> Ends for Reader<T> {
    fn hold(&self, task: TaskId) {
        self.core.reader.hold(task);
        note_handed(self.core.id, Side::Reader);
    }
}

impl<T: Send + 'static> Ends for Writer<T> {
    fn hold(&self, task: TaskId) {
        self.core.writer.hold(task);
        note_handed(self.core.id, Side::Writer);
    }
}

impl<T: Send + 'static> Ends for PollSet<T> {
    fn hold(&self, task: TaskId) {
        self.readers().iter().for_each(|r| r.hold(task));
    }
}

impl Ends for () {
    fn hold(&self, _: TaskId) {}
}

impl<E: Ends> Ends for Option<E> {
    fn hold(&self, task: TaskId) {
        if let Some(e) = self {
            e.hold(task);
        }
    }
}

impl<E: Ends> Ends for Box<E> {
    fn hold(&self, task: TaskId) {
        (**self).hold(task);
    }
}

impl<E: Ends> Ends for Vec<E> {
    fn hold(&self, task: TaskId) {
        self.iter().for_each(|e| e.hold(task));
    }
}

impl<E: Ends, const N: usize> Ends for [E; N] {
    fn hold(&self, task: TaskId) {
        self.iter().for_each(|e| e.hold(task));
    }
}

macro_rules! tuple_ends {
    ($($name:ident),+) => {
        impl<$($name: Ends),+> Ends for ($($name,)+) {
            #[allow(non_snake_case)]
            fn hold(&self, task: TaskId) {
                let ($($name,)+) = self;
                $($name.hold(task);)+
            }
        }
    };
}

tuple_ends!(A);
tuple_ends!(A, B);
tuple_ends!(A, B, C);
tuple_ends!(A, B, C, D);
tuple_ends!(A, B, C, D, E);
tuple_ends!(A, B, C, D, E, F);
tuple_ends!(A, B, C, D, E, F, G);
tuple_ends!(A, B, C, D, E, F, G, H);
