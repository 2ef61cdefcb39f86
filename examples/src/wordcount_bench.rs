//! The word count as a benchmark: its run on each engine (rill's network
//! [`crate::apps::wordcount`], under `--mapping auto` after a pilot; the
//! peers' [`crate::peers::wordcount`]; the sequential loop).

use std::path::PathBuf;

use anyhow::Result;
use rill::MonitorConfig;

use crate::apps::{self, auto, MappingChoice};
use crate::bench::{Measurement, ParamError, Params, WordcountParams};
use crate::engines::{monitor_name, Bench, Engine};
use crate::kernels::wordcount::{self as wc, Corpus, TextSource};
use crate::net::{monitor_config, rill_figures, Net, ThreadNet};
use crate::peers;

impl Bench for WordcountParams {
    fn name(&self) -> &'static str {
        "wordcount"
    }

    fn validate(&self) -> Result<(), ParamError> {
        WordcountParams::validate(self)
    }

    fn run(&self, engine: Engine) -> Result<Measurement> {
        match engine {
            Engine::Rill => rill(self),
            Engine::Threads => threads(self),
            Engine::Tokio => peers::wordcount::tokio(self),
            Engine::Sequential => sequential(self),
        }
    }

    fn op_name(&self) -> &'static str {
        "word"
    }

    fn params(&self) -> Params {
        let (input, seed) = match self.corpus.source() {
            TextSource::Generated { seed, .. } => ("generated".to_string(), Some(*seed)),
            TextSource::File(f) => (f.display().to_string(), None),
        };
        Params {
            workers: Some(self.workers),
            mapping: Some(self.mapping.name()),
            input: Some(input),
            seed,
            bytes: Some(self.corpus.len()),
            batch: Some(self.batch),
            counters: Some(self.counters),
            chunk: Some(self.chunk),
            capacity: Some(self.capacity),
            monitor: monitor_name(self.monitor),
            logs: self.logs.clone(),
            ..Params::default()
        }
    }

    fn title(&self) -> String {
        format!(
            "wordcount  input={} batch={} counters={} chunk={} capacity={} mapping={} workers={}",
            self.corpus.source(),
            self.batch,
            self.counters,
            self.chunk,
            self.capacity,
            self.mapping,
            self.workers
        )
    }

    fn shows_wall_ms(&self) -> bool {
        true
    }
}

/// The network on OS threads ([`apps::wordcount::network`]).
fn threads(p: &WordcountParams) -> Result<Measurement> {
    let (counts, run) = apps::wordcount::network::<ThreadNet>(p, None, None)?;
    Ok(ThreadNet::figures(p.measured(run.wall, &counts)?, &run))
}

/// No network: the plain sequential loop ([`wc::count_words`]) on the
/// calling thread.
fn sequential(p: &WordcountParams) -> Result<Measurement> {
    let start = std::time::Instant::now();
    let counts = wc::count_words(p.corpus.text());
    let wall = start.elapsed();
    Ok(p.measured(wall, &counts)?)
}

/// The word count network ([`apps::wordcount`]), checked against the
/// sequential count after the run; under `--mapping auto`
/// `wordcount_auto` first.
fn rill(p: &WordcountParams) -> Result<Measurement> {
    let mon = monitor_config(p.monitor, p.logs.as_deref(), "wordcount");
    if p.mapping == MappingChoice::Auto {
        return wordcount_auto(p, &mon);
    }
    let run = apps::wordcount::run(p, &mon)?;
    let m = p.measured(run.wall, &run.value)?;
    Ok(rill_figures(m, &run.stats, &mon).with(|f| f.mapping = Some(p.mapping.name())))
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
    let m = real
        .measured(run.wall, &run.value)?
        .with(|f| f.auto = Some(plan.figures(run.wall)));
    Ok(rill_figures(m, &run.stats, mon).with(|f| f.mapping = Some("auto".into())))
}
