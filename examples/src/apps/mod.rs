//! The benchmark applications as stream networks of named tasks on rill.
//!
//! Each application turns one of the [`crate::kernels`] into a network whose
//! task names are places in it (`des/round/1/2`, `mc/star/3/step/7`,
//! `rt/solver/2`, `ant/ant/17`), runs on any number of workers under every
//! [`MappingChoice`], and checks its own result:
//!
//! - [`des`]: a splitter, parallel `IP → rounds → FP` pipelines and an
//!   order-restoring collector (FIPS 46-3 ECB with PKCS#7).
//! - [`mc`]: Monte Carlo option pricing whose chains of step tasks unfold at
//!   run time by serial replication (S-Net's star).
//! - [`rt`]: a dealer handing scenes to four solvers on demand and a
//!   collector putting the images back in order.
//! - [`ant`]: an ant colony whose ants run as a pool of tasks, reduced in ant
//!   order every iteration.
//! - [`wordcount`]: a source, a splitter, counters fed by word hash and a
//!   merger. Unlike the four above it runs beside its peers (`rill-bench
//!   wordcount`, with [`crate::peers::wordcount`]) rather than as an [`App`].
//! - [`sieve`]: the concurrent prime sieve, a chain of filters that grows
//!   while it runs; like the word count it runs beside its peers
//!   (`rill-bench sieve`, with [`crate::peers::sieve`]).
//!
//! `--mapping auto` ([`auto`]) runs an application first at a reduced size
//! ([`App::pilot`]) under round-robin mapping with count-mode monitoring,
//! plans a mapping file from its logs with `rill_monitor::plan_mapping`, and
//! then runs the real network under that file.
//!
//! Every runtime is built by [`runtime_for`] (the word count: with
//! [`mapping_for`] and the peer benchmarks' monitoring setting), where the
//! mapping choice becomes a [`rill::Mapping`] and monitoring is configured.
//!
//! `wall` is always the time of `Runtime::run` of the network: inputs, the
//! sequential references and the checks are outside it.

pub mod ant;
pub mod auto;
pub mod des;
pub mod mc;
pub mod rt;
pub mod sieve;
pub mod wordcount;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use rill::{ManualTable, MonitorFlags, RunStats, Runtime};

pub use crate::mapping::{mapping_file, mapping_for, AutoFigures, MappingChoice};
pub(crate) use rill::PollSet;
use serde::Serialize;

/// Options every application takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppOpts {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Task placement.
    pub mapping: MappingChoice,
    /// What monitoring records (default: nothing).
    pub monitor: MonitorFlags,
    /// Directory for monitoring logs.
    pub logs: Option<PathBuf>,
    /// Capacity of the application's data streams; `None` takes the
    /// application's own default.
    pub capacity: Option<usize>,
    /// Usable stack bytes per task; `None`: the runtime's default, or more
    /// when the application needs it (see [`App::stack_size`]).
    pub stack_size: Option<usize>,
    /// Under `--mapping auto`, the pilot runs about 1/`pilot` of the size
    /// (`--pilot N`, default [`auto::PILOT_DIVISOR`]).
    pub pilot: u64,
    /// Under `--mapping auto`, what the pilot records (`--pilot-monitor`,
    /// default [`auto::PILOT_MONITOR`]).
    pub pilot_monitor: MonitorFlags,
}

impl Default for AppOpts {
    fn default() -> Self {
        AppOpts {
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            mapping: MappingChoice::Adaptive,
            monitor: MonitorFlags::OFF,
            logs: None,
            capacity: None,
            stack_size: None,
            pilot: auto::PILOT_DIVISOR,
            pilot_monitor: auto::PILOT_MONITOR,
        }
    }
}

impl AppOpts {
    /// Options for `workers` workers under `mapping`, the rest default.
    pub fn new(workers: usize, mapping: MappingChoice) -> Self {
        AppOpts {
            workers,
            mapping,
            ..AppOpts::default()
        }
    }

    /// The same options with monitoring off and no logs (for the extra runs
    /// that verification makes).
    pub fn unmonitored(&self) -> Self {
        AppOpts {
            monitor: MonitorFlags::OFF,
            logs: None,
            ..self.clone()
        }
    }

    /// The stream capacity to use when the application's default is `dflt`.
    pub fn capacity_or(&self, dflt: usize) -> usize {
        self.capacity.unwrap_or(dflt).max(1)
    }
}

/// Builds the runtime of an application run: `workers` workers, the mapping
/// turned into a [`rill::Mapping`] (`manual` is the application's `manual`
/// table, `parts` its ordered `parts` list, a file is loaded with
/// [`ManualTable::load`]), and monitoring from `monitor`/`logs`.
pub fn runtime_for(opts: &AppOpts, manual: ManualTable, parts: Vec<String>) -> Result<Runtime> {
    if opts.workers == 0 {
        return Err(anyhow!("workers must be at least 1, got 0"));
    }
    let mapping = mapping_for(&opts.mapping, manual, parts)?;
    let mut builder = Runtime::builder()
        .workers(opts.workers)
        .mapping(mapping)
        .capacity(opts.capacity_or(16))
        .profile_planner(rill_monitor::profile_planner);
    if let Some(bytes) = opts.stack_size {
        builder = builder.stack_size(bytes);
    }

    // ---- MONITORING -------------------------------------------------------
    // `--monitor` names the event classes, `--logs` the directory of the
    // per-worker logs (default `rill-logs`).
    if !opts.monitor.is_off() {
        builder = builder.monitor(rill::MonitorConfig {
            flags: opts.monitor,
            dir: opts.logs.clone(),
        });
    }
    // ---- end MONITORING ---------------------------------------------------

    Ok(builder.build()?)
}

/// What one run of a network gave: its value, its wall time and the
/// runtime's statistics.
#[derive(Debug)]
pub struct NetRun<T> {
    /// What the network computed.
    pub value: T,
    /// Wall time of `Runtime::run`.
    pub wall: Duration,
    /// The runtime's statistics of the run.
    pub stats: RunStats,
}

/// Runs `rt` with `collect` as its last task `name` (the network's collector,
/// whose value is the network's result: [`Runtime::run_main_as`], so that
/// it is placed and named as when it was spawned last), and times the run.
pub(crate) fn run_timed<T: Send + 'static>(
    mut rt: Runtime,
    name: &'static str,
    what: &str,
    collect: impl FnOnce() -> T + Send + 'static,
) -> Result<NetRun<T>> {
    let t0 = Instant::now();
    let res = rt.run_main_as(name, collect);
    let wall = t0.elapsed();
    let (value, stats) = res.with_context(|| format!("the {what} network failed"))?;
    Ok(NetRun { value, wall, stats })
}

/// The outcome of one application run, the same shape for every application
/// (what the command line reports).
#[derive(Clone, Debug)]
pub struct AppRun {
    /// `des`, `mc`, `rt` or `ant`.
    pub bench: &'static str,
    /// Wall time of the network's run.
    pub wall: Duration,
    /// Whether every check passed.
    pub verified: bool,
    /// The checks that failed, in words.
    pub problems: Vec<String>,
    /// The application's figures (`bytes`, `call_price`, `checksum`,
    /// `best_cost`...), once the run has them.
    pub figures: Option<AppFigures>,
    /// Under `--mapping auto`, the pilot's and the plan's figures.
    pub auto: Option<AutoFigures>,
    /// A one-line human summary of the result.
    pub summary: String,
    /// The runtime's statistics of the network's run.
    pub stats: RunStats,
    /// What the monitoring logs of the run say, when it was monitored.
    pub monitor: Option<MonSummary>,
}

/// The figures `rill-mon summary` gives for a monitored run.
#[derive(Clone, Debug, Default)]
pub struct MonSummary {
    /// Log bytes over all workers.
    pub log_bytes: u64,
    /// Events recorded (a period counts 1 plus its messages).
    pub events: u64,
    /// Waiting events (WE) and waiting time in ms (WT), per worker.
    pub waits: Vec<(u64, f64)>,
}

impl MonSummary {
    /// Reads the logs in `dir` (written by the run just finished), and writes
    /// `summary.txt`, `summary.json` and `timeline.svg` beside them, and with
    /// `report` `report.html` (`rill-mon report`'s page: about 0.2 s for the
    /// 20 MB of logs of an MC run of 200,000 paths).
    pub fn from_logs(dir: &std::path::Path, report: bool) -> Result<MonSummary> {
        let run = rill_monitor::load_run(dir)?;
        let s = rill_monitor::summarize(&run);
        std::fs::write(dir.join("summary.txt"), s.to_text())?;
        std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&s)?)?;
        let svg = rill_monitor::timeline_svg(&run, &rill_monitor::TimelineOptions::default());
        std::fs::write(dir.join("timeline.svg"), svg)?;
        if report {
            let page = rill_monitor::report_html(&run, &rill_monitor::ReportOptions::default());
            std::fs::write(dir.join("report.html"), page)?;
        }
        Ok(MonSummary {
            log_bytes: s.bytes,
            events: s.events,
            waits: s
                .workers
                .iter()
                .map(|w| (w.waiting_events, w.wait_ns as f64 / 1e6))
                .collect(),
        })
    }

    /// Bytes per event.
    pub fn bytes_per_event(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.log_bytes as f64 / self.events as f64
        }
    }
}

const WE_COLS: [&str; 8] = [
    "we_w0", "we_w1", "we_w2", "we_w3", "we_w4", "we_w5", "we_w6", "we_w7",
];
const WT_COLS: [&str; 8] = [
    "wt_ms_w0", "wt_ms_w1", "wt_ms_w2", "wt_ms_w3", "wt_ms_w4", "wt_ms_w5", "wt_ms_w6", "wt_ms_w7",
];

impl AppRun {
    pub(crate) fn new(bench: &'static str, wall: Duration, stats: RunStats) -> Self {
        AppRun {
            bench,
            wall,
            verified: true,
            problems: Vec::new(),
            figures: None,
            auto: None,
            summary: String::new(),
            stats,
            monitor: None,
        }
    }

    /// Records a check: a failed one clears `verified` and keeps `what`.
    pub(crate) fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.verified = false;
            self.problems.push(what());
        }
    }

    /// Figures of the run that are not the application's own: the runtime's
    /// statistics. Every per-run extra column (the command line's tables,
    /// `compare`) comes from here; add new ones here.
    pub fn extra_columns(&self) -> Vec<(&'static str, f64)> {
        let idle: Duration = self.stats.workers.iter().map(|w| w.idle).sum();
        let parks: u64 = self.stats.workers.iter().map(|w| w.parks).sum();
        let steals: u64 = self.stats.workers.iter().map(|w| w.steals).sum();
        let mut v = vec![
            ("tasks", self.stats.tasks_created as f64),
            ("dispatches", self.stats.dispatches as f64),
            ("idle_ms", idle.as_secs_f64() * 1e3),
            ("parks", parks as f64),
            ("steals", steals as f64),
        ];
        if let Some(m) = &self.monitor {
            v.push(("log_bytes", m.log_bytes as f64));
            v.push(("events", m.events as f64));
            v.push(("bytes_per_event", m.bytes_per_event()));
            for (i, (we, wt)) in m.waits.iter().enumerate().take(WE_COLS.len()) {
                v.push((WE_COLS[i], *we as f64));
                v.push((WT_COLS[i], *wt));
            }
        }
        v
    }

    /// One of the application's figures by its JSON name (for tests).
    #[cfg(test)]
    pub(crate) fn figure(&self, key: &str) -> serde_json::Value {
        serde_json::to_value(&self.figures).expect("figures serialise")[key].clone()
    }
}

/// An application's own figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AppFigures {
    /// DES.
    Des(des::DesFigures),
    /// Monte Carlo.
    Mc(mc::McFigures),
    /// Ray tracing.
    Rt(rt::RtFigures),
    /// Ant colony.
    Ant(ant::AntFigures),
}

/// The runtime's figures of an application run: its statistics and, when
/// monitored, what the logs say (the [`AppRun::extra_columns`]), in its
/// [`crate::report::Record`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    /// Tasks created.
    pub tasks: u64,
    /// Task dispatches.
    pub dispatches: u64,
    /// Time the workers spent idle, summed, in milliseconds.
    pub idle_ms: f64,
    /// Times a worker parked.
    pub parks: u64,
    /// Tasks stolen.
    pub steals: u64,
    /// Messages whose writer and reader ran on different workers.
    pub crossed: u64,
    /// Monitored: bytes of log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    /// Monitored: events recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// Monitored: bytes per event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_event: Option<f64>,
    /// Monitored: waiting events and waiting time per worker, as
    /// `we_wN` and `wt_ms_wN` (workers 0 to 7).
    #[serde(flatten)]
    pub waits: Waits,
}

impl RunFigures {
    /// The runtime's figures of `run`.
    pub fn of(run: &AppRun) -> RunFigures {
        let s = &run.stats;
        RunFigures {
            tasks: s.tasks_created,
            dispatches: s.dispatches,
            idle_ms: s
                .workers
                .iter()
                .map(|w| w.idle)
                .sum::<Duration>()
                .as_secs_f64()
                * 1e3,
            parks: s.workers.iter().map(|w| w.parks).sum(),
            steals: s.workers.iter().map(|w| w.steals).sum(),
            crossed: s.crossed,
            log_bytes: run.monitor.as_ref().map(|m| m.log_bytes),
            events: run.monitor.as_ref().map(|m| m.events),
            bytes_per_event: run.monitor.as_ref().map(|m| m.bytes_per_event()),
            waits: Waits(
                run.monitor
                    .as_ref()
                    .map(|m| m.waits.clone())
                    .unwrap_or_default(),
            ),
        }
    }
}

/// Waiting events and waiting time in ms per worker (the first eight).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Waits(pub Vec<(u64, f64)>);

impl Serialize for Waits {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let shown = &self.0[..self.0.len().min(WE_COLS.len())];
        let mut m = s.serialize_map(Some(2 * shown.len()))?;
        for (i, (we, wt)) in shown.iter().enumerate() {
            m.serialize_entry(WE_COLS[i], we)?;
            m.serialize_entry(WT_COLS[i], wt)?;
        }
        m.end()
    }
}

/// An application ready to run: its input made and checked, its sequential
/// reference computed on first use and kept for the next runs.
pub trait App {
    /// `des`, `mc`, `rt` or `ant`.
    fn name(&self) -> &'static str;
    /// The parameters in one line, for titles.
    fn describe(&self) -> String;
    /// The placement table of `manual` mapping on `workers` workers.
    fn manual_table(&self, workers: usize) -> ManualTable;
    /// The ordered prefix list of `parts` mapping.
    fn parts(&self, workers: usize) -> Vec<String>;
    /// Runs the network once under `opts` and checks its result. `Err` is a
    /// run that could not finish (deadlock, panic, I/O); a wrong result is
    /// `Ok` with `verified: false`.
    fn run(&self, opts: &AppOpts) -> Result<AppRun>;
    /// Stack bytes per task the application needs, when more than the
    /// runtime's default.
    fn stack_size(&self) -> Option<usize> {
        None
    }
    /// The same network at a reduced size for `--mapping auto`'s pilot run
    /// on `workers` workers: the same task names (so the planned file names
    /// the real run's tasks), about 1/`divisor` of the work (each
    /// application keeps a floor); no output files.
    fn pilot(&self, workers: usize, divisor: u64) -> Result<auto::Pilot>;
}

/// An application's configuration as its command line gives it
/// (`rill-bench APP`'s arguments, `clap::Args`, in the application's file):
/// the application it makes.
pub trait AppConfig: std::fmt::Debug {
    /// `des`, `mc`, `rt` or `ant`.
    fn name(&self) -> &'static str;

    /// The application, its input made and its configuration checked (an
    /// error is an argument error).
    fn app(&self) -> Result<Box<dyn App>>;
}

/// Builds the runtime of `app` under `opts` (see [`runtime_for`]).
pub(crate) fn runtime_of(app: &dyn App, opts: &AppOpts) -> Result<Runtime> {
    let opts = AppOpts {
        stack_size: opts.stack_size.or(app.stack_size()),
        ..opts.clone()
    };
    runtime_for(
        &opts,
        app.manual_table(opts.workers),
        app.parts(opts.workers),
    )
}

/// FNV-1a of a byte string (for comparing outputs across runs in JSON).
pub fn fnv64(data: &[u8]) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_for_every_mapping() {
        let manual = ManualTable::new().with("x/", 1);
        for m in ["rr", "manual", "parts", "steal"] {
            let opts = AppOpts::new(2, m.parse().unwrap());
            let rt = runtime_for(&opts, manual.clone(), vec!["x/".into()]).unwrap();
            assert_eq!(rt.config().workers(), 2);
        }
        // A manual table naming a worker that does not exist.
        let opts = AppOpts::new(1, MappingChoice::Manual);
        assert!(runtime_for(&opts, manual, vec![]).is_err());
    }
}
