//! `rill-bench ab`: A/B measurements on a shared machine. It runs chosen
//! rows (a rill-bench command line each) with every build and monitoring
//! mode, run after run, for a number of rounds, the order of the builds and
//! modes reversed every other round, so that a change in the machine's load
//! hits every configuration alike; then it prints, per row and
//! configuration, the median, min and max over the rounds and each
//! configuration's ratio to the first build (same mode) and to the first
//! mode (same build), as the median (min..max) of the per-round ratios.
//!
//! The builds are rill-bench executables, invoked with `--json`, so that
//! they may be older versions (or builds without the monitoring hooks, for
//! the cost of the hooks themselves).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use rill::MonitorFlags;
use serde::Serialize;
use serde_json::Value;

use crate::bench::ParamError;
use crate::cli::{AbArgs, CliError, Summary};
use crate::report::Stats;
use crate::table::Table;

/// A rill-bench executable to measure, `NAME=PATH` on the command line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Build {
    /// The name the tables give it.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
}

impl FromStr for Build {
    type Err = String;

    /// `NAME=PATH`, PATH an executable file.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, path) = s
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
            .ok_or_else(|| format!("'{s}': want NAME=PATH"))?;
        let path = PathBuf::from(path);
        if !is_executable(&path) {
            return Err(format!(
                "{name}: {} is not an executable file",
                path.display()
            ));
        }
        Ok(Build {
            name: name.to_string(),
            path,
        })
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A monitoring mode to measure in, as `--monitor` names it: `off`,
/// `counts` (map, worker, task and stream events: everything but the message
/// order), or any one word rill's `--monitor` takes (`full`, `all`,
/// `stream`...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mode {
    /// The name the tables give it.
    pub name: String,
    /// The `--monitor` value the builds get (spelled so that older builds
    /// take it too); `None` for off, when no `--monitor` is passed.
    pub arg: Option<String>,
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let name = s.trim();
        let arg = match name {
            "counts" => "map,worker,task,stream",
            _ => name,
        };
        let flags: MonitorFlags = arg
            .parse()
            .map_err(|e| format!("{e}; or counts (map,worker,task,stream)"))?;
        Ok(Mode {
            name: name.to_string(),
            arg: (!flags.is_off()).then(|| arg.to_string()),
        })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A row: one rill-bench command line, run on rill (`--engine rill` for the
/// peer benchmarks) with `--workers`, `--json` and the mode's `--monitor`.
/// It says what to run, not what a run gave, so it is not a run's
/// [`crate::report::Record`]: each run's figure is read back from the
/// record's JSON line by key (`wall_ms` or `ns_per_op`), not as a
/// `Record`, so that older builds' lines read as well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The row's name (`--rows`).
    pub name: &'static str,
    /// The subcommand and its arguments.
    pub args: &'static [&'static str],
    /// The workers the row always runs with, whatever `--workers` says.
    pub workers: Option<usize>,
}

impl Row {
    const fn new(name: &'static str, args: &'static [&'static str]) -> Row {
        Row {
            name,
            args,
            workers: None,
        }
    }

    const fn on(self, workers: usize) -> Row {
        Row {
            workers: Some(workers),
            ..self
        }
    }

    /// Whether the row runs an application (`des`, `mc`, `rt`, `ant`),
    /// which has no `--engine` and is figured by its wall time.
    pub fn is_app(&self) -> bool {
        matches!(self.args[0], "des" | "mc" | "rt" | "ant")
    }

    /// Whether the row is figured by its wall time: an application, or
    /// the sieve (whose operations, primes, cost ever more as the chain
    /// grows).
    fn by_wall(&self) -> bool {
        self.is_app() || self.args[0] == "sieve"
    }

    /// The JSON field the row is figured by.
    fn figure(&self) -> &'static str {
        if self.by_wall() {
            "wall_ms"
        } else {
            "ns_per_op"
        }
    }

    /// The unit of the figure.
    pub fn unit(&self) -> &'static str {
        match self.args[0] {
            _ if self.by_wall() => "ms",
            "wordcount" => "ns/word",
            _ => "ns/op",
        }
    }
}

/// Every row `--rows` can name.
pub const ROWS: [Row; 29] = [
    Row::new("roundtrip", &["micro", "--rows", "cross_worker_roundtrip"]),
    Row::new("yield", &["micro", "--rows", "yield"]),
    Row::new("handoff", &["micro", "--rows", "handoff"]),
    Row::new("spawn", &["micro", "--rows", "spawn"]),
    Row::new("pipe-rr", &["pipe", "--placement", "rr"]),
    Row::new("pipe-const", &["pipe", "--placement", "const"]),
    Row::new("pipe-parts", &["pipe", "--placement", "parts"]),
    Row::new(
        "ring-const",
        &["ring", "--placement", "const", "--hops", "200000"],
    ),
    Row::new(
        "ring-parts",
        &["ring", "--placement", "parts", "--hops", "200000"],
    ),
    Row::new(
        "ring-rr",
        &["ring", "--placement", "rr", "--hops", "100000"],
    ),
    Row::new(
        "ring-const-50k",
        &["ring", "--placement", "const", "--hops", "50000"],
    ),
    Row::new(
        "ring-const-500k",
        &["ring", "--placement", "const", "--hops", "500000"],
    ),
    Row::new("pipe-rr-w16", &["pipe", "--placement", "rr"]).on(16),
    Row::new(
        "ring-parts-w16",
        &["ring", "--placement", "parts", "--hops", "100000"],
    )
    .on(16),
    Row::new("wordcount", &["wordcount"]),
    Row::new("wordcount-slices", &["wordcount", "--words", "slices"]),
    Row::new("sieve-rr", &["sieve", "--mapping", "rr"]),
    Row::new("sieve-parts", &["sieve", "--mapping", "parts"]),
    Row::new("sieve-manual", &["sieve", "--mapping", "manual"]),
    Row::new("des-rr", &["des", "--mapping", "rr"]),
    Row::new("des-manual", &["des", "--mapping", "manual"]),
    Row::new("mc-rr", &["mc", "--mapping", "rr"]),
    Row::new("mc-manual", &["mc", "--mapping", "manual"]),
    Row::new("rt-rr", &["rt", "--mapping", "rr"]),
    Row::new("rt-manual", &["rt", "--mapping", "manual"]),
    Row::new("ant-rr", &["ant", "--mapping", "rr"]),
    Row::new("ant-manual", &["ant", "--mapping", "manual"]),
    // The paper's waiting experiment: one path per record, so the chains
    // mostly wait for each other.
    Row::new(
        "mc-waiting-rr",
        &["mc", "--paths", "50", "--batch", "1", "--mapping", "rr"],
    )
    .on(4),
    Row::new(
        "mc-waiting-manual",
        &["mc", "--paths", "50", "--batch", "1", "--mapping", "manual"],
    )
    .on(4),
];

/// The rows run when `--rows` is not given: the hot paths (round trip,
/// yield, hand-off, the pipe's three placements, the ring's three), and
/// with 16 cores the pipe and ring on 16 workers.
pub fn default_rows(cores: usize) -> Vec<&'static Row> {
    let mut names = vec![
        "roundtrip",
        "yield",
        "handoff",
        "pipe-rr",
        "pipe-const",
        "pipe-parts",
        "ring-const",
        "ring-parts",
        "ring-rr",
    ];
    if cores >= 16 {
        names.extend(["pipe-rr-w16", "ring-parts-w16"]);
    }
    names.into_iter().filter_map(row).collect()
}

/// The row called `name`.
pub fn row(name: &str) -> Option<&'static Row> {
    ROWS.iter().find(|r| r.name == name)
}

/// What one run measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Figures {
    /// The row's figure (ns per operation, or wall milliseconds).
    value: f64,
    /// Times a worker parked, when the build reports it.
    parks: Option<f64>,
    /// Bytes of monitoring log, when monitored.
    log_bytes: Option<f64>,
}

/// Reads the figures of a run from its JSON lines: the last line that has
/// the row's figure, which must be verified.
fn figures(row: &Row, stdout: &str) -> Result<Figures, String> {
    let line: Value = stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get(row.figure()).is_some())
        .ok_or_else(|| format!("no JSON line with {} in its output", row.figure()))?;
    if line["verified"] != true {
        return Err(format!("the run did not verify: {line}"));
    }
    let num = |k: &str| line.get(k).and_then(Value::as_f64);
    Ok(Figures {
        value: num(row.figure())
            .ok_or_else(|| format!("{} is not a number: {line}", row.figure()))?,
        parks: num("parks"),
        log_bytes: num("log_bytes"),
    })
}

/// Runs `row` once with `build` in `mode`; monitoring logs go to `logs`,
/// which is emptied first.
fn run_once(
    build: &Build,
    mode: &Mode,
    row: &Row,
    args: &AbArgs,
    logs: &Path,
) -> Result<Figures, String> {
    let mut cmd = Command::new(&build.path);
    cmd.args(row_args(row.args, &args.extra));
    if !row.is_app() {
        cmd.args(["--engine", "rill"]);
    }
    let workers = row.workers.unwrap_or(args.workers);
    cmd.args(["--workers", &workers.to_string(), "--json"]);
    if let Some(m) = &mode.arg {
        let _ = std::fs::remove_dir_all(logs);
        cmd.args(["--monitor", m]).arg("--logs").arg(logs);
    }
    cmd.args(&args.extra);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", build.path.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // The end of what it said, from a character boundary.
        let s = stderr.trim_end();
        let from = (s.len().saturating_sub(1000)..s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        return Err(format!("{}: {}", out.status, &s[from..]));
    }
    figures(row, &String::from_utf8_lossy(&out.stdout))
}

/// One build in one mode.
struct Config<'a> {
    build: &'a Build,
    mode: &'a Mode,
}

/// The runs of one row in one configuration, one per round (`None` where
/// the run failed).
type Runs = Vec<Option<Figures>>;

/// The median and range of some runs' figure, and the medians of the other
/// figures.
fn stats(runs: &Runs, f: impl Fn(&Figures) -> Option<f64>) -> Option<Stats> {
    let v: Vec<f64> = runs.iter().flatten().filter_map(f).collect();
    Stats::of(&v)
}

/// The per-round ratios of `a`'s figure to `b`'s, over the rounds where
/// both ran.
fn ratios(a: &Runs, b: &Runs) -> Option<Stats> {
    let v: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some(x.as_ref()?.value / y.as_ref()?.value))
        .collect();
    Stats::of(&v)
}

/// A ratio as a change: `+3.1% (-2%..+6%)`.
fn change(r: Option<Stats>) -> String {
    match r {
        Some(s) => format!(
            "{:+.1}% ({:+.0}%..{:+.0}%)",
            (s.median - 1.0) * 100.0,
            (s.min - 1.0) * 100.0,
            (s.max - 1.0) * 100.0
        ),
        None => "n/a".into(),
    }
}

/// `ab --json`'s document.
#[derive(Serialize)]
struct AbRecord<'a> {
    machine: &'a str,
    load_average: Option<&'a str>,
    line_roundtrip_ns: &'a [Option<f64>],
    rounds: u32,
    workers: usize,
    builds: &'a [Build],
    monitor: &'a [Mode],
    extra_args: &'a [String],
    runs: usize,
    failures: usize,
    cells: Vec<Cell<'a>>,
}

/// One row in one configuration, over the rounds.
#[derive(Serialize)]
struct Cell<'a> {
    row: &'a str,
    unit: &'static str,
    build: &'a str,
    monitor: &'a str,
    values: Vec<Option<f64>>,
    stats: Option<Stats>,
    parks: Option<f64>,
    log_bytes: Option<f64>,
    vs_first_build: Option<Stats>,
    vs_first_mode: Option<Stats>,
}

/// The load average, from /proc/loadavg.
fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// The builds, modes and rows `args` ask for, checked.
fn plan(args: &AbArgs) -> Result<(Vec<Build>, Vec<&'static Row>), CliError> {
    let bad = |m: String| CliError::Params(ParamError(m));
    let builds = if args.builds.is_empty() {
        let path = std::env::current_exe()
            .map_err(|e| bad(format!("cannot find this rill-bench's executable: {e}")))?;
        vec![Build {
            name: "this".into(),
            path,
        }]
    } else {
        args.builds.clone()
    };
    for (i, b) in builds.iter().enumerate() {
        if builds[..i].iter().any(|o| o.name == b.name) {
            return Err(bad(format!(
                "--build {}: two builds with that name",
                b.name
            )));
        }
    }
    for (i, m) in args.monitor.iter().enumerate() {
        if args.monitor[..i].contains(m) {
            return Err(bad(format!("--monitor {m}: given twice")));
        }
    }
    let mut rows: Vec<&'static Row> = Vec::new();
    let chosen = if args.rows.is_empty() {
        default_rows(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        )
    } else {
        args.rows.clone()
    };
    for r in chosen {
        if !rows.contains(&r) {
            rows.push(r);
        }
    }
    Ok((builds, rows))
}

/// `rill-bench ab`: runs the rows with every build and mode, round after
/// round, and prints a Markdown table (or with `--json` one JSON object) of
/// medians, ranges and ratios, with the machine.
pub fn run(
    args: &AbArgs,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<Summary, CliError> {
    let (builds, rows) = plan(args)?;
    let configs: Vec<Config> = builds
        .iter()
        .flat_map(|build| args.monitor.iter().map(move |mode| Config { build, mode }))
        .collect();
    let logs = std::env::temp_dir().join(format!("rill-bench-ab-{}", std::process::id()));
    let mut summary = Summary::default();
    // runs[row][config][round]
    let mut runs: Vec<Vec<Runs>> = vec![vec![Vec::new(); configs.len()]; rows.len()];
    // The machine's floor under a crossing, before each round and after the
    // last: a host that changes under the rounds shows here.
    let mut lines: Vec<Option<f64>> = Vec::new();
    for round in 0..args.rounds {
        lines.push(crate::line::ns());
        let _ = writeln!(progress, "round {}/{}", round + 1, args.rounds);
        let mut order: Vec<usize> = (0..configs.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for (r, row) in rows.iter().enumerate() {
            for &c in &order {
                let Config { build, mode } = &configs[c];
                let _ = write!(progress, "  {} {} {} ... ", row.name, build.name, mode);
                let _ = progress.flush();
                let got = run_once(build, mode, row, args, &logs);
                summary.runs += 1;
                match &got {
                    Ok(f) => {
                        let _ = writeln!(progress, "{:.1} {}", f.value, row.unit());
                    }
                    Err(e) => {
                        summary.failures += 1;
                        let _ = writeln!(progress, "failed: {e}");
                    }
                }
                runs[r][c].push(got.ok());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&logs);
    lines.push(crate::line::ns());
    let line = LineFloor::of(&lines);

    let machine = crate::suite::machine();
    let load = load_average();
    let first_build = &builds[0];
    let first_mode = &args.monitor[0];
    let vs_build = builds.len() > 1;
    let vs_mode = args.monitor.len() > 1;
    // The configuration of build `b` in mode `m`.
    let at = |b: &Build, m: &Mode| {
        configs
            .iter()
            .position(|c| c.build == b && c.mode == m)
            .expect("every build runs in every mode")
    };
    if args.json {
        let mut cells = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            for (c, cfg) in configs.iter().enumerate() {
                let mine = &runs[r][c];
                cells.push(Cell {
                    row: row.name,
                    unit: row.unit(),
                    build: &cfg.build.name,
                    monitor: &cfg.mode.name,
                    values: mine.iter().map(|f| f.map(|f| f.value)).collect(),
                    stats: stats(mine, |f| Some(f.value)),
                    parks: stats(mine, |f| f.parks).map(|s| s.median),
                    log_bytes: stats(mine, |f| f.log_bytes).map(|s| s.median),
                    vs_first_build: vs_build
                        .then(|| ratios(mine, &runs[r][at(first_build, cfg.mode)]))
                        .flatten(),
                    vs_first_mode: vs_mode
                        .then(|| ratios(mine, &runs[r][at(cfg.build, first_mode)]))
                        .flatten(),
                });
            }
        }
        let doc = AbRecord {
            machine: &machine,
            load_average: load.as_deref(),
            line_roundtrip_ns: &lines,
            rounds: args.rounds,
            workers: args.workers,
            builds: &builds,
            monitor: &args.monitor,
            extra_args: &args.extra,
            runs: summary.runs,
            failures: summary.failures,
            cells,
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string(&doc).expect("a record serialises")
        )?;
        return Ok(summary);
    }

    writeln!(
        out,
        "Machine: {machine}; load average {}.",
        load.as_deref().unwrap_or("unknown")
    )?;
    writeln!(out, "{}", line.describe())?;
    writeln!(
        out,
        "rill-bench ab: {} round{}, {} workers{}; median (min-max) over the rounds; \
         a ratio is the median (min..max) of the rounds' ratios.\n",
        args.rounds,
        if args.rounds == 1 { "" } else { "s" },
        args.workers,
        if args.extra.is_empty() {
            String::new()
        } else {
            format!(", every run with {}", args.extra.join(" "))
        }
    )?;
    let mut head = vec![
        "row".to_string(),
        "unit".into(),
        "build".into(),
        "monitor".into(),
        "median".into(),
        "min-max".into(),
    ];
    if vs_build {
        head.push(format!("vs {}", first_build.name));
    }
    if vs_mode {
        head.push(format!("vs {first_mode}"));
    }
    head.extend(["parks".into(), "log KB".into()]);
    let mut table = Table::markdown(head).left(&[0, 1, 2, 3]);
    for (r, row) in rows.iter().enumerate() {
        for (c, cfg) in configs.iter().enumerate() {
            let mine = &runs[r][c];
            let mut cells = vec![
                row.name.to_string(),
                row.unit().to_string(),
                cfg.build.name.clone(),
                cfg.mode.name.clone(),
            ];
            match stats(mine, |f| Some(f.value)) {
                Some(s) => cells.extend([
                    format!("{:.1}", s.median),
                    format!("{:.1}-{:.1}", s.min, s.max),
                ]),
                None => cells.extend(["failed".into(), "-".into()]),
            }
            if vs_build {
                cells.push(if cfg.build == first_build {
                    "-".into()
                } else {
                    change(ratios(mine, &runs[r][at(first_build, cfg.mode)]))
                });
            }
            if vs_mode {
                cells.push(if cfg.mode == first_mode {
                    "-".into()
                } else {
                    change(ratios(mine, &runs[r][at(cfg.build, first_mode)]))
                });
            }
            let opt =
                |v: Option<Stats>, f: fn(f64) -> String| v.map_or("-".into(), |s| f(s.median));
            cells.push(opt(stats(mine, |f| f.parks), |v| format!("{v:.0}")));
            cells.push(opt(stats(mine, |f| f.log_bytes), |v| {
                format!("{:.0}", v / 1024.0)
            }));
            table.row(cells);
        }
    }
    write!(out, "{table}")?;
    if summary.failures > 0 {
        writeln!(
            out,
            "\n{} of {} runs failed.",
            summary.failures, summary.runs
        )?;
    }
    Ok(summary)
}

/// A row's arguments without the flags (each `--flag value`) that the
/// arguments after `--` give again: those take the value given there (a
/// flag twice on one command line is an error).
fn row_args<'a>(row: &[&'a str], extra: &[String]) -> Vec<&'a str> {
    let given = |flag: &str| {
        extra
            .iter()
            .any(|e| e == flag || e.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    };
    let mut out = Vec::with_capacity(row.len());
    let mut it = row.iter();
    while let Some(&a) = it.next() {
        if a.starts_with("--") && given(a) {
            it.next();
        } else {
            out.push(a);
        }
    }
    out
}

/// The line round trips `ab` measured before each round and after the last
/// (`crate::line`): the machine's floor under a crossing, and whether it
/// held still while the rounds ran.
struct LineFloor {
    /// The figures that came out, ns.
    got: Vec<f64>,
    /// Measurements made.
    tried: usize,
}

impl LineFloor {
    /// A swing wider than this (max over min) is pointed out.
    const SWING: f64 = 1.5;

    fn of(lines: &[Option<f64>]) -> LineFloor {
        LineFloor {
            got: lines.iter().flatten().copied().collect(),
            tried: lines.len(),
        }
    }

    /// One line for the table's header.
    fn describe(&self) -> String {
        let Some(st) = crate::report::Stats::of(&self.got) else {
            return format!(
                "Line round trip between the cores of workers 0 and 1: not measured ({} tries; \
                 fewer than two cores, or a core was busy).",
                self.tried
            );
        };
        let (lo, hi) = (st.min, st.max);
        let mut s = format!(
            "Line round trip between the cores of workers 0 and 1 (the floor of a crossing), \
             before each round and after the last: median {:.0} ns ({:.0}-{:.0}).",
            st.median, lo, hi
        );
        if hi > lo * Self::SWING {
            s.push_str(&format!(
                " It moved {:.1}x while the rounds ran: the host changed under them, and rows \
                 that cross workers moved with it (compare the ratios, not the medians).",
                hi / lo
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_arguments_replace_the_rows_own_values() {
        let row = ["ring", "--placement", "const", "--hops", "200000"];
        let extra = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(row_args(&row, &[]), row);
        assert_eq!(
            row_args(&row, &extra(&["--hops", "1000000"])),
            ["ring", "--placement", "const"]
        );
        assert_eq!(
            row_args(&row, &extra(&["--hops=5", "--capacity", "1"])),
            ["ring", "--placement", "const"]
        );
        // A flag that only starts like the row's is not the row's.
        assert_eq!(row_args(&row, &extra(&["--hopsx", "1"])), row);
    }

    #[test]
    fn builds_and_modes_parse() {
        let exe = std::env::current_exe().unwrap();
        let b: Build = format!("old={}", exe.display()).parse().unwrap();
        assert_eq!((b.name.as_str(), b.path), ("old", exe.clone()));
        assert!("old".parse::<Build>().is_err());
        assert!("=x".parse::<Build>().is_err());
        assert!("x=/no/such/file".parse::<Build>().is_err());
        assert!("x=/tmp".parse::<Build>().is_err());
        let m: Mode = "counts".parse().unwrap();
        assert_eq!(m.arg.as_deref(), Some("map,worker,task,stream"));
        assert_eq!("off".parse::<Mode>().unwrap().arg, None);
        assert_eq!("full".parse::<Mode>().unwrap().arg.as_deref(), Some("full"));
        let e = "loud".parse::<Mode>().unwrap_err();
        assert!(e.contains("counts"), "{e}");
    }

    #[test]
    fn rows() {
        for (i, r) in ROWS.iter().enumerate() {
            assert!(ROWS[..i].iter().all(|o| o.name != r.name), "{}", r.name);
        }
        let names = |v: Vec<&Row>| v.iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(
            names(default_rows(2)),
            [
                "roundtrip",
                "yield",
                "handoff",
                "pipe-rr",
                "pipe-const",
                "pipe-parts",
                "ring-const",
                "ring-parts",
                "ring-rr"
            ]
        );
        assert_eq!(default_rows(16).len(), 11);
        assert!(row("mc-manual").unwrap().is_app());
        assert_eq!(row("mc-manual").unwrap().unit(), "ms");
        assert_eq!(row("pipe-rr").unwrap().unit(), "ns/op");
        assert_eq!(row("sieve-rr").unwrap().unit(), "ms");
        assert_eq!(row("sieve-rr").unwrap().figure(), "wall_ms");
        assert_eq!(row("nope"), None);
    }

    #[test]
    fn figures_and_ratios() {
        let pipe = row("pipe-rr").unwrap();
        let out = "{\"ns_per_op\": 12.5, \"verified\": true, \"parks\": 3}\n";
        let f = figures(pipe, out).unwrap();
        assert_eq!((f.value, f.parks, f.log_bytes), (12.5, Some(3.0), None));
        assert!(figures(pipe, "{\"ns_per_op\": 1, \"verified\": false}").is_err());
        assert!(figures(pipe, "not json").is_err());
        let app = row("des-rr").unwrap();
        assert_eq!(
            figures(app, "{\"wall_ms\": 4, \"verified\": true}")
                .unwrap()
                .value,
            4.0
        );
        let v = |x: f64| {
            Some(Figures {
                value: x,
                ..Figures::default()
            })
        };
        let a = vec![v(11.0), None, v(9.0)];
        let b = vec![v(10.0), v(10.0), v(10.0)];
        let r = ratios(&a, &b).unwrap();
        assert!(
            (r.median - 1.0).abs() < 1e-9 && (r.max - 1.1).abs() < 1e-9,
            "{r:?}"
        );
        assert_eq!(change(Some(r)), "+0.0% (-10%..+10%)");
        assert_eq!(change(None), "n/a");
    }

    #[test]
    fn the_line_floor_says_when_the_host_moved() {
        let still = LineFloor::of(&[Some(120.0), Some(130.0), Some(125.0)]).describe();
        assert!(still.contains("median 125 ns (120-130)"), "{still}");
        assert!(!still.contains("moved"), "{still}");
        let moved = LineFloor::of(&[Some(120.0), None, Some(560.0)]).describe();
        assert!(moved.contains("moved 4.7x"), "{moved}");
        let none = LineFloor::of(&[None, None]).describe();
        assert!(none.contains("not measured (2 tries"), "{none}");
    }
}
