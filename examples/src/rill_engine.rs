//! The rill engine: the benchmarks on rill's own tasks and streams, adapted
//! from [`crate::rill_runs`] to the command line's parameter and measurement
//! types.
//!
//! Pipe placement follows LPEL's test: the source runs on worker 0 and the
//! sink on worker 1 (when there are two workers); `const` puts every relay on
//! worker 0, `rr` alternates relays over the workers, `parts` cuts the relays
//! into two contiguous halves on workers 0 and 1. `wall` covers the run of the
//! network (the tasks are created just before it) and excludes building the
//! runtime.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use rill::{MonitorConfig, MonitorFlags};

use crate::apps;
use crate::bench::{Measurement, MicroRow, PipeParams, Placement, RingParams, WordcountParams};
use crate::rill_runs::{self, Micro, PipePlacement, RunInfo};

/// Turns `--monitor MODE` and `--logs DIR` into the runtime's setting. The
/// logs of benchmark `bench` go to `DIR` (default `rill-logs/BENCH`).
pub fn monitor_config(
    mode: Option<&str>,
    logs: Option<&Path>,
    bench: &str,
) -> Result<MonitorConfig> {
    let flags: MonitorFlags = match mode {
        None => MonitorFlags::OFF,
        Some(m) => m.parse().map_err(|e| anyhow!("--monitor {m}: {e}"))?,
    };
    let dir = match logs {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("rill-logs").join(bench),
    };
    Ok(MonitorConfig {
        flags,
        dir: Some(dir),
    })
}

fn with_info(m: Measurement, info: &RunInfo, mon: &MonitorConfig) -> Measurement {
    let m = m
        .with("monitor", mon.flags.to_string())
        .with("dispatches", info.dispatches)
        .with("parks", info.parks)
        .with("idle_ms", info.idle.as_secs_f64() * 1e3);
    if mon.flags.is_off() {
        m
    } else {
        m.with("log_bytes", info.log_bytes)
            .with("log_dir", mon.log_dir().display().to_string())
    }
}

/// Operations per micro row (chosen so each row runs for tens of milliseconds).
fn micro_ops(row: MicroRow) -> u64 {
    match row {
        MicroRow::Yield => 5_000_000,
        MicroRow::Spawn => 500_000,
        MicroRow::Handoff => 5_000_000,
        MicroRow::CrossWorkerRoundtrip => 100_000,
        MicroRow::IdleCpu => 1,
    }
}

/// Pipe on rill: a source, `depth - 2` relays and a sink.
pub fn pipe(p: &PipeParams) -> Result<Measurement> {
    let placement = match p.placement {
        Placement::Const => PipePlacement::Const,
        Placement::Rr => PipePlacement::Rr,
        Placement::Parts => PipePlacement::Parts,
    };
    let mon = monitor_config(p.monitor.as_deref(), p.logs.as_deref(), "pipe")?;
    let info = rill_runs::pipe_mon(p.depth, p.messages, p.capacity, p.workers, placement, &mon)?;
    Ok(with_info(
        Measurement::new(info.wall, p.messages * (p.depth as u64 - 1)),
        &info,
        &mon,
    ))
}

/// Ring on rill: `size` tasks passing one token for `hops` hops.
pub fn ring(p: &RingParams) -> Result<Measurement> {
    let mon = monitor_config(p.monitor.as_deref(), p.logs.as_deref(), "ring")?;
    let placement = match p.placement {
        Placement::Const => PipePlacement::Const,
        Placement::Rr => PipePlacement::Rr,
        Placement::Parts => PipePlacement::Parts,
    };
    let info = rill_runs::ring_mon(p.size, p.hops, p.capacity, p.workers, placement, &mon)?;
    Ok(with_info(Measurement::new(info.wall, p.hops), &info, &mon))
}

/// The word count on rill ([`apps::wordcount`]), checked against the
/// sequential count after the run.
pub fn wordcount(p: &WordcountParams) -> Result<Measurement> {
    let mon = monitor_config(p.monitor.as_deref(), p.logs.as_deref(), "wordcount")?;
    let run = apps::wordcount::run(p, &mon)?;
    let info = RunInfo::of(run.wall, &run.stats);
    let m = p.measured(run.wall, &run.value)?;
    Ok(with_info(m, &info, &mon).with("mapping", p.mapping.name()))
}

/// One micro row on rill. `yield`, `spawn` and `handoff` run on one worker,
/// `cross_worker_roundtrip` and `idle_cpu` on two. With monitoring, the row's
/// logs go to `LOGS/ROW` (default `rill-logs/micro/ROW`).
pub fn micro(
    row: MicroRow,
    _workers: usize,
    monitor: Option<&str>,
    logs: Option<&Path>,
) -> Result<Measurement> {
    let logs = logs.map(|d| d.join(row.name()));
    let mon = monitor_config(monitor, logs.as_deref(), &format!("micro/{}", row.name()))?;
    let n = micro_ops(row);
    let m = match row {
        MicroRow::Yield => Micro::Yield,
        MicroRow::Spawn => Micro::Spawn,
        MicroRow::Handoff => Micro::Handoff,
        MicroRow::CrossWorkerRoundtrip => Micro::CrossWorkerRoundtrip,
        MicroRow::IdleCpu => Micro::IdleCpu,
    };
    let (wall, ops, info) = rill_runs::micro_mon(m, n, &mon)?;
    if row == MicroRow::IdleCpu {
        let m = Measurement::new(wall, 0).with("cpu_share", ops as f64 / 1e6);
        return Ok(with_info(m, &info, &mon));
    }
    Ok(with_info(Measurement::new(wall, ops), &info, &mon))
}
