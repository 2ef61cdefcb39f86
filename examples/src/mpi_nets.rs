//! `rill-bench pipe|ring` under mpirun: LPEL's pipe and ring built with
//! `rill::dist::Net` over every rank's workers, with the one-process
//! benchmarks' names ([`pipe_task_names`], `ring/i`), per-message protocol
//! and checks ([`SequenceCheck`], [`verify_ring`]).
//!
//! - pipe: `pipe/source` writes `0..messages`, `depth - 2` relays pass
//!   them on, `pipe/sink` checks the sequence (the output lands on the
//!   sink's rank).
//! - ring: `size` tasks pass one token for `hops` hops; each task writes
//!   the token it ended with (or none) to `ring/check`, which checks that
//!   exactly one task saw it and that it made `hops` hops.
//! - wordcount: the one-process network (`crate::apps::wordcount`) with
//!   the chunks, batches and counts as messages that cross ranks; the
//!   merged counts are compared with the sequential count.
//! - ant: the colony, one task per ant and a relay per other rank that
//!   has ants (the colony crosses to a rank once per iteration); the best
//!   schedule and cost compared with the sequential colony's for the
//!   seed.
//! - rt: the ray tracer's dealer, solvers and collector; the images'
//!   checksum is compared with the sequential renderer's.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use rill::dist::{Net, NetGraph};
use rill::{PollSet, Writer};
use rill_examples::apps::ant::{ant_task, colony_task, AntResult, SharedColony};
use rill_examples::bench::{verify_ring, SequenceCheck, WordcountParams};
use rill_examples::dist_place::{apply, Placing};
use rill_examples::kernels::ant as ak;
use rill_examples::kernels::rt as rk;
use rill_examples::kernels::wordcount::{self as kernels, Counts};
use rill_examples::nets::pipe_task_names;

pub(crate) type Out<T> = Arc<Mutex<Option<T>>>;

/// One run on this rank: its wall ms and, on the rank that collected it,
/// the network's output.
pub type RunOn<T> = Result<(f64, Option<T>), String>;

/// Runs `net` and times it; then takes the output the collector put in
/// `out`, on the rank where it ran.
pub(crate) fn finish<T>(net: Net, out: &Out<T>) -> RunOn<T> {
    let t0 = Instant::now();
    net.run().map_err(|e| e.to_string())?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok((ms, out.lock().unwrap().take()))
}

/// One run of the pipe on `net`: wall ms on this rank and, on the sink's
/// rank, the sink's verdict (`Err` with what went wrong).
pub fn pipe(
    mut net: Net,
    placement: Option<Placing>,
    depth: usize,
    messages: u64,
    capacity: usize,
) -> RunOn<Result<(), String>> {
    let names = pipe_task_names(depth);
    let out: Out<Result<(), String>> = Arc::default();
    let (w, mut r) = net.stream::<u64>(capacity);
    net.spawn_with(names[0].clone(), w, move |mut w| {
        for i in 0..messages {
            // A write fails only when the sink ended early; it says why.
            if w.write(i).is_err() {
                return;
            }
        }
    });
    for name in &names[1..names.len() - 1] {
        let (w2, r2) = net.stream::<u64>(capacity);
        let input = std::mem::replace(&mut r, r2);
        net.spawn_with(name.clone(), (input, w2), |(input, mut w2)| {
            for v in input {
                if w2.write(v).is_err() {
                    return;
                }
            }
        });
    }
    let o = out.clone();
    net.spawn_with(names[names.len() - 1].clone(), r, move |r| {
        let mut check = SequenceCheck::new();
        let mut verdict = Ok(());
        for v in r {
            if let Err(e) = check.push(v) {
                verdict = Err(e.0);
                break;
            }
        }
        *o.lock().unwrap() = Some(verdict.and_then(|()| check.finish(messages).map_err(|e| e.0)));
    });
    apply(&mut net, placement);
    finish(net, &out)
}

/// One run of the ring on `net`: wall ms on this rank and, on the rank of
/// `ring/check`, its verdict.
pub fn ring(
    mut net: Net,
    placement: Option<Placing>,
    size: usize,
    hops: u64,
    capacity: usize,
) -> RunOn<Result<(), String>> {
    let out: Out<Result<(), String>> = Arc::default();
    let (mut writers, mut readers): (Vec<_>, Vec<_>) = (0..size)
        .map(|_| {
            let (w, r) = net.stream::<u64>(capacity);
            (Some(w), Some(r))
        })
        .unzip();
    let mut reports = PollSet::new();
    for i in 0..size {
        let input = readers[i].take().expect("each reader is taken once");
        let output = writers[(i + 1) % size]
            .take()
            .expect("each writer is taken once");
        let (rw, rr) = net.stream::<(u64, Option<u64>)>(1);
        reports.push(rr);
        net.spawn_with(
            format!("ring/{i}"),
            (input, output, rw),
            move |(input, mut output, mut report)| {
                let mut last = None;
                if i != 0 || output.write(0).is_ok() {
                    for t in input {
                        if t >= hops {
                            last = Some(t);
                            break;
                        }
                        if output.write(t + 1).is_err() {
                            break;
                        }
                    }
                }
                // The token's end closes the ring: dropping this task's
                // ends ends its neighbours' reads.
                drop(output);
                let _ = report.write((i as u64, last));
            },
        );
    }
    let o = out.clone();
    net.spawn_with("ring/check", reports, move |reports| {
        let mut finals = vec![None; size];
        let mut seen = 0;
        for (_, (i, last)) in reports {
            finals[i as usize] = last;
            seen += 1;
        }
        let verdict = if seen == size {
            verify_ring(&finals, hops).map_err(|e| e.0)
        } else {
            Err(format!("{seen} of {size} ring tasks reported"))
        };
        *o.lock().unwrap() = Some(verdict);
    });
    apply(&mut net, placement);
    finish(net, &out)
}

/// One run of the word count on `net` (the one-process network's tasks and
/// kernels: `wc/source` sends the text in chunks, `wc/split` batches the
/// words by counter ([`kernels::Batcher`]), `wc/count/k` counts them,
/// `wc/merge` adds the counters' counts): wall ms on this rank and, on the
/// merger's rank, the merged counts.
pub fn wordcount(mut net: Net, placement: Option<Placing>, p: &WordcountParams) -> RunOn<Counts> {
    let (k, batch, chunk, cap) = (p.counters, p.batch, p.chunk, p.capacity);
    let out: Out<Counts> = Arc::default();
    let (to_split, chunks_in) = net.stream::<String>(cap);
    let text = p.corpus.text().clone();
    net.spawn_with("wc/source", to_split, move |mut w| {
        for c in kernels::chunks(&text, chunk) {
            if w.write(c.to_owned()).is_err() {
                return;
            }
        }
    });
    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| net.stream::<Vec<String>>(cap)).unzip();
    net.spawn_with(
        "wc/split",
        (chunks_in, to_counters),
        move |(chunks_in, mut to)| {
            let mut s = kernels::Batcher::new(k, batch);
            for c in chunks_in {
                for word in c.split_whitespace() {
                    if let Some((i, b)) = s.push(word) {
                        if to[i].write(b).is_err() {
                            return;
                        }
                    }
                }
            }
            for (i, b) in s.finish() {
                if to[i].write(b).is_err() {
                    return;
                }
            }
        },
    );
    let mut results = PollSet::new();
    for (i, words_in) in counter_ins.into_iter().enumerate() {
        let (w, r) = net.stream::<Vec<(String, u64)>>(1);
        results.push(r);
        net.spawn_with(
            format!("wc/count/{i}"),
            (words_in, w),
            |(words_in, mut w)| {
                let mut counts = Counts::new();
                for b in words_in {
                    kernels::add_batch(&mut counts, b);
                }
                let _ = w.write(counts.into_iter().collect());
            },
        );
    }
    let o = out.clone();
    net.spawn_with("wc/merge", results, move |results| {
        let mut total = Counts::new();
        for (_, part) in results {
            kernels::merge_into(&mut total, part.into_iter().collect());
        }
        *o.lock().unwrap() = Some(total);
    });
    apply(&mut net, placement);
    finish(net, &out)
}

/// What `rt/collect` computed: the images' checksum in scene order and
/// how many arrived.
pub type RtOut = Result<(u64, u32), String>;

/// One run of the ray tracer on `net` (the one-process network's tasks,
/// `crate::apps::rt`: solvers ask `rt/dealer` for scenes with ready
/// tokens, two at first, and send their images to `rt/collect`, which
/// folds them into the checksum in scene order). A job crosses ranks as
/// the scene's number: the solver builds the scene ([`rk::scene`], a
/// function of the number) where it renders it. Spawned dealer first,
/// then the solvers, then the collector, so the default blocks split the
/// solvers evenly. Wall ms on this rank and, on the collector's rank, the
/// checksum and the images counted.
pub fn rt(
    mut net: Net,
    placement: Option<Placing>,
    scenes: u32,
    (width, height): (u32, u32),
    solvers: usize,
) -> RunOn<RtOut> {
    let out: Out<RtOut> = Arc::default();
    let cap = rill_examples::apps::rt::DEFAULT_CAPACITY;
    let mut ready = PollSet::new();
    let mut jobs = Vec::new();
    let mut ends = Vec::new();
    let mut images = PollSet::new();
    for _ in 0..solvers {
        // Two tokens may be outstanding, so two jobs at most.
        let (ready_w, ready_r) = net.stream::<()>(2);
        let (job_w, job_r) = net.stream::<u32>(2);
        let (img_w, img_r) = net.stream::<(u32, u32, u32, Vec<u8>)>(cap);
        ready.push(ready_r);
        jobs.push(Some(job_w));
        images.push(img_r);
        ends.push((ready_w, job_r, img_w));
    }
    net.spawn_with("rt/dealer", (ready, jobs), move |(ready, mut jobs)| {
        let mut next = 0u32;
        for (s, ()) in ready {
            let Some(w) = jobs[s].as_mut() else {
                continue;
            };
            if next < scenes {
                if w.write(next).is_ok() {
                    next += 1;
                }
            } else {
                jobs[s] = None; // closes the solver's job stream
            }
        }
    });
    for (s, e) in ends.into_iter().enumerate() {
        net.spawn_with(
            format!("rt/solver/{s}"),
            e,
            move |(mut ready_w, job_r, mut img_w)| {
                for _ in 0..2 {
                    if ready_w.write(()).is_err() {
                        return;
                    }
                }
                for i in job_r {
                    let image = rk::render(&rk::scene(i), width, height);
                    if img_w
                        .write((i, image.width, image.height, image.rgb))
                        .is_err()
                    {
                        return;
                    }
                    // The dealer may be gone once every scene is out.
                    let _ = ready_w.write(());
                }
            },
        );
    }
    let o = out.clone();
    net.spawn_with("rt/collect", images, move |images| {
        let mut pending = std::collections::BTreeMap::new();
        let (mut next, mut sum) = (0u32, rk::Checksum::new());
        for (_, (i, width, height, rgb)) in images {
            pending.insert(i, rk::Image { width, height, rgb });
            while let Some(image) = pending.remove(&next) {
                sum.add(&image);
                next += 1;
            }
        }
        *o.lock().unwrap() = Some(if pending.is_empty() {
            Ok((sum.value(), next))
        } else {
            Err(format!(
                "scene {next} never arrived ({} later ones did)",
                pending.len()
            ))
        });
    });
    apply(&mut net, placement);
    finish(net, &out)
}

/// One run of the ant colony on `net` (the one-process network's tasks,
/// `crate::apps::ant`: every iteration `ant/colony` sends the colony to
/// every ant task, ant `a` runs [`ak::run_ant`] for `(a, iteration)` and
/// answers its schedule and cost, and the colony reduces the answers in
/// ant order and updates). Placed as colony first, then the ants, so the
/// default blocks split the ants evenly. The colony crosses to each other
/// rank once per iteration: the ants of a rank other than the colony's
/// are fed by `ant/relay/R`, pinned on that rank (beside its first ant),
/// which receives the colony and hands one shared copy to each of them
/// over local streams; the colony's own rank's ants get the colony's
/// `Arc` directly (default size, 2 ranks × 1 worker in a quiet spell: 2.5 s
/// with a copy per remote ant, 1.1 s with one per rank, level with 1 rank ×
/// 2 workers; `docs/measurements/mpi.md#ant-relay`).
/// Wall ms on this rank and, on the colony's rank, the best schedule and
/// its cost.
pub fn ant(
    mut net: Net,
    placement: Option<Placing>,
    inst: &Arc<ak::Instance>,
    ants: u32,
    iterations: u32,
    seed: u64,
) -> RunOn<(Vec<u32>, u64)> {
    let out: Out<(Vec<u32>, u64)> = Arc::default();
    let mut names = vec!["ant/colony".to_string()];
    names.extend((0..ants).map(|a| format!("ant/ant/{a}")));
    // The placement first: the relays follow from where the ants run
    // (parts cuts the colony's star of two streams per ant).
    if let Some(p) = placement {
        let mut g = NetGraph {
            tasks: names.clone(),
            pinned: vec![None; names.len()],
            streams: Vec::new(),
        };
        for a in 1..names.len() {
            g.streams.extend([(0, a), (a, 0)]);
        }
        let p = p.resolve(&g, net.ranks(), net.workers());
        net.placement(p);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let places = net.places_of(&refs).map_err(|e| e.to_string())?;
    let colony_rank = places[0].0;
    // Per rank other than the colony's: its relay's worker and its ants.
    let mut relays: std::collections::BTreeMap<usize, (usize, Vec<usize>)> = Default::default();
    for (a, &(rank, worker)) in places[1..].iter().enumerate() {
        if rank != colony_rank {
            relays.entry(rank).or_insert((worker, Vec::new())).1.push(a);
        }
    }
    let mut feeds = Vec::new(); // the colony's writers: relays, then its rank's ants
    let mut to_ant: Vec<Option<Writer<(u32, SharedColony)>>> = Vec::new();
    let mut from_ants = Vec::new();
    let mut ends = Vec::new();
    for _ in 0..ants {
        // One message per iteration is outstanding each way.
        let (w, r) = net.stream::<(u32, SharedColony)>(1);
        let (back_w, back) = net.stream::<AntResult>(1);
        to_ant.push(Some(w));
        from_ants.push(back);
        ends.push((r, back_w));
    }
    let mut relay_tasks = Vec::new();
    for (&rank, (worker, members)) in &relays {
        let (w, r) = net.stream::<(u32, SharedColony)>(1);
        feeds.push(w);
        let outs: Vec<_> = members
            .iter()
            .map(|&a| to_ant[a].take().expect("each ant is fed once"))
            .collect();
        relay_tasks.push((rank, *worker, r, outs));
    }
    feeds.extend(to_ant.into_iter().flatten());
    let (i, o) = (inst.clone(), out.clone());
    net.spawn_with(
        "ant/colony",
        (feeds, from_ants),
        move |(feeds, from_ants)| {
            // The relays come first among the feeds, then this rank's ants:
            // dropping them at the end ends the relays and the ants.
            if let Some(best) = colony_task(&i, iterations, feeds, from_ants) {
                *o.lock().unwrap() = Some(best);
            }
        },
    );
    for (a, (r, back)) in (0..ants).zip(ends) {
        let inst = inst.clone();
        net.spawn_with(format!("ant/ant/{a}"), (r, back), move |(r, back)| {
            ant_task(&inst, a, seed, r, back)
        });
    }
    for (rank, worker, input, outs) in relay_tasks {
        net.spawn_with_on(
            rank,
            worker,
            format!("ant/relay/{rank}"),
            (input, outs),
            |(input, mut outs)| {
                for (it, colony) in input {
                    for w in outs.iter_mut() {
                        if w.write((it, SharedColony(colony.0.clone()))).is_err() {
                            return;
                        }
                    }
                }
            },
        );
    }
    finish(net, &out)
}
