//! Types shared by every engine: benchmark parameters, their validation, the
//! measurement an engine returns, and the verifiers that check a run did what it
//! claims.
//!
//! A benchmark ([`crate::engines::Bench`]) on an engine (rill, or a peer baseline) gets a validated [`PipeParams`],
//! [`RingParams`], [`WordcountParams`], [`SieveParams`] or [`MicroParams`], runs the benchmark,
//! checks its result with [`SequenceCheck`], [`verify_ring`],
//! [`WordcountParams::verify`] or [`SieveParams::measured`], and returns a [`Measurement`]. The command line
//! turns measurements into `ns_per_op` figures (wall milliseconds for the word
//! count and the sieve).
//!
//! # What `wall` covers
//!
//! For pipe and ring, `wall` runs from just before the first task or thread of the
//! network is created until every one of them has finished and the result is
//! verified. Building a runtime (a tokio runtime, rill's workers) is done before the
//! clock starts; creating the network's tasks is inside it, since creating a task is
//! part of what a task runtime offers. For the micro rows, each row says what it
//! times.
//!
//! For the word count, `wall` is the same span up to the moment the merged
//! counts are in hand; their check against the sequential count comes after.
//! The text is made or read before any run, and every network reads it from
//! memory. The `sequential` engine times its counting loop alone.
//!
//! For the sieve, `wall` runs from just before the generator, the first
//! filter and the sink are created until every task (the filters spawned
//! during the run among them) has ended; the primes are checked after.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use clap::builder::RangedU64ValueParser;
use clap::{value_parser, Args, ValueEnum};
use rill::MonitorFlags;
use serde::Serialize;

use crate::kernels::sieve;
use crate::kernels::wordcount::{self, Corpus, Counts};
use crate::mapping::{AutoFigures, MappingChoice, MAX_PILOT_DIVISOR, PILOT_DIVISOR, PILOT_MONITOR};

static ALLOCATOR: OnceLock<&'static str> = OnceLock::new();

/// Records the name of the global allocator the program runs with, for the
/// reports (`rill-bench` sets it in `main`).
pub fn set_allocator(name: &'static str) {
    let _ = ALLOCATOR.set(name);
}

/// The global allocator's name as set by [`set_allocator`]; `system` when
/// nothing set it.
pub fn allocator() -> &'static str {
    ALLOCATOR.get().copied().unwrap_or("system")
}

/// Default bound of every channel or stream (messages it holds before its writer
/// blocks).
pub const DEFAULT_CAPACITY: usize = 16;

/// Default pipe depth (stages, source and sink included), as in LPEL's test.
pub const DEFAULT_DEPTH: usize = 100;

/// Default number of messages the pipe's source writes.
pub const DEFAULT_MESSAGES: u64 = 100_000;

/// Default ring size (tasks).
pub const DEFAULT_RING_SIZE: usize = 100;

/// Default number of hops the ring's token makes: about 0.5 to 1 s for the
/// threads peer on a 2-core machine (a hop there wakes a sleeping thread).
pub const DEFAULT_HOPS: u64 = 50_000;

/// Channel capacity used by the micro rows that move messages (`handoff`,
/// `cross_worker_roundtrip`), the same for every engine.
pub const MICRO_CAPACITY: usize = DEFAULT_CAPACITY;

/// How long `idle_cpu` lets a runtime settle before it starts measuring.
pub const IDLE_SETTLE: Duration = Duration::from_millis(10);

/// How long `idle_cpu` measures the CPU time an idle runtime burns.
pub const IDLE_WINDOW: Duration = Duration::from_millis(50);

/// The most busy work `--work` and `--slow` give a relay per message: 1 ms.
pub const MAX_WORK_NS: u64 = 1_000_000;

/// Steps of [`busy_work`] timed by each of the calibration's rounds.
const CALIBRATION_STEPS: u64 = 1 << 18;

/// Rounds of the calibration; the fastest counts.
const CALIBRATION_ROUNDS: u32 = 5;

/// The planted work of the pipe's relays: `steps` steps of a fixed
/// arithmetic loop (xorshift64, each step depending on the one before, so
/// it can neither be skipped nor vectorised). Returns the final state so
/// that the loop is not optimised away.
#[inline(never)]
pub fn busy_work(steps: u64) -> u64 {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// Steps of [`busy_work`] per nanosecond on this machine, calibrated once
/// per process (the first call takes about a millisecond, a few in a debug
/// build): the fastest of `CALIBRATION_ROUNDS` timings of 2^18 steps, so
/// a round the OS interrupted does not count.
pub fn work_steps_per_ns() -> f64 {
    static CAL: OnceLock<f64> = OnceLock::new();
    *CAL.get_or_init(|| {
        busy_work(CALIBRATION_STEPS / 8); // warm up
        let best = (0..CALIBRATION_ROUNDS)
            .map(|_| {
                let t0 = Instant::now();
                busy_work(CALIBRATION_STEPS);
                t0.elapsed().as_nanos().max(1) as f64
            })
            .fold(f64::INFINITY, f64::min);
        CALIBRATION_STEPS as f64 / best
    })
}

/// The [`busy_work`] steps that take `ns` nanoseconds at the calibrated
/// speed (0 for 0 ns, without calibrating).
pub fn work_steps(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        ((ns as f64 * work_steps_per_ns()).round() as u64).max(1)
    }
}

/// The network mapping `--mapping` asks for on the pipe or the ring, checked:
/// `rr`, `parts`, `steal` or a FILE whose workers exist (`manual` and
/// `auto` belong to the applications).
fn check_net_mapping(
    bench: &str,
    mapping: Option<&MappingChoice>,
    workers: usize,
) -> Result<(), ParamError> {
    match mapping {
        None
        | Some(
            MappingChoice::Adaptive
            | MappingChoice::Rr
            | MappingChoice::Parts
            | MappingChoice::Steal
            | MappingChoice::Profile(_),
        ) => Ok(()),
        Some(MappingChoice::Manual) => Err(ParamError(format!(
            "--mapping manual: the {bench} has no table of its own (its hand-made \
             placements are --placement const|rr|parts); use rr, parts, steal or a FILE"
        ))),
        Some(MappingChoice::Auto) => Err(ParamError(format!(
            "--mapping auto plans from a pilot run of an application (des, mc, rt, ant, \
             wordcount), not the {bench}; plan a file with `rill-mon map` and pass it"
        ))),
        Some(MappingChoice::File(f)) => {
            let table = rill::ManualTable::load(f).map_err(|e| ParamError(e.to_string()))?;
            table.validate(workers).map_err(|e| {
                ParamError(format!(
                    "mapping file {}: {e} (--workers {workers})",
                    f.display()
                ))
            })
        }
    }
}

/// Where the stages of a pipe go, for engines that map tasks to workers.
///
/// With `W` workers and `D` stages numbered 0 (the source) to `D-1` (the sink):
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Every stage on worker 0: all hand-offs stay on one worker.
    #[value(help = "every stage on worker 0")]
    Const,
    /// Stage `i` on worker `i mod W`: every hand-off crosses workers.
    #[default]
    #[value(help = "stage i on worker i mod W: every hand-off crosses workers")]
    Rr,
    /// The stages cut into `W` contiguous blocks of (nearly) equal size, block `k`
    /// on worker `k`: only the `W-1` block boundaries cross workers.
    #[value(help = "W contiguous blocks of stages, block k on worker k")]
    Parts,
}

impl Placement {
    /// The placement's name as the command line and the JSON output spell it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Const => "const",
            Placement::Rr => "rr",
            Placement::Parts => "parts",
        }
    }

    /// The worker (0-based) that stage `stage` of a line of `depth` stages goes to
    /// when there are `workers` workers: how rill places the ring's tasks. (rill's
    /// pipe keeps LPEL's placement instead: see [`crate::nets::pipe`].)
    ///
    /// `workers` and `depth` must be at least 1 and `stage < depth`.
    pub fn worker_of(self, stage: usize, depth: usize, workers: usize) -> usize {
        debug_assert!(workers >= 1 && depth >= 1 && stage < depth);
        match self {
            Placement::Const => 0,
            Placement::Rr => stage % workers,
            // Block k holds the stages in [k*depth/W, (k+1)*depth/W).
            Placement::Parts => (stage * workers) / depth,
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A micro-benchmark row: one runtime primitive timed in isolation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MicroRow {
    /// One task yields to the scheduler repeatedly; ns per yield. Runs on the
    /// given number of workers.
    #[value(help = "one task yields repeatedly; ns per yield (on --workers workers)")]
    Yield,
    /// Spawn an empty task, let it run and end, and wait for it; ns per task.
    /// Runs on the given number of workers.
    #[value(help = "spawn an empty task and wait for its end; ns per task (on --workers workers)")]
    Spawn,
    /// One task sends messages to another on the same worker through a channel of
    /// [`MICRO_CAPACITY`]; ns per message. Always 1 worker.
    #[value(
        help = "messages between two tasks on one worker, channel capacity 16; ns per message (1 worker)"
    )]
    Handoff,
    /// Ping-pong between two tasks on two workers; ns per round trip (two
    /// messages). Always 2 workers.
    #[value(help = "ping-pong between tasks on two workers; ns per round trip (2 workers)")]
    #[value(name = "cross_worker_roundtrip", alias = "cross-worker-roundtrip")]
    CrossWorkerRoundtrip,
    /// The share of one core that an idle runtime with 1 worker burns, measured
    /// with process CPU time over [`IDLE_WINDOW`] after [`IDLE_SETTLE`] with
    /// nothing to do. Reported in the field `cpu_share` (0.0 to 1.0 per core);
    /// `ns_per_op` is null since there are no operations. Always 1 worker.
    #[value(
        help = "share of one core an idle 1-worker runtime burns over 50 ms after 10 ms idle (field cpu_share; ns_per_op is null)"
    )]
    #[value(name = "idle_cpu", alias = "idle-cpu")]
    IdleCpu,
}

impl MicroRow {
    /// Every row, in the order the command line runs them.
    pub const ALL: [MicroRow; 5] = [
        MicroRow::Yield,
        MicroRow::Spawn,
        MicroRow::Handoff,
        MicroRow::CrossWorkerRoundtrip,
        MicroRow::IdleCpu,
    ];

    /// The row's name as the command line and the JSON output spell it.
    pub fn name(self) -> &'static str {
        match self {
            MicroRow::Yield => "yield",
            MicroRow::Spawn => "spawn",
            MicroRow::Handoff => "handoff",
            MicroRow::CrossWorkerRoundtrip => "cross_worker_roundtrip",
            MicroRow::IdleCpu => "idle_cpu",
        }
    }

    /// The worker count the row always uses, or `None` when it runs on the
    /// worker count it is given.
    pub fn fixed_workers(self) -> Option<usize> {
        match self {
            MicroRow::Yield | MicroRow::Spawn => None,
            MicroRow::Handoff | MicroRow::IdleCpu => Some(1),
            MicroRow::CrossWorkerRoundtrip => Some(2),
        }
    }

    /// The worker count the row runs on when `workers` are asked for.
    pub fn workers(self, workers: usize) -> usize {
        self.fixed_workers().unwrap_or(workers)
    }
}

impl fmt::Display for MicroRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The cores this process may run on: the default worker count.
pub fn available_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// clap's parser of a whole number of at least `min`, for a `usize` argument.
pub(crate) fn usize_from(min: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(min..)
}

/// What every benchmark takes besides its own parameters, on its command
/// line as on every other's: the workers, and rill's monitoring and where
/// its logs go.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct BenchOpts {
    /// Worker threads for engines that have workers (rill, tokio) [default: the
    /// number of available cores].
    #[arg(long, value_name = "W", value_parser = usize_from(1),
          default_value_t = available_cores(), hide_default_value = true)]
    pub workers: usize,

    /// Monitoring mode passed to rill: off, sample (or sample:HZ: what each
    /// worker does, sampled at HZ, default 1000, with exact counts; the
    /// cheap mode), cpu (or cpu:HZ: sample mode on the workers' CPU time,
    /// cheaper still, at most a sample per kernel tick, and biased toward
    /// waiting where workers wait on each other), full, all (full and a
    /// time per message), or a comma list of map, sched (or task), worker,
    /// stream, message (or msg), msgtime; the peers ignore it.
    #[arg(long, value_name = "MODE")]
    pub monitor: Option<MonitorFlags>,

    /// Directory where rill writes its monitoring logs (micro: one
    /// subdirectory per row); the peers ignore it.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
}

impl Default for BenchOpts {
    /// One worker, unmonitored.
    fn default() -> Self {
        BenchOpts::on(1)
    }
}

impl BenchOpts {
    /// `workers` workers, unmonitored.
    pub fn on(workers: usize) -> Self {
        BenchOpts {
            workers,
            monitor: None,
            logs: None,
        }
    }
}

/// Parameters of one micro row (`rill-bench micro` makes one per row it
/// runs: [`crate::micro::MicroArgs`]).
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct MicroParams {
    /// The row.
    #[arg(skip = MicroRow::Yield)]
    pub row: MicroRow,

    /// Operations each row times, on every engine [default: each engine's
    /// own count for the row, tens of milliseconds of work]; idle_cpu has
    /// none.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// Workers (rows with their own count ignore them: [`MicroRow::workers`]),
    /// monitoring (each row's logs go to `DIR/ROW`).
    #[command(flatten)]
    pub opts: BenchOpts,
}

impl MicroParams {
    /// Row `row` on `workers` workers, unmonitored.
    pub fn new(row: MicroRow, workers: usize) -> Self {
        MicroParams {
            row,
            ops: None,
            opts: BenchOpts::on(workers),
        }
    }

    /// Checks that the row can run with these values.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.opts.workers >= 1, || {
            "workers must be at least 1, got 0".to_string()
        })?;
        check(self.ops != Some(0), || {
            "micro ops must be at least 1, got 0".to_string()
        })
    }
}

/// The parser of `--slow K=NS`: relay K (a whole number) and its
/// nanoseconds of work per message (at most [`MAX_WORK_NS`]); whether
/// relay K exists is checked with the depth ([`PipeParams::validate`]).
fn parse_slow(s: &str) -> Result<(usize, u64), String> {
    let (k, ns) = s.split_once('=').ok_or_else(|| {
        format!("'{s}' is not K=NS (relay K works NS nanoseconds per message, e.g. 3=2000)")
    })?;
    let k: usize = k
        .trim()
        .parse()
        .map_err(|_| format!("'{}' in '{s}' is not a relay number (K=NS)", k.trim()))?;
    let ns: u64 = ns.trim().parse().map_err(|_| {
        format!(
            "'{}' in '{s}' is not a whole number of nanoseconds (K=NS)",
            ns.trim()
        )
    })?;
    if ns > MAX_WORK_NS {
        return Err(format!(
            "{ns} ns in '{s}' is more than the {MAX_WORK_NS} ns (1 ms) a relay may work per message"
        ));
    }
    Ok((k, ns))
}

/// The parser of the pipe's and the ring's `--mapping`: rr, parts, steal or
/// a FILE (manual and auto belong to the applications).
fn parse_net_mapping(s: &str) -> Result<MappingChoice, String> {
    match s.parse::<MappingChoice>()? {
        MappingChoice::Manual => Err(
            "manual: the pipe and the ring have no table of their own (--placement gives their \
             hand-made placements); use rr, parts, steal or a FILE"
                .into(),
        ),
        MappingChoice::Auto => Err(
            "auto plans from a pilot run of an application (des, mc, rt, ant, wordcount); for the \
             pipe or the ring plan a FILE with `rill-mon map DIR --workers W -o FILE` on a \
             monitored run"
                .into(),
        ),
        m => Ok(m),
    }
}

/// The parser of the sieve's `--mapping`: rr, parts, manual, steal or a
/// FILE (auto belongs to the applications and the word count).
fn parse_sieve_mapping(s: &str) -> Result<MappingChoice, String> {
    match s.parse::<MappingChoice>()? {
        MappingChoice::Auto => Err(
            "auto plans from a pilot run of an application (des, mc, rt, ant, wordcount); for the \
             sieve plan a FILE with `rill-mon map DIR --workers W -o FILE` on a monitored run"
                .into(),
        ),
        m => Ok(m),
    }
}

/// auto's pilot monitoring: a mode the planner can read, one that names
/// the tasks (`map`) and times them (`sched` or `sample`).
pub(crate) fn pilot_monitor(s: &str) -> Result<MonitorFlags, String> {
    let f: MonitorFlags = s.parse().map_err(|e| format!("{e}"))?;
    if !f.contains(MonitorFlags::MAPPING)
        || !f.intersects(MonitorFlags::SCHEDULER | MonitorFlags::SAMPLE)
    {
        return Err(format!(
            "the pilot's logs must name the tasks (map) and time them (sched or sample) for the plan; '{s}' does not: try map,worker,task,stream or sample:10000"
        ));
    }
    Ok(f)
}

/// A parameter value that no benchmark can run with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError(pub String);

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<(), ParamError> {
    if ok {
        Ok(())
    } else {
        Err(ParamError(msg()))
    }
}

/// Parameters of the pipe benchmark (`rill-bench pipe`): a source, `depth - 2`
/// relays and a sink in a line, connected by bounded channels; the source
/// writes `messages` messages `0..messages`, the sink checks it received
/// exactly those, in order.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct PipeParams {
    /// Stages in the pipe, source and sink included (at least 2).
    #[arg(long, default_value_t = DEFAULT_DEPTH, value_name = "D",
          value_parser = usize_from(2))]
    pub depth: usize,

    /// Messages the source writes (at least 1).
    #[arg(long, default_value_t = DEFAULT_MESSAGES, value_name = "M",
          value_parser = value_parser!(u64).range(1..))]
    pub messages: u64,

    /// Where stages go on the workers (rill's tasks pipe/source,
    /// pipe/relay/K, pipe/sink, each placed with spawn_on): the source on
    /// worker 0 and the sink on worker 1 (0 with one worker), the relays as
    /// below. --mapping, when given, wins over it. Only rill applies it;
    /// the peers record it.
    #[arg(long, value_enum, default_value_t = Placement::Rr)]
    pub placement: Placement,

    /// rill's mapping policy instead of --placement (it wins when both are
    /// given): rr (the runtime's round-robin in creation order: source,
    /// relays, sink), parts (that order cut into W contiguous blocks), steal
    /// (round-robin, then work stealing), or a FILE of `"name" = worker`
    /// lines (as `rill-mon map` writes) read with ManualTable::load; tasks
    /// no line matches go round-robin. The tasks are then spawned without a
    /// worker, so the mapping alone places them. The peers ignore it.
    #[arg(long, value_name = "adaptive|rr|parts|steal|profile:PATH|FILE",
          value_parser = parse_net_mapping)]
    pub mapping: Option<MappingChoice>,

    /// Busy work every relay does per message before passing it on, in
    /// nanoseconds (0 to 1000000): a fixed arithmetic loop (xorshift steps,
    /// each depending on the last) whose steps per nanosecond are calibrated
    /// once per process (the fastest of 5 timings of 2^18 steps), so it is
    /// CPU work, not a wait on the clock: a relay whose thread the OS
    /// deschedules still does all of it. Every engine does the same steps,
    /// so the rows stay comparable.
    #[arg(long = "work", value_name = "NS", default_value_t = 0,
          value_parser = value_parser!(u64).range(0..=MAX_WORK_NS))]
    pub work_ns: u64,

    /// Relay K (the task pipe/relay/K, K from 0 to DEPTH-3) does NS
    /// nanoseconds of work per message instead of --work: a planted
    /// bottleneck. Repeat the flag for several relays, each K once.
    #[arg(long, value_name = "K=NS", value_parser = parse_slow)]
    pub slow: Vec<(usize, u64)>,

    /// Bound of each channel, in messages (at least 1).
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "C",
          value_parser = usize_from(1))]
    pub capacity: usize,

    /// Workers, monitoring.
    #[command(flatten)]
    pub opts: BenchOpts,
}

impl Default for PipeParams {
    fn default() -> Self {
        PipeParams {
            depth: DEFAULT_DEPTH,
            messages: DEFAULT_MESSAGES,
            capacity: DEFAULT_CAPACITY,
            placement: Placement::default(),
            mapping: None,
            work_ns: 0,
            slow: Vec::new(),
            opts: BenchOpts::default(),
        }
    }
}

impl PipeParams {
    /// Checks that the benchmark can run with these values.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.depth >= 2, || {
            format!(
                "pipe depth must be at least 2 (a source and a sink), got {}",
                self.depth
            )
        })?;
        check(self.messages >= 1, || {
            "pipe messages must be at least 1, got 0".to_string()
        })?;
        check(self.capacity >= 1, || {
            "channel capacity must be at least 1, got 0".to_string()
        })?;
        check(self.opts.workers >= 1, || {
            "workers must be at least 1, got 0".to_string()
        })?;
        check(
            self.messages.checked_mul(self.depth as u64 - 1).is_some(),
            || {
                format!(
                    "pipe of depth {} with {} messages makes more channel hops than fit in a u64",
                    self.depth, self.messages
                )
            },
        )?;
        check(self.work_ns <= MAX_WORK_NS, || {
            format!(
                "--work {} ns is more than the {MAX_WORK_NS} ns (1 ms) a relay may work per message",
                self.work_ns
            )
        })?;
        let relays = self.relays();
        for (i, &(k, ns)) in self.slow.iter().enumerate() {
            check(k < relays, || {
                match relays {
                0 => format!(
                    "--slow {k}={ns}: a pipe of depth {} has no relays (depth 3 has one)",
                    self.depth
                ),
                _ => format!(
                    "--slow {k}={ns}: relay {k} does not exist; a pipe of depth {} has relays 0 to {} (pipe/relay/0 to pipe/relay/{})",
                    self.depth,
                    relays - 1,
                    relays - 1
                ),
            }
            })?;
            check(ns <= MAX_WORK_NS, || {
                format!(
                    "--slow {k}={ns}: {ns} ns is more than the {MAX_WORK_NS} ns (1 ms) a relay may work per message"
                )
            })?;
            check(!self.slow[..i].iter().any(|&(j, _)| j == k), || {
                format!("--slow names relay {k} twice")
            })?;
        }
        check_net_mapping("pipe", self.mapping.as_ref(), self.opts.workers)
    }

    /// Relays in the pipe: `depth - 2`.
    pub fn relays(&self) -> usize {
        self.depth.saturating_sub(2)
    }

    /// Nanoseconds of busy work relay `k` does per message: its `--slow`
    /// value, or `--work`.
    pub fn work_of(&self, k: usize) -> u64 {
        self.slow
            .iter()
            .find(|&&(j, _)| j == k)
            .map_or(self.work_ns, |&(_, ns)| ns)
    }

    /// Whether any relay works ([`work_of`](Self::work_of) is not 0 for all).
    pub fn has_work(&self) -> bool {
        self.work_ns > 0 || self.slow.iter().any(|&(_, ns)| ns > 0)
    }

    /// [`busy_work`] steps per message of each relay, in relay order
    /// (calibrates on first use when any relay works, so call it before the
    /// clock starts).
    pub fn relay_steps(&self) -> Vec<u64> {
        (0..self.relays())
            .map(|k| work_steps(self.work_of(k)))
            .collect()
    }

    /// Messages times channels: the operations `ns_per_op` divides the wall time
    /// by (`messages × (depth - 1)`). Valid parameters never overflow.
    pub fn channel_hops(&self) -> u64 {
        self.messages
            .saturating_mul((self.depth as u64).saturating_sub(1))
    }
}

/// Parameters of the ring benchmark (`rill-bench ring`): `size` tasks in a
/// ring of bounded channels, one token passed around until it has made
/// `hops` hops in total.
///
/// Protocol (every engine): the token is a `u64` counting the hops made so far.
/// Task `i` reads from channel `i` and writes to channel `(i + 1) mod size`. The
/// benchmark puts the token `0` into channel 0. A task that reads `t < hops`
/// writes `t + 1`; the task that reads `t == hops` ends, and its end closes the
/// ring (each following task sees its input end and ends in turn). Each task counts
/// the tokens it read; [`verify_ring`] checks the final token and the counts.
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct RingParams {
    /// Tasks in the ring (at least 2).
    #[arg(long, default_value_t = DEFAULT_RING_SIZE, value_name = "S",
          value_parser = usize_from(2))]
    pub size: usize,

    /// Hops the token makes in total (at least 1).
    #[arg(long, default_value_t = DEFAULT_HOPS, value_name = "H",
          value_parser = value_parser!(u64).range(1..u64::MAX))]
    pub hops: u64,

    /// Bound of each channel, in messages (at least 1).
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "C",
          value_parser = usize_from(1))]
    pub capacity: usize,

    /// Where rill puts the ring's tasks (ring/0 to ring/S-1, each placed
    /// with spawn_on): parts (contiguous arcs, one per worker: W of every S
    /// hops cross workers), rr (neighbours on different workers: every hop
    /// crosses) or const (all on worker 0). --mapping, when given, wins over
    /// it. The peers place their own tasks.
    #[arg(long, value_enum, default_value_t = Placement::Parts)]
    pub placement: Placement,

    /// rill's mapping policy instead of --placement (it wins when both are
    /// given): rr (the runtime's round-robin in creation order ring/0,
    /// ring/1, ...), parts (that order cut into W contiguous arcs), steal
    /// (round-robin, then work stealing), or a FILE of `"name" = worker`
    /// lines (as `rill-mon map` writes); tasks no line matches go
    /// round-robin. The peers ignore it.
    #[arg(long, value_name = "adaptive|rr|parts|steal|profile:PATH|FILE",
          value_parser = parse_net_mapping)]
    pub mapping: Option<MappingChoice>,

    /// Workers, monitoring.
    #[command(flatten)]
    pub opts: BenchOpts,
}

impl Default for RingParams {
    fn default() -> Self {
        RingParams {
            size: DEFAULT_RING_SIZE,
            hops: DEFAULT_HOPS,
            capacity: DEFAULT_CAPACITY,
            placement: Placement::Parts,
            mapping: None,
            opts: BenchOpts::default(),
        }
    }
}

impl RingParams {
    /// Checks that the benchmark can run with these values.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.size >= 2, || {
            format!("ring size must be at least 2 tasks, got {}", self.size)
        })?;
        check(self.hops >= 1, || {
            "ring hops must be at least 1, got 0".to_string()
        })?;
        check(self.hops < u64::MAX, || {
            "ring hops must be less than u64::MAX".to_string()
        })?;
        check(self.capacity >= 1, || {
            "channel capacity must be at least 1, got 0".to_string()
        })?;
        check(self.opts.workers >= 1, || {
            "workers must be at least 1, got 0".to_string()
        })?;
        check_net_mapping("ring", self.mapping.as_ref(), self.opts.workers)
    }
}

/// Default words per message from the word count's splitter to a counter.
pub const DEFAULT_WC_BATCH: usize = 1024;

/// Default number of word count counters.
pub const DEFAULT_WC_COUNTERS: usize = 4;

/// Default size of the text chunks the word count's source sends, in bytes.
pub const DEFAULT_WC_CHUNK: usize = 64 * 1024;

/// Parameters of the word count (`rill-bench wordcount`, whose text comes
/// from [`crate::wordcount_bench::WordcountArgs`]): a source sends the text
/// in chunks of at least `chunk` bytes cut after whitespace, a splitter cuts
/// them into words and sends batches of `batch` words (`Vec<String>`) to
/// `counters` counters, each word to the counter its hash names, and a
/// merger adds up the counters' final counts. Every run checks the merged
/// counts against the sequential count of the same text.
#[derive(Clone, Debug, PartialEq, Args)]
pub struct WordcountParams {
    /// The text.
    #[arg(skip)]
    pub corpus: Corpus,

    /// Words per message from the splitter to a counter (1: a message per
    /// word).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WC_BATCH,
          value_parser = usize_from(1))]
    pub batch: usize,

    /// Counters; each word goes to the counter its hash names.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_WC_COUNTERS,
          value_parser = usize_from(1))]
    pub counters: usize,

    /// How the splitter sends words: owned (a String per word in a
    /// `Vec<String>`, as a program written the plain way does: allocated by
    /// the splitter, freed by the counter) or slices (byte ranges into the
    /// source's chunk, shared as an `Arc<str>`: nothing allocated or freed per
    /// word). Every engine runs the same format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "owned")]
    pub words: wordcount::WordsAs,

    /// Least bytes of text per message from the source to the splitter (each
    /// chunk ends after whitespace, so no word is cut).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_WC_CHUNK,
          value_parser = usize_from(1))]
    pub chunk: usize,

    /// Bound of each channel, in messages (at least 1).
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "C",
          value_parser = usize_from(1))]
    pub capacity: usize,

    /// Where rill puts the tasks (wc/source, wc/split, wc/count/K,
    /// wc/merge): rr (round-robin in that order), manual (the splitter,
    /// the heaviest stage, on the last worker, with counter 1 on 2 workers;
    /// source, merger and the other counters before it), parts (that order
    /// cut into W blocks), steal (round-robin, then work stealing), auto (a
    /// pilot run on the first 1/N of the text (--pilot N, default 100), at
    /// least 64 KiB, under rr
    /// with monitoring --pilot-monitor into LOGS/pilot, or
    /// target/rill-auto/wordcount/pilot without --logs; a mapping
    /// planned from its logs written to auto.map beside them; then the run
    /// under it; JSON: pilot_ms, total_ms, mapping_file), or a FILE of
    /// `prefix = worker` lines. The peers place their own.
    #[arg(long, value_name = "MAPPING", default_value = "adaptive")]
    pub mapping: MappingChoice,

    /// auto's pilot counts about 1/N of the text (at least 64 KiB). Only
    /// --mapping auto uses it.
    #[arg(long, value_name = "N", default_value_t = PILOT_DIVISOR,
          value_parser = value_parser!(u64).range(1..=MAX_PILOT_DIVISOR))]
    pub pilot: u64,

    /// What auto's pilot records: count mode by default
    /// (map,worker,task,stream: exact busy time per task, no message
    /// order), or any --monitor MODE that names and times the tasks (map
    /// with sched, or sample:HZ). Only --mapping auto uses it.
    #[arg(long, value_name = "MODE", default_value_t = PILOT_MONITOR,
          value_parser = pilot_monitor)]
    pub pilot_monitor: MonitorFlags,

    /// Workers, monitoring.
    #[command(flatten)]
    pub opts: BenchOpts,
}

impl WordcountParams {
    /// The word count of `corpus` on `workers` workers, everything else
    /// default.
    pub fn new(corpus: Corpus, workers: usize) -> Self {
        WordcountParams {
            corpus,
            batch: DEFAULT_WC_BATCH,
            counters: DEFAULT_WC_COUNTERS,
            chunk: DEFAULT_WC_CHUNK,
            capacity: DEFAULT_CAPACITY,
            mapping: MappingChoice::Adaptive,
            words: wordcount::WordsAs::Owned,
            pilot: PILOT_DIVISOR,
            pilot_monitor: PILOT_MONITOR,
            opts: BenchOpts::on(workers),
        }
    }

    /// Checks that the benchmark can run with these values.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.batch >= 1, || {
            "word count batch must be at least 1 word, got 0".to_string()
        })?;
        check(self.counters >= 1, || {
            "word count counters must be at least 1, got 0".to_string()
        })?;
        check(self.chunk >= 1, || {
            "word count chunk must be at least 1 byte, got 0".to_string()
        })?;
        check(self.capacity >= 1, || {
            "channel capacity must be at least 1, got 0".to_string()
        })?;
        check(self.pilot >= 1, || {
            "--pilot must be at least 1, got 0".into()
        })?;
        check(self.opts.workers >= 1, || {
            "workers must be at least 1, got 0".to_string()
        })
    }

    /// Checks a run's merged counts against the sequential count of the text
    /// (computed on the first call, outside every timed part).
    pub fn verify(&self, got: &Counts) -> Result<(), VerifyError> {
        wordcount::compare(got, self.corpus.reference())
            .map_err(|e| VerifyError(format!("word count: {e}")))
    }

    /// A measurement of a run that took `wall` and counted `got`, verified:
    /// `ops` is the words of the text, and the extra figures are `words`,
    /// `distinct` and `mb_per_s`.
    pub fn measured(&self, wall: Duration, got: &Counts) -> Result<Measurement, VerifyError> {
        self.verify(got)?;
        let words = wordcount::total_words(got);
        Ok(Measurement::new(wall, words).with(|f| {
            f.words = Some(words);
            f.words_as = Some(self.words.name());
            f.distinct = Some(got.len() as u64);
            f.mb_per_s = Some(self.corpus.len() as f64 / 1e6 / wall.as_secs_f64().max(1e-9));
        }))
    }
}

/// Parameters of the prime sieve (`rill-bench sieve`): a generator writes 2,
/// 3, 4, ... up to [`sieve::limit`] (a bound of the last prime) into a chain
/// of filters; filter `k` takes the first number that reaches it as its
/// prime (the `k+1`-th), reports it to a sink, and from then on drops the
/// multiples of its prime and passes the rest on. While a filter is the last
/// of the chain, the first number it passes spawns the next filter (from
/// inside the running task), so the chain grows as the primes are found, up
/// to `primes` filters; the last reads the rest of its input without passing
/// anything on. When the generator ends, the streams end down the chain and
/// every task ends. Every run checks the sink's primes against
/// [`sieve::first_primes`] and the numbers its tasks read against
/// [`sieve::messages`].
#[derive(Clone, Debug, PartialEq, Eq, Args)]
pub struct SieveParams {
    /// Primes to find: the filters the chain grows to (1 to 1000000).
    #[arg(long, value_name = "N", default_value_t = sieve::DEFAULT_PRIMES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=sieve::MAX_PRIMES as u64))]
    pub primes: usize,

    /// Bound of each channel, in messages (at least 1).
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "C",
          value_parser = usize_from(1))]
    pub capacity: usize,

    /// Where rill puts the tasks (sieve/sink, sieve/gen and
    /// sieve/filter/00000 made before the run in that order, then
    /// sieve/filter/00001, 00002, ... spawned by the filters as the chain
    /// grows): adaptive (the runtime's default: each filter starts beside
    /// the one that spawned it, an idle worker takes runs of new filters),
    /// profile:PATH (placed from PATH, written by the first run), rr (round-robin in that order: on two workers every link of
    /// the chain crosses workers), parts (the chain, generator first and
    /// sink last, cut into W blocks of as many filters, with the runtime's
    /// partitioned mapping over name prefixes), manual (the sieve's own
    /// table: the chain cut into W blocks of about equal work, counted by a
    /// sequential sieve: the early filters read most numbers, so the first
    /// block is short), steal (round-robin, then work stealing), or a FILE
    /// of `"name" = worker` lines (as `rill-mon map` writes); tasks no line
    /// matches go round-robin. The peers place their own.
    #[arg(long, value_name = "adaptive|rr|parts|manual|steal|profile:PATH|FILE",
          default_value = "adaptive", value_parser = parse_sieve_mapping)]
    pub mapping: MappingChoice,

    /// Workers, monitoring.
    #[command(flatten)]
    pub opts: BenchOpts,
}

impl Default for SieveParams {
    fn default() -> Self {
        SieveParams {
            primes: sieve::DEFAULT_PRIMES,
            capacity: DEFAULT_CAPACITY,
            mapping: MappingChoice::Adaptive,
            opts: BenchOpts::default(),
        }
    }
}

impl SieveParams {
    /// Checks that the benchmark can run with these values.
    pub fn validate(&self) -> Result<(), ParamError> {
        check(self.primes >= 1, || {
            "sieve primes must be at least 1, got 0".to_string()
        })?;
        check(self.primes <= sieve::MAX_PRIMES, || {
            format!(
                "sieve primes must be at most {}, got {}",
                sieve::MAX_PRIMES,
                self.primes
            )
        })?;
        check(self.capacity >= 1, || {
            "channel capacity must be at least 1, got 0".to_string()
        })?;
        check(self.opts.workers >= 1, || {
            "workers must be at least 1, got 0".to_string()
        })?;
        match &self.mapping {
            MappingChoice::Auto => Err(ParamError(
                "--mapping auto plans from a pilot run of an application (des, mc, rt, ant, \
                 wordcount), not the sieve; plan a file with `rill-mon map` and pass it"
                    .into(),
            )),
            MappingChoice::Manual => Ok(()),
            m => check_net_mapping("sieve", Some(m), self.opts.workers),
        }
    }

    /// A measurement of a run that took `wall`, found `got` and whose tasks
    /// read `messages` numbers in all, checked against the first
    /// [`primes`](Self::primes) primes and the numbers the sequential count
    /// says the tasks read (both computed here, after the run): `ops` is the
    /// primes, and the extra figures are `largest` (the last prime),
    /// `messages` and `filters`.
    pub fn measured(
        &self,
        wall: Duration,
        got: &[u64],
        messages: u64,
    ) -> Result<Measurement, VerifyError> {
        let want = sieve::first_primes(self.primes);
        sieve::compare(got, &want).map_err(|e| VerifyError(format!("sieve: {e}")))?;
        let reads = sieve::messages(self.primes);
        if messages != reads {
            return Err(VerifyError(format!(
                "sieve: the tasks read {messages} numbers, the sequential count says {reads}"
            )));
        }
        Ok(Measurement::new(wall, got.len() as u64).with(|f| {
            f.largest = Some(got.last().copied().unwrap_or(0));
            f.messages = Some(messages);
            f.filters = Some(got.len() as u64);
        }))
    }
}

/// What one run of a benchmark on one engine measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measurement {
    /// Wall time of the timed part (see the module doc).
    pub wall: Duration,
    /// Operations done in that time (channel hops, ring hops, yields...); 0 when
    /// the benchmark has no operations (`idle_cpu`).
    pub ops: u64,
    /// The engine's and the benchmark's own figures, in the JSON line as
    /// they are (for example `cpu_share` for `idle_cpu`, `threads` for the
    /// threads engine).
    pub figures: Figures,
}

/// The figures a run reports beside its time, each where it applies (an
/// absent one is left out of the JSON line).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// rill: the monitoring mode of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// rill: where the tasks went (`--mapping`'s name; `auto` for a planned run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// rill: task dispatches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatches: Option<u64>,
    /// rill: times a worker parked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parks: Option<u64>,
    /// rill: time the workers spent idle, summed, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<f64>,
    /// rill: messages whose writer and reader ran on different workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crossed: Option<u64>,
    /// rill: unstarted tasks a worker took from another's queue or block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steals: Option<u64>,
    /// rill, monitored: bytes of monitoring log written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    /// rill, monitored: the directory of the logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_dir: Option<String>,
    /// OS threads: the threads the run made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    /// tokio, and rill's sieve: the tasks the run made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<u64>,
    /// `idle_cpu`: CPU time over wall time (share of one core).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// `idle_cpu`: the CPU time in microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_us: Option<u64>,
    /// Word count: the words of the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<u64>,
    /// Word count: how the splitter hands words to the counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words_as: Option<&'static str>,
    /// Word count: the distinct words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct: Option<u64>,
    /// Word count: megabytes of text per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    /// Sieve: the last prime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest: Option<u64>,
    /// Sieve: the numbers the tasks read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// Sieve: the filters of the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<u64>,
    /// `--mapping auto`: the pilot and the plan.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoFigures>,
}

impl Measurement {
    /// A measurement of `ops` operations in `wall`, with no figures.
    pub fn new(wall: Duration, ops: u64) -> Self {
        Measurement {
            wall,
            ops,
            figures: Figures::default(),
        }
    }

    /// Sets figures.
    pub fn with(mut self, set: impl FnOnce(&mut Figures)) -> Self {
        set(&mut self.figures);
        self
    }

    /// Wall time per operation in nanoseconds, or `None` without operations.
    pub fn ns_per_op(&self) -> Option<f64> {
        (self.ops > 0).then(|| self.wall.as_nanos() as f64 / self.ops as f64)
    }

    /// The `cpu_share` figure, if the measurement has one.
    pub fn cpu_share(&self) -> Option<f64> {
        self.figures.cpu_share
    }
}

/// A benchmark's parameters as a run's record has them, each where it
/// applies (an absent one is left out of the JSON line).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Params {
    /// Micro: the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<&'static str>,
    /// Workers (for a micro row, those it runs on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Pipe, ring: the hand-made placement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<&'static str>,
    /// `--mapping`, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// Pipe: stages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Pipe: messages the source writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// Ring: tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    /// Ring: hops of the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<u64>,
    /// Word count: `generated` or the input file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Word count: the generated text's seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Word count: bytes of text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    /// Word count: words per message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Word count: counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<usize>,
    /// Word count: least bytes per chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk: Option<usize>,
    /// Sieve: primes to find.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primes: Option<usize>,
    /// Bound of each channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<usize>,
    /// Pipe: busy work per message of every relay, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_ns: Option<u64>,
    /// Pipe: relays with other work: relay index to ns per message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow: Option<BTreeMap<usize, u64>>,
    /// Pipe with work: the calibrated steps of busy work per microsecond.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_steps_per_us: Option<f64>,
    /// `--monitor`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor: Option<String>,
    /// `--logs`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logs: Option<PathBuf>,
}

/// `placement=P`, or `mapping=M` when a mapping is given (for titles).
pub fn placed(placement: Placement, mapping: Option<&MappingChoice>) -> String {
    match mapping {
        Some(m) => format!("mapping={m}"),
        None => format!("placement={placement}"),
    }
}

/// A benchmark result that is not what the benchmark should have produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError(pub String);

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "verification failed: {}", self.0)
    }
}

impl std::error::Error for VerifyError {}

/// Checks, message by message, that a sink receives exactly `0, 1, 2, ...` in
/// order; [`SequenceCheck::finish`] then checks the count.
#[derive(Clone, Debug, Default)]
pub struct SequenceCheck {
    next: u64,
}

impl SequenceCheck {
    /// A check that expects `0` first.
    pub fn new() -> Self {
        SequenceCheck { next: 0 }
    }

    /// Checks the next received message. Returns an error at the first message
    /// out of order; the sink should stop then.
    #[inline]
    pub fn push(&mut self, value: u64) -> Result<(), VerifyError> {
        if value != self.next {
            return Err(self.mismatch(value));
        }
        self.next += 1;
        Ok(())
    }

    #[cold]
    fn mismatch(&self, value: u64) -> VerifyError {
        VerifyError(format!(
            "message {} arrived where message {} was expected",
            value, self.next
        ))
    }

    /// Number of messages accepted so far.
    pub fn received(&self) -> u64 {
        self.next
    }

    /// Checks that exactly `expected` messages arrived.
    pub fn finish(&self, expected: u64) -> Result<(), VerifyError> {
        if self.next == expected {
            Ok(())
        } else {
            Err(VerifyError(format!(
                "received {} messages, expected {}",
                self.next, expected
            )))
        }
    }
}

/// Checks a ring run from what its tasks saw (see [`RingParams`] for the
/// protocol): the final token each task read, if it read it. Exactly one
/// task read the final token, and it is `hops` (the token counts its
/// hops: each task passes on the token it read plus one).
pub fn verify_ring(finals: &[Option<u64>], hops: u64) -> Result<(), VerifyError> {
    let mut seen = finals.iter().flatten();
    match (seen.next(), seen.next()) {
        (None, _) => Err(VerifyError(
            "the ring ended without any task seeing the final token".to_string(),
        )),
        (Some(_), Some(_)) => Err(VerifyError(
            "more than one task saw a final token (a token was duplicated)".to_string(),
        )),
        (Some(&t), None) if t != hops => Err(VerifyError(format!(
            "the token ended after {t} hops, expected {hops}"
        ))),
        (Some(_), None) => Ok(()),
    }
}

/// Checks what the reader of the `handoff` row read: `0..n` in any order
/// adds up to `n (n - 1) / 2` (wrapping); [`SumCheck::push`] costs one add
/// per message, as the row's own loop did.
#[derive(Clone, Copy, Debug, Default)]
pub struct SumCheck {
    sum: u64,
}

impl SumCheck {
    /// Adds a message.
    #[inline(always)]
    pub fn push(&mut self, v: u64) {
        self.sum = self.sum.wrapping_add(v);
    }

    /// Checks that the messages were `0..n`, each once. It takes the check
    /// by value: a check whose address reached the error's formatting
    /// would live in memory, and the reader's loop would store the sum at
    /// every message (one instruction a message of the `handoff` row).
    pub fn finish(self, n: u64) -> Result<(), VerifyError> {
        let Self { sum } = self;
        let want = (u128::from(n) * u128::from(n.saturating_sub(1)) / 2) as u64;
        if sum == want {
            Ok(())
        } else {
            Err(VerifyError(format!(
                "the messages add up to {sum}, 0..{n} to {want}"
            )))
        }
    }
}

/// CPU time (user + system) used so far by the whole process, from
/// `getrusage(RUSAGE_SELF)`.
pub fn process_cpu_time() -> std::io::Result<Duration> {
    // SAFETY: `rusage` is a plain C struct for which all-zero bytes are a valid
    // value; getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// The `idle_cpu` measurement, the same for every engine: call it once the
/// engine's runtime is up with nothing to do. It sleeps [`IDLE_SETTLE`], then
/// measures the process's CPU time over [`IDLE_WINDOW`] of sleep and returns a
/// measurement with `ops = 0` and the extra figure `cpu_share` (CPU time / wall
/// time: the share of one core the idle process used).
///
/// The calling thread sleeps, so what it measures is the runtime's own threads
/// (and anything else the process runs meanwhile).
pub fn measure_idle_cpu() -> anyhow::Result<Measurement> {
    std::thread::sleep(IDLE_SETTLE);
    let cpu0 = process_cpu_time()?;
    let t0 = Instant::now();
    std::thread::sleep(IDLE_WINDOW);
    let cpu1 = process_cpu_time()?;
    let wall = t0.elapsed();
    let cpu = cpu1.saturating_sub(cpu0);
    let share = cpu.as_secs_f64() / wall.as_secs_f64();
    Ok(Measurement::new(wall, 0).with(|f| {
        f.cpu_share = Some(share);
        f.cpu_us = Some(cpu.as_micros() as u64);
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_check_accepts_exact_sequence() {
        let mut c = SequenceCheck::new();
        for v in 0..10 {
            c.push(v).unwrap();
        }
        assert_eq!(c.received(), 10);
        c.finish(10).unwrap();
    }

    #[test]
    fn sequence_check_detects_wrong_count() {
        let mut c = SequenceCheck::new();
        for v in 0..9 {
            c.push(v).unwrap();
        }
        let e = c.finish(10).unwrap_err();
        assert!(
            e.to_string().contains("received 9 messages, expected 10"),
            "{e}"
        );
        c.push(9).unwrap();
        c.push(10).unwrap();
        assert!(c.finish(10).is_err());
    }

    #[test]
    fn sequence_check_detects_reorder_and_loss() {
        let mut c = SequenceCheck::new();
        c.push(0).unwrap();
        let e = c.push(2).unwrap_err();
        assert!(
            e.to_string().contains("message 2 arrived where message 1"),
            "{e}"
        );
        let mut c = SequenceCheck::new();
        assert!(c.push(1).is_err());
    }

    #[test]
    fn ring_verifier() {
        verify_ring(&[None, Some(100)], 100).unwrap();
        assert!(verify_ring(&[None, None], 100).is_err());
        assert!(verify_ring(&[Some(99)], 100).is_err());
        assert!(verify_ring(&[Some(100), Some(100)], 100).is_err());
        let mut s = SumCheck::default();
        (0..10).for_each(|v| s.push(v));
        s.finish(10).unwrap();
        assert!(s.finish(11).is_err());
    }

    #[test]
    fn pipe_validation() {
        let ok = PipeParams::default();
        ok.validate().unwrap();
        assert_eq!(ok.channel_hops(), 100_000 * 99);
        let bad = |f: fn(&mut PipeParams)| {
            let mut p = PipeParams::default();
            f(&mut p);
            p.validate().unwrap_err().to_string()
        };
        assert!(bad(|p| p.depth = 1).contains("depth must be at least 2"));
        assert!(bad(|p| p.depth = 0).contains("depth must be at least 2"));
        assert!(bad(|p| p.messages = 0).contains("messages must be at least 1"));
        assert!(bad(|p| p.capacity = 0).contains("capacity must be at least 1"));
        assert!(bad(|p| p.opts.workers = 0).contains("workers must be at least 1"));
        assert!(bad(|p| p.messages = u64::MAX).contains("u64"));
        let mut p = PipeParams {
            depth: 2,
            messages: 1,
            capacity: 1,
            ..PipeParams::default()
        };
        p.validate().unwrap();
        p.messages = u64::MAX;
        p.validate().unwrap();
    }

    #[test]
    fn pipe_work_validation() {
        let p = PipeParams {
            depth: 6,
            work_ns: 200,
            slow: vec![(3, 2000), (0, 0)],
            ..PipeParams::default()
        };
        p.validate().unwrap();
        assert_eq!(p.relays(), 4);
        assert_eq!(
            (0..4).map(|k| p.work_of(k)).collect::<Vec<_>>(),
            [0, 200, 200, 2000]
        );
        assert!(p.has_work());
        let steps = p.relay_steps();
        assert_eq!(steps[0], 0);
        assert!(steps[3] > steps[1] && steps[1] > 0, "{steps:?}");
        let bad = |f: fn(&mut PipeParams)| {
            let mut q = p.clone();
            f(&mut q);
            q.validate().unwrap_err().to_string()
        };
        assert!(bad(|q| q.slow = vec![(4, 1)]).contains("relays 0 to 3"));
        assert!(bad(|q| q.slow = vec![(1, 5), (1, 6)]).contains("relay 1 twice"));
        assert!(bad(|q| q.slow = vec![(1, MAX_WORK_NS + 1)]).contains("1 ms"));
        assert!(bad(|q| q.work_ns = MAX_WORK_NS + 1).contains("--work"));
        assert!(bad(|q| {
            q.depth = 2;
            q.slow = vec![(0, 1)];
        })
        .contains("no relays"));
        assert!(!PipeParams::default().has_work());
        assert_eq!(work_steps(0), 0);
    }

    #[test]
    fn busy_work_takes_about_its_time() {
        let steps = work_steps(2_000_000);
        // The fastest of ten tries (the machine may be shared): between a
        // fifth and four times the 2 ms asked for.
        let best = (0..10)
            .map(|_| {
                let t0 = Instant::now();
                busy_work(steps);
                t0.elapsed()
            })
            .min()
            .unwrap();
        assert!(
            best >= Duration::from_micros(400) && best <= Duration::from_millis(8),
            "{best:?} for {steps} steps"
        );
    }

    #[test]
    fn net_mappings() {
        let map = crate::mapping::mapping_file("mc");
        for (m, ok) in [
            (MappingChoice::Rr, true),
            (MappingChoice::Parts, true),
            (MappingChoice::Steal, true),
            (MappingChoice::File(map.clone()), true),
            (MappingChoice::Manual, false),
            (MappingChoice::Auto, false),
        ] {
            let p = PipeParams {
                mapping: Some(m.clone()),
                opts: BenchOpts::on(2),
                ..PipeParams::default()
            };
            let r = RingParams {
                mapping: Some(m.clone()),
                opts: BenchOpts::on(2),
                ..RingParams::default()
            };
            assert_eq!(p.validate().is_ok(), ok, "{m}");
            assert_eq!(r.validate().is_ok(), ok, "{m}");
        }
        // A file naming a worker that this run does not have.
        let p = PipeParams {
            mapping: Some(MappingChoice::File(map)),
            opts: BenchOpts::on(1),
            ..PipeParams::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("--workers 1"), "{e}");
    }

    #[test]
    fn ring_validation() {
        RingParams::default().validate().unwrap();
        let bad = |f: fn(&mut RingParams)| {
            let mut p = RingParams::default();
            f(&mut p);
            p.validate().unwrap_err().to_string()
        };
        assert!(bad(|p| p.size = 1).contains("size must be at least 2"));
        assert!(bad(|p| p.hops = 0).contains("hops must be at least 1"));
        assert!(bad(|p| p.hops = u64::MAX).contains("less than"));
        assert!(bad(|p| p.capacity = 0).contains("capacity"));
        assert!(bad(|p| p.opts.workers = 0).contains("workers"));
    }

    #[test]
    fn placements() {
        let map = |pl: Placement, d: usize, w: usize| {
            (0..d).map(|s| pl.worker_of(s, d, w)).collect::<Vec<_>>()
        };
        assert_eq!(map(Placement::Const, 5, 2), vec![0; 5]);
        assert_eq!(map(Placement::Rr, 5, 2), vec![0, 1, 0, 1, 0]);
        assert_eq!(map(Placement::Parts, 6, 3), vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(map(Placement::Parts, 5, 2), vec![0, 0, 0, 1, 1]);
        // More workers than stages: every stage on its own worker.
        assert_eq!(map(Placement::Parts, 3, 8), vec![0, 2, 5]);
        assert_eq!(map(Placement::Parts, 4, 1), vec![0; 4]);
    }

    #[test]
    fn wordcount_validation_and_verification() {
        let corpus = Corpus::of(
            wordcount::TextSource::Generated { bytes: 11, seed: 0 },
            "a b a c a b".into(),
        );
        let p = WordcountParams::new(corpus, 2);
        p.validate().unwrap();
        let bad = |f: fn(&mut WordcountParams)| {
            let mut q = p.clone();
            f(&mut q);
            q.validate().unwrap_err().to_string()
        };
        assert!(bad(|q| q.batch = 0).contains("batch must be at least 1"));
        assert!(bad(|q| q.counters = 0).contains("counters must be at least 1"));
        assert!(bad(|q| q.chunk = 0).contains("chunk must be at least 1"));
        assert!(bad(|q| q.capacity = 0).contains("capacity"));
        assert!(bad(|q| q.opts.workers = 0).contains("workers"));
        let right = wordcount::count_words("c b a b a a");
        let m = p.measured(Duration::from_millis(2), &right).unwrap();
        assert_eq!(m.ops, 6);
        assert_eq!(m.figures.distinct, Some(3));
        let wrong = wordcount::count_words("a b a c b");
        let e = p.measured(Duration::from_millis(2), &wrong).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "verification failed: word count: 1 of 3 distinct words counted wrong (5 words counted, 6 expected): 'a' counted 2 times, expected 3"
            ),
            "{e}"
        );
    }

    #[test]
    fn sieve_validation_and_verification() {
        SieveParams::default().validate().unwrap();
        let bad = |f: fn(&mut SieveParams)| {
            let mut p = SieveParams::default();
            f(&mut p);
            p.validate().unwrap_err().to_string()
        };
        assert!(bad(|p| p.primes = 0).contains("primes must be at least 1"));
        assert!(bad(|p| p.primes = sieve::MAX_PRIMES + 1).contains("at most"));
        assert!(bad(|p| p.capacity = 0).contains("capacity"));
        assert!(bad(|p| p.opts.workers = 0).contains("workers"));
        assert!(bad(|p| p.mapping = MappingChoice::Auto).contains("not the sieve"));
        for m in ["rr", "parts", "manual", "steal"] {
            let p = SieveParams {
                mapping: m.parse().unwrap(),
                opts: BenchOpts::on(2),
                ..SieveParams::default()
            };
            p.validate().unwrap();
        }
        let p = SieveParams {
            primes: 5,
            ..SieveParams::default()
        };
        let m = p
            .measured(Duration::from_millis(2), &[2, 3, 5, 7, 11], 26)
            .unwrap();
        assert_eq!(
            (m.ops, m.figures.largest, m.figures.messages),
            (5, Some(11), Some(26))
        );
        let e = p
            .measured(Duration::from_millis(2), &[2, 3, 5, 7, 11], 30)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("the tasks read 30 numbers, the sequential count says 26"),
            "{e}"
        );
        let e = p
            .measured(Duration::from_millis(2), &[2, 3, 5, 7, 13], 26)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("sieve: prime 5 (counting from 1) is 13, expected 11"),
            "{e}"
        );
        assert!(p.measured(Duration::ZERO, &[2, 3, 5, 7], 26).is_err());
    }

    #[test]
    fn measurement_figures() {
        let m = Measurement::new(Duration::from_micros(10), 100);
        assert_eq!(m.ns_per_op(), Some(100.0));
        assert_eq!(m.cpu_share(), None);
        let idle =
            Measurement::new(Duration::from_millis(50), 0).with(|f| f.cpu_share = Some(0.25));
        assert_eq!(idle.ns_per_op(), None);
        assert_eq!(idle.cpu_share(), Some(0.25));
    }

    #[test]
    fn cpu_time_advances_with_work() {
        let t0 = process_cpu_time().unwrap();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let t1 = process_cpu_time().unwrap();
        assert!(t1 > t0, "{t0:?} -> {t1:?}");
    }
}
