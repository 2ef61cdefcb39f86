//! `rill-bench mpi mc`: the Monte Carlo network (a dispatcher dealing path
//! records to chains that unfold at run time, a collector merging their
//! payoff sums exactly) built with `rill::dist::Net`. A chain's first
//! stage is a network task placed on a rank (chain c on global worker
//! c mod R·W), and the chain unfolds from there on its own rank: a spawn
//! from a running task stays on its rank, so every hop inside a chain is
//! local and only a record's way in and its sums' way out cross ranks.
//! Run on 2 ranks x W workers and, in the same job, alternating, on rank 0
//! alone with 2·W workers; both sums must be the same bits and account for
//! every path.

use std::sync::{Arc, Mutex};

use crate::mpi_bench::{alternate, pilot_size, AppOpts, AppRow, Workload};
use rill::dist::{Net, Placement, RankTable, World};
use rill::PollSet;
use rill_examples::apps::mc::{stage, Links, Rec, DEFAULT_BATCH, DEFAULT_CAPACITY, FEED_CAPACITY};
use rill_examples::dist_place::{apply, Placing};
use rill_examples::kernels::mc::{self as k, McParams, Partial};

/// Builds the network on `net`; the collector's (sums, records) land in
/// `out` on rank 0.
fn build(
    net: &mut Net,
    params: Arc<McParams>,
    paths: u64,
    out: Arc<Mutex<Option<(Partial, u64)>>>,
) {
    let g = net.ranks() * net.workers();
    let chains = g.max(2);
    let records = k::batch_count(paths, DEFAULT_BATCH);
    let mut table = RankTable::new()
        .with("mc/dispatch", 0, 0)
        .with("mc/collect", 0, 0);
    for c in 0..chains {
        let gw = c % g;
        table = table.with(
            format!("mc/star/{c}/"),
            gw / net.workers(),
            gw % net.workers(),
        );
    }
    net.placement(Placement::Table(table));
    let mut heads = Vec::new();
    let mut exits = PollSet::new();
    let mut roots = Vec::new();
    for _ in 0..chains {
        let (w, r) = net.stream::<Rec>(FEED_CAPACITY);
        heads.push(w);
        let (xw, xr) = net.stream::<Rec>(FEED_CAPACITY);
        exits.push(xr);
        roots.push((r, xw));
    }
    let p = params.clone();
    net.spawn_with("mc/dispatch", heads, move |mut heads| {
        for b in 0..records {
            let c = (b % heads.len() as u64) as usize;
            let (first, n) = k::batch_bounds(paths, DEFAULT_BATCH, b);
            if heads[c]
                .write(Rec::Paths(k::new_batch(&p, first, n)))
                .is_err()
            {
                return;
            }
        }
    });
    // The stages are the one-process network's (`apps::mc::stage`); each
    // rank counts the links of its own chains, which the rows leave out.
    let links = Arc::new(Links::default());
    for (c, ends) in roots.into_iter().enumerate() {
        let (p, l) = (params.clone(), links.clone());
        net.spawn_with(format!("mc/star/{c}/step/0"), ends, move |(r, x)| {
            stage(p, c, 0, r, x, DEFAULT_CAPACITY, l, None)
        });
    }
    net.spawn_with("mc/collect", exits, move |exits| {
        let mut total = Partial::default();
        let mut n = 0u64;
        for (_, rec) in exits {
            if let Rec::Done(part) = rec {
                total.merge(&part);
                n += 1;
            }
        }
        *out.lock().unwrap() = Some((total, n));
    });
}

fn run(
    mut net: Net,
    placement: Option<Placing>,
    params: &Arc<McParams>,
    paths: u64,
) -> Result<(f64, Option<(Partial, u64)>), String> {
    let out = Arc::new(Mutex::new(None));
    build(&mut net, params.clone(), paths, out.clone());
    apply(&mut net, placement);
    crate::mpi_nets::finish(net, &out)
}

/// The network on `paths` paths: every record counted, and the sums the
/// same bits as the sequential price's (the merge is exact, so the prices
/// are the same for the seed).
fn workload(paths: u64, size: String) -> Workload<'static, (Partial, u64)> {
    let params = Arc::new(McParams::default());
    let records = k::batch_count(paths, DEFAULT_BATCH);
    let mut reference = Partial::default();
    for b in 0..records {
        let (first, n) = k::batch_bounds(paths, DEFAULT_BATCH, b);
        reference.merge(&k::simulate_batch(&params, first, n));
    }
    Workload::new(
        size,
        move |net, p| run(net, p, &params, paths),
        move |(total, n)| n == records && total.paths == paths && total == reference,
    )
}

/// The MC rows (see [`crate::mpi_bench::alternate`]); under auto the pilot
/// prices 1/N of the paths, at least one process's floor (2,000, and four
/// records per chain).
pub fn rows(world: &World, paths: u64, opts: &AppOpts) -> Result<Vec<AppRow>, String> {
    let pilot = opts.auto.as_ref().map(|_| {
        let chains = (world.size() * opts.workers).max(2) as u64;
        let floor = 2000u64.max(4 * chains * DEFAULT_BATCH as u64);
        let (n, size) = pilot_size(opts, paths, floor, "paths");
        workload(n, size)
    });
    alternate(world, opts, workload(paths, String::new()), pilot)
}
