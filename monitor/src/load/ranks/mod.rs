//! Runs across ranks: one rill runtime per MPI rank, each writing its own
//! logs, read as one run.
//!
//! # The directory
//!
//! ```text
//! DIR/
//!   rank-0/  worker-0.rlog ... [sampler.rlog] rank.json
//!   rank-1/  worker-0.rlog ... [sampler.rlog] rank.json
//!   ...
//! ```
//!
//! Each `rank-R/` holds what one process's run writes into its log
//! directory, plus `rank.json`, written by the runtime at the end of the
//! run:
//!
//! ```json
//! {"rank": 1, "ranks": 2, "workers": 1,
//!  "clock_offset_ns": -1234,
//!  "clock_residual_ns": 800,
//!  "cross_streams": [{"stream": 17, "net_stream": 3, "side": "reader", "peer_rank": 0}]}
//! ```
//!
//! * `clock_offset_ns` (i64): added to this rank's wall-clock nanoseconds
//!   (the Unix times its logs' calibration maps ticks to) it gives rank 0's
//!   clock (rank 0: 0).
//! * `clock_residual_ns` (u64): the bound on the error after alignment.
//! * `cross_streams`: the streams of this rank whose other end is on
//!   another rank: `stream` is the id in this rank's logs, `net_stream`
//!   the id both halves share, `side` the end that is local here
//!   (`reader`: a task here reads it, its writer is on `peer_rank`).
//!
//! `rank.json` may be missing (a rank that died): its clock is then taken
//! as rank 0's (offset 0) and its cross-rank streams are unknown, with a
//! warning. Other fields are ignored.
//!
//! A directory is read this way when it holds no `worker-*.rlog` of its own
//! and at least one `rank-R/` (R a number) holding some.
//!
//! # The merged run
//!
//! Every log is re-encoded in memory ([`rewrite`]) as a log of one run,
//! which the analyses read as they read one process's logs:
//!
//! * times: each rank's ticks become Unix nanoseconds (its calibration),
//!   plus its `clock_offset_ns`; the merged run counts nanoseconds from the
//!   earliest of them (one tick per nanosecond);
//! * workers: rank R's worker w becomes worker `first + w`, the ranks'
//!   workers numbered one rank after another; its name is `rR/ww`
//!   ([`Ranks::worker_name`]);
//! * tasks and streams: rank R's id `i` becomes `R · stride + i`, where
//!   `stride` is the first power of ten above every id in every rank's
//!   logs (so the decimal digits still show the local id: with stride 100,
//!   task 105 is rank 1's task 5); 0 ("none") stays 0;
//! * a cross-rank stream's two halves become one stream, with the merged
//!   id of the writer's half (else the reader's): its writer and its
//!   reader are the tasks of the two ranks, so waits, latency and the
//!   waiting relation see one stream from one rank to the other. The bind
//!   and close records of a half's end that is not local (the transport's)
//!   are dropped. [`Ranks::cross`] marks it.
//!
//! The re-encoded logs are held in memory: about as many bytes as the
//! ranks' logs. A live run across ranks cannot be followed (`watch`).

pub(crate) mod meta;
pub(crate) mod model;
mod rewrite;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::bail;
use rill_log::{Calibration, Header, SampleWindow, FORMAT_VERSION};

use meta::LocalSide;

use crate::load::files::RawFile;

use crate::load::pool::parallel;
use crate::load::ranks::model::{CrossStream, RankInfo, Ranks};
use meta::RankMeta;
use rewrite::{Clock, Extent, Ids};

/// What the load takes from a directory of ranks.
pub(crate) struct Loaded {
    /// The merged run's logs, by worker.
    pub files: Vec<RawFile>,
    pub ranks: Ranks,
    pub warnings: Vec<String>,
    /// In sample mode: every rank's sampler windows, converted, and what
    /// was wrong reading them.
    pub sampler: Option<(Vec<SampleWindow>, Vec<String>)>,
}

/// The `rank-R` directories of `dir` that hold worker logs, by rank; none
/// when `dir` holds worker logs itself (one process's run).
fn rank_dirs(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("worker-") && name.ends_with(".rlog") {
            return Vec::new();
        }
        let Some(rank) = name
            .strip_prefix("rank-")
            .and_then(|r| r.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        if path.is_dir() && crate::load::files::find_logs(&path).is_ok() {
            found.push((rank, path));
        }
    }
    found.sort();
    found
}

/// Whether `dir` is the directory of a run across ranks (it holds no
/// `worker-*.rlog` of its own, and `rank-R/` directories that do).
pub fn is_run_across_ranks(dir: &Path) -> bool {
    !rank_dirs(dir).is_empty()
}

/// One rank's files and description.
struct Rank {
    rank: u32,
    dir: PathBuf,
    files: Vec<RawFile>,
    meta: Option<RankMeta>,
    workers: u32,
}

/// The ranks of `dir`, merged into one run's logs (see the module
/// documentation); `None` when `dir` is not a directory of ranks.
pub(crate) fn load(dir: &Path, threads: usize) -> anyhow::Result<Option<Loaded>> {
    let dirs = rank_dirs(dir);
    if dirs.is_empty() {
        return Ok(None);
    }
    let mut warnings = Vec::new();
    let mut ranks = Vec::new();
    for (rank, rdir) in dirs {
        let paths = crate::load::files::find_logs(&rdir)?;
        let files = parallel(&paths, threads.clamp(1, paths.len()), |p| {
            crate::load::files::read_file(p)
        })?;
        let first = &files[0];
        for f in &files[1..] {
            if f.header.worker_count != first.header.worker_count {
                bail!(
                    "{}: worker count {} differs from {}'s {} (logs of different runs?)",
                    f.path.display(),
                    f.header.worker_count,
                    first.path.display(),
                    first.header.worker_count
                );
            }
            if f.header.calibration != first.header.calibration {
                bail!(
                    "{}: clock calibration differs from {}'s (logs of different runs?)",
                    f.path.display(),
                    first.path.display()
                );
            }
        }
        // Room for every worker the headers announce (a missing log is
        // warned about as in one process's run) and every id present.
        let top = files.iter().map(|f| f.header.worker).max().unwrap_or(0);
        let workers = first.header.worker_count.max(top.saturating_add(1));
        let meta = match meta::read(&rdir) {
            Ok(Some(m)) => Some(m),
            Ok(None) => {
                warnings.push(format!(
                    "rank-{rank}: no {}: its clock is taken as rank 0's (offset 0) and its \
                     cross-rank streams are unknown",
                    meta::RANK_FILE
                ));
                None
            }
            Err(e) => {
                warnings.push(format!(
                    "{e:#}; its clock is taken as rank 0's (offset 0) and its cross-rank streams \
                     are unknown"
                ));
                None
            }
        };
        if let Some(m) = &meta {
            if m.rank != rank {
                warnings.push(format!(
                    "rank-{rank}/{}: says rank {}; the directory's name is taken",
                    meta::RANK_FILE,
                    m.rank
                ));
            }
            if m.workers != first.header.worker_count {
                warnings.push(format!(
                    "rank-{rank}/{}: says {} worker(s), its logs' headers {}",
                    meta::RANK_FILE,
                    m.workers,
                    first.header.worker_count
                ));
            }
        }
        ranks.push(Rank {
            rank,
            dir: rdir,
            files,
            meta,
            workers,
        });
    }
    check_rank_count(&ranks, &mut warnings);

    // First pass: ids and earliest times.
    let all: Vec<(usize, usize)> = ranks
        .iter()
        .enumerate()
        .flat_map(|(i, r)| (0..r.files.len()).map(move |k| (i, k)))
        .collect();
    let threads = threads.clamp(1, all.len());
    let extents: Vec<Extent> = parallel(&all, threads, |&(i, k)| {
        let f = &ranks[i].files[k];
        Ok(rewrite::extent(&f.data, f.records_start))
    })?;
    let max_id = extents.iter().map(|e| e.max_id).max().unwrap_or(0);
    let stride = stride_above(max_id);
    let top_rank = ranks.last().map_or(0, |r| r.rank);
    if u64::from(top_rank)
        .checked_mul(stride)
        .and_then(|b| b.checked_add(max_id))
        .is_none()
    {
        bail!(
            "{}: task or stream ids up to {max_id} on ranks up to {top_rank} cannot be kept apart \
             in 64 bits (damaged logs?)",
            dir.display()
        );
    }
    let offset = |r: &Rank| r.meta.as_ref().map_or(0, |m| m.clock_offset_ns);
    let clock_of = |r: &Rank, base_ns: u64| Clock {
        cal: r.files[0].header.calibration,
        offset_ns: offset(r),
        base_ns,
    };
    let earliest = all
        .iter()
        .zip(&extents)
        .filter_map(|(&(i, _), e)| e.min_t.map(|t| clock_of(&ranks[i], 0).unix(t)))
        .min()
        .unwrap_or_else(|| {
            ranks
                .iter()
                .map(|r| clock_of(r, 0).unix(r.files[0].header.calibration.start_ticks))
                .min()
                .unwrap_or(0)
        });
    let base_ns = earliest.clamp(0, i128::from(u64::MAX)) as u64;

    // Workers, numbered rank after rank.
    let mut first_worker = Vec::with_capacity(ranks.len());
    let mut total = 0u32;
    for r in &ranks {
        first_worker.push(total);
        total = total.checked_add(r.workers).ok_or_else(|| {
            anyhow::anyhow!("{}: the ranks' worker counts overflow", dir.display())
        })?;
    }
    let (cross_streams, mut ids) = link_cross_streams(&ranks, stride, &mut warnings);
    for (k, r) in ranks.iter().enumerate() {
        ids[k].base = u64::from(r.rank) * stride;
        ids[k].first_worker = first_worker[k];
    }

    let cal = Calibration {
        ticks_per_sec: 1e9,
        start_ticks: 0,
        start_unix_ns: base_ns,
    };
    let rewritten: Vec<(RawFile, Option<String>)> = parallel(&all, threads, |&(i, k)| {
        let r = &ranks[i];
        let f = &r.files[k];
        let label = crate::load::files::file_label(&f.path);
        let header = Header {
            version: FORMAT_VERSION,
            worker: first_worker[i].saturating_add(f.header.worker),
            worker_count: total,
            calibration: cal,
            ..f.header
        };
        let (bytes, warning) = rewrite::rewrite(
            &f.data,
            f.records_start,
            &header,
            &clock_of(r, base_ns),
            &ids[i],
            &label,
        );
        Ok((RawFile::in_memory(f.path.clone(), bytes, header), warning))
    })?;
    let mut files = Vec::with_capacity(rewritten.len());
    for (f, w) in rewritten {
        warnings.extend(w);
        files.push(f);
    }

    let sampler = ranks
        .iter()
        .any(|r| r.files[0].header.flags.is_sampled())
        .then(|| {
            let mut windows = Vec::new();
            let mut problems = Vec::new();
            for (k, r) in ranks.iter().enumerate() {
                match sampler_of(r, &clock_of(r, base_ns), &ids[k]) {
                    Ok((w, p)) => {
                        windows.extend(w);
                        problems.extend(p);
                    }
                    Err(e) => problems.push(format!(
                        "{e:#}; rank {}'s busy and waiting times are unknown (the counts are exact)",
                        r.rank
                    )),
                }
            }
            (windows, problems)
        });

    let residual = ranks
        .iter()
        .filter_map(|r| r.meta.as_ref().and_then(|m| m.clock_residual_ns))
        .max();
    let infos = ranks
        .iter()
        .zip(&first_worker)
        .map(|(r, &first)| RankInfo {
            rank: r.rank,
            dir: r.dir.clone(),
            workers: r.workers,
            first_worker: first,
            clock_offset_ns: offset(r),
            clock_residual_ns: r.meta.as_ref().and_then(|m| m.clock_residual_ns),
            described: r.meta.is_some(),
        })
        .collect();
    Ok(Some(Loaded {
        files,
        ranks: Ranks {
            ranks: infos,
            id_stride: stride,
            clock_residual_ns: residual,
            cross_streams,
        },
        warnings,
        sampler,
    }))
}

/// The first power of ten above `max` (at least 10).
fn stride_above(max: u64) -> u64 {
    let mut s = 10u64;
    while s <= max {
        match s.checked_mul(10) {
            Some(n) => s = n,
            None => return u64::MAX,
        }
    }
    s
}

/// Warns about ranks a `rank.json` announces whose logs are missing.
fn check_rank_count(ranks: &[Rank], warnings: &mut Vec<String>) {
    let said = ranks
        .iter()
        .filter_map(|r| r.meta.as_ref().map(|m| m.ranks))
        .max();
    let Some(said) = said else { return };
    let missing: Vec<String> = (0..said)
        .filter(|n| ranks.binary_search_by_key(n, |r| r.rank).is_err())
        .take(16)
        .map(|n| n.to_string())
        .collect();
    if !missing.is_empty() {
        warnings.push(format!(
            "the run had {said} rank(s) but the logs of rank(s) {} are missing",
            missing.join(", ")
        ));
    }
}

/// The cross-rank streams (by merged id) and, per rank (in `ranks`' order),
/// how its cross-rank halves are renamed. The two halves of a stream are
/// the entries with one `net_stream`; its merged id is the writer's half's.
fn link_cross_streams(
    ranks: &[Rank],
    stride: u64,
    warnings: &mut Vec<String>,
) -> (BTreeMap<u64, CrossStream>, Vec<Ids>) {
    // net stream -> (writer half, reader half): (index in ranks, local id).
    let mut halves: BTreeMap<u64, [Option<(usize, u64)>; 2]> = BTreeMap::new();
    for (k, r) in ranks.iter().enumerate() {
        let Some(m) = &r.meta else { continue };
        for e in &m.cross_streams {
            if e.peer_rank == r.rank {
                warnings.push(format!(
                    "rank-{}/{}: stream {} (net {}) has its peer on its own rank; taken as \
                     crossing anyway",
                    r.rank,
                    meta::RANK_FILE,
                    e.stream,
                    e.net_stream
                ));
            }
            let slot = &mut halves.entry(e.net_stream).or_default()[match e.side {
                LocalSide::Writer => 0,
                LocalSide::Reader => 1,
            }];
            match slot {
                Some((other, _)) => warnings.push(format!(
                    "net stream {} has two {} halves (ranks {} and {}); the first is kept",
                    e.net_stream,
                    match e.side {
                        LocalSide::Writer => "writer",
                        LocalSide::Reader => "reader",
                    },
                    ranks[*other].rank,
                    r.rank
                )),
                None => *slot = Some((k, e.stream)),
            }
        }
    }
    let mut ids: Vec<Ids> = ranks.iter().map(|_| Ids::default()).collect();
    let mut cross = BTreeMap::new();
    // Peers as each half states them, to check the other half's rank.
    let peer_of: HashMap<(usize, u64), u32> = ranks
        .iter()
        .enumerate()
        .flat_map(|(k, r)| {
            r.meta.iter().flat_map(move |m| {
                m.cross_streams
                    .iter()
                    .map(move |e| ((k, e.stream), e.peer_rank))
            })
        })
        .collect();
    for (net, [w, r]) in halves {
        let Some((k0, s0)) = w.or(r) else { continue };
        let merged = u64::from(ranks[k0].rank) * stride + s0;
        let rank_of = |h: Option<(usize, u64)>| h.map(|(k, _)| ranks[k].rank);
        let stated_peer =
            |h: Option<(usize, u64)>| h.and_then(|(k, s)| peer_of.get(&(k, s)).copied());
        // A half alone names its peer's rank.
        let writer_rank = rank_of(w).or_else(|| stated_peer(r));
        let reader_rank = rank_of(r).or_else(|| stated_peer(w));
        if let (Some(_), Some(_)) = (w, r) {
            if stated_peer(w) != rank_of(r) || stated_peer(r) != rank_of(w) {
                warnings.push(format!(
                    "net stream {net}: its halves' peer ranks do not name each other's rank"
                ));
            }
        }
        if let Some((k, s)) = w {
            ids[k].cross.insert(s, (merged, LocalSide::Writer));
        }
        if let Some((k, s)) = r {
            // A stream both of whose halves are on one rank keeps one end
            // per half: the writer's half was inserted already.
            ids[k].cross.entry(s).or_insert((merged, LocalSide::Reader));
        }
        cross.insert(
            merged,
            CrossStream {
                stream: merged,
                net_stream: net,
                writer_rank,
                reader_rank,
                writer_stream: w.map(|(_, s)| s),
                reader_stream: r.map(|(_, s)| s),
            },
        );
    }
    (cross, ids)
}

/// A rank's sampler windows on the merged run's clock, and what was wrong
/// with its log.
fn sampler_of(
    r: &Rank,
    clock: &Clock,
    ids: &Ids,
) -> anyhow::Result<(Vec<SampleWindow>, Option<String>)> {
    let path = r.dir.join(crate::load::samples::SAMPLER_FILE);
    let label = crate::load::files::file_label(&path);
    let data = std::fs::read(&path).map_err(|e| anyhow::anyhow!("{label}: cannot read: {e}"))?;
    let (header, start) = Header::parse(&data).map_err(|e| anyhow::anyhow!("{label}: {e}"))?;
    if header.calibration != clock.cal {
        bail!("{label}: its clock calibration differs from the worker logs' (another run?)");
    }
    Ok(rewrite::sampler_windows(&data, start, clock, ids, &label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_powers_of_ten_above_every_id() {
        assert_eq!(stride_above(0), 10);
        assert_eq!(stride_above(9), 10);
        assert_eq!(stride_above(10), 100);
        assert_eq!(stride_above(123_456), 1_000_000);
        assert_eq!(stride_above(u64::MAX), u64::MAX);
    }
}
