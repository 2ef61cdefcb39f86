//! Loading a run's files: reading and checking them, one scan per file,
//! the merge of the scans into a [`RunLog`]; a consumer of every period may
//! run beside the scans ([`Beside`], fed through [`PeriodFeed`]).

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use rill_log::MonitorFlags;

use crate::load::files::{find_logs, read_file};
use crate::load::merge_files::merge;
use crate::load::model::RunLog;
use crate::load::pool::parallel;
use crate::load::scan_file::{scan_file, NoFeed, PeriodFeed, Scanned};

/// Logs larger than this in total (bytes) get a progress bar on stderr.
pub const PROGRESS_THRESHOLD: u64 = 64 << 20;

/// Options for [`load_run_with`](crate::load_run_with).
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Show a progress bar on stderr: `None` = when the logs exceed
    /// [`PROGRESS_THRESHOLD`] (and stderr is a terminal).
    pub progress: Option<bool>,
    /// Scanning threads (0 = one per available core, at most one per file).
    pub threads: usize,
    /// Also run the latency replay (on its own thread, beside the scans),
    /// when the flags allow it; otherwise [`summarize`](crate::summarize)
    /// runs it if needed.
    pub latency: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            progress: None,
            threads: 0,
            latency: true,
        }
    }
}

/// A pass over every log's periods that runs while the load scans them, on
/// the loading thread, fed by each scan (the latency replay): the loader
/// hands the periods on without naming the pass.
pub(crate) trait Beside {
    /// What a scan feeds.
    type Feed: PeriodFeed + Send;
    /// The pass's end of a feed.
    type Rx;
    /// The pass's result.
    type Out;
    /// The flags a run needs for the pass to run.
    fn needs(&self) -> MonitorFlags;
    /// A feed for one log.
    fn feed(&self) -> (Self::Feed, Self::Rx);
    /// Runs the pass over all logs' feeds (`bytes`: the logs' size in all).
    fn run(&self, feeds: Vec<Self::Rx>, bytes: u64) -> Self::Out;
}

/// Loads a run (see [`load_run`](crate::load_run)), with `beside` run
/// beside the scans when the run's flags allow it; its result comes back
/// with the run.
pub(crate) fn load_with<B: Beside + Sync>(
    dir: &Path,
    opts: &LoadOptions,
    beside: Option<B>,
) -> anyhow::Result<(RunLog, Option<B::Out>)> {
    let cores = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // Read every file and check its header first: header errors stop here.
    let (files, ranked) = match crate::load::ranks::load(dir, cores)? {
        Some(mut r) => (std::mem::take(&mut r.files), Some(r)),
        None => {
            let paths = find_logs(dir)?;
            let threads = cores.clamp(1, paths.len());
            (parallel(&paths, threads, |p| read_file(p))?, None)
        }
    };
    let threads = cores.clamp(1, files.len());
    let first = &files[0].header;
    let beside = beside.filter(|b| first.flags.contains(b.needs()));

    let total: u64 = files.iter().map(|f| f.data.len() as u64).sum();
    let show = opts.progress.unwrap_or(total > PROGRESS_THRESHOLD);
    let bar = show.then(|| {
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{bar:40}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message("analysing logs");
        bar
    });

    // The per-file scans; with a pass beside them (the latency replay), one
    // scan thread per file (each feeds the pass, which needs all of them to
    // progress) and the pass on this thread.
    let (scanned, beside_out) = if let Some(beside) = beside {
        std::thread::scope(|s| {
            let mut rxs = Vec::new();
            let mut handles = Vec::new();
            for f in &files {
                let (tx, rx) = beside.feed();
                rxs.push(rx);
                let bar = bar.as_ref();
                handles.push(s.spawn(move || scan_file(f, bar, Some(tx))));
            }
            let out = beside.run(rxs, total);
            let scanned: Vec<Scanned> = handles
                .into_iter()
                .map(|h| h.join().expect("a log scan panicked"))
                .collect();
            (scanned, Some(out))
        })
    } else {
        let scanned = parallel(&files, threads, |f| {
            Ok(scan_file(f, bar.as_ref(), None::<NoFeed>))
        })?;
        (scanned, None)
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut run = merge(dir, scanned, files)?;
    let mut sampler = None;
    if let Some(r) = ranked {
        // What was wrong with the ranks comes first, as a log's own
        // problems do in one process's run.
        run.warnings.splice(0..0, r.warnings);
        run.ranks = Some(r.ranks);
        sampler = r.sampler;
    }
    if run.flags.is_sampled() {
        match sampler {
            Some((windows, problems)) => {
                crate::load::sampled::load_windows(&mut run, windows, problems)
            }
            None => crate::load::sampled::load(&mut run),
        }
    }
    Ok((run, beside_out))
}
