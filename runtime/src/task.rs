//! Tasks: a closure run as a stackful coroutine, with an id, a name and a state
//! word.
//!
//! # Who touches what
//!
//! | field | written by | read by |
//! | --- | --- | --- |
//! | `id`, `name` | spawner, before the task is published | anyone |
//! | `start`, `coro`, `yielder`, `blocked_on` | the thread running the task, or the worker that owns it while it is not running | same |
//! | `worker` | the spawner; a thief, before the task first runs | reports, `rill::current` |
//! | `state` | see the transitions below | anyone |
//!
//! A `TaskRef` is an owning handle passed around by value: whoever holds it
//! (a ready queue, an inbox, a waker that won the task, the worker running
//! it) is the only one that may resume or free the task.
//!
//! # The state word
//!
//! `NEW → READY → RUNNING → {READY (yield), BLOCKED, DONE}`, `BLOCKED → READY`
//! (a waker wins) or `BLOCKED → RUNNING` (the task cancels its own block after
//! its re-check found what it waited for). The two ways out of `BLOCKED` race,
//! and exactly one wins: that one owns the task. For a task that waits in one
//! wait slot the race is decided in the slot (`stream/slot.rs`): the waker
//! that wins it queues the task without touching this word (a waker on
//! another worker leaves it BLOCKED, and the dispatch stores RUNNING); for
//! a task that polls several streams, in this word, by compare-exchange.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use corosensei::{Coroutine, Yielder};

use crate::stack::TaskStack;
use crate::sync::{AtomicU8, AtomicUsize, UnsafeCell};
pub use crate::vocab::{BlockedOn, TaskId};

/// What a task hands back to its worker when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suspend {
    /// It yielded and wants to run again.
    Yield,
    /// It registered itself as a waiter and is now owned by whoever wakes it.
    Blocked,
}

/// What a task's body hands back when it ends: true when it panicked. The
/// panic is caught at the task's boundary, inside the coroutine, and reported
/// to the runtime there, so that resuming a task needs no unwind guard and its
/// result stays one byte.
pub(crate) type TaskOutcome = bool;
pub(crate) type Coro = Coroutine<(), Suspend, TaskOutcome, TaskStack>;
pub(crate) type TaskYielder = Yielder<(), Suspend>;
/// The closure of a task added before the run ([`Runtime::spawn`]), held
/// until its worker gives it a stack.
///
/// Not a `Box<dyn FnOnce()>`: called through such a box, the closure runs
/// in place, so everything it captured (its stream ends, whose positions
/// and caches change on every message) would stay in the heap block the
/// spawning thread allocated, beside the closures of tasks that run on other
/// workers (consecutive spawns get neighbouring blocks, and round-robin
/// puts neighbours on different workers, so their cache lines ping-pong).
/// Measured with alternating builds (`rill-bench ab`, 2 workers, 9-11
/// rounds): the ring of 100 on round-robin 170 -> 140 ns per hop (-18%,
/// every round), the ring on one worker -3 to -5%, the pipe on round-robin
/// -4 to -5%. [`Start::install`]
/// moves the closure out of its box (and frees the box) into the coroutine,
/// which keeps it on the task's stack, as for a task spawned inside the run.
///
/// [`Runtime::spawn`]: crate::Runtime::spawn
pub(crate) type TaskFn = Box<dyn Start>;

/// A task's closure waiting for its stack (see [`TaskFn`]).
pub(crate) trait Start: Send {
    /// Makes `t`'s coroutine on `stack`, moving the closure onto that
    /// stack; a panic of the closure is reported with `report`.
    fn install(self: Box<Self>, t: TaskRef, stack: TaskStack, report: PanicReport);
}

struct Pending<F>(F);

impl<F: FnOnce() + Send + 'static> Start for Pending<F> {
    fn install(self: Box<Self>, t: TaskRef, stack: TaskStack, report: PanicReport) {
        // Moved out by value: the box is freed, the closure goes into the
        // coroutine, whose start copies it onto `stack`.
        let Pending(f) = *self;
        install(t, stack, f, report);
    }
}

/// `f` as a [`TaskFn`].
pub(crate) fn task_fn<F: FnOnce() + Send + 'static>(f: F) -> TaskFn {
    Box::new(Pending(f))
}

/// What a task's boundary hands the panic of the task's body to
/// ([`make_coroutine`]): the worker's report, which ends the run with an
/// error naming the task.
pub(crate) type PanicReport = fn(&Task, Box<dyn std::any::Any + Send>);

/// Creates a task's coroutine on `stack`, running `f`; a panic of `f` is
/// handed to `report`.
#[inline]
pub(crate) fn install<F, R>(t: TaskRef, stack: TaskStack, f: F, report: R)
where
    F: FnOnce() + Send + 'static,
    R: FnOnce(&Task, Box<dyn std::any::Any + Send>) + 'static,
{
    let task = t.get();
    task.stack_lo.set(stack.lo());
    task.stack_guard.set(stack.guard());
    if stack.guard() == 0 {
        task.canary_at.set(stack.lo());
    }
    let coro = make_coroutine(t, stack, f, report);
    // SAFETY: the caller owns the task and it is not running.
    task.coro.with_mut(|p| unsafe { *p = Some(coro) });
}

/// The coroutine of task `t`: it publishes its yielder, runs `f`, and catches
/// a panic of `f` at the task's boundary, ending the run with an error that
/// names the task (`report`); it returns whether `f` panicked. The forced
/// unwind with which a suspended coroutine is dropped is passed on (see
/// `context::drop_suspended`; its word is read here from `tls`, as
/// `context::forced_unwinding` reads it).
fn make_coroutine<F, R>(t: TaskRef, stack: TaskStack, f: F, report: R) -> Coro
where
    F: FnOnce() + Send + 'static,
    R: FnOnce(&Task, Box<dyn std::any::Any + Send>) + 'static,
{
    let tp = t.as_ptr();
    Coroutine::with_stack(stack, move |y: &TaskYielder, ()| -> TaskOutcome {
        // SAFETY: the task outlives its coroutine (it is freed after the
        // coroutine is dropped), and only the thread running the coroutine
        // touches `yielder`.
        unsafe { (*tp).yielder.set(y) };
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(()) => false,
            Err(p) if crate::tls::forced_unwind() != 0 => std::panic::resume_unwind(p),
            Err(p) => {
                // SAFETY: as above.
                report(unsafe { &*tp }, p);
                true
            }
        }
    })
}

pub(crate) mod state {
    pub const NEW: u8 = 0;
    pub const READY: u8 = 1;
    pub const RUNNING: u8 = 2;
    pub const BLOCKED: u8 = 3;
    pub const DONE: u8 = 4;
}

/// A task's control block.
///
/// `repr(C)` with the state word and the fields its dispatch touches next
/// (`id`, `yielder`, `canary_at`, `dispatches`) first, on the block's first cache line. A
/// waker on another worker touches none of it for a task that waits in one
/// slot (the slot names the task's worker), so the line stays in the cache
/// of the worker that runs the task.
#[repr(C, align(64))]
pub(crate) struct Task {
    state: AtomicU8,
    /// The worker that owns the task now.
    pub worker: AtomicUsize,
    pub id: TaskId,
    /// The task as a stream side's holder (`stream/holder.rs`): its run and
    /// its id in one word, noted in the ends it blocks on.
    pub holder: u64,
    pub yielder: Cell<*const TaskYielder>,
    /// Lowest word of an unguarded stack, whose canary is checked when the task
    /// stops (0: guarded stack or not started).
    pub canary_at: Cell<usize>,
    /// Sample mode: the task's dispatches, counted by its worker. On the
    /// first line with the fields every dispatch touches: elsewhere its
    /// increment cost a cache miss per dispatch on a ring of 100 tasks.
    pub dispatches: Cell<u64>,
    pub coro: UnsafeCell<Option<Coro>>,
    pub start: UnsafeCell<Option<TaskFn>>,
    pub blocked_on: UnsafeCell<BlockedOn>,
    pub name: std::borrow::Cow<'static, str>,
    /// Slot in the runtime's task registry.
    pub slot: Cell<usize>,
    /// Placed on its worker explicitly (`spawn_on`): thieves never take it,
    /// even before it first runs. Set by the spawner before the task is
    /// queued anywhere (a post's Release/Acquire publishes it with the task).
    pub pinned: Cell<bool>,
    /// The task's stack range `[lo, lo + guard)` is its guard page, for the
    /// overflow handler (0 when not started).
    pub stack_lo: Cell<usize>,
    /// Size of the guard page (0 when unguarded).
    pub stack_guard: Cell<usize>,
    /// Count-mode monitoring: the task's tag and stream-end bindings.
    pub mon: crate::monitor::task_mon::TaskMon,
}

// The fields a dispatch writes share the block's first cache line.
const _: () = assert!(std::mem::offset_of!(Task, dispatches) + 8 <= 64);

impl Task {
    pub(crate) fn new(
        id: TaskId,
        _parent: TaskId,
        name: std::borrow::Cow<'static, str>,
        worker: usize,
        f: Option<TaskFn>,
    ) -> Task {
        Task {
            canary_at: Cell::new(0),
            stack_lo: Cell::new(0),
            stack_guard: Cell::new(0),
            mon: Default::default(),
            dispatches: Cell::new(0),
            id,
            holder: 0,
            name,
            worker: AtomicUsize::new(worker),
            state: AtomicU8::new(state::NEW),
            start: UnsafeCell::new(f),
            coro: UnsafeCell::new(None),
            yielder: Cell::new(std::ptr::null()),
            blocked_on: UnsafeCell::new(BlockedOn::Nothing),
            slot: Cell::new(usize::MAX),
            pinned: Cell::new(false),
        }
    }

    /// The state word, for reports and the loom models.
    #[cfg_attr(not(loom), allow(dead_code))]
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Whether the task never ran (NEW): only such a task may move to
    /// another worker (`scheduler.rs`). Read by its owner.
    #[inline]
    pub(crate) fn never_ran(&self) -> bool {
        self.state.load(Ordering::Relaxed) == state::NEW
    }

    /// NEW or READY → RUNNING, by the worker about to resume it (it owns the task).
    #[inline]
    pub(crate) fn transition_to_running(&self) {
        self.state.store(state::RUNNING, Ordering::Relaxed);
    }

    /// RUNNING → READY after a yield, by the owning worker.
    #[inline]
    pub(crate) fn transition_to_ready_after_yield(&self) {
        self.state.store(state::READY, Ordering::Relaxed);
    }

    /// RUNNING → BLOCKED, by the task itself, before it publishes itself as a
    /// waiter. Release: pairs with the Acquire of [`Self::transition_to_ready_from_blocked`],
    /// so a waker that wins sees `blocked_on` as the task left it.
    #[inline]
    pub(crate) fn transition_to_blocked(&self) {
        self.state.store(state::BLOCKED, Ordering::Release);
    }

    /// BLOCKED → READY by the waker that won the task's only slot, on the
    /// worker the task blocked on. Nobody can race for the state word then:
    /// the slot made the waker the task's owner. A plain store.
    #[inline]
    pub(crate) fn transition_to_ready_uncontended(&self) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), state::BLOCKED);
        self.state.store(state::READY, Ordering::Relaxed);
    }

    /// BLOCKED → READY, by a waker. True means the caller now owns the task and
    /// must schedule it.
    #[must_use]
    #[inline]
    pub(crate) fn transition_to_ready_from_blocked(&self) -> bool {
        self.state
            .compare_exchange(
                state::BLOCKED,
                state::READY,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// BLOCKED → RUNNING, by the task itself when its re-check found what it
    /// waited for. False means a waker won: the task must suspend, because that
    /// waker is about to queue it.
    #[must_use]
    #[inline]
    pub(crate) fn transition_to_running_cancel(&self) -> bool {
        self.state
            .compare_exchange(
                state::BLOCKED,
                state::RUNNING,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// RUNNING → DONE, by the worker when the coroutine returned.
    pub(crate) fn transition_to_done(&self) {
        self.state.store(state::DONE, Ordering::Release);
    }
}

/// An owning pointer to a task (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskRef(NonNull<Task>);

// SAFETY: a TaskRef is handed between threads only through synchronising
// structures (queues, inboxes, the state word), and ownership goes with it:
// only its holder touches the task. A task's coroutine runs on one thread
// only: that of the worker it first runs on. Only a task that never ran moves
// to another worker (work stealing, `scheduler.rs`), and then it holds
// nothing but its closure, which `spawn` requires to be `Send + 'static`.
// The one exception is the run's end, when the thread that called `run`
// unwinds the stacks of the tasks left after every worker has stopped; the
// values on those stacks are dropped there, once, with no other thread
// touching them.
unsafe impl Send for TaskRef {}

/// Per-thread cache of task allocations: spawning and ending tasks in
/// batches otherwise sends glibc's allocator down its slow paths.
struct TaskCache(Vec<NonNull<Task>>);

const TASK_CACHE_MAX: usize = 4096;

impl Drop for TaskCache {
    fn drop(&mut self) {
        for p in self.0.drain(..) {
            // SAFETY: cached pointers are allocations of Layout::new::<Task>()
            // whose contents were already dropped.
            unsafe { std::alloc::dealloc(p.as_ptr().cast(), std::alloc::Layout::new::<Task>()) };
        }
    }
}

thread_local! {
    static TASK_CACHE: std::cell::RefCell<TaskCache> = const { std::cell::RefCell::new(TaskCache(Vec::new())) };
}

/// A cached task allocation, if this thread has one. Never inlined, here
/// and in [`cache_task`]: `spawn` runs in a task's code, and LLVM, which
/// takes a function to run on one thread, may keep a thread-local's address
/// from one use to the next. A call of its own computes the address afresh
/// on the thread that runs it (the run-end unwind runs task code on the
/// thread that called `run`).
#[inline(never)]
fn cached_task() -> Option<NonNull<Task>> {
    TASK_CACHE
        .try_with(|c| c.borrow_mut().0.pop())
        .ok()
        .flatten()
}

/// Keeps `p` (an allocation of a dropped task) for reuse; false when the
/// cache is full or gone. Never inlined: see [`cached_task`].
#[inline(never)]
fn cache_task(p: NonNull<Task>) -> bool {
    TASK_CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.0.len() < TASK_CACHE_MAX {
                c.0.push(p);
                true
            } else {
                false
            }
        })
        .unwrap_or(false)
}

impl TaskRef {
    /// Moves a task into an allocation, reusing a cached one when possible.
    #[inline]
    pub(crate) fn new(task: Task) -> TaskRef {
        let cached = cached_task();
        match cached {
            Some(p) => {
                // SAFETY: p is a live allocation with Task's layout holding no value.
                unsafe { p.as_ptr().write(task) };
                TaskRef(p)
            }
            None => TaskRef(NonNull::from(Box::leak(Box::new(task)))),
        }
    }
    /// Raw pointer, for registration slots.
    pub(crate) fn as_ptr(self) -> *const Task {
        self.0.as_ptr()
    }
    /// # Safety
    /// `p` must come from [`TaskRef::as_ptr`] of a task that is still alive, and
    /// the caller must own it (see the module doc).
    pub(crate) unsafe fn from_ptr(p: *const Task) -> TaskRef {
        TaskRef(NonNull::new(p as *mut Task).expect("task pointer is non-null"))
    }
    /// [`from_ptr`](Self::from_ptr) without the check for null.
    ///
    /// # Safety
    /// As `from_ptr`, and `p` is not null.
    #[inline(always)]
    pub(crate) unsafe fn from_ptr_unchecked(p: *const Task) -> TaskRef {
        debug_assert!(!p.is_null());
        // SAFETY: not null by the caller's contract.
        TaskRef(unsafe { NonNull::new_unchecked(p as *mut Task) })
    }
    #[inline(always)]
    pub(crate) fn get(&self) -> &Task {
        // SAFETY: a TaskRef exists only while its task is alive: tasks are freed
        // only through `free`, by their single owner.
        unsafe { self.0.as_ref() }
    }
    /// Frees the task.
    ///
    /// # Safety
    /// The caller owns the task and no other TaskRef to it will be used again.
    pub(crate) unsafe fn free(self) {
        // SAFETY: the caller guarantees unique ownership; the allocation has
        // Task's layout (Box or cache), and its value is dropped exactly once.
        unsafe { std::ptr::drop_in_place(self.0.as_ptr()) };
        let kept = cache_task(self.0);
        if !kept {
            // SAFETY: the allocation came from the global allocator with this
            // layout and no longer holds a value.
            unsafe {
                std::alloc::dealloc(self.0.as_ptr().cast(), std::alloc::Layout::new::<Task>())
            };
        }
    }
}
