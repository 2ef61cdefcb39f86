//! Errors a user can meet: bad configuration, spawning, and a run that failed.

pub use crate::run::deadlock::BlockedTask;
use crate::vocab::TaskId;

/// A configuration the runtime cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Zero workers.
    #[error("the number of workers must be at least 1")]
    NoWorkers,
    /// More workers than [`MAX_WORKERS`](crate::MAX_WORKERS).
    #[error("{0} workers are too many (at most {max})", max = crate::MAX_WORKERS)]
    TooManyWorkers(usize),
    /// Zero stream capacity.
    #[error("the default stream capacity must be at least 1")]
    ZeroCapacity,
    /// A default stream capacity above [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    #[error("a default stream capacity of {0} is too large (at most {max})", max = crate::MAX_CAPACITY)]
    CapacityTooLarge(usize),
    /// A stack too small to run anything.
    #[error("a stack size of {0} bytes is too small (at least 16 KiB)")]
    StackTooSmall(usize),
    /// A stack larger than [`MAX_STACK_SIZE`](crate::MAX_STACK_SIZE).
    #[error("a stack size of {0} bytes is too large (at most {max} bytes, 1 GiB)", max = crate::MAX_STACK_SIZE)]
    StackTooLarge(usize),
    /// An idle spin longer than [`MAX_SPIN`](crate::MAX_SPIN).
    #[error("an idle spin of {0:?} is too long (at most {max:?}): a deadlock is found only after the spin", max = crate::MAX_SPIN)]
    SpinTooLong(std::time::Duration),
    /// A manual placement names a worker that does not exist.
    #[error("the mapping places '{name}' on worker {worker}, but there are only {workers} workers (0..{workers})")]
    NoSuchWorker {
        /// The task name or prefix.
        name: String,
        /// The worker asked for.
        worker: usize,
        /// How many workers there are.
        workers: usize,
    },
    /// A mapping file that cannot be used.
    #[error("mapping file {path}: {reason}")]
    MappingFile {
        /// The file.
        path: String,
        /// What is wrong, with the line number.
        reason: String,
    },
    /// Zero task limit.
    #[error("max_tasks must be at least 1")]
    NoTasks,
    /// The monitoring log directory belongs to another run that is still
    /// live (in this process or another): a directory holds one run's logs
    /// at a time. A directory left by a run that ended, or died, is free.
    #[error(
        "the log directory {dir} is in use by a live run ({}); give another directory, or wait for that run to end",
        match pid { Some(p) => format!("pid {p}"), None => "pid not known".to_owned() }
    )]
    LogDirInUse {
        /// The directory.
        dir: String,
        /// The owner's process id, when its lock file gives it.
        pid: Option<u32>,
    },
    /// `RILL_SPIN_US` is set to something that is not a spin time.
    #[error("RILL_SPIN_US={value:?}: {reason}")]
    BadSpin {
        /// The variable's value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `RILL_PIN` is set to something that is not on or off.
    #[error(
        "RILL_PIN={value:?}: expected 1, on, true or yes (pin the workers) or 0, off, false or no"
    )]
    BadPin {
        /// The variable's value.
        value: String,
    },
}

/// Why a task could not be spawned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnError {
    /// A placement on a worker that does not exist.
    #[error("cannot place task '{name}' on worker {worker}: there are only {workers} workers")]
    NoSuchWorker {
        /// The task's name.
        name: String,
        /// The worker asked for.
        worker: usize,
        /// How many workers there are.
        workers: usize,
    },
    /// No stack could be had for the task.
    #[error("cannot spawn task '{name}': {reason}")]
    NoStack {
        /// The task's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Spawned from a thread that is not a rill worker.
    #[error("rill::spawn was called outside a running rill task (use Runtime::spawn before run)")]
    OutsideRuntime,
    /// Spawned by a destructor while the run that owned the task was
    /// dropping it (see [`forced_unwinding`](crate::forced_unwinding)).
    #[error("cannot spawn task '{name}': the run is over and is dropping the task that spawns it")]
    RunEnded {
        /// The task's name.
        name: String,
    },
}

/// Why a run ended without finishing its tasks.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunError {
    /// A task panicked.
    #[error("task '{name}' (id {id}) panicked: {message}")]
    TaskPanicked {
        /// The task's id.
        id: TaskId,
        /// The task's name.
        name: String,
        /// The panic message.
        message: String,
    },
    /// Tasks remain but none can ever run again.
    #[error("{}", crate::run::deadlock::text(.blocked, .cycle, .stream_names, .ended))]
    Deadlock {
        /// Every task that was left, with what it waits for.
        blocked: Vec<BlockedTask>,
        /// A waiting cycle A waits for B waits for ... A, when one is known.
        cycle: Vec<String>,
        /// The names of the named streams among those the tasks wait on
        /// (see [`named_stream`](crate::named_stream)), by stream id.
        stream_names: Vec<(u64, String)>,
        /// The names of the tasks that held an end some task waits on and
        /// have ended (the end outlived them: leaked, or moved out of the
        /// task), by task id, where the run still knew them: the tasks it
        /// started with. A task spawned in the run that has ended is named
        /// by its id alone.
        ended: Vec<(TaskId, String)>,
    },
    /// A task could not get a stack.
    #[error("task '{name}' could not start: {reason}")]
    NoStack {
        /// The task's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The runtime could not start (threads, logs).
    #[error("the runtime could not start: {0}")]
    Start(String),
    /// A worker failed outside any task: a destructor it ran (for example
    /// a message's `Drop`, when the last end of a stream went away)
    /// panicked.
    #[error("worker {worker} failed outside any task (a destructor it ran panicked): {message}")]
    WorkerFailed {
        /// The worker's index.
        worker: usize,
        /// The panic message.
        message: String,
    },
    /// A destructor panicked while the run dropped a task that was left
    /// (a run that ends with tasks left unwinds their stacks).
    #[error("a destructor panicked while the run dropped task '{name}': {message}")]
    TeardownPanicked {
        /// The task's name.
        name: String,
        /// The panic message.
        message: String,
    },
    /// The configuration is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
}
