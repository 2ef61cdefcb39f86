//! The monitoring clock.
//!
//! [`now`] returns raw *ticks*: the time stamp counter on x86_64 (a few
//! nanoseconds per read, no system call), elsewhere nanoseconds since a
//! process-wide origin. Logs store raw ticks; a [`Calibration`] (`rill-log`'s
//! type, stored in every log header, see [`RunClock`]) converts them to
//! nanoseconds.
//!
//! On x86_64 the tick source assumes an invariant TSC (constant rate, synchronised
//! across cores), which every x86_64 CPU of the last decade provides.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rill_log::Calibration;

/// Reads the clock, in raw ticks.
///
/// On x86_64 this is `rdtsc`; ticks are CPU reference cycles. Elsewhere it is
/// nanoseconds since the first call of [`now`] in this
/// process.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` is available on every x86_64 CPU; it only reads a counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        fallback::now()
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod fallback {
    use std::sync::OnceLock;
    use std::time::Instant;

    static ORIGIN: OnceLock<Instant> = OnceLock::new();

    #[inline]
    pub(super) fn now() -> u64 {
        let origin = *ORIGIN.get_or_init(Instant::now);
        u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Whether [`now`] counts nanoseconds exactly (so no measurement is needed).
pub const TICKS_ARE_NANOS: bool = !cfg!(target_arch = "x86_64");

/// How long the first run of a process measures the tick rate before it
/// starts ([`RunClock::start`]): a provisional rate, good to about 1e-3 (a
/// paired read is good to some tens of nanoseconds), which only a log cut
/// off by a crash keeps.
pub const PROVISIONAL_CALIBRATION_TIME: Duration = Duration::from_micros(50);

/// The least span a rate is measured over for a run's finished logs (to
/// about 2e-4): a run that started from a provisional rate and ends sooner
/// waits out the rest of this at its end.
pub const FIRST_CALIBRATION_TIME: Duration = Duration::from_micros(250);

/// Runs shorter than this keep the rate they started with, when that rate
/// was measured over [`FIRST_CALIBRATION_TIME`] or longer.
pub const MIN_REFINE_SPAN: Duration = Duration::from_millis(2);

/// The best tick rate measured in this process, and over how long.
static RATE: std::sync::Mutex<Option<(f64, Duration)>> = std::sync::Mutex::new(None);

/// The clock of one monitored run: a [`Calibration`] to write into the log
/// headers when the run starts, and the paired reading it started from, so
/// that the rate can be measured again over the whole run when it ends.
///
/// A run does not busy-wait to calibrate before it starts (3 ms per process
/// at first, then 250 µs, as much as a short benchmark's whole monitoring
/// cost): the first run of a process measures a provisional rate for
/// [`PROVISIONAL_CALIBRATION_TIME`], and measures it again from its start to
/// its end, over at least [`FIRST_CALIBRATION_TIME`]; later runs start from
/// the process's best rate and measure again if they last at least
/// [`MIN_REFINE_SPAN`]. The runtime writes the measured rate into the
/// finished logs' headers. A log cut off by a crash keeps the rate it
/// started with.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    /// The calibration the run's logs start with.
    pub cal: Calibration,
    start: Instant,
    start_ticks: u64,
    /// Whether `cal`'s rate is provisional (measured over less than
    /// [`FIRST_CALIBRATION_TIME`]).
    provisional: bool,
}

impl RunClock {
    /// Takes the process's best rate so far (a provisional one if there is
    /// none) and the current time.
    #[cfg(test)]
    pub fn start() -> Self {
        Self::start_since(ClockMark::now())
    }

    /// As [`start`](Self::start), a provisional rate measured from `mark`
    /// on: the work done since (making the log directory, taking its lock)
    /// counts toward [`PROVISIONAL_CALIBRATION_TIME`] instead of a wait of
    /// its own.
    pub fn start_since(mark: ClockMark) -> Self {
        let (rate, span) = {
            let best = *RATE.lock().unwrap_or_else(|e| e.into_inner());
            best.unwrap_or_else(|| {
                (
                    mark.rate(PROVISIONAL_CALIBRATION_TIME),
                    PROVISIONAL_CALIBRATION_TIME,
                )
            })
        };
        let start_unix_ns = unix_now_ns();
        let (start, start_ticks) = paired_read();
        RunClock {
            cal: Calibration {
                ticks_per_sec: rate,
                start_ticks,
                start_unix_ns,
            },
            start,
            start_ticks,
            provisional: span < FIRST_CALIBRATION_TIME && !TICKS_ARE_NANOS,
        }
    }

    /// The tick rate measured from the run's start to now, if the run lasted
    /// at least [`MIN_REFINE_SPAN`] (or started from a provisional rate: it
    /// then waits until [`FIRST_CALIBRATION_TIME`] has passed) and the
    /// measurement is sane; the process keeps it for later runs when it
    /// spans longer than its best so far.
    pub fn refine(&self) -> Option<f64> {
        if TICKS_ARE_NANOS {
            return None;
        }
        if self.provisional {
            while self.start.elapsed() < FIRST_CALIBRATION_TIME {
                std::hint::spin_loop();
            }
        }
        let (end, end_ticks) = paired_read();
        let span = end.duration_since(self.start);
        if span < MIN_REFINE_SPAN && !self.provisional {
            return None;
        }
        let rate = end_ticks.wrapping_sub(self.start_ticks) as f64 / span.as_secs_f64();
        // A counter that stalled or jumped (a migrated VM) is not a rate.
        let close = (rate / self.cal.ticks_per_sec - 1.0).abs() < 0.05;
        if !rate.is_finite() || rate <= 0.0 || !close {
            return None;
        }
        let mut best = RATE.lock().unwrap_or_else(|e| e.into_inner());
        if best.is_none_or(|(_, s)| span > s) {
            *best = Some((rate, span));
        }
        Some(rate)
    }
}

/// Measures the tick rate against [`Instant`] for `span` (busy waiting) and
/// records the current tick and wall-clock time.
#[cfg(test)]
pub fn calibrate_for(span: Duration) -> Calibration {
    let start_unix_ns = unix_now_ns();
    let mark = ClockMark::now();
    Calibration {
        ticks_per_sec: mark.rate(span),
        start_ticks: mark.t,
        start_unix_ns,
    }
}

/// A paired reading of `Instant` and the tick counter, from which a rate is
/// measured later ([`RunClock::start_since`]).
#[derive(Clone, Copy, Debug)]
pub struct ClockMark {
    i: Instant,
    t: u64,
}

impl ClockMark {
    /// Now.
    pub fn now() -> Self {
        let (i, t) = paired_read();
        ClockMark { i, t }
    }

    /// The tick rate from this mark to now, waiting until `span` has passed
    /// since it (busy waiting).
    fn rate(&self, span: Duration) -> f64 {
        if TICKS_ARE_NANOS {
            return 1e9;
        }
        let (i1, t1) = loop {
            let (i, t) = paired_read();
            if i.duration_since(self.i) >= span {
                break (i, t);
            }
            std::hint::spin_loop();
        };
        let rate = t1.wrapping_sub(self.t) as f64 / i1.duration_since(self.i).as_secs_f64();
        if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            // A broken counter: something sane rather than a division by 0.
            1e9
        }
    }
}

/// Reads `Instant` and the tick counter as close together as possible: of a few
/// tries, keeps the one where the two tick reads bracketing `Instant::now` are
/// nearest, and returns the midpoint.
fn paired_read() -> (Instant, u64) {
    let mut best: Option<(u64, Instant, u64)> = None;
    for _ in 0..5 {
        let a = now();
        let i = Instant::now();
        let b = now();
        let width = b.wrapping_sub(a);
        let mid = a.wrapping_add(width / 2);
        if best.is_none_or(|(w, _, _)| width < w) {
            best = Some((width, i, mid));
        }
    }
    let (_, i, t) = best.expect("at least one try");
    (i, t)
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_monotonic_on_one_thread() {
        let mut last = now();
        for _ in 0..10_000 {
            let t = now();
            assert!(t >= last, "clock went backwards: {last} -> {t}");
            last = t;
        }
    }

    #[test]
    fn calibration_matches_instant() {
        let cal = calibrate_for(Duration::from_millis(3));
        assert!(
            cal.ticks_per_sec > 1e6 && cal.ticks_per_sec < 1e11,
            "{cal:?}"
        );
        let i0 = Instant::now();
        let t0 = now();
        std::thread::sleep(Duration::from_millis(20));
        let t1 = now();
        let measured = i0.elapsed().as_nanos() as f64;
        let converted = cal.ticks_to_ns(t1 - t0) as f64;
        // Generous: a loaded CI machine may deschedule us between reads.
        let err = (converted - measured).abs() / measured;
        assert!(
            err < 0.25,
            "converted {converted} ns vs measured {measured} ns"
        );
    }

    #[test]
    #[allow(clippy::assertions_on_constants)]
    fn a_run_measures_the_rate_again_over_its_length() {
        let rc = RunClock::start();
        assert!(rc.cal.ticks_per_sec > 1e6, "{rc:?}");
        if rc.provisional {
            // The process's first run: refined at once, over at least
            // FIRST_CALIBRATION_TIME, and later runs start from that.
            let rate = rc.refine().expect("a provisional rate is always refined");
            assert!(rc.start.elapsed() >= FIRST_CALIBRATION_TIME);
            let err = (rate / rc.cal.ticks_per_sec - 1.0).abs();
            assert!(err < 0.01, "{rate} against {}", rc.cal.ticks_per_sec);
            assert!(!RunClock::start().provisional);
        }
        let rc = RunClock::start();
        assert!(!rc.provisional || TICKS_ARE_NANOS);
        // Shorter than MIN_REFINE_SPAN: the start rate stands.
        if !TICKS_ARE_NANOS {
            assert_eq!(rc.refine(), None);
        }
        let i0 = Instant::now();
        while i0.elapsed() < MIN_REFINE_SPAN + Duration::from_millis(1) {
            std::hint::spin_loop();
        }
        match rc.refine() {
            None => assert!(TICKS_ARE_NANOS, "a 3 ms run refines the rate"),
            Some(rate) => {
                let err = (rate / rc.cal.ticks_per_sec - 1.0).abs();
                assert!(err < 0.01, "{rate} against {}", rc.cal.ticks_per_sec);
                // The process keeps the longer measurement for the next run
                // (or a longer one, from a test running beside this one).
                let next = RunClock::start();
                assert!((next.cal.ticks_per_sec / rate - 1.0).abs() < 0.01);
            }
        }
    }

    /// The cost of a clock read, beside the encoding costs of
    /// `rill-log`'s `logformat` test (run with `cargo test --release -p rill
    /// --lib clock -- --ignored --nocapture`).
    #[test]
    #[ignore = "timing; run in release"]
    fn now_cost() {
        let n = 2_000_000u32;
        let best = (0..5)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..n {
                    std::hint::black_box(now());
                }
                t0.elapsed().as_nanos() as f64 / f64::from(n)
            })
            .fold(f64::MAX, f64::min);
        println!("clock::now: {best:.2} ns wall");
    }

    #[test]
    fn start_unix_time_is_now() {
        let cal = calibrate_for(Duration::from_millis(3));
        let now_ns = unix_now_ns();
        assert!(cal.start_unix_ns <= now_ns);
        assert!(now_ns - cal.start_unix_ns < 10_000_000_000);
    }
}
