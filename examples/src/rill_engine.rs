//! The rill engine: the benchmarks on rill's own tasks and streams
//! ([`crate::nets`] and [`crate::micro_rill`], [`crate::apps::wordcount`] for the word count and
//! [`crate::apps::sieve`] for the prime sieve),
//! their figures turned into the command line's measurements. `wall` covers
//! the run of the network (the tasks are created just before it) and
//! excludes building the runtime.

use std::path::PathBuf;

use anyhow::Result;
use rill::MonitorConfig;

use crate::apps::{self, auto, MappingChoice};
use crate::bench::{
    Measurement, MicroParams, MicroRow, PipeParams, RingParams, SieveParams, WordcountParams,
};
use crate::engines::Engine;
use crate::kernels::wordcount::{self as wc, Corpus};
use crate::net::{monitor_config, rill_figures, RillNet};
use crate::{micro_rill, nets};

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

/// rill: lightweight tasks on pinned workers, connected by rill streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rill;

impl Engine for Rill {
    fn name(&self) -> &'static str {
        "rill"
    }

    fn about(&self) -> &'static str {
        "rill's lightweight tasks and streams"
    }

    /// A source, `depth - 2` relays and a sink.
    fn pipe(&self, p: &PipeParams) -> Result<Measurement> {
        nets::pipe::<RillNet>(p)
    }

    /// `size` tasks passing one token for `hops` hops.
    fn ring(&self, p: &RingParams) -> Result<Measurement> {
        nets::ring::<RillNet>(p)
    }

    /// One micro row ([`micro_rill::micro`] says on how many workers). With
    /// monitoring, the row's logs go to `LOGS/ROW` (default
    /// `rill-logs/micro/ROW`).
    fn micro(&self, p: &MicroParams) -> Result<Measurement> {
        let row = p.row;
        let logs = p.logs.as_ref().map(|d| d.join(row.name()));
        let mon = monitor_config(p.monitor, logs.as_deref(), &format!("micro/{}", row.name()));
        let ops = p.ops.unwrap_or_else(|| micro_ops(row));
        let (m, stats) = micro_rill::micro(row, ops, &mon)?;
        Ok(rill_figures(m, &stats, &mon))
    }

    /// The word count network ([`apps::wordcount`]), checked against the
    /// sequential count after the run; under `--mapping auto`
    /// `wordcount_auto` first.
    fn wordcount(&self, p: &WordcountParams) -> Result<Measurement> {
        let mon = monitor_config(p.monitor, p.logs.as_deref(), "wordcount");
        if p.mapping == MappingChoice::Auto {
            return wordcount_auto(p, &mon);
        }
        let run = apps::wordcount::run(p, &mon)?;
        let m = p.measured(run.wall, &run.value)?;
        Ok(rill_figures(m, &run.stats, &mon).with("mapping", p.mapping.name()))
    }

    /// The prime sieve ([`apps::sieve`]), its primes checked against the
    /// sequential sieve's after the run; `tasks` counts the tasks the run
    /// made (the filters, the generator and the sink).
    fn sieve(&self, p: &SieveParams) -> Result<Measurement> {
        let mon = monitor_config(p.monitor, p.logs.as_deref(), "sieve");
        let run = apps::sieve::run(p, &mon)?;
        let m = p.measured(run.wall, &run.value.primes, run.value.messages)?;
        Ok(rill_figures(m, &run.stats, &mon)
            .with("mapping", p.mapping.name())
            .with("tasks", run.stats.tasks_created))
    }
}

/// The word count under `--mapping auto` ([`apps::auto`]): a pilot on the
/// first 1/`--pilot` of the text (at least 64 KiB, cut after whitespace) under
/// round-robin, monitored as `--pilot-monitor` says (count mode by
/// default) into `LOGS/pilot` (`LOGS`: `--logs`,
/// or `target/rill-auto/wordcount`), a plan written to `LOGS/auto.map`, and
/// the run under it; the measurement has the plan's fields (`pilot_ms`,
/// `total_ms`, `mapping_file`...).
fn wordcount_auto(p: &WordcountParams, mon: &MonitorConfig) -> Result<Measurement> {
    let dir = p
        .logs
        .clone()
        .unwrap_or_else(|| PathBuf::from(auto::AUTO_ROOT).join("wordcount"));
    let plan = auto::plan(&dir, p.workers, p.pilot_monitor, |pmon| {
        let text = p.corpus.text();
        let want = auto::pilot_size(text.len() as u64, p.pilot, 64 << 10).max(1) as usize;
        let head = wc::chunks(text, want).next().unwrap_or("");
        let pilot = WordcountParams {
            corpus: Corpus::of(p.corpus.source().clone(), head.to_string()),
            mapping: MappingChoice::Rr,
            monitor: Some(pmon.flags),
            logs: pmon.dir.clone(),
            ..p.clone()
        };
        let run = apps::wordcount::run(&pilot, pmon)?;
        pilot.verify(&run.value)?;
        Ok((run.wall, format!("{} of {} bytes", head.len(), text.len())))
    })?;
    let real = WordcountParams {
        mapping: MappingChoice::File(plan.file.clone()),
        ..p.clone()
    };
    let run = apps::wordcount::run(&real, mon)?;
    let mut m = real.measured(run.wall, &run.value)?;
    for (k, v) in plan.fields(run.wall) {
        m = m.with(k, v);
    }
    Ok(rill_figures(m, &run.stats, mon).with("mapping", "auto"))
}
