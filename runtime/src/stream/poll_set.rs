//! A set of readers read as one: the merge a collector task needs, without
//! the bookkeeping `poll` leaves to its caller (dropping readers whose
//! writer has ended, remembering which input a message came from).

use super::poll::poll;
use super::{Reader, TryReadError};

/// Readers merged into one: its iterator's `next` returns a message from
/// whichever reader has one first, with the key that reader was given when
/// it was added, and drops readers that have ended. Fair like
/// [`poll`](fn@poll): a busy reader does not starve the others.
///
/// ```
/// let mut rt = rill::Runtime::builder().workers(2).build().unwrap();
/// let (total, _stats) = rt.run_main(|| {
///     let mut set = rill::PollSet::new();
///     for k in 0..3u64 {
///         let (mut w, r) = rill::stream::<u64>(4);
///         set.push(r);
///         rill::spawn(format!("src/{k}"), move || {
///             for i in 0..10 {
///                 w.write(k * 100 + i).unwrap();
///             }
///         });
///     }
///     let mut total = 0;
///     while let Some((key, v)) = set.next() {
///         assert_eq!(v / 100, key as u64, "the key names the input");
///         total += v;
///     }
///     total
/// }).unwrap();
/// assert_eq!(total, (0..3).map(|k| k * 1000 + 45).sum::<u64>());
/// ```
pub struct PollSet<T: Send + 'static> {
    readers: Vec<Reader<T>>,
    keys: Vec<usize>,
    next_key: usize,
}

impl<T: Send + 'static> Default for PollSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + 'static> PollSet<T> {
    /// An empty set.
    pub fn new() -> Self {
        PollSet {
            readers: Vec::new(),
            keys: Vec::new(),
            next_key: 0,
        }
    }

    /// Adds a reader; returns its key (0, 1, 2, ... in the order added).
    pub fn push(&mut self, r: Reader<T>) -> usize {
        let key = self.next_key;
        self.next_key += 1;
        self.readers.push(r);
        self.keys.push(key);
        key
    }

    /// Readers whose writer has not ended yet (or that hold messages).
    pub fn len(&self) -> usize {
        self.readers.len()
    }

    /// Takes the readers out of the set.
    pub(crate) fn into_readers(self) -> Vec<Reader<T>> {
        self.readers
    }

    /// The readers still in the set.
    pub(crate) fn readers(&self) -> &[Reader<T>] {
        &self.readers
    }

    /// Whether every reader has ended and was dropped.
    pub fn is_empty(&self) -> bool {
        self.readers.is_empty()
    }
}

impl<T: Send + 'static> Iterator for PollSet<T> {
    type Item = (usize, T);

    /// The next message from any reader, with its reader's key, waiting
    /// (blocked-by-any) while none has one. `None` once every reader has
    /// ended, or while the run that owned the task is unwinding it.
    fn next(&mut self) -> Option<(usize, T)> {
        loop {
            let i = poll(&mut self.readers)?;
            match self.readers[i].try_read() {
                Ok(v) => return Some((self.keys[i], v)),
                Err(TryReadError::Closed) => {
                    // Keep the order of the others: `poll` resumes its fair
                    // scan from where it left off.
                    self.readers.remove(i);
                    self.keys.remove(i);
                }
                // `poll` saw a message or the end; a reader's messages only
                // go through this set, so neither can have gone away.
                Err(TryReadError::Empty) => {}
            }
        }
    }
}
