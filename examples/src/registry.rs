//! The engines, in the order the command line runs them, and [`run`], the
//! entry point that runs a job on one: it validates the job's parameters
//! before any engine sees them, and turns a panic inside an engine into an
//! error, so that one engine's failure never stops the others' runs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{anyhow, Result};

use crate::bench::Measurement;
use crate::engines::{Engine, Job, Sequential};
use crate::net::panic_text;
use crate::peers::threads::Threads;
use crate::peers::tokio_rt::Tokio;
use crate::rill_engine::Rill;

/// Every engine that runs a network, rill first (the order in which the
/// command line runs them).
pub const NETWORKS: [&dyn Engine; 3] = [&Rill, &Threads, &Tokio];

/// The engines of the word count: the networks, then the sequential loop.
pub const WORDCOUNT: [&dyn Engine; 4] = [&Rill, &Threads, &Tokio, &Sequential];

/// The engine called `name`, if there is one.
pub fn by_name(name: &str) -> Option<&'static dyn Engine> {
    WORDCOUNT.into_iter().find(|e| e.name() == name)
}

/// Runs `job` once on `engine`: its parameters validated first, a panic
/// inside the engine an error.
pub fn run(engine: &dyn Engine, job: &Job) -> Result<Measurement> {
    job.validate()?;
    catch_unwind(AssertUnwindSafe(|| match job {
        Job::Pipe(p) => engine.pipe(p),
        Job::Ring(p) => engine.ring(p),
        Job::Micro(p) => engine.micro(p),
        Job::Wordcount(p) => engine.wordcount(p),
        Job::Sieve(p) => engine.sieve(p),
    }))
    .unwrap_or_else(|p| Err(anyhow!("engine {engine} panicked: {}", panic_text(&*p))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{
        MicroParams, MicroRow, PipeParams, RingParams, SieveParams, WordcountParams,
    };
    use crate::kernels::wordcount;

    #[test]
    fn rill_runs_and_verifies() {
        let p = PipeParams {
            depth: 4,
            messages: 100,
            workers: 2,
            ..PipeParams::default()
        };
        let m = run(&Rill, &Job::Pipe(p)).unwrap();
        assert_eq!(m.ops, 300);
    }

    #[test]
    fn pipe_work_and_mappings_on_every_engine() {
        let p = PipeParams {
            depth: 5,
            messages: 200,
            workers: 2,
            work_ns: 100,
            slow: vec![(1, 1000)],
            ..PipeParams::default()
        };
        for engine in NETWORKS {
            let m = run(engine, &Job::Pipe(p.clone())).unwrap();
            assert_eq!(m.ops, 800, "{engine}");
            // Relay 1 alone works 200 x 1 us (at the calibrated speed).
            assert!(m.wall >= std::time::Duration::from_micros(100), "{engine}");
        }
        for m in ["rr", "parts", "steal"] {
            let mapping = Some(m.parse().unwrap());
            let pipe = PipeParams {
                mapping: mapping.clone(),
                ..p.clone()
            };
            run(&Rill, &Job::Pipe(pipe)).unwrap();
            let ring = RingParams {
                size: 5,
                hops: 100,
                workers: 2,
                mapping,
                ..RingParams::default()
            };
            run(&Rill, &Job::Ring(ring)).unwrap();
        }
    }

    #[test]
    fn invalid_params_rejected_before_engines() {
        let pipe = PipeParams {
            depth: 1,
            ..PipeParams::default()
        };
        let ring = RingParams {
            hops: 0,
            ..RingParams::default()
        };
        let wordcount = WordcountParams {
            batch: 0,
            ..WordcountParams::new(
                wordcount::Corpus::of(
                    wordcount::TextSource::Generated { bytes: 3, seed: 0 },
                    "a b".into(),
                ),
                1,
            )
        };
        let micro = MicroParams::new(MicroRow::Yield, 0);
        for engine in NETWORKS {
            for job in [
                Job::Pipe(pipe.clone()),
                Job::Ring(ring.clone()),
                Job::Wordcount(wordcount.clone()),
                Job::Micro(micro.clone()),
            ] {
                let e = run(engine, &job).unwrap_err().to_string();
                assert!(e.contains("at least"), "{engine} {}: {e}", job.bench());
            }
        }
    }

    #[test]
    fn wordcount_on_every_engine() {
        let corpus = wordcount::Corpus::new(wordcount::TextSource::Generated {
            bytes: 20_000,
            seed: 9,
        })
        .unwrap();
        let p = WordcountParams::new(corpus, 2);
        let words = wordcount::total_words(p.corpus.reference());
        for engine in WORDCOUNT {
            let m = run(engine, &Job::Wordcount(p.clone())).unwrap();
            assert_eq!(m.ops, words, "{engine}");
        }
        let e = run(&Sequential, &Job::Pipe(PipeParams::default())).unwrap_err();
        assert!(e.to_string().contains("no sequential engine"), "{e}");
    }

    #[test]
    fn sieve_of_100_primes_on_every_engine_with_1_and_2_workers() {
        for workers in [1, 2] {
            let p = SieveParams {
                primes: 100,
                workers,
                ..SieveParams::default()
            };
            for engine in NETWORKS {
                // Verified inside: the primes are the sequential sieve's.
                let m = run(engine, &Job::Sieve(p.clone())).unwrap();
                assert_eq!(m.ops, 100, "{engine} on {workers}");
                assert_eq!(m.extra["largest"], 541, "{engine} on {workers}");
            }
        }
        let e = run(&Sequential, &Job::Sieve(SieveParams::default())).unwrap_err();
        assert!(
            e.to_string().contains("sieve has no sequential engine"),
            "{e}"
        );
        let bad = SieveParams {
            primes: 0,
            ..SieveParams::default()
        };
        let e = run(&Rill, &Job::Sieve(bad)).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
    }

    #[test]
    fn names() {
        let names: Vec<&str> = WORDCOUNT.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["rill", "threads", "tokio", "sequential"]);
        for e in WORDCOUNT {
            assert_eq!(by_name(e.name()), Some(e));
        }
        assert_eq!(by_name("go"), None);
    }

    #[test]
    fn panics_become_errors() {
        struct Boom;
        impl Engine for Boom {
            fn name(&self) -> &'static str {
                "boom"
            }
            fn about(&self) -> &'static str {
                "panics"
            }
            fn pipe(&self, _: &PipeParams) -> Result<Measurement> {
                panic!("boom")
            }
        }
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = run(&Boom, &Job::Pipe(PipeParams::default()));
        std::panic::set_hook(prev);
        let e = r.unwrap_err().to_string();
        assert!(e.contains("boom panicked: boom"), "{e}");
    }
}
