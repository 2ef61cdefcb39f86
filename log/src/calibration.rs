//! [`Calibration`]: how a log's raw clock ticks become nanoseconds and
//! wall-clock time. Every log header holds the run's calibration; the
//! runtime measures it (its clock reading stays in the runtime), readers
//! convert with it.

/// Conversion from raw ticks to wall-clock time, measured per run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Clock rate: ticks per second (1e9 when ticks are nanoseconds).
    pub ticks_per_sec: f64,
    /// A tick value read at `start_unix_ns`.
    pub start_ticks: u64,
    /// Wall-clock time (nanoseconds since the Unix epoch) at `start_ticks`.
    pub start_unix_ns: u64,
}

impl Calibration {
    /// A calibration where one tick is one nanosecond, starting at tick 0 = Unix
    /// time 0. Handy for tests and synthetic logs.
    pub const fn nanos() -> Self {
        Calibration {
            ticks_per_sec: 1e9,
            start_ticks: 0,
            start_unix_ns: 0,
        }
    }

    /// Nanoseconds per tick.
    pub fn ns_per_tick(&self) -> f64 {
        1e9 / self.ticks_per_sec
    }

    /// Converts a duration in ticks to nanoseconds (rounded to nearest,
    /// saturating).
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.ticks_per_sec == 1e9 {
            return ticks;
        }
        let ns = (ticks as f64 * self.ns_per_tick()).round();
        // `as` saturates for out-of-range floats and maps NaN to 0.
        ns as u64
    }

    /// Converts a duration in nanoseconds to ticks (rounded, saturating).
    pub fn ns_to_ticks(&self, ns: u64) -> u64 {
        if self.ticks_per_sec == 1e9 {
            return ns;
        }
        (ns as f64 * self.ticks_per_sec / 1e9).round() as u64
    }

    /// Nanoseconds from `start_ticks` to the time stamp `t` (negative if `t`
    /// is earlier).
    pub fn since_start_ns(&self, t: u64) -> i64 {
        if t >= self.start_ticks {
            i64::try_from(self.ticks_to_ns(t - self.start_ticks)).unwrap_or(i64::MAX)
        } else {
            -i64::try_from(self.ticks_to_ns(self.start_ticks - t)).unwrap_or(i64::MAX)
        }
    }

    /// The wall-clock time of the time stamp `t`, in nanoseconds since the
    /// Unix epoch (saturating at 0 and `u64::MAX`).
    pub fn to_unix_ns(&self, t: u64) -> u64 {
        let d = self.since_start_ns(t);
        if d >= 0 {
            self.start_unix_ns.saturating_add(d as u64)
        } else {
            self.start_unix_ns.saturating_sub(d.unsigned_abs())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let cal = Calibration {
            ticks_per_sec: 2e9,
            start_ticks: 1000,
            start_unix_ns: 5_000,
        };
        assert_eq!(cal.ticks_to_ns(2000), 1000);
        assert_eq!(cal.ns_to_ticks(1000), 2000);
        assert_eq!(cal.since_start_ns(3000), 1000);
        assert_eq!(cal.since_start_ns(0), -500);
        assert_eq!(cal.to_unix_ns(3000), 6_000);
        assert_eq!(cal.to_unix_ns(0), 4_500);
        let ns = Calibration::nanos();
        assert_eq!(ns.ticks_to_ns(u64::MAX), u64::MAX);
        assert_eq!(ns.to_unix_ns(42), 42);
        let broken = Calibration {
            ticks_per_sec: 0.0,
            ..cal
        };
        // Must not panic.
        let _ = broken.ticks_to_ns(10);
    }
}
