//! The engines, in the order the command line runs them, and [`run`], the
//! entry point that runs a job on one: it validates the job's parameters
//! before any engine sees them, and turns a panic inside an engine into an
//! error, so that one engine's failure never stops the others' runs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{anyhow, Result};

use crate::bench::Measurement;
use crate::engines::{Engine, Job};
use crate::net::panic_text;

/// Every engine that runs a network, rill first.
pub const NETWORKS: [Engine; 3] = Engine::NETWORKS;

/// The engines of the word count: the networks, then the sequential loop.
pub const WORDCOUNT: [Engine; 4] = Engine::WORDCOUNT;

/// The engine called `name`, if there is one.
pub fn by_name(name: &str) -> Option<Engine> {
    Engine::by_name(name)
}

/// Runs `job` once on `engine`: its parameters validated first, a panic
/// inside the engine an error.
pub fn run(engine: Engine, job: &Job) -> Result<Measurement> {
    job.validate()?;
    guarded(engine, || job.bench().run(engine))
}

/// `f`, a run on `engine`, its panic an error naming the engine.
fn guarded(engine: Engine, f: impl FnOnce() -> Result<Measurement>) -> Result<Measurement> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(anyhow!("engine {engine} panicked: {}", panic_text(&*p))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::BenchOpts;
    use crate::bench::{
        MicroParams, MicroRow, PipeParams, RingParams, SieveParams, WordcountParams,
    };
    use crate::kernels::wordcount;

    #[test]
    fn a_pipe_on_rill_runs_and_verifies() {
        let p = PipeParams {
            opts: BenchOpts::on(2),
            depth: 4,
            messages: 100,
            ..PipeParams::default()
        };
        let m = run(Engine::Rill, &Job::new(p)).unwrap();
        assert_eq!(m.ops, 300);
    }

    #[test]
    fn pipe_work_and_mappings_on_every_engine() {
        let p = PipeParams {
            opts: BenchOpts::on(2),
            depth: 5,
            messages: 200,
            work_ns: 100,
            slow: vec![(1, 1000)],
            ..PipeParams::default()
        };
        for engine in NETWORKS {
            let m = run(engine, &Job::new(p.clone())).unwrap();
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
            run(Engine::Rill, &Job::new(pipe)).unwrap();
            let ring = RingParams {
                opts: BenchOpts::on(2),
                size: 5,
                hops: 100,
                mapping,
                ..RingParams::default()
            };
            run(Engine::Rill, &Job::new(ring)).unwrap();
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
                Job::new(pipe.clone()),
                Job::new(ring.clone()),
                Job::new(wordcount.clone()),
                Job::new(micro.clone()),
            ] {
                let e = run(engine, &job).unwrap_err().to_string();
                assert!(e.contains("at least"), "{engine} {}: {e}", job.name());
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
            let m = run(engine, &Job::new(p.clone())).unwrap();
            assert_eq!(m.ops, words, "{engine}");
        }
        let e = run(Engine::Sequential, &Job::new(PipeParams::default())).unwrap_err();
        assert!(e.to_string().contains("no sequential engine"), "{e}");
    }

    #[test]
    fn sieve_of_100_primes_on_every_engine_with_1_and_2_workers() {
        for workers in [1, 2] {
            let p = SieveParams {
                opts: BenchOpts::on(workers),
                primes: 100,
                ..SieveParams::default()
            };
            for engine in NETWORKS {
                // Verified inside: the primes are the sequential sieve's.
                let m = run(engine, &Job::new(p.clone())).unwrap();
                assert_eq!(m.ops, 100, "{engine} on {workers}");
                assert_eq!(m.figures.largest, Some(541), "{engine} on {workers}");
            }
        }
        let e = run(Engine::Sequential, &Job::new(SieveParams::default())).unwrap_err();
        assert!(
            e.to_string().contains("sieve has no sequential engine"),
            "{e}"
        );
        let bad = SieveParams {
            primes: 0,
            ..SieveParams::default()
        };
        let e = run(Engine::Rill, &Job::new(bad)).unwrap_err();
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
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = guarded(Engine::Threads, || panic!("boom"));
        std::panic::set_hook(prev);
        let e = r.unwrap_err().to_string();
        assert!(e.contains("threads panicked: boom"), "{e}");
    }
}
