//! Sample mode's clock: each worker samples itself. A per-worker POSIX timer
//! (delivered to the worker's own thread) raises [`signal()`] `HZ` times a
//! second; the handler reads the worker's state word and pushes it into the
//! worker's [`SampleRing`]. The sampler (`sampler.rs`) only empties
//! the rings into windows.
//!
//! Why the worker and not the sampler takes the sample: a thread that
//! wakes to read every worker's word needs a core, and where every core runs
//! a worker it takes one from a worker for the few microseconds of its wake.
//! Tasks that talk across workers then find their peer stopped and wait, and
//! the sampler, running just then, sees them waiting: on MC with round-robin
//! mapping on 2 workers and 2 cores the samples put one worker's waiting 15 to
//! 70 points above its clock-measured waiting. A timer signal stops only the
//! worker it samples, and samples it at the moment it stops.
//!
//! Two clocks (`README.md` beside this file, "Which clock"):
//! - `CLOCK_MONOTONIC` (the default): an interrupt of its own per sample, at
//!   a phase of its own per worker, paused while the worker is parked and
//!   resumed on its grid of ticks.
//! - The worker thread's CPU-time clock (`--monitor cpu`): checked by the
//!   kernel in the scheduler tick the core takes anyway, so no interrupt of
//!   its own, and nothing to pause (a parked thread uses no CPU time); at
//!   most one signal a tick, its overrun counting the periods of CPU time
//!   since the last. Samples at the tick see workers waiting on a neighbour
//!   that the same tick stopped a moment before.
//!
//! Either way parked time is measured by the clock (`park_begin`,
//! `park_end`), and the windows record how many signals took their samples,
//! which is what the statistical error goes with.
//!
//! The ring is single-producer (the handler, on the worker's thread) and
//! single-consumer (the sampler). The handler touches nothing but
//! atomics of the worker's shared half, so it is async-signal-safe and
//! leaves `errno` alone. The worker itself never pushes: what it adds (its
//! parked time) goes into counters, so that a signal arriving in the middle
//! cannot interleave two pushes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use crossbeam_utils::CachePadded;

use crate::monitor::sample_state as state;
use crate::task::Task;
use crate::thread_clock::{clock_ns, ThreadCpuClock};
use crate::worker::WorkerShared;

/// Samples a ring holds: 10 ms at the highest rate (50 kHz) is 500.
const RING: usize = 1024;

/// Periods a signal counts at most (its overrun: periods missed while the
/// worker was preempted, or of CPU time between two ticks; a longer stretch
/// counts a quarter of a ring).
const MAX_OVERRUN: libc::c_int = (RING / 4) as libc::c_int;

/// The state words a worker sampled, waiting for the sampler.
pub(crate) struct SampleRing {
    /// Pushed so far (written by the handler only).
    head: CachePadded<AtomicU64>,
    /// Taken so far (written by the sampler only).
    tail: CachePadded<AtomicU64>,
    /// Samples lost to a full ring (the sampler did not run for a
    /// whole ring's worth of samples).
    dropped: AtomicU64,
    /// Signals taken since the sampler last looked (the handler adds, the
    /// sampler takes them with a swap).
    signals: AtomicU64,
    words: Box<[AtomicU64]>,
    /// While the worker is parked: the start ([`mono_ns`]) of the parked
    /// time nobody has counted yet; 0 while it is not parked. The sampler
    /// thread counts up to each window's end and moves the start there
    /// (compare-exchange); the worker counts the rest when it wakes (swap
    /// to 0). Whoever moves the word counts the stretch before it, so no
    /// parked nanosecond is counted twice or lost.
    park_since: AtomicU64,
    /// Parked nanoseconds the worker counted on waking, not yet taken by
    /// the sampler (the worker adds, the sampler swaps to 0).
    parked_ns: AtomicU64,
    /// The worker thread's CPU-time clock, named when its timer starts;
    /// unset before. The sampler reads the worker's CPU time through it at
    /// each window's end.
    cpu_clock: ThreadCpuClock,
}

impl SampleRing {
    pub(crate) fn new() -> Self {
        SampleRing {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            dropped: AtomicU64::new(0),
            signals: AtomicU64::new(0),
            words: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            park_since: AtomicU64::new(0),
            parked_ns: AtomicU64::new(0),
            cpu_clock: ThreadCpuClock::unset(),
        }
    }

    /// The calling thread (the worker) names its CPU-time clock.
    pub(crate) fn set_cpu_clock(&self) {
        self.cpu_clock.set_to_current();
    }

    /// The sampler: the worker's CPU time so far ([`mono_ns`]'s
    /// unit), `None` before its timer started or after its thread ended.
    pub(crate) fn cpu_ns(&self) -> Option<u64> {
        self.cpu_clock.cpu_ns()
    }

    /// The worker is about to park at `now` ([`mono_ns`]).
    pub(crate) fn park_begin(&self, now: u64) {
        // Release: pairs with the sampler's Acquire load in `take_parked`.
        self.park_since.store(now.max(1), Ordering::Release);
    }

    /// The worker woke at `now` ([`mono_ns`]): the parked time not yet
    /// counted, up to `now`, is added to the parked nanoseconds.
    pub(crate) fn park_end(&self, now: u64) {
        // AcqRel: pairs with the sampler's compare-exchange.
        let since = self.park_since.swap(0, Ordering::AcqRel);
        if since == 0 {
            return;
        }
        // Relaxed: a counter the sampler swaps; the window it lands in is
        // the one whose end follows, which is all the windows need.
        self.parked_ns
            .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
    }

    /// The sampler at a window's end `now`: the worker's parked
    /// nanoseconds since the last window's end (the parks it woke from, and
    /// the park it is in, up to `now`).
    pub(crate) fn take_parked(&self, now: u64) -> u64 {
        // Relaxed: see `park_end`.
        let woke = self.parked_ns.swap(0, Ordering::Relaxed);
        // Acquire: pairs with the worker's stores of the start.
        let since = self.park_since.load(Ordering::Acquire);
        if since == 0 || since >= now {
            return woke;
        }
        // AcqRel: against the worker's swap on waking; exactly one wins.
        match self
            .park_since
            .compare_exchange(since, now, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => woke + (now - since),
            // It woke meanwhile: its stretch is in `parked_ns`, next window.
            Err(_) => woke,
        }
    }

    /// The sampler: the signals taken since it last asked.
    pub(crate) fn take_signals(&self) -> u64 {
        // Relaxed: a counter; see `park_end`.
        self.signals.swap(0, Ordering::Relaxed)
    }

    /// The handler's push (the only producer).
    #[inline]
    fn push(&self, word: u64) {
        // Relaxed: only this thread writes `head`.
        let h = self.head.load(Ordering::Relaxed);
        // Acquire: pairs with the consumer's Release store of `tail`, so the
        // slot it gave back is no longer being read.
        let t = self.tail.load(Ordering::Acquire);
        if h.wrapping_sub(t) >= RING as u64 {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.words[h as usize % RING].store(word, Ordering::Relaxed);
        // Release: pairs with the consumer's Acquire load of `head`, which
        // then sees the word stored above.
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// The sampler's take (the only consumer): calls `f` with every
    /// word pushed since the last take, oldest first.
    pub(crate) fn drain(&self, mut f: impl FnMut(u64)) {
        // Relaxed: only this thread writes `tail`.
        let t = self.tail.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release store of `head`.
        let h = self.head.load(Ordering::Acquire);
        let mut i = t;
        while i != h {
            f(self.words[i as usize % RING].load(Ordering::Relaxed));
            i = i.wrapping_add(1);
        }
        // Release: pairs with the producer's Acquire load of `tail`: the
        // slots read above may be written again.
        self.tail.store(h, Ordering::Release);
    }

    /// Samples lost to a full ring so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock parked time is counted in.
pub(crate) fn mono_ns() -> u64 {
    // CLOCK_MONOTONIC is always there.
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// The signal the sample timers raise: a real-time signal, so that it
/// collides with no classic one a program may use (`SIGPROF`'s profilers).
pub(crate) fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

static INSTALL: Once = Once::new();

/// What a sample records: the worker's own state word `now`, unless a task
/// runs (`task`, the thread's current-task word, is set), which is then
/// named: spinning if `now` says that it spins, else running. So a dispatch
/// stores nothing for the sampler: the worker sets the current-task word
/// for every dispatch anyway. A sample taken between two dispatches is the
/// scheduler's (`SCHED`), which `rill-mon` spreads over the window's
/// running samples, as a period-recording run charges that step to a
/// period.
#[inline]
fn sampled_word(now: u64, task: *const Task) -> u64 {
    if task.is_null() {
        return now;
    }
    // SAFETY: the worker sets the current-task word just before it resumes
    // a task and clears it right after the resume returns, before the task
    // can end or be freed (`WorkerLocal::dispatch`); the signal comes on
    // that worker's own thread, so the task is alive while the word names
    // it.
    let id = unsafe { (*task).id };
    let spin = state::task(id, state::SPIN);
    if now == spin {
        spin
    } else {
        state::task(id, state::RUN)
    }
}

/// The handler: the timer's value names the worker's shared half.
extern "C" fn on_sample(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler; a
    // timer signal carries the timer's `sigev_value`.
    let p = unsafe { (*info).si_value().sival_ptr } as *const WorkerShared;
    if p.is_null() {
        return;
    }
    // SAFETY: the value is the worker's `&WorkerShared`, set by
    // [`SampleTimer::start`] on the worker's own thread. The timer is
    // deleted by that thread before it leaves the run, and a signal it
    // raised is delivered to that thread (directed with SIGEV_THREAD_ID), at
    // the latest when `timer_delete` returns; the run's `Shared`, which holds
    // the `WorkerShared`, outlives its worker threads.
    let w = unsafe { &*p };
    // Relaxed: the worker stores its own word on this thread; a signal
    // handler sees the thread's own stores in program order.
    let word = sampled_word(w.now.load(Ordering::Relaxed), crate::tls::task().cast());
    // The periods of CPU time since the last signal beyond the first come
    // as an overrun count (the kernel checks the timer once a tick, which
    // may hold several periods): each counts as a sample of the state the
    // worker is in now, so that samples stay in proportion to CPU time.
    // SAFETY: as above; a timer signal's siginfo has its overrun count.
    let overrun = unsafe { (*info).si_overrun() }.clamp(0, MAX_OVERRUN);
    for _ in 0..=overrun {
        w.samples.push(word);
    }
    // Relaxed: a counter the sampler swaps (`take_signals`).
    w.samples.signals.fetch_add(1, Ordering::Relaxed);
}

/// Installs the handler once per process: SA_RESTART (a task's read or
/// write is resumed, not failed with EINTR), SA_ONSTACK (on the worker's
/// alternate stack, not on a task's stack near its guard page).
fn install() -> bool {
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is a valid starting value; the handler
        // is an `extern "C"` function of the SA_SIGINFO signature.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sample as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(signal(), &sa, std::ptr::null_mut());
        }
    });
    // SAFETY: reads the current action into a zeroed struct.
    unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal(), std::ptr::null(), &mut cur) == 0
            && cur.sa_sigaction == on_sample as *const () as usize
    }
}

/// A worker's sample timer, deleted on drop (on the worker's thread).
pub(crate) struct SampleTimer {
    id: libc::timer_t,
    period_ns: u64,
    /// On the wall clock (the default): when its first tick was due
    /// ([`mono_ns`]), the grid its ticks stay on across parks. `None` on
    /// the worker's CPU-time clock (`--monitor cpu`), which needs no
    /// pausing.
    wall_epoch: Option<u64>,
}

impl SampleTimer {
    /// Starts sampling the calling thread, the worker whose shared half is
    /// `me`, every `1/hz` seconds of the wall clock, the first sample
    /// `phase` (0..1) of a period from now (so that the workers' interrupts
    /// do not fall together), or with `cpu` every `1/hz` seconds of its CPU
    /// time. `Err` (with the reason) when the system refuses.
    pub(crate) fn start(me: &WorkerShared, hz: u32, cpu: bool, phase: f64) -> Result<Self, String> {
        if !install() {
            return Err("cannot install the sample signal's handler".into());
        }
        // SAFETY: a zeroed sigevent is a valid starting value; we fill in
        // the SIGEV_THREAD_ID notification for this thread.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signal();
        sev.sigev_value = libc::sigval {
            sival_ptr: me as *const WorkerShared as *mut libc::c_void,
        };
        // SAFETY: gettid has no preconditions.
        sev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let clock = if cpu {
            libc::CLOCK_THREAD_CPUTIME_ID
        } else {
            libc::CLOCK_MONOTONIC
        };
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to a filled sigevent and to the id.
        if unsafe { libc::timer_create(clock, &mut sev, &mut id) } != 0 {
            return Err(format!("timer_create: {}", std::io::Error::last_os_error()));
        }
        let period_ns = 1_000_000_000u64 / u64::from(hz.max(1));
        // Owned from here: dropped (deleted) on the error paths below.
        let mut timer = SampleTimer {
            id,
            period_ns,
            wall_epoch: None,
        };
        if cpu {
            me.samples.set_cpu_clock();
            timer.arm(period_ns, 0)?;
        } else {
            let first = ((period_ns as f64) * phase.clamp(0.0, 1.0)) as u64 + 1;
            let epoch = mono_ns() + first;
            timer.wall_epoch = Some(epoch);
            timer.arm(epoch, libc::TIMER_ABSTIME)?;
        }
        Ok(timer)
    }

    /// Whether the timer runs on the wall clock, and so must be paused
    /// while the worker is parked ([`pause`](Self::pause)).
    pub(crate) fn is_wall(&self) -> bool {
        self.wall_epoch.is_some()
    }

    /// Stops a wall-clock timer before a park (a CPU-time one stops by
    /// itself).
    pub(crate) fn pause(&self) {
        if self.is_wall() {
            if let Err(e) = self.set(
                &libc::itimerspec {
                    it_interval: ts(0),
                    it_value: ts(0),
                },
                0,
            ) {
                // Unexpected: the timer exists. The run goes on.
                eprintln!("rill: sample timer: {e}");
            }
        }
    }

    /// Runs a wall-clock timer again after a park, on its old grid of
    /// ticks, from the first tick after `now`: restarted a period after
    /// each wake, it would never sample a worker that parks and wakes more
    /// often than once a period, while its parked time is counted.
    pub(crate) fn resume(&self, now: u64) {
        let Some(epoch) = self.wall_epoch else {
            return;
        };
        let p = self.period_ns.max(1);
        let next = if now < epoch {
            epoch
        } else {
            epoch + ((now - epoch) / p + 1) * p
        };
        if let Err(e) = self.arm(next, libc::TIMER_ABSTIME) {
            // Unexpected: the timer exists. The run goes on; the samples
            // miss this worker from here.
            eprintln!("rill: sample timer: {e}");
        }
    }

    /// Arms the timer to expire at `first_ns` (absolute with
    /// `TIMER_ABSTIME`, else relative) and every period after it.
    fn arm(&self, first_ns: u64, flags: libc::c_int) -> Result<(), String> {
        self.set(
            &libc::itimerspec {
                it_interval: ts(self.period_ns),
                it_value: ts(first_ns),
            },
            flags,
        )
    }

    fn set(&self, spec: &libc::itimerspec, flags: libc::c_int) -> Result<(), String> {
        // SAFETY: `id` is this value's timer; the spec is valid.
        let r = unsafe { libc::timer_settime(self.id, flags, spec, std::ptr::null_mut()) };
        if r != 0 {
            return Err(format!(
                "timer_settime: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

/// `ns` nanoseconds as a `timespec`.
fn ts(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

impl Drop for SampleTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a timer this value created and deletes once.
        unsafe {
            libc::timer_delete(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_names_the_running_task_from_the_current_task_word() {
        let t = Task::new(42, 0, "t".into(), 0, None);
        let idle = state::IDLE;
        assert_eq!(
            sampled_word(idle, std::ptr::null()),
            idle,
            "no task: the worker's word"
        );
        assert_eq!(
            sampled_word(state::SCHED, &t),
            state::task(42, state::RUN),
            "a task runs: named, though the worker stored nothing for it"
        );
        assert_eq!(
            sampled_word(state::task(42, state::SPIN), &t),
            state::task(42, state::SPIN),
            "the running task spins"
        );
        assert_eq!(
            sampled_word(state::task(7, state::SPIN), &t),
            state::task(42, state::RUN),
            "a stale spin of another task does not hide the running one"
        );
    }

    #[test]
    fn parked_time_is_counted_once_between_the_sampler_and_the_worker() {
        let r = SampleRing::new();
        assert_eq!(r.take_parked(50_000), 0, "not parked");
        r.park_begin(20_000);
        // The sampler's window ends at 25,500: 5,500 ns parked so far.
        assert_eq!(r.take_parked(25_500), 5_500);
        // Counted up to the window's end: nothing more at the same instant.
        assert_eq!(r.take_parked(25_500), 0);
        // The worker wakes at 27,999: the rest, for the next window.
        r.park_end(27_999);
        assert_eq!(r.take_parked(90_000), 2_499);
        assert_eq!(r.take_parked(90_000), 0, "awake again");
        // Two parks within one window add up.
        r.park_begin(30_000);
        r.park_end(31_200);
        r.park_begin(32_100);
        r.park_end(32_900);
        assert_eq!(r.take_parked(95_000), 2_000);
        // Nothing was pushed: the worker never pushes into the ring.
        let mut n = 0;
        r.drain(|_| n += 1);
        assert_eq!(n, 0);
    }

    #[test]
    fn a_timer_samples_cpu_time_and_not_sleep() {
        // A real timer on this thread at 1 kHz of CPU time, its handler
        // installed (the value names a worker's shared half).
        let me = crate::worker::WorkerShared::new(None);
        let t = SampleTimer::start(&me, 1000, true, 0.0).expect("a timer");
        // Asleep: no CPU time, no samples.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut asleep = 0;
        me.samples.drain(|_| asleep += 1);
        // Busy: samples come with CPU time. Burn CPU in 40 ms steps until
        // 20 samples have come (about 20 ms of CPU on a quiet host), or 2 s
        // of CPU. Where the host shares the core, the kernel checks the
        // timer once a tick, a signal carries at most `MAX_OVERRUN`
        // periods, and some periods are lost, so how much CPU time that
        // takes is the host's; that samples come while busy and none while
        // asleep is the behaviour, and a 1 kHz timer of CPU time cannot
        // fire more often than once a millisecond of it.
        let cpu = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: writes the timespec it is given.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let c0 = cpu();
        let mut x = 1u64;
        let mut busy = 0;
        let mut step_end = c0;
        while busy < 20 && step_end - c0 < 2_000_000_000 {
            step_end += 40_000_000;
            while cpu() < step_end {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            me.samples.drain(|_| busy += 1);
        }
        drop(t);
        me.samples.drain(|_| busy += 1);
        let cpu_ms = (cpu() - c0) / 1_000_000;
        let signals = me.samples.take_signals();
        assert!(asleep <= 2, "{asleep} samples while asleep");
        assert!(busy >= 20, "{busy} samples in {cpu_ms} ms of CPU at 1 kHz");
        assert!(
            busy <= cpu_ms + 2,
            "{busy} samples in {cpu_ms} ms of CPU at 1 kHz: more than one a period"
        );
        assert!(
            signals >= 1 && signals <= busy,
            "{signals} signals, {busy} samples"
        );
    }

    #[test]
    fn a_wall_clock_timer_samples_sleep_and_pauses() {
        let me = crate::worker::WorkerShared::new(None);
        let t = SampleTimer::start(&me, 1000, false, 0.5).expect("a timer");
        assert!(t.is_wall());
        // Asleep, a wall-clock timer still fires: about 30 in 30 ms.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut n = 0;
        me.samples.drain(|_| n += 1);
        assert!(n >= 15, "{n} samples in 30 ms at 1 kHz");
        // Paused, it does not.
        t.pause();
        me.samples.drain(|_| {});
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut paused = 0;
        me.samples.drain(|_| paused += 1);
        assert_eq!(paused, 0);
        // Resumed, on its grid, it fires again.
        t.resume(mono_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(t);
        let mut m = 0;
        me.samples.drain(|_| m += 1);
        assert!(m >= 10, "{m} samples after resuming");
    }

    #[test]
    fn a_ring_hands_over_words_in_order_and_drops_when_full() {
        let r = SampleRing::new();
        for w in 0..10 {
            r.push(w);
        }
        let mut got = Vec::new();
        r.drain(|w| got.push(w));
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        for w in 0..(RING as u64 + 5) {
            r.push(w);
        }
        assert_eq!(r.dropped(), 5);
        let mut n = 0;
        r.drain(|_| n += 1);
        assert_eq!(n, RING);
    }
}
