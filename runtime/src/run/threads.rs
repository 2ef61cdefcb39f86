//! The threads of a run: the workers, the ticker, and in sample mode the
//! sampler (which runs on the thread that called `Runtime::run`); how each
//! worker gets its log while the run's thread sets the logs up
//! ([`LogHandoff`]), and how the last worker thread out wakes the run's
//! thread ([`WorkerLeaves`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_deque::Worker as Deque;

use crate::error::RunError;
use crate::monitor::worker_log::WorkerLog;
use crate::run::shared::Shared;
use crate::scheduler::ReadyQueue;
use crate::task::TaskRef;
use crate::worker::{WorkerLocal, WorkerStats};

/// Starts the ticker (`worker/ticker.rs`) when the fast path's barrier is a
/// compiler fence and there is more than one worker; else no wake-up can
/// be missed, or the run's one worker covers its own windows
/// (`WorkerLocal::cover_own`).
pub(crate) fn start_ticker(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    if shared.workers.len() < 2 || !crate::barrier::heavy_needed() {
        return None;
    }
    let sh = shared.clone();
    match std::thread::Builder::new()
        .name("rill-ticker".into())
        .spawn(move || crate::worker::ticker::run(sh))
    {
        Ok(h) => Some(h),
        Err(e) => {
            shared.fail(RunError::Start(format!(
                "could not start the ticker thread: {e}"
            )));
            None
        }
    }
}

/// In sample mode: creates the sampler's log in `dir` and the sampler
/// (`monitor/sampler.rs`), which this thread runs until the run's end.
/// Without a sampler the run goes on (the worker logs still hold the exact
/// counts); one warning says why.
pub(crate) fn new_sampler(
    shared: &Shared,
    dir: &std::path::Path,
    clock: Option<&crate::monitor::clock::RunClock>,
    first_window: crate::monitor::sampler::WindowStart,
) -> Option<crate::monitor::sampler::Sampler> {
    use crate::monitor::sampler;
    let flags = shared.cfg.monitor.flags;
    if !flags.is_sampled() {
        return None;
    }
    let n = shared.workers.len() as u32;
    let cal = clock.map(|c| c.cal)?;
    let log = match sampler::SamplerLog::create(dir, &rill_log::Header::new(flags, n, n, cal)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "rill: cannot create the sampler's log in {}: {e}; the run goes on without samples",
                dir.display()
            );
            return None;
        }
    };
    let hz = flags.sample_hz().unwrap_or(sampler::DEFAULT_HZ);
    Some(sampler::Sampler::new(shared, log, hz, first_window))
}

/// How a worker gets its log: at once when the run is not monitored, else
/// from the run's thread once it has set the logs up, which it does while
/// the worker threads start. A worker whose sender is dropped unsent (the
/// logs could not be set up) leaves without running anything.
pub(crate) enum LogHandoff {
    Now,
    Later(std::sync::mpsc::Receiver<Option<WorkerLog>>),
}

impl LogHandoff {
    /// The worker's log, or `Err` when the run was called off before it
    /// started. Yields the core while it waits (the run's thread, which
    /// sends the log, may be on the same core), for a while, then blocks.
    fn take(self) -> Result<Option<WorkerLog>, ()> {
        use std::sync::mpsc::TryRecvError;
        let rx = match self {
            LogHandoff::Now => return Ok(None),
            LogHandoff::Later(rx) => rx,
        };
        let since = Instant::now();
        loop {
            match rx.try_recv() {
                Ok(log) => return Ok(log),
                Err(TryRecvError::Disconnected) => return Err(()),
                Err(TryRecvError::Empty) => {}
            }
            if since.elapsed() > Duration::from_micros(500) {
                return rx.recv().map_err(|_| ());
            }
            std::thread::yield_now();
        }
    }
}

/// One [`LogHandoff`] per worker, and the senders of the monitored ones.
pub(crate) fn log_handoffs(
    n: usize,
    monitored: bool,
) -> (
    Vec<LogHandoff>,
    Vec<std::sync::mpsc::SyncSender<Option<WorkerLog>>>,
) {
    if !monitored {
        return ((0..n).map(|_| LogHandoff::Now).collect(), Vec::new());
    }
    (0..n)
        .map(|_| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (LogHandoff::Later(rx), tx)
        })
        .unzip()
}

/// Starts the worker threads. A worker that fails outside any task (a
/// destructor it runs panics) fails the run with the cause.
pub(crate) fn start_workers(
    shared: &Arc<Shared>,
    deques: Vec<Option<Deque<TaskRef>>>,
    logs: Vec<LogHandoff>,
) -> Vec<std::thread::JoinHandle<WorkerStats>> {
    let cores = if shared.cfg.pin {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut handles = Vec::with_capacity(deques.len());
    for ((i, d), log) in deques.into_iter().enumerate().zip(logs) {
        let sh = shared.clone();
        // Counted before the thread exists, so that the count cannot reach
        // zero while a worker is still to start.
        shared.workers_left.fetch_add(1, Ordering::Relaxed);
        let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
        let h = std::thread::Builder::new()
            .name(format!("rill-worker-{i}"))
            .spawn(move || {
                // Dropped last, when everything else of the thread's is.
                let _leaves = WorkerLeaves(&sh);
                if let Some(c) = core {
                    core_affinity::set_for_current(c);
                }
                let _ = sh.workers[i].thread.set(std::thread::current());
                let Ok(log) = log.take() else {
                    // The run was called off before it started.
                    return WorkerStats {
                        worker: i,
                        ..Default::default()
                    };
                };
                let q = match d {
                    Some(d) => ReadyQueue::steal(d, sh.steals_batches()),
                    None => ReadyQueue::fifo(),
                };
                let w = WorkerLocal::new(i, sh.clone(), q, log);
                match catch_unwind(AssertUnwindSafe(|| w.run())) {
                    Ok(s) => s,
                    Err(p) => {
                        w.abandon();
                        sh.fail(RunError::WorkerFailed {
                            worker: i,
                            message: crate::worker::panic_message(p.as_ref()),
                        });
                        WorkerStats {
                            worker: i,
                            ..Default::default()
                        }
                    }
                }
            });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                shared.workers_left.fetch_sub(1, Ordering::Relaxed);
                shared.fail(RunError::Start(format!(
                    "could not start worker thread {i}: {e}"
                )));
                break;
            }
        }
    }
    handles
}

/// Counts a worker thread out when it is done (dropped at the end of its
/// closure, also when it unwinds); the last one out wakes the run's waiter.
struct WorkerLeaves<'a>(&'a Shared);

impl Drop for WorkerLeaves<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire load in `Shared::workers_gone`.
        if self.0.workers_left.fetch_sub(1, Ordering::Release) == 1 {
            if let Some(t) = self.0.waiter.get() {
                t.unpark();
            }
        }
    }
}
