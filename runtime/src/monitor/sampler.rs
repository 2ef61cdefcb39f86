//! Sample mode's sampler: it collects the samples the workers take
//! of themselves and writes them, a window at a time, to the run's
//! `sampler.rlog`.
//!
//! A worker publishes its state in one word of its shared half
//! ([`WorkerShared::now`](crate::worker::WorkerShared)), with a plain store
//! where its state changes: the running task's id before a dispatch,
//! "spinning" while a task spins before a block, "idle" and "parked" in its
//! idle loop, "between tasks" on leaving it. That store is all sample mode
//! costs a dispatch (beside an increment of the task's dispatch count); no
//! clock is read and no record written. A per-worker timer signal (on the
//! wall clock, or with `cpu` on the worker's CPU time) samples the word on
//! the worker's own thread (`self_sample.rs`) into a ring; the sampler
//! empties the rings every [`WINDOW`] (longer at low rates, so that a window
//! holds about [`WINDOW_SAMPLES`] samples), adds each worker's parked time
//! (measured by the clock) as samples ([`parked_samples`]), and writes one
//! `Samples` record per worker with the number of signals behind it. It
//! runs on the thread that called `Runtime::run` (idle until the run ends
//! otherwise), and its file is written with plain appends from there, never
//! by a worker,
//! so a full disk costs the sampler its log and the program nothing.
//!
//! Why the workers sample themselves, and what the samples' error is, is in
//! `README.md` beside this file ("Sample mode").

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rill_log::{Encoder, Header, SampleWindow, VecSink};

use super::clock;
use super::sample_state as state;
use crate::run::shared::Shared;

/// The sampler's log in the run's log directory.
pub(crate) const SAMPLER_FILE: &str = "sampler.rlog";

pub(crate) use super::sample_state::DEFAULT_HZ;

/// How long a window lasts at most.
const WINDOW: Duration = Duration::from_millis(10);
/// How many samples a window holds at least (at low rates windows are longer
/// than [`WINDOW`]).
const WINDOW_SAMPLES: u32 = 10;

/// One worker's samples in the open window.
#[derive(Default)]
struct Tally {
    counts: [u32; 5],
    /// (task, samples), in the order first seen.
    tasks: Vec<(u64, u32)>,
}

impl Tally {
    /// Counts `word`; returns how many samples it stands for (a `PARK`
    /// word may carry a count in its task bits: parked time counted by the
    /// clock, `self_sample.rs`).
    fn add(&mut self, word: u64) -> u32 {
        let st = word & ((1 << state::STATE_BITS) - 1);
        let high = word >> state::STATE_BITS;
        match st {
            state::RUN => {
                match self.tasks.iter_mut().find(|(t, _)| *t == high) {
                    Some((_, n)) => *n += 1,
                    None => self.tasks.push((high, 1)),
                }
                1
            }
            state::PARK => {
                let k = u32::try_from(high.max(1)).unwrap_or(u32::MAX);
                let c = &mut self.counts[state::PARK as usize];
                *c = c.saturating_add(k);
                k
            }
            st if (st as usize) < self.counts.len() => {
                self.counts[st as usize] += 1;
                1
            }
            // No other state is ever stored; count it as the scheduler's.
            _ => {
                self.counts[state::SCHED as usize] += 1;
                1
            }
        }
    }

    /// The window's record, and the tally emptied for the next.
    fn take(&mut self, worker: u32, t: u64, dur: u64, total: u32, signals: u32) -> SampleWindow {
        let mut tasks = std::mem::take(&mut self.tasks);
        tasks.sort_unstable();
        let c = std::mem::take(&mut self.counts);
        SampleWindow {
            t,
            dur,
            worker,
            total,
            signals,
            sched: c[state::SCHED as usize],
            spin: c[state::SPIN as usize],
            idle: c[state::IDLE as usize],
            parked: c[state::PARK as usize],
            tasks,
        }
    }
}

/// The samples a window's `parked_ns` of parked time stand for, in the
/// unit of the awake samples. Wall-clock timers count a period each,
/// preempted or not (`cpu` is `None`): one sample a period. CPU-time timers
/// (`--monitor cpu`) count periods of the worker's CPU time, so a stretch
/// of awake time in which the worker was preempted took fewer of them than
/// its length: with `cpu`, the worker's CPU time in the window's `wall`
/// nanoseconds, the parked time is counted at the rate the worker's awake
/// time took samples (CPU time over awake wall time, at most 1, at least a
/// tenth), so that the window's shares are the clock's for parked time and
/// the samples' for the rest. Either way the count is the expected one,
/// whether or not a signal came in the window, so short windows add up
/// without bias.
pub(crate) fn parked_samples(parked_ns: u64, wall: u64, cpu: Option<u64>, period_ns: u64) -> u64 {
    if parked_ns == 0 {
        return 0;
    }
    let awake = wall.saturating_sub(parked_ns);
    let rate = match cpu {
        Some(c) if awake > 0 => (c as f64 / awake as f64).clamp(0.1, 1.0),
        _ => 1.0,
    };
    let k = (parked_ns as f64 * rate / period_ns.max(1) as f64).round() as u64;
    k.clamp(1, u64::from(u32::MAX >> 1))
}

/// When the first window begins: taken before the workers start, since the
/// sampler starts after them (off the run's start), and the samples they
/// take meanwhile wait in their rings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowStart {
    /// [`clock::now`].
    ticks: u64,
    /// [`mono_ns`](super::self_sample::mono_ns).
    mono: u64,
}

impl WindowStart {
    pub(crate) fn now() -> Self {
        WindowStart {
            ticks: clock::now(),
            mono: super::self_sample::mono_ns(),
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
        // A new file, never the old one truncated (a reader may have it
        // open); the old one is deleted in the background.
        rill_log::retire(&path)?;
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

/// The sampler: every window (10 ms, longer at rates under 1 kHz so that a
/// window holds about [`WINDOW_SAMPLES`] samples) it empties every worker's
/// ring of samples (the workers sample themselves `hz` times a second,
/// `self_sample.rs`), adds each worker's parked time in the window as
/// samples ([`parked_samples`]), and writes a `Samples` record per worker
/// that took any.
///
/// It runs on the thread that called `Runtime::run`, which has nothing else
/// to do until the run ends ([`run_until_end`](Self::run_until_end)), and
/// takes the last window once the workers have stopped
/// ([`finish`](Self::finish)): no thread of its own to start and join
/// (about 100 µs of a run's start and end here).
pub(crate) struct Sampler {
    log: SamplerLog,
    window: Duration,
    period_ns: u64,
    /// Per worker: the window's tally, its sample count and its signals.
    tallies: Vec<(Tally, u32, u32)>,
    /// Per worker, with `cpu`: its CPU time at the last window's end, once
    /// known.
    cpu_at: Vec<Option<u64>>,
    /// The open window's start, in [`clock::now`] ticks and in
    /// [`mono_ns`](super::self_sample::mono_ns).
    window_start: u64,
    mono_start: u64,
    close_at: Instant,
}

impl Sampler {
    pub(crate) fn new(shared: &Shared, log: SamplerLog, hz: u32, start: WindowStart) -> Self {
        let hz = hz.max(1);
        let window = WINDOW.max(Duration::from_secs_f64(
            f64::from(WINDOW_SAMPLES) / f64::from(hz),
        ));
        Sampler {
            log,
            window,
            period_ns: 1_000_000_000 / u64::from(hz),
            tallies: (0..shared.workers.len())
                .map(|_| (Tally::default(), 0, 0))
                .collect(),
            // `None` but with `cpu`: a worker names its CPU-time clock only
            // for a timer on it (`SampleRing::set_cpu_clock`).
            cpu_at: shared.workers.iter().map(|w| w.samples.cpu_ns()).collect(),
            window_start: start.ticks,
            mono_start: start.mono,
            close_at: Instant::now() + window,
        }
    }

    /// Closes a window every [`WINDOW`] until every worker thread has left
    /// (the last one out unparks this thread, the run's waiter; a spurious
    /// return only loops).
    ///
    /// The thread's timer slack is the window's length meanwhile (restored
    /// after): a window's end needs no precision (its length is measured),
    /// and with that much slack the kernel wakes the thread on an interrupt
    /// it takes anyway (the scheduler tick) rather than one of its own.
    pub(crate) fn run_until_end(&mut self, shared: &Shared) {
        let _slack = TimerSlack::set(self.window);
        while !shared.workers_gone() {
            let now = Instant::now();
            if now >= self.close_at {
                self.close_window(shared);
                self.close_at = now + self.window;
            }
            std::thread::park_timeout(self.close_at.saturating_duration_since(Instant::now()));
        }
    }

    /// Once every worker has stopped (and deleted its timer): what is left
    /// in the rings goes into the last window. Returns the log's path.
    pub(crate) fn finish(mut self, shared: &Shared) -> PathBuf {
        self.close_window(shared);
        let lost: u64 = shared.workers.iter().map(|w| w.samples.dropped()).sum();
        if lost > 0 {
            eprintln!(
                "rill: the sampler fell behind and {lost} samples were lost; the estimates stand on the rest"
            );
        }
        self.log.path().to_path_buf()
    }

    /// Empties the rings into the open window and writes it.
    fn close_window(&mut self, shared: &Shared) {
        let mono = super::self_sample::mono_ns();
        let wall = mono.saturating_sub(self.mono_start);
        for (i, w) in shared.workers.iter().enumerate() {
            let (tally, total, signals) = &mut self.tallies[i];
            w.samples.drain(|word| {
                *total = total.saturating_add(tally.add(word));
            });
            *signals = u32::try_from(w.samples.take_signals()).unwrap_or(u32::MAX);
            let parked_ns = w.samples.take_parked(mono).min(wall);
            // Wall-clock timers count the periods a preempted worker
            // missed (their overrun): their parked time counts at one
            // sample a period.
            let cpu_now = w.samples.cpu_ns();
            let cpu = match (self.cpu_at[i], cpu_now) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
            if cpu_now.is_some() {
                self.cpu_at[i] = cpu_now;
            }
            let k = parked_samples(parked_ns, wall, cpu, self.period_ns);
            if k > 0 {
                let (tally, total, _) = &mut self.tallies[i];
                *total = total.saturating_add(tally.add(state::task(k, state::PARK)));
            }
        }
        let t = clock::now();
        let dur = t.wrapping_sub(self.window_start);
        let mut wrote = false;
        for (i, (tally, total, signals)) in self.tallies.iter_mut().enumerate() {
            if *total > 0 {
                let rec = tally.take(i as u32, self.window_start, dur, *total, *signals);
                self.log.enc.samples(&mut self.log.sink, &rec);
                *total = 0;
                wrote = true;
            }
        }
        if wrote {
            self.log.flush();
        }
        self.window_start = t;
        self.mono_start = mono;
    }
}

/// The calling thread's timer slack set for a while, the old one put back
/// on drop.
struct TimerSlack(Option<libc::c_ulong>);

impl TimerSlack {
    fn set(slack: Duration) -> Self {
        // SAFETY: PR_GET_TIMERSLACK takes no pointers; it returns the
        // calling thread's slack in nanoseconds, or -1.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        if old < 0 {
            return TimerSlack(None);
        }
        let ns = slack.as_nanos().min(libc::c_ulong::MAX as u128) as libc::c_ulong;
        // SAFETY: PR_SET_TIMERSLACK takes the slack by value.
        if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) } != 0 {
            return TimerSlack(None);
        }
        TimerSlack(Some(old as libc::c_ulong))
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: as in `set`. A value of 0 would mean "the default"
            // rather than 0, but the slack read back is never 0.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, old, 0, 0, 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timer_slack_is_put_back() {
        // SAFETY: as in `TimerSlack::set`.
        let get = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        let before = get();
        {
            let _s = TimerSlack::set(Duration::from_millis(10));
            assert_eq!(get(), 10_000_000);
        }
        assert_eq!(get(), before);
    }

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
        let w = t.take(1, 100, 50, 8, 3);
        assert_eq!(w.tasks, vec![(3, 1), (7, 2)]);
        assert_eq!((w.sched, w.spin, w.idle, w.parked), (1, 1, 1, 2));
        assert_eq!(
            w.running() + u64::from(w.sched + w.spin + w.idle + w.parked),
            8
        );
        assert_eq!(
            (w.worker, w.t, w.dur, w.total, w.signals),
            (1, 100, 50, 8, 3)
        );
        // Taken: the next window starts empty.
        let w = t.take(1, 150, 50, 0, 0);
        assert!(w.tasks.is_empty() && w.sched == 0 && w.parked == 0);
    }

    #[test]
    fn parked_time_is_counted_at_the_rate_awake_time_took_samples() {
        const MS: u64 = 1_000_000;
        // 10 ms window, 1 kHz: 4 ms parked, the 6 ms awake all on a core:
        // 4 samples; awake only half the time on a core: 2, as the awake
        // time took half its samples.
        assert_eq!(parked_samples(4 * MS, 10 * MS, Some(6 * MS), MS), 4);
        assert_eq!(parked_samples(4 * MS, 10 * MS, Some(3 * MS), MS), 2);
        // Without the CPU time, one a period.
        assert_eq!(parked_samples(4 * MS, 10 * MS, None, MS), 4);
        // No parked time, none; parked all the window, in periods.
        assert_eq!(parked_samples(0, 10 * MS, Some(6 * MS), MS), 0);
        assert_eq!(parked_samples(10 * MS, 10 * MS, Some(0), MS), 10);
        // A short park counts at least one sample.
        assert_eq!(parked_samples(MS / 3, 10 * MS, Some(9 * MS), MS), 1);
        // CPU time over the awake time (clock skew between the two) counts
        // as all of it; a worker preempted nearly throughout as a tenth.
        assert_eq!(parked_samples(4 * MS, 10 * MS, Some(8 * MS), MS), 4);
        assert_eq!(parked_samples(10 * MS, 20 * MS, Some(0), MS), 1);
    }
}
