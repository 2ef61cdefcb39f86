//! rill-monitor: reads the binary monitoring logs a rill run writes (one per
//! worker, `worker-{id}.rlog`) and turns them into a summary (per-worker
//! busy/waiting time, per-task and per-stream totals, throughput, per-input
//! latency and jitter), an SVG timeline and a trace for Perfetto (its
//! protobuf format, or Chrome JSON for small runs); and explains
//! the run: who waited for whom ([`waits()`]), what held it back
//! ([`bottleneck()`]) and where its tasks should run ([`plan_mapping`]);
//! and compares two runs ([`diff()`]); [`evolution()`] draws how the shares
//! of task and worker states change over the run; [`report_html`] puts all
//! of it on one self-contained HTML page. [`watch`] follows a run while it
//! writes its logs.
//!
//! ```no_run
//! let run = rill_monitor::load_run(std::path::Path::new("logs"))?;
//! println!("{}", rill_monitor::summarize(&run).to_text());
//! let svg = rill_monitor::timeline_svg(&run, &rill_monitor::TimelineOptions::default());
//! let trace = rill_monitor::chrome_trace(&run);
//! # let _ = (svg, trace);
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! A directory of `rank-R/` directories, each one rank's logs and its
//! `rank.json` (a run under MPI), loads as one run: clocks aligned to rank
//! 0's, workers, tasks and streams renumbered apart, the halves of each
//! cross-rank stream joined ([`Ranks`], `load/ranks/`);
//! [`plan_rank_mapping`] plans over ranks and workers.
//!
//! [`load_run`] reads each file once (in parallel) into memory and keeps
//! totals, not decoded records; the other analyses are streaming passes over
//! the bytes with the allocation-free [`scan::Scanner`].
//!
//! # What lives where
//!
//! The crate is in layers, lowest first; each layer's modules hold:
//!
//! | layer | modules | what |
//! |-------|---------|------|
//! | `render/` | `number`, `table`, `prose`, `svg` | presentation that knows nothing of a run: durations and axis numbers as text ([`fmt_ns`]), plain-text tables, prose wrapped to a width, SVG escaping ([`xml_escape`]) and task colours ([`task_colour`]) |
//! | `load/` | `scan`, `ids`, `bytes`, `chunks`, `groups`, `raw_latency`, `samples`, `ranks/`, `worker_log`, `model`, `files`, `pool`, `aggregate`, `scan_file`, `merge_files`, `sampled`, `open` | a run's logs read once: the record [`scan`]ner, id maps, a log's bytes and page release, the chunk index, task groups ([`group_of`]), the data model ([`RunLog`], [`WorkerLog`], [`TaskInfo`], [`StreamInfo`], [`Sampled`], [`Ranks`] and the latency replay's raw result), finding and reading the files, a thread pool, the per-file scan and its totals, the merge of the scans, sample mode's estimates, runs across ranks, and the loader ([`LoadOptions`]) that hands each log's periods to a pass beside its scans |
//! | `replay/` | `merge`, `wakeups`, `grid`, `activity_model`, `activity`, `sampled_activity`, `latency_feed`, `latency`, `chunky_logs` (tests), `load_run`, `crossing` | passes over all workers' periods in time order: the merge, wake-ups, the window grid, the activity (busy, ready, blocked time) of tasks, streams and workers, the latency replay, cross-rank delays ([`CrossingDelays`]), and [`load_run`] (the loader with the latency replay beside it) |
//! | `summary/` | `latency`, `outlier`, `model`, `summarize`, `text` | [`summarize`]: the totals, throughput, latency and jitter ([`Summary`]), and a task group's outlier ([`GroupOutlier`]) |
//! | `trace/` | `detail`, `protobuf`, `perfetto/` (`writer`, `layout`, `pass`), `chrome`, `timeline` | pictures of the run over time: the detail levels, the Perfetto trace ([`write_perfetto_trace`]: the wire format, its writer, the track layout, the pass), Chrome JSON ([`chrome_trace`]) and the SVG timeline ([`timeline_svg`]) |
//! | `plan/` | `partition`, `mapfile`, `planner`, `rankmap` | where tasks should run: the graph partition ([`partition`]), the mapping file ([`MapPlan`]), the planner ([`plan_mapping`]) and the planner over ranks ([`plan_rank_mapping`]) |
//! | `explain/` | `waits`, `findings`, `task_graph`, `placement`, `verdict`, `bottleneck` | who waited for whom ([`waits()`]) and what held the run back ([`bottleneck()`]): its findings, the task graph its rules read, the placement rule, the words of the verdict, the window rules |
//! | `diff` | | two runs compared ([`diff()`]) |
//! | `evolution/` | | the shares of task and worker states over the run ([`evolution()`]) |
//! | `report/` | | all of it on one HTML page ([`report_html`]) |
//! | [`watch`] | | a run followed while it writes its logs |
//!
//! Imports go one way: a module imports only layers below its own (in this
//! table's order) and modules of its own layer; within a layer, no two
//! modules import each other, directly or through others (there is no
//! import circle; `scripts/import_cycles.py monitor/src` measures it). The
//! model does not name the analyses: the loader feeds a pass beside its
//! scans through a trait (`load::open::Beside`), and what that pass leaves
//! on the run (`load::raw_latency`) is data that `summary/` reads. Modules
//! import each other by their own paths, not through this crate's root.

#![warn(missing_docs)]

mod diff;
mod evolution;
mod explain;
mod load;
mod plan;
mod render;
mod replay;
mod report;
mod summary;
mod trace;
pub mod watch;

pub use load::scan;

pub use diff::{
    diff, Change, DiffSide, GroupDiff, PairDiff, Ranked, RunDiff, TotalDiff, Unmatched, WorkerDiff,
};
pub use evolution::{
    evolution, Evolution, EvolutionOptions, EvolutionSampling, EvolutionSource, GroupSeries,
    Series, WorkerSeries, MAX_EVOLUTION_BUCKETS, MAX_EVOLUTION_GROUPS,
};
pub use explain::bottleneck::bottleneck;
pub use explain::findings::{BottleneckOptions, Bottlenecks, Finding};
pub use explain::waits::{waits, waits_by_pass, PairWaits, StreamWaits, Waits, WorkerPairWaits};
pub use load::groups::group_of;
pub use load::model::{RunLog, StreamInfo, TaskInfo};
pub use load::open::{LoadOptions, PROGRESS_THRESHOLD};
pub use load::ranks::is_run_across_ranks;
pub use load::ranks::meta::LocalSide;
pub use load::ranks::model::{CrossStream, RankInfo, Ranks};
pub use load::samples::{Sampled, SamplerCheck, WorkerSamples, SAMPLER_FILE};
pub use load::worker_log::{LoggedTotals, WorkerLog, WorkerStats};
pub use plan::mapfile::{quote_name, Basis, Cut, Estimate, MapPlan, MappedTask, WorkerLoad};
pub use plan::partition::{
    evaluate, partition, partition_from, partition_from_within, partition_within, Evaluation,
    PartGraph, CUT_TOLERANCE,
};
pub use plan::planner::{
    plan_mapping, plan_mapping_by_pass, profile_planner, MAX_MAP_WORKERS, SHORT_SAMPLED_RUN_NS,
};
pub use plan::rankmap::{
    plan_rank_mapping, LevelCost, LevelCut, PlaceLoad, RankMapPlan, RankMappedTask,
    ASSUMED_WORKER_NS, MAX_MAP_PLACES, RANK_OVER_WORKER,
};
pub use render::number::fmt_ns;
pub use render::svg::{task_colour, xml_escape};
pub use replay::crossing::{CrossingDelays, Delays};
pub use replay::load_run::{load_run, load_run_with};
pub use report::{report_html, ReportOptions};
pub use summary::latency::{LatencyStats, LatencySummary, SinkLatency};
pub use summary::model::{
    GroupSummary, StreamSummary, Summary, TaskSummary, Throughput, WorkerSummary,
};
pub use summary::outlier::{group_outlier, GroupOutlier, OUTLIER_RATIO};
pub use summary::summarize::{end_state_name, summarize, summarize_grouped, summarize_totals};
pub use trace::chrome::{chrome_trace, write_chrome_trace, write_chrome_trace_window, TraceStats};
pub use trace::perfetto::{write_perfetto_trace, PerfettoOptions, PerfettoStats, MAX_BUCKETS};
pub use trace::timeline::{timeline_svg, TimelineOptions};
