//! One stream network over several processes: SPMD ranks (under `mpirun`,
//! with the `mpi` feature; or threads of one process, [`Loopback`], for
//! tests), each running one rill runtime, the streams between ranks carried
//! by a bridge thread per rank. The protocols are in this module's README.
//!
//! | module | what |
//! | --- | --- |
//! | `wire` | [`Wire`]: what a message must be to cross ranks |
//! | `frame` | the bridge's records and frames |
//! | `transport` | [`Transport`]: what carries frames; [`Loopback`] |
//! | `endpoint` | the bridge's halves of cross-rank streams, type-erased |
//! | `bridge` | the progress loop: flow control, termination, clocks |
//! | `place` | [`Placement`]: tasks over ranks and workers |
//! | `net` | [`Net`]: the network API |
//! | `mpi` | `World`: MPI as a transport (feature `mpi`) |
//!
//! Imports go down the table's order: `net` uses everything above it,
//! `bridge` the first four, `endpoint` only `wire` and the streams.

mod bridge;
mod endpoint;
mod frame;
#[cfg(feature = "mpi")]
mod mpi;
mod net;
mod place;
mod transport;
mod wire;

use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};

pub use bridge::BridgeStats;
#[cfg(feature = "mpi")]
pub use mpi::World;
pub use net::{Bridging, Net, NetEnds, NetGraph, NetStats};
pub use place::{Placement, RankTable};
pub use transport::{Loopback, Transport};
pub use wire::{Wire, WireError};

use crate::builder::Builder;

/// Why a network could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The runtime's configuration is not valid.
    #[error(transparent)]
    Config(crate::ConfigError),
    /// The placement does not fit the run.
    #[error("placement: {0}")]
    Placement(String),
    /// The network is not one every rank can build the same way.
    #[error("network: {0}")]
    Build(String),
    /// This rank's run failed.
    #[error("rank {rank}: {source}")]
    Run {
        /// This rank.
        rank: usize,
        /// The local run's error.
        source: crate::RunError,
    },
    /// Every task on every rank waits and no message is on its way: the
    /// run can never end. Each rank reports its own blocked tasks.
    #[error("deadlock across ranks (every task of every rank is blocked and no message is in flight); on rank {rank}, {part}")]
    Deadlock {
        /// This rank.
        rank: usize,
        /// This rank's blocked tasks, each with the holder (and rank) of
        /// what it waits on.
        part: String,
    },
    /// Another rank's run failed, and so this rank's ended.
    #[error("the run ended on every rank because {message}")]
    Remote {
        /// The rank that failed.
        rank: usize,
        /// Its error, naming the rank.
        message: String,
    },
    /// The transport failed, or a rank sent what this rank cannot read.
    #[error("transport: {0}")]
    Transport(String),
}

/// What carries this rank's bridge: where its thread runs.
pub(crate) enum Carrier {
    Loop(Arc<Mutex<Loopback>>, usize, usize),
    #[cfg(feature = "mpi")]
    Mpi(mpi::Handle),
}

impl Carrier {
    fn rank_size(&self) -> (usize, usize) {
        match self {
            Carrier::Loop(_, r, n) => (*r, *n),
            #[cfg(feature = "mpi")]
            Carrier::Mpi(h) => (h.rank, h.size),
        }
    }

    /// Ranks on this machine: every rank of a loopback run; under mpirun
    /// what the launcher says (`OMPI_COMM_WORLD_LOCAL_SIZE`, or MPICH's
    /// `MPI_LOCALNRANKS`), else 1.
    fn ranks_here(&self) -> usize {
        match self {
            Carrier::Loop(_, _, n) => *n,
            #[cfg(feature = "mpi")]
            Carrier::Mpi(_) => ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
                .iter()
                .find_map(|v| std::env::var(v).ok()?.parse().ok())
                .unwrap_or(1),
        }
    }

    /// The cores this rank may use, and how many of this machine's ranks
    /// share them: a rank that the launcher bound to some of the machine's
    /// cores (mpirun binds each rank to a core of its own by default with
    /// few ranks) has them to itself; an unbound one shares the machine's
    /// with every rank on it.
    fn cores_and_sharers(&self) -> (usize, usize) {
        let (mine, machine) = cores_mine_and_online();
        cores_shared(mine, machine, self.ranks_here())
    }

    /// Under mpirun a rank whose tasks outlive an abort has no one else to
    /// end it; ranks that are threads of one test must not exit the process.
    fn exits_when_stuck(&self) -> bool {
        match self {
            Carrier::Loop(..) => false,
            #[cfg(feature = "mpi")]
            Carrier::Mpi(_) => true,
        }
    }

    /// Whether idle workers may carry the bridge's traffic themselves
    /// (`bridge::Pump`): the transport may be used from any thread, one at
    /// a time (MPI gave `MPI_THREAD_SERIALIZED` or more), and
    /// `RILL_WORKERS_CARRY` is not `0` (which leaves it to the bridge's
    /// thread alone, to measure one against the other).
    fn workers_may_carry(&self) -> bool {
        let allowed = match self {
            Carrier::Loop(..) => true,
            #[cfg(feature = "mpi")]
            Carrier::Mpi(h) => h.serialized,
        };
        allowed && std::env::var("RILL_WORKERS_CARRY").map_or(true, |v| v.trim() != "0")
    }

    /// Starts the bridge on the transport's thread.
    fn start(&self, job: bridge::Job) -> Receiver<bridge::Outcome> {
        let (tx, rx) = channel();
        match self {
            Carrier::Loop(t, rank, _) => {
                let t = t.clone();
                std::thread::Builder::new()
                    .name(format!("rill-bridge-{rank}"))
                    .spawn(move || {
                        let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = tx.send(bridge::serve(&mut *t, job));
                    })
                    .expect("a thread for the bridge");
            }
            #[cfg(feature = "mpi")]
            Carrier::Mpi(h) => h.start(job, tx),
        }
        rx
    }
}

impl Net {
    /// A network over a [`Loopback`] rank: ranks as threads of one
    /// process (build one `Net` per rank, each on its own thread).
    pub fn loopback(t: Loopback, builder: Builder) -> Result<Net, DistError> {
        let (rank, size) = (t.rank(), t.size());
        Net::new(Carrier::Loop(Arc::new(Mutex::new(t)), rank, size), builder)
    }
}

/// A rank's cores and the ranks that share them, from the cores in its
/// mask (`mine`), the machine's (`machine`) and the ranks on the machine.
fn cores_shared(mine: usize, machine: usize, ranks_here: usize) -> (usize, usize) {
    if mine < machine {
        (mine, 1)
    } else {
        (mine, ranks_here.max(1))
    }
}

/// The cores in this thread's affinity mask, and the machine's online
/// cores (a quota from a container's cgroup limits neither, so a mask
/// smaller than the machine means the process was bound).
fn cores_mine_and_online() -> (usize, usize) {
    // SAFETY: sysconf reads a system value; it takes no pointers.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let online = usize::try_from(online).unwrap_or(1).max(1);
    // SAFETY: `set` is a plain bit set that sched_getaffinity fills for
    // the calling thread (pid 0); its size is the one passed.
    let mine = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            usize::try_from(libc::CPU_COUNT(&set)).unwrap_or(online)
        } else {
            online
        }
    };
    (mine.clamp(1, online), online)
}

#[cfg(test)]
mod tests {
    use super::cores_shared;

    #[test]
    fn a_bound_rank_has_its_cores_to_itself_an_unbound_one_shares_the_machine() {
        // mpirun's default with 2 ranks on 2 cores: each bound to one.
        assert_eq!(cores_shared(1, 2, 2), (1, 1));
        // Oversubscribed (3 ranks on 2 cores): mpirun does not bind.
        assert_eq!(cores_shared(2, 2, 3), (2, 3));
        // Bound to a socket of 8 of 16 cores.
        assert_eq!(cores_shared(8, 16, 2), (8, 1));
        assert_eq!(cores_shared(4, 4, 0), (4, 1));
    }
}
