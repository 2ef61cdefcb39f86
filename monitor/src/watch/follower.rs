//! Following a log directory while a run writes it: [`Follower`].
//!
//! Each poll lists the directory, opens the logs that appeared (worker logs
//! as the run creates them, then the sampler's), reads what each log gained
//! ([`Tail`]) and feeds the records to the [`Model`]: the worker logs first
//! (task names), then the sampler's windows.
//!
//! A directory may hold another run's logs: the logs of one run share their
//! header's calibration (the start tick and its wall-clock time). The
//! follower follows the newest run it finds; an older run's files are
//! ignored until replaced, and a newer run's first file starts the view
//! afresh (a run started again into the same directory).
//!
//! The run has ended when every worker's log has ended (its `WorkerEnd`
//! record was read, or it was trimmed and read to its end), no log was
//! written for [`SETTLE`] and a poll found nothing new: the sampler writes
//! its last window and the runtime rewrites the headers' clock rate just
//! after the workers finish. A run that was killed leaves untrimmed logs and
//! never ends: the snapshot says how long no record came.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rill_log::Header;
use serde::Serialize;

use super::model::{Figures, Model, SnapshotOptions, Source};
use super::tail::{file_id, FileId, Kind, Opened, Stop, Tail};
use crate::load::samples::SAMPLER_FILE;
use crate::load::scan::Item;

/// How long the logs must stay unchanged after every worker ended.
pub const SETTLE: Duration = Duration::from_millis(300);
/// How long the logs must stay unchanged, every worker log found having
/// ended, before the run counts as ended without the logs it announced but
/// that never came.
pub const MISSING_WAIT: Duration = Duration::from_secs(2);
/// Warnings kept (the first ones; later ones are counted).
const MAX_WARNINGS: usize = 32;

/// Where the run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// The directory does not exist (yet).
    NoDirectory,
    /// The directory holds no log (yet).
    NoLogs,
    /// Logs are being written.
    Running,
    /// Every worker ended.
    Ended,
}

/// What the view shows at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// The log directory.
    pub dir: String,
    /// Where the run stands.
    pub state: RunState,
    /// Seconds since a poll last found new records.
    pub quiet_s: f64,
    /// The figures (empty before the first log).
    pub figures: Figures,
    /// The bottleneck verdict over the run so far, where the run records
    /// what the analysis needs.
    pub verdict: Option<String>,
    /// Seconds since the verdict was computed.
    pub verdict_age_s: Option<f64>,
    /// Why no verdict could be made (the logs are not all there yet, ...).
    pub verdict_error: Option<String>,
    /// Problems with the logs (the records before them are used).
    pub warnings: Vec<String>,
}

/// One run's logs and figures.
struct Run {
    /// The calibration's start: (start Unix ns, start tick).
    id: (u64, u64),
    header: Header,
    workers: BTreeMap<u32, Tail>,
    sampler: Option<Tail>,
    model: Model,
}

/// A log directory, followed as its run writes it (see the module
/// documentation).
pub struct Follower {
    dir: PathBuf,
    run: Option<Run>,
    /// Files left alone until replaced: another run's, or not logs.
    ignored: HashMap<PathBuf, FileId>,
    warnings: Vec<String>,
    warnings_dropped: usize,
    dir_exists: bool,
    last_news: Instant,
    /// When every worker's log was first seen ended.
    done_since: Option<Instant>,
    ended: bool,
}

fn run_id(h: &Header) -> (u64, u64) {
    (h.calibration.start_unix_ns, h.calibration.start_ticks)
}

/// The worker id in a log file's name (`worker-N.rlog`).
fn worker_of(name: &str) -> Option<u32> {
    name.strip_prefix("worker-")?
        .strip_suffix(".rlog")?
        .parse()
        .ok()
}

impl Follower {
    /// Follows `dir` (which need not exist yet).
    pub fn new(dir: &Path) -> Self {
        Follower {
            dir: dir.to_path_buf(),
            run: None,
            ignored: HashMap::new(),
            warnings: Vec::new(),
            warnings_dropped: 0,
            dir_exists: false,
            last_news: Instant::now(),
            done_since: None,
            ended: false,
        }
    }

    /// The directory followed.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn warn(&mut self, w: String) {
        if self.warnings.contains(&w) {
            return;
        }
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.warnings_dropped += 1;
        }
    }

    /// Where the run stands after the last poll.
    pub fn state(&self) -> RunState {
        if self.run.is_some() {
            if self.ended {
                RunState::Ended
            } else {
                RunState::Running
            }
        } else if self.dir_exists {
            RunState::NoLogs
        } else {
            RunState::NoDirectory
        }
    }

    /// Whether every worker's log has ended (the run is over once the logs
    /// settle).
    pub fn workers_ended(&self) -> bool {
        self.done_since.is_some()
    }

    /// Where the run's time figures come from, once a log was read.
    pub fn source(&self) -> Option<Source> {
        self.run.as_ref().map(|r| r.model.source())
    }

    /// Reads what the logs gained since the last poll. Returns the bytes of
    /// records read.
    pub fn poll(&mut self) -> u64 {
        self.dir_exists = self.dir.is_dir();
        if !self.dir_exists {
            return 0;
        }
        self.open_new_logs();
        let Some(run) = self.run.as_mut() else {
            return 0;
        };
        let mut bytes = 0;
        let mut stops = Vec::new();
        let Run {
            workers,
            sampler,
            model,
            ..
        } = run;
        for (&w, tail) in workers.iter_mut() {
            let was = tail.stop().is_some();
            bytes += tail.poll(|item, sc| model.worker_record(w, item, sc.io()));
            if let (false, Some(Stop::Damaged(m))) = (was, tail.stop()) {
                stops.push(m.clone());
            }
        }
        if let Some(tail) = sampler {
            bytes += tail.poll(|item, sc| {
                if let Item::Samples(s) = item {
                    model.samples(&s, sc.sample_tasks());
                }
            });
            if let Some(Stop::Damaged(m)) = tail.stop() {
                stops.push(m.clone());
            }
        }
        // Since when no log was written (a run that ended before the
        // follower started has settled at once).
        let unwritten = run
            .workers
            .values()
            .chain(run.sampler.as_ref())
            .filter_map(|t| t.modified())
            .max()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or_default();
        // Every worker's log ended; a log the header announces but that
        // never came (it could not be made, or the header lies) is waited
        // for only a while.
        let expected = run.header.worker_count as usize;
        let found = run.workers.len();
        let all_done = found > 0
            && (found >= expected || unwritten >= MISSING_WAIT)
            && run
                .workers
                .iter()
                .all(|(&w, t)| t.stop().is_some() || run.model.worker_ended(w));
        if all_done && found < expected {
            stops.push(format!(
                "the logs announce {expected} workers, {found} worker logs were found"
            ));
        }
        for m in stops {
            self.warn(m);
        }
        let now = Instant::now();
        if bytes > 0 {
            self.last_news = now;
        }
        if all_done {
            let since = *self.done_since.get_or_insert(now);
            // Settled: no file written for SETTLE, or (where the file times
            // say otherwise) SETTLE since every worker ended.
            if bytes == 0 && (unwritten >= SETTLE || now.duration_since(since) >= SETTLE) {
                self.ended = true;
            }
        } else {
            self.done_since = None;
            self.ended = false;
        }
        bytes
    }

    /// Opens the logs that appeared or were replaced since the last poll.
    fn open_new_logs(&mut self) {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => {
                self.warn(format!("cannot read {}: {e}", self.dir.display()));
                return;
            }
        };
        let mut found: Vec<(PathBuf, Option<u32>)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == SAMPLER_FILE {
                found.push((entry.path(), None));
            } else if let Some(w) = worker_of(name) {
                found.push((entry.path(), Some(w)));
            }
        }
        // Worker logs first (in id order), the sampler's last.
        found.sort_by_key(|(_, w)| (w.is_none(), *w));
        for (path, worker) in found {
            let Some(id) = file_id(&path) else { continue };
            let followed = self.run.as_ref().is_some_and(|r| {
                let tail = match worker {
                    Some(w) => r.workers.get(&w),
                    None => r.sampler.as_ref(),
                };
                tail.is_some_and(|t| t.id() == id)
            });
            if followed || self.ignored.get(&path) == Some(&id) {
                continue;
            }
            let kind = if worker.is_some() {
                Kind::Mapped
            } else {
                Kind::Appended
            };
            let tail = match Tail::open(&path, kind) {
                Ok(Opened::Log(t)) => t,
                Ok(Opened::Missing | Opened::NotYet) => continue,
                Err(e) => {
                    self.warn(e);
                    self.ignored.insert(path, id);
                    continue;
                }
            };
            self.adopt(*tail, worker, path);
        }
    }

    /// Takes an opened log into the run it belongs to: the current run, a
    /// newer one (which replaces it) or none (an older run's: ignored).
    fn adopt(&mut self, tail: Tail, worker: Option<u32>, path: PathBuf) {
        let id = run_id(tail.header());
        let newer = match &self.run {
            None => true,
            Some(r) if r.id == id => false,
            Some(r) if id > r.id => true,
            Some(_) => {
                self.ignored.insert(path, tail.id());
                return;
            }
        };
        if newer {
            let header = *tail.header();
            self.run = Some(Run {
                id,
                header,
                workers: BTreeMap::new(),
                sampler: None,
                model: Model::new(&header),
            });
            self.ended = false;
            self.done_since = None;
            self.warnings.clear();
            self.warnings_dropped = 0;
        }
        let mismatch = match worker {
            Some(w) if tail.header().worker != w => Some(format!(
                "{}: the header says worker {}, the file name says {w}",
                path.display(),
                tail.header().worker
            )),
            _ => None,
        };
        if let Some(run) = self.run.as_mut() {
            match worker {
                Some(w) => {
                    run.workers.insert(w, tail);
                }
                None => run.sampler = Some(tail),
            }
        }
        if let Some(m) = mismatch {
            self.warn(m);
        }
    }

    /// The view now.
    pub fn snapshot(&self, opts: &SnapshotOptions) -> Snapshot {
        let mut warnings = self.warnings.clone();
        if self.warnings_dropped > 0 {
            warnings.push(format!("{} more warnings", self.warnings_dropped));
        }
        Snapshot {
            dir: self.dir.display().to_string(),
            state: self.state(),
            quiet_s: self.last_news.elapsed().as_secs_f64(),
            figures: self
                .run
                .as_ref()
                .map(|r| r.model.snapshot(opts))
                .unwrap_or_default(),
            verdict: None,
            verdict_age_s: None,
            verdict_error: None,
            warnings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rill_log::{Calibration, Encoder, LogWriter, MonitorFlags, Record, SampleWindow, VecSink};
    use std::io::Write;

    fn cal(start: u64) -> Calibration {
        Calibration {
            ticks_per_sec: 1e9,
            start_ticks: 0,
            start_unix_ns: start,
        }
    }

    const MS: u64 = 1_000_000;

    /// A sample-mode run in `dir` as it looks mid-run: worker logs with names,
    /// not trimmed, and a sampler log with `windows` windows per worker.
    struct LiveRun {
        writers: Vec<(LogWriter, Encoder)>,
        sampler: std::fs::File,
        enc: Encoder,
        windows: u64,
    }

    impl LiveRun {
        fn start(dir: &Path, start: u64) -> Self {
            Self::announcing(dir, start, 2)
        }

        /// Two workers' logs whose headers announce `workers` workers.
        fn announcing(dir: &Path, start: u64, workers: u32) -> Self {
            let flags = MonitorFlags::SAMPLED;
            let mut writers = Vec::new();
            for w in 0..2u32 {
                let h = Header::new(flags, w, workers, cal(start));
                let mut lw = LogWriter::create_with_len(dir, w, &h, 8192).unwrap();
                let mut enc = Encoder::new();
                enc.record(&mut lw, &Record::WorkerStart { t: 0 });
                enc.record(
                    &mut lw,
                    &Record::TaskAssign {
                        t: 0,
                        task: u64::from(w) + 1,
                        parent: 0,
                        worker: w,
                        name: format!("stage/{w}"),
                    },
                );
                writers.push((lw, enc));
            }
            let path = dir.join(SAMPLER_FILE);
            let _ = std::fs::remove_file(&path);
            let mut sampler = std::fs::File::create(&path).unwrap();
            let h = Header::new(flags, workers, workers, cal(start));
            sampler.write_all(&h.to_bytes()).unwrap();
            LiveRun {
                writers,
                sampler,
                enc: Encoder::new(),
                windows: 0,
            }
        }

        /// 100 ms of windows: worker 0 runs task 1 all the time, worker 1
        /// task 2 half the time.
        fn tick(&mut self) {
            let mut sink = VecSink::new();
            for _ in 0..10 {
                let t = self.windows * 10 * MS;
                for w in 0..2u32 {
                    let busy = if w == 0 { 10 } else { 5 };
                    self.enc.samples(
                        &mut sink,
                        &SampleWindow {
                            t,
                            dur: 10 * MS,
                            worker: w,
                            total: 10,
                            signals: 10,
                            sched: 0,
                            spin: 0,
                            idle: 10 - busy,
                            parked: 0,
                            tasks: vec![(u64::from(w) + 1, busy)],
                        },
                    );
                }
                self.windows += 1;
            }
            self.sampler.write_all(sink.bytes()).unwrap();
        }

        fn finish(self) {
            let t = self.windows * 10 * MS;
            for (mut lw, mut enc) in self.writers {
                enc.record(&mut lw, &Record::WorkerEnd { t });
                lw.finish().unwrap();
            }
        }
    }

    fn opts() -> SnapshotOptions {
        SnapshotOptions {
            window_s: 0.5,
            top: 10,
        }
    }

    #[test]
    fn a_run_is_followed_from_before_its_directory_exists_to_its_end() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("logs");
        let mut f = Follower::new(&dir);
        assert_eq!(f.poll(), 0);
        assert_eq!(f.state(), RunState::NoDirectory);
        std::fs::create_dir(&dir).unwrap();
        f.poll();
        assert_eq!(f.state(), RunState::NoLogs);
        let mut run = LiveRun::start(&dir, 1);
        for _ in 0..10 {
            run.tick();
        }
        assert!(f.poll() > 0);
        assert_eq!(f.state(), RunState::Running);
        let s = f.snapshot(&opts());
        assert!((s.figures.elapsed_s - 1.0).abs() < 1e-9);
        assert_eq!(s.figures.workers.len(), 2);
        assert!((s.figures.workers[0].recent.unwrap() - 1.0).abs() < 1e-9);
        assert!((s.figures.workers[1].recent.unwrap() - 0.5).abs() < 1e-9);
        let names: Vec<&str> = s.figures.groups.iter().map(|g| g.group.as_str()).collect();
        assert_eq!(names, ["stage/*"]);
        // More windows: the figures move on.
        run.tick();
        f.poll();
        let s = f.snapshot(&opts());
        assert!((s.figures.elapsed_s - 1.1).abs() < 1e-9);
        // The workers end: trimmed logs, then the settling time.
        run.finish();
        f.poll();
        assert_eq!(f.state(), RunState::Running, "settling");
        std::thread::sleep(SETTLE + Duration::from_millis(50));
        f.poll();
        assert_eq!(f.state(), RunState::Ended);
        assert!(f.snapshot(&opts()).warnings.is_empty());
    }

    #[test]
    fn a_new_run_in_the_same_directory_starts_the_view_afresh() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut run = LiveRun::start(dir, 1);
        for _ in 0..20 {
            run.tick();
        }
        run.finish();
        let mut f = Follower::new(dir);
        f.poll();
        let s = f.snapshot(&opts());
        assert!((s.figures.elapsed_s - 2.0).abs() < 1e-9);
        // Another run, started later, replaces the files one by one.
        let mut run = LiveRun::start(dir, 2);
        run.tick();
        f.poll();
        let s = f.snapshot(&opts());
        assert_eq!(s.state, RunState::Running);
        assert!(
            (s.figures.elapsed_s - 0.1).abs() < 1e-9,
            "{}",
            s.figures.elapsed_s
        );
    }

    /// Sets the modification time of every file in `dir` `ago` back.
    fn age(dir: &Path, ago: Duration) {
        let t = SystemTime::now() - ago;
        for e in std::fs::read_dir(dir).unwrap() {
            let f = std::fs::File::options()
                .append(true)
                .open(e.unwrap().path())
                .unwrap();
            f.set_modified(t).unwrap();
        }
    }

    #[test]
    fn a_killed_run_never_ends_and_a_missing_log_is_waited_for_a_while() {
        let tmp = tempfile::tempdir().unwrap();
        let mut run = LiveRun::start(tmp.path(), 1);
        run.tick();
        let mut f = Follower::new(tmp.path());
        f.poll();
        // Killed: its logs stay as they were, untrimmed and without ends.
        age(tmp.path(), Duration::from_secs(60));
        f.poll();
        assert_eq!(f.state(), RunState::Running);
        drop(run);
        // Ended, but the headers announce three workers and two logs came.
        let tmp = tempfile::tempdir().unwrap();
        let mut run = LiveRun::announcing(tmp.path(), 1, 3);
        run.tick();
        run.finish();
        let mut f = Follower::new(tmp.path());
        f.poll();
        assert_eq!(f.state(), RunState::Running, "the third log may come");
        age(tmp.path(), MISSING_WAIT + Duration::from_secs(1));
        f.poll();
        assert_eq!(f.state(), RunState::Ended);
        let w = f.snapshot(&opts()).warnings.join("\n");
        assert!(
            w.contains("announce 3 workers, 2 worker logs were found"),
            "{w}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_log_is_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut run = LiveRun::start(dir, 1);
        run.tick();
        std::fs::write(dir.join("worker-7.rlog"), [b'x'; 100]).unwrap();
        let mut f = Follower::new(dir);
        f.poll();
        let s = f.snapshot(&opts());
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("worker-7.rlog"));
        // Reported once.
        f.poll();
        assert_eq!(f.snapshot(&opts()).warnings.len(), 1);
        drop(run);
    }
}
