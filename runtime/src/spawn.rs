//! The spawn family: [`spawn`], [`spawn_on`], [`spawn_with`] and their
//! `try_` forms inside a run, and the same family on [`Runtime`] for the
//! tasks a run starts with.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use crate::context::{current_task_id, forced_unwinding, worker};
use crate::error::SpawnError;
use crate::run::{InitialTask, Runtime};
use crate::stream::{collect_handed, Ends};
use crate::vocab::TaskId;

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
    // Whether to share the new tasks with a worker that has had none
    // (`WorkerLocal::share_new_tasks`, decision 0022); looked at before
    // the new task is queued: work besides it. A run of one worker has
    // nobody to share with.
    let share = worker_hint.is_none()
        && target == w.id
        && shared.workers.len() > 1
        && shared.mapper.spawns_near_spawner()
        && w.has_other_work();
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
        if share {
            w.share_new_tasks();
        }
    } else {
        shared.workers[target].post(task);
    }
    Ok(id)
}

impl Runtime {
    /// Adds a task to start when the run begins, placed by the mapping
    /// policy; returns the id it will have (tasks added before a run are
    /// numbered 1, 2, ... in the order they are added). The spawn family
    /// is the one of [`spawn`](crate::spawn) inside a run: `spawn`,
    /// [`spawn_on`](Self::spawn_on), [`spawn_with`](Self::spawn_with), and
    /// [`try_spawn_on`](Self::try_spawn_on) for an error instead of a panic.
    /// (Limits such as `max_tasks` are checked when the run starts.)
    pub fn spawn<F>(&mut self, name: impl Into<Cow<'static, str>>, f: F) -> TaskId
    where
        F: FnOnce() + Send + 'static,
    {
        self.initial.push(InitialTask {
            name: name.into(),
            hint: None,
            f: crate::task::task_fn(f),
            ends: Vec::new(),
        });
        self.initial.len() as TaskId
    }

    /// Adds a task to start on `worker` when the run begins.
    ///
    /// # Panics
    /// When there is no such worker.
    #[track_caller]
    pub fn spawn_on<F>(&mut self, worker: usize, name: impl Into<Cow<'static, str>>, f: F) -> TaskId
    where
        F: FnOnce() + Send + 'static,
    {
        match self.try_spawn_on(worker, name, f) {
            Ok(id) => id,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`spawn_on`](Self::spawn_on), returning the error instead of
    /// panicking.
    pub fn try_spawn_on<F>(
        &mut self,
        worker: usize,
        name: impl Into<Cow<'static, str>>,
        f: F,
    ) -> Result<TaskId, SpawnError>
    where
        F: FnOnce() + Send + 'static,
    {
        let name = name.into();
        if worker >= self.cfg.workers {
            return Err(SpawnError::NoSuchWorker {
                name: name.into_owned(),
                worker,
                workers: self.cfg.workers,
            });
        }
        self.initial.push(InitialTask {
            name,
            hint: Some(worker),
            f: crate::task::task_fn(f),
            ends: Vec::new(),
        });
        Ok(self.initial.len() as TaskId)
    }

    /// Adds a task that is handed `ends` (see [`spawn_with`](crate::spawn_with)):
    /// it holds them from the start, for deadlock reports, and under
    /// [`Mapping::Adaptive`](crate::Mapping::Adaptive) the run cuts the
    /// graph of the streams so handed over into the workers' blocks.
    pub fn spawn_with<E, F>(&mut self, name: impl Into<Cow<'static, str>>, ends: E, f: F) -> TaskId
    where
        E: Ends,
        F: FnOnce(E) + Send + 'static,
    {
        // As a plain thread (`tls::ThreadWords`), also when called in a task
        // of another run: the ends belong to a task of this runtime's next
        // run, not to the caller's.
        let words = crate::tls::ThreadWords::take();
        crate::tls::set_holding_for(self.run_id);
        let id = self.initial.len() as TaskId + 1;
        let handed = collect_handed(|| ends.hold(id));
        words.restore();
        let id = self.spawn(name, move || f(ends));
        // The run's placement reads them (`cut.rs`).
        if let Some(t) = self.initial.last_mut() {
            t.ends = handed;
        }
        id
    }

    /// [`spawn_with`](Self::spawn_with) on a given worker (a cross-rank
    /// network's placement).
    pub(crate) fn try_spawn_with_on<E, F>(
        &mut self,
        worker: usize,
        name: impl Into<Cow<'static, str>>,
        ends: E,
        f: F,
    ) -> Result<TaskId, SpawnError>
    where
        E: Ends,
        F: FnOnce(E) + Send + 'static,
    {
        let name = name.into();
        if worker >= self.cfg.workers {
            return Err(SpawnError::NoSuchWorker {
                name: name.into_owned(),
                worker,
                workers: self.cfg.workers,
            });
        }
        // As in `spawn_with`.
        let words = crate::tls::ThreadWords::take();
        crate::tls::set_holding_for(self.run_id);
        ends.hold(self.initial.len() as TaskId + 1);
        words.restore();
        self.try_spawn_on(worker, name, move || f(ends))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// The state a task added before the run captured lives on the task's
    /// own stack while it runs (see [`crate::task::TaskFn`]), not in a heap block
    /// of the thread that spawned it.
    #[test]
    fn an_initial_task_keeps_its_captures_on_its_stack() {
        let mut rt = crate::Runtime::builder().workers(1).build().unwrap();
        let on_stack = Arc::new(AtomicBool::new(false));
        let seen = on_stack.clone();
        let captured = [7u8; 256];
        rt.spawn("captures", move || {
            let at = std::hint::black_box(&captured) as *const [u8; 256] as usize;
            let t = crate::context::current_task_ptr();
            assert!(!t.is_null());
            // SAFETY: the running task's block is alive while it runs.
            let task = unsafe { &*t };
            let size = crate::context::worker().unwrap().shared.cfg.stack_size;
            let lo = task.stack_lo.get();
            // The usable stack, its guard page and the colour span above it.
            let hi = lo + size + 3 * 4096;
            seen.store(
                (lo..hi).contains(&at) && captured[255] == 7,
                Ordering::Relaxed,
            );
        });
        rt.run().unwrap();
        assert!(
            on_stack.load(Ordering::Relaxed),
            "the closure ran from the heap"
        );
    }
}
