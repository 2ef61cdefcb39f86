//! The `rill-bench` command line (clap derive). A benchmark's subcommand is
//! its parameters ([`Peer`]: a benchmark's own `clap::Args`, in its file)
//! and how to run them ([`RunArgs`]); an application's is its
//! configuration and the options every application takes ([`AppArgs`]).
//! [`Command::bench`] and the application command's `parts` are the
//! registrations: a variant and its line; [`Command::jobs`] and
//! [`AppCommand::app`] hand out what they ask for, checked.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{value_parser, Args, Parser, Subcommand};
use rill::MonitorFlags;

use crate::ab;
use crate::apps::ant::AntConfig;
use crate::apps::auto::{MAX_PILOT_DIVISOR, PILOT_DIVISOR, PILOT_MONITOR};
use crate::apps::des::DesArgs;
use crate::apps::mc::McConfig;
use crate::apps::rt::RtConfig;
use crate::apps::{self, AppConfig, AppOpts, MappingChoice};
use crate::bench::{pilot_monitor, usize_from, ParamError, PipeParams, RingParams, SieveParams};
use crate::engines::{Engine, Job, Jobs};
use crate::micro::MicroArgs;
use crate::registry;
use crate::wordcount_bench::WordcountArgs;

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
    Pipe(Peer<PipeParams>),
    /// Token ring: SIZE tasks in a ring of bounded channels pass one token for HOPS
    /// hops in total; ns/op = wall time / HOPS.
    Ring(Peer<RingParams>),
    /// Micro rows, each a runtime primitive timed alone: yield, spawn, handoff,
    /// cross_worker_roundtrip (ns per operation) and idle_cpu (share of a core).
    Micro(Peer<MicroArgs>),
    /// Word count: a source sends the text in chunks, a splitter cuts them
    /// into words and sends batches to K counters (each word to the counter
    /// its hash names), a merger adds up the counters' counts. Every run is
    /// checked against a sequential count; engine `sequential` times that
    /// loop as a row of its own. The table shows wall milliseconds.
    Wordcount(Peer<WordcountArgs>),
    /// Prime sieve: a generator writes 2, 3, 4, ... into a chain of filter
    /// tasks; each filter takes the first number that reaches it as its
    /// prime, reports it to a sink and drops its multiples from then on,
    /// and the last filter spawns the next (from inside the task) when a
    /// number first passes it, so the chain grows while it runs, up to
    /// PRIMES filters. The generator stops at n (ln n + ln ln n), a bound
    /// of the n-th prime, and the streams end down the chain. Every run is
    /// checked against a sequential sieve. The table shows wall
    /// milliseconds.
    Sieve(Peer<SieveParams>),
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

/// A benchmark's subcommand: its parameters, and how rill-bench runs it.
#[derive(Debug, Args)]
pub struct Peer<P: Args> {
    /// The benchmark's parameters (its own arguments, and the workers and
    /// monitoring every benchmark takes).
    #[command(flatten)]
    pub params: P,

    /// The engines, the repeats, the output.
    #[command(flatten)]
    pub run: RunArgs,
}

/// How rill-bench runs a benchmark: on which engines, how many times, and
/// what it prints.
#[derive(Debug, Args)]
pub struct RunArgs {
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
}

impl RunArgs {
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
    Des(AppArgs<DesArgs>),
    /// Monte Carlo European call and put under GBM: chains of step tasks that
    /// unfold at run time (serial replication); verified against Black-Scholes.
    Mc(AppArgs<McConfig>),
    /// Ray tracer: a dealer hands scenes to four solvers on demand, a collector
    /// orders the images; verified by the sequential checksum.
    Rt(AppArgs<RtConfig>),
    /// Ant colony for single-machine total weighted tardiness: a pool of ant
    /// tasks reduced in ant order each iteration; verified against the
    /// sequential colony.
    Ant(AppArgs<AntConfig>),
}

/// An application's subcommand: its configuration, and the options every
/// application takes.
#[derive(Clone, Debug, Args)]
pub struct AppArgs<C: Args> {
    /// The application's own arguments.
    #[command(flatten)]
    pub config: C,

    /// Options every application takes.
    #[command(flatten)]
    pub common: AppCommon,
}

impl AppCommand {
    /// The application's configuration and the options every application
    /// takes: the registration of every application (an application is
    /// its configuration, `clap::Args` and [`AppConfig`] in its own file, a
    /// variant of [`AppCommand`] and its line here).
    fn parts(&self) -> (&dyn AppConfig, &AppCommon) {
        match self {
            AppCommand::Des(a) => (&a.config, &a.common),
            AppCommand::Mc(a) => (&a.config, &a.common),
            AppCommand::Rt(a) => (&a.config, &a.common),
            AppCommand::Ant(a) => (&a.config, &a.common),
        }
    }

    /// `des`, `mc`, `rt` or `ant`.
    pub fn name(&self) -> &'static str {
        self.parts().0.name()
    }

    /// The options every application takes.
    pub fn common(&self) -> &AppCommon {
        self.parts().1
    }

    /// The application, its input made and its arguments checked; an error
    /// is an argument error (exit status 2).
    pub fn app(&self) -> Result<Box<dyn apps::App>, ParamError> {
        self.parts()
            .0
            .app()
            .map_err(|e| ParamError(format!("{e:#}")))
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
    /// The benchmark this subcommand runs beside its peers, as its jobs,
    /// and how to run them; `None` for the applications, `compare`, `all`
    /// and `ab`. The registration of every such benchmark: a benchmark is
    /// its parameters (`clap::Args` and [`Jobs`], in its own file), a
    /// variant of [`Command`] and its line here.
    pub fn bench(&self) -> Option<(&dyn Jobs, &RunArgs)> {
        match self {
            Command::Pipe(a) => Some((&a.params, &a.run)),
            Command::Ring(a) => Some((&a.params, &a.run)),
            Command::Micro(a) => Some((&a.params, &a.run)),
            Command::Wordcount(a) => Some((&a.params, &a.run)),
            Command::Sieve(a) => Some((&a.params, &a.run)),
            _ => None,
        }
    }

    /// The subcommand's name: `pipe`, `ring`, `micro`, `wordcount`, `sieve`,
    /// `des`, `mc`, `rt`, `ant`, `compare`, `all` or `ab`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::App(a) => a.name(),
            Command::Compare(_) => "compare",
            Command::All(_) => "all",
            Command::Ab(_) => "ab",
            c => c.bench().expect("a benchmark").0.name(),
        }
    }

    /// How a benchmark's runs are made (`--engine`, `--repeat`, `--json`);
    /// `None` for the applications, `compare`, `all` and `ab`.
    pub fn run_args(&self) -> Option<&RunArgs> {
        self.bench().map(|(_, run)| run)
    }

    /// The engines `--engine` asks for: `all` is every engine the benchmark
    /// has (wordcount adds `sequential`); naming an engine the benchmark
    /// does not have is an error.
    pub fn engines(&self) -> Result<Vec<Engine>, ParamError> {
        let Some((bench, run)) = self.bench() else {
            return Ok(Vec::new());
        };
        let has = bench.engines();
        let chosen = run.engines_from(has);
        if let Some(e) = chosen.iter().find(|e| !has.contains(e)) {
            let names: Vec<&str> = has.iter().map(|e| e.name()).collect();
            return Err(ParamError(format!(
                "--engine {e}: {} has no {e} engine; it runs on {}",
                self.name(),
                names.join(", ")
            )));
        }
        Ok(chosen)
    }

    /// The benchmark jobs this command asks for, validated (none for the
    /// applications, `compare`, `all` and `ab`).
    pub fn jobs(&self) -> Result<Vec<Job>, ParamError> {
        self.bench()
            .map_or(Ok(Vec::new()), |(bench, _)| bench.jobs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BenchOpts, MicroRow, Placement, WordcountParams};
    use crate::kernels::wordcount::TextSource;
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
        assert_eq!(
            (a.params.depth, a.params.messages, a.params.capacity),
            (100, 100_000, 16)
        );
        let jobs = cli.command.jobs().unwrap();
        let p: &PipeParams = jobs[0].params().expect("not pipe");
        assert_eq!(
            *p,
            PipeParams {
                opts: BenchOpts::on(p.opts.workers),
                ..PipeParams::default()
            }
        );
        assert_eq!(a.params.placement, Placement::Rr);
        assert_eq!(names(&a.run.engines()), ["rill", "threads", "tokio"]);
        assert_eq!(a.run.repeat, 1);
        assert!(!a.run.json);
        assert!(a.params.opts.workers >= 1);
        assert_eq!(a.params.opts.monitor, None);
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
        let p: &PipeParams = jobs[0].params().expect("not pipe");
        assert_eq!(
            *p,
            PipeParams {
                opts: BenchOpts {
                    workers: 3,
                    monitor: Some(MonitorFlags::FULL),
                    logs: Some("/tmp/x".into())
                },
                depth: 4,
                messages: 10,
                capacity: 2,
                placement: Placement::Parts,
                ..PipeParams::default()
            }
        );
        let c = cli.command.run_args().unwrap();
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
        let jobs = cli.command.jobs().unwrap();
        let p: &PipeParams = jobs[0].params().expect("not pipe");
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
        let jobs = cli.command.jobs().unwrap();
        let r: &RingParams = jobs[0].params().expect("not ring");
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
                .run_args()
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
            names(&cli.command.run_args().unwrap().engines()),
            ["rill", "tokio"]
        );
    }

    #[test]
    fn ring_and_micro_defaults() {
        let cli = parse(&["ring"]).unwrap();
        let jobs = cli.command.jobs().unwrap();
        let p: &RingParams = jobs[0].params().expect("not ring");
        assert_eq!((p.size, p.hops, p.capacity), (100, 50_000, 16));
        assert_eq!(
            *p,
            RingParams {
                opts: BenchOpts::on(p.opts.workers),
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
            a.params.rows(),
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
        let jobs = cli.command.jobs().unwrap();
        let p: &WordcountParams = jobs[0].params().expect("not wordcount");
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
        let jobs = cli.command.jobs().unwrap();
        let p: &WordcountParams = jobs[0].params().expect("not wordcount");
        assert_eq!(
            (p.batch, p.counters, p.chunk, p.capacity, p.opts.workers),
            (1, 2, 64, 3, 2)
        );
        assert_eq!(p.mapping, MappingChoice::Manual);
        assert_eq!(p.corpus.len(), 500);
        // Only the word count has a sequential engine.
        let cli = parse(&["ring", "--engine", "sequential"]).unwrap();
        let e = cli.command.engines().unwrap_err();
        assert!(e.to_string().contains("has no sequential engine"), "{e}");
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
        let jobs = cli.command.jobs().unwrap();
        let p: &SieveParams = jobs[0].params().expect("not sieve");
        assert_eq!(
            *p,
            SieveParams {
                opts: BenchOpts::on(p.opts.workers),
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
        let jobs = cli.command.jobs().unwrap();
        let p: &SieveParams = jobs[0].params().expect("not sieve");
        assert_eq!(
            (p.primes, p.capacity, &p.mapping, p.opts.workers),
            (100, 1, &MappingChoice::Parts, 2)
        );
        let c = cli.command.run_args().unwrap();
        assert_eq!(names(&c.engines()), ["tokio", "rill"]);
        assert_eq!((c.repeat, c.json), (3, true));
        let cli = parse(&["sieve", "--mapping", "manual"]).unwrap();
        let jobs = cli.command.jobs().unwrap();
        let p: &SieveParams = jobs[0].params().expect("not sieve");
        assert_eq!(p.mapping, MappingChoice::Manual);
        let e = parse(&["sieve", "--engine", "sequential"])
            .unwrap()
            .command
            .engines()
            .unwrap_err();
        assert!(e.to_string().contains("has no sequential engine"), "{e}");
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
