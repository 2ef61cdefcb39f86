//! What differs between the blocking engines, and nothing else: a bounded
//! channel, spawning a named task (on a worker, where the engine has
//! workers), and joining them all. The benchmarks that are the same network
//! on every engine ([`crate::nets`]: the pipe, the ring, the hand-off) are
//! written once, generic over [`Net`]; an engine is a `Net` and the few
//! figures it adds to a measurement.
//!
//! - [`RillNet`]: rill's tasks on a [`rill::Runtime`] built for the run,
//!   streams as channels; the tasks are added before the run and
//!   [`Net::finish`] runs them (its wall time is `Runtime::run`).
//! - [`ThreadNet`]: one OS thread per task, `crossbeam_channel::bounded`
//!   channels; a thread starts when it is spawned and [`Net::finish`] joins
//!   them all (its wall time runs from the net's creation to the last join).
//!
//! Every method is generic and every channel operation a static call on the
//! engine's own type, so a benchmark's hot loop is monomorphised per engine
//! and costs what the engine's hand-written loop did: no `dyn` on a
//! per-message path.
//!
//! tokio is not a `Net`: its tasks are futures, and a blocking `recv` inside
//! a tokio task would measure something no tokio program does. Its copies of
//! these benchmarks (`crate::peers::tokio_rt`) are async, and share with the
//! others what is not the engine: the parameters, the per-message protocol
//! and its checks ([`crate::bench::verify_ring`],
//! [`crate::bench::SequenceCheck`], [`crate::bench::SumCheck`]), and the
//! measurement.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use rill::{ManualTable, Mapping, MonitorConfig, MonitorFlags, RunStats, Runtime};

use crate::bench::Measurement;
use crate::mapping::{mapping_for, MappingChoice};

/// What a network needs from the engine before its tasks are spawned.
#[derive(Clone, Debug)]
pub struct NetSpec<'a> {
    /// The benchmark (the default log directory is `rill-logs/BENCH`).
    pub bench: &'a str,
    /// Workers, for engines that have workers.
    pub workers: usize,
    /// The runtime's default stream capacity (rill).
    pub capacity: usize,
    /// rill's mapping policy; `None`: each task goes to the worker it is
    /// spawned on.
    pub mapping: Option<&'a MappingChoice>,
    /// The task names in creation order (a `parts` mapping cuts them).
    pub names: &'a [String],
    /// The network's own placement table (a `manual` mapping).
    pub manual: ManualTable,
    /// Monitoring (`--monitor`), rill only.
    pub monitor: Option<MonitorFlags>,
    /// Log directory (`--logs`), rill only.
    pub logs: Option<PathBuf>,
}

/// A value a task fills in and the caller reads after the run.
pub struct Slot<T>(Arc<Mutex<Option<T>>>);

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot(self.0.clone())
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(Arc::new(Mutex::new(None)))
    }
}

impl<T> Slot<T> {
    /// Fills the slot.
    pub fn put(&self, v: T) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
    }

    /// Takes what a task put, or an error naming `what` when it put nothing.
    pub fn take(&self, what: &str) -> Result<T> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| anyhow!("{what}: the task ended without a result"))
    }
}

/// How a network's run went: its wall time and, on rill, the runtime's
/// statistics.
#[derive(Debug)]
pub struct Finished {
    /// Wall time of the run (see each engine).
    pub wall: Duration,
    /// Tasks spawned.
    pub tasks: u64,
    /// rill's statistics of the run.
    pub stats: Option<RunStats>,
    /// rill's monitoring setting of the run.
    pub monitor: Option<MonitorConfig>,
}

/// Stream ends a task is handed at spawn ([`Net::spawn_with`]): an
/// engine's channel ends, and `()`, pairs and `Vec`s of them.
pub trait Handed: Send + 'static {
    /// Records `task` as the holder of each rill stream end here
    /// ([`rill::Ends::hold`]); nothing for another engine's ends.
    fn hold(&self, task: rill::TaskId);
}

impl<T: Send + 'static> Handed for rill::Reader<T> {
    fn hold(&self, task: rill::TaskId) {
        rill::Ends::hold(self, task);
    }
}

impl<T: Send + 'static> Handed for rill::Writer<T> {
    fn hold(&self, task: rill::TaskId) {
        rill::Ends::hold(self, task);
    }
}

impl<T: Send + 'static> Handed for crossbeam_channel::Sender<T> {
    fn hold(&self, _: rill::TaskId) {}
}

impl<T: Send + 'static> Handed for crossbeam_channel::Receiver<T> {
    fn hold(&self, _: rill::TaskId) {}
}

impl Handed for () {
    fn hold(&self, _: rill::TaskId) {}
}

impl<A: Handed, B: Handed> Handed for (A, B) {
    fn hold(&self, task: rill::TaskId) {
        self.0.hold(task);
        self.1.hold(task);
    }
}

impl<E: Handed> Handed for Vec<E> {
    fn hold(&self, task: rill::TaskId) {
        self.iter().for_each(|e| e.hold(task));
    }
}

/// A network's ends as rill's, for `Runtime::spawn_with`.
struct AsEnds<E>(E);

impl<E: Handed> rill::Ends for AsEnds<E> {
    fn hold(&self, task: rill::TaskId) {
        self.0.hold(task);
    }
}

/// The body of a task spawned from inside another: it takes its ends.
pub trait InnerTask<E>: FnOnce(E) -> Result<()> + Send + 'static {}

impl<E, F: FnOnce(E) -> Result<()> + Send + 'static> InnerTask<E> for F {}

/// A blocking engine: bounded channels, named tasks, a join (see the module
/// doc).
pub trait Net: Sized {
    /// The writing end of a channel.
    type Tx<T: Send + 'static>: Handed;
    /// The reading end of a channel.
    type Rx<T: Send + 'static>: Handed;

    /// The engine for a network described by `spec`.
    fn build(spec: &NetSpec) -> Result<Self>;

    /// A channel that holds `capacity` messages.
    fn channel<T: Send + 'static>(capacity: usize) -> (Self::Tx<T>, Self::Rx<T>);

    /// Sends `v`, waiting while the channel is full; `false` when the reader
    /// has ended.
    fn send<T: Send + 'static>(tx: &mut Self::Tx<T>, v: T) -> bool;

    /// The next message, waiting while there is none; `None` once the writer
    /// has ended and every message was read.
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> Option<T>;

    /// Spawns task `name` running `f` (on `worker` where the engine places
    /// tasks itself).
    fn spawn<F>(&mut self, name: String, worker: usize, f: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static;

    /// [`spawn`](Net::spawn) of a task whose value the caller reads: what
    /// `f` returns is in the slot after [`finish`](Net::finish). A task
    /// whose value nobody reads is spawned without one, so that the slot
    /// does not stay live (a register) across the task's loop.
    fn spawn_value<R, F>(&mut self, name: String, worker: usize, f: F) -> Result<Slot<R>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let slot = Slot::default();
        let put = slot.clone();
        self.spawn(name, worker, move || put.put(f()))?;
        Ok(slot)
    }

    /// [`spawn`](Net::spawn) of a task handed `ends`, the stream ends it
    /// holds: on rill with `Runtime::spawn_with`, so that the runtime sees
    /// the network's streams before it places the tasks (the adaptive
    /// mapping cuts that graph) and a deadlock report names every end's
    /// holder; elsewhere as `spawn` of a closure that owns them.
    fn spawn_with<E, F>(&mut self, name: String, worker: usize, ends: E, f: F) -> Result<()>
    where
        E: Handed,
        F: FnOnce(E) + Send + 'static,
    {
        self.spawn(name, worker, move || f(ends))
    }

    /// [`spawn_value`](Net::spawn_value) of a task handed `ends` (see
    /// [`spawn_with`](Net::spawn_with)).
    fn spawn_value_with<E, R, F>(
        &mut self,
        name: String,
        worker: usize,
        ends: E,
        f: F,
    ) -> Result<Slot<R>>
    where
        E: Handed,
        R: Send + 'static,
        F: FnOnce(E) -> R + Send + 'static,
    {
        let slot = Slot::default();
        let put = slot.clone();
        self.spawn_with(name, worker, ends, move |e| put.put(f(e)))?;
        Ok(slot)
    }

    /// Runs every task to its end (a task's panic an error naming it).
    fn finish(self) -> Result<Finished>;

    /// A task spawned from inside another ([`Net::spawn_inner`]).
    type Inner: Send + 'static;

    /// Spawns task `name` from inside a running task of the network,
    /// handing it `ends` (on rill with `rill::spawn_with`, so that the new
    /// task holds them from its start); the spawner waits for it with
    /// [`Net::join_inner`] before it ends.
    fn spawn_inner<T: Send + 'static, U: Send + 'static>(
        name: String,
        ends: (Self::Rx<T>, Self::Tx<U>),
        f: impl InnerTask<(Self::Rx<T>, Self::Tx<U>)>,
    ) -> Result<Self::Inner>;

    /// Waits for a task spawned with [`Net::spawn_inner`], its failure an
    /// error.
    fn join_inner(inner: Self::Inner) -> Result<()>;

    /// The messages of several channels as they come, until every writer
    /// has ended.
    fn merge<T: Send + 'static>(inputs: Vec<Self::Rx<T>>) -> impl Iterator<Item = T>;

    /// The engine's own figures, added to a measurement of the run.
    fn figures(m: Measurement, run: &Finished) -> Measurement;
}

/// The runtime's monitoring setting for `--monitor MODE` (off when not
/// given) and `--logs DIR`. The logs of benchmark `bench` go to `DIR`
/// (default `rill-logs/BENCH`).
pub fn monitor_config(
    mode: Option<MonitorFlags>,
    logs: Option<&std::path::Path>,
    bench: &str,
) -> MonitorConfig {
    let dir = match logs {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("rill-logs").join(bench),
    };
    MonitorConfig {
        flags: mode.unwrap_or(MonitorFlags::OFF),
        dir: Some(dir),
    }
}

/// rill's figures of a run: `monitor`, `dispatches`, `parks`, `idle_ms`,
/// `crossed`, `steals`, and
/// when monitored `log_bytes` and `log_dir`.
pub fn rill_figures(m: Measurement, stats: &RunStats, mon: &MonitorConfig) -> Measurement {
    let parks: u64 = stats.workers.iter().map(|w| w.parks).sum();
    let idle: Duration = stats.workers.iter().map(|w| w.idle).sum();
    m.with(|f| {
        f.monitor = Some(mon.flags.to_string());
        f.dispatches = Some(stats.dispatches);
        f.parks = Some(parks);
        f.idle_ms = Some(idle.as_secs_f64() * 1e3);
        f.crossed = Some(stats.workers.iter().map(|w| w.crossed).sum());
        f.steals = Some(stats.workers.iter().map(|w| w.steals).sum());
        if !mon.flags.is_off() {
            f.log_bytes = Some(stats.log_bytes);
            f.log_dir = Some(mon.log_dir().display().to_string());
        }
    })
}

/// A rill runtime for a benchmark network: `workers` workers, stream
/// capacity `capacity`, `mapping` (round-robin when none), monitoring `mon`.
pub fn rill_runtime(
    workers: usize,
    capacity: usize,
    mon: &MonitorConfig,
    mapping: Mapping,
) -> Result<Runtime> {
    Ok(Runtime::builder()
        .workers(workers)
        .capacity(capacity)
        .mapping(mapping)
        .monitor(mon.clone())
        .profile_planner(rill_monitor::profile_planner)
        .build()?)
}

/// rill: the tasks on a runtime built for the network, each on the worker it
/// is spawned on, or where `--mapping` puts it when one is given.
pub struct RillNet {
    rt: Runtime,
    mon: MonitorConfig,
    pinned: bool,
    tasks: u64,
}

impl Net for RillNet {
    type Tx<T: Send + 'static> = rill::Writer<T>;
    type Rx<T: Send + 'static> = rill::Reader<T>;

    fn build(spec: &NetSpec) -> Result<Self> {
        let mon = monitor_config(spec.monitor, spec.logs.as_deref(), spec.bench);
        let (mapping, pinned) = match spec.mapping {
            None => (Mapping::RoundRobin, true),
            // `parts` cuts the creation order.
            Some(m) => (
                mapping_for(m, spec.manual.clone(), spec.names.to_vec())?,
                false,
            ),
        };
        Ok(RillNet {
            rt: rill_runtime(spec.workers, spec.capacity, &mon, mapping)?,
            mon,
            pinned,
            tasks: 0,
        })
    }

    #[inline]
    fn channel<T: Send + 'static>(capacity: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        rill::stream(capacity)
    }

    #[inline(always)]
    fn send<T: Send + 'static>(tx: &mut Self::Tx<T>, v: T) -> bool {
        tx.write(v).is_ok()
    }

    #[inline(always)]
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> Option<T> {
        rx.read()
    }

    fn spawn<F>(&mut self, name: String, worker: usize, f: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        if self.pinned {
            self.rt.try_spawn_on(worker, name, f)?;
        } else {
            self.rt.spawn(name, f);
        }
        self.tasks += 1;
        Ok(())
    }

    fn spawn_with<E, F>(&mut self, name: String, worker: usize, ends: E, f: F) -> Result<()>
    where
        E: Handed,
        F: FnOnce(E) + Send + 'static,
    {
        if self.pinned {
            self.rt.try_spawn_on(worker, name, move || f(ends))?;
        } else {
            self.rt
                .spawn_with(name, AsEnds(ends), move |AsEnds(e)| f(e));
        }
        self.tasks += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<Finished> {
        let t0 = Instant::now();
        let res = self.rt.run();
        let wall = t0.elapsed();
        let stats = res.context("the network's run failed")?;
        Ok(Finished {
            wall,
            tasks: self.tasks,
            stats: Some(stats),
            monitor: Some(self.mon),
        })
    }

    /// Nothing to wait for: the run waits for every task.
    type Inner = ();

    fn spawn_inner<T: Send + 'static, U: Send + 'static>(
        name: String,
        ends: (Self::Rx<T>, Self::Tx<U>),
        f: impl InnerTask<(Self::Rx<T>, Self::Tx<U>)>,
    ) -> Result<()> {
        rill::spawn_with(name, ends, move |e| {
            if let Err(e) = f(e) {
                panic!("{e:#}");
            }
        });
        Ok(())
    }

    fn join_inner(_: ()) -> Result<()> {
        Ok(())
    }

    fn merge<T: Send + 'static>(inputs: Vec<Self::Rx<T>>) -> impl Iterator<Item = T> {
        let mut set = rill::PollSet::new();
        for r in inputs {
            set.push(r);
        }
        set.map(|(_, v)| v)
    }

    fn figures(m: Measurement, run: &Finished) -> Measurement {
        match (&run.stats, &run.monitor) {
            (Some(s), Some(mon)) => rill_figures(m, s, mon),
            _ => m,
        }
    }
}

/// OS threads: each task a thread, started when spawned, joined by
/// [`Net::finish`]; workers and placements do not apply (the kernel
/// schedules the threads).
pub struct ThreadNet {
    start: Instant,
    threads: Vec<JoinHandle<()>>,
}

/// Spawns a named thread.
pub fn spawn_thread<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .with_context(|| format!("spawning thread {name}"))
}

/// Joins a thread, its panic an error naming it.
pub fn join_thread<T>(h: JoinHandle<T>) -> Result<T> {
    let name = h.thread().name().unwrap_or("?").to_string();
    h.join()
        .map_err(|p| anyhow!("thread {name} panicked: {}", panic_text(&p)))
}

/// The text of a panic payload, when it is a string.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

impl Net for ThreadNet {
    type Tx<T: Send + 'static> = crossbeam_channel::Sender<T>;
    type Rx<T: Send + 'static> = crossbeam_channel::Receiver<T>;

    fn build(_spec: &NetSpec) -> Result<Self> {
        Ok(ThreadNet {
            start: Instant::now(),
            threads: Vec::new(),
        })
    }

    #[inline]
    fn channel<T: Send + 'static>(capacity: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        crossbeam_channel::bounded(capacity)
    }

    #[inline(always)]
    fn send<T: Send + 'static>(tx: &mut Self::Tx<T>, v: T) -> bool {
        tx.send(v).is_ok()
    }

    #[inline(always)]
    fn recv<T: Send + 'static>(rx: &mut Self::Rx<T>) -> Option<T> {
        rx.recv().ok()
    }

    fn spawn<F>(&mut self, name: String, _worker: usize, f: F) -> Result<()>
    where
        F: FnOnce() + Send + 'static,
    {
        // Should this fail, the ends `f` holds are dropped with it, so the
        // threads already started see their channels end and end too.
        self.threads.push(spawn_thread(name, f)?);
        Ok(())
    }

    fn finish(self) -> Result<Finished> {
        let tasks = self.threads.len() as u64;
        // Join every thread before reporting the first panic.
        let joined: Vec<Result<()>> = self.threads.into_iter().map(join_thread).collect();
        let wall = self.start.elapsed();
        joined.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(Finished {
            wall,
            tasks,
            stats: None,
            monitor: None,
        })
    }

    type Inner = JoinHandle<Result<()>>;

    fn spawn_inner<T: Send + 'static, U: Send + 'static>(
        name: String,
        ends: (Self::Rx<T>, Self::Tx<U>),
        f: impl InnerTask<(Self::Rx<T>, Self::Tx<U>)>,
    ) -> Result<Self::Inner> {
        spawn_thread(name, move || f(ends))
    }

    fn join_inner(inner: Self::Inner) -> Result<()> {
        join_thread(inner)?
    }

    fn merge<T: Send + 'static>(mut inputs: Vec<Self::Rx<T>>) -> impl Iterator<Item = T> {
        std::iter::from_fn(move || loop {
            if inputs.is_empty() {
                return None;
            }
            let mut select = crossbeam_channel::Select::new();
            for r in &inputs {
                select.recv(r);
            }
            let op = select.select();
            let i = op.index();
            match op.recv(&inputs[i]) {
                Ok(v) => return Some(v),
                Err(_) => {
                    inputs.remove(i);
                }
            }
        })
    }

    fn figures(m: Measurement, run: &Finished) -> Measurement {
        m.with(|f| f.threads = Some(run.tasks))
    }
}
