//! Which monitoring events are recorded.
//!
//! Parsed from a user-facing string (`off`, `full`, `all`, or a comma list such
//! as `sched,stream`) and stored in every log header.

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign, Not};
use std::str::FromStr;

/// A set of monitoring event classes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MonitorFlags(u32);

impl MonitorFlags {
    /// Nothing is recorded.
    pub const OFF: Self = Self(0);
    /// Task creation and placement: which worker a task is mapped to, migrations.
    pub const MAPPING: Self = Self(1 << 0);
    /// Task periods: every dispatch of a task, with how it ended (blocked, yielded, ended).
    pub const SCHEDULER: Self = Self(1 << 1);
    /// Worker start, idle waits and end.
    pub const WORKER: Self = Self(1 << 2);
    /// Stream open/bind/close/replace events and per-period message counts per stream.
    pub const STREAM: Self = Self(1 << 3);
    /// The order of reads and writes within each period (lets the analysis recover
    /// which messages each message was computed from).
    pub const MESSAGE: Self = Self(1 << 4);
    /// A time stamp per message read or written (costly; not part of [`FULL`](Self::FULL)).
    pub const MESSAGE_TIME: Self = Self(1 << 5);
    /// Everything except [`MESSAGE_TIME`](Self::MESSAGE_TIME).
    pub const FULL: Self = Self(0b01_1111);
    /// Everything.
    pub const ALL: Self = Self(0b11_1111);
    /// Sample mode's own bit: what each worker does is sampled at a fixed
    /// rate instead of recorded per dispatch, and exact counts are written
    /// as totals. With [`SCHEDULER`](Self::SCHEDULER) as well (`full,sample`)
    /// a run records its periods and samples both, so that the samples can
    /// be checked against the periods; it writes no task or stream totals
    /// then (a worker's totals every monitored worker writes).
    pub const SAMPLE: Self = Self(1 << 6);
    /// Sample mode as the word `sample` selects it: [`SAMPLE`](Self::SAMPLE)
    /// with task placement, worker and stream events.
    pub const SAMPLED: Self = Self(1 << 6 | 0b1101);
    /// Sample mode on the workers' CPU time (`cpu`, `sample,cpu`): each
    /// worker's timer runs on its thread's CPU-time clock instead of the
    /// wall clock, so the kernel checks it in the scheduler tick the core
    /// takes anyway: no interrupt of its own, but at most one sample a tick,
    /// and samples at the tick see workers waiting on a neighbour that the
    /// same tick stopped a moment before (`runtime/src/monitor/README.md`).
    pub const CPU_CLOCK: Self = Self(1 << 7);
    /// Every bit this version has a name for.
    const KNOWN: Self = Self(0b1111_1111);
    /// Where sample mode keeps its rate: bits 16 to 31, in Hz (0: the
    /// runtime's default), so that the rate travels with the mode and is in
    /// every log header.
    const RATE_SHIFT: u32 = 16;
    /// The lowest sampling rate `sample:HZ` accepts.
    pub const MIN_SAMPLE_HZ: u32 = 10;
    /// The highest sampling rate `sample:HZ` accepts.
    pub const MAX_SAMPLE_HZ: u32 = 50_000;

    /// The flags from raw bits, kept as they are (bits unknown to this version included).
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether no event class is enabled.
    pub const fn is_off(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any flag of `other` is set in `self`.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    /// The union of the two sets.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Bits set that this version of rill has no name for.
    pub const fn unknown_bits(self) -> u32 {
        self.without_rate().0 & !Self::KNOWN.0
    }

    /// Whether this is sample mode (the [`SAMPLE`](Self::SAMPLE) bit).
    pub const fn is_sampled(self) -> bool {
        self.contains(Self::SAMPLE)
    }

    /// Whether sample mode's timers run on the workers' CPU time (`cpu`).
    pub const fn is_cpu_clock(self) -> bool {
        self.contains(Self::CPU_CLOCK)
    }

    /// Sample mode's rate in Hz, if one was chosen (`sample:HZ`).
    pub const fn sample_hz(self) -> Option<u32> {
        match self.0 >> Self::RATE_SHIFT {
            0 => None,
            hz => Some(hz),
        }
    }

    /// The same flags with sampling rate `hz` (clamped to
    /// [`MIN_SAMPLE_HZ`](Self::MIN_SAMPLE_HZ)..=[`MAX_SAMPLE_HZ`](Self::MAX_SAMPLE_HZ)).
    pub const fn with_sample_hz(self, hz: u32) -> Self {
        let hz = if hz < Self::MIN_SAMPLE_HZ {
            Self::MIN_SAMPLE_HZ
        } else if hz > Self::MAX_SAMPLE_HZ {
            Self::MAX_SAMPLE_HZ
        } else {
            hz
        };
        Self(self.0 & ((1 << Self::RATE_SHIFT) - 1) | hz << Self::RATE_SHIFT)
    }

    /// The flags without a sampling rate (what [`Display`](fmt::Display)
    /// names as words).
    const fn without_rate(self) -> Self {
        Self(self.0 & ((1 << Self::RATE_SHIFT) - 1))
    }
}

impl BitOr for MonitorFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl BitOrAssign for MonitorFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for MonitorFlags {
    type Output = Self;
    fn bitand(self, rhs: Self) -> Self {
        Self(self.0 & rhs.0)
    }
}

impl Not for MonitorFlags {
    type Output = Self;
    fn not(self) -> Self {
        Self(!self.0 & Self::KNOWN.0)
    }
}

/// Canonical names, in display order.
const NAMES: [(MonitorFlags, &str); 8] = [
    (MonitorFlags::MAPPING, "mapping"),
    (MonitorFlags::SCHEDULER, "scheduler"),
    (MonitorFlags::WORKER, "worker"),
    (MonitorFlags::STREAM, "stream"),
    (MonitorFlags::MESSAGE, "message"),
    (MonitorFlags::MESSAGE_TIME, "msgtime"),
    (MonitorFlags::SAMPLE, "sample"),
    (MonitorFlags::CPU_CLOCK, "cpu"),
];

/// Every word [`MonitorFlags::from_str`] accepts.
pub const VALID_WORDS: &str =
    "off, full, all, sample (or sample:HZ, 10 to 50000), cpu (or cpu:HZ: sample mode on the workers' CPU time), map|mapping, sched|scheduler, worker, task, stream, message|msg, msgtime";

fn word_flags(word: &str) -> Option<MonitorFlags> {
    Some(match word {
        "off" | "none" => MonitorFlags::OFF,
        "full" => MonitorFlags::FULL,
        "all" => MonitorFlags::ALL,
        "sample" => MonitorFlags::SAMPLED,
        "cpu" => MonitorFlags::SAMPLED.union(MonitorFlags::CPU_CLOCK),
        "map" | "mapping" => MonitorFlags::MAPPING,
        "sched" | "scheduler" | "task" => MonitorFlags::SCHEDULER,
        "worker" => MonitorFlags::WORKER,
        "stream" => MonitorFlags::STREAM,
        "message" | "msg" => MonitorFlags::MESSAGE,
        "msgtime" => MonitorFlags::MESSAGE_TIME,
        _ => return None,
    })
}

/// A monitoring flags string that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseFlagsError {
    /// A word that names no flag.
    #[error("unknown monitoring flag `{word}`; valid words: {VALID_WORDS}")]
    UnknownWord {
        /// The offending word.
        word: String,
    },
    /// The string had no words at all.
    #[error("empty monitoring flags; valid words: {VALID_WORDS}")]
    Empty,
    /// `sample:HZ` with a rate that is not a number in range.
    #[error(
        "bad sampling rate `{value}` in `sample:HZ` or `cpu:HZ`: give a whole number of Hz from {} to {}",
        MonitorFlags::MIN_SAMPLE_HZ,
        MonitorFlags::MAX_SAMPLE_HZ
    )]
    BadRate {
        /// What followed `sample:`.
        value: String,
    },
}

impl FromStr for MonitorFlags {
    type Err = ParseFlagsError;

    /// Parses `off`, `full`, `all`, or a comma-separated list of words (case
    /// insensitive, blanks around words ignored). The words `full` and `all`
    /// may be combined with others (`full,msgtime` = `all`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut flags = MonitorFlags::OFF;
        let mut any = false;
        for word in s.split(',') {
            let word = word.trim();
            if word.is_empty() {
                continue;
            }
            any = true;
            let lower = word.to_ascii_lowercase();
            let rated = lower
                .strip_prefix("sample:")
                .map(|r| (r, MonitorFlags::SAMPLED))
                .or_else(|| {
                    lower
                        .strip_prefix("cpu:")
                        .map(|r| (r, MonitorFlags::SAMPLED | MonitorFlags::CPU_CLOCK))
                });
            if let Some((rate, mode)) = rated {
                let hz = rate
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|hz| (Self::MIN_SAMPLE_HZ..=Self::MAX_SAMPLE_HZ).contains(hz))
                    .ok_or_else(|| ParseFlagsError::BadRate {
                        value: rate.to_owned(),
                    })?;
                flags = (flags | mode).with_sample_hz(hz);
                continue;
            }
            flags |= word_flags(&lower).ok_or_else(|| ParseFlagsError::UnknownWord {
                word: word.to_owned(),
            })?;
        }
        if any {
            Ok(flags)
        } else {
            Err(ParseFlagsError::Empty)
        }
    }
}

impl fmt::Display for MonitorFlags {
    /// Prints `off`, `full`, `all`, or the canonical comma list
    /// (`mapping,scheduler,worker,stream,message,msgtime` order). Unknown bits,
    /// which only a log from a newer rill can carry, print as a hex word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known = MonitorFlags(self.0 & Self::KNOWN.0);
        let rate = self.sample_hz();
        let unknown = self.unknown_bits();
        let mut first = true;
        let mut word = |f: &mut fmt::Formatter<'_>, w: &dyn fmt::Display| {
            let sep = if first { "" } else { "," };
            first = false;
            write!(f, "{sep}{w}")
        };
        if known == Self::ALL {
            word(f, &"all")?;
        } else if known == Self::SAMPLED || known == Self::SAMPLED | Self::CPU_CLOCK {
            match rate {
                Some(hz) => word(f, &format_args!("sample:{hz}"))?,
                None => word(f, &"sample")?,
            }
            if known.is_cpu_clock() {
                word(f, &"cpu")?;
            }
        } else if known == Self::FULL {
            word(f, &"full")?;
        } else {
            for (flag, name) in NAMES {
                if known.contains(flag) {
                    word(f, &name)?;
                }
            }
        }
        if unknown != 0 {
            word(f, &format_args!("{unknown:#x}"))?;
        }
        if first {
            f.write_str("off")?;
        }
        Ok(())
    }
}

impl fmt::Debug for MonitorFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MonitorFlags({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> MonitorFlags {
        s.parse().unwrap()
    }

    #[test]
    fn parse_words() {
        assert_eq!(p("off"), MonitorFlags::OFF);
        assert!(p("off").is_off());
        assert_eq!(p("full"), MonitorFlags::FULL);
        assert_eq!(p("all"), MonitorFlags::ALL);
        assert_eq!(p("FULL, msgtime"), MonitorFlags::ALL);
        assert_eq!(p("task"), MonitorFlags::SCHEDULER);
        assert_eq!(
            p("map,sched,worker,stream,msg"),
            MonitorFlags::FULL,
            "the short words make up full"
        );
        assert_eq!(
            p(" mapping , scheduler,message ,"),
            MonitorFlags::MAPPING | MonitorFlags::SCHEDULER | MonitorFlags::MESSAGE
        );
        assert!(!MonitorFlags::FULL.contains(MonitorFlags::MESSAGE_TIME));
        assert!(MonitorFlags::ALL.contains(MonitorFlags::FULL));
        assert!(MonitorFlags::FULL.intersects(MonitorFlags::STREAM));
        assert_eq!(p("sample"), MonitorFlags::SAMPLED);
        assert!(p("sample").is_sampled() && !p("full").is_sampled());
        assert_eq!(p("SAMPLE,map"), MonitorFlags::SAMPLED);
        let r = p("sample:4000");
        assert_eq!(r.sample_hz(), Some(4000));
        assert!(r.is_sampled() && r.contains(MonitorFlags::SAMPLED));
        assert_eq!(r.unknown_bits(), 0);
        assert_eq!(p(&r.to_string()), r);
        assert_eq!(p("sample").sample_hz(), None);
        for bad in ["sample:0", "sample:x", "sample:", "sample:99999"] {
            assert!(
                matches!(
                    bad.parse::<MonitorFlags>(),
                    Err(ParseFlagsError::BadRate { .. })
                ),
                "{bad}"
            );
        }
        let both = p("full,sample");
        assert!(both.is_sampled() && both.contains(MonitorFlags::FULL));
        // `cpu` is sample mode on the workers' CPU time, alone or with a
        // rate.
        assert_eq!(p("cpu"), MonitorFlags::SAMPLED | MonitorFlags::CPU_CLOCK);
        let w = p("sample:2000,cpu");
        assert!(w.is_sampled() && w.is_cpu_clock() && w.sample_hz() == Some(2000));
        assert!(!p("sample").is_cpu_clock());
        assert_eq!(p("cpu:500"), p("sample:500,cpu"));
        assert!(matches!(
            "cpu:5".parse::<MonitorFlags>(),
            Err(ParseFlagsError::BadRate { .. })
        ));
    }

    #[test]
    fn display() {
        assert_eq!(MonitorFlags::OFF.to_string(), "off");
        assert_eq!(MonitorFlags::FULL.to_string(), "full");
        assert_eq!(MonitorFlags::ALL.to_string(), "all");
        assert_eq!(
            (MonitorFlags::STREAM | MonitorFlags::SCHEDULER).to_string(),
            "scheduler,stream"
        );
        assert_eq!(
            (MonitorFlags::MESSAGE_TIME | MonitorFlags::MAPPING).to_string(),
            "mapping,msgtime"
        );
        assert_eq!(MonitorFlags::from_bits(0x101).to_string(), "mapping,0x100");
        assert_eq!(
            "sample:4000,cpu"
                .parse::<MonitorFlags>()
                .unwrap()
                .to_string(),
            "sample:4000,cpu"
        );
        assert_eq!(p("cpu").to_string(), "sample,cpu");
        assert_eq!(
            p("full,cpu").to_string(),
            "full,sample,cpu"
                .parse::<MonitorFlags>()
                .unwrap()
                .to_string()
        );
        assert_eq!(MonitorFlags::SAMPLED.to_string(), "sample");
        assert_eq!(
            MonitorFlags::SAMPLED.with_sample_hz(2000).to_string(),
            "sample:2000"
        );
        assert_eq!(
            (MonitorFlags::SAMPLE | MonitorFlags::MAPPING).to_string(),
            "mapping,sample"
        );
        assert_eq!(MonitorFlags::from_bits(0x100).to_string(), "0x100");
        assert_eq!(
            format!("{:?}", MonitorFlags::WORKER),
            "MonitorFlags(worker)"
        );
    }

    #[test]
    fn bad_words() {
        let err = "sched,bogus".parse::<MonitorFlags>().unwrap_err();
        assert_eq!(
            err,
            ParseFlagsError::UnknownWord {
                word: "bogus".into()
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("`bogus`"), "{msg}");
        for w in ["off", "full", "all", "sched", "msgtime", "stream"] {
            assert!(msg.contains(w), "{msg} lacks {w}");
        }
        assert_eq!("".parse::<MonitorFlags>(), Err(ParseFlagsError::Empty));
        assert_eq!(" , ".parse::<MonitorFlags>(), Err(ParseFlagsError::Empty));
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(bits in 0u32..64) {
            let f = MonitorFlags::from_bits(bits);
            let s = f.to_string();
            prop_assert_eq!(s.parse::<MonitorFlags>().unwrap(), f, "{}", s);
        }
    }
}
