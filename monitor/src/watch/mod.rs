//! `rill-mon watch DIR`: a live view of a run while it writes its logs, in
//! the spirit of tokio-console: per worker its utilisation over the last
//! seconds, the busiest task groups, the streams with the most waits and the
//! bottleneck verdict over the run so far; at the run's end its summary.
//!
//! | file | what |
//! | --- | --- |
//! | `tail.rs` | reading one log as it grows (`tail::Tail`) |
//! | `model.rs` | the figures, fed records ([`Model`]) |
//! | `follower.rs` | a directory: its logs, its run, its end ([`Follower`]) |
//! | `analyst.rs` | the whole-run analyses, on a thread |
//! | `text.rs` | a snapshot as text (`--once`, `--plain`) |
//! | `view.rs` | a snapshot drawn in the terminal (ratatui) |
//! | `tui.rs` | the terminal's loop: keys, refreshes, the end |
//!
//! Made for sample mode (`--monitor sample`), the mode cheap enough to leave
//! on: the sampler's log grows by a window of samples per worker every
//! 10 ms, which is all the view needs for time; the worker logs give the
//! names and, as stream ends close, their exact wait counts. Runs that
//! record periods (`full`, or any mode with `sched`) are shown from their
//! periods.

mod analyst;
mod follower;
mod model;
mod tail;
mod text;
mod tui;
mod view;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

pub use analyst::{final_analyses, verdict, Analyst, Final};
pub use follower::{Follower, RunState, Snapshot, SETTLE};
pub use model::{
    Figures, GroupRow, Model, SnapshotOptions, Source, StreamRow, WorkerRow, BIN_MS, HISTORY_BINS,
};
pub use text::snapshot_text;

/// How `rill-mon watch` shows the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The terminal view (a plain text stream when stdout is no terminal).
    Terminal,
    /// A text snapshot every interval, then the summary.
    Plain,
    /// One text snapshot of what the logs hold now.
    Once,
    /// One snapshot as JSON.
    Json,
}

/// Options of [`watch`].
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// The log directory.
    pub dir: PathBuf,
    /// Time between refreshes.
    pub interval: Duration,
    /// What the snapshots show.
    pub snapshot: SnapshotOptions,
    /// How to show it.
    pub output: Output,
    /// Leave at the run's end (the terminal view then prints the summary).
    pub exit_at_end: bool,
}

/// Polls until a poll reads nothing new (a directory's logs read up to
/// where they are now), at most `limit` times.
fn catch_up(f: &mut Follower, limit: usize) {
    for _ in 0..limit {
        if f.poll() == 0 {
            break;
        }
    }
}

/// Whether the run's records allow a verdict.
fn has_time(f: &Follower) -> bool {
    matches!(f.source(), Some(Source::Samples | Source::Periods))
}

/// Puts the analyst's verdict (or why there is none) into `s`.
fn add_verdict(s: &mut Snapshot, a: &Analyst) {
    if let Some((v, age)) = a.verdict() {
        s.verdict = Some(v.to_owned());
        s.verdict_age_s = Some(age.as_secs_f64());
    }
    s.verdict_error = a.error().map(str::to_owned);
}

/// Runs `rill-mon watch` (see the module documentation).
pub fn watch(opts: &WatchOptions) -> anyhow::Result<()> {
    match opts.output {
        Output::Once | Output::Json => once(opts),
        Output::Plain => plain(opts),
        Output::Terminal if !std::io::stdout().is_terminal() => plain(opts),
        Output::Terminal => tui::run(opts),
    }
}

/// One snapshot of what the logs hold now, with the verdict.
fn once(opts: &WatchOptions) -> anyhow::Result<()> {
    let dir = &opts.dir;
    let mut f = Follower::new(dir);
    catch_up(&mut f, 1024);
    // A run that has just ended: its logs settle within moments.
    let t = std::time::Instant::now();
    while f.state() == RunState::Running && f.workers_ended() && t.elapsed() < SETTLE * 4 {
        std::thread::sleep(Duration::from_millis(20));
        catch_up(&mut f, 16);
    }
    match f.state() {
        RunState::NoDirectory => anyhow::bail!("log directory {} not found", dir.display()),
        RunState::NoLogs => anyhow::bail!("no rill logs (worker-*.rlog) in {}", dir.display()),
        RunState::Running | RunState::Ended => {}
    }
    let mut s = f.snapshot(&opts.snapshot);
    if has_time(&f) {
        if let Ok(v) = verdict(dir) {
            s.verdict = Some(v);
            s.verdict_age_s = Some(0.0);
        }
    }
    let mut out = std::io::stdout().lock();
    if opts.output == Output::Json {
        serde_json::to_writer_pretty(&mut out, &s)?;
        writeln!(out)?;
    } else {
        out.write_all(snapshot_text(&s).as_bytes())?;
    }
    Ok(())
}

/// A text snapshot every interval until the run ends, then its summary.
fn plain(opts: &WatchOptions) -> anyhow::Result<()> {
    let mut f = Follower::new(&opts.dir);
    let mut analyst = Analyst::new(&opts.dir);
    let mut said_waiting = false;
    loop {
        catch_up(&mut f, 4);
        analyst.collect();
        let state = f.state();
        if matches!(state, RunState::NoDirectory | RunState::NoLogs) {
            if !said_waiting {
                let s = f.snapshot(&opts.snapshot);
                eprintln!("rill-mon: {}", text::status_line(&s));
                said_waiting = true;
            }
            std::thread::sleep(opts.interval);
            continue;
        }
        if state == RunState::Ended {
            break;
        }
        if has_time(&f) {
            analyst.verdict_if_due();
        }
        let mut s = f.snapshot(&opts.snapshot);
        add_verdict(&mut s, &analyst);
        let mut out = std::io::stdout().lock();
        out.write_all(snapshot_text(&s).as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()?;
        drop(out);
        std::thread::sleep(opts.interval);
    }
    let mut s = f.snapshot(&opts.snapshot);
    let fin = final_analyses(&opts.dir, has_time(&f)).map_err(|e| anyhow::anyhow!(e))?;
    s.verdict = fin.verdict;
    let mut out = std::io::stdout().lock();
    out.write_all(snapshot_text(&s).as_bytes())?;
    writeln!(out, "\n{}", fin.summary)?;
    Ok(())
}
