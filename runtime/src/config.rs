//! A checked configuration ([`Config`], made by the builder) and the
//! monitoring settings of a run.

use std::path::PathBuf;
use std::time::Duration;

use rill_log::MonitorFlags;

use crate::mapper::Mapping;
use crate::profile::ProfilePlanner;

/// Monitoring settings of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MonitorConfig {
    /// What to record; [`MonitorFlags::OFF`] records nothing (the default).
    pub flags: MonitorFlags,
    /// Where the per-worker logs go (`worker-N.rlog`); `rill-logs` when
    /// monitoring is on and no directory is given. A directory belongs to
    /// one live run at a time: a run given one that another live run holds
    /// fails at its start with [`ConfigError::LogDirInUse`](crate::ConfigError::LogDirInUse).
    pub dir: Option<PathBuf>,
}

impl MonitorConfig {
    /// Monitoring with `flags` into `dir`.
    pub fn new(flags: MonitorFlags, dir: impl Into<PathBuf>) -> Self {
        MonitorConfig {
            flags,
            dir: Some(dir.into()),
        }
    }

    /// Monitoring off.
    pub fn off() -> Self {
        Self::default()
    }

    /// The log directory used when monitoring is on.
    pub fn log_dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("rill-logs"))
    }
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) workers: usize,
    pub(crate) pin: bool,
    pub(crate) stack_size: usize,
    pub(crate) capacity: usize,
    pub(crate) mapping: Mapping,
    pub(crate) max_tasks: usize,
    pub(crate) spin: Duration,
    /// Cores this process may run on, read once when the runtime is built:
    /// whether each worker has one decides whether idle spins may grow
    /// (`worker/idle_spin.rs`).
    pub(crate) cores: usize,
    pub(crate) monitor: MonitorConfig,
    pub(crate) guards: StackGuards,
    /// How long a run waits on ends held outside it, with every task
    /// blocked, before it says so on stderr (0: never).
    pub(crate) stall_report: Duration,
    /// [`Mapping::Profile`]'s planner (`profile.rs`).
    pub(crate) planner: Option<ProfilePlanner>,
}

/// How task stacks are guarded: the builder's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackGuards {
    /// `Builder::unguarded_stacks`.
    pub(crate) allow_unguarded: bool,
    /// False: do as if the kernel had no guard markers (tests).
    pub(crate) markers: bool,
    /// Guard pages allowed in place of the budget from `vm.max_map_count`
    /// (tests).
    pub(crate) page_budget: Option<usize>,
}

impl Default for StackGuards {
    fn default() -> Self {
        StackGuards {
            allow_unguarded: false,
            markers: true,
            page_budget: None,
        }
    }
}

impl Config {
    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }
    /// Default stream capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// `Mapping::Steal`: thieves may take any task that never ran, one
    /// placed with `spawn_on` too (the mode's purpose); under every other
    /// mapping a worker given at spawn always wins.
    pub(crate) fn mapping_steals_all(&self) -> bool {
        matches!(self.mapping, Mapping::Steal)
    }

    /// The mapping policy.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }
    /// Usable bytes per task stack.
    pub fn stack_size(&self) -> usize {
        self.stack_size
    }
}
