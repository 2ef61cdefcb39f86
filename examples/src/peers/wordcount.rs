//! The word count network on the peers, stage for stage as on rill
//! ([`crate::apps::wordcount`]): a source, a splitter, the counters and a
//! merger, with the same chunks, batches and routing ([`kernels`]).
//!
//! - OS threads run the network of [`crate::apps::wordcount::network`],
//!   written once for rill and them.
//! - [`tokio`](fn@tokio): one `tokio::spawn`ed task per stage on a multi-thread
//!   runtime with `workers` workers, `tokio::sync::mpsc::channel`s; the
//!   runtime is built before the clock starts.
//!
//! `wall` runs from just before the first stage is created until every stage
//! has ended and the merger's counts are in hand; the check comes after.

use std::time::Instant;

use anyhow::Result;
use tokio::sync::mpsc;

use crate::bench::{Measurement, WordcountParams};
use crate::kernels::wordcount::{self as kernels, Counts, WordsAs};
use crate::peers::tokio_rt::{join as join_task, multi_thread};
use std::sync::Arc;

/// The word count on tokio: `counters + 3` tasks on `workers` workers.
pub fn tokio(p: &WordcountParams) -> Result<Measurement> {
    let rt = multi_thread(p.opts.workers)?;
    let k = p.counters;
    let cap = p.capacity;
    let text = p.corpus.text().clone();
    let (chunk, batch, words) = (p.chunk, p.batch, p.words);
    let (wall, total) = rt.block_on(async move {
        let start = Instant::now();
        let mut stages = Vec::with_capacity(k + 2);

        let (to_merge, mut parts_in) = mpsc::channel::<Counts>(k);
        let dims = (k, cap, chunk, batch);
        match words {
            WordsAs::Owned => tokio_net::<kernels::OwnedWords>(text, dims, &mut stages, &to_merge),
            WordsAs::Slices => tokio_net::<kernels::SliceWords>(text, dims, &mut stages, &to_merge),
        }
        drop(to_merge);
        let merger = ::tokio::spawn(async move {
            let mut total = Counts::new();
            while let Some(part) = parts_in.recv().await {
                kernels::merge_into(&mut total, part);
            }
            total
        });

        let total = join_task("wc-merge", merger).await;
        let mut stages_result = Ok(());
        for h in stages {
            stages_result = stages_result.and(join_task("wc-stage", h).await);
        }
        let wall = start.elapsed();
        stages_result?;
        Ok::<_, anyhow::Error>((wall, total?))
    })?;
    Ok(p.measured(wall, &total)?
        .with(|f| f.tasks = Some((k + 3) as u64)))
}

/// The tokio stages before the merger: the source, the splitter and the
/// counters, with messages as `W` makes them; `dims` is (counters,
/// capacity, chunk, batch). Called inside the runtime.
fn tokio_net<W: kernels::Words>(
    text: Arc<String>,
    dims: (usize, usize, usize, usize),
    stages: &mut Vec<::tokio::task::JoinHandle<()>>,
    to_merge: &mpsc::Sender<Counts>,
) {
    let (k, cap, chunk, batch) = dims;
    let (to_split, mut chunks_in) = mpsc::channel::<W::Chunk>(cap);
    stages.push(::tokio::spawn(async move {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(W::chunk(c)).await.is_err() {
                return;
            }
        }
    }));

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| mpsc::channel::<W::Batch>(cap)).unzip();
    stages.push(::tokio::spawn(async move {
        // The batches of a chunk, then their sends: the splitter's cut
        // does not await.
        let mut s = W::splitter(k, batch);
        let mut out = Vec::new();
        let mut more = true;
        while more {
            more = match chunks_in.recv().await {
                Some(chunk) => W::split(&mut s, &chunk, |c, b| {
                    out.push((c, b));
                    true
                }),
                None => false,
            };
            if !more {
                W::finish(std::mem::replace(&mut s, W::splitter(k, batch)), |c, b| {
                    out.push((c, b));
                    true
                });
            }
            for (c, b) in out.drain(..) {
                if to_counters[c].send(b).await.is_err() {
                    return;
                }
            }
        }
    }));

    for mut words_in in counter_ins {
        let out = to_merge.clone();
        stages.push(::tokio::spawn(async move {
            let mut counts = Counts::new();
            while let Some(words) = words_in.recv().await {
                W::count(&mut counts, words);
            }
            let _ = out.send(counts).await;
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::wordcount::{Corpus, TextSource};

    fn params(batch: usize, counters: usize) -> WordcountParams {
        let corpus = Corpus::new(TextSource::Generated {
            bytes: 40_000,
            seed: 3,
        })
        .unwrap();
        WordcountParams {
            batch,
            counters,
            chunk: 1000,
            capacity: 2,
            ..WordcountParams::new(corpus, 2)
        }
    }

    #[test]
    fn every_engine_verifies() {
        for (batch, counters, words) in [
            (1, 1, WordsAs::Owned),
            (64, 4, WordsAs::Owned),
            (1, 1, WordsAs::Slices),
            (64, 4, WordsAs::Slices),
        ] {
            let p = WordcountParams {
                words,
                ..params(batch, counters)
            };
            let words = kernels::total_words(p.corpus.reference());
            for engine in crate::engines::Engine::WORDCOUNT {
                let m = crate::engines::Bench::run(&p, engine).unwrap();
                assert_eq!(m.ops, words, "{engine}");
                assert_eq!(m.figures.distinct, Some(p.corpus.reference().len() as u64));
            }
        }
    }
}
