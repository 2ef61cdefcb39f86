//! The concurrent prime sieve as a stream network on rill, written as a new
//! user writes it: a chain of filters that grows while it runs.
//!
//! ```text
//! sieve/gen → sieve/filter/00000 → sieve/filter/00001 → … → sieve/filter/K
//!                    ↓ (its prime)         ↓                      ↓
//!                                 sieve/sink
//! ```
//!
//! - `sieve/gen` writes 2, 3, 4, ... up to a bound of the last prime asked
//!   for ([`kernel::limit`]: `n (ln n + ln ln n)` for `n` primes), then
//!   ends, which ends its stream.
//! - `sieve/filter/K` (K zero-padded to 5 digits, more from 100,000
//!   primes, so that a name prefix picks out a block of filters) takes the
//!   first number it reads as its prime (it passed every filter before, so
//!   it is the K+1-th prime) and writes it to the sink. From then on it
//!   drops the multiples of its prime and passes the rest on. While it is
//!   the last filter, the first number it passes spawns
//!   `sieve/filter/K+1` with [`rill::spawn_with`] from inside the task,
//!   handing it a new stream's reader and the sink's writer (the writer
//!   travels down the chain with its end).
//! - The filter of the last prime asked for lets go of the sink's writer
//!   once it has written it (the sink's stream ends) and reads the rest of
//!   its input without passing anything on. When the generator has
//!   written its last number, the streams end one after the other down the
//!   chain, each filter ending when its input has, and the run ends. Every
//!   run thus reads the same numbers, [`kernel::messages`] in all (a
//!   filter whose write fails, which only another task's failure makes
//!   happen, ends too).
//!
//! Task creation order (for round-robin): the sink, the generator, filter
//! 0 (all three before the run), then the filters in chain order as they
//! are spawned, so on two workers every link of the chain crosses workers.
//! `parts` cuts the chain (generator, filters, sink) into W blocks of as
//! many filters with [`rill::Mapping::Partitioned`] over name prefixes
//! ([`parts`]); `manual` is the sieve's own table ([`manual_table`]): the
//! chain cut into W blocks of about equal work, since the filters early in
//! the chain read far more numbers than the late ones.

use std::sync::Arc;

use anyhow::Result;
use rill::{ManualTable, MonitorConfig};

use super::NetRun;
use crate::bench::SieveParams;
use crate::kernels::sieve::{self as kernel, Chain, Step};
use crate::net::{Finished, Net, NetSpec, RillNet};

/// The generator's task name.
pub const GEN: &str = "sieve/gen";

/// The sink's task name.
pub const SINK: &str = "sieve/sink";

/// The digits of a filter's number in its name: 5, or as many as the
/// largest filter number of `primes` filters needs.
pub fn width(primes: usize) -> usize {
    let mut digits = 1;
    let mut m = primes.saturating_sub(1);
    while m >= 10 {
        m /= 10;
        digits += 1;
    }
    digits.max(5)
}

/// The name of filter `k` of a sieve of `primes` primes:
/// `sieve/filter/00017`.
pub fn filter_name(k: usize, primes: usize) -> String {
    format!("sieve/filter/{k:0w$}", w = width(primes))
}

/// The name prefix that the `10^drop` filters from `k` (a multiple of
/// `10^drop`) share: filter `k`'s name without its last `drop` digits.
fn block_prefix(k: usize, drop: u32, primes: usize) -> String {
    let mut name = filter_name(k, primes);
    name.truncate(name.len() - drop as usize);
    name
}

/// The chain in order as name prefixes, the list `parts` mapping cuts into
/// W blocks: the generator, the filters in blocks of `10^j` sharing a
/// prefix (`j` the least that makes at most 100 blocks, so that placing a
/// task looks at few prefixes), the sink.
pub fn parts(primes: usize) -> Vec<String> {
    let mut drop = 0u32;
    while primes.div_ceil(10usize.pow(drop)) > 100 {
        drop += 1;
    }
    let block = 10usize.pow(drop);
    let mut v = vec![GEN.to_string()];
    v.extend((0..primes.div_ceil(block)).map(|b| block_prefix(b * block, drop, primes)));
    v.push(SINK.into());
    v
}

/// The fewest name prefixes that cover filters `a..b` exactly (a decimal
/// block of `10^j` filters shares one prefix), in order.
fn cover(mut a: usize, b: usize, primes: usize) -> Vec<String> {
    let digits = width(primes) as u32;
    let mut out = Vec::new();
    while a < b {
        let mut drop = 0u32;
        while drop < digits
            && a.is_multiple_of(10usize.pow(drop + 1))
            && a + 10usize.pow(drop + 1) <= b
        {
            drop += 1;
        }
        out.push(block_prefix(a, drop, primes));
        a += 10usize.pow(drop);
    }
    out
}

/// The sieve's own placement table on `workers` workers: the chain
/// (generator, filters, sink) cut into `workers` contiguous blocks of about
/// equal work, a task's work being the numbers it reads and writes
/// ([`kernel::filter_reads`]; the generator only writes, the sink only
/// reads). The filters early in the chain read most numbers (filter 0 all
/// of them, filter 1 half), so the first block holds far fewer filters than
/// the last. Each block's filters are named by the fewest prefixes.
pub fn manual_table(primes: usize, workers: usize) -> ManualTable {
    let w = workers.max(1);
    let reads = kernel::filter_reads(&kernel::first_primes(primes), kernel::limit(primes));
    let n = reads.len();
    // Work of the chain's tasks in order: generator, filters, sink.
    let mut work = Vec::with_capacity(n + 2);
    work.push(reads.first().copied().unwrap_or(0));
    for k in 0..n {
        // Its reads, its prime to the sink, and what it passes on (what
        // the next filter reads).
        let passes = reads.get(k + 1).copied().unwrap_or(0);
        work.push(reads[k] + 1 + passes);
    }
    work.push(n as u64);
    let total: u64 = work.iter().sum::<u64>().max(1);
    // Each task goes to the block its work's midpoint falls in.
    let mut before = 0u64;
    let worker_of: Vec<usize> = work
        .iter()
        .map(|&x| {
            let mid = before as u128 * 2 + x as u128;
            before += x;
            ((mid * w as u128 / (2 * total as u128)) as usize).min(w - 1)
        })
        .collect();
    let mut t = ManualTable::new()
        .with(GEN, worker_of[0])
        .with(SINK, worker_of[n + 1]);
    let mut start = 0;
    while start < n {
        let on = worker_of[start + 1];
        let mut stop = start;
        while stop < n && worker_of[stop + 1] == on {
            stop += 1;
        }
        for prefix in cover(start, stop, primes) {
            t.insert(prefix, on);
        }
        start = stop;
    }
    t
}

/// What a sieve run found: the primes in the order the sink read them, and
/// the numbers its tasks read in all (the filters' and the sink's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SieveOut {
    /// The primes, in the order they arrived.
    pub primes: Vec<u64>,
    /// Numbers read by the filters and the sink.
    pub messages: u64,
}

/// Filter `k`: reads its prime, reports it, then filters, and spawns
/// filter `k + 1` when the first number passes it; the filter of the last
/// prime reads its input to the end instead (see the module doc and
/// [`kernel::Filter`]). Ends once the rest of the chain has.
fn filter<N: Net>(
    k: usize,
    (mut input, primes_out): (N::Rx<u64>, N::Tx<u64>),
    chain: Arc<Chain>,
) -> Result<()> {
    let mut f = chain.filter(k);
    let mut primes_out = Some(primes_out);
    let mut next: Option<(N::Tx<u64>, N::Inner)> = None;
    let mut failed = None;
    while let Some(x) = N::recv(&mut input) {
        let sent = match f.step(x) {
            Step::Report(p) => {
                let reported = primes_out.as_mut().is_some_and(|w| N::send(w, p));
                if f.is_last() {
                    // The sink has every prime: its stream ends.
                    primes_out = None;
                }
                reported
            }
            Step::Drop => true,
            Step::Pass(x) => {
                if next.is_none() {
                    // The chain ends here: x is the next prime, and its
                    // filter starts with x in its stream.
                    let (w, r) = N::channel::<u64>(chain.capacity);
                    let sink = primes_out.take().expect("the last filter holds the sink");
                    let c = chain.clone();
                    let name = filter_name(k + 1, chain.primes);
                    match N::spawn_inner(name, (r, sink), move |e| filter::<N>(k + 1, e, c)) {
                        Ok(h) => next = Some((w, h)),
                        Err(e) => failed = Some(e),
                    }
                }
                next.as_mut().is_some_and(|(w, _)| N::send(w, x))
            }
        };
        if !sent {
            // The sink or the chain after this filter has ended early.
            break;
        }
    }
    chain.done(&f);
    // Let go of every end before waiting for the rest of the chain, whose
    // filters end as their input does.
    drop((input, primes_out));
    if let Some(e) = failed {
        return Err(e);
    }
    match next {
        Some((w, h)) => {
            drop(w);
            N::join_inner(h)
        }
        None => Ok(()),
    }
}

/// Runs the sieve once on rill; the value is what the sink read and the
/// numbers read in all. `wall` is the time of `Runtime::run`; the primes
/// are not checked here.
pub fn run(p: &SieveParams, mon: &MonitorConfig) -> Result<NetRun<SieveOut>> {
    let (value, run) = network::<RillNet>(p, Some(mon.flags), mon.dir.clone())?;
    Ok(NetRun {
        value,
        wall: run.wall,
        stats: run.stats.expect("a rill run has statistics"),
    })
}

/// The sieve network on engine `N` (see the module doc), monitored as
/// `monitor` says into `logs` (rill only): what the sink read and the
/// numbers read in all, and the run.
pub fn network<N: Net>(
    p: &SieveParams,
    monitor: Option<rill::MonitorFlags>,
    logs: Option<std::path::PathBuf>,
) -> Result<(SieveOut, Finished)> {
    let n = p.primes;
    let names = parts(n);
    let mut net = N::build(&NetSpec {
        bench: "sieve",
        workers: p.opts.workers,
        capacity: p.capacity,
        mapping: Some(&p.mapping),
        names: &names,
        manual: manual_table(n, p.opts.workers),
        monitor,
        logs,
    })?;
    let chain = Arc::new(Chain::new(n, p.capacity));
    let (mut numbers_out, numbers_in) = N::channel::<u64>(p.capacity);
    let (primes_out, mut primes_in) = N::channel::<u64>(p.capacity);
    let sink = net.spawn_value(SINK.into(), 0, move || {
        let mut primes = Vec::with_capacity(n);
        while let Some(x) = N::recv(&mut primes_in) {
            primes.push(x);
        }
        primes
    })?;
    let limit = kernel::limit(n);
    net.spawn(GEN.into(), 0, move || {
        for x in 2..=limit {
            if !N::send(&mut numbers_out, x) {
                return;
            }
        }
    })?;
    let c = chain.clone();
    let first = net.spawn_value(filter_name(0, n), 0, move || {
        filter::<N>(0, (numbers_in, primes_out), c)
    })?;
    let run = net.finish()?;
    first.take("the first filter")??;
    let primes = sink.take(SINK)?;
    let messages = chain.reads() + primes.len() as u64;
    Ok((SieveOut { primes, messages }, run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;
    use crate::bench::BenchOpts;

    #[test]
    fn names_and_prefixes() {
        assert_eq!(filter_name(17, 2000), "sieve/filter/00017");
        assert_eq!(filter_name(7, 1), "sieve/filter/00007");
        assert_eq!(filter_name(123_456, 200_000), "sieve/filter/123456");
        assert_eq!(width(100_000), 5);
        assert_eq!(width(100_001), 6);
        let p = parts(2000);
        assert_eq!(p.len(), 22);
        assert_eq!(
            (&p[0][..], &p[1][..], &p[20][..], &p[21][..]),
            (GEN, "sieve/filter/000", "sieve/filter/019", SINK)
        );
        assert_eq!(
            parts(3),
            [
                GEN,
                "sieve/filter/00000",
                "sieve/filter/00001",
                "sieve/filter/00002",
                SINK
            ]
        );
        assert_eq!(cover(0, 1000, 2000), ["sieve/filter/00"]);
        assert_eq!(
            cover(587, 1000, 2000),
            [
                "sieve/filter/00587",
                "sieve/filter/00588",
                "sieve/filter/00589",
                "sieve/filter/0059",
                "sieve/filter/006",
                "sieve/filter/007",
                "sieve/filter/008",
                "sieve/filter/009",
            ]
        );
    }

    #[test]
    fn parts_cuts_the_chain_by_count() {
        let m = rill::Mapping::Partitioned(parts(2000));
        let rill::Mapping::Partitioned(list) = &m else {
            unreachable!()
        };
        // Entry i of 22 goes to worker i*2/22: the generator and filters
        // 0-999 on worker 0, filters 1000-1999 and the sink on worker 1.
        let of = |name: &str| {
            let i = list
                .iter()
                .enumerate()
                .filter(|(_, p)| name.starts_with(p.as_str()))
                .max_by_key(|(_, p)| p.len())
                .unwrap()
                .0;
            i * 2 / list.len()
        };
        assert_eq!(of(GEN), 0);
        assert_eq!(of(&filter_name(999, 2000)), 0);
        assert_eq!(of(&filter_name(1000, 2000)), 1);
        assert_eq!(of(SINK), 1);
    }

    #[test]
    fn manual_table_balances_work_in_contiguous_blocks() {
        let n = 2000;
        let t = manual_table(n, 2);
        let on: Vec<usize> = (0..n)
            .map(|k| t.lookup(&filter_name(k, n)).unwrap())
            .collect();
        // Contiguous: worker 0 then worker 1, cut once.
        let cut = on.iter().position(|&w| w == 1).unwrap();
        assert!(on[..cut].iter().all(|&w| w == 0) && on[cut..].iter().all(|&w| w == 1));
        // The early filters read most: the first block is the smaller.
        assert!((300..900).contains(&cut), "cut at {cut}");
        assert_eq!(t.lookup(GEN), Some(0));
        assert_eq!(t.lookup(SINK), Some(1));
        // Few prefixes, and every filter is named.
        assert!(t.entries().len() < 40, "{:?}", t.entries());
        let one = manual_table(n, 1);
        assert!((0..n).all(|k| one.lookup(&filter_name(k, n)) == Some(0)));
        assert_eq!(manual_table(5, 3).lookup(&filter_name(4, 5)), Some(2));
    }

    #[test]
    fn sieve_of_100_primes_on_rill_under_every_mapping() {
        let want = kernel::first_primes(100);
        for workers in [1, 2] {
            for m in ["rr", "parts", "manual", "steal"] {
                let p = SieveParams {
                    opts: BenchOpts::on(workers),
                    primes: 100,
                    capacity: 4,
                    mapping: m.parse::<MappingChoice>().unwrap(),
                };
                let run = run(&p, &MonitorConfig::off()).unwrap();
                assert_eq!(run.value.primes, want, "{m} on {workers}");
                // The sink, the generator and a filter per prime.
                assert_eq!(run.stats.tasks_created, 102, "{m} on {workers}");
                // Every number up to the limit, sieved as the sequential
                // count says, and the sink's.
                let m = run.value.messages;
                assert!(
                    m == kernel::messages(100),
                    "{m} read, {} on {workers}",
                    p.mapping
                );
            }
        }
    }

    #[test]
    fn sieve_of_one_prime_and_capacity_one() {
        for (primes, capacity) in [(1, 16), (2, 1), (30, 1)] {
            let p = SieveParams {
                opts: BenchOpts::on(2),
                primes,
                capacity,
                ..SieveParams::default()
            };
            let run = run(&p, &MonitorConfig::off()).unwrap();
            assert_eq!(run.value.primes, kernel::first_primes(primes));
        }
    }
}
