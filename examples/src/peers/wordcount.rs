//! The word count network on the peers, stage for stage as on rill
//! ([`crate::apps::wordcount`]): a source, a splitter, the counters and a
//! merger, with the same chunks, batches and routing ([`kernels`]).
//!
//! - [`threads`]: one OS thread per stage, `crossbeam_channel::bounded`
//!   channels; the counters send their final maps into one channel that the
//!   merger reads until every counter has dropped its sender.
//! - [`tokio`](fn@tokio): one `tokio::spawn`ed task per stage on a multi-thread
//!   runtime with `workers` workers, `tokio::sync::mpsc::channel`s; the
//!   runtime is built before the clock starts.
//!
//! `wall` runs from just before the first stage is created until every stage
//! has ended and the merger's counts are in hand; the check comes after.

use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Result;
use crossbeam_channel::bounded;
use tokio::sync::mpsc;

use crate::bench::{Measurement, WordcountParams};
use crate::kernels::wordcount::{self as kernels, Counts, WordsAs};
use crate::net::{join_thread as join, spawn_thread as spawn};
use crate::peers::tokio_rt::{join as join_task, multi_thread};
use std::sync::Arc;

/// The word count on OS threads: `counters + 3` threads.
pub fn threads(p: &WordcountParams) -> Result<Measurement> {
    let k = p.counters;
    let start = Instant::now();
    let mut stages: Vec<JoinHandle<()>> = Vec::with_capacity(k + 2);

    let (to_merge, parts_in) = bounded::<Counts>(k);
    let batch = p.batch;
    match p.words {
        WordsAs::Owned => {
            threads_net::<kernels::OwnedWords>(p, &mut stages, &to_merge, move |chunks_in, to| {
                let mut batcher = kernels::Batcher::new(k, batch);
                for chunk in chunks_in {
                    for word in chunk.split_whitespace() {
                        if let Some((c, full)) = batcher.push(word) {
                            if to[c].send(full).is_err() {
                                return;
                            }
                        }
                    }
                }
                for (c, rest) in batcher.finish() {
                    if to[c].send(rest).is_err() {
                        return;
                    }
                }
            })?
        }
        WordsAs::Slices => {
            threads_net::<kernels::SliceWords>(p, &mut stages, &to_merge, move |chunks_in, to| {
                let mut batcher = kernels::SliceBatcher::new(k, batch);
                let mut out = Vec::new();
                for chunk in chunks_in {
                    batcher.split(&chunk, &mut out);
                    for (c, b) in out.drain(..) {
                        if to[c].send(b).is_err() {
                            return;
                        }
                    }
                }
            })?
        }
    }
    drop(to_merge);
    let merger = spawn("wc-merge".into(), move || {
        let mut total = Counts::new();
        for part in parts_in {
            kernels::merge_into(&mut total, part);
        }
        total
    })?;

    let total = join(merger);
    let stages: Result<Vec<()>> = stages.into_iter().map(join).collect();
    let wall = start.elapsed();
    // A stage fails only by panicking, which leaves the counts short: report
    // the panic, the cause.
    stages?;
    Ok(p.measured(wall, &total?)?
        .with(|f| f.threads = Some((k + 3) as u64)))
}

/// The threads' source, the splitter `split` (given the chunks' receiver
/// and a sender per counter) and the counters, with messages as `W` makes
/// them; the counters send their maps to `to_merge`.
fn threads_net<W: kernels::Words>(
    p: &WordcountParams,
    stages: &mut Vec<JoinHandle<()>>,
    to_merge: &crossbeam_channel::Sender<Counts>,
    split: impl FnOnce(crossbeam_channel::Receiver<W::Chunk>, Vec<crossbeam_channel::Sender<W::Batch>>)
        + Send
        + 'static,
) -> Result<()> {
    let cap = p.capacity;
    let (to_split, chunks_in) = bounded::<W::Chunk>(cap);
    let text = p.corpus.text().clone();
    let chunk = p.chunk;
    stages.push(spawn("wc-source".into(), move || {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(W::chunk(c)).is_err() {
                return;
            }
        }
    })?);

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..p.counters).map(|_| bounded::<W::Batch>(cap)).unzip();
    stages.push(spawn("wc-split".into(), move || {
        split(chunks_in, to_counters)
    })?);

    for (i, words_in) in counter_ins.into_iter().enumerate() {
        let out = to_merge.clone();
        stages.push(spawn(format!("wc-count-{i}"), move || {
            let mut counts = Counts::new();
            for words in words_in {
                W::count(&mut counts, words);
            }
            let _ = out.send(counts);
        })?);
    }
    Ok(())
}

/// The word count on tokio: `counters + 3` tasks on `workers` workers.
pub fn tokio(p: &WordcountParams) -> Result<Measurement> {
    let rt = multi_thread(p.workers)?;
    let k = p.counters;
    let cap = p.capacity;
    let text = p.corpus.text().clone();
    let (chunk, batch, words) = (p.chunk, p.batch, p.words);
    let (wall, total) = rt.block_on(async move {
        let start = Instant::now();
        let mut stages = Vec::with_capacity(k + 2);

        let (to_merge, mut parts_in) = mpsc::channel::<Counts>(k);
        let dims = (k, cap, chunk);
        match words {
            WordsAs::Owned => tokio_net::<kernels::OwnedWords, _, _>(
                text,
                dims,
                &mut stages,
                &to_merge,
                move |mut chunks_in, to| async move {
                    let mut batcher = kernels::Batcher::new(k, batch);
                    while let Some(chunk) = chunks_in.recv().await {
                        for word in chunk.split_whitespace() {
                            if let Some((c, full)) = batcher.push(word) {
                                if to[c].send(full).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                    for (c, rest) in batcher.finish() {
                        if to[c].send(rest).await.is_err() {
                            return;
                        }
                    }
                },
            ),
            WordsAs::Slices => tokio_net::<kernels::SliceWords, _, _>(
                text,
                dims,
                &mut stages,
                &to_merge,
                move |mut chunks_in, to| async move {
                    let mut batcher = kernels::SliceBatcher::new(k, batch);
                    let mut out = Vec::new();
                    while let Some(chunk) = chunks_in.recv().await {
                        batcher.split(&chunk, &mut out);
                        for (c, b) in out.drain(..) {
                            if to[c].send(b).await.is_err() {
                                return;
                            }
                        }
                    }
                },
            ),
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

/// The tokio stages before the merger: the source, the splitter `split`
/// (given the chunks' receiver and a sender per counter) and the counters,
/// with messages as `W` makes them; `dims` is (counters, capacity, chunk).
/// Called inside the runtime.
fn tokio_net<W, S, F>(
    text: Arc<String>,
    dims: (usize, usize, usize),
    stages: &mut Vec<::tokio::task::JoinHandle<()>>,
    to_merge: &mpsc::Sender<Counts>,
    split: S,
) where
    W: kernels::Words,
    S: FnOnce(mpsc::Receiver<W::Chunk>, Vec<mpsc::Sender<W::Batch>>) -> F,
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (k, cap, chunk) = dims;
    let (to_split, chunks_in) = mpsc::channel::<W::Chunk>(cap);
    stages.push(::tokio::spawn(async move {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(W::chunk(c)).await.is_err() {
                return;
            }
        }
    }));

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| mpsc::channel::<W::Batch>(cap)).unzip();
    stages.push(::tokio::spawn(split(chunks_in, to_counters)));

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
    fn both_peers_verify() {
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
            let m = threads(&p).unwrap();
            assert_eq!(m.ops, words);
            let m = tokio(&p).unwrap();
            assert_eq!(m.ops, words);
            assert_eq!(m.figures.distinct, Some(p.corpus.reference().len() as u64));
        }
    }
}
