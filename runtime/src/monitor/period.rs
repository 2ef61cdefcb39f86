//! The period being recorded on this thread: the part of a worker's
//! monitoring state that the stream hot path touches, kept in thread-locals
//! so that recording a message is a few fs-relative loads and stores inline
//! at the call site, with no function call and no pointer chase.
//!
//! A stream operation whose side's hint (`hint.rs`) holds its end's address
//! does nothing more: every operation with monitoring off, and in count mode
//! on an end bound to the running task (its messages are counted from the
//! ring's positions at the period's end, `binding.rs`). The others compare
//! the end's [`EndMon`] stamp with this thread's ops stamp (ops mode records
//! the message there) and then with its [`fast`] stamp: equal means the end
//! only needs its hint armed again (it moved within its task); otherwise (a
//! new end, an end that changed hands) the operation goes out of line.
//!
//! Ops mode (`message`): each dispatch has an *epoch*, a multiple of 4
//! unique to the running task in the process: its *base*, under which its
//! entries stay listed from one of its periods to the next
//! (`task_entries.rs`). An end that moves a message compares its stamp (the
//! epoch under which it was listed, plus its [`kind`] in the low bits) with
//! the thread's ops stamp before the message moves (an operation that then
//! moves nothing takes the record back, [`Recorder::leave`]): on the first
//! message of a task they differ, and the end lists itself
//! ([`Recorder::list`], out of line: an entry index and a kind; entries from
//! [`MAX_IO`] on, and per-message times, go through the worker's log); after
//! that each message appends its key (`entry << 1 | write`) to
//! [`Recorder::keys`], and at the period's end one pass finds the op runs'
//! form (a relay's read-one-write-one is found in a compare per message, its
//! counts in O(1)) and the entries' counts.
//!
//! Nothing here points into a stream end, so an end that is dropped, or moved
//! to another task or worker, in the middle of a period leaves nothing
//! dangling: its messages so far are recorded here, and where it goes next it
//! lists itself again under that task's base.
//!
//! Who may touch what: everything is thread-local; the worker owning the
//! thread resets it at each dispatch ([`begin`](Recorder::begin) /
//! [`take_entries`](Recorder::take_entries) / [`take_ops`](Recorder::take_ops)),
//! and the stream ends used by the running task fill it in between.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rill_log::{EndIo, Op, OpsForm, StreamIo};

use super::binding::Binding;
use crate::tls;

/// Entries per period whose counts live in [`Recorder::counts`] (a power of
/// two); later entries of a (rare) period that uses more ends count on the
/// slow path.
pub(crate) const MAX_IO: usize = 32;
/// Messages whose keys are held here before they spill, as op runs, into
/// the worker's log.
pub(crate) const MAX_KEYS: usize = 512;

/// How an end records its messages in the period it is listed in: the low
/// two bits of its stamp.
pub(crate) mod kind {
    /// Nothing to record (the run records no messages).
    pub(crate) const NONE: u64 = 0;
    /// Count in [`Recorder::counts`](super::Recorder::counts).
    pub(crate) const COUNT: u64 = 1;
    /// Append message keys to [`Recorder::keys`](super::Recorder::keys).
    pub(crate) const OPS: u64 = 2;
    /// The out-of-line path: per-message times.
    pub(crate) const SLOW: u64 = 3;
}

/// The next tag ([`new_tag`]), from `1 << 62` in steps of 4: with any kind
/// in the low bits never 0 (plain) or `UNBOUND`, and above every epoch
/// (`log number << 40`).
static TAGS: AtomicU64 = AtomicU64::new(1 << 62);

/// A new tag, unique in the process: at least `1 << 62`, low bits 0. Count
/// mode's task tags add [`kind::COUNT`]; ops mode's task bases
/// (`task_entries.rs`) add the run's kind to it in their ends' stamps.
pub(crate) fn new_tag() -> u64 {
    // Relaxed: only uniqueness matters, which the RMW gives.
    TAGS.fetch_add(4, Ordering::Relaxed)
}

/// Per-end monitoring state kept in each stream end: its *stamp*, which an
/// operation that its side's hint does not let through (`hint.rs`) compares
/// with this thread's [`fast`] one ([`is_fast`](Self::is_fast), which
/// `hooks.rs` defines, and `hooks_off.rs` without the hooks).
///
/// - 0 (the default): *plain*, an end last used where no messages are
///   recorded (monitoring off, or not in a task); with monitoring off that
///   is the thread's fast stamp, so the compare is all an operation pays;
/// - [`UNBOUND`](Self::UNBOUND): a new end that no task used yet;
/// - a task's *tag* (at least `1 << 62`, low bits `01`): count mode, the end
///   is bound to that task through `bind` (`binding.rs`);
/// - `epoch | kind`: ops mode, the end is listed with entry `idx()` under
///   that epoch (a task's base, at least `1 << 62`, low bits `00`; in `NONE`
///   and `COUNT` runs a period's epoch is at least `1 << 40` and below
///   `1 << 62`, but no end is listed there).
#[derive(Debug, Default)]
pub(crate) struct EndMon {
    pub(crate) stamp: u64,
    /// `entry << 1 | write`: the key of its messages ([`Recorder::keys`]),
    /// kept whole so that recording a message stores it as it is.
    pub(crate) key: u32,
    /// Count mode: the end's binding to the task whose tag is the stamp
    /// (`binding.rs`).
    pub(crate) bind: Option<Arc<Binding>>,
}

impl EndMon {
    /// The stamp of an end no task has used yet.
    pub(crate) const UNBOUND: u64 = 1;

    /// A new end's state: unbound.
    pub(crate) const fn unbound() -> Self {
        EndMon {
            stamp: Self::UNBOUND,
            key: 0,
            bind: None,
        }
    }

    /// Ends the end's binding, if it has one: a new holder takes over at
    /// position `at` (or nobody does, and nothing moves from there).
    #[inline]
    pub(crate) fn unbind(&mut self, at: usize) {
        if let Some(b) = self.bind.take() {
            b.cut(at);
        }
    }

    /// The stamp, loaded again (see [`is_fast`](Self::is_fast)).
    #[inline(always)]
    pub(crate) fn stamp_again(&self) -> u64 {
        // SAFETY: a read of a field through a valid reference.
        unsafe { std::ptr::read_volatile(&self.stamp) }
    }

    /// Sets the end's entry: index `idx`, written if `write`.
    #[inline]
    pub(crate) fn set_entry(&mut self, idx: u16, write: bool) {
        self.key = u32::from(idx) << 1 | u32::from(write);
    }

    /// The end's entry index in the period (or task) that listed it.
    #[inline]
    pub(crate) fn idx(&self) -> u16 {
        (self.key >> 1) as u16
    }

    /// Whether no task has used the end yet.
    #[inline(always)]
    pub(crate) fn is_unbound(&self) -> bool {
        self.stamp == Self::UNBOUND
    }

    /// The epoch of the period that last listed the end.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.stamp & !3
    }

    /// How the end records in that period.
    #[inline]
    pub(crate) fn kind(&self) -> u64 {
        self.stamp & 3
    }
}

/// The thread's period state (see the module documentation).
pub(crate) struct Recorder {
    /// The running dispatch's epoch; 0 when none runs on this thread.
    epoch: Cell<u64>,
    /// How ends record in the running period (a [`kind`]).
    run_kind: Cell<u64>,
    /// Entries listed in the running period (those from [`MAX_IO`] on are
    /// kept in the worker's log).
    io_len: Cell<u32>,
    /// Stream id per entry below [`MAX_IO`].
    ids: [Cell<u64>; MAX_IO],
    /// Bit i: entry i is a writing end.
    writes: Cell<u32>,
    /// Bit i: entry i woke the task on the other side.
    woke: Cell<u32>,
    /// Bit i: entry i moved a message (ops mode, set by
    /// [`add_count`](Self::add_count)).
    moved: Cell<u32>,
    /// Messages per entry in count mode, for entries below [`MAX_IO`].
    /// Zero between periods.
    counts: [Cell<u32>; MAX_IO],
    /// Messages held in `keys`.
    keys_len: Cell<u32>,
    /// A key (`entry << 1 | write`) per message in ops mode, in order; the
    /// first `keys_len` are this period's latest (earlier ones spilled into
    /// the worker's log as op runs).
    keys: [Cell<u32>; MAX_KEYS],
}

thread_local! {
    // Const-initialised and without a destructor: each access is a
    // thread-pointer-relative load or store.
    static REC: Recorder = const {
        Recorder {
            epoch: Cell::new(0),
            run_kind: Cell::new(kind::NONE),
            io_len: Cell::new(0),
            ids: [const { Cell::new(0) }; MAX_IO],
            writes: Cell::new(0),
            woke: Cell::new(0),
            moved: Cell::new(0),
            counts: [const { Cell::new(0) }; MAX_IO],
            keys_len: Cell::new(0),
            keys: [const { Cell::new(0) }; MAX_KEYS],
        }
    };
}

/// Runs `f` on this thread's recorder.
///
/// `LocalKey::with` is only cheap when it inlines, which LLVM declines for
/// large closures (it then calls the key's getter through a pointer on every
/// message); so only the address is taken inside it.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Recorder) -> R) -> R {
    let p = REC.with(|r| r as *const Recorder);
    // SAFETY: the recorder is const-initialised and has no destructor, so it
    // lives, never moved, as long as this thread; `f` runs on this thread now.
    f(unsafe { &*p })
}

/// This thread's recorder, as a pointer (no closure, for the out-of-line
/// paths where LLVM would not inline one). Valid on this thread while it
/// lives; never to be sent to another.
#[inline(always)]
pub(crate) fn current() -> *const Recorder {
    REC.with(|r| r as *const Recorder)
}

/// The stamp with which a stream operation needs nothing more: 0 (plain)
/// outside periods and in periods that record no messages, the running
/// task's tag in count mode (`binding.rs`), `u64::MAX` (no end's stamp)
/// where every message is recorded. Every stream operation that its side's
/// hint does not let through compares its end's stamp with it
/// ([`EndMon::is_fast`], in `hooks.rs`: with the hooks compiled out the
/// compare is with 0), inline in the task's code, so it is read as `tls.rs`
/// says (never through an address kept across a suspension).
#[inline(always)]
pub(crate) fn fast() -> u64 {
    tls::fast()
}

/// [`Recorder::record`] on this thread's recorder, without a closure: the
/// stream ends call it on a path they mark cold (so that the check before
/// it is laid out for the unmonitored case), where LLVM leaves closures out
/// of line. Inlined into a task's code, so the recorder is found as
/// `tls.rs` says, afresh at each call; false on a thread that has not
/// recorded a period yet.
#[inline(always)]
pub(crate) fn record(end: &EndMon) -> bool {
    if !tls::is_ops(end.stamp_again()) {
        return false;
    }
    let p = tls::recorder().cast::<Recorder>();
    debug_assert!(!p.is_null(), "an ops stamp is set after the recorder");
    // SAFETY: the thread's ops stamp matched an end's, so a period began on
    // this thread (a new thread's ops stamp, `u64::MAX`, is no end's: see
    // `tls::ops`), and `begin` set the recorder's address first; the
    // recorder lives as long as the thread (see `with`).
    unsafe { &*p }.push_key(end.key)
}

impl Recorder {
    /// The running dispatch's epoch (0: none).
    #[inline(always)]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.get()
    }

    /// See [`fast`].
    #[inline(always)]
    pub(crate) fn fast(&self) -> u64 {
        fast()
    }

    /// How ends record in the running period (a [`kind`]; `NONE` when no
    /// period runs).
    #[inline(always)]
    pub(crate) fn run_kind(&self) -> u64 {
        if self.epoch() == 0 {
            kind::NONE
        } else {
            self.run_kind.get()
        }
    }

    /// The stamp of ends listed for op runs in the running period.
    #[inline(always)]
    pub(crate) fn ops_stamp(&self) -> u64 {
        tls::ops()
    }

    /// A dispatch with `epoch` (a nonzero multiple of 4) of the task tagged
    /// `tag` begins on this thread; its ends record as `run_kind` says.
    #[inline]
    pub(crate) fn begin(&self, epoch: u64, run_kind: u64, tag: u64) {
        debug_assert!(epoch != 0 && epoch & 3 == 0);
        self.epoch.set(epoch);
        tls::set_recorder((self as *const Recorder).cast());
        tls::set_ops(if run_kind == kind::OPS {
            epoch | kind::OPS
        } else {
            u64::MAX
        });
        tls::set_fast(match run_kind {
            kind::NONE => 0,
            kind::COUNT => tag,
            _ => u64::MAX,
        });
        self.run_kind.set(run_kind);
    }

    /// The dispatch ended: messages from now on are not recorded.
    #[inline]
    pub(crate) fn end(&self) {
        self.epoch.set(0);
        tls::set_ops(u64::MAX);
        tls::set_fast(0);
    }

    /// Records a message of a listed end on the fast path; false when the
    /// end is not listed in the running period, or needs the slow path.
    #[inline(always)]
    pub(crate) fn record(&self, end: &EndMon) -> bool {
        tls::is_ops(end.stamp_again()) && self.push_key(end.key)
    }

    /// Takes back what [`record`](Self::record) recorded on the fast path for
    /// an operation that moved no message (it blocked, or the stream was
    /// empty, full or closed). False when that was recorded elsewhere (the
    /// worker's log) or not at all: the caller decides.
    #[inline]
    pub(crate) fn leave(&self, end: &EndMon) -> bool {
        end.stamp == self.ops_stamp() && self.pop_op()
    }

    /// Lists `end` (of `stream`, writing if `write`) in the running period
    /// if that can be done here: a period runs, the end is not listed in it
    /// yet, and it gets an entry below [`MAX_IO`] of the fast kinds. False
    /// otherwise (the worker's log then decides).
    #[inline]
    pub(crate) fn list(&self, end: &mut EndMon, stream: u64, write: bool) -> bool {
        let e = self.epoch();
        if e == 0 || end.epoch() == e {
            return false;
        }
        let k = self.run_kind.get();
        if k == kind::NONE {
            // Runs that record no messages bind their ends plain (stamp 0)
            // and never get here; there would be nothing to list.
            return true;
        }
        let n = self.io_len.get() as usize;
        if k == kind::SLOW || n >= MAX_IO {
            return false;
        }
        let i = self.add_entry(stream, write);
        end.stamp = e | k;
        end.set_entry(i as u16, write);
        true
    }

    /// Adds an entry for `stream` (writing if `write`) to the running
    /// period, or finds the one it has (an end that went to another task and
    /// came back, `task_entries.rs`); returns its index. Entries from
    /// [`MAX_IO`] on only count here: the caller keeps them.
    #[inline]
    pub(crate) fn add_entry(&self, stream: u64, write: bool) -> usize {
        let n = self.io_len.get() as usize;
        let writes = self.writes.get();
        let listed = self.ids[..n.min(MAX_IO)]
            .iter()
            .enumerate()
            .position(|(i, id)| id.get() == stream && (writes >> i & 1 != 0) == write);
        if let Some(i) = listed {
            return i;
        }
        if let Some(id) = self.ids.get(n) {
            id.set(stream);
            self.writes.set(self.writes.get() | u32::from(write) << n);
        }
        self.io_len.set(n as u32 + 1);
        n
    }

    /// Loads a task's entries (`task_entries.rs`) for its period: `ids`, at
    /// most [`MAX_IO`], with a bit per writing end in `writes`.
    #[inline]
    pub(crate) fn load_entries(&self, ids: &[u64], writes: u32) {
        debug_assert!(ids.len() <= MAX_IO && self.io_len() == 0);
        for (c, &id) in self.ids.iter().zip(ids) {
            c.set(id);
        }
        self.io_len.set(ids.len().min(MAX_IO) as u32);
        self.writes.set(writes);
    }

    /// Appends the ids of the entries listed after the first `ids.len()`
    /// (below [`MAX_IO`]) to `ids`.
    #[inline]
    pub(crate) fn save_entries(&self, ids: &mut Vec<u64>) {
        let n = self.io_len().min(MAX_IO);
        if let Some(new) = self.ids.get(ids.len()..n) {
            ids.extend(new.iter().map(Cell::get));
        }
    }

    /// Bit i: entry i (below [`MAX_IO`]) is a writing end.
    #[inline]
    pub(crate) fn writes(&self) -> u32 {
        self.writes.get()
    }

    /// The entries (below [`MAX_IO`]) that the period's record lists: those
    /// that moved a message or woke their peer, and the first of `blocked`,
    /// the stream the task blocked on.
    #[inline]
    pub(crate) fn keep(&self, blocked: Option<u64>) -> u32 {
        let b = blocked
            .and_then(|b| self.entry_of(b))
            .map_or(0, |i| 1u32 << i);
        self.moved.get() | self.woke.get() | b
    }

    /// The entries [`keep`](Self::keep) selects, in record order (`lead`
    /// first, `task_entries::Order`), for a period of at most two entries,
    /// taken as [`take_entry`](Self::take_entry) does (`None` for one left
    /// out);
    /// `None`, with nothing taken, for a period with more. Straight-line
    /// code for the relay and ring tasks, as count mode's `TaskMon::take_two`.
    #[inline(always)]
    pub(crate) fn take_two(
        &self,
        lead: Option<usize>,
        blocked: Option<u64>,
    ) -> Option<[Option<EndIo>; 2]> {
        let n = self.io_len();
        if n > 2 {
            return None;
        }
        let keep = self.keep(blocked);
        let take = |i: usize| (i < n && keep >> i & 1 != 0).then(|| self.take_entry(i, true));
        let (e0, e1) = (take(0), take(1));
        Some(if lead == Some(1) { [e1, e0] } else { [e0, e1] })
    }

    /// Entry `idx` (below [`MAX_IO`]) woke the task on the other side.
    #[inline]
    pub(crate) fn set_woke(&self, idx: u16) {
        if usize::from(idx) < MAX_IO {
            self.woke.set(self.woke.get() | 1 << idx);
        }
    }

    /// Appends the entries below [`MAX_IO`] of the period that ended to `io`,
    /// with their counts (zero unless `counted`), and clears them, their
    /// counts and the entry count.
    #[inline]
    pub(crate) fn take_entries(&self, io: &mut Vec<StreamIo>, counted: bool) {
        let n = self.io_len().min(MAX_IO);
        io.extend((0..n).map(|i| StreamIo::from(self.take_entry(i, counted))));
        self.clear_entries();
    }

    /// Records one message by its key (`entry << 1 | write`, ops mode);
    /// false when the key list is full and the caller must
    /// [`spill`](Self::spill) first.
    #[inline(always)]
    #[must_use]
    pub(crate) fn push_key(&self, key: u32) -> bool {
        let n = self.keys_len.get() as usize;
        let Some(k) = self.keys.get(n) else {
            return false;
        };
        k.set(key);
        self.keys_len.set(n as u32 + 1);
        true
    }

    /// [`push_key`](Self::push_key) by entry and side (the tests' form).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn push_op(&self, idx: u16, write: bool) -> bool {
        self.push_key(u32::from(idx) << 1 | u32::from(write))
    }

    /// Takes back the last key pushed (see [`leave`](Self::leave)); false
    /// when none is held.
    #[inline]
    pub(crate) fn pop_op(&self) -> bool {
        let n = self.keys_len.get();
        debug_assert!(n > 0, "no key to take back");
        if n == 0 {
            return false;
        }
        self.keys_len.set(n - 1);
        true
    }

    /// Entries listed in the running period (or the one that just ended).
    #[inline]
    pub(crate) fn io_len(&self) -> usize {
        self.io_len.get() as usize
    }

    /// Entry `i` (below [`MAX_IO`] and [`io_len`](Self::io_len)) with its
    /// count (zero unless `counted`), as the period's record lists it; the
    /// count is reset.
    #[inline(always)]
    pub(crate) fn take_entry(&self, i: usize, counted: bool) -> EndIo {
        let i = i & (MAX_IO - 1);
        let c = self.counts[i].replace(0);
        EndIo {
            stream: self.ids[i].get(),
            count: if counted { c } else { 0 },
            write: self.writes.get() >> i & 1 != 0,
            woke_peer: self.woke.get() >> i & 1 != 0,
        }
    }

    /// Zeroes the counts of the period's entries.
    #[inline]
    pub(crate) fn clear_counts(&self) {
        let n = (self.io_len.get() as usize).min(MAX_IO);
        for c in &self.counts[..n] {
            c.set(0);
        }
    }

    /// The entry (below [`MAX_IO`]) of `stream`, if listed.
    #[inline]
    pub(crate) fn entry_of(&self, stream: u64) -> Option<usize> {
        let n = (self.io_len.get() as usize).min(MAX_IO);
        self.ids[..n].iter().position(|id| id.get() == stream)
    }

    /// Forgets the period's entries, whose counts [`take_entry`](Self::take_entry)
    /// reset.
    #[inline]
    pub(crate) fn clear_entries(&self) {
        self.io_len.set(0);
        self.writes.set(0);
        self.woke.set(0);
        self.moved.set(0);
    }

    /// Adds `n` messages to entry `i`'s count (ops mode, from
    /// [`scan_ops`](Self::scan_ops)).
    #[inline]
    pub(crate) fn add_count(&self, i: u16, n: u32) {
        let i = usize::from(i) & (MAX_IO - 1);
        let c = &self.counts[i];
        c.set(c.get().wrapping_add(n));
        self.moved.set(self.moved.get() | 1 << i);
    }

    /// The held keys.
    #[inline]
    fn held(&self) -> &[Cell<u32>] {
        &self.keys[..(self.keys_len.get() as usize).min(MAX_KEYS)]
    }

    /// Appends the held keys to `out` as op runs (merging with its last run)
    /// and clears them: the key list was full, or the period ended.
    #[cold]
    pub(crate) fn spill(&self, out: &mut Vec<Op>) {
        for k in self.held() {
            let op = op_of(k.get());
            match out.last_mut() {
                Some(last) if last.io_index == op.io_index && last.write == op.write => {
                    last.count = last.count.wrapping_add(1)
                }
                _ => out.push(op),
            }
        }
        self.keys_len.set(0);
    }

    /// Appends this period's remaining messages to `out` as op runs and
    /// clears them.
    #[inline]
    pub(crate) fn take_ops(&self, out: &mut Vec<Op>) {
        self.spill(out);
    }

    /// One pass over this period's held keys (none spilled): calls
    /// `f(entry, write, count)` for its op runs (or, for an interleaved list,
    /// the two runs it interleaves) and says which form the list has, so
    /// that the common forms need no op list at all. Leaves the keys.
    ///
    /// The forms hold for the entries in the record's order: the entry of
    /// the first message (the *lead*, returned with the form) first, then
    /// the others in entry order. So a relay's period that begins with the
    /// write it blocked on is implied or interleaved too, although its
    /// entries stay in the task's order (`task_entries.rs`). Ops that need
    /// another order are listed (`Explicit`), and the listed path puts the
    /// entries in the order of first use.
    #[inline]
    pub(crate) fn scan_ops(&self, mut f: impl FnMut(u16, bool, u32)) -> (OpsForm, Option<usize>) {
        let keys = self.held();
        let n = keys.len();
        let (Some(a), Some(b)) = (keys.first().map(Cell::get), keys.get(1).map(Cell::get)) else {
            return match keys.first() {
                Some(k) => {
                    let op = op_of(k.get());
                    f(op.io_index, op.write, 1);
                    (OpsForm::Implied, Some(usize::from(op.io_index)))
                }
                None => (OpsForm::None, None),
            };
        };
        // Interleaved: one message at a time between two keys, at least
        // three (two are implied), a first. Then a gets the odd message. The
        // record lists a's entry first; if that is b's too, a must be its
        // read (an entry's implied runs are its reads, then its writes).
        if n > 2 && (a < b || a >> 1 != b >> 1) && alternates(keys, a, b) {
            let (x, y) = (op_of(a), op_of(b));
            f(x.io_index, x.write, n.div_ceil(2) as u32);
            f(y.io_index, y.write, (n / 2) as u32);
            return (OpsForm::Interleaved, Some(usize::from(x.io_index)));
        }
        // Implied: one run per entry and side, in record order (the lead,
        // a's entry, first, then entry order), reads before writes: the keys'
        // ranks in that order never decrease.
        let lead = a >> 1;
        let rank = |k: u32| if k >> 1 == lead { k & 1 } else { k + 2 };
        let mut implied = true;
        let (mut key, mut count) = (a, 0u32);
        for k in keys {
            let k = k.get();
            if k != key {
                implied &= rank(k) > rank(key);
                let op = op_of(key);
                f(op.io_index, op.write, count);
                (key, count) = (k, 0);
            }
            count += 1;
        }
        let op = op_of(key);
        f(op.io_index, op.write, count);
        if implied {
            (OpsForm::Implied, Some(lead as usize))
        } else {
            (OpsForm::Explicit, None)
        }
    }

    /// Forgets this period's held keys.
    #[inline]
    pub(crate) fn clear_ops(&self) {
        self.keys_len.set(0);
    }
}

/// Whether `keys` is `a, b, a, b, ...` (ending in either). The period of a
/// relay is all alternation, so there is no early exit: pairs of keys are
/// compared as one 64-bit word, and mismatches are gathered with `|`, which
/// LLVM can run several pairs wide. (The plain `windows(3)` test cost seven
/// instructions a key.)
#[inline]
fn alternates(keys: &[Cell<u32>], a: u32, b: u32) -> bool {
    let pair = |x: u32, y: u32| u64::from(x) | u64::from(y) << 32;
    let want = pair(a, b);
    let pairs = keys.chunks_exact(2);
    let odd = pairs.remainder().first().is_some_and(|k| k.get() != a);
    let diff = pairs.fold(0, |acc, p| acc | (pair(p[0].get(), p[1].get()) ^ want));
    diff == 0 && !odd
}

/// A one-message op from its key `entry << 1 | write`.
#[inline]
fn op_of(key: u32) -> Op {
    Op {
        io_index: (key >> 1) as u16,
        write: key & 1 != 0,
        count: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_and_spill_in_order() {
        with(|r| {
            let mut out = Vec::new();
            for (idx, w) in [(0, false), (0, false), (1, true), (0, false)] {
                assert!(r.push_op(idx, w));
            }
            r.take_ops(&mut out);
            assert_eq!(out, [Op::read(0, 2), Op::write(1, 1), Op::read(0, 1)]);
            out.clear();
            let mut n = 0;
            for i in 0..MAX_KEYS + 3 {
                let w = i % 2 == 1;
                if !r.push_op(0, w) {
                    r.spill(&mut out);
                    assert!(r.push_op(0, w));
                }
                n += 1;
            }
            r.take_ops(&mut out);
            assert_eq!(out.len(), n);
            assert!(out
                .iter()
                .enumerate()
                .all(|(i, op)| op.count == 1 && op.write == (i % 2 == 1)));
        });
    }

    fn scan(keys: &[(u16, bool)]) -> ((OpsForm, Option<usize>), Vec<Op>) {
        with(|r| {
            for &(i, w) in keys {
                assert!(r.push_op(i, w));
            }
            let mut runs = Vec::new();
            let form = r.scan_ops(|io_index, write, count| {
                runs.push(Op {
                    io_index,
                    write,
                    count,
                })
            });
            r.clear_ops();
            (form, runs)
        })
    }

    #[test]
    fn alternation_is_found_exactly() {
        let cells = |v: &[u32]| v.iter().map(|&k| Cell::new(k)).collect::<Vec<_>>();
        assert!(alternates(&cells(&[1, 2, 1, 2, 1]), 1, 2));
        assert!(alternates(&cells(&[1, 2, 1, 2]), 1, 2));
        assert!(!alternates(&cells(&[1, 2, 1, 2, 2]), 1, 2), "odd tail");
        assert!(!alternates(&cells(&[1, 2, 2, 1]), 1, 2));
        for len in 3..40 {
            for bad in 0..len {
                let mut v: Vec<u32> = (0..len).map(|i| if i % 2 == 0 { 4 } else { 7 }).collect();
                v[bad] ^= 1;
                assert!(!alternates(&cells(&v), 4, 7), "mismatch at {bad} of {len}");
            }
        }
    }

    #[test]
    fn scan_finds_the_form() {
        let (r0, w1, w0) = ((0, false), (1, true), (0, true));
        let implied = (OpsForm::Implied, Some(0));
        assert_eq!(scan(&[]), ((OpsForm::None, None), vec![]));
        assert_eq!(scan(&[r0]), (implied, vec![Op::read(0, 1)]));
        assert_eq!(
            scan(&[r0, r0, w1]),
            (implied, vec![Op::read(0, 2), Op::write(1, 1)])
        );
        assert_eq!(
            scan(&[r0, w1, r0, w1, r0]),
            (
                (OpsForm::Interleaved, Some(0)),
                vec![Op::read(0, 3), Op::write(1, 2)]
            )
        );
        // The higher entry first: interleaved, led by it (a relay's period
        // that begins with the write it blocked on).
        assert_eq!(
            scan(&[w1, r0, w1, r0]),
            (
                (OpsForm::Interleaved, Some(1)),
                vec![Op::write(1, 2), Op::read(0, 2)]
            )
        );
        // One entry's write before its read: its implied runs are the other
        // way round, so listed.
        assert_eq!(scan(&[w0, r0, w0]).0, (OpsForm::Explicit, None));
        assert_eq!(scan(&[r0, w0, r0]).0, (OpsForm::Interleaved, Some(0)));
        // Two are implied, led by the first; a broken alternation is listed.
        assert_eq!(
            scan(&[w1, w1, r0]),
            (
                (OpsForm::Implied, Some(1)),
                vec![Op::write(1, 2), Op::read(0, 1)]
            )
        );
        assert_eq!(scan(&[r0, w1, w1, r0]).0, (OpsForm::Explicit, None));
        // Past the lead, entry order.
        let (r2, w3) = ((2, false), (3, true));
        assert_eq!(scan(&[w3, r0, r2]).0, (OpsForm::Implied, Some(3)));
        assert_eq!(scan(&[w3, r2, r0]).0, (OpsForm::Explicit, None));
        assert_eq!(scan(&[w1, r0, r0, w1]).0, (OpsForm::Explicit, None));
    }

    #[test]
    fn entries_and_counts_clear_when_taken() {
        with(|r| {
            r.begin(4, kind::OPS, 0);
            let mut ends: [EndMon; 3] = Default::default();
            for (i, end) in ends.iter_mut().enumerate() {
                assert!(r.list(end, 10 + i as u64, i == 1));
            }
            assert!(!r.list(&mut ends[0], 10, false), "listed once a period");
            for (end, n) in ends.iter().zip([1, 0, 2]) {
                for _ in 0..n {
                    assert!(r.record(end));
                }
            }
            r.set_woke(1);
            r.end();
            assert!(!r.record(&ends[0]), "no period: not recorded");
            assert_eq!(
                r.scan_ops(|i, _, n| r.add_count(i, n)),
                (OpsForm::Implied, Some(0))
            );
            r.clear_ops();
            let mut io = Vec::new();
            r.take_entries(&mut io, true);
            let want = |stream, reads, writes, woke_peer| StreamIo {
                stream,
                reads,
                writes,
                woke_peer,
            };
            assert_eq!(
                io,
                [
                    want(10, 1, 0, false),
                    want(11, 0, 0, true),
                    want(12, 2, 0, false)
                ]
            );
            io.clear();
            r.begin(8, kind::OPS, 0);
            assert!(r.list(&mut ends[0], 10, false));
            r.end();
            r.take_entries(&mut io, true);
            assert_eq!(io, [want(10, 0, 0, false)]);
        });
    }
}
