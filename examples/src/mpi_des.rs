//! `rill-bench mpi des`: the DES network (split, pipelines of initial
//! permutation, round stages and final permutation, an ordering collector)
//! built with `rill::dist::Net`, run on every rank of the mpirun job
//! (2 ranks x W workers) and, in the same job, on one rank with 2·W
//! workers (a one-rank network of the same code, on rank 0 alone); the
//! output of each is checked byte for byte against the sequential cipher.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::mpi_bench::{alternate, pilot_size, AppOpts, AppRow, Workload};
use rill::dist::{Net, World};
use rill::PollSet;
use rill_examples::apps::des::{DEFAULT_BATCH, DEFAULT_CAPACITY, DEFAULT_KEY, DEFAULT_STAGES};
use rill_examples::dist_place::{apply, Placing};
use rill_examples::kernels::des as k;

type Msg<T> = (u64, Vec<T>);

/// Builds the network on `net`; the collector's output lands in `out` on
/// the collector's rank.
fn build(
    net: &mut Net,
    ks: Arc<k::KeySchedule>,
    data: Arc<Vec<u8>>,
    out: Arc<Mutex<Option<Vec<u8>>>>,
) {
    let p = (net.ranks() * net.workers()).max(2);
    let per_stage = 16 / DEFAULT_STAGES;
    let cap = DEFAULT_CAPACITY;
    let mut to_pipes = Vec::new();
    let mut from_pipes = PollSet::new();
    // The split first and the collector last: contiguous placement puts
    // them at the two ends, the pipelines between.
    let mut pipes = Vec::new();
    for _ in 0..p {
        let (w_in, r_in) = net.stream::<Msg<u64>>(cap);
        to_pipes.push(w_in);
        pipes.push(r_in);
    }
    net.spawn_with("des/split", to_pipes, move |mut to_pipes| {
        let padded = k::pkcs7_pad(&data);
        for (seq, chunk) in padded.chunks(DEFAULT_BATCH * k::BLOCK_BYTES).enumerate() {
            let n = to_pipes.len();
            if to_pipes[seq % n]
                .write((seq as u64, k::bytes_to_blocks(chunk)))
                .is_err()
            {
                return;
            }
        }
    });
    for (i, r_in) in pipes.into_iter().enumerate() {
        let (w, mut r_lr) = net.stream::<Msg<(u32, u32)>>(cap);
        net.spawn_with(format!("des/ip/{i}"), (r_in, w), |(r, mut w)| {
            for (seq, blocks) in r {
                if w.write((seq, k::initial_permutation_batch(&blocks)))
                    .is_err()
                {
                    return;
                }
            }
        });
        for s in 0..DEFAULT_STAGES {
            let (w, r_next) = net.stream::<Msg<(u32, u32)>>(cap);
            let r = std::mem::replace(&mut r_lr, r_next);
            let ks = ks.clone();
            let rounds = s * per_stage..(s + 1) * per_stage;
            net.spawn_with(format!("des/round/{i}/{s}"), (r, w), move |(r, mut w)| {
                for (seq, mut lrs) in r {
                    k::rounds_batch(&ks, rounds.clone(), &mut lrs, false);
                    if w.write((seq, lrs)).is_err() {
                        return;
                    }
                }
            });
        }
        let (w, r_out) = net.stream::<Msg<u64>>(cap);
        net.spawn_with(format!("des/fp/{i}"), (r_lr, w), |(r, mut w)| {
            for (seq, lrs) in r {
                if w.write((seq, k::final_permutation_batch(&lrs))).is_err() {
                    return;
                }
            }
        });
        from_pipes.push(r_out);
    }
    net.spawn_with("des/collect", from_pipes, move |from_pipes| {
        let mut bytes = Vec::new();
        let mut pending: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut next = 0u64;
        for (_, (seq, blocks)) in from_pipes {
            pending.insert(seq, blocks);
            while let Some(blocks) = pending.remove(&next) {
                bytes.extend_from_slice(&k::blocks_to_bytes(&blocks));
                next += 1;
            }
        }
        *out.lock().unwrap() = Some(bytes);
    });
}

/// One run of the network on `net`: wall ms on this rank and the output
/// if the collector ran here.
fn run(
    mut net: Net,
    placement: Option<Placing>,
    ks: &Arc<k::KeySchedule>,
    data: &Arc<Vec<u8>>,
) -> Result<(f64, Option<Vec<u8>>), String> {
    let out = Arc::new(Mutex::new(None));
    build(&mut net, ks.clone(), data.clone(), out.clone());
    apply(&mut net, placement);
    crate::mpi_nets::finish(net, &out)
}

/// The network on `bytes` of generated input, its output checked byte
/// for byte against the sequential cipher's.
fn workload(bytes: usize, size: String) -> Result<Workload<'static, Vec<u8>>, String> {
    let ks = Arc::new(k::KeySchedule::from_hex(DEFAULT_KEY).map_err(|e| e.to_string())?);
    let data = Arc::new(k::generate_input(bytes, 1));
    let reference = k::encrypt_ecb(&ks, &data);
    Ok(Workload::new(
        size,
        move |net, p| run(net, p, &ks, &data),
        move |out| out == reference,
    ))
}

/// The DES rows (see [`crate::mpi_bench::alternate`]); under auto the
/// pilot encrypts 1/N of the bytes (at least 64 KiB, as one process's).
pub fn rows(world: &World, bytes: usize, opts: &AppOpts) -> Result<Vec<AppRow>, String> {
    let pilot = match opts.auto {
        Some(_) => {
            let (n, size) = pilot_size(opts, bytes as u64, 64 << 10, "bytes");
            Some(workload(n as usize, size)?)
        }
        None => None,
    };
    alternate(world, opts, workload(bytes, String::new())?, pilot)
}
