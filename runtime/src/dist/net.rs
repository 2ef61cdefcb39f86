//! [`Net`]: one stream network built on every rank, each task run on the
//! rank its placement names, the streams between ranks carried by the
//! bridge.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::bridge::{BridgeStats, In, Job, Out, Signals};
use super::endpoint::{InEnd, OutEnd};
use super::place::{self, Placement};
use super::wire::Wire;
use super::{Carrier, DistError};
use crate::builder::Builder;
use crate::run::{RunStats, Runtime};
use crate::stream::{self, Ends, PollSet, Reader, Side, Writer};

/// Stream ends a task of a cross-rank network is handed at spawn: the
/// [`Ends`] whose message types are [`Wire`], so that the ends can be
/// carried to another rank.
pub trait NetEnds: Ends {
    /// Calls `f` with each end's stream id and side.
    #[doc(hidden)]
    fn visit(&self, f: &mut dyn FnMut(u64, Side));

    /// Hands every end to the bridge, for a task on rank `rank`.
    #[doc(hidden)]
    fn bridge(self, rank: usize, to: &mut Bridging);
}

/// The ends handed to the bridge while a network is built.
#[doc(hidden)]
#[derive(Default)]
pub struct Bridging {
    outs: Vec<(u64, usize, Box<dyn OutEnd>)>,
    ins: Vec<(u64, usize, Box<dyn InEnd>)>,
}

impl<T: Wire> NetEnds for Reader<T> {
    fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
        f(self.id(), Side::Reader);
    }
    fn bridge(self, rank: usize, to: &mut Bridging) {
        // The reading task is on `rank`: this rank's bridge reads here.
        self.hold_outside();
        to.outs.push((self.id(), rank, Box::new(self)));
    }
}

impl<T: Wire> NetEnds for Writer<T> {
    fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
        f(self.id(), Side::Writer);
    }
    fn bridge(self, rank: usize, to: &mut Bridging) {
        self.hold_outside();
        to.ins.push((self.id(), rank, Box::new(self)));
    }
}

impl<T: Wire> NetEnds for PollSet<T> {
    fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
        self.readers().iter().for_each(|r| r.visit(f));
    }
    fn bridge(self, rank: usize, to: &mut Bridging) {
        self.into_readers()
            .into_iter()
            .for_each(|r| r.bridge(rank, to));
    }
}

impl NetEnds for () {
    fn visit(&self, _: &mut dyn FnMut(u64, Side)) {}
    fn bridge(self, _: usize, _: &mut Bridging) {}
}

impl<E: NetEnds> NetEnds for Option<E> {
    fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
        if let Some(e) = self {
            e.visit(f);
        }
    }
    fn bridge(self, rank: usize, to: &mut Bridging) {
        if let Some(e) = self {
            e.bridge(rank, to);
        }
    }
}

impl<E: NetEnds> NetEnds for Vec<E> {
    fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
        self.iter().for_each(|e| e.visit(f));
    }
    fn bridge(self, rank: usize, to: &mut Bridging) {
        self.into_iter().for_each(|e| e.bridge(rank, to));
    }
}

macro_rules! tuple_net_ends {
    ($($n:ident),+) => {
        impl<$($n: NetEnds),+> NetEnds for ($($n,)+) {
            #[allow(non_snake_case)]
            fn visit(&self, f: &mut dyn FnMut(u64, Side)) {
                let ($($n,)+) = self;
                $($n.visit(f);)+
            }
            #[allow(non_snake_case)]
            fn bridge(self, rank: usize, to: &mut Bridging) {
                let ($($n,)+) = self;
                $($n.bridge(rank, to);)+
            }
        }
    };
}

tuple_net_ends!(A);
tuple_net_ends!(A, B);
tuple_net_ends!(A, B, C);
tuple_net_ends!(A, B, C, D);

/// Where a task runs: on this rank's worker, or on another rank.
enum Here {
    Local(usize),
    Remote(usize),
}

type Build = Box<dyn FnOnce(Here, &mut Runtime, &mut Bridging) -> Result<(), DistError>>;

struct Pending {
    name: String,
    ends: Vec<(u64, Side)>,
    /// The rank and worker given at spawn ([`Net::spawn_with_on`]); `None`:
    /// where the placement puts it.
    pinned: Option<(usize, usize)>,
    build: Build,
}

/// A network's tasks and streams as built so far ([`Net::graph`]): what
/// a placement that cuts the stream graph needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetGraph {
    /// The tasks' names in spawn order.
    pub tasks: Vec<String>,
    /// Per task, the rank and worker it was pinned to
    /// ([`Net::spawn_with_on`]); `None` for a task the placement places.
    pub pinned: Vec<Option<(usize, usize)>>,
    /// One entry per network stream handed to two tasks: the writing
    /// task's and the reading task's index in `tasks`, in the order the
    /// streams were made.
    pub streams: Vec<(usize, usize)>,
}

/// How a network's run went on this rank.
#[derive(Debug, Clone)]
pub struct NetStats {
    /// This rank.
    pub rank: usize,
    /// The ranks of the run.
    pub ranks: usize,
    /// The local run's statistics.
    pub run: RunStats,
    /// The bridge's: frames, messages, the clock offset to rank 0.
    pub bridge: BridgeStats,
    /// Tasks of the network that ran on this rank.
    pub local_tasks: usize,
    /// Streams with one end on this rank and the other on another.
    pub cross_streams: usize,
}

/// One stream network over every rank of a run (SPMD: every rank runs the
/// same program and builds the same network in the same order).
///
/// Make its streams with [`stream`](Self::stream) and its tasks with
/// [`spawn_with`](Self::spawn_with); [`run`](Self::run) places each task
/// (the same answer on every rank), runs this rank's tasks and carries the
/// streams between ranks, and returns when the run has ended on every
/// rank. Tasks that a running task spawns stay on its rank (placed by the
/// builder's mapping among its workers).
pub struct Net {
    carrier: Carrier,
    rank: usize,
    ranks: usize,
    rt: Runtime,
    placement: Placement,
    /// This machine's ranks have more threads than it has cores.
    crowded: bool,
    /// This machine's ranks have more workers than it has cores (their
    /// bridge threads not counted).
    workers_crowd: bool,
    /// Stream id → network-wide number, for streams made here.
    streams: HashMap<u64, u32>,
    pending: Vec<Pending>,
    log_dir: Option<PathBuf>,
}

impl Net {
    pub(crate) fn new(carrier: Carrier, mut builder: Builder) -> Result<Net, DistError> {
        let (rank, ranks) = carrier.rank_size();
        // The ranks on this machine, each with its workers and a bridge,
        // against its cores: when they do not fit, a spinning thread takes
        // the core its peer needs, so idle workers park at once (unless the
        // spin was set) and the bridge does not spin.
        let (workers, spin_set) = builder.workers_and_spin_set();
        let (cores, sharers) = carrier.cores_and_sharers();
        let crowded = sharers * (workers + 1) > cores;
        let workers_crowd = sharers * workers > cores;
        if crowded && !spin_set {
            builder = builder.spin(std::time::Duration::ZERO);
        }
        let mon = builder.monitor_mut();
        let log_dir = if !mon.flags.is_off() {
            let dir = mon.log_dir().join(format!("rank-{rank}"));
            mon.dir = Some(dir.clone());
            Some(dir)
        } else {
            None
        };
        let rt = builder.build().map_err(DistError::Config)?;
        Ok(Net {
            carrier,
            rank,
            ranks,
            rt,
            placement: Placement::default(),
            crowded,
            workers_crowd,
            streams: HashMap::new(),
            pending: Vec::new(),
            log_dir,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The ranks of the run.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Workers per rank.
    pub fn workers(&self) -> usize {
        self.rt.config().workers()
    }

    /// Sets how tasks are placed (default [`Placement::Contiguous`]).
    pub fn placement(&mut self, p: Placement) -> &mut Self {
        self.placement = p;
        self
    }

    /// A stream of the network, with room for `capacity` messages between
    /// its writer and its reader wherever they run.
    ///
    /// # Panics
    /// As [`rill::stream`](crate::stream()).
    #[track_caller]
    pub fn stream<T: Wire>(&mut self, capacity: usize) -> (Writer<T>, Reader<T>) {
        let (w, r) = stream::stream(capacity);
        let n = u32::try_from(self.streams.len()).expect("fewer than 2^32 streams");
        self.streams.insert(w.id(), n);
        (w, r)
    }

    /// Adds the task `name`, handed `ends`; it runs on the rank and worker
    /// its placement names, and on every other rank its ends are carried
    /// by the bridge. Every end must be of a stream made with
    /// [`stream`](Self::stream), and both ends of each such stream must be
    /// handed to tasks before [`run`](Self::run).
    pub fn spawn_with<E, F>(&mut self, name: impl Into<Cow<'static, str>>, ends: E, f: F)
    where
        E: NetEnds,
        F: FnOnce(E) + Send + 'static,
    {
        self.add(name.into(), None, ends, f);
    }

    /// Adds the task `name` on rank `rank`, worker `worker`, whatever the
    /// placement (see [`spawn_with`](Self::spawn_with)): a task whose
    /// place follows from others' (a relay on the rank of the tasks it
    /// feeds, found with [`places_of`](Self::places_of)). Pinned tasks do
    /// not count in the placement: the others are placed as if they were
    /// the network's only tasks. A rank or worker past the run's is an
    /// error of [`run`](Self::run).
    pub fn spawn_with_on<E, F>(
        &mut self,
        rank: usize,
        worker: usize,
        name: impl Into<Cow<'static, str>>,
        ends: E,
        f: F,
    ) where
        E: NetEnds,
        F: FnOnce(E) + Send + 'static,
    {
        self.add(name.into(), Some((rank, worker)), ends, f);
    }

    fn add<E, F>(&mut self, name: Cow<'static, str>, pinned: Option<(usize, usize)>, ends: E, f: F)
    where
        E: NetEnds,
        F: FnOnce(E) + Send + 'static,
    {
        let mut seen = Vec::new();
        ends.visit(&mut |id, side| seen.push((id, side)));
        let task_name = name.clone();
        self.pending.push(Pending {
            name: name.into_owned(),
            ends: seen,
            pinned,
            build: Box::new(move |here, rt, bridging| match here {
                Here::Local(worker) => rt
                    .try_spawn_with_on(worker, task_name, ends, f)
                    .map(|_| ())
                    .map_err(|e| DistError::Build(e.to_string())),
                Here::Remote(rank) => {
                    ends.bridge(rank, bridging);
                    Ok(())
                }
            }),
        });
    }

    /// Adds a task with no ends (see [`spawn_with`](Self::spawn_with)).
    pub fn spawn<F>(&mut self, name: impl Into<Cow<'static, str>>, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        self.spawn_with(name, (), move |()| f());
    }

    /// The (rank, worker) of each task added so far, in spawn order.
    pub fn plan(&self) -> Result<Vec<(String, usize, usize)>, DistError> {
        let free: Vec<&str> = self
            .pending
            .iter()
            .filter(|p| p.pinned.is_none())
            .map(|p| p.name.as_str())
            .collect();
        let mut placed = self.places_of(&free)?.into_iter();
        let workers = self.workers();
        self.pending
            .iter()
            .map(|p| {
                let (r, w) = match p.pinned {
                    Some((r, w)) if r >= self.ranks || w >= workers => {
                        return Err(DistError::Placement(format!(
                            "task '{}' is pinned to rank {r} worker {w}, but the run has {} rank(s) of {workers} worker(s)",
                            p.name, self.ranks
                        )))
                    }
                    Some(at) => at,
                    None => placed.next().expect("a place per free task"),
                };
                Ok((p.name.clone(), r, w))
            })
            .collect()
    }

    /// Where the placement puts tasks named `names`, spawned in this order
    /// (not counting pinned tasks): what [`plan`](Self::plan) will say of
    /// them once they are the network's tasks. A network whose wiring
    /// depends on where its tasks run (a relay per rank) asks before it
    /// spawns them.
    pub fn places_of(&self, names: &[&str]) -> Result<Vec<(usize, usize)>, DistError> {
        place::place(&self.placement, names, self.ranks, self.workers())
            .map_err(DistError::Placement)
    }

    /// The tasks and streams added so far (see [`NetGraph`]).
    pub fn graph(&self) -> NetGraph {
        let mut ends: HashMap<u64, (Option<usize>, Option<usize>)> = HashMap::new();
        for (i, p) in self.pending.iter().enumerate() {
            for &(id, side) in &p.ends {
                let e = ends.entry(id).or_default();
                match side {
                    Side::Writer => e.0 = Some(i),
                    Side::Reader => e.1 = Some(i),
                }
            }
        }
        let mut streams: Vec<(u32, usize, usize)> = ends
            .into_iter()
            .filter_map(|(id, e)| Some((*self.streams.get(&id)?, e.0?, e.1?)))
            .collect();
        streams.sort_unstable();
        NetGraph {
            tasks: self.pending.iter().map(|p| p.name.clone()).collect(),
            pinned: self.pending.iter().map(|p| p.pinned).collect(),
            streams: streams.into_iter().map(|(_, w, r)| (w, r)).collect(),
        }
    }

    /// Places the tasks, runs this rank's, carries the cross-rank streams,
    /// and returns when every task on every rank has ended (or the run
    /// failed on some rank: then every rank returns an error naming it).
    pub fn run(mut self) -> Result<NetStats, DistError> {
        let plan = self.plan()?;
        // Every stream's two ends must have gone to tasks: an end kept by
        // the building thread would be a different end on every rank.
        let mut sides: HashMap<u64, (Option<usize>, Option<usize>)> = HashMap::new();
        // Who holds each end: its task's name and rank (for reports).
        let mut holders: HashMap<(u64, bool), (String, usize)> = HashMap::new();
        for (p, (_, rank, _)) in self.pending.iter().zip(&plan) {
            for &(id, side) in &p.ends {
                holders.insert((id, side == Side::Writer), (p.name.clone(), *rank));
                if !self.streams.contains_key(&id) {
                    return Err(DistError::Build(format!(
                        "task '{}' was handed an end of stream {id}, which was not made with Net::stream",
                        p.name
                    )));
                }
                let e = sides.entry(id).or_default();
                match side {
                    Side::Writer => e.0 = Some(*rank),
                    Side::Reader => e.1 = Some(*rank),
                }
            }
        }
        for (id, n) in &self.streams {
            match sides.get(id) {
                Some((Some(_), Some(_))) => {}
                _ => {
                    return Err(DistError::Build(format!(
                        "network stream {n} has an end that was not handed to a task (with Net::spawn_with, both ends of every network stream go to tasks)"
                    )))
                }
            }
        }
        let mut bridging = Bridging::default();
        let mut local_tasks = 0;
        for (p, (_, rank, worker)) in std::mem::take(&mut self.pending).into_iter().zip(&plan) {
            let here = if *rank == self.rank {
                local_tasks += 1;
                Here::Local(*worker)
            } else {
                Here::Remote(*rank)
            };
            (p.build)(here, &mut self.rt, &mut bridging)?;
        }
        // A stream whose both ends went to other ranks' tasks does not
        // touch this rank: its two local halves are simply dropped.
        let out_ids: std::collections::HashSet<u64> = bridging.outs.iter().map(|o| o.0).collect();
        let in_ids: std::collections::HashSet<u64> = bridging.ins.iter().map(|i| i.0).collect();
        let mut cross = Vec::new();
        let outs: Vec<Out> = bridging
            .outs
            .into_iter()
            .filter(|(id, _, _)| !in_ids.contains(id))
            .map(|(id, to, end)| {
                cross.push((id, self.streams[&id], "reader_remote", to));
                Out {
                    net: self.streams[&id],
                    to,
                    end,
                }
            })
            .collect();
        let ins: Vec<In> = bridging
            .ins
            .into_iter()
            .filter(|(id, _, _)| !out_ids.contains(id))
            .map(|(id, from, end)| {
                cross.push((id, self.streams[&id], "writer_remote", from));
                In {
                    net: self.streams[&id],
                    from,
                    end,
                }
            })
            .collect();
        let signals = Arc::new(Signals::default());
        let pump = self.carrier.workers_may_carry().then(|| {
            let pump = Arc::new(super::bridge::Pump::new(self.workers_crowd));
            self.rt.set_idle_work(pump.clone());
            pump
        });
        let job = Job {
            pump,
            outs,
            ins,
            signals: signals.clone(),
            watch: self.rt.watch(),
            crowded: self.crowded,
            exit_when_stuck: self.carrier.exits_when_stuck(),
        };
        let outcome = self.carrier.start(job);
        let run = self.rt.run();
        if let Err(e) = &run {
            *signals
                .local_error
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(format!("rank {}: {e}", self.rank));
        }
        // Release: pairs with the bridge's Acquire load; the error is set first.
        signals.local_ended.store(true, Ordering::Release);
        let outcome = outcome.recv().map_err(|_| {
            DistError::Transport("the bridge's thread ended without a result".into())
        })?;
        if let Some(dir) = &self.log_dir {
            write_rank_file(
                dir,
                self.rank,
                self.ranks,
                self.workers(),
                &outcome.stats,
                &cross,
            );
        }
        if outcome.deadlocked {
            let part = match &run {
                Err(crate::RunError::Deadlock { blocked, .. }) => blocked_text(blocked, &holders),
                Ok(_) => "no task of this rank is left".into(),
                Err(e) => e.to_string(),
            };
            return Err(DistError::Deadlock {
                rank: self.rank,
                part,
            });
        }
        let run = run.map_err(|source| DistError::Run {
            rank: self.rank,
            source,
        })?;
        if let Some((rank, message)) = outcome.aborted_by {
            return Err(DistError::Remote {
                rank: rank as usize,
                message,
            });
        }
        if let Some(text) = outcome.protocol_error {
            return Err(DistError::Transport(text));
        }
        Ok(NetStats {
            rank: self.rank,
            ranks: self.ranks,
            run,
            bridge: outcome.stats,
            local_tasks,
            cross_streams: cross.len(),
        })
    }
}

/// A rank's blocked tasks, each with the task (and rank) that holds the
/// other end of what it waits on.
fn blocked_text(
    blocked: &[crate::BlockedTask],
    holders: &HashMap<(u64, bool), (String, usize)>,
) -> String {
    use crate::vocab::BlockedOn;
    let peer = |stream: u64, writer: bool| match holders.get(&(stream, writer)) {
        Some((name, rank)) => format!("task '{name}' on rank {rank}"),
        None => "a task of this rank's own".into(),
    };
    let lines: Vec<String> = blocked
        .iter()
        .map(|b| {
            let what = match &b.on {
                BlockedOn::Nothing => "ready but never ran".to_string(),
                BlockedOn::Input { stream, .. } => {
                    format!("reads stream {stream}, written by {}", peer(*stream, true))
                }
                BlockedOn::Output { stream, .. } => {
                    format!(
                        "writes full stream {stream}, read by {}",
                        peer(*stream, false)
                    )
                }
                BlockedOn::Any { streams } => format!(
                    "polls streams written by {}",
                    streams
                        .iter()
                        .map(|(s, _)| peer(*s, true))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!("task '{}' {what}", b.name)
        })
        .collect();
    format!("{} blocked task(s): {}", lines.len(), lines.join("; "))
}

/// `DIR/rank-R/rank.json`: what `rill-mon` needs to read the ranks' logs
/// as one run (the clock offset to rank 0, the cross-rank streams).
fn write_rank_file(
    dir: &std::path::Path,
    rank: usize,
    ranks: usize,
    workers: usize,
    stats: &BridgeStats,
    cross: &[(u64, u32, &str, usize)],
) {
    let streams: Vec<String> = cross
        .iter()
        .map(|(id, net, which, peer)| {
            let side = if *which == "reader_remote" { "writer" } else { "reader" };
            format!(
                "{{\"stream\": {id}, \"net_stream\": {net}, \"side\": \"{side}\", \"peer_rank\": {peer}}}"
            )
        })
        .collect();
    let text = format!(
        "{{\"rank\": {rank}, \"ranks\": {ranks}, \"workers\": {workers},\n \"clock_offset_ns\": {},\n \"clock_residual_ns\": {},\n \"cross_streams\": [{}]}}\n",
        stats.clock_offset_ns,
        stats.clock_residual_ns,
        streams.join(",\n  ")
    );
    if let Err(e) =
        std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join("rank.json"), text))
    {
        eprintln!(
            "rill: could not write {}: {e}",
            dir.join("rank.json").display()
        );
    }
}
