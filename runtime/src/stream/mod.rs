//! Streams: bounded single-writer single-reader FIFOs between tasks.
//!
//! [`stream`] makes a pair of ends. [`Writer`] and [`Reader`] are not `Clone`,
//! so one writer and one reader per stream is a fact of the types. The blocking
//! protocol (register, then re-check) is written down in `README.md` beside this
//! file; the field ownership is in `ring.rs`.
//!
//! - [`Writer::write`] suspends the task while the ring is full
//!   (blocked-by-output) and fails once the reader is gone.
//! - [`Reader::read`] suspends the task while the ring is empty
//!   (blocked-by-input) and returns `None` once the writer is gone and the ring
//!   is drained (end of stream).
//! - [`poll`](fn@poll) waits on several readers at once (blocked-by-any).
//! - `try_` variants never block: the forms for a thread outside the run.
//! - `hold_outside` marks an end that a thread outside the run (or another
//!   runtime's task) holds; who holds each side is in `holder.rs`, and the
//!   run waits for such an end instead of reporting a deadlock
//!   (`worker/README.md`).
//!
//! On the fast path (the peer is not blocked) a read or a write is a few plain
//! loads and stores and one compiler fence: no locked instruction.
//!
//! A read or write that blocks suspends the task where it stands. That is
//! cheapest in the task's own loop: `read` and `write` inline their blocking
//! path for this. Wrapped in a helper function that the compiler does not
//! inline (a large one, or one marked `#[inline(never)]`), each block costs
//! about 30 ns more on the machines measured, because the CPU then
//! mispredicts the returns around the switch (`Reader::read_empty` has the
//! figures). [`poll`](fn@poll) is a function of its own that the compiler may or may
//! not inline into its caller (it did in this repository's applications).
//! `scripts/instructions.sh` lists the blocking sites where the suspend
//! stayed a call.

mod block;
mod ends;
mod holder;
pub mod names;
mod poll;
mod poll_set;
mod ring;
pub(crate) mod slot;

use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) use crate::vocab::Recheck;
pub use crate::vocab::Side;
pub(crate) use ends::collect_handed;
pub use ends::Ends;
pub use poll::poll;
pub use poll_set::PollSet;
pub(crate) use ring::Core;
use slot::{CLOSED, IDLE, WAITING};

use crate::barrier;
use crate::context;
use crate::monitor::worker_log::EndMon;
use crate::vocab::BlockedOn;

/// The stream's reader is gone; the message was not delivered. Holds the
/// stream's id; its message names the stream when it has a name
/// ([`named_stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stream {} is closed: its reader end was dropped", names::describe(*.0))]
pub struct StreamClosed(pub u64);

/// Why [`Writer::try_write`] did not write.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TryWriteError<T> {
    /// The ring is full; here is the value back.
    #[error("stream is full")]
    Full(T),
    /// The reader is gone; here is the value back.
    #[error("stream is closed: its reader end was dropped")]
    Closed(T),
}

/// Why [`Reader::try_read`] returned nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryReadError {
    /// Nothing to read now.
    #[error("stream is empty")]
    Empty,
    /// The writer is gone and everything was read.
    #[error("end of stream")]
    Closed,
}

/// The largest capacity a stream may have: 2^30 messages. The ring's size
/// is the capacity rounded up to a power of two, which must not wrap; the
/// bound keeps it, and the ring's positions, far from that.
pub const MAX_CAPACITY: usize = 1 << 30;

/// Why a stream could not be made with the capacity asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    /// A capacity of 0.
    #[error("a stream needs a capacity of at least 1")]
    Zero,
    /// A capacity above [`MAX_CAPACITY`].
    #[error("a stream capacity of {0} is too large (at most {max})", max = MAX_CAPACITY)]
    TooLarge(usize),
    /// The ring's buffer could not be allocated.
    #[error("no memory for a stream of {capacity} messages of {size} bytes")]
    NoMemory {
        /// The capacity asked for.
        capacity: usize,
        /// The size of one message.
        size: usize,
    },
}

/// Makes a stream holding up to `capacity` messages.
///
/// # Panics
/// If `capacity` is 0 or above [`MAX_CAPACITY`], or the ring cannot be
/// allocated (use [`try_stream`] to get an error instead); the message names
/// the caller's line. Inside a task, the panic ends the run with an error
/// naming the task.
#[track_caller]
pub fn stream<T: Send + 'static>(capacity: usize) -> (Writer<T>, Reader<T>) {
    match try_stream(capacity) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// Makes a stream with the runtime's default capacity (16 outside a runtime).
#[track_caller]
pub fn stream_default<T: Send + 'static>() -> (Writer<T>, Reader<T>) {
    stream(context::default_capacity())
}

/// Makes a stream holding up to `capacity` messages, or says why it cannot
/// (0, more than [`MAX_CAPACITY`], or no memory for the ring).
pub fn try_stream<T: Send + 'static>(
    capacity: usize,
) -> Result<(Writer<T>, Reader<T>), CapacityError> {
    make(capacity, None)
}

/// Makes a stream named `name`, holding up to `capacity` messages. The name
/// shows in errors, deadlock reports and the monitoring logs (`rill-mon`)
/// instead of the stream's bare id.
///
/// ```
/// let (w, r) = rill::named_stream::<u32>("parser/tokens", 8);
/// assert_eq!(w.name(), Some("parser/tokens"));
/// drop(r);
/// let mut w = w;
/// let err = w.try_write(1).unwrap_err();
/// assert!(matches!(err, rill::TryWriteError::Closed(1)));
/// ```
///
/// # Panics
/// As [`stream`].
#[track_caller]
pub fn named_stream<T: Send + 'static>(
    name: impl Into<String>,
    capacity: usize,
) -> (Writer<T>, Reader<T>) {
    match make(capacity, Some(name.into().into_boxed_str())) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn make<T: Send + 'static>(
    capacity: usize,
    name: Option<Box<str>>,
) -> Result<(Writer<T>, Reader<T>), CapacityError> {
    if capacity == 0 {
        return Err(CapacityError::Zero);
    }
    if capacity > MAX_CAPACITY {
        return Err(CapacityError::TooLarge(capacity));
    }
    // The buffer first: a stream that cannot be made leaves no trace.
    let buf = ring::buffer::<T>(capacity).ok_or(CapacityError::NoMemory {
        capacity,
        size: std::mem::size_of::<T>(),
    })?;
    let id = context::next_stream_id();
    let logged = crate::hooks::on();
    if logged {
        crate::hooks::stream_open(id, capacity, name.as_deref());
    }
    let core = Arc::new(Core::with_buffer(
        id,
        capacity,
        buf,
        names::Label::new(id, name, logged),
    ));
    Ok((
        Writer {
            core: core.clone(),
            tail: 0,
            head_cache: 0,
            waits: 0,
            mon: EndMon::unbound(),
        },
        Reader {
            core,
            head: 0,
            tail_cache: 0,
            poll_cursor: 0,
            waits: 0,
            mon: EndMon::unbound(),
        },
    ))
}

/// The writing end of a stream. Not `Clone`: a stream has one writer.
pub struct Writer<T: Send + 'static> {
    core: Arc<Core<T>>,
    tail: usize,
    head_cache: usize,
    /// Times a write found the stream full and waited (spun or blocked);
    /// logged when the end is dropped (sample mode's exact counts).
    waits: u64,
    /// Unbound until first use; then the monitoring state that the one check
    /// per operation ([`hooks::enter`](crate::hooks::enter)) compares.
    mon: EndMon,
}

/// The reading end of a stream. Not `Clone`: a stream has one reader.
pub struct Reader<T: Send + 'static> {
    core: Arc<Core<T>>,
    head: usize,
    tail_cache: usize,
    poll_cursor: usize,
    /// Times a read found the stream empty and waited, as in [`Writer`].
    waits: u64,
    /// As in [`Writer`].
    mon: EndMon,
}

impl<T: Send + 'static> std::fmt::Debug for Writer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("stream", &self.core.id)
            .field("sent", &self.sent())
            .finish()
    }
}

impl<T: Send + 'static> std::fmt::Debug for Reader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("stream", &self.core.id)
            .field("received", &self.received())
            .finish()
    }
}

impl<T: Send + 'static> Writer<T> {
    /// The stream's id (unique within the process).
    pub fn id(&self) -> u64 {
        self.core.id
    }

    /// The stream's name, if it was made with [`named_stream`].
    pub fn name(&self) -> Option<&str> {
        self.core.label.name.as_deref()
    }

    /// Messages written through this end.
    pub fn sent(&self) -> u64 {
        // The end's ring started at 0 and only this end moves its tail
        // (`replace` swaps whole ends), so its position is its count.
        self.tail as u64
    }

    /// The stream's capacity.
    pub fn capacity(&self) -> usize {
        self.core.cap
    }

    /// Marks this end as held outside every run: by a thread that is not a
    /// rill task, or by a task of another runtime. A run whose tasks are all
    /// blocked waits for such an end while it lives (it may still act),
    /// instead of reporting a deadlock; dropping it ends the stream as
    /// usual, which wakes the waiting peer.
    ///
    /// An end is counted as outside by itself from its first operation on
    /// a thread where no task runs (or in another runtime's task). Call
    /// this before handing the end to such a thread when its first
    /// operation may come later than [`UNKNOWN_PEER_GRACE`](crate::UNKNOWN_PEER_GRACE)
    /// after the run's tasks have all blocked, or when the end was used
    /// inside the run before it leaves.
    pub fn hold_outside(&self) {
        self.core.writer.hold_outside(&self.core.fwd.rslot);
    }

    /// Writes `v`, suspending the task while the stream is full. Fails when the
    /// reader end is gone (a message racing with the reader's drop is lost).
    // Always inlined: the fast path is a few instructions, and a call per
    // message would cost as much again.
    #[inline(always)]
    #[track_caller]
    pub fn write(&mut self, v: T) -> Result<(), StreamClosed> {
        let core = self.enter_core();
        // SAFETY: `core` is the target of `self.core`, which `self` keeps
        // alive and nothing in this call replaces (the monitoring check only
        // touches the end's monitoring state).
        let core = unsafe { &*core };
        let tail = self.tail;
        if tail.wrapping_sub(self.head_cache) >= core.cap {
            // Acquire: pairs with the reader's Release store of head, so the
            // cell we are about to overwrite has been read.
            self.head_cache = core.back.head.load(Ordering::Acquire);
            if tail.wrapping_sub(self.head_cache) >= core.cap {
                std::hint::cold_path();
                return self.write_full(v);
            }
        }
        self.push_to(core, tail, v)
    }

    #[inline(always)]
    fn push(&mut self, tail: usize, v: T) -> Result<(), StreamClosed> {
        let core = Arc::as_ptr(&self.core);
        // SAFETY: as in `write`.
        self.push_to(unsafe { &*core }, tail, v)
    }

    /// [`push`](Self::push) into `core`, this end's (the caller's pointer
    /// to it, kept in a register: read through `self.core` after the
    /// Release store or the compiler fence, LLVM would load it again).
    #[inline(always)]
    fn push_to(&mut self, core: &Core<T>, tail: usize, v: T) -> Result<(), StreamClosed> {
        let fenced = core.fenced;
        // SAFETY: we are the only writer, tail is our position and the ring has
        // room (checked by the caller against a head no later than the real one).
        unsafe { core.put(tail, v) };
        // Release: pairs with the reader's Acquire load of tail, publishing the cell.
        core.fwd.tail.store(tail.wrapping_add(1), Ordering::Release);
        self.tail = tail.wrapping_add(1);
        // Store-load barrier between our tail store and the load of the reader's
        // slot; the other half is the reader's registration fence plus the
        // worker's heavy barrier (barrier.rs).
        barrier::light(fenced);
        let st = core.fwd.rslot.state.load(Ordering::Relaxed);
        if st != IDLE {
            std::hint::cold_path();
            // A plain end (stamp 0, see `after_write_cold`) that finds the
            // reader waiting goes straight to the wake: the hand-off of
            // every block, which through `after_write_cold` paid a call,
            // its frame and its dispatch on the state again.
            if st == WAITING && self.mon.stamp == 0 {
                core.fwd.rslot.wake_unreported();
                return Ok(());
            }
            return self.after_write_cold(st);
        }
        Ok(())
    }

    /// A write that found the reader's slot not IDLE, but for a plain end's
    /// wake (`push_to`): a monitored end's wake, or the reader gone.
    #[cold]
    #[inline(never)]
    fn after_write_cold(&mut self, st: u8) -> Result<(), StreamClosed> {
        match st {
            WAITING => {
                // Plain ends (stamp 0) record nothing: `push_to` decides that
                // before the wake, so that their path keeps nothing across it.
                if self.mon.stamp == 0 {
                    self.core.fwd.rslot.wake_unreported();
                } else if self.core.fwd.rslot.wake() {
                    crate::hooks::woke_peer(&self.mon);
                }
                Ok(())
            }
            CLOSED => Err(StreamClosed(self.core.id)),
            _ => Ok(()),
        }
    }

    /// The write's slow path: wait for room (spin, then block). Inlined into
    /// each write for the reason given at `Reader::read_empty`. The write
    /// keeps its `cold_path` hint: with the read's hint gone, the pipe const
    /// on two workers ran 9.5 ns with it and 10.4 without (6 alternating
    /// rounds). The price: in a large closure the suspend of a write to a
    /// full stream may stay a call (today the ring benchmark's two writes and
    /// the ray tracer's dealer; `scripts/instructions.sh` lists them).
    #[inline(always)]
    #[track_caller]
    fn write_full(&mut self, v: T) -> Result<(), StreamClosed> {
        // As `Reader::read_empty`: the caller has just loaded the head and
        // found no room, so a turn starts at the reader's close and ends
        // with a look for room (after the close again: a stream whose
        // reader is gone takes no message even if it has room).
        let tail = self.tail;
        loop {
            if self.core.fwd.rslot.is_closed() {
                self.leave();
                return Err(StreamClosed(self.core.id));
            }
            self.waits += 1;
            // As in `Reader::read_empty`.
            // Read once for the spin and the block (a thread-local read).
            let w = context::worker();
            if !spin_first(w, self, |e| {
                e.core.has_room(tail) || e.core.fwd.rslot.is_closed()
            }) {
                // The message is recorded in the period it moves in.
                self.leave();
                let on = self.blocked_on();
                let core = &self.core;
                if !block::block(
                    w,
                    &[&core.back.wslot],
                    on,
                    |me| core.writer.note_as(me, &core.fwd.rslot),
                    |mine| core.reader.peer_of(mine),
                    || core.has_room(tail) || core.fwd.rslot.is_closed(),
                    || core.recheck(Side::Reader),
                    |pending| crate::worker::note_pending(pending, core, Side::Writer),
                ) {
                    // The run is unwinding this task: the stream counts as closed.
                    return Err(StreamClosed(self.core.id));
                }
                self.enter();
            }
            if !self.core.fwd.rslot.is_closed() && self.core.has_room(tail) {
                self.head_cache = self.core.back.head.load(Ordering::Acquire);
                return self.push(tail, v);
            }
        }
    }

    /// Writes `v` if there is room now; never blocks.
    pub fn try_write(&mut self, v: T) -> Result<(), TryWriteError<T>> {
        self.enter();
        if self.core.fwd.rslot.is_closed() {
            self.leave();
            return Err(TryWriteError::Closed(v));
        }
        let tail = self.tail;
        if tail.wrapping_sub(self.head_cache) >= self.core.cap {
            self.head_cache = self.core.back.head.load(Ordering::Acquire);
            if tail.wrapping_sub(self.head_cache) >= self.core.cap {
                self.leave();
                return Err(TryWriteError::Full(v));
            }
        }
        // A reader that closes between the check and the push loses the value.
        let _ = self.push(tail, v);
        Ok(())
    }

    /// Whether the reader end is gone (a write would fail).
    pub(crate) fn is_closed(&self) -> bool {
        self.core.fwd.rslot.is_closed()
    }

    /// Messages the reader has taken so far (its position), for the
    /// cross-rank bridge's credits.
    pub(crate) fn consumed(&self) -> u64 {
        // Acquire: pairs with the reader's Release store of head.
        self.core.back.head.load(Ordering::Acquire) as u64
    }

    /// Closes the stream: the reader drains what is left, then sees the end.
    /// Dropping the writer does the same.
    pub fn close(self) {}

    /// Redirects this end to another stream, as a network does when it
    /// unfolds: from now on writes go to `new`'s stream. Returns the old end;
    /// drop it to close the old stream.
    pub fn replace(&mut self, new: Writer<T>) -> Writer<T> {
        crate::hooks::stream_replace(Side::Writer, self.core.id, new.core.id);
        std::mem::replace(self, new)
    }
}

impl<T: Send + 'static> Drop for Writer<T> {
    fn drop(&mut self) {
        context::note_sent(self.sent());
        crate::hooks::stream_close(self.core.id, Side::Writer, self.sent(), self.waits);
        self.core.back.wslot.close();
        self.core.fwd.rslot.wake_unreported();
    }
}

impl<T: Send + 'static> Reader<T> {
    /// The stream's id (unique within the process).
    pub fn id(&self) -> u64 {
        self.core.id
    }

    /// The stream's name, if it was made with [`named_stream`].
    pub fn name(&self) -> Option<&str> {
        self.core.label.name.as_deref()
    }

    /// Messages read through this end.
    pub fn received(&self) -> u64 {
        // As in `Writer::sent`.
        self.head as u64
    }

    /// Marks this end as held outside every run: by a thread that is not a
    /// rill task, or by a task of another runtime. A run whose tasks are all
    /// blocked waits for such an end while it lives (it may still act),
    /// instead of reporting a deadlock; dropping it makes the peer's
    /// writes fail as usual, which wakes a waiting peer.
    ///
    /// An end is counted as outside by itself from its first operation on
    /// a thread where no task runs (or in another runtime's task). Call
    /// this before handing the end to such a thread when its first
    /// operation may come later than [`UNKNOWN_PEER_GRACE`](crate::UNKNOWN_PEER_GRACE)
    /// after the run's tasks have all blocked, or when the end was used
    /// inside the run before it leaves.
    pub fn hold_outside(&self) {
        self.core.reader.hold_outside(&self.core.back.wslot);
    }

    /// Reads the next message, suspending the task while the stream is empty.
    /// `None` means end of stream: the writer is gone and all was read.
    // Always inlined: the fast path is a few instructions, and a call per
    // message would cost as much again.
    #[inline(always)]
    #[track_caller]
    pub fn read(&mut self) -> Option<T> {
        let core = self.enter_core();
        // SAFETY: as in `Writer::write`.
        let core = unsafe { &*core };
        let head = self.head;
        if head == self.tail_cache {
            // Acquire: pairs with the writer's Release store of tail.
            self.tail_cache = core.fwd.tail.load(Ordering::Acquire);
            if head == self.tail_cache {
                // No `cold_path` hint here, unlike `write`: see `read_empty`.
                return self.read_empty();
            }
        }
        Some(self.pop_from(core, head))
    }

    #[inline(always)]
    fn pop(&mut self, head: usize) -> T {
        let core = Arc::as_ptr(&self.core);
        // SAFETY: as in `Writer::write`.
        self.pop_from(unsafe { &*core }, head)
    }

    /// [`pop`](Self::pop) from `core`, this end's (as `Writer::push_to`).
    #[inline(always)]
    fn pop_from(&mut self, core: &Core<T>, head: usize) -> T {
        let fenced = core.fenced;
        // SAFETY: we are the only reader and head < tail (checked by the caller).
        let v = unsafe { core.take(head) };
        // Release: pairs with the writer's Acquire load of head: the cell is free.
        core.back
            .head
            .store(head.wrapping_add(1), Ordering::Release);
        self.head = head.wrapping_add(1);
        // Store-load barrier, as in Writer::push.
        barrier::light(fenced);
        if core.back.wslot.state.load(Ordering::Relaxed) == WAITING {
            std::hint::cold_path();
            // As in `Writer::push_to`: a plain end wakes without a call more.
            if self.mon.stamp == 0 {
                core.back.wslot.wake_unreported();
            } else {
                self.after_read_cold();
            }
        }
        v
    }

    /// The wake of a monitored end (`pop_from` wakes for a plain one).
    #[cold]
    #[inline(never)]
    fn after_read_cold(&mut self) {
        if self.core.back.wslot.wake() {
            crate::hooks::woke_peer(&self.mon);
        }
    }

    /// The read's slow path: wait for a message (spin, then block).
    ///
    /// Inlined into each read, with the coroutine library's suspend inlined
    /// in turn, so that a task suspends in the frame of its own loop. A task
    /// resumes through the worker's call; when the suspend sits inside a
    /// function call of its own, that function's return (and the switch
    /// back) no longer match the CPU's return-address stack, and both are
    /// mispredicted at every block. Measured (`rill-bench ab`, alternating
    /// builds):
    /// - as a cold call: the hand-off 14.5 ns, a relay pipe on two workers
    ///   12.3 ns per message per stage;
    /// - inlined behind a `cold_path` hint: 10.6 and 9.9, but LLVM then
    ///   treats the suspend's call site as cold and leaves it out of line in
    ///   larger closures: a ring hop on one worker (the ring benchmark's
    ///   closure) stayed at 90 ns;
    /// - inlined without the hint (now): the ring hop 61 ns, the pipe 9.5.
    ///
    /// The cost is about a kilobyte of code per read site. The machine has
    /// no counters to show the mispredictions; the ring's 30 ns per hop,
    /// for the same instructions, is the evidence.
    #[inline(always)]
    #[track_caller]
    fn read_empty(&mut self) -> Option<T> {
        // Each turn starts where the ring was found empty: the caller has
        // just loaded the tail, and a turn loads it again before the next
        // (where loading it at the top reloaded the caller's load).
        let head = self.head;
        loop {
            if self.core.back.wslot.is_closed() {
                // The writer's last tail store happened before its close.
                if self.refresh() {
                    return Some(self.pop(head));
                }
                self.leave();
                return None;
            }
            // Nothing else to run here means the message can only come from
            // another thread: look again for a while before paying for a
            // block, a wake and a dispatch (see `block::before_block`).
            self.waits += 1;
            // Read once for the spin and the block (a thread-local read).
            let w = context::worker();
            if !spin_first(w, self, |e| {
                e.core.has_data(head) || e.core.back.wslot.is_closed()
            }) {
                // The message is recorded in the period it moves in.
                self.leave();
                let on = self.blocked_on();
                let core = &self.core;
                if !block::block(
                    w,
                    &[&core.fwd.rslot],
                    on,
                    |me| core.reader.note_as(me, &core.back.wslot),
                    |mine| core.writer.peer_of(mine),
                    || core.has_data(head) || core.back.wslot.is_closed(),
                    || core.recheck(Side::Writer),
                    |pending| crate::worker::note_pending(pending, core, Side::Reader),
                ) {
                    // The run is unwinding this task: the stream counts as ended.
                    return None;
                }
                self.enter();
            }
            if self.refresh() {
                return Some(self.pop(head));
            }
        }
    }

    /// Re-reads the writer's tail; true when there is something to read.
    fn refresh(&mut self) -> bool {
        self.tail_cache = self.core.fwd.tail.load(Ordering::Acquire);
        self.tail_cache != self.head
    }

    /// Reads a message if one is there now; never blocks.
    pub fn try_read(&mut self) -> Result<T, TryReadError> {
        self.enter();
        let head = self.head;
        if head != self.tail_cache || self.refresh() {
            return Ok(self.pop(head));
        }
        if self.core.back.wslot.is_closed() {
            if self.refresh() {
                return Ok(self.pop(head));
            }
            self.leave();
            return Err(TryReadError::Closed);
        }
        self.leave();
        Err(TryReadError::Empty)
    }

    /// The `i`-th unread message, left in the stream (a cross-rank bridge
    /// encodes a message when it sends it and takes it out only when the
    /// far reader has consumed it, so the stream's capacity bounds the
    /// messages between the two tasks). `Err(Empty)` when fewer than `i + 1`
    /// messages are there now, `Err(Closed)` when the writer is gone and
    /// no `i`-th message will come.
    pub(crate) fn peek(&mut self, i: usize) -> Result<&T, TryReadError> {
        let pos = self.head.wrapping_add(i);
        if self.tail_cache.wrapping_sub(self.head) <= i && {
            self.refresh();
            self.tail_cache.wrapping_sub(self.head) <= i
        } {
            if !self.core.back.wslot.is_closed() {
                return Err(TryReadError::Empty);
            }
            // The writer's last tail store happened before its close.
            self.refresh();
            if self.tail_cache.wrapping_sub(self.head) <= i {
                return Err(TryReadError::Closed);
            }
        }
        // SAFETY: this end is the only reader and head <= pos < tail
        // (checked above); the borrow of `self` keeps head where it is
        // while the reference lives.
        Ok(unsafe { self.core.peek(pos) })
    }

    /// True when a read would not block: a message is there or the stream ended.
    pub fn is_ready(&mut self) -> bool {
        self.head != self.tail_cache || self.refresh() || self.core.back.wslot.is_closed()
    }

    /// Redirects this end to another stream. Returns the old end.
    pub fn replace(&mut self, new: Reader<T>) -> Reader<T> {
        crate::hooks::stream_replace(Side::Reader, self.core.id, new.core.id);
        std::mem::replace(self, new)
    }
}

impl<T: Send + 'static> Drop for Reader<T> {
    fn drop(&mut self) {
        let received = self.received();
        if received > 0 {
            // Relaxed: see `Core::writer_worker` (a message was read).
            context::note_received(received, self.core.writer_worker.load(Ordering::Relaxed));
        }
        crate::hooks::stream_close(self.core.id, Side::Reader, received, self.waits);
        self.core.fwd.rslot.close();
        self.core.back.wslot.wake_unreported();
    }
}

impl<T: Send + 'static> Iterator for Reader<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.read()
    }
}

/// The monitoring check that starts every stream operation that may move a
/// message through the end of `side` at `addr`, whose core is `core`: true
/// when the end needs [`enter_cold`]. With the hooks in, a compare of the
/// side's hint with the end's address (`monitor/hint.rs`); compiled out, of
/// the end's stamp with 0 (so that an unbound end still notes its holder):
/// [`hooks::skips`](crate::hooks::skips).
#[inline(always)]
fn needs_enter_cold<T>(core: *const Core<T>, side: Side, addr: usize, mon: &EndMon) -> bool {
    // SAFETY: the caller's end keeps its core alive.
    let plain = crate::hooks::skips(mon, || unsafe { &*core }.lets(side, addr));
    if !plain {
        // Laid out off the straight path: an end that needs nothing more
        // (monitoring off, or count mode) falls through, as with the hooks
        // compiled out. Without the hint LLVM
        // guesses `!= 0` likely and the unmonitored fast path takes a jump
        // per operation (about 4% of the pipe, measured).
        std::hint::cold_path();
        !crate::hooks::enter(mon)
    } else {
        false
    }
}

/// What a task may block on (a stream end, or a poll's readers), as the
/// monitoring bracket around an operation and the spin before a block see it.
trait Waits {
    /// The monitoring check before an operation that may move a message;
    /// binds a new end (see [`needs_enter_cold`]).
    fn enter(&mut self);
    /// The operation after [`enter`](Self::enter) moved nothing.
    fn leave(&self);
    /// Records the running task (or, outside every task, the outside) as
    /// the holder of the end(s), for reports and the stall rule.
    fn note_owner(&self);
    /// What a block here records.
    fn blocked_on(&self) -> BlockedOn;
}

/// The monitoring entry of an end type (`$end`, on `$side`, whose position
/// is the field `$pos`):
///
/// - `enter_core`: [`Waits::enter`], returning the pointer to the core that
///   the check loaded, so that the operation after it addresses the core
///   from the same load (LLVM would load `self.core` again after the check,
///   whose out-of-line path takes the whole end);
/// - `enter_cold`: [`enter_cold`] on the end. A method on the whole end, so
///   that the check before it needs nothing but the end's pointer (which the
///   operation holds anyway) and the core's, not a pointer to the end's
///   monitoring state, which LLVM kept in a register of its own, or on the
///   stack.
macro_rules! end_entry {
    ($end:ident, $side:expr, $pos:ident) => {
        impl<T: Send + 'static> $end<T> {
            #[inline(always)]
            fn enter_core(&mut self) -> *const Core<T> {
                let core = Arc::as_ptr(&self.core);
                if needs_enter_cold(core, $side, self as *const Self as usize, &self.mon) {
                    self.enter_cold();
                }
                core
            }

            #[cold]
            #[inline(never)]
            fn enter_cold(&mut self) {
                let addr = self as *const Self as usize;
                enter_cold(&mut self.mon, &self.core, $side, self.$pos, addr);
            }
        }
    };
}

end_entry!(Writer, Side::Writer, tail);
end_entry!(Reader, Side::Reader, head);

impl<T: Send + 'static> Waits for Writer<T> {
    #[inline(always)]
    fn enter(&mut self) {
        self.enter_core();
    }
    #[inline]
    fn leave(&self) {
        leave(&self.mon);
    }
    fn note_owner(&self) {
        self.core.writer.note(&self.core.fwd.rslot);
    }

    #[inline(always)]
    fn blocked_on(&self) -> BlockedOn {
        BlockedOn::Output {
            stream: self.core.id,
            peer: nonzero(self.core.reader.task()),
        }
    }
}

impl<T: Send + 'static> Waits for Reader<T> {
    #[inline(always)]
    fn enter(&mut self) {
        self.enter_core();
    }
    #[inline]
    fn leave(&self) {
        leave(&self.mon);
    }
    fn note_owner(&self) {
        self.core.reader.note(&self.core.back.wslot);
    }

    #[inline(always)]
    fn blocked_on(&self) -> BlockedOn {
        BlockedOn::Input {
            stream: self.core.id,
            peer: nonzero(self.core.writer.task()),
        }
    }
}

/// The spin before a block (`block::before_block`): true when `ready` came
/// true. Nothing else to run on this worker means what the task waits for can
/// only come from another thread, so looking again for a while saves a block,
/// a wake and a dispatch. On a monitored worker the spin is bracketed so that
/// the log shows it as the block and wait it stands for.
#[inline(always)]
fn spin_first<W: Waits>(
    w: Option<&'static crate::worker::WorkerLocal>,
    on: &mut W,
    ready: impl Fn(&W) -> bool,
) -> bool {
    let w = match block::before_block(w) {
        None => return false,
        Some(block::First::Pass(w)) => return block::pass_on(w, || ready(on)),
        Some(block::First::Spin(w)) => w,
    };
    let mon = w.is_monitored();
    if mon {
        on.note_owner();
        on.leave();
        crate::hooks::spin_begin(&on.blocked_on());
    }
    let got = block::spin_on(w, || ready(on));
    if mon {
        crate::hooks::spin_end();
        on.enter();
    }
    got
}

/// The out-of-line part of the check: binds an end no task used yet (noting
/// the task as the holder of its side, for reports), then has monitoring
/// bind it to the running task or list it in the running period
/// ([`hooks::enter_slow`](crate::hooks::enter_slow)), and arms the side's
/// hint where the end may skip monitoring from now on
/// ([`hooks::arm`](crate::hooks::arm)); `at` is the end's position and
/// `addr` its address.
#[inline(always)]
fn enter_cold<T: Send + 'static>(
    mon: &mut EndMon,
    core: &Arc<Core<T>>,
    side: Side,
    at: usize,
    addr: usize,
) {
    if mon.is_unbound() {
        let (owner, peer_slot) = match side {
            Side::Reader => (&core.reader, &core.back.wslot),
            Side::Writer => (&core.writer, &core.fwd.rslot),
        };
        bind_end(mon, core.id, side, owner, peer_slot, core.cap, &core.label);
        if side == Side::Writer {
            // Relaxed: see `Core::writer_worker`.
            core.writer_worker
                .store(context::worker_tag(), Ordering::Relaxed);
        }
    }
    if !mon.is_fast() {
        crate::hooks::enter_slow(mon, core.id, side, at, &|| core.clone());
    }
    crate::hooks::arm(mon, core.side_hint(side), addr);
}

/// The first use of an end: once per end, kept apart so that listing (once
/// per end and period) saves no registers for it.
#[cold]
#[inline(never)]
fn bind_end(
    mon: &mut EndMon,
    id: u64,
    side: Side,
    owner: &holder::Holder,
    peer_slot: &slot::Slot,
    cap: usize,
    label: &names::Label,
) {
    mon.stamp = 0;
    // First used outside every run, the side wakes a peer already waiting,
    // which counted it as not known and now counts it as outside.
    owner.note(peer_slot);
    // A stream made before a monitored run (or outside any) has no opening
    // in the logs yet: log it at its first use, with its capacity and name.
    if crate::hooks::on() && label.take_open() {
        crate::hooks::stream_open(id, cap, label.name.as_deref());
    }
    crate::hooks::stream_bind(id, side);
}

/// An operation that [`needs_enter_cold`] checked moved nothing: take its
/// message back.
#[inline]
fn leave(mon: &EndMon) {
    if !mon.is_fast() {
        crate::hooks::leave(mon);
    }
}

fn nonzero(id: u64) -> Option<u64> {
    (id != 0).then_some(id)
}
