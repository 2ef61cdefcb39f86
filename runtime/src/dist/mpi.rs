//! MPI as the bridge's transport: [`World`] starts one thread per process
//! that initialises MPI, serves each run's bridge, and finalises MPI when
//! the `World` is dropped. It asks for `MPI_THREAD_SERIALIZED`, so that the
//! run's idle workers may make the bridge's MPI calls too, one thread at a
//! time (`bridge::Pump`'s lock); with only `MPI_THREAD_FUNNELED` the
//! bridge's thread alone calls MPI.

use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;

use super::bridge::{self, Job, Outcome};
use super::transport::Transport;
use super::{Carrier, DistError, Net};
use crate::builder::Builder;

type Call = Box<dyn FnOnce(&SimpleCommunicator) + Send>;

enum Cmd {
    Serve(Job, Sender<Outcome>),
    Call(Call),
}

/// The MPI thread's address, kept by each [`Net`] of the process.
#[derive(Clone)]
pub(crate) struct Handle {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    /// MPI gave `MPI_THREAD_SERIALIZED` or more.
    pub(crate) serialized: bool,
    tx: Sender<Cmd>,
}

impl Handle {
    pub(crate) fn start(&self, job: Job, out: Sender<Outcome>) {
        // A send fails only when the MPI thread has gone; `out` is then
        // dropped and `Net::run` reports it.
        let _ = self.tx.send(Cmd::Serve(job, out));
    }
}

/// This process's place in an MPI job: its rank and the MPI thread.
/// Make one per process, first thing in `main` (MPI is initialised once per
/// process), then build each run's network with [`World::net`].
pub struct World {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl World {
    /// Initialises MPI on a thread of its own. Fails when MPI was already
    /// initialised in this process or cannot give `MPI_THREAD_FUNNELED`
    /// (it asks for `MPI_THREAD_SERIALIZED`, and uses it when given).
    pub fn init() -> Result<World, DistError> {
        let (tx, rx) = channel::<Cmd>();
        let (ready_tx, ready_rx) = channel::<Result<(usize, usize, bool), String>>();
        let thread = std::thread::Builder::new()
            .name("rill-mpi".into())
            .spawn(move || {
                let Some((universe, level)) = mpi::initialize_with_threading(Threading::Serialized)
                else {
                    let _ = ready_tx.send(Err("MPI is already initialised in this process".into()));
                    return;
                };
                if level < Threading::Funneled {
                    let _ = ready_tx.send(Err(format!(
                        "this MPI gives threading level {level:?}; rill needs Funneled"
                    )));
                    return;
                }
                let world = universe.world();
                let _ = ready_tx.send(Ok((
                    world.rank() as usize,
                    world.size() as usize,
                    level >= Threading::Serialized,
                )));
                let mut t = MpiTransport {
                    world,
                    pending: Vec::new(),
                };
                // Commands until every `World` handle is gone; then the
                // universe drops here and finalises MPI on this thread.
                for cmd in rx {
                    match cmd {
                        Cmd::Serve(job, out) => {
                            let _ = out.send(bridge::serve(&mut t, job));
                        }
                        Cmd::Call(f) => f(&t.world),
                    }
                }
                while !t.sends_done() {
                    std::thread::yield_now();
                }
            })
            .map_err(|e| DistError::Transport(format!("no thread for MPI: {e}")))?;
        let (rank, size, serialized) = ready_rx
            .recv()
            .map_err(|_| DistError::Transport("the MPI thread ended while starting".into()))?
            .map_err(DistError::Transport)?;
        Ok(World {
            handle: Handle {
                rank,
                size,
                serialized,
                tx,
            },
            thread: Some(thread),
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.handle.rank
    }

    /// The ranks of the job.
    pub fn size(&self) -> usize {
        self.handle.size
    }

    /// A network for one run on every rank, each rank's runtime built from
    /// `builder` (monitoring logs go to `DIR/rank-R/`).
    pub fn net(&self, builder: Builder) -> Result<Net, DistError> {
        Net::new(Carrier::Mpi(self.handle.clone()), builder)
    }

    /// Runs `f` on the MPI thread with the world communicator (raw MPI
    /// beside a network: a peer benchmark, a collective). Not while a
    /// network runs: the bridge holds the thread until its run ends.
    pub fn with_mpi<R, F>(&self, f: F) -> R
    where
        R: Send + 'static,
        F: FnOnce(&SimpleCommunicator) -> R + Send + 'static,
    {
        let (tx, rx) = channel();
        let call: Call = Box::new(move |w| {
            let _ = tx.send(f(w));
        });
        self.handle
            .tx
            .send(Cmd::Call(call))
            .expect("the MPI thread lives as long as the World");
        rx.recv().expect("the MPI thread answers every call")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Closing the channel ends the MPI thread's loop (the handles that
        // `Net`s keep are gone by now: a `Net` is consumed by its run).
        let (tx, _) = channel();
        drop(std::mem::replace(&mut self.handle.tx, tx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A send under way and its buffer (a leaked box, freed once it completes).
type Sending = (Request<'static, [u8], StaticScope>, *mut [u8]);

/// Frames as MPI messages of bytes (tag 0), sent with `MPI_Isend` from
/// buffers the transport keeps until the send completes.
struct MpiTransport {
    world: SimpleCommunicator,
    pending: Vec<Sending>,
}

impl MpiTransport {
    fn reap(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            let (req, buf) = self.pending.swap_remove(i);
            match req.test() {
                Ok(_) => {
                    // SAFETY: `buf` came from `Box::leak` in `send` and its
                    // send has completed, so MPI no longer reads it and no
                    // other reference to it is left.
                    drop(unsafe { Box::from_raw(buf) });
                }
                Err(req) => {
                    self.pending.push((req, buf));
                    let last = self.pending.len() - 1;
                    self.pending.swap(i, last);
                    i += 1;
                }
            }
        }
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn send(&mut self, to: usize, frame: Vec<u8>) {
        if !self.pending.is_empty() {
            self.reap();
        }
        let buf: &'static mut [u8] = Box::leak(frame.into_boxed_slice());
        let ptr: *mut [u8] = buf;
        // SAFETY: `ptr` is the leaked box, alive until `reap` frees it after
        // the send completes; nothing writes it meanwhile.
        let data: &'static [u8] = unsafe { &*ptr };
        let req = self
            .world
            .process_at_rank(to as i32)
            .immediate_send(StaticScope, data);
        self.pending.push((req, ptr));
    }

    fn try_recv(&mut self) -> Option<(usize, Vec<u8>)> {
        let probed = self.world.any_process().immediate_matched_probe()?;
        let (frame, status) = probed.matched_receive_vec::<u8>();
        Some((status.source_rank() as usize, frame))
    }

    fn sends_done(&mut self) -> bool {
        self.reap();
        self.pending.is_empty()
    }
}
