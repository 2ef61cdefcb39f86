//! Sample mode's sampler: a thread that, at a fixed rate, reads what each
//! worker says it is doing and writes windows of those samples to the run's
//! `sampler.rlog`.
//!
//! A worker publishes its state in one word of its shared half
//! ([`WorkerShared::now`](crate::worker::WorkerShared)), with a plain store
//! where its state changes: the running task's id before a dispatch, "between
//! tasks" after it, "spinning" while a task spins before a block, "idle" and
//! "parked" in its idle loop. That store is all sample mode costs a dispatch
//! (beside an increment of the task's dispatch count); no clock is read and no
//! record written. The sampler thread loads each word (Relaxed: a sample
//! needs no order with anything the worker did) and counts what it finds.
//! Every [`WINDOW`] (or at least [`WINDOW_SAMPLES`] samples) it writes one
//! `Samples` record per worker. Its file is written with plain appends from
//! this thread, never by a worker, so a full disk costs the sampler its log
//! and the program nothing.
//!
//! Why a thread that reads a word rather than a per-worker timer signal, and
//! what the samples' error is, is in `README.md` beside this file ("Sample
//! mode").

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rill_log::{Encoder, Header, SampleWindow, VecSink};

use super::clock;
use crate::runtime::{Phase, Shared};

/// The sampler's log in the run's log directory.
pub(crate) const SAMPLER_FILE: &str = "sampler.rlog";

/// The default sampling rate (see the README for why).
pub(crate) const DEFAULT_HZ: u32 = 1000;

/// How long a window lasts at most.
const WINDOW: Duration = Duration::from_millis(10);
/// How many samples a window holds at least (at low rates windows are longer
/// than [`WINDOW`]).
const WINDOW_SAMPLES: u32 = 10;

/// What a worker's state word says: the low [`STATE_BITS`] bits are the
/// state, the rest the running (or spinning) task's id.
pub(crate) mod state {
    /// In the worker loop, between tasks (and before the first).
    pub(crate) const SCHED: u64 = 0;
    /// Running the task whose id is in the high bits.
    pub(crate) const RUN: u64 = 1;
    /// The task in the high bits spins before it blocks.
    pub(crate) const SPIN: u64 = 2;
    /// Idle and awake: looking for work.
    pub(crate) const IDLE: u64 = 3;
    /// Asleep.
    pub(crate) const PARK: u64 = 4;
    /// Bits of the state; a task id is shifted past them.
    pub(crate) const STATE_BITS: u32 = 3;
    /// The word of a worker running (or spinning in) task `id`.
    #[inline(always)]
    pub(crate) const fn task(id: u64, st: u64) -> u64 {
        id << STATE_BITS | st
    }
}

/// One worker's samples in the open window.
#[derive(Default)]
struct Tally {
    counts: [u32; 5],
    /// (task, samples), in the order first seen.
    tasks: Vec<(u64, u32)>,
}

impl Tally {
    fn add(&mut self, word: u64) {
        let st = word & ((1 << state::STATE_BITS) - 1);
        match st {
            state::RUN => {
                let id = word >> state::STATE_BITS;
                match self.tasks.iter_mut().find(|(t, _)| *t == id) {
                    Some((_, n)) => *n += 1,
                    None => self.tasks.push((id, 1)),
                }
            }
            st if (st as usize) < self.counts.len() => self.counts[st as usize] += 1,
            // No other state is ever stored; count it as the scheduler's.
            _ => self.counts[state::SCHED as usize] += 1,
        }
    }

    /// The window's record, and the tally emptied for the next.
    fn take(&mut self, worker: u32, t: u64, dur: u64, total: u32) -> SampleWindow {
        let mut tasks = std::mem::take(&mut self.tasks);
        tasks.sort_unstable();
        let c = std::mem::take(&mut self.counts);
        SampleWindow {
            t,
            dur,
            worker,
            total,
            sched: c[state::SCHED as usize],
            spin: c[state::SPIN as usize],
            idle: c[state::IDLE as usize],
            parked: c[state::PARK as usize],
            tasks,
        }
    }
}

/// The sampler's log file: a header, then records appended a window at a
/// time.
pub(crate) struct SamplerLog {
    file: Option<File>,
    path: PathBuf,
    sink: VecSink,
    enc: Encoder,
}

impl SamplerLog {
    /// Creates `dir/sampler.rlog` with `header` (its worker field is the
    /// worker count: the sampler is no worker).
    pub(crate) fn create(dir: &Path, header: &Header) -> std::io::Result<Self> {
        let path = dir.join(SAMPLER_FILE);
        // A new file, never the old one truncated (a reader may have it open).
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut file = File::create(&path)?;
        let mut h = *header;
        h.worker = h.worker_count;
        file.write_all(&h.to_bytes())?;
        Ok(SamplerLog {
            file: Some(file),
            path,
            sink: VecSink::new(),
            enc: Encoder::new(),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes what the windows encoded since the last flush. On an error the
    /// log stops (one warning names the file and the cause); the run goes on.
    fn flush(&mut self) {
        if let Some(f) = &mut self.file {
            if let Err(e) = f.write_all(self.sink.bytes()) {
                eprintln!(
                    "rill: the sampler's log {} stopped: {e}; the run goes on without it",
                    self.path.display()
                );
                self.file = None;
            }
        }
        self.sink.clear();
    }
}

/// The sampler's loop, until the run ends: `hz` samples per second of every
/// worker's state word, a `Samples` record per worker and window.
pub(crate) fn run(shared: Arc<Shared>, mut log: SamplerLog, hz: u32) {
    let period = Duration::from_secs_f64(1.0 / f64::from(hz.max(1)));
    let n = shared.workers.len();
    let mut tallies: Vec<Tally> = (0..n).map(|_| Tally::default()).collect();
    let mut samples = 0u32;
    let mut window_start = clock::now();
    let mut opened = Instant::now();
    let mut next = Instant::now();
    loop {
        let running = shared.phase() == Phase::Running;
        if running {
            for (tally, w) in tallies.iter_mut().zip(shared.workers.iter()) {
                // Relaxed: a sample is a snapshot, ordered with nothing.
                tally.add(w.now.load(Ordering::Relaxed));
            }
            samples += 1;
        }
        let full = samples >= WINDOW_SAMPLES && opened.elapsed() >= WINDOW;
        if (full || !running) && samples > 0 {
            let now = clock::now();
            let dur = now.wrapping_sub(window_start);
            for (i, tally) in tallies.iter_mut().enumerate() {
                let rec = tally.take(i as u32, window_start, dur, samples);
                log.enc.samples(&mut log.sink, &rec);
            }
            log.flush();
            samples = 0;
            window_start = now;
            opened = Instant::now();
        }
        if !running {
            break;
        }
        next += period;
        let now = Instant::now();
        if next > now {
            // In slices, so that the end of a run at a low rate is seen soon.
            std::thread::sleep((next - now).min(Duration::from_millis(2)));
            while Instant::now() < next && shared.phase() == Phase::Running {
                std::thread::sleep((next - Instant::now()).min(Duration::from_millis(2)));
            }
        } else {
            // Late (the machine is loaded): skip the missed samples rather
            // than take them in a burst.
            next = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_counts_states_and_tasks() {
        let mut t = Tally::default();
        for w in [
            state::task(7, state::RUN),
            state::task(7, state::RUN),
            state::task(3, state::RUN),
            state::task(7, state::SPIN),
            state::IDLE,
            state::PARK,
            state::PARK,
            state::SCHED,
        ] {
            t.add(w);
        }
        let w = t.take(1, 100, 50, 8);
        assert_eq!(w.tasks, vec![(3, 1), (7, 2)]);
        assert_eq!((w.sched, w.spin, w.idle, w.parked), (1, 1, 1, 2));
        assert_eq!(
            w.running() + u64::from(w.sched + w.spin + w.idle + w.parked),
            8
        );
        assert_eq!((w.worker, w.t, w.dur, w.total), (1, 100, 50, 8));
        // Taken: the next window starts empty.
        let w = t.take(1, 150, 50, 0);
        assert!(w.tasks.is_empty() && w.sched == 0 && w.parked == 0);
    }
}
