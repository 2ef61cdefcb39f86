//! The thread-local "where am I": the task running on this thread and its
//! worker, and the operations that need them (spawn, yield, block, schedule).
//! The two pointers are thread-local words read afresh at each use, so that
//! a task's code never keeps another thread's (`tls.rs` says why: at a run's
//! end a task's stack unwinds on the thread that called `run`).

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use crate::error::SpawnError;
use crate::monitor::sample_state as sampler_state;
use crate::stream::Ends;
use crate::task::{BlockedOn, Suspend, Task, TaskId, TaskRef};
use crate::worker::{PendingList, WorkerLocal, WorkerShared};

/// Drops the coroutine of `task`, which may be suspended. corosensei unwinds
/// a suspended coroutine's stack with a panic of its own; the task
/// boundary's `catch_unwind` sees the forced-unwind word and passes that
/// panic on instead of taking it for the task's.
///
/// The word holds `task` for the time of the drop, so that the overflow
/// handler and the panic hook can name it, and is put back to what it was
/// afterwards (also when a destructor's panic leaves the drop): a run in a
/// destructor during another run's teardown ends with the outer unwind
/// still marked. The caller is a run's teardown, which has given its
/// thread a new thread's words (`tls::ThreadWords`), so no task runs here:
/// a destructor that blocks gets "closed" and one that spawns gets nothing.
pub(crate) fn drop_suspended(coro: Option<crate::task::Coro>, task: *const Task) {
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            crate::tls::set_forced_unwind(self.0);
        }
    }
    let _restore = Restore(crate::tls::forced_unwind());
    crate::tls::set_forced_unwind(task as u64);
    drop(coro);
}

/// The task whose stack this thread is unwinding ([`drop_suspended`]), or
/// null.
pub(crate) fn unwinding_task_ptr() -> *const Task {
    crate::tls::forced_unwind() as *const Task
}

/// Whether the calling task's stack is being unwound because its run ended
/// while the task was suspended (another task failed, or a deadlock ended
/// the run): the runtime unwinds the stack so that what the task holds is
/// dropped.
///
/// A task that catches panics with [`std::panic::catch_unwind`] must let
/// this unwind go on: when this returns true, hand the payload back with
/// [`std::panic::resume_unwind`]. Swallowing it makes the coroutine library
/// abort the process.
pub fn forced_unwinding() -> bool {
    crate::tls::forced_unwind() != 0
}

#[inline(always)]
pub(crate) fn current_task_ptr() -> *const Task {
    crate::tls::task().cast()
}

#[inline(always)]
pub(crate) fn set_current_task(t: *const Task) {
    crate::tls::set_task(t.cast());
}

#[inline(always)]
pub(crate) fn current_worker_ptr() -> *const WorkerLocal {
    crate::tls::worker().cast()
}

pub(crate) fn set_current_worker(w: *const WorkerLocal) {
    crate::tls::set_worker(w.cast());
}

/// Who the caller is as a stream side's holder, as a holder word
/// (`stream/holder.rs`): the running task and its run; the run a
/// `Runtime::spawn_with` hands ends for; outside every run on a thread where
/// no task runs; nobody (0) in a run's teardown, which drops ends it does
/// not hold.
#[inline]
pub(crate) fn current_holder() -> u64 {
    let t = current_task_ptr();
    if !t.is_null() {
        // SAFETY: the running task is alive.
        return unsafe { (*t).holder };
    }
    current_holder_cold()
}

#[cold]
fn current_holder_cold() -> u64 {
    if forced_unwinding() {
        return 0;
    }
    match crate::tls::holding_for() {
        0 => crate::stream::OUTSIDE,
        run => crate::stream::holder_word(run, 0),
    }
}

/// Id of the running task, 0 outside tasks.
pub(crate) fn current_task_id() -> TaskId {
    let t = current_task_ptr();
    if t.is_null() {
        0
    } else {
        // SAFETY: the current-task pointer is set by the worker for the duration
        // of a dispatch, during which the task is alive.
        unsafe { (*t).id }
    }
}

pub(crate) fn worker() -> Option<&'static WorkerLocal> {
    let w = current_worker_ptr();
    // SAFETY: the pointer is set by a worker thread for as long as its loop runs
    // and cleared before the WorkerLocal is dropped; code reading it runs on that
    // thread inside the loop.
    unsafe { w.as_ref() }
}

/// Information about the running task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task's id.
    pub id: TaskId,
    /// Its name (its place in the network).
    pub name: String,
    /// The worker it runs on.
    pub worker: usize,
}

/// The running task, or `None` outside a rill task.
pub fn current() -> Option<TaskInfo> {
    let t = current_task_ptr();
    if t.is_null() {
        return None;
    }
    // SAFETY: see current_task_id.
    let t = unsafe { &*t };
    Some(TaskInfo {
        id: t.id,
        name: t.name.to_string(),
        worker: t.worker.load(Ordering::Relaxed),
    })
}

/// Number of workers of the runtime this task runs in (0 outside).
pub fn worker_count() -> usize {
    worker().map(|w| w.shared.workers.len()).unwrap_or(0)
}

pub(crate) fn default_capacity() -> usize {
    worker().map(|w| w.shared.cfg.capacity).unwrap_or(16)
}

pub(crate) fn next_stream_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The running worker's tag for `Core::writer_worker`: its index plus one,
/// 0 on a thread that is no worker.
pub(crate) fn worker_tag() -> u32 {
    worker().map_or(0, |w| w.id as u32 + 1)
}

/// A reader dropped on this thread had read `n` messages from a writer
/// first used on the worker tagged `writer` ([`worker_tag`]): counted as
/// crossed when both are workers and they differ.
pub(crate) fn note_received(n: u64, writer: u32) {
    if let Some(w) = worker() {
        if writer != 0 && writer != w.id as u32 + 1 {
            w.add_crossed(n);
        }
    }
}

pub(crate) fn note_sent(n: u64) {
    if let Some(w) = worker() {
        w.add_messages(n);
    }
}

/// Spawns a task placed by the runtime's mapping policy. Call it from inside a
/// running task; the name is the task's place in the network (`app/stage/3`).
///
/// The spawn family, here and on [`Runtime`](crate::Runtime) alike: `spawn`,
/// [`spawn_on`] (a given worker) and [`spawn_with`] (handed its stream
/// ends) return the new task's id and panic when the task cannot be made;
/// [`try_spawn`] and [`try_spawn_on`] return the error instead.
///
/// A panic in `f` ends the run with an error naming the task. If `f` catches
/// panics itself, it must re-raise the unwind of a run that ends while the
/// task is suspended (see [`forced_unwinding`]).
///
/// While the run that owned the calling task is dropping it
/// ([`forced_unwinding`]: a destructor spawns), nothing is spawned: `f` is
/// dropped and the id returned is 0, which no task has.
///
/// # Panics
/// Outside a rill task (use `Runtime::spawn` before the run), or when no
/// stack can be had; inside a task the panic ends the run with an error.
#[track_caller]
pub fn spawn<F>(name: impl Into<Cow<'static, str>>, f: F) -> TaskId
where
    F: FnOnce() + Send + 'static,
{
    or_panic(spawn_inner(name.into(), None, |_| f))
}

/// [`spawn`], returning the error instead of panicking.
pub fn try_spawn<F>(name: impl Into<Cow<'static, str>>, f: F) -> Result<TaskId, SpawnError>
where
    F: FnOnce() + Send + 'static,
{
    spawn_inner(name.into(), None, |_| f)
}

/// [`spawn`] on the given worker, whatever the mapping policy says.
///
/// # Panics
/// As [`spawn`], and when there is no such worker.
#[track_caller]
pub fn spawn_on<F>(worker: usize, name: impl Into<Cow<'static, str>>, f: F) -> TaskId
where
    F: FnOnce() + Send + 'static,
{
    or_panic(spawn_inner(name.into(), Some(worker), |_| f))
}

/// [`spawn_on`], returning the error instead of panicking.
pub fn try_spawn_on<F>(
    worker: usize,
    name: impl Into<Cow<'static, str>>,
    f: F,
) -> Result<TaskId, SpawnError>
where
    F: FnOnce() + Send + 'static,
{
    spawn_inner(name.into(), Some(worker), |_| f)
}

/// [`spawn`] a task that is handed `ends` (its stream ends; see [`Ends`]):
/// the runtime records the task as their holder before it runs, so that a
/// deadlock report names the tasks on both sides of every stream, even of
/// one whose end was never used.
///
/// ```
/// let mut rt = rill::Runtime::builder().workers(1).build().unwrap();
/// let (mut w, r) = rill::stream::<u32>(1);
/// rt.spawn_with("echo", (r, w), |(mut r, mut w)| {
///     // Both ends belong to this task: it waits for itself.
///     let v = r.read();
///     let _ = w.write(v.unwrap_or(0));
/// });
/// let err = rt.run().unwrap_err();
/// assert!(err.to_string().contains("waiting cycle: echo"), "{err}");
/// ```
///
/// # Panics
/// As [`spawn`].
#[track_caller]
pub fn spawn_with<E, F>(name: impl Into<Cow<'static, str>>, ends: E, f: F) -> TaskId
where
    E: Ends,
    F: FnOnce(E) + Send + 'static,
{
    or_panic(spawn_inner(name.into(), None, move |id| {
        ends.hold(id);
        move || f(ends)
    }))
}

/// A spawn's result for the panicking forms: the id, 0 during a run's
/// forced unwind, else a panic naming the caller's line.
#[track_caller]
fn or_panic(r: Result<TaskId, SpawnError>) -> TaskId {
    match r {
        Ok(id) => id,
        Err(SpawnError::RunEnded { .. }) => 0,
        Err(e) => panic!("{e}"),
    }
}

/// Makes and queues a task. `make` gets the task's id and returns its body
/// (it runs once the id is known and before the task is published, so it
/// may record the id where the task's ends are).
fn spawn_inner<M, F>(
    name: Cow<'static, str>,
    worker_hint: Option<usize>,
    make: M,
) -> Result<TaskId, SpawnError>
where
    M: FnOnce(TaskId) -> F,
    F: FnOnce() + Send + 'static,
{
    let Some(w) = worker() else {
        return Err(if forced_unwinding() {
            SpawnError::RunEnded {
                name: name.into_owned(),
            }
        } else {
            SpawnError::OutsideRuntime
        });
    };
    let shared = &w.shared;
    let target = shared.mapper.place(&name, worker_hint, w.id)?;
    if shared.live.load(Ordering::Relaxed) >= shared.cfg.max_tasks {
        return Err(SpawnError::NoStack {
            name: name.to_string(),
            reason: format!(
                "{} tasks are live, the configured limit (Builder::max_tasks)",
                shared.cfg.max_tasks
            ),
        });
    }
    let stack = w.take_stack().map_err(|e| SpawnError::NoStack {
        name: name.to_string(),
        reason: e.to_string(),
    })?;
    // The body first, then the task: `make` runs user code (an `Ends::hold`
    // of the program's own), and a panic there must leave no task behind
    // that would never run (the run would end in a false deadlock).
    let id = shared.next_task_id();
    let body = make(id);
    let task = shared.new_task_as(id, name, current_task_id(), target, None);
    // A worker given at spawn wins: never stolen (except under
    // `Mapping::Steal`, whose thieves may take any task that never ran).
    task.get()
        .pinned
        .set(worker_hint.is_some() && !shared.cfg.mapping_steals_all());
    w.install_coroutine(task, stack, body);
    w.note_spawn(task);
    if target == w.id {
        w.push_local(task);
    } else {
        shared.workers[target].post(task);
    }
    Ok(id)
}

/// Lets other ready tasks on this worker run; returns when this task is
/// dispatched again. A no-op outside tasks.
#[inline]
pub fn yield_now() {
    let t = current_task_ptr();
    if t.is_null() {
        return;
    }
    // SAFETY: the yielder pointer was set when the coroutine started and
    // points into its own stack, which is alive while it runs.
    unsafe { (*(*t).yielder.get()).suspend(Suspend::Yield) };
}

/// The running worker, when it is `worker` (a waker's target read from a
/// wait slot). Outside a worker (and under loom) `None`.
#[inline(always)]
pub(crate) fn worker_if_mine(worker: *const WorkerShared) -> Option<&'static WorkerLocal> {
    if cfg!(loom) {
        return None;
    }
    let w = crate::context::worker()?;
    std::ptr::eq(w.me(), worker).then_some(w)
}

/// Queues a task that the caller owns on `worker`, the worker it belongs
/// to: locally when that is the running worker, else through its inbox.
#[inline]
pub(crate) fn hand_to(worker: *const WorkerShared, t: TaskRef) {
    match worker_if_mine(worker) {
        Some(w) => w.push_local(t),
        None => post(worker, t),
    }
}

/// Posts a task that the caller owns to `worker`'s inbox (`worker/README.md`,
/// post-work steps), from another worker or from a thread outside the run.
///
/// The caller keeps the run alive meanwhile: it holds the task's wait slot
/// in WAKING, which the task's unregistering waits out, and a run frees its
/// workers only after it has unwound every task left.
#[cold]
#[inline(never)]
pub(crate) fn post(worker: *const WorkerShared, t: TaskRef) {
    if cfg!(loom) {
        // The loom models have no workers; READY is their evidence of a wake.
        t.get().transition_to_ready_uncontended();
        return;
    }
    // SAFETY: a registration names the worker of the run the task belongs
    // to, alive as said above.
    unsafe { &*worker }.post(t);
}

/// How many times [`spin_on`] looks before it gives up: with a `pause`
/// between looks, some microseconds, well inside the worker's own idle spin.
const TASK_SPIN: u32 = 256;

/// Before a task blocks on a stream: the current worker, if it has nothing
/// else to run (no ready task, nothing in the inbox). Then what the task waits
/// for can only come from another thread, and the worker would spin idle
/// anyway, so the task may spin on it first ([`spin_on`]): a message or free
/// slot from another worker that arrives meanwhile is taken without a block, a
/// cross-worker wake, an inbox post and a dispatch (a cross-worker round trip:
/// about 1 µs down to about 0.2 µs here).
///
/// On a monitored worker the caller brackets the spin with
/// [`hooks::spin_begin`](crate::hooks::spin_begin) and
/// [`hooks::spin_end`](crate::hooks::spin_end), which log it as what it
/// stands for: the period ends blocked, the spin is a wait, and a new period
/// begins. Inside one period the log would show a wait as work.
#[inline(always)]
pub(crate) fn spin_worker() -> Option<&'static WorkerLocal> {
    match worker() {
        // The common case on a busy worker: one look at its queues. Not
        // where workers share cores: the peer may be waiting for this core.
        Some(w) if !w.has_other_work() && w.may_spin() => Some(w),
        _ => None,
    }
}

/// Spins on `ready` for at most [`TASK_SPIN`] looks, giving up as soon as
/// other work appears on `w` (see [`spin_worker`]). Returns whether `ready`
/// came true; the caller then looks again through its normal path.
#[cold]
#[inline(never)]
pub(crate) fn spin_on(w: &WorkerLocal, ready: impl Fn() -> bool) -> bool {
    w.count_spin();
    if !w.is_sampled() {
        return spin_looking(w, ready);
    }
    let task = current_task_id();
    w.say(sampler_state::task(task, sampler_state::SPIN));
    let got = spin_looking(w, ready);
    // Back to the worker's own state: while the task runs, samples take it
    // from the current-task word (`self_sample::sampled_word`).
    w.say(sampler_state::SCHED);
    got
}

/// [`spin_on`]'s loop.
#[inline(always)]
fn spin_looking(w: &WorkerLocal, ready: impl Fn() -> bool) -> bool {
    for _ in 0..TASK_SPIN {
        std::hint::spin_loop();
        if ready() {
            return true;
        }
        if w.has_other_work() {
            return false;
        }
    }
    false
}

/// Blocks the current task until `ready` holds, registered in `slots`.
/// Returns true after the task was woken (or found `ready` on its
/// re-check); the caller loops and tries again. `blocked_on` is left as it
/// was set here: it means something only while the task is BLOCKED.
///
/// Returns false, without blocking, while the run that owned the task is
/// unwinding it ([`forced_unwinding`]): a destructor that writes to a full
/// stream or reads an empty one then sees the stream as closed, instead of
/// suspending a coroutine that is being dropped.
///
/// `held` says what the holder of the side(s) waited on is to the task's
/// run (given the task's holder word; `stream/holder.rs`), counted for the
/// run's stall rule while the task is suspended.
///
/// `peer` runs after the registration fence: it re-checks the peer side of
/// the stream(s) and wakes a peer whose registration this task's own earlier
/// operations may have missed (the fast path's barrier is a compiler fence,
/// see `barrier.rs`). The fence makes that re-check exact: of the peer's
/// registration fence and ours, the later one's loads see the earlier one's
/// stores.
///
/// # Panics
/// Outside a rill task, unless the run is unwinding: blocking needs a task
/// to suspend.
#[inline(always)]
#[track_caller]
pub(crate) fn block(
    slots: &[&crate::stream::slot_api::Slot],
    on: BlockedOn,
    held: impl FnOnce(u64) -> crate::stream::Peer,
    ready: impl Fn() -> bool,
    peer: impl FnOnce(),
    pend: impl FnOnce(&mut PendingList),
) -> bool {
    let tp = current_task_ptr();
    if tp.is_null() {
        return block_outside_task();
    }
    // SAFETY: the current task is alive while it runs.
    let task = unsafe { &*tp };
    task.blocked_on.with_mut(|b| {
        // SAFETY: only the running task touches blocked_on while it runs.
        unsafe { *b = on }
    });
    let many = slots.len() > 1;
    task.transition_to_blocked();
    let me = worker().map_or(std::ptr::null(), |w| w.me());
    for s in slots {
        s.register(tp, me, many);
    }
    // Unregisters on every way out, the forced unwind of a run that ends
    // while the task is suspended included: a slot never keeps a pointer to
    // a task that is gone (an end that outlives its task, leaked or kept by
    // another thread, would wake freed memory).
    let registered = Registered(slots);
    // The registering side's store-load barrier: pairs with the peer's light
    // barrier (see barrier.rs), and closes the race in which the peer wrote
    // or closed between our last look and our registration.
    crate::sync::fence(Ordering::SeqCst);
    peer();
    if ready() {
        // A task registered in one slot is arbitrated there, in several (a
        // poll) by its state word: exactly one of its wakers and its cancel
        // wins.
        let cancelled = if many {
            task.transition_to_running_cancel()
        } else {
            slots[0].cancel()
        };
        if cancelled {
            task.transition_to_running();
            return true;
        }
        // A waker won and is queueing us: we must suspend.
    } else if let Some(w) = worker() {
        w.note_pending(pend);
    }
    // Counted while suspended, for the run's stall rule (`worker/README.md`):
    // one compare when the peer is held in this run.
    let held = held(task.holder);
    let counted = if held == crate::stream::Peer::Inside {
        std::ptr::null()
    } else {
        // SAFETY: the run outlives its tasks.
        count_waiting(unsafe { &*task.shared }, held)
    };
    // SAFETY: as in yield_now.
    unsafe { (*task.yielder.get()).suspend(Suspend::Blocked) };
    if !counted.is_null() {
        // SAFETY: the counter is the run's, which outlives its tasks. (A task
        // unwound at the run's end never gets here: the count no longer
        // matters then.)
        uncount_waiting(unsafe { &*counted });
    }
    drop(registered);
    true
}

/// Counts a task about to suspend in its run's `waits_outside` or
/// `waits_unknown` (the peer it waits on is held outside the run, or not
/// known); returns the counter, for [`uncount_waiting`] when it resumes.
#[cold]
#[inline(never)]
fn count_waiting(
    shared: &crate::runtime::Shared,
    peer: crate::stream::Peer,
) -> *const std::sync::atomic::AtomicUsize {
    let c = match peer {
        crate::stream::Peer::Outside => &shared.waits_outside,
        _ => &shared.waits_unknown,
    };
    // SeqCst: before the task suspends and its worker counts itself idle
    // (SeqCst), so a deadlock check that sees every worker idle sees this
    // count too.
    c.fetch_add(1, Ordering::SeqCst);
    c
}

/// Takes a resumed task out of the count [`count_waiting`] put it in.
#[cold]
#[inline(never)]
fn uncount_waiting(c: &std::sync::atomic::AtomicUsize) {
    c.fetch_sub(1, Ordering::SeqCst);
}

/// [`block`] called where no task runs: during a run's forced unwind a
/// destructor's blocking operation fails (false); anywhere else it is a
/// programming error.
#[cold]
#[inline(never)]
#[track_caller]
fn block_outside_task() -> bool {
    assert!(
        forced_unwinding(),
        "rill: a blocking stream operation was called outside a rill task (use try_read/try_write there)"
    );
    false
}

/// A task's registrations in its wait slots, withdrawn when dropped.
struct Registered<'a>(&'a [&'a crate::stream::slot_api::Slot]);

impl Drop for Registered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        for s in self.0 {
            s.unregister();
        }
    }
}
