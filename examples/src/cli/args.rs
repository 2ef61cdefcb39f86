//! The `rill-bench` command line's arguments (clap derive), and their
//! conversion into checked benchmark parameters ([`Command::jobs`],
//! [`AppCommand::app`]).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, RangedU64ValueParser, TypedValueParser};
use clap::{value_parser, Args, Parser, Subcommand};
use rill::MonitorFlags;

use crate::ab;
use crate::apps::auto::{MAX_PILOT_DIVISOR, PILOT_DIVISOR, PILOT_MONITOR};
use crate::apps::{self, AppOpts, MappingChoice};
use crate::bench::{
    MicroParams, MicroRow, ParamError, PipeParams, Placement, RingParams, SieveParams,
    WordcountParams, DEFAULT_CAPACITY, DEFAULT_DEPTH, DEFAULT_HOPS, DEFAULT_MESSAGES,
    DEFAULT_RING_SIZE, DEFAULT_WC_BATCH, DEFAULT_WC_CHUNK, DEFAULT_WC_COUNTERS, MAX_WORK_NS,
};
use crate::engines::Engine;
use crate::engines::Job;
use crate::kernels;
use crate::kernels::wordcount::{Corpus, TextSource};
use crate::registry;

const ABOUT: &str = "Runs LPEL's stream micro-benchmarks on rill and on its peers, side by side";

const LONG_ABOUT: &str = "\
rill-bench runs LPEL's stream micro-benchmarks (a relay pipe, a token ring, and \
micro rows for yield, spawn, hand-off, cross-worker round trip and idle CPU) on \
rill's lightweight tasks (engine `rill`) and on two peer baselines: one OS thread \
per task with crossbeam-channel bounded channels (engine `threads`), and tokio \
tasks with bounded mpsc channels (engine `tokio`). By default every engine runs in the same invocation, so that rill's figures are \
read as ratios to its peers'. Every run verifies its result (the sink saw exactly \
0..M in order, the token made exactly H hops) and fails otherwise. A word count network \
(wordcount) runs the same way on the three engines and beside the plain sequential loop \
(engine `sequential`), every run checked against the sequential count; a prime sieve whose \
chain of filters grows while it runs (sieve) runs on the three engines, every run checked \
against a sequential sieve. It also runs the four \
applications as stream networks of named tasks on rill (des, mc, rt, ant), each checking its \
own result, compares round-robin with manual mapping (compare), and runs everything at small \
sizes (all). `ab` sets rill-bench builds and monitoring modes against each other, run by run.";

const AFTER_HELP: &str = "\
Output: a table per benchmark (median, min and max of ns/op over the repeats, wall \
milliseconds for wordcount and sieve, and each peer's ratio to rill), or with --json one JSON \
object per run on stdout (a failed run's object has \"verified\": false and an \
\"error\" field). Progress goes to stderr.

Exit status: 0 when every run succeeded and verified, 1 when any run failed or did not \
verify (its error is reported in its row and the other runs still run), 2 for invalid \
arguments.

Environment: RILL_SPIN_US=N sets how long an idle rill worker spins before it parks \
(microseconds, default 50); RILL_NO_MEMBARRIER=1 makes every stream operation fence \
instead of relying on membarrier.

Allocator: rill-bench allocates with mimalloc, a thread-caching allocator (memory freed on \
another thread than the one that allocated it, as in a network that passes owned values, is \
cheap with it). Built with `--features system-alloc` it uses the system allocator instead. \
The table's header and every JSON object name the allocator of the run.";

/// clap's parser of a whole number of at least `min`, for a `usize` argument.
fn usize_from(min: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(min..)
}

/// auto's pilot monitoring: a mode the planner can read, one that names
/// the tasks (`map`) and times them (`sched` or `sample`).
fn pilot_monitor(s: &str) -> Result<MonitorFlags, String> {
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

/// A mapping file for `compare --file`: it must exist and parse (a bad
/// file is an argument error, not a failed run).
fn mapping_file(s: &str) -> Result<PathBuf, String> {
    match s.parse::<MappingChoice>()? {
        MappingChoice::File(p) => Ok(p),
        other => Err(format!(
            "--file takes a mapping file; '{other}' is a mapping name (compare runs rr and manual itself)"
        )),
    }
}

/// The `rill-bench` command line.
#[derive(Debug, Parser)]
#[command(
    name = "rill-bench",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    propagate_version = true
)]
pub struct Cli {
    /// The benchmark to run.
    #[command(subcommand)]
    pub command: Command,
}

/// A benchmark.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Relay pipeline: a source, DEPTH-2 relays and a sink joined by bounded
    /// channels; ns/op = wall time / (MESSAGES x (DEPTH-1)), per message per hop.
    Pipe(PipeArgs),
    /// Token ring: SIZE tasks in a ring of bounded channels pass one token for HOPS
    /// hops in total; ns/op = wall time / HOPS.
    Ring(RingArgs),
    /// Micro rows, each a runtime primitive timed alone: yield, spawn, handoff,
    /// cross_worker_roundtrip (ns per operation) and idle_cpu (share of a core).
    Micro(MicroArgs),
    /// Word count: a source sends the text in chunks, a splitter cuts them
    /// into words and sends batches to K counters (each word to the counter
    /// its hash names), a merger adds up the counters' counts. Every run is
    /// checked against a sequential count; engine `sequential` times that
    /// loop as a row of its own. The table shows wall milliseconds.
    Wordcount(WordcountArgs),
    /// Prime sieve: a generator writes 2, 3, 4, ... into a chain of filter
    /// tasks; each filter takes the first number that reaches it as its
    /// prime, reports it to a sink and drops its multiples from then on,
    /// and the last filter spawns the next (from inside the task) when a
    /// number first passes it, so the chain grows while it runs, up to
    /// PRIMES filters. The generator stops at n (ln n + ln ln n), a bound
    /// of the n-th prime, and the streams end down the chain. Every run is
    /// checked against a sequential sieve. The table shows wall
    /// milliseconds.
    Sieve(SieveArgs),
    /// The applications as stream networks on rill.
    #[command(flatten)]
    App(AppCommand),
    /// Runs an application with round-robin and manual mapping (and with
    /// --auto auto mapping, pilot included, and with --file each mapping
    /// file) alternately and prints the wall times (median, min, max) and
    /// the speedups over round-robin.
    Compare(CompareArgs),
    /// Runs every application (rr and manual mapping, monitoring off and full)
    /// and the pipe, ring, word count and sieve against their peers, on small sizes;
    /// prints one table and writes results.json and index.html.
    All(AllArgs),
    /// A/B on a shared machine: runs rows on rill with each build (rill-bench
    /// executables, older ones too) and monitoring mode in turn, round after
    /// round, and prints medians, ranges and each configuration's ratio to
    /// the first build and to the first mode, with the machine.
    Ab(AbArgs),
}

/// An engine as the command line names it: one engine, or `all`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EngineChoice {
    /// Every engine the benchmark has.
    All,
    /// One engine.
    One(Engine),
}

/// The parser of `--engine`'s values: `all` or an engine's name.
fn engine_choice() -> impl TypedValueParser<Value = EngineChoice> {
    let all = PossibleValue::new("all").help(
        "every engine the benchmark has: rill, threads and tokio (wordcount: and sequential)",
    );
    let one = registry::WORDCOUNT
        .iter()
        .map(|e| PossibleValue::new(e.name()).help(e.about()));
    PossibleValuesParser::new(std::iter::once(all).chain(one)).map(|name| {
        match registry::by_name(&name) {
            Some(e) => EngineChoice::One(e),
            None => EngineChoice::All,
        }
    })
}

/// Arguments every benchmark takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Engines to run, a comma-separated list (rill, threads, tokio, and for
    /// wordcount sequential) or `all` (every one the benchmark has); each runs
    /// in turn and the table shows them side by side.
    #[arg(
        long,
        value_parser = engine_choice(),
        value_delimiter = ',',
        default_value = "all",
        value_name = "ENGINES"
    )]
    pub engine: Vec<EngineChoice>,

    /// Runs of each benchmark per engine; the table shows median, min and max.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// Print one JSON object per run (one line each) instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Worker threads for engines that have workers (rill, tokio) [default: the
    /// number of available cores].
    #[arg(long, value_name = "W",
          value_parser = usize_from(1))]
    pub workers: Option<usize>,

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

impl CommonArgs {
    /// The engines chosen, each once, in the order given (`all` expands to rill,
    /// threads, tokio).
    pub fn engines(&self) -> Vec<Engine> {
        self.engines_from(&registry::NETWORKS)
    }

    /// The engines chosen, each once, in the order given, `all` standing for
    /// the engines in `all`.
    pub fn engines_from(&self, all: &[Engine]) -> Vec<Engine> {
        let mut out: Vec<Engine> = Vec::new();
        for choice in &self.engine {
            let add = match choice {
                EngineChoice::All => all,
                EngineChoice::One(e) => std::slice::from_ref(e),
            };
            for &e in add {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
        out
    }

    /// The worker count asked for, or the number of available cores.
    pub fn workers(&self) -> usize {
        self.workers.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
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

/// Arguments of `rill-bench pipe`.
#[derive(Debug, Args)]
pub struct PipeArgs {
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
    #[arg(long, value_name = "NS", default_value_t = 0,
          value_parser = value_parser!(u64).range(0..=MAX_WORK_NS))]
    pub work: u64,

    /// Relay K (the task pipe/relay/K, K from 0 to DEPTH-3) does NS
    /// nanoseconds of work per message instead of --work: a planted
    /// bottleneck. Repeat the flag for several relays, each K once.
    #[arg(long, value_name = "K=NS", value_parser = parse_slow)]
    pub slow: Vec<(usize, u64)>,

    /// Bound of each channel, in messages (at least 1).
    #[arg(long, default_value_t = DEFAULT_CAPACITY, value_name = "C",
          value_parser = usize_from(1))]
    pub capacity: usize,

    /// Options every benchmark takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `rill-bench ring`.
#[derive(Debug, Args)]
pub struct RingArgs {
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

    /// Options every benchmark takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `rill-bench wordcount`.
#[derive(Debug, Args)]
pub struct WordcountArgs {
    /// Text file to count, UTF-8 [default: generated text, see --bytes].
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Bytes of generated text (lines of 0 to 24 words drawn from a Zipf
    /// distribution over 30,000 words) when no --input is given.
    #[arg(long, value_name = "N", default_value_t = kernels::wordcount::DEFAULT_BYTES,
          conflicts_with = "input", value_parser = usize_from(1))]
    pub bytes: usize,

    /// Seed of the generated text.
    #[arg(long, default_value_t = 1, conflicts_with = "input")]
    pub seed: u64,

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
    pub words: crate::kernels::wordcount::WordsAs,

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

    /// Options every benchmark takes.
    #[command(flatten)]
    pub common: CommonArgs,
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

/// Arguments of `rill-bench sieve`.
#[derive(Debug, Args)]
pub struct SieveArgs {
    /// Primes to find: the filters the chain grows to (1 to 1000000).
    #[arg(long, value_name = "N", default_value_t = kernels::sieve::DEFAULT_PRIMES,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=kernels::sieve::MAX_PRIMES as u64))]
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

    /// Options every benchmark takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Arguments of `rill-bench micro`.
#[derive(Debug, Args)]
pub struct MicroArgs {
    /// Rows to run, a comma-separated list [default: all of them]. handoff and
    /// idle_cpu always use 1 worker, cross_worker_roundtrip 2; yield and spawn use
    /// --workers.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ROWS")]
    pub rows: Vec<MicroRow>,

    /// Operations each row times, on every engine [default: each engine's
    /// own count for the row, tens of milliseconds of work]; idle_cpu has
    /// none.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub ops: Option<u64>,

    /// Options every benchmark takes.
    #[command(flatten)]
    pub common: CommonArgs,
}

impl MicroArgs {
    /// The rows chosen, each once, in the order given; all rows when none is.
    pub fn rows(&self) -> Vec<MicroRow> {
        if self.rows.is_empty() {
            return MicroRow::ALL.to_vec();
        }
        let mut out = Vec::new();
        for r in &self.rows {
            if !out.contains(r) {
                out.push(*r);
            }
        }
        out
    }
}

fn parse_key(s: &str) -> Result<String, String> {
    kernels::des::KeySchedule::from_hex(s.trim()).map_err(|e| e.to_string())?;
    Ok(s.trim().to_string())
}

/// Options every application (`des`, `mc`, `rt`, `ant`) takes.
#[derive(Clone, Debug, Args)]
pub struct AppCommon {
    /// Worker threads [default: the number of available cores].
    #[arg(long, value_name = "W", value_parser = usize_from(1))]
    pub workers: Option<usize>,

    /// Task placement: adaptive (the runtime's default: a task starts
    /// beside its spawner, idle workers take runs of new tasks), profile:PATH
    /// (the first run writes PATH from its count-mode logs with rill-mon's
    /// planner, later runs load it), rr (round-robin), manual (the
    /// application's own table), parts (contiguous blocks of the network), steal (round-robin
    /// then work stealing), auto (a pilot run, then the run under a mapping
    /// planned from it; see below), or a FILE of `prefix = worker` lines
    /// [default: adaptive; compare runs rr and manual itself, and auto with
    /// --auto].
    ///
    /// auto: the pilot is the same network at about 1/N of the size (--pilot
    /// N, default 100; mc: 1/N of --paths, at least 2000 and 4 records per
    /// chain; des: 1/N of the input bytes, at least 64 KiB, generated and
    /// encrypted; rt: 1/N of the scenes, at least 2 per solver; ant: 1/N of
    /// the iterations, at least 1) under rr, monitored as --pilot-monitor
    /// says (count mode by default) into LOGS/pilot (LOGS: --logs, LOGS/run-N with
    /// --repeat; without --logs target/rill-auto/APP/run-N). rill-mon's
    /// planner (`rill-mon map`) writes LOGS/auto.map from those logs, the
    /// output names it, and the real run uses it. Every auto run makes its
    /// own pilot: pilot_ms (the pilot's wall + the planning) and total_ms
    /// (pilot_ms + the run's wall) are reported beside wall.
    #[arg(
        long,
        value_name = "adaptive|rr|manual|parts|steal|auto|profile:PATH|FILE"
    )]
    pub mapping: Option<MappingChoice>,

    /// auto's pilot runs about 1/N of the size (with the floors said under
    /// --mapping): a larger N costs less before the run and sees fewer
    /// messages. Only --mapping auto and compare --auto use it.
    #[arg(long, value_name = "N", default_value_t = PILOT_DIVISOR,
          value_parser = value_parser!(u64).range(1..=MAX_PILOT_DIVISOR))]
    pub pilot: u64,

    /// What auto's pilot records: count mode by default
    /// (map,worker,task,stream: exact busy time per task, no message
    /// order), or any --monitor MODE that names and times the tasks (map
    /// with sched, or sample:HZ). Only --mapping auto and compare --auto
    /// use it.
    #[arg(long, value_name = "MODE", default_value_t = PILOT_MONITOR,
          value_parser = pilot_monitor)]
    pub pilot_monitor: MonitorFlags,

    /// Monitoring: off, sample (or sample:HZ: what each worker does, sampled
    /// at HZ, default 1000, with exact counts; the cheap mode), cpu (or
    /// cpu:HZ: sample mode on the workers' CPU time, cheaper still, at most
    /// a sample per kernel tick, and biased toward waiting where workers
    /// wait on each other), full, all (full and a time per message), or a
    /// comma list of map, sched (or task), worker, stream, message (or
    /// msg), msgtime.
    #[arg(long, value_name = "MODE", default_value = "off")]
    pub monitor: MonitorFlags,

    /// Directory for the monitoring logs.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,

    /// Print one JSON object per run (one line each).
    #[arg(long)]
    pub json: bool,

    /// Runs [default: 1; compare: 5 of each mapping].
    #[arg(long, value_name = "N", value_parser = value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,

    /// Capacity of the application's data streams [default: the application's].
    #[arg(long, value_name = "C", value_parser = usize_from(1))]
    pub capacity: Option<usize>,
}

impl AppCommon {
    /// The application options these arguments ask for.
    pub fn opts(&self) -> AppOpts {
        let mut o = AppOpts::default();
        if let Some(w) = self.workers {
            o.workers = w;
        }
        o.mapping = self.mapping.clone().unwrap_or_default();
        o.monitor = self.monitor;
        o.logs = self.logs.clone();
        o.capacity = self.capacity;
        o.pilot = self.pilot;
        o.pilot_monitor = self.pilot_monitor;
        o
    }
}

/// An application and its arguments.
#[derive(Clone, Debug, Subcommand)]
pub enum AppCommand {
    /// DES (FIPS 46-3, ECB, PKCS#7): a splitter, parallel IP -> rounds -> FP
    /// pipelines and an order-restoring collector; verified against the
    /// sequential cipher and by the round trip.
    Des(DesArgs),
    /// Monte Carlo European call and put under GBM: chains of step tasks that
    /// unfold at run time (serial replication); verified against Black-Scholes.
    Mc(McArgs),
    /// Ray tracer: a dealer hands scenes to four solvers on demand, a collector
    /// orders the images; verified by the sequential checksum.
    Rt(RtArgs),
    /// Ant colony for single-machine total weighted tardiness: a pool of ant
    /// tasks reduced in ant order each iteration; verified against the
    /// sequential colony.
    Ant(AntArgs),
}

/// Arguments of `rill-bench des`.
#[derive(Clone, Debug, Args)]
pub struct DesArgs {
    /// Input file [default: SIZE generated bytes].
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Bytes of generated input when no --input is given.
    #[arg(long, value_name = "BYTES", default_value_t = kernels::des::DEFAULT_INPUT_LEN)]
    pub size: usize,
    /// Seed of the generated input.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The key, 16 hex digits.
    #[arg(long, value_name = "HEX", default_value = apps::des::DEFAULT_KEY, value_parser = parse_key)]
    pub key: String,
    /// Decrypt (the input is ciphertext) instead of encrypt.
    #[arg(long)]
    pub decrypt: bool,
    /// Blocks per message.
    #[arg(long, value_name = "BLOCKS", default_value_t = apps::des::DEFAULT_BATCH,
          value_parser = usize_from(1))]
    pub batch: usize,
    /// Round stages per pipeline (1, 2, 4, 8 or 16).
    #[arg(long, default_value_t = apps::des::DEFAULT_STAGES)]
    pub stages: usize,
    /// Parallel pipelines [default: the workers, at least 2].
    #[arg(long, value_parser = usize_from(1))]
    pub pipelines: Option<usize>,
    /// Options every application takes.
    #[command(flatten)]
    pub common: AppCommon,
}

/// Arguments of `rill-bench mc`.
#[derive(Clone, Debug, Args)]
pub struct McArgs {
    /// Paths to simulate.
    #[arg(long, default_value_t = kernels::mc::DEFAULT_PATHS, value_parser = value_parser!(u64).range(1..))]
    pub paths: u64,
    /// Time steps per path (the depth of each chain).
    #[arg(long, default_value_t = kernels::mc::DEFAULT_STEPS, value_parser = value_parser!(u32).range(1..))]
    pub steps: u32,
    /// Spot price.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub spot: f64,
    /// Strike.
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub strike: f64,
    /// Risk-free rate (continuously compounded).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub rate: f64,
    /// Volatility.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub vol: f64,
    /// Maturity in years.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub maturity: f64,
    /// Seed of the random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Paths per record.
    #[arg(long, value_name = "PATHS", default_value_t = apps::mc::DEFAULT_BATCH,
          value_parser = usize_from(1))]
    pub batch: usize,
    /// Chains (records are dealt round-robin over them) [default: one per
    /// worker, at least 2].
    #[arg(long, value_parser = usize_from(1))]
    pub chains: Option<usize>,
    /// Options every application takes.
    #[command(flatten)]
    pub common: AppCommon,
}

/// Arguments of `rill-bench rt`.
#[derive(Clone, Debug, Args)]
pub struct RtArgs {
    /// Scenes to render.
    #[arg(long, default_value_t = kernels::rt::DEFAULT_SCENES, value_parser = value_parser!(u32).range(1..))]
    pub scenes: u32,
    /// Image width.
    #[arg(long, default_value_t = kernels::rt::DEFAULT_WIDTH, value_parser = value_parser!(u32).range(1..))]
    pub width: u32,
    /// Image height.
    #[arg(long, default_value_t = kernels::rt::DEFAULT_HEIGHT, value_parser = value_parser!(u32).range(1..))]
    pub height: u32,
    /// Write the images here (scene-NNNN.png or .ppm).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Image file format.
    #[arg(long, value_enum, default_value_t = apps::rt::ImageFormat::Png)]
    pub format: apps::rt::ImageFormat,
    /// Solver tasks.
    #[arg(long, default_value_t = apps::rt::DEFAULT_SOLVERS, value_parser = usize_from(1))]
    pub solvers: usize,
    /// Options every application takes.
    #[command(flatten)]
    pub common: AppCommon,
}

/// Arguments of `rill-bench ant`.
#[derive(Clone, Debug, Args)]
pub struct AntArgs {
    /// Jobs in the generated instance.
    #[arg(long, default_value_t = kernels::ant::DEFAULT_JOBS, value_parser = usize_from(1))]
    pub jobs: usize,
    /// Ants per iteration.
    #[arg(long, default_value_t = kernels::ant::DEFAULT_ANTS, value_parser = value_parser!(u32).range(1..))]
    pub ants: u32,
    /// Iterations.
    #[arg(long, default_value_t = kernels::ant::DEFAULT_ITERATIONS, value_parser = value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Seed of the instance and the colony.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Options every application takes.
    #[command(flatten)]
    pub common: AppCommon,
}

impl AppCommand {
    /// `des`, `mc`, `rt` or `ant`.
    pub fn name(&self) -> &'static str {
        match self {
            AppCommand::Des(_) => "des",
            AppCommand::Mc(_) => "mc",
            AppCommand::Rt(_) => "rt",
            AppCommand::Ant(_) => "ant",
        }
    }

    /// The options every application takes.
    pub fn common(&self) -> &AppCommon {
        match self {
            AppCommand::Des(a) => &a.common,
            AppCommand::Mc(a) => &a.common,
            AppCommand::Rt(a) => &a.common,
            AppCommand::Ant(a) => &a.common,
        }
    }

    /// The application, its input made and its arguments checked; an error
    /// is an argument error (exit status 2).
    pub fn app(&self) -> Result<Box<dyn apps::App>, ParamError> {
        let p = |e: anyhow::Error| ParamError(format!("{e:#}"));
        Ok(match self {
            AppCommand::Des(a) => Box::new(
                apps::des::Des::new(apps::des::DesConfig {
                    input: match &a.input {
                        Some(f) => apps::des::DesInput::File(f.clone()),
                        None => apps::des::DesInput::Generated {
                            len: a.size,
                            seed: a.seed,
                        },
                    },
                    output: a.output.clone(),
                    key: a.key.clone(),
                    decrypt: a.decrypt,
                    net: apps::des::DesNet {
                        batch: a.batch,
                        stages: a.stages,
                        pipelines: a.pipelines,
                    },
                })
                .map_err(p)?,
            ),
            AppCommand::Mc(a) => Box::new(
                apps::mc::Mc::new(apps::mc::McConfig {
                    params: kernels::mc::McParams {
                        spot: a.spot,
                        strike: a.strike,
                        rate: a.rate,
                        vol: a.vol,
                        maturity: a.maturity,
                        steps: a.steps,
                        seed: a.seed,
                    },
                    paths: a.paths,
                    net: apps::mc::McNet {
                        batch: a.batch,
                        chains: a.chains,
                    },
                })
                .map_err(p)?,
            ),
            AppCommand::Rt(a) => Box::new(
                apps::rt::Rt::new(apps::rt::RtConfig {
                    scenes: a.scenes,
                    width: a.width,
                    height: a.height,
                    out_dir: a.out_dir.clone(),
                    format: a.format,
                    solvers: a.solvers,
                })
                .map_err(p)?,
            ),
            AppCommand::Ant(a) => Box::new(
                apps::ant::Ant::new(apps::ant::AntConfig {
                    jobs: a.jobs,
                    ants: a.ants,
                    iterations: a.iterations,
                    seed: a.seed,
                })
                .map_err(p)?,
            ),
        })
    }
}

/// Arguments of `rill-bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Also run each round under --mapping auto (a pilot run, a mapping
    /// planned from its logs, the run under it), after rr and manual; the
    /// table gains an auto row (the run alone) and an auto+pilot row (pilot
    /// and planning included), and the speedups over rr of both. May come
    /// after the application's name (`compare mc --auto`).
    #[arg(long, global = true)]
    pub auto: bool,

    /// Also run each round under the mapping FILE (`"name" = worker` lines,
    /// as `rill-mon map` writes them), after the others; repeat the flag
    /// for several files. Each file gets a row named by its file name, and
    /// its speed-up over rr and its time relative to manual are printed. May
    /// come after the application's name
    #[arg(long = "file", value_name = "FILE", global = true, value_parser = mapping_file)]
    pub files: Vec<PathBuf>,

    /// The application and its options (`--repeat N` there: runs of each
    /// mapping, default 5).
    #[command(subcommand)]
    pub app: AppCommand,
}

/// Arguments of `rill-bench all`.
#[derive(Debug, Args)]
pub struct AllArgs {
    /// Where results.json and index.html go.
    #[arg(long, value_name = "DIR", default_value = "target/rill-report")]
    pub out: PathBuf,
    /// Tiny sizes and one run each (seconds; for tests).
    #[arg(long)]
    pub quick: bool,
    /// Runs of each configuration; the table shows medians [default: 3, or 1
    /// with --quick].
    #[arg(long, value_name = "N", value_parser = value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Worker threads [default: the number of available cores].
    #[arg(long, value_name = "W", value_parser = usize_from(1))]
    pub workers: Option<usize>,
    /// Print the results as JSON lines instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The parser of `ab --rows`' values: the name of one of [`ab::ROWS`].
fn ab_row() -> impl TypedValueParser<Value = &'static ab::Row> {
    let rows = ab::ROWS.iter().map(|r| {
        let mut help = r.args.join(" ");
        if let Some(w) = r.workers {
            help.push_str(&format!(" (on {w} workers)"));
        }
        PossibleValue::new(r.name).help(help)
    });
    PossibleValuesParser::new(rows).map(|name| ab::row(&name).expect("a possible value"))
}

/// Arguments of `rill-bench ab`.
#[derive(Debug, Args)]
#[command(after_long_help = AB_AFTER_HELP)]
pub struct AbArgs {
    /// A rill-bench executable to measure, NAME=PATH; repeat the flag for
    /// each build [default: this rill-bench, named `this`].
    #[arg(long = "build", value_name = "NAME=PATH")]
    pub builds: Vec<ab::Build>,

    /// Monitoring modes to measure in, a comma-separated list of off, counts
    /// (map,worker,task,stream: all but the message order), full, all, or one
    /// event class; every build runs in every mode.
    #[arg(
        long,
        value_name = "MODES",
        value_delimiter = ',',
        default_value = "off"
    )]
    pub monitor: Vec<ab::Mode>,

    /// Rows to run, a comma-separated list [default: roundtrip, yield,
    /// handoff, pipe-rr, pipe-const, pipe-parts, ring-const, ring-parts,
    /// ring-rr, and with 16 cores pipe-rr-w16 and ring-parts-w16].
    #[arg(long, value_name = "ROWS", value_delimiter = ',', value_parser = ab_row())]
    pub rows: Vec<&'static ab::Row>,

    /// Rounds: each runs every row with every build and mode once.
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = value_parser!(u32).range(1..))]
    pub rounds: u32,

    /// Worker threads of each run (rows that name their own count keep it).
    #[arg(long, value_name = "W", default_value_t = 2, value_parser = usize_from(1))]
    pub workers: usize,

    /// Print one JSON object (one line) instead of the Markdown table.
    #[arg(long)]
    pub json: bool,

    /// Arguments added to every run's command line, after `--` (for example
    /// `-- --ops 100000` to shorten micro rows); a flag a row names itself
    /// (the ring rows' `--hops`) takes the value given here.
    #[arg(last = true, value_name = "ARGS")]
    pub extra: Vec<String>,
}

const AB_AFTER_HELP: &str = "\
Each run is `PATH ROW-ARGS [--engine rill] --workers W --json [--monitor MODE --logs TMP] \
[ARGS]`; its figure is ns_per_op (wall_ms for the applications). The order of the \
builds and modes reverses every other round. A failed run is reported and left out, \
and the exit status is then 1.

Examples:
  rill-bench ab --build old=/tmp/rill-bench-old --build new=target/release/rill-bench --rounds 9
  rill-bench ab --build out=NOHOOKS --build hooks=HOOKS --monitor off,counts,full --rows pipe-rr
    (NOHOOKS built with --no-default-features: what the monitoring hooks themselves cost)
  rill-bench ab --monitor off,full --rows des-manual,mc-manual,rt-manual,ant-manual --workers 4

The paper's mapping experiments are `rill-bench compare mc --workers 2 --repeat 5` and, \
for waiting, `rill-bench compare mc --paths 50 --batch 1 --workers 4 --monitor full`.";

impl Command {
    /// The subcommand's name: `pipe`, `ring`, `micro`, `wordcount`, `sieve`,
    /// `des`, `mc`, `rt`, `ant`, `compare`, `all` or `ab`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Pipe(_) => "pipe",
            Command::Ring(_) => "ring",
            Command::Micro(_) => "micro",
            Command::Wordcount(_) => "wordcount",
            Command::Sieve(_) => "sieve",
            Command::App(a) => a.name(),
            Command::Compare(_) => "compare",
            Command::All(_) => "all",
            Command::Ab(_) => "ab",
        }
    }

    /// The options every peer benchmark (pipe, ring, micro, wordcount, sieve) takes;
    /// `None` for the applications, `compare` and `all`.
    pub fn common(&self) -> Option<&CommonArgs> {
        match self {
            Command::Pipe(a) => Some(&a.common),
            Command::Ring(a) => Some(&a.common),
            Command::Micro(a) => Some(&a.common),
            Command::Wordcount(a) => Some(&a.common),
            Command::Sieve(a) => Some(&a.common),
            _ => None,
        }
    }

    /// The engines `--engine` asks for: `all` is every engine the benchmark
    /// has (wordcount adds `sequential`); naming `sequential` for another
    /// benchmark is an error.
    pub fn engines(&self) -> Result<Vec<Engine>, ParamError> {
        let Some(common) = self.common() else {
            return Ok(Vec::new());
        };
        if let Command::Wordcount(_) = self {
            return Ok(common.engines_from(&registry::WORDCOUNT));
        }
        let chosen = common.engines();
        if let Some(e) = chosen.iter().find(|e| !registry::NETWORKS.contains(e)) {
            return Err(ParamError(format!(
                "--engine {e}: only wordcount has a {e} engine; {} runs on rill, threads and tokio",
                self.name()
            )));
        }
        Ok(chosen)
    }

    /// The peer benchmark jobs this command asks for, validated (none for the
    /// applications, `compare` and `all`).
    pub fn jobs(&self) -> Result<Vec<Job>, ParamError> {
        let Some(common) = self.common() else {
            return Ok(Vec::new());
        };
        let workers = common.workers();
        match self {
            Command::Pipe(a) => {
                let p = PipeParams {
                    depth: a.depth,
                    messages: a.messages,
                    capacity: a.capacity,
                    workers,
                    placement: a.placement,
                    mapping: a.mapping.clone(),
                    work_ns: a.work,
                    slow: a.slow.clone(),
                    monitor: common.monitor,
                    logs: common.logs.clone(),
                };
                p.validate()?;
                Ok(vec![Job::Pipe(p)])
            }
            Command::Ring(a) => {
                let p = RingParams {
                    size: a.size,
                    hops: a.hops,
                    capacity: a.capacity,
                    workers,
                    monitor: common.monitor,
                    logs: common.logs.clone(),
                    placement: a.placement,
                    mapping: a.mapping.clone(),
                };
                p.validate()?;
                Ok(vec![Job::Ring(p)])
            }
            Command::Micro(a) => a
                .rows()
                .into_iter()
                .map(|row| {
                    let p = MicroParams {
                        row,
                        workers,
                        ops: a.ops,
                        monitor: common.monitor,
                        logs: common.logs.clone(),
                    };
                    p.validate()?;
                    Ok(Job::Micro(p))
                })
                .collect(),
            Command::Wordcount(a) => {
                let source = match &a.input {
                    Some(f) => TextSource::File(f.clone()),
                    None => TextSource::Generated {
                        bytes: a.bytes,
                        seed: a.seed,
                    },
                };
                let p = WordcountParams {
                    batch: a.batch,
                    counters: a.counters,
                    words: a.words,
                    chunk: a.chunk,
                    capacity: a.capacity,
                    mapping: a.mapping.clone(),
                    pilot: a.pilot,
                    pilot_monitor: a.pilot_monitor,
                    monitor: common.monitor,
                    logs: common.logs.clone(),
                    ..WordcountParams::new(Corpus::new(source).map_err(ParamError)?, workers)
                };
                p.validate()?;
                Ok(vec![Job::Wordcount(p)])
            }
            Command::Sieve(a) => {
                let p = SieveParams {
                    primes: a.primes,
                    capacity: a.capacity,
                    workers,
                    mapping: a.mapping.clone(),
                    monitor: common.monitor,
                    logs: common.logs.clone(),
                };
                p.validate()?;
                Ok(vec![Job::Sieve(p)])
            }
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn names(engines: &[Engine]) -> Vec<&'static str> {
        engines.iter().map(|e| e.name()).collect()
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("rill-bench").chain(args.iter().copied()))
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn pipe_defaults() {
        let cli = parse(&["pipe"]).unwrap();
        let Command::Pipe(a) = &cli.command else {
            panic!("not pipe")
        };
        assert_eq!((a.depth, a.messages, a.capacity), (100, 100_000, 16));
        let Job::Pipe(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not pipe")
        };
        assert_eq!(
            *p,
            PipeParams {
                workers: p.workers,
                ..PipeParams::default()
            }
        );
        assert_eq!(a.placement, Placement::Rr);
        assert_eq!(names(&a.common.engines()), ["rill", "threads", "tokio"]);
        assert_eq!(a.common.repeat, 1);
        assert!(!a.common.json);
        assert!(a.common.workers() >= 1);
        assert_eq!(a.common.monitor, None);
    }

    #[test]
    fn pipe_all_flags() {
        let cli = parse(&[
            "pipe",
            "--depth",
            "4",
            "--messages",
            "10",
            "--placement",
            "parts",
            "--workers",
            "3",
            "--engine",
            "threads,tokio",
            "--capacity",
            "2",
            "--repeat",
            "5",
            "--json",
            "--monitor",
            "full",
            "--logs",
            "/tmp/x",
        ])
        .unwrap();
        let jobs = cli.command.jobs().unwrap();
        let Job::Pipe(p) = &jobs[0] else {
            panic!("not pipe")
        };
        assert_eq!(
            *p,
            PipeParams {
                depth: 4,
                messages: 10,
                capacity: 2,
                workers: 3,
                placement: Placement::Parts,
                monitor: Some(MonitorFlags::FULL),
                logs: Some("/tmp/x".into()),
                ..PipeParams::default()
            }
        );
        let c = cli.command.common().unwrap();
        assert_eq!(names(&c.engines()), ["threads", "tokio"]);
        assert_eq!(c.repeat, 5);
        assert!(c.json);
    }

    #[test]
    fn pipe_work_slow_and_mapping() {
        let map = crate::apps::mapping_file("mc");
        let cli = parse(&[
            "pipe",
            "--depth",
            "6",
            "--work",
            "200",
            "--slow",
            "3=2000",
            "--slow",
            " 0 = 5 ",
            "--mapping",
            map.to_str().unwrap(),
            "--workers",
            "2",
        ])
        .unwrap();
        let Job::Pipe(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not pipe")
        };
        assert_eq!((p.work_ns, p.slow.clone()), (200, vec![(3, 2000), (0, 5)]));
        assert_eq!(p.mapping, Some(MappingChoice::File(map)));
        assert_eq!(
            p.placement,
            Placement::Rr,
            "the placement stays, overridden"
        );
        // Relay 4 does not exist in a pipe of depth 6: a parameter error.
        let cli = parse(&["pipe", "--depth", "6", "--slow", "4=10"]).unwrap();
        let e = cli.command.jobs().unwrap_err().to_string();
        assert!(e.contains("relays 0 to 3"), "{e}");
        let cli = parse(&["ring", "--mapping", "parts"]).unwrap();
        let Job::Ring(r) = &cli.command.jobs().unwrap()[0] else {
            panic!("not ring")
        };
        assert_eq!(r.mapping, Some(MappingChoice::Parts));
        // compare --auto, before or after the application.
        for args in [
            &["compare", "--auto", "mc"][..],
            &["compare", "mc", "--auto"],
        ] {
            let Command::Compare(c) = parse(args).unwrap().command else {
                panic!("not compare")
            };
            assert!(c.auto, "{args:?}");
        }
        assert!(parse(&["mc", "--auto"]).is_err());
        let Command::App(a) = parse(&["mc", "--mapping", "auto"]).unwrap().command else {
            panic!("not an app")
        };
        assert_eq!(a.common().mapping, Some(MappingChoice::Auto));
        assert_eq!(a.common().opts().pilot, PILOT_DIVISOR);
        let Command::Compare(c) = parse(&["compare", "mc", "--auto", "--pilot", "30"])
            .unwrap()
            .command
        else {
            panic!("not compare")
        };
        assert_eq!(c.app.common().opts().pilot, 30);
        assert_eq!(a.common().opts().pilot_monitor, PILOT_MONITOR);
        let Command::App(a) = parse(&["mc", "--mapping", "auto", "--pilot-monitor", "sample:5000"])
            .unwrap()
            .command
        else {
            panic!("not an app")
        };
        assert_eq!(
            a.common().opts().pilot_monitor,
            MonitorFlags::SAMPLED.with_sample_hz(5000)
        );
        // A pilot whose logs cannot be planned from is refused up front.
        for bad in ["worker", "off", "map,worker", "nonsense"] {
            assert!(parse(&["mc", "--pilot-monitor", bad]).is_err(), "{bad}");
        }
        assert!(parse(&["mc", "--pilot", "0"]).is_err());
        assert!(parse(&["wordcount", "--pilot", "1001"]).is_err());
    }

    #[test]
    fn engine_lists() {
        let engines = |s: &str| {
            let e = parse(&["ring", "--engine", s])
                .unwrap()
                .command
                .common()
                .unwrap()
                .engines();
            names(&e)
        };
        assert_eq!(engines("all"), ["rill", "threads", "tokio"]);
        assert_eq!(engines("tokio,rill"), ["tokio", "rill"]);
        assert_eq!(engines("threads,threads"), ["threads"]);
        assert_eq!(engines("tokio,all"), ["tokio", "rill", "threads"]);
        // Repeated flags add up.
        let cli = parse(&["ring", "--engine", "rill", "--engine", "tokio"]).unwrap();
        assert_eq!(
            names(&cli.command.common().unwrap().engines()),
            ["rill", "tokio"]
        );
    }

    #[test]
    fn ring_and_micro_defaults() {
        let cli = parse(&["ring"]).unwrap();
        let Job::Ring(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not ring")
        };
        assert_eq!((p.size, p.hops, p.capacity), (100, 50_000, 16));
        assert_eq!(
            *p,
            RingParams {
                workers: p.workers,
                ..RingParams::default()
            }
        );
        let cli = parse(&["micro"]).unwrap();
        assert_eq!(cli.command.jobs().unwrap().len(), MicroRow::ALL.len());
        let cli = parse(&["micro", "--rows", "idle_cpu,yield,cross-worker-roundtrip"]).unwrap();
        let Command::Micro(a) = &cli.command else {
            panic!("not micro")
        };
        assert_eq!(
            a.rows(),
            vec![
                MicroRow::IdleCpu,
                MicroRow::Yield,
                MicroRow::CrossWorkerRoundtrip
            ]
        );
    }

    #[test]
    fn bad_values_are_usage_errors() {
        use clap::error::ErrorKind;
        for args in [
            &["pipe", "--depth", "1"][..],
            &["pipe", "--depth", "-3"],
            &["pipe", "--messages", "0"],
            &["pipe", "--capacity", "0"],
            &["pipe", "--workers", "0"],
            &["pipe", "--placement", "diagonal"],
            &["pipe", "--engine", "go"],
            &["pipe", "--engine", "threads,,tokio"],
            &["pipe", "--repeat", "0"],
            &["pipe", "--depth", "many"],
            &["pipe", "--work", "1000001"],
            &["pipe", "--work", "-1"],
            &["pipe", "--slow", "3"],
            &["pipe", "--slow", "x=10"],
            &["pipe", "--slow", "3=y"],
            &["pipe", "--slow", "3=1000001"],
            &["pipe", "--mapping", "manual"],
            &["pipe", "--mapping", "auto"],
            &["pipe", "--mapping", "/no/such/file.map"],
            &["ring", "--mapping", "manual"],
            &["ring", "--mapping", "auto"],
            &["ring", "--size", "1"],
            &["ring", "--hops", "0"],
            &["ring", "--hops", "18446744073709551615"],
            &["ring", "--hops", "18446744073709551616"],
            &["micro", "--rows", "nap"],
            &["fly"],
            &[],
        ] {
            let e = parse(args).expect_err(&format!("{args:?} should fail"));
            assert_ne!(e.kind(), ErrorKind::DisplayHelp, "{args:?}");
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
    }

    #[test]
    fn wordcount_flags() {
        let cli = parse(&["wordcount", "--bytes", "2000"]).unwrap();
        assert_eq!(
            names(&cli.command.engines().unwrap()),
            ["rill", "threads", "tokio", "sequential"]
        );
        let Job::Wordcount(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not wordcount")
        };
        assert_eq!(
            (p.batch, p.counters, p.chunk, p.capacity),
            (1024, 4, 65536, 16)
        );
        assert_eq!(p.mapping, MappingChoice::Adaptive);
        assert_eq!(
            *p.corpus.source(),
            TextSource::Generated {
                bytes: 2000,
                seed: 1
            }
        );
        let cli = parse(&[
            "wordcount",
            "--bytes",
            "500",
            "--seed",
            "4",
            "--batch",
            "1",
            "--counters",
            "2",
            "--chunk",
            "64",
            "--capacity",
            "3",
            "--mapping",
            "manual",
            "--workers",
            "2",
            "--engine",
            "sequential,rill",
        ])
        .unwrap();
        assert_eq!(
            names(&cli.command.engines().unwrap()),
            ["sequential", "rill"]
        );
        let Job::Wordcount(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not wordcount")
        };
        assert_eq!(
            (p.batch, p.counters, p.chunk, p.capacity, p.workers),
            (1, 2, 64, 3, 2)
        );
        assert_eq!(p.mapping, MappingChoice::Manual);
        assert_eq!(p.corpus.len(), 500);
        // Only the word count has a sequential engine.
        let cli = parse(&["ring", "--engine", "sequential"]).unwrap();
        let e = cli.command.engines().unwrap_err();
        assert!(e.to_string().contains("only wordcount"), "{e}");
        let all = parse(&["pipe", "--engine", "all"]).unwrap();
        assert_eq!(
            names(&all.command.engines().unwrap()),
            ["rill", "threads", "tokio"]
        );
        // A missing file is a parameter error.
        let cli = parse(&["wordcount", "--input", "/no/such/text.txt"]).unwrap();
        let e = cli.command.jobs().unwrap_err();
        assert!(e.to_string().contains("/no/such/text.txt"), "{e}");
        for args in [
            &["wordcount", "--batch", "0"][..],
            &["wordcount", "--counters", "0"],
            &["wordcount", "--chunk", "0"],
            &["wordcount", "--bytes", "0"],
            &["wordcount", "--capacity", "0"],
            &["wordcount", "--mapping", "diagonal"],
            &["wordcount", "--input", "a.txt", "--bytes", "10"],
            &["wordcount", "--input", "a.txt", "--seed", "2"],
        ] {
            let e = parse(args).expect_err(&format!("{args:?} should fail"));
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
    }

    /// The default's name and the profile form parse everywhere a mapping
    /// is taken, and the JSON names them as given.
    #[test]
    fn adaptive_and_profile_mappings() {
        for bench in ["sieve", "wordcount", "mc", "pipe", "ring"] {
            assert!(parse(&[bench, "--mapping", "adaptive"]).is_ok(), "{bench}");
        }
        let m: MappingChoice = "profile:/tmp/x.profile".parse().unwrap();
        assert_eq!(m, MappingChoice::Profile("/tmp/x.profile".into()));
        assert_eq!(m.name(), "profile:/tmp/x.profile");
        assert_eq!(
            "adaptive".parse::<MappingChoice>().unwrap().name(),
            "adaptive"
        );
        assert!(parse(&["ring", "--mapping", "profile:/tmp/r.profile"]).is_ok());
        assert!("profile:".parse::<MappingChoice>().is_err());
    }

    #[test]
    fn sieve_flags() {
        let cli = parse(&["sieve"]).unwrap();
        assert_eq!(
            names(&cli.command.engines().unwrap()),
            ["rill", "threads", "tokio"]
        );
        let Job::Sieve(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not sieve")
        };
        assert_eq!(
            *p,
            SieveParams {
                workers: p.workers,
                ..SieveParams::default()
            }
        );
        assert_eq!(
            (p.primes, p.capacity, &p.mapping),
            (2000, 16, &MappingChoice::Adaptive)
        );
        let cli = parse(&[
            "sieve",
            "--primes",
            "100",
            "--capacity",
            "1",
            "--mapping",
            "parts",
            "--workers",
            "2",
            "--engine",
            "tokio,rill",
            "--repeat",
            "3",
            "--json",
        ])
        .unwrap();
        let Job::Sieve(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not sieve")
        };
        assert_eq!(
            (p.primes, p.capacity, &p.mapping, p.workers),
            (100, 1, &MappingChoice::Parts, 2)
        );
        let c = cli.command.common().unwrap();
        assert_eq!(names(&c.engines()), ["tokio", "rill"]);
        assert_eq!((c.repeat, c.json), (3, true));
        let cli = parse(&["sieve", "--mapping", "manual"]).unwrap();
        let Job::Sieve(p) = &cli.command.jobs().unwrap()[0] else {
            panic!("not sieve")
        };
        assert_eq!(p.mapping, MappingChoice::Manual);
        let e = parse(&["sieve", "--engine", "sequential"])
            .unwrap()
            .command
            .engines()
            .unwrap_err();
        assert!(e.to_string().contains("only wordcount"), "{e}");
        for args in [
            &["sieve", "--primes", "0"][..],
            &["sieve", "--primes", "1000001"],
            &["sieve", "--primes", "many"],
            &["sieve", "--capacity", "0"],
            &["sieve", "--workers", "0"],
            &["sieve", "--mapping", "auto"],
            &["sieve", "--mapping", "/no/such/file.map"],
        ] {
            let e = parse(args).expect_err(&format!("{args:?} should fail"));
            assert_eq!(e.exit_code(), 2, "{args:?}");
        }
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("sieve")
            .unwrap()
            .render_long_help()
            .to_string();
        for flag in [
            "--primes",
            "--capacity",
            "--mapping",
            "--workers",
            "--engine",
            "--json",
        ] {
            assert!(help.contains(flag), "sieve help lacks {flag}");
        }
    }

    #[test]
    fn overflowing_pipe_is_a_param_error() {
        let cli = parse(&["pipe", "--depth", "3", "--messages", &u64::MAX.to_string()]).unwrap();
        let e = cli.command.jobs().unwrap_err();
        assert!(e.to_string().contains("u64"), "{e}");
    }

    #[test]
    fn help_mentions_subcommands_and_flags() {
        let help = Cli::command().render_long_help().to_string();
        for word in [
            "pipe",
            "ring",
            "micro",
            "wordcount",
            "rill",
            "threads",
            "tokio",
            "sequential",
            "mimalloc",
            "system-alloc",
        ] {
            assert!(help.contains(word), "top-level help lacks {word}");
        }
        let mut cmd = Cli::command();
        let pipe = cmd.find_subcommand_mut("pipe").unwrap();
        let help = pipe.render_long_help().to_string();
        for flag in [
            "--depth",
            "--messages",
            "--placement",
            "--workers",
            "--engine",
            "--capacity",
            "--repeat",
            "--json",
            "--monitor",
            "--logs",
            "--mapping",
            "--work",
            "--slow",
            "calibrated",
            "wins over it",
        ] {
            assert!(help.contains(flag), "pipe help lacks {flag}");
        }
        let wc = cmd.find_subcommand_mut("wordcount").unwrap();
        let help = wc.render_long_help().to_string();
        for flag in [
            "--input",
            "--bytes",
            "--seed",
            "--batch",
            "--counters",
            "--chunk",
            "--capacity",
            "--mapping",
            "--workers",
            "--engine",
            "--repeat",
            "--json",
            "--monitor",
            "--logs",
        ] {
            assert!(help.contains(flag), "wordcount help lacks {flag}");
        }
    }
}
