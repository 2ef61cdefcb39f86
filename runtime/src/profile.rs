//! [`Mapping::Profile`](crate::Mapping::Profile): the placement of one run
//! learnt from an earlier run of the same program.
//!
//! A profile is a mapping file ([`ManualTable::parse`]) whose first line
//! says how many workers it was made for: `# rill profile: W workers`.
//! At the start of a run, a file that reads and was made for this run's
//! workers is loaded (names it does not know are placed adaptively); one
//! that is missing is recorded; one that cannot be read, or was made for
//! another worker count, or names a worker the run lacks, is stale: the
//! run says so on stderr and records a new one.
//!
//! What a recorded profile holds. `rill` cannot call the planner of
//! `rill-mon map` (`rill_monitor::plan_mapping`): rill-monitor is the
//! analysis layer above the runtime (it reads the logs the runtime writes,
//! with a terminal UI and its own dependencies), and imports go downward.
//! So the planner is a hook the builder accepts
//! ([`Builder::profile_planner`](crate::Builder::profile_planner); rill-monitor
//! provides one, `rill_monitor::profile_planner`): with one, a recording run
//! is monitored in count mode (unless the program set its own monitoring)
//! into `PATH.logs/`, and the hook plans the file from those logs at the
//! end of the run. Without one, the runtime writes where each task of the
//! run started (its name and worker): the adaptive placement that run
//! reached, work stealing included, kept for the next run without stealing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::mapper::ManualTable;
use crate::MonitorFlags;

/// Plans a mapping file from a count-mode log directory for a number of
/// workers: the text of a [`ManualTable`] file, or why it could not.
pub type PlanFn = dyn Fn(&Path, usize) -> Result<String, String> + Send + Sync;

/// A planner for [`Mapping::Profile`](crate::Mapping::Profile)'s recording
/// runs (see [`Builder::profile_planner`](crate::Builder::profile_planner)).
#[derive(Clone)]
pub struct ProfilePlanner(pub Arc<PlanFn>);

impl std::fmt::Debug for ProfilePlanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProfilePlanner(..)")
    }
}

/// What a recording run monitors, when the program monitors nothing:
/// placements, dispatches, worker waits and per-stream counts, no clock
/// per message (the flags of `rill-bench --mapping auto`'s pilot).
pub const PROFILE_MONITOR: MonitorFlags = MonitorFlags::MAPPING
    .union(MonitorFlags::SCHEDULER)
    .union(MonitorFlags::WORKER)
    .union(MonitorFlags::STREAM);

/// The first line of a profile made for `workers` workers.
fn header(workers: usize) -> String {
    format!("# rill profile: {workers} workers\n")
}

/// Where a recording run's logs go: `PATH.logs`.
pub(crate) fn log_dir(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".logs");
    PathBuf::from(s)
}

/// A profile at the start of a run.
pub(crate) enum Start {
    /// Loaded: place by it.
    Loaded(ManualTable),
    /// Missing or stale: record.
    Record,
}

/// Reads the profile at `path` for `workers` workers; a stale one is said
/// on stderr.
pub(crate) fn start(path: &Path, workers: usize) -> Start {
    match load(path, workers) {
        Ok(Some(t)) => Start::Loaded(t),
        Ok(None) => Start::Record,
        Err(why) => {
            eprintln!(
                "rill: the profile {} is stale ({why}); this run is placed adaptively and records a new one",
                path.display()
            );
            Start::Record
        }
    }
}

/// The table of the profile at `path`: `None` when there is no file, an
/// error when it cannot be used for `workers` workers.
pub(crate) fn load(path: &Path, workers: usize) -> Result<Option<ManualTable>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let first = text.lines().next().unwrap_or("");
    let Some(made_for) = first
        .strip_prefix("# rill profile: ")
        .and_then(|r| r.strip_suffix(" workers"))
        .and_then(|n| n.trim().parse::<usize>().ok())
    else {
        return Err("its first line is not '# rill profile: W workers'".into());
    };
    if made_for != workers {
        return Err(format!(
            "made for {made_for} workers, the run has {workers}"
        ));
    }
    let table = ManualTable::parse(&text)?;
    table.validate(workers).map_err(|e| e.to_string())?;
    Ok(Some(table))
}

/// A recording run's placements: each task's name and the worker it
/// started on (without a planner).
#[derive(Default)]
pub(crate) struct Record {
    started: Mutex<Vec<(String, usize)>>,
}

impl Record {
    /// Notes that `name` started on `worker`.
    pub(crate) fn started(&self, name: &str, worker: usize) {
        self.started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name.to_string(), worker));
    }

    /// The table of where the tasks started, as a file's text.
    fn table(&self) -> String {
        let mut v = self
            .started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        let mut out = String::new();
        for (name, w) in v {
            out.push_str(&format!("{} = {w}\n", quote(&name)));
        }
        out
    }
}

/// `name` as a TOML basic string (what [`ManualTable::parse`] reads).
fn quote(name: &str) -> String {
    let mut s = String::from("\"");
    for c in name.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if c.is_control() => s.push_str(&format!("\\u{:04X}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Writes the profile of a finished run to `path`: planned by `planner`
/// from the logs in `logs`, or, without either, the placements `record`
/// saw. A failure is said on stderr (the run's result stands).
pub(crate) fn finish(
    path: &Path,
    workers: usize,
    planner: Option<&ProfilePlanner>,
    logs: Option<&Path>,
    record: &Record,
) {
    let body = match (planner, logs) {
        (Some(p), Some(dir)) => match (p.0)(dir, workers) {
            Ok(text) => text,
            Err(why) => {
                eprintln!(
                    "rill: planning the profile {} from {} failed ({why}); it records where the tasks started",
                    path.display(),
                    dir.display()
                );
                record.table()
            }
        },
        _ => record.table(),
    };
    let text = header(workers) + &body;
    let checked =
        ManualTable::parse(&text).and_then(|t| t.validate(workers).map_err(|e| e.to_string()));
    if let Err(why) = checked {
        eprintln!(
            "rill: the profile planned for {} does not read back ({why}); not written",
            path.display()
        );
        return;
    }
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("rill: writing the profile {} failed: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_profile_loads_back_and_a_stale_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.map");
        assert!(load(&path, 2).unwrap().is_none(), "missing: record");
        let r = Record::default();
        r.started("a/1", 1);
        r.started("q\"x", 0);
        finish(&path, 2, None, None, &r);
        let t = load(&path, 2).unwrap().unwrap();
        assert_eq!(t.lookup("a/1"), Some(1));
        assert_eq!(t.lookup("q\"x"), Some(0));
        assert!(load(&path, 3).unwrap_err().contains("made for 2 workers"));
        std::fs::write(&path, "a = 1\n").unwrap();
        assert!(load(&path, 2).is_err(), "no header");
        assert!(matches!(start(&path, 2), Start::Record));
    }

    #[test]
    fn a_planner_writes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.map");
        let seen = Arc::new(Mutex::new(None));
        let s2 = seen.clone();
        let p = ProfilePlanner(Arc::new(move |d: &Path, w: usize| {
            *s2.lock().unwrap() = Some((d.to_path_buf(), w));
            Ok("\"x/\" = 1\n".to_string())
        }));
        let logs = log_dir(&path);
        finish(&path, 2, Some(&p), Some(&logs), &Record::default());
        assert_eq!(*seen.lock().unwrap(), Some((logs, 2)));
        assert_eq!(load(&path, 2).unwrap().unwrap().lookup("x/9"), Some(1));
        // A plan that names a worker the run lacks is not written.
        let bad = ProfilePlanner(Arc::new(|_: &Path, _| Ok("x = 5\n".to_string())));
        std::fs::remove_file(&path).unwrap();
        finish(&path, 2, Some(&bad), Some(dir.path()), &Record::default());
        assert!(!path.exists());
    }
}
