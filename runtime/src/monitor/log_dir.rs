//! A monitored run's log directory: taking it for the run, creating the
//! workers' logs in it, and what the run says when a log stops early.
//!
//! Before the run starts, every failure to set logging up is an error of
//! the run (nothing has run yet, and the user can fix it): a directory that
//! cannot be made, one that another live run owns
//! ([`ConfigError::LogDirInUse`]), a log that cannot be created or given its
//! first page of disk space. Once the run has started, logging never stops
//! it: a log that runs out of space stops (`rill_log::LogWriter`), marks
//! itself truncated, and the first such stop of the run is reported on
//! stderr, once.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rill_log::{DirLock, DirLockError, Header};

use super::clock::RunClock;
use super::worker_log::WorkerLog;
use crate::config::MonitorConfig;
use crate::error::{ConfigError, RunError};

/// The logs of a run, opened: one per worker when monitoring is on.
pub(crate) struct RunLogs {
    /// Worker `i`'s log.
    pub(crate) logs: Vec<Option<WorkerLog>>,
    /// The directory, when monitoring is on.
    pub(crate) dir: Option<PathBuf>,
    /// The run's clock, when monitoring is on.
    pub(crate) clock: Option<RunClock>,
    /// The directory's ownership, held until the run's end.
    pub(crate) lock: Option<DirLock>,
}

/// Takes the log directory for the run and creates each of the `n`
/// workers' logs in it, when monitoring is on.
pub(crate) fn open(mon: &MonitorConfig, n: usize) -> Result<RunLogs, RunError> {
    let mut run = RunLogs {
        logs: (0..n).map(|_| None).collect(),
        dir: None,
        clock: None,
        lock: None,
    };
    if mon.flags.is_off() {
        return Ok(run);
    }
    // The first run of a process measures a provisional tick rate over the
    // directory's setup below rather than waiting for it.
    let mark = super::clock::ClockMark::now();
    let dir = mon.log_dir();
    // Whether this run made the directory: a new one holds no old logs to
    // sweep (the sweep's listing took some 20 µs of a run's start).
    let made = match std::fs::create_dir(&dir) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => false,
        // Missing parents, or something else in the way: the full creation
        // makes the parents or says what is wrong.
        Err(_) => {
            std::fs::create_dir_all(&dir).map_err(|e| {
                RunError::Start(format!(
                    "cannot create the log directory {}: {e}",
                    dir.display()
                ))
            })?;
            true
        }
    };
    // Before any log is made: making one retires the old file, which must
    // not be a live run's.
    run.lock = Some(DirLock::acquire(&dir).map_err(|e| match e {
        DirLockError::Held { dir, pid } => RunError::Config(ConfigError::LogDirInUse {
            dir: dir.display().to_string(),
            pid,
        }),
        other => RunError::Start(other.to_string()),
    })?);
    // Old logs that a process left for deletion (`rill_log::retire`).
    if !made {
        rill_log::sweep_retired(&dir);
    }
    let clock = RunClock::start_since(mark);
    let warned = Arc::new(AtomicBool::new(false));
    for (i, slot) in run.logs.iter_mut().enumerate() {
        let header = Header::new(mon.flags, i as u32, n as u32, clock.cal);
        let mut log = WorkerLog::create(&dir, i, &header).map_err(|e| {
            RunError::Start(format!(
                "cannot create the log of worker {i} in {}: {e}",
                dir.display()
            ))
        })?;
        let warned = warned.clone();
        log.on_stop(move |path, e| warn_stopped(&warned, path, e));
        *slot = Some(log);
    }
    run.clock = Some(clock);
    run.dir = Some(dir);
    Ok(run)
}

/// What a worker's log says when it stops: the first time in the run only.
fn warn_stopped(warned: &AtomicBool, path: &Path, e: &io::Error) {
    // Relaxed: only which worker prints matters, which the RMW decides.
    if !warned.swap(true, Ordering::Relaxed) {
        eprintln!(
            "rill: warning: monitoring log {} stopped: {e}; the run goes on without it and \
             the log is marked truncated (further stops in this run are not reported here; \
             rill-mon lists them)",
            path.display()
        );
    }
}

/// Rewrites the tick rate measured over the run into its `n` logs'
/// headers.
pub(crate) fn set_rate(dir: &Path, n: usize, rate: f64) {
    for i in 0..n {
        // A log whose header keeps the rate measured at the start is still
        // right to about 2e-4 (`RunClock`), so a failure here is not worth
        // failing the run for.
        let _ = rill_log::set_header_rate(&dir.join(rill_log::log_file_name(i as u32)), rate);
    }
}
