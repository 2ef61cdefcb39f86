//! The host's load while a test runs: how much of the machine's CPU time
//! other processes took, so that a test bounded in time can widen its bound
//! by what it could not have used. Read from `/proc/stat` (all CPUs) less
//! this process's own time (`/proc/self/stat`); 0 where they cannot be read.

/// CPU-time counters at one moment (clock ticks).
pub struct HostLoad {
    busy: u64,
    total: u64,
    mine: u64,
}

impl HostLoad {
    /// The counters now.
    pub fn now() -> HostLoad {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let cpu: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...
        let get = |i: usize| cpu.get(i).copied().unwrap_or(0);
        let idle = get(3) + get(4);
        let total: u64 = cpu.iter().take(8).sum();
        let me = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command's closing parenthesis: utime is the 14th
        // field of the line, the 12th after it; stime the next.
        let rest = me.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        let mine = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
        HostLoad {
            busy: total.saturating_sub(idle),
            total,
            mine,
        }
    }

    /// Other processes' share of the machine's CPU time since `self`, 0 to 1.
    pub fn others_since(&self) -> f64 {
        let now = HostLoad::now();
        let total = now.total.saturating_sub(self.total).max(1);
        let others = now
            .busy
            .saturating_sub(self.busy)
            .saturating_sub(now.mine.saturating_sub(self.mine));
        (others as f64 / total as f64).min(1.0)
    }
}
