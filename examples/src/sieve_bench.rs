//! The prime sieve as a benchmark: its run on each engine (the network of
//! [`crate::apps::sieve`], written once for rill and OS threads; tokio's
//! [`crate::peers::sieve`]).

use anyhow::Result;

use crate::apps;
use crate::bench::{Measurement, ParamError, Params, SieveParams};
use crate::engines::{monitor_name, Bench, Engine};
use crate::net::{monitor_config, rill_figures, Net, ThreadNet};
use crate::peers;

impl Bench for SieveParams {
    fn name(&self) -> &'static str {
        "sieve"
    }

    fn validate(&self) -> Result<(), ParamError> {
        SieveParams::validate(self)
    }

    fn run(&self, engine: Engine) -> Result<Measurement> {
        match engine {
            Engine::Rill => rill(self),
            Engine::Threads => threads(self),
            Engine::Tokio => peers::sieve::tokio(self),
            Engine::Sequential => Err(engine.lacks("sieve")),
        }
    }

    fn op_name(&self) -> &'static str {
        "prime"
    }

    fn params(&self) -> Params {
        Params {
            workers: Some(self.opts.workers),
            mapping: Some(self.mapping.name()),
            primes: Some(self.primes),
            capacity: Some(self.capacity),
            monitor: monitor_name(self.opts.monitor),
            logs: self.opts.logs.clone(),
            ..Params::default()
        }
    }

    fn title(&self) -> String {
        format!(
            "sieve  primes={} capacity={} mapping={} workers={}",
            self.primes, self.capacity, self.mapping, self.opts.workers
        )
    }

    fn shows_wall_ms(&self) -> bool {
        true
    }

    fn crosses_workers(&self) -> bool {
        self.opts.workers > 1
    }

    fn variant(&self) -> Option<(&'static str, String)> {
        Some(("mapping", self.mapping.kind().into()))
    }

    fn rill_mapping(&self) -> String {
        self.mapping.name()
    }
}

/// The sieve network on OS threads ([`apps::sieve::network`]); `threads`
/// counts the threads the run made (the filters, the generator and the
/// sink).
fn threads(p: &SieveParams) -> Result<Measurement> {
    let (out, run) = apps::sieve::network::<ThreadNet>(p, None, None)?;
    let m = p.measured(run.wall, &out.primes, out.messages)?;
    let threads = out.primes.len() as u64 + 2;
    Ok(ThreadNet::figures(m, &run).with(|f| f.threads = Some(threads)))
}

/// The prime sieve ([`apps::sieve`]), its primes checked against the
/// sequential sieve's after the run; `tasks` counts the tasks the run
/// made (the filters, the generator and the sink).
fn rill(p: &SieveParams) -> Result<Measurement> {
    let mon = monitor_config(p.opts.monitor, p.opts.logs.as_deref(), "sieve");
    let run = apps::sieve::run(p, &mon)?;
    let m = p.measured(run.wall, &run.value.primes, run.value.messages)?;
    Ok(rill_figures(m, &run.stats, &mon).with(|f| {
        f.mapping = Some(p.mapping.name());
        f.tasks = Some(run.stats.tasks_created);
    }))
}
