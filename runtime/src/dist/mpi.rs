//! MPI as the bridge's transport: [`World`] starts one thread per process
//! that initialises MPI, serves each run's bridge, and finalises MPI when
//! the `World` is dropped. It asks for `MPI_THREAD_SERIALIZED`, so that the
//! run's idle workers may make the bridge's MPI calls too, one thread at a
//! time (`bridge::Pump`'s lock); with only `MPI_THREAD_FUNNELED` the
//! bridge's thread alone calls MPI.

use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
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
                let mut t = MpiTransport::new(world);
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

/// A send under way and its buffer: a frame's vector, its parts kept while
/// MPI reads it (pointer, length, capacity), rebuilt and dropped once the
/// send completes.
type Sending = (Request<'static, [u8], StaticScope>, (*mut u8, usize, usize));

/// Frames up to this size arrive in the receive the transport keeps
/// posted; a larger one is announced there by an empty message and follows
/// on [`TAG_LARGE`], received into a buffer of its own size (so a large
/// message is still copied once on this side).
const POSTED_BYTES: usize = 4096;
/// Frames, and the announcements of large ones.
const TAG_FRAME: i32 = 0;
/// Large frames, each announced on [`TAG_FRAME`] first.
const TAG_LARGE: i32 = 1;

/// Frames as MPI messages of bytes on a communicator of the bridge's own
/// (a duplicate of the world, so that raw MPI beside a network, such as a
/// peer benchmark's, never matches a frame), sent with `MPI_Isend` from
/// buffers the transport keeps until the send completes.
///
/// One receive is kept posted (from any rank, [`TAG_FRAME`], into a buffer
/// of [`POSTED_BYTES`]; posted again at the next look after it completed):
/// a pass that finds nothing costs an `MPI_Test`, where a matched probe
/// starts and frees a request each time.
/// Order: a large frame is announced by an empty message on [`TAG_FRAME`],
/// in the sender's order with its small frames, and the receiver takes the
/// large frame from that sender on [`TAG_LARGE`] as soon as it sees the
/// announcement; large frames from one sender match in their send order
/// (MPI's non-overtaking rule), so every frame is taken in the order sent.
struct MpiTransport {
    world: SimpleCommunicator,
    comm: SimpleCommunicator,
    pending: Vec<Sending>,
    /// The receive kept posted, into `posted_buf`.
    posted: Option<Request<'static, [u8], StaticScope>>,
    /// A leaked box of [`POSTED_BYTES`], freed in `drop` once no receive
    /// is posted into it.
    posted_buf: *mut [u8],
}

impl MpiTransport {
    fn new(world: SimpleCommunicator) -> MpiTransport {
        let comm = world.duplicate();
        let buf: &'static mut [u8] = Box::leak(vec![0u8; POSTED_BYTES].into_boxed_slice());
        let mut t = MpiTransport {
            world,
            comm,
            pending: Vec::new(),
            posted: None,
            posted_buf: buf,
        };
        t.posted = Some(t.post());
        t
    }

    /// Posts the receive into `posted_buf`; none may be posted now.
    fn post(&mut self) -> Request<'static, [u8], StaticScope> {
        debug_assert!(self.posted.is_none());
        // SAFETY: `posted_buf` is the leaked box, alive until `drop`, and no
        // receive is posted into it (the last one completed and its bytes
        // were copied out), so this is the only reference to it.
        let buf: &'static mut [u8] = unsafe { &mut *self.posted_buf };
        self.comm
            .any_process()
            .immediate_receive_into_with_tag(StaticScope, buf, TAG_FRAME)
    }

    fn isend(&mut self, to: usize, frame: Vec<u8>, tag: i32) {
        // Sent from the frame's own vector: no shrink to a box, no copy.
        let mut frame = std::mem::ManuallyDrop::new(frame);
        let parts = (frame.as_mut_ptr(), frame.len(), frame.capacity());
        // SAFETY: the vector's buffer stays allocated, unmoved and unwritten
        // until `reap` rebuilds the vector from `parts` after the send
        // completes (an empty vector's dangling pointer is valid for zero
        // bytes).
        let data: &'static [u8] = unsafe { std::slice::from_raw_parts(parts.0, parts.1) };
        let req = self
            .comm
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, data, tag);
        self.pending.push((req, parts));
    }

    fn reap(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            let (req, buf) = self.pending.swap_remove(i);
            match req.test() {
                Ok(_) => {
                    // SAFETY: `buf` holds the parts of the vector `isend`
                    // kept from dropping, and its send has completed, so MPI
                    // no longer reads it and no other reference is left.
                    drop(unsafe { Vec::from_raw_parts(buf.0, buf.1, buf.2) });
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

impl Drop for MpiTransport {
    fn drop(&mut self) {
        if let Some(req) = self.posted.take() {
            // Nothing counted is in flight once every run has ended (see the
            // README's termination), so this cancels an unmatched receive; a
            // stray control frame that matched it meanwhile is dropped.
            req.cancel();
            req.wait();
        }
        // SAFETY: the posted receive has completed or was cancelled, so MPI
        // no longer writes the buffer, which came from `Box::leak` in `new`.
        drop(unsafe { Box::from_raw(self.posted_buf) });
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
        // An empty message announces a large frame: a frame is never empty.
        debug_assert!(!frame.is_empty());
        if !self.pending.is_empty() {
            self.reap();
        }
        if frame.len() <= POSTED_BYTES {
            self.isend(to, frame, TAG_FRAME);
        } else {
            self.isend(to, Vec::new(), TAG_FRAME);
            self.isend(to, frame, TAG_LARGE);
        }
    }

    fn try_recv(&mut self) -> Option<(usize, Vec<u8>)> {
        // Posted again here, not when the last one completed: the frame
        // that completed it goes to its task first (a message that comes
        // meanwhile waits in MPI's queue of unexpected ones and matches
        // this receive at once).
        let req = match self.posted.take() {
            Some(req) => req,
            None => self.post(),
        };
        let status = match req.test() {
            Ok(status) => status,
            Err(req) => {
                self.posted = Some(req);
                return None;
            }
        };
        let from = status.source_rank();
        let len = status.count(u8::equivalent_datatype()) as usize;
        let frame = if len == 0 {
            // Sent right after its announcement; taken in order (above).
            let (frame, _) = self
                .comm
                .process_at_rank(from)
                .receive_vec_with_tag::<u8>(TAG_LARGE);
            frame
        } else {
            // SAFETY: the receive into `posted_buf` has completed and none
            // is posted, so MPI no longer writes it; `len` bytes of it were
            // received.
            unsafe { &(&*self.posted_buf)[..len] }.to_vec()
        };
        Some((from as usize, frame))
    }

    fn sends_done(&mut self) -> bool {
        self.reap();
        self.pending.is_empty()
    }
}
