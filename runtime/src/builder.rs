//! The builder: the settings of a runtime, their bounds and defaults, and
//! `build`, which checks them into a [`Config`] and makes the [`Runtime`].

use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, MonitorConfig, StackGuards};
use crate::error::ConfigError;
use crate::mapper::Mapping;
use crate::profile::ProfilePlanner;
use crate::run::Runtime;

/// Builds a [`Runtime`].
///
/// ```
/// let mut rt = rill::Runtime::builder().workers(2).build().unwrap();
/// let (sum, stats) = rt.run_main(|| {
///     let (mut w, mut r) = rill::stream::<u32>(4);
///     rill::spawn("producer", move || for i in 0..10 { w.write(i).unwrap(); });
///     std::iter::from_fn(|| r.read()).sum::<u32>()
/// }).unwrap();
/// assert_eq!(sum, 45);
/// assert_eq!(stats.tasks_created, 2);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    workers: Option<usize>,
    /// None: `RILL_PIN` if set, else on.
    pin: Option<bool>,
    stack_size: usize,
    capacity: usize,
    mapping: Mapping,
    max_tasks: usize,
    /// None: `RILL_SPIN_US` if set, else [`DEFAULT_SPIN`].
    spin: Option<Duration>,
    monitor: MonitorConfig,
    guards: StackGuards,
    stall_report: Duration,
    planner: Option<ProfilePlanner>,
}

/// How long an idle worker spins before it parks, unless the builder or
/// `RILL_SPIN_US` says otherwise.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// The longest idle spin [`Builder::spin`] and `RILL_SPIN_US` accept: one
/// second. A deadlock is found only once every worker has spun and parked,
/// so the spin also bounds how late a deadlock is reported.
pub const MAX_SPIN: Duration = Duration::from_secs(1);

/// The most workers a runtime may have. Each is a thread with a log, an
/// inbox and a slab of stacks; the bound keeps the per-worker arrays and the
/// arithmetic on them (`workers * slab`) far from overflow.
pub const MAX_WORKERS: usize = 4096;

/// The largest task stack [`Builder::stack_size`] accepts: 1 GiB. Stacks are
/// cut from slabs of 32, so a slab of the largest is 32 GiB of address
/// space (reserved, not backed); the bound keeps the page rounding and the
/// slab's size from wrapping.
pub const MAX_STACK_SIZE: usize = 1 << 30;

/// How long a run whose every task is blocked on stream ends held outside
/// it waits before it says so on stderr (once per run; it goes on waiting).
pub const STALL_REPORT: Duration = Duration::from_secs(10);

/// The idle spin `RILL_SPIN_US` asks for: microseconds, a whole number up to
/// one second; None when the variable is unset.
fn spin_from_env(value: Option<std::ffi::OsString>) -> Result<Option<Duration>, ConfigError> {
    let Some(v) = value else { return Ok(None) };
    let bad = |reason: &str| ConfigError::BadSpin {
        value: v.to_string_lossy().into_owned(),
        reason: reason.into(),
    };
    let s = v.to_str().ok_or_else(|| bad("not UTF-8"))?;
    let us: u64 = s
        .trim()
        .parse()
        .map_err(|_| bad("expected a whole number of microseconds"))?;
    if us > MAX_SPIN.as_micros() as u64 {
        return Err(bad("at most 1000000 (one second)"));
    }
    Ok(Some(Duration::from_micros(us)))
}

/// `RILL_PIN`'s value: whether workers are pinned, `None` when unset.
fn pin_from_env(value: Option<std::ffi::OsString>) -> Result<Option<bool>, ConfigError> {
    let Some(v) = value else { return Ok(None) };
    match v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("1" | "on" | "true" | "yes") => Ok(Some(true)),
        Some("0" | "off" | "false" | "no") => Ok(Some(false)),
        _ => Err(ConfigError::BadPin {
            value: v.to_string_lossy().into_owned(),
        }),
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            pin: None,
            stack_size: 256 * 1024,
            capacity: 16,
            mapping: Mapping::Adaptive,
            max_tasks: 1 << 22,
            spin: None,
            monitor: MonitorConfig::default(),
            guards: StackGuards::default(),
            stall_report: STALL_REPORT,
            planner: None,
        }
    }
}

impl Builder {
    /// Threads this builder's runtime will run (its workers), and whether
    /// its idle spin was set (by the builder or `RILL_SPIN_US`), for a
    /// cross-rank network that shares the machine with other ranks.
    pub(crate) fn workers_and_spin_set(&self) -> (usize, bool) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin_set = self.spin.is_some() || std::env::var_os("RILL_SPIN_US").is_some();
        (self.workers.unwrap_or(cores), spin_set)
    }

    /// The monitoring settings, for a cross-rank network to point each
    /// rank's logs at its own directory.
    pub(crate) fn monitor_mut(&mut self) -> &mut MonitorConfig {
        &mut self.monitor
    }

    /// Number of worker threads (default: the cores available), 1 to
    /// [`MAX_WORKERS`].
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }
    /// Pin worker i to core i mod cores (default on, or as `RILL_PIN` says:
    /// `0`/`off` leaves the workers to the kernel, which can pay on a host
    /// that other busy programs share).
    pub fn pin(mut self, on: bool) -> Self {
        self.pin = Some(on);
        self
    }
    /// Usable stack bytes per task (default 256 KiB; virtual memory: only
    /// the pages a task touches cost memory), 16 KiB to [`MAX_STACK_SIZE`].
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// Default stream capacity for [`crate::stream_default`] (default 16),
    /// 1 to [`MAX_CAPACITY`](crate::MAX_CAPACITY).
    pub fn capacity(mut self, n: usize) -> Self {
        self.capacity = n;
        self
    }
    /// Mapping policy (default round-robin).
    pub fn mapping(mut self, m: Mapping) -> Self {
        self.mapping = m;
        self
    }
    /// Most task stacks that may exist at once (default 4M).
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }
    /// How long an idle worker spins before it parks (default
    /// [`DEFAULT_SPIN`], 50 µs, or `RILL_SPIN_US` microseconds when that is
    /// set). Spinning longer makes a wake that comes within the spin cheap
    /// (no futex, no sleeping core to wake) and costs an idle core that long
    /// each time it runs out of work. Where every worker has a core of its
    /// own, a worker whose parks keep ending soon after they began grows its
    /// spin up to 4 times this (or as many times as there are workers, if
    /// more), and a long park brings it back. At most [`MAX_SPIN`]: `build`
    /// refuses a longer one.
    pub fn spin(mut self, d: Duration) -> Self {
        self.spin = Some(d);
        self
    }
    /// Monitoring settings.
    pub fn monitor(mut self, m: MonitorConfig) -> Self {
        self.monitor = m;
        self
    }

    /// Allows task stacks without a guard page (default: not allowed).
    ///
    /// Every stack normally has a guard page below it, so that a task that
    /// overflows its stack faults there and the process aborts with a report
    /// naming the task. Where the kernel has guard markers
    /// (`MADV_GUARD_INSTALL`, Linux 6.13 and later) every stack gets one and
    /// this setting changes nothing. On older kernels a guard page costs two
    /// kernel mappings, so the guards run out near 24,000 live tasks at the
    /// default `vm.max_map_count` (65530); past that, spawning fails with an
    /// error naming the limit, unless this is set. Raising the limit
    /// (`sysctl -w vm.max_map_count=N`) keeps every stack guarded and is the
    /// better fix where it is possible.
    ///
    /// With this set, stacks past the guard budget have only canary words at
    /// their bottom, checked each time their task stops: an overflow is
    /// reported by task name, but only after it has written into the stack
    /// next to it, which may belong to a task running on another worker
    /// right then, and a large enough frame can skip the canaries and go
    /// unnoticed.
    ///
    /// # Safety
    ///
    /// With `allow` true, a task that overflows its stack corrupts memory
    /// that safe code relies on (another task's stack), which is undefined
    /// behaviour. This is `unsafe` because the runtime can no longer stop
    /// that: the caller promises that no task of the runtime needs more stack
    /// than [`Builder::stack_size`] gives it (no unbounded recursion, no
    /// large arrays on the stack beyond what was measured). `allow` false
    /// has no such requirement.
    pub unsafe fn unguarded_stacks(mut self, allow: bool) -> Self {
        self.guards.allow_unguarded = allow;
        self
    }

    /// Tests only: whether to use guard markers where the kernel has them
    /// (default true); false exercises the guard-page fallback.
    #[doc(hidden)]
    pub fn guard_markers(mut self, on: bool) -> Self {
        self.guards.markers = on;
        self
    }

    /// Tests only: how long a run blocked on ends held outside it waits
    /// before it says so (default [`STALL_REPORT`]; 0: never).
    #[doc(hidden)]
    pub fn stall_report(mut self, after: Duration) -> Self {
        self.stall_report = after;
        self
    }

    /// Tests only: how many stacks may get an `mprotect` guard page when
    /// markers are not used, in place of the budget `vm.max_map_count` gives.
    #[doc(hidden)]
    pub fn guard_page_budget(mut self, stacks: usize) -> Self {
        self.guards.page_budget = Some(stacks);
        self
    }

    /// What plans a [`Mapping::Profile`] file at the end of a run that
    /// records one: `planner(log_dir, workers)` returns the file's text
    /// from the run's count-mode logs (`rill_monitor::profile_planner` is
    /// the planner of `rill-mon map`). Without one, the file records where
    /// each task started (see `Mapping::Profile`).
    pub fn profile_planner<F>(mut self, planner: F) -> Self
    where
        F: Fn(&std::path::Path, usize) -> Result<String, String> + Send + Sync + 'static,
    {
        self.planner = Some(ProfilePlanner(Arc::new(planner)));
        self
    }

    /// Checks the configuration and makes the runtime.
    pub fn build(self) -> Result<Runtime, ConfigError> {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        // Every value is checked against both bounds here, so that no
        // arithmetic on it later can wrap (slab sizes, per-worker arrays,
        // ring sizes, the spin's deadline).
        let workers = match self.workers {
            Some(0) => return Err(ConfigError::NoWorkers),
            Some(n) if n > MAX_WORKERS => return Err(ConfigError::TooManyWorkers(n)),
            Some(n) => n,
            None => cores.min(MAX_WORKERS),
        };
        if self.capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        if self.capacity > crate::stream::MAX_CAPACITY {
            return Err(ConfigError::CapacityTooLarge(self.capacity));
        }
        if self.stack_size < 16 * 1024 {
            return Err(ConfigError::StackTooSmall(self.stack_size));
        }
        if self.stack_size > MAX_STACK_SIZE {
            return Err(ConfigError::StackTooLarge(self.stack_size));
        }
        if self.max_tasks == 0 {
            return Err(ConfigError::NoTasks);
        }
        if let Mapping::Manual(t) = &self.mapping {
            t.validate(workers)?;
        }
        let spin = match self.spin {
            Some(d) if d > MAX_SPIN => return Err(ConfigError::SpinTooLong(d)),
            Some(d) => d,
            None => spin_from_env(std::env::var_os("RILL_SPIN_US"))?.unwrap_or(DEFAULT_SPIN),
        };
        let pin = match self.pin {
            Some(on) => on,
            None => pin_from_env(std::env::var_os("RILL_PIN"))?.unwrap_or(true),
        };
        Ok(Runtime::new(Config {
            workers,
            pin,
            stack_size: self.stack_size,
            capacity: self.capacity,
            mapping: self.mapping,
            max_tasks: self.max_tasks,
            spin,
            cores,
            monitor: self.monitor,
            guards: self.guards,
            stall_report: self.stall_report,
            planner: self.planner,
        }))
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn spin_env_values() {
        let v = |s: &str| spin_from_env(Some(s.into()));
        assert_eq!(spin_from_env(None).unwrap(), None);
        assert_eq!(v("0").unwrap(), Some(Duration::ZERO));
        assert_eq!(v(" 500 ").unwrap(), Some(Duration::from_micros(500)));
        assert_eq!(v("1000000").unwrap(), Some(Duration::from_secs(1)));
        for bad in ["", "-1", "1.5", "50us", "1000001"] {
            let e = v(bad).unwrap_err().to_string();
            assert!(e.starts_with("RILL_SPIN_US="), "{bad}: {e}");
        }
    }

    #[test]
    fn pin_env_values() {
        let v = |s: &str| pin_from_env(Some(s.into()));
        assert_eq!(pin_from_env(None).unwrap(), None);
        for on in ["1", "on", " ON ", "true", "yes"] {
            assert_eq!(v(on).unwrap(), Some(true), "{on}");
        }
        for off in ["0", "off", "False", "no"] {
            assert_eq!(v(off).unwrap(), Some(false), "{off}");
        }
        for bad in ["", "2", "pinned"] {
            let e = v(bad).unwrap_err().to_string();
            assert!(e.starts_with("RILL_PIN="), "{bad}: {e}");
        }
    }
}
