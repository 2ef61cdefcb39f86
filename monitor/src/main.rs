//! `rill-mon`: analyses a rill run's monitoring logs.
//!
//! * `rill-mon summary DIR [--json] [--no-group]`
//! * `rill-mon timeline DIR -o FILE.svg [--from MS --to MS] [--width PX]`
//! * `rill-mon trace DIR -o FILE.pftrace|FILE.json [--format perfetto|json] [--from MS --to MS] [--detail N] [--buckets N]`
//! * `rill-mon waits DIR [--json] [--no-group] [--limit N]`
//! * `rill-mon bottleneck DIR [--json] [--windows N] [--alpha A] [--beta B] [--gamma G]`
//! * `rill-mon map DIR [--ranks R] --workers W -o FILE [--json]`
//! * `rill-mon evolution DIR [-o FILE.svg|.json|.csv] [--json | --csv] [--from MS --to MS] [--buckets N] [--groups N] [--no-group] [--width PX]`
//! * `rill-mon diff A B [--json] [--no-group] [--limit N]`
//! * `rill-mon report DIR [-o FILE.html] [--rows N]`: one self-contained HTML page
//!   explaining the run (verdict, findings, summary, utilisation, timeline,
//!   waits, task groups, a proposed mapping); default `DIR/report.html`
//! * `rill-mon watch DIR [--interval MS] [--window S] [--top N] [--once | --plain | --json] [--exit-at-end]`
//!
//! A DIR holding `rank-R/` directories (one rank's logs and `rank.json`
//! each, a run under MPI) is read as one run; see the README's "Runs across
//! ranks".
//!
//! Errors print one line on stderr and exit with status 2.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use rill_monitor::watch::{watch, Output, SnapshotOptions, WatchOptions};
use rill_monitor::{
    bottleneck, diff, evolution, load_run, load_run_with, plan_mapping, plan_rank_mapping,
    report_html, summarize_grouped, timeline_svg, waits, write_chrome_trace_window,
    write_perfetto_trace, BottleneckOptions, EvolutionOptions, LoadOptions, PerfettoOptions,
    ReportOptions, RunLog, TimelineOptions, MAX_BUCKETS, MAX_EVOLUTION_BUCKETS,
    MAX_EVOLUTION_GROUPS, MAX_MAP_WORKERS,
};

/// Analyses the monitoring logs (worker-*.rlog) of a rill run.
#[derive(Parser)]
#[command(name = "rill-mon", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The format of `rill-mon trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TraceFormat {
    /// Perfetto's protobuf trace format.
    Perfetto,
    /// Chrome trace-event JSON.
    Json,
}

/// Periods above which a JSON trace gets a warning (about 190 MB).
const JSON_WARN_PERIODS: u64 = 1_000_000;

#[derive(Subcommand)]
enum Cmd {
    /// Per-worker busy/waiting time, per-task-group, per-task and
    /// per-stream totals, throughput, latency and jitter.
    Summary {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// List tasks one by one instead of folding numbered names into
        /// groups (mc/star/*/step/*) for the group table.
        #[arg(long)]
        no_group: bool,
    },
    /// An SVG timeline: one lane per worker, task periods to scale.
    Timeline {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// The SVG file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Window start, ms after the run's first time stamp.
        #[arg(long)]
        from: Option<f64>,
        /// Window end, ms after the run's first time stamp.
        #[arg(long)]
        to: Option<f64>,
        /// Picture width in pixels.
        #[arg(long, default_value_t = 1600)]
        width: u32,
    },
    /// A trace to open in the Perfetto UI: Perfetto's protobuf format, or
    /// Chrome JSON for small runs.
    ///
    /// The format follows the file's extension: .json writes Chrome
    /// trace-event JSON (every period an event, about 190 bytes each: for
    /// small runs), any other (.pftrace, .perfetto-trace) Perfetto's
    /// protobuf format; --format overrides it.
    ///
    /// The protobuf trace has a track per worker (task periods and idle
    /// waits), the run's counters (busy workers = running tasks, ready
    /// tasks, tasks blocked reading and writing, cross-worker wake-ups per
    /// ms), a track per task group (numbered names folded: mc/star/*/step/*)
    /// holding its running/ready/blocked counters and a track per task
    /// (running on which worker, blocked on which stream, ready), and flow
    /// arrows from a waking period to the woken task's next period on
    /// another worker. Long runs stay small: the window is cut into
    /// --buckets buckets and the sparsest show every period, up to --detail
    /// periods in all; in the others each worker's periods shorter than
    /// half a bucket merge into one slice per bucket, named after its
    /// busiest group (the "detail" track marks them). --from/--to narrow
    /// the window to see a stretch in full.
    #[command(verbatim_doc_comment)]
    Trace {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// The trace file to write (.pftrace, .perfetto-trace or .json).
        #[arg(short, long)]
        output: PathBuf,
        /// perfetto (protobuf) or json; default: json for a .json file,
        /// perfetto otherwise.
        #[arg(long, value_enum)]
        format: Option<TraceFormat>,
        /// Window start, ms after the run's first time stamp.
        #[arg(long)]
        from: Option<f64>,
        /// Window end, ms after the run's first time stamp.
        #[arg(long)]
        to: Option<f64>,
        /// Perfetto: at most this many periods get slices of their own.
        #[arg(long, default_value_t = PerfettoOptions::default().detail)]
        detail: u64,
        /// Perfetto: buckets the window is cut into (1 to 100000): the
        /// counters' resolution and the unit of merging.
        #[arg(long, default_value_t = PerfettoOptions::default().buckets)]
        buckets: usize,
    },
    /// Who waited for whom: the waiting relation W(A,B) per stream, task pair
    /// and worker pair.
    ///
    /// A waits for B when A reads a stream B writes and finds it empty
    /// (a reader wait), or writes a stream B reads and finds it full (a
    /// writer wait). A wait lasts from the period that ended blocked to the
    /// task's next dispatch. Rows come heaviest (most waiting) first; a row
    /// is marked cross when its writer and reader ran on different workers.
    /// Tasks whose names differ only in numeric path segments (mc/star/3/step/7)
    /// fold into groups (mc/star/*/step/*) unless --no-group is given.
    #[command(verbatim_doc_comment)]
    Waits {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// Print one JSON document (every row) instead of text.
        #[arg(long)]
        json: bool,
        /// List tasks one by one instead of folding numbered names into groups.
        #[arg(long)]
        no_group: bool,
        /// Rows per text table (0 = all).
        #[arg(long, default_value_t = 40)]
        limit: usize,
    },
    /// What holds the run back: a task, a stream between workers, or a
    /// worker (load imbalance), strongest evidence first.
    ///
    /// The run is cut into equal time windows. In a window, a task is a
    /// bottleneck when its worker is busy at least α of the window, the task
    /// runs at least half of that, and others wait on it at least β of the
    /// window (added up: writers blocked on its full inputs, readers blocked
    /// on its empty outputs, tasks of its worker ready behind it). A stream
    /// is one when its ends run on different workers and tasks woken on it
    /// wait at least γ of the window for their idle worker to dispatch them
    /// (wake-up latency), no bottleneck task being connected to it. A worker
    /// is one (load imbalance) when it is busy at least α while another is
    /// idle at least β and no bottleneck task runs on it. A finding's share
    /// is the fraction of the windows in which it held. Cyclic task graphs
    /// are fine.
    #[command(verbatim_doc_comment)]
    Bottleneck {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// Number of equal time windows (1 to 1000).
        #[arg(long, default_value_t = 20)]
        windows: usize,
        /// α: the active or busy share of a window that saturates a task or worker (0 to 1).
        #[arg(long, default_value_t = 0.9)]
        alpha: f64,
        /// β: the share of a window others must wait on a task, and the idle share of an idle worker (0 to 1).
        #[arg(long, default_value_t = 0.5)]
        beta: f64,
        /// γ: the share of a window that wake-ups across workers on one stream must cost (0 to 1).
        #[arg(long, default_value_t = 0.1)]
        gamma: f64,
    },
    /// A mapping file for --mapping FILE that spreads the named tasks over W
    /// workers, with a what-if estimate of the run time.
    ///
    /// The observed task graph (busy time per task, messages and waits per
    /// stream) is cut into W parts that balance busy time and keep heavy
    /// streams on one worker; of two cuts predicted within 3% of each
    /// other, the one that cuts fewer streams is taken. The file lists
    /// every named task as
    /// "name" = worker (rill::ManualTable::load reads it back; names with #,
    /// = or quotes are escaped) and says in comments what it predicts: max over
    /// workers of busy time + a cost per message or wait crossing workers,
    /// calibrated on the observed run, under this mapping and the observed one.
    /// From a sample-mode run shorter than 200 ms (busy times from few
    /// samples) the plan carries a warning: record short runs in count mode
    /// (--monitor map,worker,task,stream) to plan from them.
    ///
    /// With --ranks R the plan is over R ranks of W workers each (a run
    /// under mpirun): "name" = RANK:WORKER lines, and a model with a cost
    /// per wait crossing workers of a rank and one per wait crossing ranks,
    /// each measured on the run where it shows such waits (the median
    /// delay from the peer's operation to the waiting end's dispatch) and
    /// assumed otherwise; the file's header says which.
    #[command(verbatim_doc_comment)]
    Map {
        /// The directory holding the worker-*.rlog files (or the rank-R/
        /// directories of a run across ranks).
        dir: PathBuf,
        /// How many workers to map onto (per rank, with --ranks).
        #[arg(short, long)]
        workers: usize,
        /// Plan over this many ranks (RANK:WORKER lines).
        #[arg(long)]
        ranks: Option<usize>,
        /// The mapping file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Print the plan as one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// How the shares of task states (running, ready, blocked reading,
    /// blocked writing, new) and worker states (busy, waiting, ...) change
    /// over the run: stacked shares per time bucket, for runs too dense for
    /// the timeline.
    ///
    /// The window (the run, or --from/--to) is cut into --buckets equal
    /// buckets. A state's share in a bucket is the time tasks (workers)
    /// spent in it over the live tasks' time (the workers' time). With
    /// periods (full) the states are exact to the clock: after a period a
    /// task is ready (it yielded) or blocked on its stream up to the
    /// wake-up (the end of the waker's period), then ready to its dispatch.
    /// In sample mode the shares are estimates from the sampler's windows
    /// (the error bound is printed), and ready and blocked are not told
    /// apart. A panel shows the running share of the busiest task groups
    /// (numbered names folded, unless --no-group).
    ///
    /// -o FILE writes the picture (.svg) or, for FILE.json / FILE.csv, the
    /// series; --json and --csv print the series on stdout.
    #[command(verbatim_doc_comment)]
    Evolution {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// The file to write: .svg (the picture), .json or .csv (the series).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the series as one JSON document.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print the series as CSV (panel,series,bucket,start_ms,end_ms,mean,share).
        #[arg(long)]
        csv: bool,
        /// Window start, ms after the run's first time stamp.
        #[arg(long)]
        from: Option<f64>,
        /// Window end, ms after the run's first time stamp.
        #[arg(long)]
        to: Option<f64>,
        /// Buckets the window is cut into (1 to 10000).
        #[arg(long, default_value_t = EvolutionOptions::default().buckets)]
        buckets: usize,
        /// Task groups (or tasks) with a series of their own, busiest first.
        #[arg(long, default_value_t = EvolutionOptions::default().top_groups)]
        groups: usize,
        /// A series per task name instead of folding numbered names into groups.
        #[arg(long)]
        no_group: bool,
        /// Picture width in pixels.
        #[arg(long, default_value_t = EvolutionOptions::default().width_px)]
        width: u32,
    },
    /// Two runs side by side: wall time, per worker busy/WT/WE, per task
    /// group busy time and stream waits, the largest changes first.
    ///
    /// B is compared with A (B - A, relative to A). Workers match by id,
    /// tasks by group (numeric path segments folded: mc/star/*/step/*), so
    /// runs with different worker counts or sizes still compare; what is
    /// in one run only is listed, not ranked. Waits are the waiting
    /// relation of `rill-mon waits`: a task blocked reading an empty or
    /// writing a full stream, to its next dispatch.
    #[command(verbatim_doc_comment)]
    Diff {
        /// Run A's log directory (the baseline).
        a: PathBuf,
        /// Run B's log directory.
        b: PathBuf,
        /// Print one JSON document (every row) instead of text.
        #[arg(long)]
        json: bool,
        /// Compare tasks one by one instead of folding numbered names into groups.
        #[arg(long)]
        no_group: bool,
        /// Rows per text table (0 = all).
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One self-contained HTML page explaining the run: the bottleneck
    /// verdict as headline, the findings with their evidence, the run
    /// summary (wall, per worker busy/WT/WE, dispatches), utilisation bars,
    /// the timeline, the waits, the task groups and a proposed mapping with
    /// its what-if estimate and file.
    ///
    /// No network fetch: inline CSS and SVG, no script. Works on full,
    /// counts-only (map,worker,task,stream) and sample-mode logs; each
    /// section says in one line what the run's mode leaves out. Damaged logs
    /// give a page of what could be read, their problems listed.
    #[command(verbatim_doc_comment)]
    Report {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// The HTML file to write (default: DIR/report.html).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Rows per table (0 = all).
        #[arg(long, default_value_t = ReportOptions::default().rows)]
        rows: usize,
    },
    /// A live view of a run while it writes its logs: per worker its busy
    /// share over the last seconds, the busiest task groups, the streams with
    /// the most waits and the bottleneck verdict so far; at the run's end its
    /// summary.
    ///
    /// Start it before or during the run (it waits for DIR to appear). Made
    /// for sample mode (--monitor sample), the mode cheap enough to leave on;
    /// runs with periods (full) are shown from their periods. Keys: q quits;
    /// after the end, arrows and PgUp/PgDn scroll the summary and l shows the
    /// last live figures. Without a terminal on stdout it prints text
    /// snapshots (as --plain).
    #[command(verbatim_doc_comment)]
    Watch {
        /// The directory the run writes its logs to.
        dir: PathBuf,
        /// Time between refreshes, ms (50 to 60000).
        #[arg(long, default_value_t = 500)]
        interval: u64,
        /// The recent window the busy shares are over, seconds (0.1 to 60).
        #[arg(long, default_value_t = 5.0)]
        window: f64,
        /// Rows of task groups and of streams.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Print one text snapshot of what the logs hold now and exit.
        #[arg(long, conflicts_with_all = ["plain", "json"])]
        once: bool,
        /// Print a text snapshot every interval, and the summary at the end.
        #[arg(long, conflicts_with = "json")]
        plain: bool,
        /// Print one snapshot as JSON and exit.
        #[arg(long)]
        json: bool,
        /// Leave at the run's end, printing its summary.
        #[arg(long)]
        exit_at_end: bool,
    },
}

/// Loads a run for an analysis that needs no latency replay.
fn load_quietly(dir: &Path) -> anyhow::Result<RunLog> {
    let opts = LoadOptions {
        latency: false,
        ..LoadOptions::default()
    };
    load_run_with(dir, &opts)
}

fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

fn print_text(s: &str) -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}

fn warn(run: &rill_monitor::RunLog) {
    for w in &run.warnings {
        eprintln!("rill-mon: warning: {w}");
    }
}

/// For the commands that print no other warning: the logs that were cut
/// short, since every figure from them misses the rest of the run.
fn warn_truncated(run: &rill_monitor::RunLog) {
    for w in run.workers.iter().filter_map(|w| w.truncation()) {
        eprintln!("rill-mon: warning: {w}");
    }
}

fn create(path: &Path) -> anyhow::Result<BufWriter<std::fs::File>> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    // Large writes: a trace is written in packets of tens of bytes.
    Ok(BufWriter::with_capacity(1 << 20, f))
}

/// Checks `--from`/`--to`.
fn check_window(from: Option<f64>, to: Option<f64>) -> anyhow::Result<()> {
    for (name, v) in [("--from", from), ("--to", to)] {
        if let Some(v) = v {
            anyhow::ensure!(
                v.is_finite() && v >= 0.0,
                "{name} must be a time in ms >= 0"
            );
        }
    }
    if let (Some(f), Some(t)) = (from, to) {
        anyhow::ensure!(t > f, "--to ({t} ms) must be after --from ({f} ms)");
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Summary {
            dir,
            json,
            no_group,
        } => {
            let run = load_run(&dir)?;
            let s = summarize_grouped(&run, !no_group);
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &s)?;
                writeln!(out)?;
            } else {
                out.write_all(s.to_text().as_bytes())?;
            }
        }
        Cmd::Timeline {
            dir,
            output,
            from,
            to,
            width,
        } => {
            check_window(from, to)?;
            let run = load_quietly(&dir)?;
            warn(&run);
            let opts = TimelineOptions {
                from_ms: from,
                to_ms: to,
                width_px: width,
                ..TimelineOptions::default()
            };
            let svg = timeline_svg(&run, &opts);
            let mut out = create(&output)?;
            out.write_all(svg.as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", output.display()))?;
        }
        Cmd::Trace {
            dir,
            output,
            format,
            from,
            to,
            detail,
            buckets,
        } => {
            check_window(from, to)?;
            anyhow::ensure!(
                (1..=MAX_BUCKETS).contains(&buckets),
                "--buckets must be between 1 and {MAX_BUCKETS}, not {buckets}"
            );
            let json_ext = output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            let format = format.unwrap_or(if json_ext {
                TraceFormat::Json
            } else {
                TraceFormat::Perfetto
            });
            let run = load_quietly(&dir)?;
            warn(&run);
            let mut out = create(&output)?;
            let what = || format!("cannot write {}", output.display());
            match format {
                TraceFormat::Json => {
                    let stats = write_chrome_trace_window(&run, from, to, &mut out)
                        .and_then(|s| out.flush().map(|()| s))
                        .with_context(what)?;
                    if stats.clipped > 0 {
                        eprintln!(
                            "rill-mon: warning: {} overlapping spans were clipped ({} dropped)",
                            stats.clipped, stats.dropped
                        );
                    }
                    if stats.periods > JSON_WARN_PERIODS {
                        eprintln!(
                            "rill-mon: warning: {} periods make a JSON trace too large to load \
                             comfortably; write a .pftrace (Perfetto's format) or narrow --from/--to",
                            stats.periods
                        );
                    }
                }
                TraceFormat::Perfetto => {
                    let opts = PerfettoOptions {
                        from_ms: from,
                        to_ms: to,
                        detail,
                        buckets,
                    };
                    let s = write_perfetto_trace(&run, &opts, &mut out).with_context(what)?;
                    if s.clipped > 0 {
                        eprintln!(
                            "rill-mon: warning: {} overlapping periods or waits were clipped",
                            s.clipped
                        );
                    }
                    if s.periods == 0 {
                        eprintln!("rill-mon: warning: no period starts in the window");
                    }
                    let dense = match s.threshold {
                        Some(t) => format!(", those with over {t} periods merged"),
                        None => String::new(),
                    };
                    eprintln!(
                        "rill-mon: {}: {} of {} periods as slices, {} merged into {} slices \
                         (buckets of {}{dense}), {} flows, {:.1} MB",
                        output.display(),
                        s.detailed,
                        s.periods,
                        s.merged,
                        s.merged_slices,
                        rill_monitor::fmt_ns(s.bucket_ns),
                        s.flows,
                        s.bytes as f64 / 1e6
                    );
                }
            }
        }
        Cmd::Waits {
            dir,
            json,
            no_group,
            limit,
        } => {
            let run = load_quietly(&dir)?;
            warn_truncated(&run);
            let w = waits(&run, !no_group);
            if json {
                print_json(&w)?;
            } else {
                print_text(&w.to_text(limit))?;
            }
        }
        Cmd::Bottleneck {
            dir,
            json,
            windows,
            alpha,
            beta,
            gamma,
        } => {
            anyhow::ensure!(
                (1..=1000).contains(&windows),
                "--windows must be between 1 and 1000, not {windows}"
            );
            for (name, v) in [("--alpha", alpha), ("--beta", beta), ("--gamma", gamma)] {
                anyhow::ensure!(
                    v > 0.0 && v <= 1.0,
                    "{name} must be a share above 0 and at most 1, not {v}"
                );
            }
            let run = load_quietly(&dir)?;
            warn_truncated(&run);
            let b = bottleneck(
                &run,
                &BottleneckOptions {
                    windows,
                    alpha,
                    beta,
                    gamma,
                },
            );
            if json {
                print_json(&b)?;
            } else {
                print_text(&b.to_text())?;
            }
        }
        Cmd::Map {
            dir,
            workers,
            ranks: Some(ranks),
            output,
            json,
        } => {
            let run = load_quietly(&dir)?;
            let plan = plan_rank_mapping(&run, ranks, workers)?;
            let mut out = create(&output)?;
            out.write_all(plan.to_file().as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", output.display()))?;
            warn_truncated(&run);
            if json {
                print_json(&plan)?;
            } else {
                print_text(&plan.to_text(&output.display().to_string()))?;
            }
        }
        Cmd::Map {
            dir,
            workers,
            ranks: None,
            output,
            json,
        } => {
            anyhow::ensure!(
                (1..=MAX_MAP_WORKERS).contains(&workers),
                "--workers must be between 1 and {MAX_MAP_WORKERS}, not {workers}"
            );
            let run = load_quietly(&dir)?;
            let plan = plan_mapping(&run, workers)?;
            let mut out = create(&output)?;
            out.write_all(plan.to_file().as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", output.display()))?;
            // After the last error it could give: an error is one line.
            warn_truncated(&run);
            if json {
                print_json(&plan)?;
            } else {
                print_text(&plan.to_text(&output.display().to_string()))?;
            }
        }
        Cmd::Evolution {
            dir,
            output,
            json,
            csv,
            from,
            to,
            buckets,
            groups,
            no_group,
            width,
        } => {
            check_window(from, to)?;
            anyhow::ensure!(
                (1..=MAX_EVOLUTION_BUCKETS).contains(&buckets),
                "--buckets must be between 1 and {MAX_EVOLUTION_BUCKETS}, not {buckets}"
            );
            anyhow::ensure!(
                groups <= MAX_EVOLUTION_GROUPS,
                "--groups must be at most {MAX_EVOLUTION_GROUPS}, not {groups}"
            );
            anyhow::ensure!(
                output.is_some() || json || csv,
                "say where the evolution goes: -o FILE.svg (or .json, .csv), --json or --csv"
            );
            let run = load_quietly(&dir)?;
            let opts = EvolutionOptions {
                from_ms: from,
                to_ms: to,
                buckets,
                group: !no_group,
                top_groups: groups,
                width_px: width,
            };
            let ev = evolution(&run, &opts)?;
            // Warnings after the analysis: an error is one line.
            warn(&run);
            if let Some(output) = &output {
                let ext = output
                    .extension()
                    .map(|e| e.to_string_lossy().to_ascii_lowercase());
                let text = match ext.as_deref() {
                    Some("json") => ev.to_json(),
                    Some("csv") => ev.to_csv(),
                    _ => ev.to_svg(),
                };
                let mut out = create(output)?;
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .with_context(|| format!("cannot write {}", output.display()))?;
                eprintln!(
                    "rill-mon: {}: {} buckets of {} from {}{}",
                    output.display(),
                    ev.start_ms.len(),
                    rill_monitor::fmt_ns(ev.bucket_ms * 1e6),
                    match ev.source {
                        rill_monitor::EvolutionSource::Periods => "periods",
                        rill_monitor::EvolutionSource::Samples => "samples (estimates)",
                        rill_monitor::EvolutionSource::WorkerWaits => "worker waits only",
                    },
                    if ev.unavailable.is_empty() {
                        String::new()
                    } else {
                        format!("; not available: {}", ev.unavailable.join("; "))
                    }
                );
            }
            if json {
                print_text(&ev.to_json())?;
            } else if csv {
                print_text(&ev.to_csv())?;
            }
        }
        Cmd::Diff {
            a,
            b,
            json,
            no_group,
            limit,
        } => {
            // The two loads, side by side.
            let (ra, rb) = std::thread::scope(|s| {
                let h = s.spawn(|| load_quietly(&a));
                let rb = load_quietly(&b);
                let ra = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                (ra, rb)
            });
            let (ra, rb) = (ra.context("run A")?, rb.context("run B")?);
            let d = diff(&ra, &rb, !no_group);
            if json {
                print_json(&d)?;
            } else {
                print_text(&d.to_text(limit))?;
            }
        }
        Cmd::Report { dir, output, rows } => {
            let run = load_quietly(&dir)?;
            let output = output.unwrap_or_else(|| dir.join("report.html"));
            let page = report_html(
                &run,
                &ReportOptions {
                    rows,
                    ..ReportOptions::default()
                },
            );
            let mut out = create(&output)?;
            out.write_all(page.as_bytes())
                .and_then(|()| out.flush())
                .with_context(|| format!("cannot write {}", output.display()))?;
            // After the last error it could give: an error is one line.
            warn(&run);
            eprintln!(
                "rill-mon: wrote {} ({:.0} KB)",
                output.display(),
                page.len() as f64 / 1024.0
            );
        }
        Cmd::Watch {
            dir,
            interval,
            window,
            top,
            once,
            plain,
            json,
            exit_at_end,
        } => {
            anyhow::ensure!(
                (50..=60_000).contains(&interval),
                "--interval must be between 50 and 60000 ms, not {interval}"
            );
            anyhow::ensure!(
                window.is_finite() && (0.1..=60.0).contains(&window),
                "--window must be between 0.1 and 60 seconds, not {window}"
            );
            anyhow::ensure!(top >= 1, "--top must be at least 1");
            anyhow::ensure!(
                !rill_monitor::is_run_across_ranks(&dir),
                "{} holds a run across ranks (rank-R/ directories): watch follows one \
                 process's logs, so give it DIR/rank-R",
                dir.display()
            );
            let output = if once {
                Output::Once
            } else if json {
                Output::Json
            } else if plain {
                Output::Plain
            } else {
                Output::Terminal
            };
            watch(&WatchOptions {
                dir,
                interval: Duration::from_millis(interval),
                snapshot: SnapshotOptions {
                    window_s: window,
                    top,
                },
                output,
                exit_at_end,
            })?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes.
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("rill-mon: error: {msg}");
            ExitCode::from(2)
        }
    }
}
