//! Running the applications from the command line: `rill-bench des|mc|rt|ant`
//! ([`run_app`]), `rill-bench compare` ([`compare`]) and `rill-bench all`
//! ([`all`], which also runs the pipe, ring, word count and prime sieve
//! beside their peers).
//!
//! Every run of an application is an [`AppRun`]; its per-run figures beyond
//! the application's own come from [`AppRun::extra_columns`], which the
//! tables here and the JSON lines both use, so a new column (monitoring's
//! waiting time per worker, say) is added in one place.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use rill::MonitorFlags;
use rill_monitor::xml_escape;
use serde::Serialize;

use crate::apps::auto::AutoPlan;
use crate::apps::{ant, des, mc, rt, App, AppOpts, AppRun, MappingChoice};
use crate::bench::{
    BenchOpts, ParamError, PipeParams, Placement, RingParams, SieveParams, WordcountParams,
};
use crate::cli::{AllArgs, AppCommand, CliError, CompareArgs, Summary};
use crate::engines::Engine;
use crate::engines::Job;
use crate::kernels::wordcount::{Corpus, TextSource};
use crate::registry;
use crate::report::{self, Outcome, Record, Stats};
use crate::table::Table;

/// One finished (or failed) run of an application.
struct Done {
    opts: AppOpts,
    run: u32,
    result: Result<AppRun, String>,
    /// Under `--mapping auto`: the pilot and the plan.
    auto: Option<AutoPlan>,
}

impl Done {
    fn ok(&self) -> bool {
        matches!(&self.result, Ok(r) if r.verified)
    }

    fn wall_ms(&self) -> Option<f64> {
        self.result
            .as_ref()
            .ok()
            .map(|r| r.wall.as_secs_f64() * 1e3)
    }

    /// The wall time with the pilot and the plan of an auto run (its
    /// `total_ms`); the wall time of any other run.
    fn total_ms(&self) -> Option<f64> {
        let pilot = self
            .auto
            .as_ref()
            .map_or(0.0, |a| a.pilot_time().as_secs_f64() * 1e3);
        self.wall_ms().map(|w| w + pilot)
    }

    /// The run's record.
    fn record(&self, bench: &'static str) -> Record {
        Record::of_app(bench, &self.opts, self.run, &self.result)
    }

    /// A one-line account for progress output.
    fn short(&self) -> String {
        let pilot = match (&self.auto, self.total_ms()) {
            (Some(a), Some(total)) => format!(
                " (pilot {:.1} ms, total {total:.1} ms)",
                a.pilot_time().as_secs_f64() * 1e3
            ),
            _ => String::new(),
        };
        match &self.result {
            Ok(r) if r.verified => {
                format!("{:.1} ms, verified{pilot}", r.wall.as_secs_f64() * 1e3)
            }
            Ok(r) => format!(
                "{:.1} ms{pilot}, NOT VERIFIED: {}",
                r.wall.as_secs_f64() * 1e3,
                r.problems.join("; ")
            ),
            Err(e) => format!("error: {e}"),
        }
    }
}

/// Runs `app` once under `opts`, a panic or failure becoming an error; under
/// `--mapping auto` the pilot and the plan first ([`crate::apps::auto`]). A
/// monitored run's logs get rill-mon's summary and timeline, and with
/// `report` its report page.
fn run_once(app: &dyn App, opts: &AppOpts, run: u32, report: bool) -> Done {
    let mut auto = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if opts.mapping == MappingChoice::Auto {
            let (r, plan) = crate::apps::auto::run_app(app, opts, run)?;
            auto = Some(plan);
            Ok(r)
        } else {
            app.run(opts)
        }
    }))
    .unwrap_or_else(|p| Err(anyhow::anyhow!("panicked: {}", crate::net::panic_text(&*p))))
    .and_then(|mut r| {
        // A monitored run: read its logs back (rill-mon's summary), so
        // that waiting events and log sizes appear beside the timing.
        if !opts.monitor.is_off() {
            let dir = opts
                .logs
                .clone()
                .unwrap_or_else(|| PathBuf::from("rill-logs"));
            r.monitor = Some(
                crate::apps::MonSummary::from_logs(&dir, report)
                    .map_err(|e| anyhow::anyhow!("reading the logs in {}: {e:#}", dir.display()))?,
            );
        }
        Ok(r)
    })
    .map_err(|e| format!("{e:#}"));
    Done {
        opts: opts.clone(),
        run,
        result,
        auto,
    }
}

/// Runs once with a progress line (`label ... result`) and counts the run
/// (and a failure) in `summary`: what `run_app`, `compare` and `all` share.
/// `report`: whether a monitored run writes its report page.
fn run_counted(
    app: &dyn App,
    opts: &AppOpts,
    (run, report): (u32, bool),
    label: std::fmt::Arguments<'_>,
    progress: &mut dyn Write,
    summary: &mut Summary,
) -> Done {
    let _ = write!(progress, "{label} ... ");
    let _ = progress.flush();
    let d = run_once(app, opts, run, report);
    let _ = writeln!(progress, "{}", d.short());
    summary.runs += 1;
    if !d.ok() {
        summary.failures += 1;
    }
    d
}

fn stats_of(done: &[&Done]) -> Option<Stats> {
    let v: Vec<f64> = done.iter().filter_map(|d| d.wall_ms()).collect();
    Stats::of(&v)
}

/// Stats of the runs' wall times with their pilots ([`Done::total_ms`]).
fn total_stats_of(done: &[&Done]) -> Option<Stats> {
    let v: Vec<f64> = done.iter().filter_map(|d| d.total_ms()).collect();
    Stats::of(&v)
}

/// Stats of the auto runs' pilots (pilot network and plan), in ms.
fn pilot_stats_of(done: &[&Done]) -> Option<Stats> {
    let v: Vec<f64> = done
        .iter()
        .filter_map(|d| d.auto.as_ref())
        .map(|a| a.pilot_time().as_secs_f64() * 1e3)
        .collect();
    Stats::of(&v)
}

/// `rill-bench des|mc|rt|ant`: runs the application `--repeat` times and
/// reports each run (a table line or a JSON object) and, for several runs,
/// the median, min and max wall time.
pub fn run_app(
    cmd: &AppCommand,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<Summary, CliError> {
    let app = cmd.app().map_err(CliError::Params)?;
    let common = cmd.common();
    let base = common.opts();
    let repeat = common.repeat.unwrap_or(1);
    let mut summary = Summary::default();
    let mut done = Vec::new();
    if !common.json {
        writeln!(out, "{}", app.describe())?;
        writeln!(
            out,
            "workers={} mapping={} monitor={} allocator={}",
            base.workers,
            base.mapping,
            base.monitor,
            report::allocator()
        )?;
    }
    for run in 0..repeat {
        // Several runs keep their logs apart: DIR/run-N.
        let opts = AppOpts {
            logs: match &base.logs {
                Some(l) if repeat > 1 => Some(l.join(format!("run-{run}"))),
                l => l.clone(),
            },
            ..base.clone()
        };
        let d = run_counted(
            app.as_ref(),
            &opts,
            (run, true),
            format_args!("[{}] {} run {}/{repeat}", app.name(), opts.mapping, run + 1),
            progress,
            &mut summary,
        );
        if common.json {
            writeln!(out, "{}", d.record(app.name()).json())?;
            out.flush()?;
        } else {
            match &d.result {
                Ok(r) => {
                    writeln!(
                        out,
                        "run {}: {:>9.1} ms  {}  {}",
                        run + 1,
                        r.wall.as_secs_f64() * 1e3,
                        if r.verified {
                            "verified"
                        } else {
                            "NOT VERIFIED"
                        },
                        r.summary
                    )?;
                    for p in &r.problems {
                        writeln!(out, "       problem: {p}")?;
                    }
                    if let Some(a) = &d.auto {
                        writeln!(out, "       {}", a.line(r.wall))?;
                    }
                }
                Err(e) => writeln!(out, "run {}: error: {e}", run + 1)?,
            }
        }
        done.push(d);
    }
    if !common.json && repeat > 1 {
        let all: Vec<&Done> = done.iter().collect();
        if let Some(s) = stats_of(&all) {
            writeln!(
                out,
                "wall ms: median {:.1}  min {:.1}  max {:.1}  ({repeat} runs)",
                s.median, s.min, s.max
            )?;
        }
        if base.mapping == MappingChoice::Auto {
            if let (Some(t), Some(p)) = (total_stats_of(&all), pilot_stats_of(&all)) {
                writeln!(
                    out,
                    "total ms (pilot included): median {:.1}  min {:.1}  max {:.1}; pilot ms median {:.1}",
                    t.median, t.min, t.max, p.median
                )?;
            }
        }
    }
    Ok(summary)
}

/// Medians of the extra columns over some runs, in column order.
fn extra_medians(done: &[&Done]) -> Vec<(&'static str, f64)> {
    let runs: Vec<&AppRun> = done.iter().filter_map(|d| d.result.as_ref().ok()).collect();
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .extra_columns()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let v: Vec<f64> = runs.iter().map(|r| r.extra_columns()[i].1).collect();
            (*name, Stats::of(&v).map_or(f64::NAN, |s| s.median))
        })
        .collect()
}

/// `rill-bench compare APP`: round-robin and manual mapping (and with
/// `--auto` auto mapping, with `--file` each mapping file) alternately,
/// `--repeat` runs of each (default 5);
/// medians with min and max, the extra columns' medians, and the speedup
/// (rr median / manual median, and / auto median with and without the
/// pilot).
pub fn compare(
    args: &CompareArgs,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<Summary, CliError> {
    let common = args.app.common();
    if common.mapping.is_some() {
        return Err(CliError::Params(ParamError(
            "compare runs rr and manual mapping itself (and auto with --auto); leave out --mapping"
                .into(),
        )));
    }
    let app = args.app.app().map_err(CliError::Params)?;
    let repeat = common.repeat.unwrap_or(5);
    let base = common.opts();
    let mut mappings = vec![MappingChoice::Rr, MappingChoice::Manual];
    if args.auto {
        mappings.push(MappingChoice::Auto);
    }
    mappings.extend(args.files.iter().cloned().map(MappingChoice::File));
    // A row's name and log directory: a file by its file name.
    let label = |m: &MappingChoice| match m {
        MappingChoice::File(p) => p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        m => m.name(),
    };
    let mut summary = Summary::default();
    let mut done: Vec<Done> = Vec::new();
    for run in 0..repeat {
        for m in &mappings {
            let opts = AppOpts {
                mapping: m.clone(),
                logs: base
                    .logs
                    .as_ref()
                    .map(|l| l.join(format!("{}-{}-{run}", app.name(), label(m)))),
                ..base.clone()
            };
            let d = run_counted(
                app.as_ref(),
                &opts,
                (run, true),
                format_args!(
                    "[compare {}] {} run {}/{repeat}",
                    app.name(),
                    label(m),
                    run + 1
                ),
                progress,
                &mut summary,
            );
            if common.json {
                writeln!(out, "{}", d.record(app.name()).json())?;
                out.flush()?;
            }
            done.push(d);
        }
    }
    let of = |m: &MappingChoice| -> Vec<&Done> {
        done.iter()
            .filter(|d| d.opts.mapping == *m && d.ok())
            .collect()
    };
    let (rr, manual, auto) = (
        of(&MappingChoice::Rr),
        of(&MappingChoice::Manual),
        of(&MappingChoice::Auto),
    );
    let (rs, ms) = (stats_of(&rr), stats_of(&manual));
    let (auto_s, auto_total, pilot) = if args.auto {
        (
            stats_of(&auto),
            total_stats_of(&auto),
            pilot_stats_of(&auto),
        )
    } else {
        (None, None, None)
    };
    let over_rr = |x: Option<Stats>| match (rs, x) {
        (Some(r), Some(m)) if m.median > 0.0 => Some(r.median / m.median),
        _ => None,
    };
    let speedup = over_rr(ms);
    // Per file: its runs, stats, speed-up over rr and median over manual's.
    struct FileRow<'a> {
        name: String,
        runs: Vec<&'a Done>,
        stats: Option<Stats>,
        speedup: Option<f64>,
        to_manual: Option<f64>,
    }
    let files: Vec<FileRow<'_>> = args
        .files
        .iter()
        .map(|f| {
            let m = MappingChoice::File(f.clone());
            let runs = of(&m);
            let stats = stats_of(&runs);
            let to_manual = match (stats, ms) {
                (Some(s), Some(m)) if m.median > 0.0 => Some(s.median / m.median),
                _ => None,
            };
            FileRow {
                name: label(&m),
                runs,
                stats,
                speedup: over_rr(stats),
                to_manual,
            }
        })
        .collect();
    if common.json {
        let line = CompareRecord {
            bench: app.name(),
            compare: true,
            workers: base.workers,
            monitor: base.monitor.to_string(),
            runs: repeat,
            rr_median_ms: rs.map(|s| s.median),
            manual_median_ms: ms.map(|s| s.median),
            speedup,
            verified: summary.failures == 0,
            auto: args.auto.then(|| CompareAuto {
                auto_median_ms: auto_s.map(|s| s.median),
                auto_total_median_ms: auto_total.map(|s| s.median),
                pilot_median_ms: pilot.map(|s| s.median),
                speedup_auto: over_rr(auto_s),
                speedup_auto_total: over_rr(auto_total),
            }),
            files: (!files.is_empty()).then(|| {
                files
                    .iter()
                    .zip(&args.files)
                    .map(|(f, path)| CompareFile {
                        file: path.display().to_string(),
                        median_ms: f.stats.map(|s| s.median),
                        min_ms: f.stats.map(|s| s.min),
                        max_ms: f.stats.map(|s| s.max),
                        speedup: f.speedup,
                        to_manual: f.to_manual,
                    })
                    .collect()
            }),
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string(&line).expect("a record serialises")
        )?;
        return Ok(summary);
    }
    writeln!(out, "{}", app.describe())?;
    writeln!(
        out,
        "workers={} monitor={}  ({repeat} runs of each mapping, alternating)",
        base.workers, base.monitor
    )?;
    let mut head = vec![
        "mapping".to_string(),
        "median ms".into(),
        "min ms".into(),
        "max ms".into(),
    ];
    head.extend(
        extra_medians(&rr)
            .into_iter()
            .map(|(name, _)| name.to_string()),
    );
    let mut table = Table::plain(head).left(&[0]);
    let mut rows = vec![
        ("rr".to_string(), &rr, rs),
        ("manual".to_string(), &manual, ms),
    ];
    if args.auto {
        rows.push(("auto".into(), &auto, auto_s));
        rows.push(("auto+pilot".into(), &auto, auto_total));
    }
    for f in &files {
        rows.push((f.name.clone(), &f.runs, f.stats));
    }
    for (name, runs, st) in rows {
        let mut row = vec![name];
        match st {
            Some(s) => row.extend([s.median, s.min, s.max].map(|v| format!("{v:.1}"))),
            None => row.push("failed".into()),
        }
        row.extend(
            extra_medians(runs)
                .into_iter()
                .map(|(_, v)| format!("{v:.1}")),
        );
        table.row(row);
    }
    write!(out, "{table}")?;
    match speedup {
        Some(s) => writeln!(out, "speedup (rr median / manual median): {s:.2}x")?,
        None => writeln!(out, "speedup: n/a (a mapping had no verified run)")?,
    }
    if args.auto {
        let fmt = |x: Option<f64>| x.map_or("n/a".to_string(), |s| format!("{s:.2}x"));
        writeln!(
            out,
            "speedup of auto (rr median / auto median): {}; pilot included (rr median / auto+pilot median): {}",
            fmt(over_rr(auto_s)),
            fmt(over_rr(auto_total))
        )?;
        if let (Some(p), Some(last)) = (pilot, auto.last().and_then(|d| d.auto.as_ref())) {
            writeln!(
                out,
                "auto: each run plans from its own pilot ({}), pilot median {:.1} ms; last mapping file {}",
                last.size,
                p.median,
                last.file.display()
            )?;
        }
    }
    for (f, path) in files.iter().zip(&args.files) {
        let fmt =
            |x: Option<f64>, unit: &str| x.map_or("n/a".to_string(), |s| format!("{s:.2}{unit}"));
        writeln!(
            out,
            "{} ({}): speedup over rr (rr median / its median) {}; its median / manual median {}",
            f.name,
            path.display(),
            fmt(f.speedup, "x"),
            fmt(f.to_manual, "")
        )?;
    }
    if summary.failures > 0 {
        writeln!(out, "{} of {} runs failed", summary.failures, summary.runs)?;
    }
    Ok(summary)
}

/// The applications at the sizes of `rill-bench all`.
fn all_apps(quick: bool) -> anyhow::Result<Vec<Box<dyn App>>> {
    let (des_len, mc_paths, mc_batch, rt_size, ant) = if quick {
        (16_000, 5_000, mc::DEFAULT_BATCH, (4, 32, 24), (40, 4, 2))
    } else {
        (
            500_000,
            200_000,
            mc::DEFAULT_BATCH,
            (20, 160, 120),
            (300, 20, 3),
        )
    };
    Ok(vec![
        Box::new(des::Des::new(des::DesConfig {
            input: des::DesInput::Generated {
                len: des_len,
                seed: 1,
            },
            ..des::DesConfig::default()
        })?),
        Box::new(mc::Mc::new(mc::McConfig {
            paths: mc_paths,
            net: mc::McNet {
                batch: mc_batch,
                ..mc::McNet::default()
            },
            ..mc::McConfig::default()
        })?),
        Box::new(rt::Rt::new(rt::RtConfig {
            scenes: rt_size.0,
            width: rt_size.1,
            height: rt_size.2,
            ..rt::RtConfig::default()
        })?),
        Box::new(ant::Ant::new(ant::AntConfig {
            jobs: ant.0,
            ants: ant.1,
            iterations: ant.2,
            seed: 1,
        })?),
    ])
}

/// A row of the `all` table, of index.html and of results.json's `rows`:
/// one configuration (an application under a mapping and monitoring mode,
/// or a benchmark on an engine) summed up over its runs, beside the rows
/// it is compared with. It is not a run (each run is a [`Record`], kept in
/// results.json's `runs`): it holds the median and range of the runs'
/// wall times and ratios to other rows, which no single run has.
#[derive(Clone, Debug, Serialize)]
struct Row {
    bench: String,
    /// What tells a benchmark's job apart from its others in the suite
    /// ([`crate::engines::Bench::variant`]: the pipe's and the ring's
    /// placement of rill's tasks, the same for every engine of the job;
    /// the word count's format of words; the sieve's mapping).
    placement: Option<String>,
    engine: &'static str,
    mapping: String,
    monitor: String,
    /// Median, min and max of the runs' wall times.
    #[serde(flatten)]
    wall: Wall,
    /// Manual over rr (on the manual row), or the peer's wall over rill's.
    speedup: Option<f64>,
    /// Monitoring full over off, in percent (on the full row).
    #[serde(rename = "overhead_pct")]
    overhead: Option<f64>,
    verified: bool,
    note: String,
    /// Where the monitoring logs of the row's runs went.
    logs: Option<PathBuf>,
    /// From the logs of the row's last run: bytes, bytes per event, and the
    /// waiting events / waiting time per worker (in the runs' records).
    #[serde(skip)]
    mon: Option<crate::apps::MonSummary>,
}

/// The median, min and max wall time of a row's runs, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
struct Wall {
    wall_ms: Option<f64>,
    min_ms: Option<f64>,
    max_ms: Option<f64>,
}

impl From<Option<Stats>> for Wall {
    fn from(s: Option<Stats>) -> Wall {
        Wall {
            wall_ms: s.map(|s| s.median),
            min_ms: s.map(|s| s.min),
            max_ms: s.map(|s| s.max),
        }
    }
}

impl Row {
    /// The bench column: the bench, and for the pipe and the ring the
    /// placement, so that each peer row reads beside its rill row.
    fn label(&self) -> String {
        match &self.placement {
            Some(p) => format!("{} {p}", self.bench),
            None => self.bench.clone(),
        }
    }
}

fn waits_text(m: &crate::apps::MonSummary) -> String {
    m.waits
        .iter()
        .map(|(we, wt)| format!("{we}/{wt:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fmt_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn table(rows: &[Row]) -> String {
    let mut t = Table::plain([
        "bench",
        "engine",
        "mapping",
        "monitor",
        "wall ms",
        "min ms",
        "speedup",
        "overhead",
        "verified",
        "log KB",
        "B/ev",
        "note (monitored: WE/WT ms per worker)",
    ])
    .left(&[0, 1, 2, 3, 11]);
    for r in rows {
        t.row([
            r.label(),
            r.engine.to_string(),
            r.mapping.clone(),
            r.monitor.clone(),
            fmt_opt(r.wall.wall_ms, |v| format!("{v:.1}")),
            fmt_opt(r.wall.min_ms, |v| format!("{v:.1}")),
            fmt_opt(r.speedup, |v| format!("{v:.2}x")),
            fmt_opt(r.overhead, |v| format!("{v:+.1}%")),
            if r.verified { "yes" } else { "NO" }.to_string(),
            fmt_opt(r.mon.as_ref().map(|m| m.log_bytes as f64 / 1024.0), |v| {
                format!("{v:.0}")
            }),
            fmt_opt(r.mon.as_ref().map(|m| m.bytes_per_event()), |v| {
                format!("{v:.2}")
            }),
            match &r.mon {
                Some(m) if r.note.is_empty() => waits_text(m),
                _ => r.note.clone(),
            },
        ]);
    }
    t.to_string()
}

fn html(rows: &[Row], title: &str, machine: &str, out_dir: &Path) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rill report</title>\n\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #bbb;padding:3px 8px}}td.n{{text-align:right}}\
         tr.bad{{background:#fdd}}</style></head><body>\n<h1>rill report</h1>\n<p>{}</p>\n<p>{}</p>\n",
        xml_escape(title),
        xml_escape(machine)
    );
    h.push_str(
        "<p>wall: median (and minimum) of the runs, in milliseconds, of the network's run \
         only. speedup: on a manual row, the rr median over the manual median; on a peer \
         row, the peer's median over rill's. overhead: on a monitor=full row, its median \
         over the monitor=off median of the same mapping, minus 1.</p>\n",
    );
    h.push_str(
        "<table>\n<tr><th>bench</th><th>engine</th><th>mapping</th><th>monitor</th>\
         <th>wall ms</th><th>min ms</th><th>speedup</th><th>overhead</th><th>verified</th>\
         <th>note</th><th>log KB</th><th>B/event</th><th>WE/WT ms per worker</th>\
         <th>monitoring</th></tr>\n",
    );
    for r in rows {
        let links = match (&r.logs, &r.mon) {
            (Some(l), Some(_)) => {
                let rel = l
                    .strip_prefix(out_dir)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| l.display().to_string());
                format!(
                    "<a href=\"{0}/report.html\">report</a> <a href=\"{0}/summary.txt\">summary</a> \
                     <a href=\"{0}/summary.json\">json</a> <a href=\"{0}/timeline.svg\">timeline</a>",
                    xml_escape(&rel)
                )
            }
            _ => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td>\
             <td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td>{}</td>\
             <td class=n>{}</td><td class=n>{}</td><td>{}</td><td>{}</td></tr>",
            if r.verified { "" } else { " class=bad" },
            xml_escape(&r.label()),
            r.engine,
            xml_escape(&r.mapping),
            xml_escape(&r.monitor),
            fmt_opt(r.wall.wall_ms, |v| format!("{v:.1}")),
            fmt_opt(r.wall.min_ms, |v| format!("{v:.1}")),
            fmt_opt(r.speedup, |v| format!("{v:.2}x")),
            fmt_opt(r.overhead, |v| format!("{v:+.1}%")),
            if r.verified { "yes" } else { "NO" },
            xml_escape(&r.note),
            fmt_opt(
                r.mon.as_ref().map(|m| m.log_bytes as f64 / 1024.0),
                |v| format!("{v:.0}")
            ),
            fmt_opt(r.mon.as_ref().map(|m| m.bytes_per_event()), |v| format!(
                "{v:.2}"
            )),
            r.mon.as_ref().map(waits_text).unwrap_or_default(),
            links,
        );
    }
    // The table ends before the timelines: markup after the last row and
    // before `</table>` is drawn above the table by browsers.
    h.push_str("</table>\n");
    // One timeline per application (its monitored manual run), inline.
    for r in rows
        .iter()
        .filter(|r| r.mon.is_some() && r.mapping == "manual")
    {
        if let Some(l) = &r.logs {
            let rel = l
                .strip_prefix(out_dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| l.display().to_string());
            let _ = writeln!(
                h,
                "<h2>{} ({} mapping, monitored)</h2>\n<p><a href=\"{2}/report.html\">The run's \
                 report</a>: verdict, findings, waits, task groups, a proposed mapping.</p>\n\
                 <img src=\"{2}/timeline.svg\" style=\"max-width:100%\">",
                xml_escape(&r.label()),
                xml_escape(&r.mapping),
                xml_escape(&rel)
            );
        }
    }
    h.push_str("</body></html>\n");
    h
}

/// `nproc` and the CPU model, for reports.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores available, {model}")
}

fn logs_dir(out: &Path, app: &str, m: &MappingChoice, monitor: MonitorFlags) -> Option<PathBuf> {
    (!monitor.is_off()).then(|| out.join("logs").join(format!("{app}-{m}")))
}

/// The mappings and monitoring modes every application runs with in
/// `rill-bench all`, in the order they run.
const ALL_MAPPINGS: [MappingChoice; 2] = [MappingChoice::Rr, MappingChoice::Manual];
const ALL_MONITORS: [MonitorFlags; 2] = [MonitorFlags::OFF, MonitorFlags::FULL];

/// An application's runs under one mapping and monitoring mode.
type AppCell = (MappingChoice, MonitorFlags, Vec<Done>);

/// The engines a peer benchmark runs on.
type Engines = &'static [Engine];

/// One engine's outcomes of a peer benchmark.
type EngineCell = (Engine, Vec<Outcome>);

fn param_error(e: impl std::fmt::Display) -> CliError {
    CliError::Params(ParamError(e.to_string()))
}

/// The peer benchmarks of `rill-bench all`, each with the engines it runs
/// on: the pipe and the ring with rr placement (every hand-off crosses
/// workers, rill's weakest rows) and the ring with its default placement,
/// beside their peers, the word count of 2 MB (200 kB with `--quick`)
/// beside its peers and the sequential loop, and the sieve of
/// [`ALL_SIEVE_PRIMES`] primes (100 with `--quick`) under rr beside its
/// peers, then on rill alone under `parts` and `manual` (its chain cut
/// into blocks of as many filters, and of about equal work).
fn all_peer_jobs(quick: bool, workers: usize) -> Result<Vec<(Job, Engines)>, CliError> {
    let (depth, messages, size, hops, bytes, primes) = if quick {
        (10, 2_000, 10, 2_000, 200_000, 100)
    } else {
        (50, 20_000, 100, 20_000, 2_000_000, ALL_SIEVE_PRIMES)
    };
    let sieve = SieveParams {
        primes,
        opts: BenchOpts::on(workers),
        ..SieveParams::default()
    };
    let sieve_on = |mapping| {
        Job::new(SieveParams {
            mapping,
            ..sieve.clone()
        })
    };
    let pipe = PipeParams {
        depth,
        messages,
        opts: BenchOpts::on(workers),
        placement: Placement::Rr,
        ..PipeParams::default()
    };
    let ring = RingParams {
        size,
        hops,
        opts: BenchOpts::on(workers),
        ..RingParams::default()
    };
    let ring_rr = RingParams {
        placement: Placement::Rr,
        ..ring.clone()
    };
    let corpus = Corpus::new(TextSource::Generated { bytes, seed: 1 }).map_err(param_error)?;
    Ok(vec![
        (Job::new(pipe), &registry::NETWORKS[..]),
        (Job::new(ring), &registry::NETWORKS[..]),
        (Job::new(ring_rr), &registry::NETWORKS[..]),
        (
            Job::new(WordcountParams::new(corpus.clone(), workers)),
            &registry::WORDCOUNT[..],
        ),
        (
            Job::new(WordcountParams {
                words: crate::kernels::wordcount::WordsAs::Slices,
                ..WordcountParams::new(corpus, workers)
            }),
            &registry::WORDCOUNT[..],
        ),
        (sieve_on(MappingChoice::Adaptive), &registry::NETWORKS[..1]),
        (sieve_on(MappingChoice::Rr), &registry::NETWORKS[..]),
        (sieve_on(MappingChoice::Parts), &registry::NETWORKS[..1]),
        (sieve_on(MappingChoice::Manual), &registry::NETWORKS[..1]),
    ])
}

/// The primes of the sieve in `rill-bench all` (without `--quick`): the
/// OS-threads peer, a thread per filter, takes about a second for them on
/// two cores, rill and tokio tens of milliseconds.
const ALL_SIEVE_PRIMES: usize = 500;

/// One `rill-bench all` in progress: its settings, where its output goes,
/// the runs counted so far and the JSON lines of those runs.
struct AllRun<'a> {
    args: &'a AllArgs,
    workers: usize,
    repeat: u32,
    out: &'a mut dyn Write,
    progress: &'a mut dyn Write,
    summary: Summary,
    /// The configuration running (for the progress lines), of `steps`.
    step: usize,
    steps: usize,
    records: Vec<InSuite>,
}

impl AllRun<'_> {
    /// Keeps a run's record for results.json, marked as part of `all`,
    /// and prints it with `--json`.
    fn record(&mut self, run: Record) -> Result<(), CliError> {
        let line = InSuite { suite: "all", run };
        if self.args.json {
            writeln!(
                self.out,
                "{}",
                serde_json::to_string(&line).expect("a record serialises")
            )?;
        }
        self.records.push(line);
        Ok(())
    }

    /// Runs `app` `--repeat` times under each mapping and monitoring mode;
    /// the runs of each, in the order of [`ALL_MONITORS`] then
    /// [`ALL_MAPPINGS`].
    fn app_runs(&mut self, app: &dyn App) -> Result<Vec<AppCell>, CliError> {
        let mut cells = Vec::new();
        for monitor in ALL_MONITORS {
            for m in ALL_MAPPINGS {
                self.step += 1;
                let opts = AppOpts {
                    workers: self.workers,
                    mapping: m.clone(),
                    monitor,
                    logs: logs_dir(&self.args.out, app.name(), &m, monitor),
                    ..AppOpts::default()
                };
                let (step, steps, repeat) = (self.step, self.steps, self.repeat);
                let mut runs = Vec::new();
                for run in 0..repeat {
                    // The repeats share one log directory: the last run's
                    // report is the one kept, so only it writes one.
                    let d = run_counted(
                        app,
                        &opts,
                        (run, run + 1 == repeat),
                        format_args!(
                            "[all {step}/{steps}] {} mapping={m} monitor={monitor} run {}/{repeat}",
                            app.name(),
                            run + 1
                        ),
                        self.progress,
                        &mut self.summary,
                    );
                    self.record(d.record(app.name()))?;
                    runs.push(d);
                }
                cells.push((m, monitor, runs));
            }
        }
        Ok(cells)
    }

    /// Runs `job` `--repeat` times on each engine; the outcomes of each.
    fn peer_runs(
        &mut self,
        job: &Job,
        job_engines: &[Engine],
    ) -> Result<Vec<EngineCell>, CliError> {
        let mut cells = Vec::new();
        for &engine in job_engines {
            self.step += 1;
            let mut outcomes = Vec::new();
            for run in 0..self.repeat {
                let what = job
                    .bench()
                    .variant()
                    .map(|(k, v)| format!(" {k}={v}"))
                    .unwrap_or_default();
                let _ = write!(
                    self.progress,
                    "[all {}/{}] {}{what} engine={engine} run {}/{} ... ",
                    self.step,
                    self.steps,
                    job.name(),
                    run + 1,
                    self.repeat
                );
                let _ = self.progress.flush();
                let result = registry::run(engine, job).map_err(|e| format!("{e:#}"));
                let _ = writeln!(self.progress, "{}", report::short_result(job, &result));
                self.summary.runs += 1;
                if result.is_err() {
                    self.summary.failures += 1;
                }
                let o = Outcome {
                    job: job.clone(),
                    engine,
                    run,
                    result,
                };
                self.record(Record::of(&o))?;
                outcomes.push(o);
            }
            cells.push((engine, outcomes));
        }
        Ok(cells)
    }
}

/// The table rows of one application: one per mapping and monitoring mode,
/// with the speedup of manual over rr and the overhead of monitoring.
fn app_rows(args: &AllArgs, app: &str, cells: &[AppCell]) -> Vec<Row> {
    let median = |m: &MappingChoice, mon: MonitorFlags| {
        cells
            .iter()
            .find(|(cm, cmon, _)| cm == m && *cmon == mon)
            .and_then(|(_, _, runs)| stats_of(&runs.iter().filter(|d| d.ok()).collect::<Vec<_>>()))
    };
    cells
        .iter()
        .map(|(m, monitor, runs)| {
            let monitor = *monitor;
            let wall = median(m, monitor);
            let speedup = match (m, median(&MappingChoice::Rr, monitor), wall) {
                (MappingChoice::Manual, Some(rr), Some(w)) if w.median > 0.0 => {
                    Some(rr.median / w.median)
                }
                _ => None,
            };
            let overhead = match (median(m, MonitorFlags::OFF), wall) {
                (Some(off), Some(w)) if monitor == MonitorFlags::FULL && off.median > 0.0 => {
                    Some((w.median / off.median - 1.0) * 100.0)
                }
                _ => None,
            };
            let note = runs
                .iter()
                .find_map(|d| match &d.result {
                    Err(e) => Some(e.clone()),
                    Ok(r) if !r.verified => Some(r.problems.join("; ")),
                    Ok(_) => None,
                })
                .unwrap_or_default();
            Row {
                bench: app.into(),
                placement: None,
                engine: "rill",
                mapping: m.name(),
                monitor: monitor.to_string(),
                wall: wall.into(),
                speedup,
                overhead,
                verified: runs.iter().all(Done::ok),
                note,
                logs: logs_dir(&args.out, app, m, monitor),
                mon: runs
                    .iter()
                    .rev()
                    .find_map(|d| d.result.as_ref().ok().and_then(|r| r.monitor.clone())),
            }
        })
        .collect()
}

/// The table rows of one peer benchmark: one per engine, with each peer's
/// wall time over rill's.
fn peer_rows(job: &Job, cells: &[EngineCell]) -> Vec<Row> {
    let wall_of = |outcomes: &[Outcome]| {
        let v: Vec<f64> = outcomes
            .iter()
            .filter_map(|o| o.result.as_ref().ok())
            .map(|m| m.wall.as_secs_f64() * 1e3)
            .collect();
        Stats::of(&v)
    };
    let rill_wall = wall_of(&cells[0].1);
    // The column beside the bench: what tells this job apart from the
    // benchmark's others (the placement, the format of words, the mapping).
    let variant = job.bench().variant().map(|(_, v)| v);
    cells
        .iter()
        .map(|(engine, outcomes)| {
            let wall = wall_of(outcomes);
            let rill = report::is_rill(*engine);
            let speedup = match (rill_wall, wall) {
                (Some(r), Some(w)) if !rill && r.median > 0.0 => Some(w.median / r.median),
                _ => None,
            };
            let ns = outcomes
                .iter()
                .filter_map(|o| o.result.as_ref().ok().and_then(|m| m.ns_per_op()))
                .collect::<Vec<_>>();
            let note = match outcomes.iter().find_map(|o| o.result.as_ref().err()) {
                Some(e) => e.clone(),
                None => Stats::of(&ns)
                    .map(|s| format!("{:.0} ns/{}", s.median, job.op_name()))
                    .unwrap_or_default(),
            };
            let mapping = if rill {
                job.bench().rill_mapping()
            } else {
                "-".into()
            };
            Row {
                bench: job.name().into(),
                placement: variant.clone(),
                engine: engine.name(),
                mapping,
                monitor: "off".into(),
                wall: wall.into(),
                speedup,
                overhead: None,
                verified: outcomes.iter().all(|o| o.result.is_ok()),
                note,
                logs: None,
                mon: None,
            }
        })
        .collect()
}

/// The contents of results.json.
fn results_json<'a>(
    run: &'a AllRun<'_>,
    title: &'a str,
    machine: &'a str,
    elapsed: f64,
    rows: &'a [Row],
    line: LineRoundtrip,
) -> Results<'a> {
    Results {
        title,
        machine,
        workers: run.workers,
        repeat: run.repeat,
        quick: run.args.quick,
        allocator: report::allocator(),
        elapsed_s: elapsed,
        failures: run.summary.failures,
        rows,
        runs: &run.records,
        line_roundtrip_ns: line,
    }
}

/// results.json.
#[derive(Serialize)]
struct Results<'a> {
    title: &'a str,
    machine: &'a str,
    workers: usize,
    repeat: u32,
    quick: bool,
    allocator: &'static str,
    elapsed_s: f64,
    failures: usize,
    rows: &'a [Row],
    /// Every run's record, marked with `suite`.
    runs: &'a [InSuite],
    line_roundtrip_ns: LineRoundtrip,
}

/// A cache line's round trip before and after the suite, in ns.
#[derive(Serialize)]
struct LineRoundtrip {
    before: Option<f64>,
    after: Option<f64>,
}

/// A run's record as part of `all`.
#[derive(Serialize)]
struct InSuite {
    suite: &'static str,
    #[serde(flatten)]
    run: Record,
}

/// `compare --json`'s line.
#[derive(Serialize)]
struct CompareRecord {
    bench: &'static str,
    compare: bool,
    workers: usize,
    monitor: String,
    runs: u32,
    rr_median_ms: Option<f64>,
    manual_median_ms: Option<f64>,
    speedup: Option<f64>,
    verified: bool,
    #[serde(flatten)]
    auto: Option<CompareAuto>,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<CompareFile>>,
}

/// `compare --auto`'s figures.
#[derive(Serialize)]
struct CompareAuto {
    auto_median_ms: Option<f64>,
    auto_total_median_ms: Option<f64>,
    pilot_median_ms: Option<f64>,
    speedup_auto: Option<f64>,
    speedup_auto_total: Option<f64>,
}

/// `compare --file`'s figures of one file.
#[derive(Serialize)]
struct CompareFile {
    file: String,
    median_ms: Option<f64>,
    min_ms: Option<f64>,
    max_ms: Option<f64>,
    speedup: Option<f64>,
    to_manual: Option<f64>,
}

/// `rill-bench all`: every application with rr and manual mapping, with
/// monitoring off and full, and the pipe, ring, word count and sieve
/// against their peers (the word count also against the sequential loop); one
/// table on `out`, progress on `progress`, and `results.json` and
/// `index.html` in `--out`.
pub fn all(
    args: &AllArgs,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<Summary, CliError> {
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    std::fs::create_dir_all(&args.out).map_err(|e| {
        param_error(format!(
            "cannot create the output directory {}: {e}",
            args.out.display()
        ))
    })?;
    let apps = all_apps(args.quick).map_err(param_error)?;
    let peer_jobs = all_peer_jobs(args.quick, workers)?;
    let mut run = AllRun {
        args,
        workers,
        repeat: args.repeat.unwrap_or(if args.quick { 1 } else { 3 }),
        out,
        progress,
        summary: Summary::default(),
        step: 0,
        steps: apps.len() * ALL_MAPPINGS.len() * ALL_MONITORS.len()
            + peer_jobs.iter().map(|(_, e)| e.len()).sum::<usize>(),
        records: Vec::new(),
    };
    // The machine's floor under a crossing, before the runs and after them
    // (`crate::line`): a host that changed meanwhile shows as two figures.
    let line_before = crate::line::measure(crate::line::DEFAULT_TRIPS);
    let started = std::time::Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    for app in &apps {
        let cells = run.app_runs(app.as_ref())?;
        rows.extend(app_rows(args, app.name(), &cells));
    }
    for (job, job_engines) in &peer_jobs {
        let cells = run.peer_runs(job, job_engines)?;
        rows.extend(peer_rows(job, &cells));
    }
    let elapsed = started.elapsed().as_secs_f64();

    let title = format!(
        "rill-bench all{}: {workers} workers, {} run{} per configuration, allocator {}, {:.1} s in all",
        if args.quick { " --quick" } else { "" },
        run.repeat,
        if run.repeat == 1 { "" } else { "s" },
        report::allocator(),
        elapsed
    );
    let line_after = crate::line::measure(crate::line::DEFAULT_TRIPS);
    let machine = format!(
        "{}; {}",
        machine(),
        crate::line::describe_pair(&line_before, &line_after)
    );
    if !args.json {
        writeln!(run.out, "{title}\n{machine}\n")?;
        write!(run.out, "{}", table(&rows))?;
        writeln!(
            run.out,
            "\nspeedup: manual rows: rr median / manual median; peer rows: peer median / rill median.\n\
             overhead: monitor=full median / monitor=off median - 1, same mapping."
        )?;
    }
    let line = LineRoundtrip {
        before: line_before.ok().map(|t| t.ns),
        after: line_after.ok().map(|t| t.ns),
    };
    let results = results_json(&run, &title, &machine, elapsed, &rows, line);
    let write =
        |name: &str, text: String| std::fs::write(args.out.join(name), text).map_err(CliError::Io);
    write(
        "results.json",
        serde_json::to_string_pretty(&results).expect("JSON of plain values"),
    )?;
    write("index.html", html(&rows, &title, &machine, &args.out))?;
    let _ = writeln!(
        run.progress,
        "rill-bench all: wrote {} and {}",
        args.out.join("results.json").display(),
        args.out.join("index.html").display()
    );
    Ok(run.summary)
}

#[cfg(test)]
mod page_tests {
    use super::*;

    /// The table closes before the timelines that follow it: a browser
    /// draws markup found inside a table but outside its cells above it.
    #[test]
    fn the_index_page_closes_its_table_before_the_timelines() {
        let out = PathBuf::from("out");
        let row = Row {
            bench: "mc".into(),
            placement: None,
            engine: "rill",
            mapping: "manual".into(),
            monitor: "full".into(),
            wall: Wall::default(),
            speedup: None,
            overhead: None,
            verified: true,
            note: String::new(),
            logs: Some(out.join("logs/mc-manual")),
            mon: Some(crate::apps::MonSummary::default()),
        };
        let page = html(&[row], "title", "machine", &out);
        let table_end = page.find("</table>").expect("a table");
        let timeline = page.find("timeline.svg\" style").expect("a timeline");
        assert!(table_end < timeline, "{page}");
        assert_eq!(page.matches("</table>").count(), 1);
        assert!(page.trim_end().ends_with("</body></html>"));
    }
}
