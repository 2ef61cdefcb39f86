//! The prime sieve on the peers, task for task as on rill
//! ([`crate::apps::sieve`]): a generator, a chain of filters that grows
//! while it runs (the last filter spawns the next when a number first
//! passes it) and a sink; the generator counts up to the same bound of
//! the last prime, the filter of the last prime reads its input to the end
//! without passing anything on, and the channels close down the chain, so
//! every engine reads the same numbers.
//!
//! - OS threads run the network of [`crate::apps::sieve::network`],
//!   written once for rill and them: a filter spawns its successor's
//!   thread and joins it once its own loop has ended.
//! - [`tokio`](fn@tokio): one `tokio::spawn`ed task per task on a
//!   multi-thread runtime with `workers` workers, `tokio::sync::mpsc`
//!   channels; a filter awaits its successor's handle once its own loop
//!   has ended. The runtime is built before the clock starts.
//!
//! `wall` runs from just before the first task is created until every
//! task has ended and the sink's primes are in hand; the check comes after.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use tokio::sync::mpsc;

use super::tokio_rt::{join as join_task, multi_thread};
use crate::bench::{Measurement, SieveParams};
use crate::kernels::sieve::{limit, Chain, Step};

/// The sieve on tokio: `primes + 2` tasks on `workers` workers.
pub fn tokio(p: &SieveParams) -> Result<Measurement> {
    let rt = multi_thread(p.opts.workers)?;
    let chain = Arc::new(Chain::new(p.primes, p.capacity));
    let c = chain.clone();
    let capacity = p.capacity;
    let last = limit(p.primes);
    let (wall, filters, primes) = rt.block_on(async move {
        let start = Instant::now();
        let (numbers_out, numbers_in) = mpsc::channel::<u64>(capacity);
        let (primes_out, mut primes_in) = mpsc::channel::<u64>(capacity);
        let sink = ::tokio::spawn(async move {
            let mut primes = Vec::new();
            while let Some(x) = primes_in.recv().await {
                primes.push(x);
            }
            primes
        });
        let generator = ::tokio::spawn(async move {
            for x in 2..=last {
                if numbers_out.send(x).await.is_err() {
                    return;
                }
            }
        });
        let first = ::tokio::spawn(tokio_filter(0, numbers_in, primes_out, c));
        let filters = join_task("sieve-filter", first).await;
        let generator = join_task("sieve-gen", generator).await;
        let primes = join_task("sieve-sink", sink).await;
        let wall = start.elapsed();
        let filters = filters??;
        generator?;
        Ok::<_, anyhow::Error>((wall, filters, primes?))
    })?;
    let reads = chain.reads() + primes.len() as u64;
    Ok(p.measured(wall, &primes, reads)?
        .with(|f| f.tasks = Some(filters as u64 + 2)))
}

/// A filter task's future (boxed: it spawns its successor, a future of its
/// own type).
type FilterTask = Pin<Box<dyn Future<Output = Result<usize>> + Send>>;

/// Filter task `k` (see the module doc and
/// [`Filter`](crate::kernels::sieve::Filter)); returns the
/// filters of the chain from `k` on.
fn tokio_filter(
    k: usize,
    mut input: mpsc::Receiver<u64>,
    primes_out: mpsc::Sender<u64>,
    chain: Arc<Chain>,
) -> FilterTask {
    Box::pin(async move {
        let mut f = chain.filter(k);
        let mut primes_out = Some(primes_out);
        let mut next: Option<(mpsc::Sender<u64>, ::tokio::task::JoinHandle<Result<usize>>)> = None;
        while let Some(x) = input.recv().await {
            let sent = match f.step(x) {
                Step::Report(p) => {
                    let reported = match &primes_out {
                        Some(s) => s.send(p).await.is_ok(),
                        None => false,
                    };
                    if f.is_last() {
                        primes_out = None;
                    }
                    reported
                }
                Step::Drop => true,
                Step::Pass(x) => {
                    let (s, _) = next.get_or_insert_with(|| {
                        let (s, r) = mpsc::channel::<u64>(chain.capacity);
                        let sink = primes_out.take().expect("the last filter holds the sink");
                        (
                            s,
                            ::tokio::spawn(tokio_filter(k + 1, r, sink, chain.clone())),
                        )
                    });
                    s.send(x).await.is_ok()
                }
            };
            if !sent {
                break;
            }
        }
        chain.done(&f);
        drop((input, primes_out));
        match next {
            Some((s, h)) => {
                drop(s);
                Ok(1 + join_task("sieve-filter", h).await??)
            }
            None => Ok(1),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::BenchOpts;
    use crate::engines::{Bench, Engine};
    use crate::kernels::sieve::{first_primes, messages};

    #[test]
    fn sieve_of_100_primes_on_every_engine() {
        for (workers, capacity) in [(1, 16), (2, 16), (2, 1)] {
            let p = SieveParams {
                opts: BenchOpts::on(workers),
                primes: 100,
                capacity,
                ..SieveParams::default()
            };
            for engine in Engine::NETWORKS {
                let m = p.run(engine).unwrap();
                assert_eq!(m.ops, 100, "{engine}");
                assert_eq!(m.figures.largest, first_primes(100).last().copied());
                // Every number up to the limit, sieved as the sequential
                // count says, and the sink's.
                assert_eq!(m.figures.messages, Some(messages(100)));
            }
        }
        let one = SieveParams {
            primes: 1,
            ..SieveParams::default()
        };
        for engine in Engine::NETWORKS {
            assert_eq!(one.run(engine).unwrap().figures.largest, Some(2));
        }
    }
}
