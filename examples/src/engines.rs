//! One entry point per benchmark that dispatches on the [`Engine`].
//!
//! Parameters are validated here, before any engine sees them, and a panic inside
//! an engine is caught and returned as an error, so that one engine's failure
//! never stops the others' runs.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{anyhow, Result};

use crate::bench::{Engine, Measurement, MicroParams, PipeParams, RingParams, WordcountParams};
use crate::kernels::wordcount;
use crate::{peers, rill_engine};

fn guarded(engine: Engine, f: impl FnOnce() -> Result<Measurement>) -> Result<Measurement> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(anyhow!(
            "engine {engine} panicked: {}",
            peers::threads::panic_text(&*p)
        ))
    })
}

fn no_sequential(bench: &str) -> Result<Measurement> {
    Err(anyhow!(
        "{bench} has no sequential engine: use rill, threads or tokio"
    ))
}

/// Runs the pipe benchmark on `engine`.
pub fn run_pipe(engine: Engine, p: &PipeParams) -> Result<Measurement> {
    p.validate()?;
    guarded(engine, || match engine {
        Engine::Rill => rill_engine::pipe(p),
        Engine::Threads => peers::threads::pipe(p),
        Engine::Tokio => peers::tokio_rt::pipe(p),
        Engine::Sequential => no_sequential("pipe"),
    })
}

/// Runs the ring benchmark on `engine`.
pub fn run_ring(engine: Engine, p: &RingParams) -> Result<Measurement> {
    p.validate()?;
    guarded(engine, || match engine {
        Engine::Rill => rill_engine::ring(p),
        Engine::Threads => peers::threads::ring(p),
        Engine::Tokio => peers::tokio_rt::ring(p),
        Engine::Sequential => no_sequential("ring"),
    })
}

/// Runs the word count on `engine`; `sequential` times the plain loop
/// ([`wordcount::count_words`]) on this thread.
pub fn run_wordcount(engine: Engine, p: &WordcountParams) -> Result<Measurement> {
    p.validate()?;
    guarded(engine, || match engine {
        Engine::Rill => rill_engine::wordcount(p),
        Engine::Threads => peers::wordcount::threads(p),
        Engine::Tokio => peers::wordcount::tokio(p),
        Engine::Sequential => {
            let start = std::time::Instant::now();
            let counts = wordcount::count_words(p.corpus.text());
            let wall = start.elapsed();
            Ok(p.measured(wall, &counts)?)
        }
    })
}

/// Runs one micro row on `engine` (rill's logs go to `LOGS/ROW`).
pub fn run_micro(engine: Engine, p: &MicroParams) -> Result<Measurement> {
    p.validate()?;
    guarded(engine, || match engine {
        Engine::Rill => rill_engine::micro(p),
        Engine::Threads => peers::threads::micro(p.row, p.workers),
        Engine::Tokio => peers::tokio_rt::micro(p.row, p.workers),
        Engine::Sequential => no_sequential("micro"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rill_runs_and_verifies() {
        let p = PipeParams {
            depth: 4,
            messages: 100,
            workers: 2,
            ..PipeParams::default()
        };
        let m = run_pipe(Engine::Rill, &p).unwrap();
        assert_eq!(m.ops, 300);
    }

    #[test]
    fn invalid_params_rejected_before_engines() {
        let p = PipeParams {
            depth: 1,
            ..PipeParams::default()
        };
        for engine in Engine::ALL {
            assert!(run_pipe(engine, &p).is_err());
        }
        let micro = MicroParams::new(crate::bench::MicroRow::Yield, 0);
        assert!(run_micro(Engine::Threads, &micro).is_err());
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
        for engine in Engine::ALL {
            assert!(run_ring(engine, &ring).is_err());
            assert!(run_wordcount(engine, &wordcount).is_err());
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
        for engine in Engine::WORDCOUNT {
            let m = run_wordcount(engine, &p).unwrap();
            assert_eq!(m.ops, words, "{engine}");
        }
        let e = run_pipe(Engine::Sequential, &PipeParams::default()).unwrap_err();
        assert!(e.to_string().contains("no sequential engine"), "{e}");
    }

    #[test]
    fn panics_become_errors() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = guarded(Engine::Tokio, || panic!("boom"));
        std::panic::set_hook(prev);
        let e = r.unwrap_err().to_string();
        assert!(e.contains("tokio panicked: boom"), "{e}");
    }
}
