//! The machine's floor under a hop between workers: how long one cache
//! line takes to go from one core to another and back.
//!
//! Two plain threads, pinned to the cores rill puts workers 0 and 1 on (the
//! first two of `core_affinity::get_core_ids`), pass a counter back and
//! forth: the first writes `i` with a value beside it on one line, the
//! second waits for it, copies the value to a line of its own with `i`,
//! and the first waits for that. A round trip moves each line once each
//! way. No stream operation between two workers can take less: its message
//! travels on at least one line written by one core and read by the other,
//! and the reply on another.
//!
//! Both threads wait with a `pause` between looks, as rill's own spins do.
//! Without it (the first `scripts/line_pingpong.c`) the waiting core asks
//! for the line so often that it slows the writer's claim of it: 122 ns a
//! round trip against 77-83 with it, on the same cores in the same minute.
//!
//! The figure moves with the host: on the shared 2-vCPU machine it went
//! from 122 to 560 ns within an hour, with the crossing rows moving in
//! step (`docs/measurements/crossing.md#crossing-floor`). That is why `rill-bench ab` measures it
//! before each round and `micro` and `all` print it beside their rows.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Round trips a measurement makes by default: a few milliseconds.
pub const DEFAULT_TRIPS: u64 = 20_000;

/// Round trips before the timed ones.
const WARM_UP: u64 = 200;

/// How long either thread waits for the other before the measurement is
/// given up (a core taken by another program for that long).
const PATIENCE: Duration = Duration::from_millis(200);

/// A line with a counter and the value that travels with it, alone on its
/// 128 bytes (a core may fetch lines in pairs).
#[repr(C, align(128))]
struct Line {
    flag: AtomicU64,
    value: AtomicU64,
}

impl Line {
    fn new() -> Line {
        Line {
            flag: AtomicU64::new(0),
            value: AtomicU64::new(0),
        }
    }
}

/// One measurement: nanoseconds per round trip between two cores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineTrip {
    /// The two cores (as `core_affinity` numbers them).
    pub cores: (usize, usize),
    /// Nanoseconds per round trip.
    pub ns: f64,
}

/// Why no figure came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoLineTrip {
    /// Fewer than two cores to pin to.
    OneCore,
    /// A thread waited longer than its patience for the other (the core
    /// was busy with something else).
    Stalled,
    /// A thread could not be started.
    NoThread,
}

impl std::fmt::Display for NoLineTrip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoLineTrip::OneCore => write!(f, "fewer than two cores to pin to"),
            NoLineTrip::Stalled => write!(
                f,
                "a thread waited over {} ms for the other",
                PATIENCE.as_millis()
            ),
            NoLineTrip::NoThread => write!(f, "a thread could not be started"),
        }
    }
}

/// Waits until `line.flag` holds `want`; false when `stop` was raised or
/// the wait ran past [`PATIENCE`] (then it raises `stop` for the other side).
#[inline(always)]
fn wait_for(line: &Line, want: u64, stop: &AtomicBool) -> bool {
    let mut spins = 0u32;
    let mut since: Option<Instant> = None;
    // Acquire: pairs with the other thread's Release store of the flag, so
    // that the value stored before it is seen.
    while line.flag.load(Ordering::Acquire) != want {
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) {
            // Relaxed: a stop flag only; nothing is published with it.
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            let t = *since.get_or_insert_with(Instant::now);
            if t.elapsed() > PATIENCE {
                stop.store(true, Ordering::Relaxed);
                return false;
            }
        }
    }
    true
}

/// Measures `trips` round trips (at least 1) of a line between the cores
/// of workers 0 and 1 (see the module's text); about 0.1-1 µs each.
pub fn measure(trips: u64) -> Result<LineTrip, NoLineTrip> {
    let trips = trips.max(1);
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    if cores.len() < 2 {
        return Err(NoLineTrip::OneCore);
    }
    let (a, b) = (cores[0], cores[1]);
    let ping = Arc::new(Line::new());
    let pong = Arc::new(Line::new());
    let stop = Arc::new(AtomicBool::new(false));
    let echo = {
        let (ping, pong, stop) = (ping.clone(), pong.clone(), stop.clone());
        std::thread::Builder::new()
            .name("line-echo".into())
            .spawn(move || {
                core_affinity::set_for_current(b);
                for i in 1..=WARM_UP + trips {
                    if !wait_for(&ping, i, &stop) {
                        return;
                    }
                    // Relaxed: published by the Release store of the flag.
                    let v = ping.value.load(Ordering::Relaxed);
                    pong.value.store(v, Ordering::Relaxed);
                    // Release: pairs with the measuring thread's Acquire wait.
                    pong.flag.store(i, Ordering::Release);
                }
            })
            .map_err(|_| NoLineTrip::NoThread)?
    };
    // The measuring side runs on a thread of its own too, so that the
    // caller's own affinity is left as it was.
    let timed_stop = stop.clone();
    let timed = std::thread::Builder::new()
        .name("line-ping".into())
        .spawn(move || {
            let stop = timed_stop;
            core_affinity::set_for_current(a);
            // The first trips wait for the echo thread to start and settle
            // on its core (up to a millisecond on a shared host): untimed.
            let mut t0 = Instant::now();
            for i in 1..=WARM_UP + trips {
                if i == WARM_UP + 1 {
                    t0 = Instant::now();
                }
                ping.value.store(i, Ordering::Relaxed);
                // Release: pairs with the echo thread's Acquire wait.
                ping.flag.store(i, Ordering::Release);
                if !wait_for(&pong, i, &stop) {
                    return None;
                }
                // Relaxed: published by the Release store of the flag. A
                // wrong value would be a broken machine: no figure then.
                if pong.value.load(Ordering::Relaxed) != i {
                    return None;
                }
            }
            Some(t0.elapsed())
        })
        .map_err(|_| NoLineTrip::NoThread);
    let took = match timed {
        Ok(h) => h.join().ok().flatten(),
        Err(e) => {
            // Relaxed: a stop flag only; the echo thread sees it within
            // 4,096 looks.
            stop.store(true, Ordering::Relaxed);
            let _ = echo.join();
            return Err(e);
        }
    };
    let _ = echo.join();
    let took = took.ok_or(NoLineTrip::Stalled)?;
    Ok(LineTrip {
        cores: (a.id, b.id),
        ns: took.as_nanos() as f64 / trips as f64,
    })
}

/// [`measure`] with the default trips, as a bare figure (none when it could
/// not be measured): what `ab` keeps per round.
pub fn ns() -> Option<f64> {
    measure(DEFAULT_TRIPS).ok().map(|t| t.ns)
}

/// What the figure is, as every line that prints it says.
const WHAT: &str = "two threads passing a cache line; the floor of a hop between workers";

/// The figure as the tables print it (`line round trip between cores 0 and
/// 1: 122 ns (...)`), or why there is none.
pub fn describe(r: &Result<LineTrip, NoLineTrip>) -> String {
    match r {
        Ok(t) => format!(
            "line round trip between cores {} and {}: {:.0} ns ({WHAT})",
            t.cores.0, t.cores.1, t.ns
        ),
        Err(e) => format!("line round trip between two cores: not measured ({e})"),
    }
}

/// Two measurements, before and after a series of runs, as one line:
/// `line round trip between cores 0 and 1: 94 ns before the runs, 96 after
/// (...)`. Where either is missing, what [`describe`] says of each.
pub fn describe_pair(
    before: &Result<LineTrip, NoLineTrip>,
    after: &Result<LineTrip, NoLineTrip>,
) -> String {
    match (before, after) {
        (Ok(b), Ok(a)) => format!(
            "line round trip between cores {} and {}: {:.0} ns before the runs, {:.0} after \
             ({WHAT})",
            b.cores.0, b.cores.1, b.ns, a.ns
        ),
        _ => format!(
            "before the runs: {}; after: {}",
            describe(before),
            describe(after)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_takes_time_and_ends() {
        match measure(2_000) {
            Ok(t) => {
                assert_ne!(t.cores.0, t.cores.1);
                // Some tens of nanoseconds at the least on any machine with
                // two cores, and well under the patience per trip.
                assert!(t.ns > 5.0 && t.ns < 1e8, "{t:?}");
                assert!(describe(&Ok(t)).contains(" ns"));
            }
            // A machine with one core, or a busy CI host, gives no figure;
            // it must say so rather than hang.
            Err(e) => assert!(!describe(&Err(e)).is_empty()),
        }
    }

    #[test]
    fn a_pair_reads_as_one_line() {
        let t = |ns| Ok(LineTrip { cores: (0, 1), ns });
        let both = describe_pair(&t(94.2), &t(480.0));
        assert!(
            both.starts_with(
                "line round trip between cores 0 and 1: 94 ns before the runs, 480 after"
            ),
            "{both}"
        );
        let one = describe_pair(&t(94.0), &Err(NoLineTrip::Stalled));
        assert!(
            one.contains("after: line round trip between two cores: not measured"),
            "{one}"
        );
    }

    #[test]
    fn zero_trips_counts_as_one() {
        if let Ok(t) = measure(0) {
            assert!(t.ns.is_finite() && t.ns > 0.0, "{t:?}");
        }
    }
}
