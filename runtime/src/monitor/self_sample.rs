//! Sample mode's clock: each worker samples itself. A per-worker POSIX timer
//! (`CLOCK_MONOTONIC`, delivered to the worker's own thread) raises
//! [`signal()`] `HZ` times a second; the handler reads the worker's state
//! word and pushes it into the worker's [`SampleRing`]. The sampler thread
//! (`sampler.rs`) only empties the rings into windows.
//!
//! Why the worker and not the sampler thread takes the sample: a thread that
//! wakes to read every worker's word needs a core, and where every core runs
//! a worker it takes one from a worker for the few microseconds of its wake.
//! Tasks that talk across workers then find their peer stopped and wait, and
//! the sampler, running just then, sees them waiting: on MC with round-robin
//! mapping on 2 workers and 2 cores the samples put one worker's waiting 15 to
//! 70 points above its clock-measured waiting. A timer signal stops only the
//! worker it samples, and samples it at the moment it stops.
//!
//! The ring is single-producer (the handler, on the worker's thread) and
//! single-consumer (the sampler thread). The handler touches nothing but
//! atomics of the worker's shared half, so it is async-signal-safe and
//! leaves `errno` alone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use crossbeam_utils::CachePadded;

use crate::worker::WorkerShared;

/// Samples a ring holds: 10 ms at the highest rate (50 kHz) is 500.
const RING: usize = 1024;

/// Missed ticks a signal counts at most (a worker stopped longer is
/// counted for its last quarter of a ring).
const MAX_OVERRUN: libc::c_int = (RING / 4) as libc::c_int;

/// The state words a worker sampled, waiting for the sampler thread.
pub(crate) struct SampleRing {
    /// Pushed so far (written by the handler only).
    head: CachePadded<AtomicU64>,
    /// Taken so far (written by the sampler thread only).
    tail: CachePadded<AtomicU64>,
    /// Samples lost to a full ring (the sampler thread did not run for a
    /// whole ring's worth of samples).
    dropped: AtomicU64,
    words: Box<[AtomicU64]>,
    /// While the worker is parked (its timer paused): the start
    /// ([`mono_ns`]) of the parked time nobody has counted yet; 0 while it
    /// is not parked. The sampler thread counts up to each window's end
    /// and moves the start there (compare-exchange); the worker counts the
    /// rest when it wakes (swap to 0). Whoever moves the word counts the
    /// ticks of the stretch before it, so every tick is counted once.
    park_since: AtomicU64,
    /// The timer's grid: its first tick ([`mono_ns`]) and period (ns), set
    /// once when the timer starts, before the worker first parks. Parked
    /// time is counted in the grid's ticks that fall in it, the samples
    /// the timer would have taken: counting it by its length, rounded per
    /// park, lost every park shorter than half a period, and a worker that
    /// parks often for a fraction of a period was estimated busier than it
    /// was (up to 12 points with another process on one of two cores).
    grid_epoch: AtomicU64,
    grid_period: AtomicU64,
}

/// How many ticks of the grid `epoch + j * period` (j >= 0) fall in
/// `(a, b]`.
pub(crate) fn ticks_between(epoch: u64, period: u64, a: u64, b: u64) -> u64 {
    let upto = |x: u64| {
        if x < epoch || period == 0 {
            0
        } else {
            (x - epoch) / period + 1
        }
    };
    upto(b).saturating_sub(upto(a))
}

impl SampleRing {
    pub(crate) fn new() -> Self {
        SampleRing {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            dropped: AtomicU64::new(0),
            words: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            park_since: AtomicU64::new(0),
            grid_epoch: AtomicU64::new(0),
            grid_period: AtomicU64::new(0),
        }
    }

    /// The timer's grid (see the fields).
    pub(crate) fn set_grid(&self, epoch_ns: u64, period_ns: u64) {
        // Relaxed: read after an Acquire load of `park_since` that the
        // worker's Release store (in `park_begin`, after this) publishes,
        // or by the worker itself.
        self.grid_epoch.store(epoch_ns, Ordering::Relaxed);
        self.grid_period.store(period_ns, Ordering::Relaxed);
    }

    fn ticks(&self, a: u64, b: u64) -> u64 {
        ticks_between(
            self.grid_epoch.load(Ordering::Relaxed),
            self.grid_period.load(Ordering::Relaxed),
            a,
            b,
        )
    }

    /// The worker is about to park, its timer paused: the ticks after
    /// `since` (the last one the timer delivered) are counted as parked.
    pub(crate) fn park_begin(&self, since: u64) {
        // Release: pairs with the sampler's Acquire load in `credit_parked`.
        self.park_since.store(since.max(1), Ordering::Release);
    }

    /// The worker woke at `now` ([`mono_ns`]) and its timer is not yet
    /// running again: the parked ticks not yet counted, up to `now`, go
    /// into its ring as one word, `PARK` with their number in the task
    /// bits. With the timer paused no handler pushes meanwhile (the ring
    /// has one producer at a time).
    pub(crate) fn park_end(&self, now: u64) {
        // AcqRel: pairs with the sampler's compare-exchange.
        let since = self.park_since.swap(0, Ordering::AcqRel);
        if since == 0 {
            return;
        }
        let k = self.ticks(since, now);
        if k > 0 {
            self.push(crate::monitor::sampler::state::task(
                k,
                crate::monitor::sampler::state::PARK,
            ));
        }
    }

    /// The sampler thread at a window's end `now`: the ticks of a worker
    /// parked since before it, not counted yet (0 if it is not parked).
    pub(crate) fn credit_parked(&self, now: u64) -> u64 {
        // Acquire: pairs with the worker's stores of the start.
        let since = self.park_since.load(Ordering::Acquire);
        if since == 0 || since >= now {
            return 0;
        }
        // AcqRel: against the worker's swap on waking; exactly one wins.
        match self
            .park_since
            .compare_exchange(since, now, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => self.ticks(since, now),
            Err(_) => 0,
        }
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

    /// The sampler thread's take (the only consumer): calls `f` with every
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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the valid timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The signal the sample timers raise: a real-time signal, so that it
/// collides with no classic one a program may use (`SIGPROF`'s profilers).
pub(crate) fn signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

static INSTALL: Once = Once::new();

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
    let word = w.now.load(Ordering::Relaxed);
    // Ticks that expired while the thread was not running (another thread
    // had its core) come as an overrun count: the worker was stopped in
    // the state it is in now, so each counts as a sample of it. Without
    // them a preempted worker's running time would lose samples that its
    // parked time, counted by the clock, does not.
    // SAFETY: as above; a timer signal's siginfo has its overrun count.
    let overrun = unsafe { (*info).si_overrun() }.clamp(0, MAX_OVERRUN);
    for _ in 0..=overrun {
        w.samples.push(word);
    }
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
    /// When its first tick was due ([`mono_ns`]): the grid the ticks stay
    /// on across pauses.
    epoch_ns: u64,
}

impl SampleTimer {
    /// Starts sampling the calling thread, the worker whose shared half is
    /// `me`, `hz` times a second, the first sample `phase` (0..1) of a
    /// period from now. `None` (with the reason) when the system refuses.
    pub(crate) fn start(me: &WorkerShared, hz: u32, phase: f64) -> Result<Self, String> {
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
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to a filled sigevent and to the id.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) } != 0 {
            return Err(format!("timer_create: {}", std::io::Error::last_os_error()));
        }
        let period_ns = 1_000_000_000u64 / u64::from(hz.max(1));
        let first = ((period_ns as f64) * phase.clamp(0.0, 1.0)) as u64 + 1;
        let timer = SampleTimer {
            id,
            period_ns,
            epoch_ns: mono_ns() + first,
        };
        me.samples.set_grid(timer.epoch_ns, period_ns);
        timer.arm_at(timer.epoch_ns)?;
        Ok(timer)
    }

    /// Stops the timer before a park. Returns the time of the last tick
    /// it delivered (on its grid): the ticks after it are the park's to
    /// count ([`SampleRing::park_begin`]).
    pub(crate) fn pause(&self) -> u64 {
        let stop = libc::itimerspec {
            it_interval: ts(0),
            it_value: ts(0),
        };
        // SAFETY: an all-zero `itimerspec` is valid.
        let mut old: libc::itimerspec = unsafe { std::mem::zeroed() };
        // SAFETY: `id` is this value's timer; both specs are valid.
        let r = unsafe { libc::timer_settime(self.id, 0, &stop, &mut old) };
        let now = mono_ns();
        if r != 0 {
            // Unexpected: the timer exists. The run goes on; this park's
            // ticks may be counted from a little late.
            eprintln!("rill: sample timer: {}", std::io::Error::last_os_error());
            return now;
        }
        let left = (old.it_value.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(old.it_value.tv_nsec as u64);
        if left == 0 {
            return now;
        }
        // The next tick was due `left` after the kernel stopped the timer,
        // a little before `now`: the grid's tick nearest `now + left`.
        let next = now.saturating_add(left);
        if next < self.epoch_ns {
            return self.epoch_ns - 1;
        }
        let j = (next - self.epoch_ns + self.period_ns / 2) / self.period_ns;
        (self.epoch_ns + j * self.period_ns)
            .saturating_sub(self.period_ns)
            .max(1)
    }

    /// Runs the timer again after a park, on its old grid of ticks, from
    /// the first tick after `now` (up to which the park counted them): a
    /// worker that parks and wakes more often than once a period would
    /// otherwise never be sampled running, while its parked time is
    /// counted.
    pub(crate) fn resume(&self, now: u64) {
        let next = if now < self.epoch_ns {
            self.epoch_ns
        } else {
            self.epoch_ns + ((now - self.epoch_ns) / self.period_ns + 1) * self.period_ns
        };
        if let Err(e) = self.arm_at(next) {
            // Unexpected: the timer exists. The run goes on; the samples
            // miss this worker from here.
            eprintln!("rill: sample timer: {e}");
        }
    }

    /// Arms the timer to tick at `first_ns` ([`mono_ns`], absolute: a tick
    /// already past fires at once) and every period after it.
    fn arm_at(&self, first_ns: u64) -> Result<(), String> {
        let spec = libc::itimerspec {
            it_interval: ts(self.period_ns),
            it_value: ts(first_ns),
        };
        // SAFETY: `id` is this value's timer; the spec is valid.
        let r = unsafe {
            libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
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
    fn parked_ticks_are_counted_once_between_the_sampler_and_the_worker() {
        use crate::monitor::sampler::state;
        let r = SampleRing::new();
        // A grid of a tick every 1,000 ns from 10,000.
        r.set_grid(10_000, 1_000);
        assert_eq!(r.credit_parked(50_000), 0, "not parked");
        // Parked after the tick at 20,000: the ticks from 21,000 on are the
        // park's.
        r.park_begin(20_000);
        // The sampler's window ends at 25,500: 21, 22, 23, 24 and 25.
        assert_eq!(r.credit_parked(25_500), 5);
        // Counted up to the window's end: nothing more at the same instant.
        assert_eq!(r.credit_parked(25_500), 0);
        // The worker wakes at 27,999: 26 and 27.
        r.park_end(27_999);
        let mut words = Vec::new();
        r.drain(|w| words.push(w));
        assert_eq!(words, vec![state::task(2, state::PARK)]);
        assert_eq!(r.credit_parked(90_000), 0, "awake again");
        // A park shorter than a period that holds a tick counts it; one
        // that holds none counts nothing (and pushes nothing).
        r.park_begin(30_000);
        r.park_end(31_200);
        r.park_begin(32_100);
        r.park_end(32_900);
        r.drain(|w| words.push(w));
        assert_eq!(words.len(), 2);
        assert_eq!(words[1], state::task(1, state::PARK));
    }

    #[test]
    fn grid_ticks_are_counted_in_half_open_spans() {
        assert_eq!(ticks_between(100, 10, 0, 99), 0);
        assert_eq!(ticks_between(100, 10, 0, 100), 1);
        assert_eq!(ticks_between(100, 10, 100, 100), 0);
        assert_eq!(ticks_between(100, 10, 100, 110), 1);
        assert_eq!(ticks_between(100, 10, 99, 131), 4);
        assert_eq!(ticks_between(100, 10, 131, 99), 0);
        // Spans cut anywhere add up to the whole.
        let cuts = [3u64, 117, 118, 150, 151, 999, 1000, 5003];
        let sum: u64 = cuts
            .windows(2)
            .map(|w| ticks_between(100, 10, w[0], w[1]))
            .sum();
        assert_eq!(sum, ticks_between(100, 10, 3, 5003));
    }

    #[test]
    fn a_paused_timer_names_the_last_tick_it_delivered() {
        // A real timer on this thread at 1 kHz, its handler installed (the
        // value names a worker's shared half).
        let me = crate::worker::WorkerShared::new(None);
        let t = SampleTimer::start(&me, 1000, 0.5).expect("a timer");
        std::thread::sleep(std::time::Duration::from_millis(5));
        let before = mono_ns();
        let last = t.pause();
        let after = mono_ns();
        // On the grid, at most a period before the pause.
        assert_eq!((last - t.epoch_ns) % t.period_ns, 0, "{last} off the grid");
        assert!(
            last <= after && last + t.period_ns + 200_000 >= before,
            "{last} vs {before}"
        );
        // Resumed, it ticks again (the handler pushes into the ring).
        let mut n = 0;
        me.samples.drain(|_| n += 1);
        assert!(n >= 3, "{n} samples in 5 ms at 1 kHz");
        t.resume(mono_ns());
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(t);
        let mut m = 0;
        me.samples.drain(|_| m += 1);
        assert!(m >= 3, "{m} samples after resuming");
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
