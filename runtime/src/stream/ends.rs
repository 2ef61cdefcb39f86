//! Handing a task its stream ends at spawn (`rill::spawn_with`), so that the
//! runtime knows who holds each end before it is first used: a deadlock
//! between tasks that each wait before their first write is then reported
//! with its waiting cycle.

use super::{PollSet, Reader, Writer};
use crate::vocab::TaskId;

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
    }
}

impl<T: Send + 'static> Ends for Writer<T> {
    fn hold(&self, task: TaskId) {
        self.core.writer.hold(task);
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
