//! The whole-run analyses behind the live view, on a thread of their own so
//! that the view stays responsive: the bottleneck verdict over the run so
//! far, and at the end the run's summary.
//!
//! Both load the directory as `rill-mon summary` and `bottleneck` do (a live
//! log is read, not mapped). The verdict is computed again at most every
//! [`MIN_GAP`] and never more often than ten times its own cost, so that it
//! takes at most about a tenth of a core from the machine the run uses.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crate::explain::bottleneck::bottleneck;
use crate::explain::findings::BottleneckOptions;
use crate::load::open::LoadOptions;
use crate::replay::load_run::load_run_with;
use crate::summary::summarize::summarize;

/// The least time between two verdicts.
pub const MIN_GAP: Duration = Duration::from_secs(2);

/// The analyses at the run's end.
#[derive(Clone, Debug)]
pub struct Final {
    /// `rill-mon summary`'s text.
    pub summary: String,
    /// The bottleneck verdict, where the run records what it needs.
    pub verdict: Option<String>,
}

enum Job {
    Verdict,
    /// The summary, and the verdict if true.
    Final(bool),
}

enum Answer {
    /// The verdict, and how long it took.
    Verdict(Result<String, String>, Duration),
    Final(Result<Final, String>),
}

/// The verdict over the run so far, from the logs in `dir`.
pub fn verdict(dir: &Path) -> Result<String, String> {
    let opts = LoadOptions {
        progress: Some(false),
        latency: false,
        ..LoadOptions::default()
    };
    let run = load_run_with(dir, &opts).map_err(|e| format!("{e:#}"))?;
    Ok(bottleneck(&run, &BottleneckOptions::default()).verdict)
}

/// The summary of the finished run in `dir`, and its verdict when `verdict`.
pub fn final_analyses(dir: &Path, verdict: bool) -> Result<Final, String> {
    let opts = LoadOptions {
        progress: Some(false),
        ..LoadOptions::default()
    };
    let run = load_run_with(dir, &opts).map_err(|e| format!("{e:#}"))?;
    let summary = summarize(&run).to_text();
    let verdict = verdict.then(|| bottleneck(&run, &BottleneckOptions::default()).verdict);
    Ok(Final { summary, verdict })
}

/// Runs the analyses of one directory on a thread (see the module
/// documentation).
pub struct Analyst {
    tx: Sender<Job>,
    rx: Receiver<Answer>,
    /// A verdict is being computed.
    pending: bool,
    started: Instant,
    next: Instant,
    /// The last verdict and when it was asked for.
    verdict: Option<(String, Instant)>,
    /// Why the last verdict failed.
    error: Option<String>,
    final_asked: bool,
    result: Option<Result<Final, String>>,
}

impl Analyst {
    /// Starts the thread for `dir`.
    pub fn new(dir: &Path) -> Self {
        let (tx, jobs) = channel::<Job>();
        let (answers, rx) = channel::<Answer>();
        let dir: PathBuf = dir.to_path_buf();
        std::thread::Builder::new()
            .name("rill-mon-analyses".into())
            .spawn(move || {
                for job in jobs {
                    let a = match job {
                        Job::Verdict => {
                            let t = Instant::now();
                            let v = verdict(&dir);
                            Answer::Verdict(v, t.elapsed())
                        }
                        Job::Final(v) => Answer::Final(final_analyses(&dir, v)),
                    };
                    if answers.send(a).is_err() {
                        break;
                    }
                }
            })
            .ok();
        let now = Instant::now();
        Analyst {
            tx,
            rx,
            pending: false,
            started: now,
            next: now,
            verdict: None,
            error: None,
            final_asked: false,
            result: None,
        }
    }

    /// Asks for a verdict if one is due.
    pub fn verdict_if_due(&mut self) {
        let now = Instant::now();
        if self.pending || self.final_asked || now < self.next {
            return;
        }
        if self.tx.send(Job::Verdict).is_ok() {
            self.pending = true;
            self.started = now;
        }
    }

    /// Asks for the final summary (once), and the verdict if `verdict`.
    pub fn ask_final(&mut self, verdict: bool) {
        if !self.final_asked && self.tx.send(Job::Final(verdict)).is_ok() {
            self.final_asked = true;
        }
    }

    /// Collects the answers that came; returns whether any did.
    pub fn collect(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.rx.try_recv() {
                Ok(Answer::Verdict(v, cost)) => {
                    any = true;
                    self.pending = false;
                    self.next = Instant::now() + MIN_GAP.max(cost * 10);
                    // A failed verdict (logs of two runs, a log not written
                    // yet) keeps the last one.
                    match v {
                        Ok(v) => {
                            self.verdict = Some((v, self.started));
                            self.error = None;
                        }
                        Err(e) => self.error = Some(e),
                    }
                }
                Ok(Answer::Final(f)) => {
                    any = true;
                    if let Ok(f) = &f {
                        if let Some(v) = &f.verdict {
                            self.verdict = Some((v.clone(), Instant::now()));
                        }
                    }
                    self.result = Some(f);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if self.final_asked && self.result.is_none() {
                        self.result = Some(Err("the analyses stopped".into()));
                        any = true;
                    }
                    break;
                }
            }
        }
        any
    }

    /// The last verdict and its age.
    pub fn verdict(&self) -> Option<(&str, Duration)> {
        self.verdict
            .as_ref()
            .map(|(v, at)| (v.as_str(), at.elapsed()))
    }

    /// Why the last verdict could not be made, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The final analyses, once done.
    pub fn final_result(&self) -> Option<&Result<Final, String>> {
        self.result.as_ref()
    }
}
