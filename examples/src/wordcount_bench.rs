//! The word count as a benchmark: its run on each engine (rill's network
//! [`crate::apps::wordcount`], under `--mapping auto` after a pilot; the
//! peers' [`crate::peers::wordcount`]; the sequential loop).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use rill::MonitorConfig;

use crate::apps::{self, auto, MappingChoice};
use crate::bench::{usize_from, BenchOpts, Measurement, ParamError, Params, WordcountParams};
use crate::engines::{monitor_name, Bench, Engine, Job, Jobs};
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
            workers: Some(self.opts.workers),
            mapping: Some(self.mapping.name()),
            input: Some(input),
            seed,
            bytes: Some(self.corpus.len()),
            batch: Some(self.batch),
            counters: Some(self.counters),
            chunk: Some(self.chunk),
            capacity: Some(self.capacity),
            monitor: monitor_name(self.opts.monitor),
            logs: self.opts.logs.clone(),
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
            self.opts.workers
        )
    }

    fn shows_wall_ms(&self) -> bool {
        true
    }

    fn variant(&self) -> Option<(&'static str, String)> {
        Some(("words", self.words.name().into()))
    }

    fn rill_mapping(&self) -> String {
        self.mapping.name()
    }
}

/// `rill-bench wordcount`'s command line: where the text comes from, and
/// the word count's parameters.
#[derive(Clone, Debug, Args)]
pub struct WordcountArgs {
    /// The text.
    #[command(flatten)]
    pub text: TextArgs,
    /// Everything else.
    #[command(flatten)]
    pub params: WordcountParams,
}

/// Where the word count's text comes from.
#[derive(Clone, Debug, Args)]
pub struct TextArgs {
    /// Text file to count, UTF-8 [default: generated text, see --bytes].
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Bytes of generated text (lines of 0 to 24 words drawn from a Zipf
    /// distribution over 30,000 words) when no --input is given.
    #[arg(long, value_name = "N", default_value_t = wc::DEFAULT_BYTES,
          conflicts_with = "input", value_parser = usize_from(1))]
    pub bytes: usize,

    /// Seed of the generated text.
    #[arg(long, default_value_t = 1, conflicts_with = "input")]
    pub seed: u64,
}

impl TextArgs {
    /// The text's source.
    pub fn source(&self) -> TextSource {
        match &self.input {
            Some(f) => TextSource::File(f.clone()),
            None => TextSource::Generated {
                bytes: self.bytes,
                seed: self.seed,
            },
        }
    }
}

impl Jobs for WordcountArgs {
    fn name(&self) -> &'static str {
        "wordcount"
    }

    /// The word count of the text, made or read here (a file that cannot
    /// be read is a parameter error).
    fn jobs(&self) -> Result<Vec<Job>, ParamError> {
        let p = WordcountParams {
            corpus: Corpus::new(self.text.source()).map_err(ParamError)?,
            ..self.params.clone()
        };
        p.jobs()
    }

    /// The networks and the sequential loop.
    fn engines(&self) -> &'static [Engine] {
        &Engine::WORDCOUNT
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
    let mon = monitor_config(p.opts.monitor, p.opts.logs.as_deref(), "wordcount");
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
        .opts
        .logs
        .clone()
        .unwrap_or_else(|| PathBuf::from(auto::AUTO_ROOT).join("wordcount"));
    let plan = auto::plan(&dir, p.opts.workers, p.pilot_monitor, |pmon| {
        let text = p.corpus.text();
        let want = auto::pilot_size(text.len() as u64, p.pilot, 64 << 10).max(1) as usize;
        let head = wc::chunks(text, want).next().unwrap_or("");
        let pilot = WordcountParams {
            corpus: Corpus::of(p.corpus.source().clone(), head.to_string()),
            mapping: MappingChoice::Rr,
            opts: BenchOpts {
                monitor: Some(pmon.flags),
                logs: pmon.dir.clone(),
                ..p.opts.clone()
            },
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
