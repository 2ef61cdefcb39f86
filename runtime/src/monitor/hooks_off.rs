//! The monitoring hooks compiled out (the runtime built without its
//! `monitor` feature): the functions of `hooks.rs`, each empty or a
//! constant, so that every call vanishes and no call site needs a `cfg`.
//! The worker still writes what it records itself (periods, waits,
//! placement) when a run asks for a log; stream events and messages are not
//! recorded.
//!
//! The checks on a stream operation's path (`on`, `skips`, `is_fast`,
//! `enter`, `enter_slow`, `arm`, `woke_peer`, `stream_close`) are constants
//! or empty, always inlined. The hooks that `hooks.rs` keeps cold and out of
//! line stay so here, empty: the crate that instantiates the stream ends
//! (the application) then sees a call to a cold function on those paths
//! (blocking, spinning, replacing an end) until link-time optimisation
//! finds the function empty and deletes the call, and its code is laid out
//! as with the hooks in. Inlined, they vanish before the application's code
//! is optimised, which lays out a Monte Carlo stage's blocking read
//! differently: 0.46% more instructions per path (callgrind, one worker),
//! for no gain. Either way the binary holds no call.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::hint::Hint;
use super::period::EndMon;
pub(crate) use super::worker_log::end_state_of;
use crate::vocab::{BlockedOn, Recheck, Side};

/// Runs in this process that monitor: counted, never read.
pub(crate) static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// No hook does anything.
#[inline(always)]
pub(crate) fn on() -> bool {
    false
}

/// The end's stamp is 0 (plain): its operations need nothing more. An
/// unbound end's first operation goes on to `bind_end`, which notes its
/// holder and makes it plain; the side's hint is not consulted.
#[inline(always)]
pub(crate) fn skips(end: &EndMon, _hint_lets: impl FnOnce() -> bool) -> bool {
    end.stamp == 0
}

impl EndMon {
    /// Whether the end's stamp is 0, the fast stamp of every thread when
    /// nothing records messages.
    #[inline(always)]
    pub(crate) fn is_fast(&self) -> bool {
        self.stamp == 0
    }
}

#[cold]
#[inline(never)]
pub(crate) fn stream_open(_id: u64, _cap: usize, _name: Option<&str>) {}

#[cold]
#[inline(never)]
pub(crate) fn stream_bind(_id: u64, _side: Side) {}

#[inline(always)]
pub(crate) fn stream_close(_id: u64, _side: Side, _messages: u64, _waits: u64) {}

#[cold]
#[inline(never)]
pub(crate) fn stream_replace(_side: Side, _old: u64, _new: u64) {}

/// Nothing is recorded.
#[inline(always)]
pub(crate) fn enter(_end: &EndMon) -> bool {
    false
}

/// The end becomes plain.
#[inline(always)]
pub(crate) fn enter_slow(
    end: &mut EndMon,
    _id: u64,
    _side: Side,
    _at: usize,
    _core: &dyn Fn() -> Arc<dyn Recheck>,
) {
    end.stamp = 0;
}

#[inline(always)]
pub(crate) fn arm(_end: &EndMon, _hint: &Hint, _addr: usize) {}

#[cold]
#[inline(never)]
pub(crate) fn leave(_end: &EndMon) {}

#[inline(always)]
pub(crate) fn woke_peer(_end: &EndMon) {}

#[cold]
#[inline(never)]
pub(crate) fn task_assigned(_id: u64, _parent: u64, _worker: usize, _name: &str) {}

#[cold]
#[inline(never)]
pub(crate) fn task_migrated(_id: u64, _from: usize, _to: usize) {}

#[cold]
#[inline(never)]
pub(crate) fn spin_begin(_blocked: &BlockedOn) {}

#[cold]
#[inline(never)]
pub(crate) fn spin_end() {}
