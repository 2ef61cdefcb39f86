//! `rill-mon`: analyses a rill run's monitoring logs.
//!
//! * `rill-mon summary DIR [--json]`
//! * `rill-mon timeline DIR -o FILE.svg [--from MS --to MS] [--width PX]`
//! * `rill-mon trace DIR -o FILE.json`
//!
//! Errors print one line on stderr and exit with status 2.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use rill_monitor::{load_run, summarize, timeline_svg, write_chrome_trace, TimelineOptions};

/// Analyses the monitoring logs (worker-*.rlog) of a rill run.
#[derive(Parser)]
#[command(name = "rill-mon", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Per-worker busy/waiting time, per-task and per-stream totals,
    /// throughput, latency and jitter.
    Summary {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
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
    /// Chrome trace-event JSON for Perfetto or chrome://tracing.
    Trace {
        /// The directory holding the worker-*.rlog files.
        dir: PathBuf,
        /// The JSON file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
}

fn warn(run: &rill_monitor::RunLog) {
    for w in &run.warnings {
        eprintln!("rill-mon: warning: {w}");
    }
}

fn create(path: &Path) -> anyhow::Result<BufWriter<std::fs::File>> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(BufWriter::new(f))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::Summary { dir, json } => {
            let run = load_run(&dir)?;
            let s = summarize(&run);
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
            let run = load_run(&dir)?;
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
        Cmd::Trace { dir, output } => {
            let run = load_run(&dir)?;
            warn(&run);
            let mut out = create(&output)?;
            let stats = write_chrome_trace(&run, &mut out)
                .and_then(|s| out.flush().map(|()| s))
                .with_context(|| format!("cannot write {}", output.display()))?;
            if stats.clipped > 0 {
                eprintln!(
                    "rill-mon: warning: {} overlapping spans were clipped ({} dropped)",
                    stats.clipped, stats.dropped
                );
            }
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
