//! What carries frames between ranks: [`Transport`]. MPI is one (`mpi.rs`,
//! with the `mpi` feature); [`Loopback`] is another, ranks as threads of
//! one process, so that the bridge's flow control and termination are
//! tested without MPI.

use std::sync::mpsc::{channel, Receiver, Sender};

/// Frames between the ranks of one run: reliable, and in order between any
/// two ranks (MPI's non-overtaking rule). Only the bridge's thread uses it.
pub trait Transport {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;

    /// How many ranks run the network.
    fn size(&self) -> usize;

    /// Starts sending `frame` to rank `to`; never waits for the receiver.
    fn send(&mut self, to: usize, frame: Vec<u8>);

    /// A frame that has arrived, with its sender, if any.
    fn try_recv(&mut self) -> Option<(usize, Vec<u8>)>;

    /// Completes the sends that have finished; true when none is left.
    fn sends_done(&mut self) -> bool;
}

/// Ranks as threads of one process: [`Loopback::ranks`] makes one
/// transport per rank, connected by channels.
pub struct Loopback {
    rank: usize,
    to: Vec<Sender<(usize, Vec<u8>)>>,
    from: Receiver<(usize, Vec<u8>)>,
}

impl Loopback {
    /// `n` connected transports, rank `i` at index `i`.
    pub fn ranks(n: usize) -> Vec<Loopback> {
        let (tx, rx): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
        rx.into_iter()
            .enumerate()
            .map(|(rank, from)| Loopback {
                rank,
                to: tx.clone(),
                from,
            })
            .collect()
    }
}

impl Transport for Loopback {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn send(&mut self, to: usize, frame: Vec<u8>) {
        // A rank whose thread has gone drops what is sent to it, as a dead
        // process would.
        let _ = self.to[to].send((self.rank, frame));
    }

    fn try_recv(&mut self) -> Option<(usize, Vec<u8>)> {
        self.from.try_recv().ok()
    }

    fn sends_done(&mut self) -> bool {
        true
    }
}
