//! How tasks are placed on workers: the command line's `--mapping` choice
//! ([`MappingChoice`]), what it means for a network ([`mapping_for`]), and
//! the applications' placement files ([`mapping_file`]); and the defaults of
//! `--mapping auto`'s pilot ([`PILOT_DIVISOR`], [`PILOT_MONITOR`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{anyhow, Context, Result};
use rill::{ManualTable, Mapping, MonitorFlags};

/// The pilot runs about 1/`PILOT_DIVISOR` of the real run's size by
/// default (`--pilot N` sets another N). With busy times counted from the
/// dispatches ([`PILOT_MONITOR`]), a hundredth of Monte Carlo (3,000 of
/// 300,000 paths) kept the chains whole in 15 of 15 plans, its pilot took
/// about 7 ms (a thirtieth sampled at 10 kHz: 16 ms), and auto with its
/// pilot ran level with the manual table, 1.51-1.55x rr (`compare mc
/// --paths 300000 --repeat 15 --auto`; `docs/measurements/rill-mon.md#auto-pilot`). At 1/6 the
/// pilot cost more than the plan saved (auto with its pilot 385.7 ms
/// against rr 300.2). The other applications' pilots sit on their floors
/// at 1/30 already (rt, ant) or take a few milliseconds (des).
pub const PILOT_DIVISOR: u64 = 100;

/// The largest `--pilot N`.
pub const MAX_PILOT_DIVISOR: u64 = 1000;

/// What the pilot records by default (`--pilot-monitor`): count mode,
/// `map,worker,task,stream`: task names and workers, busy time per task
/// from its dispatches, worker waits and per-stream message and block
/// counts; no message order, which `plan_mapping` does not read. Sample
/// mode (`sample:HZ`) plans too, from busy times estimated from a few
/// samples per task; on a pilot of a few milliseconds it is no cheaper
/// (MC rr at 3,000 paths, 7 alternating rounds: counts +16%, sample:10000
/// +32% over off) and its estimates mislead the plan: at 1/100 of MC,
/// sampled at 20 kHz, 8 of 15 auto runs took 280-300 ms against 220 for
/// the rest; the five of their maps kept each put steps of one chain on
/// the other worker (a capacity-1 link crossing, which the model
/// underrates), the fast runs' maps none.
pub const PILOT_MONITOR: MonitorFlags = MonitorFlags::MAPPING
    .union(MonitorFlags::SCHEDULER)
    .union(MonitorFlags::WORKER)
    .union(MonitorFlags::STREAM);

/// What a run under `--mapping auto` reports of its pilot and its plan
/// (`crate::apps::auto` says what each figure covers).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct AutoFigures {
    /// The planned file.
    pub mapping_file: String,
    /// The pilot's logs.
    pub pilot_logs: String,
    /// The pilot's size, in words.
    pub pilot_size: String,
    /// What the pilot recorded.
    pub pilot_monitor: String,
    /// The pilot's run and the plan, in milliseconds.
    pub pilot_ms: f64,
    /// The pilot's run.
    pub pilot_run_ms: f64,
    /// The plan.
    pub plan_ms: f64,
    /// All the auto step took before the real run.
    pub pilot_elapsed_ms: f64,
    /// The plan's prediction of the real run's time under the plan.
    pub pilot_predicted_ms: f64,
    /// The plan's prediction under round-robin.
    pub pilot_predicted_rr_ms: f64,
    /// `pilot_ms` and the real run's wall time.
    pub total_ms: f64,
}

/// How tasks are placed on workers, as the command line names it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum MappingChoice {
    /// `adaptive`: the runtime's default ([`rill::Mapping::Adaptive`]): a
    /// task starts on its spawner's worker, tasks made before the run are
    /// cut into contiguous blocks, idle workers take runs of new tasks.
    #[default]
    Adaptive,
    /// `rr`: the n-th task created goes to worker n mod W.
    Rr,
    /// `manual`: the application's own placement table (see each app's
    /// `manual_table`).
    Manual,
    /// `parts`: the application's ordered list of task-name prefixes cut into
    /// W contiguous blocks.
    Parts,
    /// `steal`: round-robin at creation, then work stealing.
    Steal,
    /// `auto`: a pilot run at a reduced size under round-robin with
    /// count-mode monitoring, a mapping planned from its logs and written to
    /// a file, then the run under that file ([`crate::apps::auto`]). Only the
    /// applications and the word count have it; it never reaches
    /// [`mapping_for`].
    Auto,
    /// A `prefix = worker` table file, loaded with [`ManualTable::load`].
    File(PathBuf),
    /// `profile:PATH`: [`rill::Mapping::Profile`]: the first run (no file)
    /// is placed adaptively, monitored in count mode into `PATH.logs`, and
    /// writes the plan of rill-mon's planner to PATH; later runs load it.
    Profile(PathBuf),
}

impl MappingChoice {
    /// The choice as the command line and the JSON output spell it (a file
    /// choice is its path).
    pub fn name(&self) -> String {
        match self {
            MappingChoice::Adaptive => "adaptive".into(),
            MappingChoice::Rr => "rr".into(),
            MappingChoice::Manual => "manual".into(),
            MappingChoice::Parts => "parts".into(),
            MappingChoice::Steal => "steal".into(),
            MappingChoice::Auto => "auto".into(),
            MappingChoice::File(p) => p.display().to_string(),
            MappingChoice::Profile(p) => format!("profile:{}", p.display()),
        }
    }
}

impl MappingChoice {
    /// The kind of mapping, without its file: `adaptive`, `rr`, `manual`,
    /// `parts`, `steal`, `auto`, `file` or `profile`.
    pub fn kind(&self) -> &'static str {
        match self {
            MappingChoice::Adaptive => "adaptive",
            MappingChoice::Rr => "rr",
            MappingChoice::Manual => "manual",
            MappingChoice::Parts => "parts",
            MappingChoice::Steal => "steal",
            MappingChoice::Auto => "auto",
            MappingChoice::File(_) => "file",
            MappingChoice::Profile(_) => "profile",
        }
    }
}

impl fmt::Display for MappingChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for MappingChoice {
    type Err = String;

    /// `rr`, `manual`, `parts`, `steal`, `auto`, or the path of an existing
    /// table file (a file named like a choice: `./auto`).
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.trim() {
            "adaptive" => MappingChoice::Adaptive,
            p if p.starts_with("profile:") && p.len() > "profile:".len() => {
                MappingChoice::Profile(PathBuf::from(&p["profile:".len()..]))
            }
            "rr" | "round-robin" => MappingChoice::Rr,
            "manual" => MappingChoice::Manual,
            "parts" => MappingChoice::Parts,
            "steal" => MappingChoice::Steal,
            "auto" => MappingChoice::Auto,
            "" => return Err("empty mapping: use adaptive, rr, manual, parts, steal, auto, profile:PATH or a FILE".into()),
            path => {
                let p = PathBuf::from(path);
                if !p.is_file() {
                    return Err(format!(
                        "'{path}' is neither adaptive, rr, manual, parts, steal, auto nor profile:PATH, and no such mapping file exists"
                    ));
                }
                // Parse now, so a bad file is an argument error, not a failed run.
                ManualTable::load(&p).map_err(|e| e.to_string())?;
                MappingChoice::File(p)
            }
        })
    }
}

/// The [`rill::Mapping`] a mapping choice means for a network whose own
/// placement table is `manual` and whose ordered prefix list is `parts`; a
/// file choice is loaded with [`ManualTable::load`].
pub fn mapping_for(
    choice: &MappingChoice,
    manual: ManualTable,
    parts: Vec<String>,
) -> Result<Mapping> {
    Ok(match choice {
        MappingChoice::Adaptive => Mapping::Adaptive,
        MappingChoice::Profile(p) => Mapping::Profile(p.clone()),
        MappingChoice::Rr => Mapping::RoundRobin,
        MappingChoice::Manual => Mapping::Manual(manual),
        MappingChoice::Parts => Mapping::Partitioned(parts),
        MappingChoice::Steal => Mapping::Steal,
        MappingChoice::Auto => {
            return Err(anyhow!(
                "mapping auto is planned by a pilot run first (apps::auto), which then runs under the planned file"
            ))
        }
        MappingChoice::File(p) => Mapping::Manual(
            ManualTable::load(p).with_context(|| format!("mapping file {}", p.display()))?,
        ),
    })
}

/// The placement table in `examples/mappings/<app>.map` (written for 2
/// workers and the default sizes).
pub fn mapping_file(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mappings")
        .join(format!("{app}.map"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_choices() {
        assert_eq!("rr".parse::<MappingChoice>().unwrap(), MappingChoice::Rr);
        assert_eq!(
            "manual".parse::<MappingChoice>().unwrap(),
            MappingChoice::Manual
        );
        assert_eq!(
            "parts".parse::<MappingChoice>().unwrap(),
            MappingChoice::Parts
        );
        assert_eq!(
            "steal".parse::<MappingChoice>().unwrap(),
            MappingChoice::Steal
        );
        let f = mapping_file("mc");
        assert_eq!(
            f.to_str().unwrap().parse::<MappingChoice>().unwrap(),
            MappingChoice::File(f.clone())
        );
        let e = "/no/such/file.map".parse::<MappingChoice>().unwrap_err();
        assert!(e.contains("no such mapping file"), "{e}");
    }
}
