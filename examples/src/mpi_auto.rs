//! `--mapping auto` under mpirun: the pilot on every rank, the plan made
//! on rank 0 and shared.
//!
//! 1. **Pilot.** The application's network at about 1/N of its size
//!    (`--pilot N`, default [`PILOT_DIVISOR`]; the floors are one
//!    process's, `crate::mpi_bench`'s `pilot_size` calls), on every rank
//!    with the real run's workers, placed round-robin over every rank's
//!    workers (tasks that running tasks spawn round-robin over their
//!    rank's), monitored as one process's pilot is ([`PILOT_MONITOR`],
//!    count mode) into `LOGS/pilot/`: each rank writes `LOGS/pilot/rank-R/`
//!    (`rill::dist`'s monitoring). Its output is checked as the real
//!    run's, and the verdicts are summed over the ranks: a pilot that does
//!    not verify ends the auto run on every rank.
//! 2. **Logs to rank 0.** Each rank sends rank 0 a fingerprint of its
//!    `rank-R/` (each file's name, length and FNV-1a hash); where rank 0
//!    reads other bytes there (ranks on nodes that share no filesystem),
//!    the rank sends its files and rank 0 writes them. On one machine
//!    nothing but the fingerprints moves.
//! 3. **Plan.** Rank 0 reads `LOGS/pilot` as one run across ranks (clocks
//!    aligned, cross-rank streams joined; as `rill-mon map` loads: no
//!    latency replay) and plans with
//!    [`rill_monitor::plan_rank_mapping`]`(run, R, W)`, what `rill-mon map
//!    LOGS/pilot --ranks R --workers W` writes: the crossing costs per wait
//!    between workers and between ranks measured on the pilot where it
//!    shows waits of that level. The file goes to `LOGS/auto.map`.
//! 4. **Shared.** Rank 0 broadcasts the file's text (or its error) over
//!    MPI; every rank parses it ([`RankTable::parse`]), so every rank runs
//!    under the same table, and every rank fails alike when the plan does.
//! 5. **Run** under the table: the network's tasks where it says, and the
//!    tasks that running tasks spawn (a Monte Carlo chain unfolding) on the
//!    worker its lines for this rank name ([`Planned::mapping_on`]).
//!
//! The one-rank row beside it makes its own pilot (one rank of R·W
//! workers, `LOGS/one-rank/pilot/rank-0/`) and plan (`plan_rank_mapping(run,
//! 1, R·W)`, `LOGS/one-rank/auto.map`).
//!
//! Time, on rank 0: `pilot_run_ms`, the pilot network's wall time (the
//! time of its `Net::run`, as every row's; the ranks start it together,
//! `crate::mpi_bench::alternate` begins each round at a barrier);
//! `plan_ms`, from the pilot's end to the table parsed on this rank
//! (summing the verdicts, which waits for the last rank to leave its
//! pilot, the logs' fingerprints, loading, planning, writing the file, the
//! broadcast);
//! `pilot_ms` their sum, and `total_ms` = `pilot_ms` + the real run's wall
//! time: the figure to set beside the other mappings' wall time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::Communicator;
use rill::dist::{Loopback, Net, Placement, RankTable, Wire, World};
use rill::{ManualTable, Mapping, MonitorConfig, Runtime};
pub use rill_examples::apps::auto::PILOT_DIVISOR;
use rill_examples::dist_place::Placing;
use rill_examples::mapping::PILOT_MONITOR;

use crate::mpi_bench::Workload;

/// The tag of the log-sharing messages (the bridge's frames use 0, and no
/// network runs meanwhile).
const LOGS_TAG: i32 = 0x1065;

/// Where auto's pilots and plans go, and the pilot's divisor.
#[derive(Clone, Debug)]
pub(crate) struct AutoOpts {
    /// `--logs DIR`, or `target/rill-auto/mpi-APP`.
    pub dir: PathBuf,
    /// `--pilot N`.
    pub divisor: u64,
}

impl AutoOpts {
    /// The directory of round `round` of `rounds`: DIR itself for one
    /// round, `DIR/run-N` for several.
    pub fn round_dir(&self, round: usize, rounds: usize) -> PathBuf {
        if rounds == 1 {
            self.dir.clone()
        } else {
            self.dir.join(format!("run-{round}"))
        }
    }
}

/// What a pilot and its plan gave.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    /// The plan, as every rank parsed it.
    pub table: RankTable,
    /// The mapping file (on rank 0).
    pub file: PathBuf,
    /// The pilot's logs.
    pub logs: PathBuf,
    /// The pilot's size in words.
    pub size: String,
    /// The pilot network's wall ms on this rank.
    pub pilot_run_ms: f64,
    /// From the pilot's end to the table parsed here.
    pub plan_ms: f64,
}

impl Planned {
    /// `pilot_ms`: the pilot's run and the plan.
    pub fn pilot_ms(&self) -> f64 {
        self.pilot_run_ms + self.plan_ms
    }

    /// The placement of the network's tasks.
    pub fn placing(&self) -> Placing {
        Placing::Given(Placement::Table(self.table.clone()))
    }

    /// The runtime mapping of rank `rank`: its lines of the table (by
    /// worker), for the tasks its running tasks spawn; a name without a
    /// line of this rank goes round-robin over its workers.
    pub fn mapping_on(&self, rank: usize) -> Mapping {
        Mapping::Manual(
            self.table
                .entries()
                .iter()
                .filter(|(_, r, _)| *r == rank)
                .fold(ManualTable::new(), |t, (prefix, _, w)| {
                    t.with(prefix.clone(), *w)
                }),
        )
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The pilot's runtime: `workers` workers, tasks spawned by running tasks
/// round-robin, monitored as one process's pilot into `logs`.
fn pilot_builder(workers: usize, logs: &Path) -> rill::Builder {
    Runtime::builder()
        .workers(workers)
        .pin(false)
        .mapping(Mapping::RoundRobin)
        .monitor(MonitorConfig::new(PILOT_MONITOR, logs))
}

/// The pilot across every rank and the plan shared (every rank calls it;
/// see the module documentation). `dir` is the round's directory.
pub(crate) fn across<T>(
    world: &World,
    dir: &Path,
    workers: usize,
    pilot: &mut Workload<'_, T>,
) -> Result<Planned, String> {
    let (rank, ranks) = (world.rank(), world.size());
    let logs = dir.join("pilot");
    clear(&logs, rank, ranks);
    let net = world
        .net(pilot_builder(workers, &logs))
        .map_err(|e| e.to_string())?;
    let (pilot_run_ms, out) = (pilot.run)(net, Some(Placing::Given(Placement::RoundRobin)))
        .map_err(|e| format!("the pilot ({}): {e}", pilot.size))?;
    let t = Instant::now();
    let verdict = out.map_or([0, 0], |o| [1, u64::from(!(pilot.check)(o))]);
    let sums = world.with_mpi(move |w| {
        let mut sums = [0u64; 2];
        w.all_reduce_into(&verdict[..], &mut sums[..], SystemOperation::sum());
        sums
    });
    if sums != [1, 0] {
        return Err(format!(
            "the pilot ({}) did not verify (logs in {})",
            pilot.size,
            logs.display()
        ));
    }
    let shared = share_logs(world, &logs);
    let text = if rank == 0 {
        shared.and_then(|()| plan_file(&logs, dir, ranks, workers))
    } else {
        Ok(String::new())
    };
    let text = broadcast(world, text)?;
    planned(&text, dir, logs, pilot.size.clone(), pilot_run_ms, t)
}

/// The plan's text parsed, with its figures (`t`: the pilot's end).
fn planned(
    text: &str,
    dir: &Path,
    logs: PathBuf,
    size: String,
    pilot_run_ms: f64,
    t: Instant,
) -> Result<Planned, String> {
    let table = RankTable::parse(text)
        .map_err(|e| format!("the planned mapping {}: {e}", dir.join(MAP_FILE).display()))?;
    Ok(Planned {
        table,
        file: dir.join(MAP_FILE),
        logs,
        size,
        pilot_run_ms,
        plan_ms: ms(t),
    })
}

/// The one-rank row's pilot and plan: one rank of `workers` workers, on
/// this process alone, in `dir`.
pub(crate) fn one_rank<T>(
    dir: &Path,
    workers: usize,
    pilot: &mut Workload<'_, T>,
) -> Result<Planned, String> {
    let logs = dir.join("pilot");
    clear(&logs, 0, 1);
    let t = Loopback::ranks(1).pop().expect("one rank");
    let net = Net::loopback(t, pilot_builder(workers, &logs)).map_err(|e| e.to_string())?;
    let (pilot_run_ms, out) = (pilot.run)(net, Some(Placing::Given(Placement::RoundRobin)))
        .map_err(|e| format!("the one-rank pilot ({}): {e}", pilot.size))?;
    let t = Instant::now();
    if !out.is_some_and(|o| (pilot.check)(o)) {
        return Err(format!(
            "the one-rank pilot ({}) did not verify (logs in {})",
            pilot.size,
            logs.display()
        ));
    }
    let text = plan_file(&logs, dir, 1, workers)?;
    planned(&text, dir, logs, pilot.size.clone(), pilot_run_ms, t)
}

/// The plan's file name in the round's directory.
pub(crate) const MAP_FILE: &str = "auto.map";

/// Plans `ranks` × `workers` from the pilot's logs in `logs` and writes the
/// file to `dir/auto.map`; its text.
fn plan_file(logs: &Path, dir: &Path, ranks: usize, workers: usize) -> Result<String, String> {
    let load = rill_monitor::LoadOptions {
        progress: Some(false),
        latency: false,
        ..rill_monitor::LoadOptions::default()
    };
    let run = rill_monitor::load_run_with(logs, &load)
        .map_err(|e| format!("reading the pilot's logs in {}: {e:#}", logs.display()))?;
    let plan = rill_monitor::plan_rank_mapping(&run, ranks, workers).map_err(|e| {
        format!(
            "planning from the pilot's logs in {}: {e:#}",
            logs.display()
        )
    })?;
    let text = plan.to_file();
    let file = dir.join(MAP_FILE);
    std::fs::write(&file, &text)
        .map_err(|e| format!("writing the mapping file {}: {e}", file.display()))?;
    Ok(text)
}

/// Removes what an earlier pilot left where this one writes: this rank's
/// logs and, on rank 0, the logs of ranks this run does not have and any
/// one-process logs at the top (which would make the loader read the
/// directory as one process's). A failure is said, not fatal: every rank
/// must reach the pilot.
fn clear(logs: &Path, rank: usize, ranks: usize) {
    let clear_files = |dir: &Path| -> std::io::Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".rlog") || name == "rank.json" {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    };
    let mut result = clear_files(&logs.join(format!("rank-{rank}")));
    if rank == 0 {
        result = result.and_then(|()| clear_files(logs));
        if let Ok(entries) = std::fs::read_dir(logs) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let stray = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("rank-"))
                    .and_then(|r| r.parse::<usize>().ok())
                    .is_some_and(|r| r >= ranks);
                if stray {
                    result = result.and_then(|()| std::fs::remove_dir_all(entry.path()));
                }
            }
        }
    }
    if let Err(e) = result {
        eprintln!(
            "rank {rank}: clearing an earlier pilot's logs in {}: {e}",
            logs.display()
        );
    }
}

/// FNV-1a of a byte string.
fn fnv(data: &[u8]) -> u64 {
    rill_examples::apps::fnv64(data)
}

/// The logs directly in `dir` (`*.rlog` and `rank.json`; not the run's
/// `rill.lock`), sorted by name, with their bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (name.ends_with(".rlog") || name == "rank.json").then_some(())?;
            Some((name, std::fs::read(e.path()).ok()?))
        })
        .collect();
    v.sort();
    v
}

/// Each file's name, length and hash, one line each.
fn fingerprint(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    files
        .iter()
        .map(|(n, b)| format!("{n}\t{}\t{:016x}\n", b.len(), fnv(b)))
        .collect::<String>()
        .into_bytes()
}

/// Step 2 of the module documentation (every rank calls it): afterwards
/// rank 0 reads every rank's pilot logs under `logs`. An error is rank
/// 0's to report (the plan's broadcast carries it to every rank).
fn share_logs(world: &World, logs: &Path) -> Result<(), String> {
    let (rank, ranks) = (world.rank(), world.size());
    let logs = logs.to_path_buf();
    world.with_mpi(move |w| {
        if rank != 0 {
            let mine = files(&logs.join(format!("rank-{rank}")));
            let p = w.process_at_rank(0);
            p.send_with_tag(&fingerprint(&mine)[..], LOGS_TAG);
            let (need, _) = p.receive_with_tag::<u8>(LOGS_TAG);
            if need == 1 {
                let mut bytes = Vec::new();
                mine.encode(&mut bytes);
                p.send_with_tag(&bytes[..], LOGS_TAG);
            }
            return Ok(());
        }
        let mut result = Ok(());
        for r in 1..ranks {
            let p = w.process_at_rank(r as i32);
            let (theirs, _) = p.receive_vec_with_tag::<u8>(LOGS_TAG);
            let dir = logs.join(format!("rank-{r}"));
            let need = fingerprint(&files(&dir)) != theirs;
            p.send_with_tag(&u8::from(need), LOGS_TAG);
            if need {
                let (bytes, _) = p.receive_vec_with_tag::<u8>(LOGS_TAG);
                // Every rank's files are received even after a failure,
                // so that no send is left unmatched.
                let written = Vec::<(String, Vec<u8>)>::decode(&mut &bytes[..])
                    .map_err(|e| format!("rank {r}'s pilot logs arrived damaged: {e}"))
                    .and_then(|got| write_files(&dir, &got));
                result = result.and(written);
            }
        }
        result
    })
}

/// Writes `files` into `dir` (each through a temporary name, so that a
/// reader never sees half a file).
fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), String> {
    let fail = |what: &Path, e: std::io::Error| format!("writing {}: {e}", what.display());
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    for (name, bytes) in files {
        if name.contains('/') {
            return Err(format!("a pilot log named '{name}'"));
        }
        let tmp = dir.join(format!(".{name}.part"));
        std::fs::write(&tmp, bytes).map_err(|e| fail(&tmp, e))?;
        std::fs::rename(&tmp, dir.join(name)).map_err(|e| fail(&tmp, e))?;
    }
    Ok(())
}

/// Rank 0's `text` on every rank (every rank calls it; the others' `text`
/// is not read).
fn broadcast(world: &World, text: Result<String, String>) -> Result<String, String> {
    let mut bytes = Vec::new();
    if world.rank() == 0 {
        match text {
            Ok(t) => (true, t),
            Err(e) => (false, e),
        }
        .encode(&mut bytes);
    }
    let bytes = world.with_mpi(move |w| {
        let root = w.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        bytes
    });
    match <(bool, String)>::decode(&mut &bytes[..]) {
        Ok((true, text)) => Ok(text),
        Ok((false, e)) => Err(e),
        Err(e) => Err(format!("the plan arrived damaged: {e}")),
    }
}
