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

use std::thread::{self, JoinHandle};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use crossbeam_channel::bounded;
use tokio::sync::mpsc;

use crate::bench::{Measurement, WordcountParams};
use crate::kernels::wordcount::{self as kernels, Counts, WordsAs};
use std::sync::Arc;

fn spawn<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .with_context(|| format!("spawning thread {name}"))
}

fn join<T>(h: JoinHandle<T>) -> Result<T> {
    let name = h.thread().name().unwrap_or("?").to_string();
    h.join()
        .map_err(|p| anyhow!("thread {name} panicked: {}", super::threads::panic_text(&p)))
}

/// The word count on OS threads: `counters + 3` threads.
pub fn threads(p: &WordcountParams) -> Result<Measurement> {
    let k = p.counters;
    let start = Instant::now();
    let mut stages: Vec<JoinHandle<()>> = Vec::with_capacity(k + 2);

    let (to_merge, parts_in) = bounded::<Counts>(k);
    match p.words {
        WordsAs::Owned => threads_owned(p, &mut stages, &to_merge)?,
        WordsAs::Slices => threads_slices(p, &mut stages, &to_merge)?,
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
    Ok(p.measured(wall, &total?)?.with("threads", (k + 3) as u64))
}

/// The threads' source, splitter and counters with a `String` per word
/// ([`WordsAs::Owned`]); the counters send their maps to `to_merge`.
fn threads_owned(
    p: &WordcountParams,
    stages: &mut Vec<JoinHandle<()>>,
    to_merge: &crossbeam_channel::Sender<Counts>,
) -> Result<()> {
    let k = p.counters;
    let cap = p.capacity;
    let (to_split, chunks_in) = bounded::<String>(cap);
    let text = p.corpus.text().clone();
    let chunk = p.chunk;
    stages.push(spawn("wc-source".into(), move || {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(c.to_owned()).is_err() {
                return;
            }
        }
    })?);

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| bounded::<Vec<String>>(cap)).unzip();
    let batch = p.batch;
    stages.push(spawn("wc-split".into(), move || {
        let mut batcher = kernels::Batcher::new(k, batch);
        for chunk in chunks_in {
            for word in chunk.split_whitespace() {
                if let Some((c, full)) = batcher.push(word) {
                    if to_counters[c].send(full).is_err() {
                        return;
                    }
                }
            }
        }
        for (c, rest) in batcher.finish() {
            if to_counters[c].send(rest).is_err() {
                return;
            }
        }
    })?);

    for (i, words_in) in counter_ins.into_iter().enumerate() {
        let out = to_merge.clone();
        stages.push(spawn(format!("wc-count-{i}"), move || {
            let mut counts = Counts::new();
            for words in words_in {
                kernels::add_batch(&mut counts, words);
            }
            let _ = out.send(counts);
        })?);
    }
    Ok(())
}

/// [`threads_owned`] with byte ranges of shared chunks ([`WordsAs::Slices`]).
fn threads_slices(
    p: &WordcountParams,
    stages: &mut Vec<JoinHandle<()>>,
    to_merge: &crossbeam_channel::Sender<Counts>,
) -> Result<()> {
    let k = p.counters;
    let cap = p.capacity;
    let (to_split, chunks_in) = bounded::<Arc<str>>(cap);
    let text = p.corpus.text().clone();
    let chunk = p.chunk;
    stages.push(spawn("wc-source".into(), move || {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(Arc::from(c)).is_err() {
                return;
            }
        }
    })?);

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| bounded::<kernels::Slices>(cap)).unzip();
    let batch = p.batch;
    stages.push(spawn("wc-split".into(), move || {
        let mut batcher = kernels::SliceBatcher::new(k, batch);
        let mut out = Vec::new();
        for chunk in chunks_in {
            batcher.split(&chunk, &mut out);
            for (c, b) in out.drain(..) {
                if to_counters[c].send(b).is_err() {
                    return;
                }
            }
        }
    })?);

    for (i, words_in) in counter_ins.into_iter().enumerate() {
        let out = to_merge.clone();
        stages.push(spawn(format!("wc-count-{i}"), move || {
            let mut counts = Counts::new();
            for words in words_in {
                kernels::add_slices(&mut counts, &words);
            }
            let _ = out.send(counts);
        })?);
    }
    Ok(())
}

/// Awaits a task and turns a panic or cancellation into an error.
async fn join_task<T>(what: &str, h: ::tokio::task::JoinHandle<T>) -> Result<T> {
    h.await.map_err(|e| {
        if e.is_panic() {
            anyhow!(
                "tokio task {what} panicked: {}",
                super::threads::panic_text(&e.into_panic())
            )
        } else {
            anyhow!("tokio task {what} was cancelled")
        }
    })
}

/// The word count on tokio: `counters + 3` tasks on `workers` workers.
pub fn tokio(p: &WordcountParams) -> Result<Measurement> {
    let rt = ::tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.workers)
        .thread_name("tokio-peer")
        .build()
        .context("building the tokio runtime")?;
    let k = p.counters;
    let cap = p.capacity;
    let text = p.corpus.text().clone();
    let (chunk, batch, words) = (p.chunk, p.batch, p.words);
    let (wall, total) = rt.block_on(async move {
        let start = Instant::now();
        let mut stages = Vec::with_capacity(k + 2);

        let (to_merge, mut parts_in) = mpsc::channel::<Counts>(k);
        match words {
            WordsAs::Owned => tokio_owned(text, (k, cap, chunk, batch), &mut stages, &to_merge),
            WordsAs::Slices => tokio_slices(text, (k, cap, chunk, batch), &mut stages, &to_merge),
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
    Ok(p.measured(wall, &total)?.with("tasks", (k + 3) as u64))
}

/// The tokio stages before the merger with a `String` per word
/// ([`WordsAs::Owned`]); `dims` is (counters, capacity, chunk, batch).
/// Called inside the runtime.
fn tokio_owned(
    text: Arc<String>,
    dims: (usize, usize, usize, usize),
    stages: &mut Vec<::tokio::task::JoinHandle<()>>,
    to_merge: &mpsc::Sender<Counts>,
) {
    let (k, cap, chunk, batch) = dims;
    let (to_split, mut chunks_in) = mpsc::channel::<String>(cap);
    stages.push(::tokio::spawn(async move {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(c.to_owned()).await.is_err() {
                return;
            }
        }
    }));

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| mpsc::channel::<Vec<String>>(cap)).unzip();
    stages.push(::tokio::spawn(async move {
        let mut batcher = kernels::Batcher::new(k, batch);
        while let Some(chunk) = chunks_in.recv().await {
            for word in chunk.split_whitespace() {
                if let Some((c, full)) = batcher.push(word) {
                    if to_counters[c].send(full).await.is_err() {
                        return;
                    }
                }
            }
        }
        for (c, rest) in batcher.finish() {
            if to_counters[c].send(rest).await.is_err() {
                return;
            }
        }
    }));

    for mut words_in in counter_ins {
        let out = to_merge.clone();
        stages.push(::tokio::spawn(async move {
            let mut counts = Counts::new();
            while let Some(words) = words_in.recv().await {
                kernels::add_batch(&mut counts, words);
            }
            let _ = out.send(counts).await;
        }));
    }
}

/// [`tokio_owned`] with byte ranges of shared chunks ([`WordsAs::Slices`]).
fn tokio_slices(
    text: Arc<String>,
    dims: (usize, usize, usize, usize),
    stages: &mut Vec<::tokio::task::JoinHandle<()>>,
    to_merge: &mpsc::Sender<Counts>,
) {
    let (k, cap, chunk, batch) = dims;
    let (to_split, mut chunks_in) = mpsc::channel::<Arc<str>>(cap);
    stages.push(::tokio::spawn(async move {
        for c in kernels::chunks(&text, chunk) {
            if to_split.send(Arc::from(c)).await.is_err() {
                return;
            }
        }
    }));

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) = (0..k)
        .map(|_| mpsc::channel::<kernels::Slices>(cap))
        .unzip();
    stages.push(::tokio::spawn(async move {
        let mut batcher = kernels::SliceBatcher::new(k, batch);
        let mut out = Vec::new();
        while let Some(chunk) = chunks_in.recv().await {
            batcher.split(&chunk, &mut out);
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
                kernels::add_slices(&mut counts, &words);
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
            assert_eq!(m.extra["distinct"], p.corpus.reference().len() as u64);
        }
    }
}
