//! `--mapping auto`: a short pilot run, a mapping planned from its logs, and
//! the real run under that mapping.
//!
//! 1. **Pilot.** The same network at about 1/N of its size (`--pilot N`,
//!    default [`PILOT_DIVISOR`] = 100; [`App::pilot`] says how for each
//!    application: mc 1/N of the paths, des of the input bytes, rt of the
//!    scenes, ant of the iterations, each with a floor; the word count the
//!    first 1/N of its text), on the same workers under round-robin mapping,
//!    monitored in count mode by default ([`PILOT_MONITOR`]:
//!    `map,worker,task,stream`, exact busy time per task from its
//!    dispatches, worker waits and per-stream message and block counts, no
//!    message order; `--pilot-monitor MODE` takes another, `sample:HZ`
//!    among them). Its logs go to `DIR/pilot/`.
//! 2. **Plan.** [`rill_monitor::load_run_with`] (as `rill-mon map` loads:
//!    no latency replay) and
//!    [`rill_monitor::plan_mapping`]`(&run, W)`, written to `DIR/auto.map`
//!    ([`rill_monitor::MapPlan::to_file`]) and read back with
//!    [`rill::ManualTable::load`] (checked against W).
//! 3. **Run** under that file, as `--mapping DIR/auto.map` would.
//!
//! DIR is the run's `--logs` directory when one is given (`DIR/run-N` with
//! `--repeat`, as for the logs), otherwise `target/rill-auto/APP/run-N`
//! under the working directory ([`dir_for`]). Each auto run makes its own
//! pilot and plan, so every figure includes one.
//!
//! Time: `pilot_ms` = the pilot network's wall time (like every `wall`, the
//! time of `Runtime::run`) + the plan (reading the logs, planning, writing
//! and checking the file); `total_ms` = `pilot_ms` + the real run's
//! `wall_ms`: the figure to set beside rr and manual, pilot included.
//! `pilot_elapsed_ms` is all the auto step took before the real run, also
//! making the pilot's input, building its runtime and checking its result,
//! which no `wall` counts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rill::{ManualTable, MonitorConfig, MonitorFlags};

use super::{App, AppOpts, AppRun, MappingChoice};
pub use crate::mapping::{AutoFigures, MAX_PILOT_DIVISOR, PILOT_DIVISOR, PILOT_MONITOR};

/// Where auto's pilot logs and files go without `--logs` (relative to the
/// working directory).
pub const AUTO_ROOT: &str = "target/rill-auto";

/// The file the plan is written to, in the auto directory.
pub const MAP_FILE: &str = "auto.map";

/// An application's pilot: the reduced network and what was reduced.
pub struct Pilot {
    /// The application at the reduced size.
    pub app: Box<dyn App>,
    /// The reduction in words (`50000 of 300000 paths`).
    pub size: String,
}

/// `n / divisor`, at least `floor`, at most `n` (`divisor` 0 counts as 1).
pub fn pilot_size(n: u64, divisor: u64, floor: u64) -> u64 {
    (n / divisor.max(1)).max(floor).min(n)
}

/// What the pilot and the plan gave.
#[derive(Clone, Debug)]
pub struct AutoPlan {
    /// The planned mapping file.
    pub file: PathBuf,
    /// The pilot's log directory.
    pub logs: PathBuf,
    /// The pilot's size in words.
    pub size: String,
    /// What the pilot recorded (`--pilot-monitor`).
    pub monitor: MonitorFlags,
    /// Wall time of the pilot network.
    pub pilot_run: Duration,
    /// Reading the logs, planning and writing the file.
    pub plan: Duration,
    /// Everything before the real run (see the module documentation).
    pub elapsed: Duration,
    /// The model's run time under the plan and under round-robin, at the
    /// pilot's size (`rill_monitor::Estimate`).
    pub predicted: (Duration, Duration),
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl AutoPlan {
    /// `pilot_ms`: the pilot network's wall time and the plan.
    pub fn pilot_time(&self) -> Duration {
        self.pilot_run + self.plan
    }

    /// The figures of an auto run whose real run took `wall`.
    pub fn figures(&self, wall: Duration) -> AutoFigures {
        AutoFigures {
            mapping_file: self.file.display().to_string(),
            pilot_logs: self.logs.display().to_string(),
            pilot_size: self.size.clone(),
            pilot_monitor: self.monitor.to_string(),
            pilot_ms: ms(self.pilot_time()),
            pilot_run_ms: ms(self.pilot_run),
            plan_ms: ms(self.plan),
            pilot_elapsed_ms: ms(self.elapsed),
            pilot_predicted_ms: ms(self.predicted.0),
            pilot_predicted_rr_ms: ms(self.predicted.1),
            total_ms: ms(self.pilot_time() + wall),
        }
    }

    /// One line for the terminal, for a real run that took `wall`.
    pub fn line(&self, wall: Duration) -> String {
        format!(
            "auto: pilot {:.1} ms ({}: run {:.1} ms + plan {:.1} ms), total {:.1} ms with the run; mapping file {}",
            ms(self.pilot_time()),
            self.size,
            ms(self.pilot_run),
            ms(self.plan),
            ms(self.pilot_time() + wall),
            self.file.display()
        )
    }
}

/// The directory of an auto run's pilot logs and file: the run's log
/// directory, or `target/rill-auto/BENCH/run-RUN`.
pub fn dir_for(logs: Option<&Path>, bench: &str, run: u32) -> PathBuf {
    match logs {
        Some(l) => l.to_path_buf(),
        None => Path::new(AUTO_ROOT).join(bench).join(format!("run-{run}")),
    }
}

/// Removes the `worker-N.rlog` files an earlier run left in `dir` (a run
/// on fewer workers would otherwise leave logs of another run beside it).
fn clear_logs(dir: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("worker-") && name.ends_with(".rlog") {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Runs a pilot and plans from its logs: `pilot` runs the reduced network
/// under round-robin with the monitoring it is given and returns its wall
/// time and its size in words; the plan for `workers` workers is written to
/// `dir/auto.map`.
pub fn plan(
    dir: &Path,
    workers: usize,
    flags: MonitorFlags,
    pilot: impl FnOnce(&MonitorConfig) -> Result<(Duration, String)>,
) -> Result<AutoPlan> {
    let start = Instant::now();
    let logs = dir.join("pilot");
    clear_logs(&logs)?;
    let (pilot_run, size) = pilot(&MonitorConfig::new(flags, &logs))
        .with_context(|| format!("the pilot run (logs in {})", logs.display()))?;
    let t = Instant::now();
    // As `rill-mon map` loads: no latency replay, and no progress bar.
    let load = rill_monitor::LoadOptions {
        progress: Some(false),
        latency: false,
        ..rill_monitor::LoadOptions::default()
    };
    let run = rill_monitor::load_run_with(&logs, &load)
        .with_context(|| format!("reading the pilot's logs in {}", logs.display()))?;
    let plan = rill_monitor::plan_mapping(&run, workers)
        .with_context(|| format!("planning from the pilot's logs in {}", logs.display()))?;
    let file = dir.join(MAP_FILE);
    std::fs::write(&file, plan.to_file())
        .with_context(|| format!("writing the mapping file {}", file.display()))?;
    ManualTable::load(&file)
        .map_err(anyhow::Error::from)
        .and_then(|t| Ok(t.validate(workers)?))
        .with_context(|| format!("the planned mapping file {}", file.display()))?;
    let plan_time = t.elapsed();
    Ok(AutoPlan {
        file,
        logs,
        size,
        monitor: flags,
        pilot_run,
        plan: plan_time,
        elapsed: start.elapsed(),
        predicted: (
            Duration::from_nanos(plan.estimate.proposed_ns),
            Duration::from_nanos(plan.estimate.observed_mapping_ns),
        ),
    })
}

/// An application run under `--mapping auto` (`opts.mapping` is
/// [`MappingChoice::Auto`]): the pilot ([`App::pilot`]) in
/// [`dir_for`]`(opts.logs, app, run)`, the plan, and the run under the
/// planned file with the rest of `opts`. The run gains the plan's figures
/// ([`AutoPlan::figures`]) and its summary the plan's line.
pub fn run_app(app: &dyn App, opts: &AppOpts, run: u32) -> Result<(AppRun, AutoPlan)> {
    let dir = dir_for(opts.logs.as_deref(), app.name(), run);
    let plan = plan(&dir, opts.workers, opts.pilot_monitor, |mon| {
        let pilot = app.pilot(opts.workers, opts.pilot)?;
        let popts = AppOpts {
            mapping: MappingChoice::Rr,
            monitor: mon.flags,
            logs: mon.dir.clone(),
            ..opts.clone()
        };
        let r = pilot.app.run(&popts)?;
        if !r.verified {
            bail!(
                "the pilot ({}) did not verify: {}",
                pilot.size,
                r.problems.join("; ")
            );
        }
        Ok((r.wall, pilot.size))
    })?;
    let real = AppOpts {
        mapping: MappingChoice::File(plan.file.clone()),
        ..opts.clone()
    };
    let mut r = app.run(&real)?;
    r.auto = Some(plan.figures(r.wall));
    Ok((r, plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::mc::{Mc, McConfig};

    #[test]
    fn sizes_and_dirs() {
        assert_eq!(pilot_size(600, 6, 10), 100);
        assert_eq!(pilot_size(600, 30, 10), 20);
        assert_eq!(pilot_size(30, 6, 10), 10);
        assert_eq!(pilot_size(5, 6, 10), 5);
        assert_eq!(pilot_size(5, 0, 1), 5);
        assert_eq!(
            dir_for(None, "mc", 2),
            Path::new("target/rill-auto/mc/run-2")
        );
        assert_eq!(dir_for(Some(Path::new("L")), "mc", 2), Path::new("L"));
        let f = PILOT_MONITOR.to_string();
        assert!(!PILOT_MONITOR.contains(MonitorFlags::MESSAGE), "{f}");
    }

    #[test]
    fn mc_auto_plans_a_file_that_loads() {
        let dir = std::env::temp_dir().join(format!("rill-auto-unit-{}", std::process::id()));
        let app = Mc::new(McConfig {
            paths: 3000,
            ..McConfig::default()
        })
        .unwrap();
        let opts = AppOpts {
            logs: Some(dir.clone()),
            ..AppOpts::new(2, MappingChoice::Auto)
        };
        let (r, plan) = run_app(&app, &opts, 0).unwrap();
        assert!(r.verified, "{:?}", r.problems);
        assert_eq!(plan.file, dir.join(MAP_FILE));
        let t = ManualTable::load(&plan.file).unwrap();
        assert!(t.lookup("mc/dispatch").is_some(), "{t:?}");
        assert!(t.lookup("mc/star/0/step/0").is_some(), "{t:?}");
        let a = r.auto.as_ref().unwrap();
        assert!(a.total_ms >= a.pilot_ms);
        assert!(plan.size.contains("of 3000 paths"), "{}", plan.size);
        assert_eq!(a.pilot_monitor, PILOT_MONITOR.to_string());
        // The planner's shortcut through the load's totals gives the plan
        // of the pass over every period.
        let run = rill_monitor::load_run(&plan.logs).unwrap();
        let json = |p: rill_monitor::MapPlan| serde_json::to_value(p).unwrap();
        assert_eq!(
            json(rill_monitor::plan_mapping(&run, 2).unwrap()),
            json(rill_monitor::plan_mapping_by_pass(&run, 2).unwrap())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--pilot-monitor sample:HZ`: the pilot records in sample mode and
    /// the plan is made from its estimates.
    #[test]
    fn mc_auto_plans_from_a_sampled_pilot() {
        let dir = std::env::temp_dir().join(format!("rill-auto-sampled-{}", std::process::id()));
        let app = Mc::new(McConfig {
            paths: 3000,
            ..McConfig::default()
        })
        .unwrap();
        let flags = MonitorFlags::SAMPLED.with_sample_hz(10_000);
        let opts = AppOpts {
            logs: Some(dir.clone()),
            pilot_monitor: flags,
            ..AppOpts::new(2, MappingChoice::Auto)
        };
        let (r, plan) = run_app(&app, &opts, 0).unwrap();
        assert!(r.verified, "{:?}", r.problems);
        let run = rill_monitor::load_run(&plan.logs).unwrap();
        assert!(run.flags.is_sampled(), "{}", run.flags);
        assert_eq!(run.flags.sample_hz(), Some(10_000));
        assert_eq!(r.auto.as_ref().unwrap().pilot_monitor, flags.to_string());
        let t = ManualTable::load(&plan.file).unwrap();
        assert!(t.lookup("mc/collect").is_some(), "{t:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
