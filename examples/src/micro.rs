//! The micro rows as a benchmark: their run on each engine, and rill's
//! rows: those that are rill's own (`yield`, `spawn`, `idle_cpu`), and the
//! two that move messages on [`crate::nets`]. Each row runs on a runtime of
//! its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use rill::{Mapping, MonitorConfig, Runtime};

use crate::bench::{
    measure_idle_cpu, Measurement, MicroParams, MicroRow, ParamError, Params, MICRO_CAPACITY,
};
use crate::engines::{monitor_name, Bench, Engine, Job, Jobs};
use crate::mapping::MappingChoice;
use crate::net::{monitor_config, rill_figures, rill_runtime, NetSpec, RillNet};
use crate::nets;
use crate::peers::{threads, tokio_rt};

impl Bench for MicroParams {
    fn name(&self) -> &'static str {
        "micro"
    }

    fn validate(&self) -> Result<(), ParamError> {
        MicroParams::validate(self)
    }

    fn params(&self) -> Params {
        let moves = matches!(self.row, MicroRow::Handoff | MicroRow::CrossWorkerRoundtrip);
        Params {
            row: Some(self.row.name()),
            workers: Some(self.row.workers(self.opts.workers)),
            monitor: monitor_name(self.opts.monitor),
            logs: self.opts.logs.clone(),
            capacity: moves.then_some(MICRO_CAPACITY),
            ..Params::default()
        }
    }

    fn title(&self) -> String {
        format!("micro  workers={}", self.opts.workers)
    }

    fn label(&self) -> String {
        format!("micro {}", self.row)
    }

    /// `idle_cpu` shows the share of a core in percent.
    fn unit(&self) -> &'static str {
        match self.row {
            MicroRow::IdleCpu => "% core",
            _ => "ns/op",
        }
    }

    fn figure(&self, m: &Measurement) -> Option<f64> {
        match self.row {
            MicroRow::IdleCpu => m.cpu_share().map(|s| s * 100.0),
            _ => m.ns_per_op(),
        }
    }

    fn crosses_workers(&self) -> bool {
        self.row == MicroRow::CrossWorkerRoundtrip
    }

    fn run(&self, engine: Engine) -> Result<Measurement> {
        match engine {
            Engine::Rill => rill(self),
            Engine::Threads => threads::micro(self.row, self.ops_on(engine)),
            Engine::Tokio => tokio_rt::micro(self.row, self.opts.workers, self.ops_on(engine)),
            Engine::Sequential => Err(engine.lacks("micro")),
        }
    }
}

/// `rill-bench micro`'s command line: the rows, and the parameters every
/// row takes; a job per row.
#[derive(Clone, Debug, Args)]
pub struct MicroArgs {
    /// Rows to run, a comma-separated list [default: all of them]. handoff and
    /// idle_cpu always use 1 worker, cross_worker_roundtrip 2; yield and spawn use
    /// --workers.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ROWS")]
    pub rows: Vec<MicroRow>,

    /// The rows' parameters.
    #[command(flatten)]
    pub params: MicroParams,
}

impl MicroArgs {
    /// The rows chosen, each once, in the order given; all rows when none is.
    pub fn rows(&self) -> Vec<MicroRow> {
        if self.rows.is_empty() {
            return MicroRow::ALL.to_vec();
        }
        let mut out = Vec::new();
        for r in &self.rows {
            if !out.contains(r) {
                out.push(*r);
            }
        }
        out
    }
}

impl Jobs for MicroArgs {
    fn name(&self) -> &'static str {
        "micro"
    }

    fn jobs(&self) -> Result<Vec<Job>, ParamError> {
        let mut jobs = Vec::new();
        for row in self.rows() {
            jobs.extend(
                MicroParams {
                    row,
                    ..self.params.clone()
                }
                .jobs()?,
            );
        }
        Ok(jobs)
    }
}

impl MicroParams {
    /// The operations the row times on `engine`: `--ops`, or the engine's
    /// own count for the row, chosen so that it runs for tens of
    /// milliseconds there (`idle_cpu` has none).
    pub fn ops_on(&self, engine: Engine) -> u64 {
        use MicroRow::*;
        self.ops.unwrap_or(match (engine, self.row) {
            (_, IdleCpu) => 0,
            (Engine::Rill, Yield | Handoff) => 5_000_000,
            (Engine::Rill, Spawn) => 500_000,
            (Engine::Rill, CrossWorkerRoundtrip) => 100_000,
            (_, Yield) => 200_000,
            (Engine::Tokio, Spawn) => 200_000,
            (_, Spawn) => 2_000,
            (Engine::Tokio, Handoff) => 1_000_000,
            (_, Handoff) => 500_000,
            (Engine::Tokio, CrossWorkerRoundtrip) => 100_000,
            (_, CrossWorkerRoundtrip) => 20_000,
        })
    }
}

/// One micro row ([`micro`] says on how many workers). With
/// monitoring, the row's logs go to `LOGS/ROW` (default
/// `rill-logs/micro/ROW`).
fn rill(p: &MicroParams) -> Result<Measurement> {
    let row = p.row;
    let logs = p.opts.logs.as_ref().map(|d| d.join(row.name()));
    let mon = monitor_config(
        p.opts.monitor,
        logs.as_deref(),
        &format!("micro/{}", row.name()),
    );
    let ops = p.ops_on(Engine::Rill);
    let (m, stats) = micro(row, ops, &mon)?;
    Ok(rill_figures(m, &stats, &mon))
}

fn runtime(workers: usize, capacity: usize, mon: &MonitorConfig) -> Result<Runtime> {
    rill_runtime(workers, capacity, mon, Mapping::RoundRobin)
}

/// Runs micro row `row` with `n` operations: `yield`, `spawn` and `handoff`
/// on one worker, `cross_worker_roundtrip` on two, and `idle_cpu` on two
/// (worker 0 blocked in the OS by a task that measures with
/// [`measure_idle_cpu`], worker 1 idle; `n` does not apply). Returns the
/// measurement (`n` operations in the time the row times) and the run's
/// figures.
pub fn micro(row: MicroRow, n: u64, mon: &MonitorConfig) -> Result<(Measurement, rill::RunStats)> {
    let timed = |d: Duration, stats: rill::RunStats| (Measurement::new(d, n), stats);
    match row {
        MicroRow::Yield => {
            let mut rt = runtime(1, 16, mon)?;
            let (wall, stats) = rt.run_main_as("micro/yield", move || {
                let t0 = Instant::now();
                for _ in 0..n {
                    rill::yield_now();
                }
                t0.elapsed()
            })?;
            Ok(timed(wall, stats))
        }
        MicroRow::Spawn => {
            let mut rt = runtime(1, 16, mon)?;
            let done = Arc::new(AtomicU64::new(0));
            let d2 = done.clone();
            let (wall, stats) = rt.run_main_as("micro/spawner", move || {
                let t0 = Instant::now();
                let batch = 64;
                let mut spawned = 0;
                while spawned < n {
                    for _ in 0..batch.min(n - spawned) {
                        let d = d2.clone();
                        rill::spawn("micro/empty", move || {
                            d.fetch_add(1, Ordering::Relaxed);
                        });
                        spawned += 1;
                    }
                    rill::yield_now();
                }
                while d2.load(Ordering::Relaxed) < n {
                    rill::yield_now();
                }
                t0.elapsed()
            })?;
            if done.load(Ordering::Relaxed) != n {
                bail!("spawn: {} of {n} tasks ran", done.load(Ordering::Relaxed));
            }
            Ok(timed(wall, stats))
        }
        // The spec of the rows on the nets: on worker 0 and 1 of a
        // round-robin runtime.
        MicroRow::Handoff => {
            // One worker, as the runtime's default maps it (the row times
            // the runtime's own hand-off, not a placement).
            let spec = NetSpec {
                mapping: Some(&ADAPTIVE),
                ..micro_spec(1, mon)
            };
            let (m, run) = nets::handoff::<RillNet>(n, 16, &spec)?;
            Ok((m, run.stats.expect("a rill run has statistics")))
        }
        MicroRow::CrossWorkerRoundtrip => {
            let (m, run) = nets::roundtrip::<RillNet>(n, 1, &micro_spec(2, mon))?;
            Ok((m, run.stats.expect("a rill run has statistics")))
        }
        MicroRow::IdleCpu => {
            let mut rt = runtime(2, 16, mon)?;
            // Worker 1 has nothing to do; this task, the run's only one (so
            // round-robin puts it on worker 0), blocks worker 0 in the OS.
            let (m, stats) = rt.run_main_as("micro/sleeper", measure_idle_cpu)?;
            Ok((m?, stats))
        }
    }
}

/// The network of a micro row on `workers` workers (its tasks placed by
/// hand, pinned), monitored as `mon` says.
/// The runtime's default mapping, for rows that do not place their tasks.
static ADAPTIVE: MappingChoice = MappingChoice::Adaptive;

fn micro_spec(workers: usize, mon: &MonitorConfig) -> NetSpec<'static> {
    NetSpec {
        bench: "micro",
        workers,
        capacity: 16,
        mapping: None,
        names: &[],
        manual: rill::ManualTable::new(),
        monitor: Some(mon.flags),
        logs: mon.dir.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_rows_run_on_every_engine() {
        for engine in Engine::NETWORKS {
            for row in MicroRow::ALL {
                let p = MicroParams {
                    ops: Some(100),
                    ..MicroParams::new(row, 2)
                };
                let m = p.run(engine).unwrap();
                if row == MicroRow::IdleCpu {
                    let share = m.cpu_share().unwrap();
                    assert!((0.0..=2.0).contains(&share), "{engine} {share}");
                } else {
                    assert!(m.ns_per_op().unwrap() > 0.0, "{engine} {row}");
                }
            }
        }
    }
}
