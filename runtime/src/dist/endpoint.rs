//! The bridge's halves of cross-rank streams, with their message type
//! erased: [`OutEnd`] reads what a task of this rank writes, [`InEnd`]
//! writes what a task of another rank wrote.

use super::wire::{Wire, WireError};
use crate::stream::{Reader, TryReadError, TryWriteError, Writer};

/// The reading half, on the writer's rank. Messages are encoded when they
/// are sent and stay in the local stream until the far reader has consumed
/// them (`release`), so the stream's capacity bounds every message between
/// the writing task and the reading one.
pub(crate) trait OutEnd: Send {
    /// Encodes the messages from the `from`-th unread one on, at most
    /// `max` of them or until `out` has grown by `max_bytes` (at least one
    /// message goes when one is there). Returns how many were encoded, and
    /// whether the writer is gone with nothing after them.
    fn encode_from(
        &mut self,
        from: usize,
        max: usize,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> (usize, bool);

    /// Takes (and drops) the `n` oldest messages: the far reader has them.
    fn release(&mut self, n: usize);
}

/// The writing half, on the reader's rank.
pub(crate) trait InEnd: Send {
    /// Decodes `count` messages from `bytes` and writes them to the local
    /// stream. Ok(false) when the local reader is gone (the messages are
    /// dropped).
    fn push(&mut self, count: u32, bytes: &[u8]) -> Result<bool, PushError>;

    /// Messages the local reader has taken so far.
    fn consumed(&self) -> u64;

    /// Whether the local reader is gone.
    fn reader_gone(&self) -> bool;
}

/// Why a batch could not be written on the reader's rank.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PushError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error(
        "more messages arrived than the stream has room for (the ranks disagree on its capacity)"
    )]
    Overrun,
    #[error("a batch of {0} messages held bytes left over (the ranks disagree on its type)")]
    Trailing(u32),
}

impl<T: Wire> OutEnd for Reader<T> {
    fn encode_from(
        &mut self,
        from: usize,
        max: usize,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> (usize, bool) {
        let start = out.len();
        let mut n = 0;
        while n < max && (n == 0 || out.len() - start < max_bytes) {
            match self.peek(from + n) {
                Ok(v) => v.encode(out),
                Err(TryReadError::Empty) => return (n, false),
                Err(TryReadError::Closed) => return (n, true),
            }
            n += 1;
        }
        (n, false)
    }

    fn release(&mut self, n: usize) {
        for _ in 0..n {
            // Every released message was peeked, so it is there.
            let _ = self.try_read();
        }
    }
}

impl<T: Wire> InEnd for Writer<T> {
    fn push(&mut self, count: u32, mut bytes: &[u8]) -> Result<bool, PushError> {
        let mut alive = true;
        for _ in 0..count {
            let v = T::decode(&mut bytes)?;
            if !alive {
                continue;
            }
            match self.try_write(v) {
                Ok(()) => {}
                Err(TryWriteError::Closed(_)) => alive = false,
                Err(TryWriteError::Full(_)) => return Err(PushError::Overrun),
            }
        }
        if !bytes.is_empty() {
            return Err(PushError::Trailing(count));
        }
        Ok(alive)
    }

    fn consumed(&self) -> u64 {
        Writer::consumed(self)
    }

    fn reader_gone(&self) -> bool {
        self.is_closed()
    }
}
