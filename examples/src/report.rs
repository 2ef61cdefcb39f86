//! Reporting runs: one JSON object per run, or a table per benchmark with the
//! median, min and max over the repeats and each engine's ratio to rill.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use crate::apps::{AppFigures, AppOpts, AppRun, RunFigures};
pub use crate::bench::{allocator, set_allocator};
use crate::bench::{Figures, Measurement, Params};
use crate::cli::Command;
use crate::engines::{Engine, Job};
use crate::mapping::AutoFigures;
use crate::table::Table;

/// One run of one job on one engine.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The job.
    pub job: Job,
    /// The engine it ran on.
    pub engine: Engine,
    /// Index of the run among the repeats, from 0.
    pub run: u32,
    /// The measurement, or the error's text.
    pub result: Result<Measurement, String>,
}

/// The figure a measurement is reported by: ns per operation, for `idle_cpu`
/// the share of one core in percent, and for the word count and the sieve
/// the wall time in milliseconds.
fn figure(job: &Job, m: &Measurement) -> Option<f64> {
    job.bench().figure(m)
}

fn unit(job: &Job) -> &'static str {
    job.bench().unit()
}

/// A one-line summary of a run for progress output.
pub fn short_result(job: &Job, result: &Result<Measurement, String>) -> String {
    match result {
        Err(e) => format!("error: {e}"),
        Ok(m) => match figure(job, m) {
            Some(f) => format!("{f:.1} {} ({:.3} s)", unit(job), m.wall.as_secs_f64()),
            None => format!("({:.3} s)", m.wall.as_secs_f64()),
        },
    }
}

/// One run: a benchmark on an engine ([`Record::of`]) or an application
/// on rill ([`Record::of_app`]). It is the one serialisable record of a
/// run: what `--json` writes, one object a line, and what `rill-bench
/// all` keeps of every run in results.json; the tables and the suite's
/// page show medians over the runs of a configuration ([`write_tables`],
/// `crate::suite`). A run that failed has `verified: false` and `error`
/// (an application whose checks failed: `problems`) instead of its
/// figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// `pipe`, `ring`, `micro`, `wordcount` or `sieve`; or the
    /// application: `des`, `mc`, `rt` or `ant`.
    pub bench: &'static str,
    /// The engine of a benchmark's run (an application runs on rill and
    /// has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    /// Index of the run among the repeats, from 0.
    pub run: u32,
    /// The global allocator.
    pub allocator: &'static str,
    /// The parameters (an application's: `workers`, `mapping`, `monitor`
    /// and `logs`).
    #[serde(flatten)]
    pub params: Params,
    /// Operations timed (a benchmark's run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<u64>,
    /// Wall time of the timed part (an application: of the network's run),
    /// in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<f64>,
    /// Wall time per operation (a benchmark's run; null without
    /// operations: `idle_cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_op: Option<Option<f64>>,
    /// Whether the run ran and its result checked out.
    pub verified: bool,
    /// Why the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An application's checks that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<String>>,
    /// What the kind of run reports beside its time, once it ran.
    #[serde(flatten)]
    pub details: Option<Details>,
}

/// The figures a run reports beside its time, by kind of run (flattened
/// into its [`Record`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Details {
    /// A benchmark on an engine: the engine's and the benchmark's figures.
    Bench(Figures),
    /// An application.
    App(AppDetails),
}

/// An application run's figures: its own, the plan's under `--mapping
/// auto`, and the runtime's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AppDetails {
    /// The application's figures (`bytes`, `call_price`, `checksum`,
    /// `best_cost`...), once it has them.
    #[serde(flatten)]
    pub figures: Option<AppFigures>,
    /// The pilot's and the plan's, under `--mapping auto`.
    #[serde(flatten)]
    pub auto: Option<AutoFigures>,
    /// The runtime's statistics and, monitored, what the logs say.
    #[serde(flatten)]
    pub runtime: RunFigures,
}

impl Record {
    /// The record of a benchmark's run `o`: `bench`, `engine`, `run`,
    /// `allocator`, the job's parameters (`workers`, `placement`, `depth`,
    /// `messages`, `size`, `hops`, `capacity`, `row`, `batch`, `counters`,
    /// `primes`... as they apply), then `ops`, `wall_ms`, `ns_per_op` (null
    /// for `idle_cpu`, which has `cpu_share` instead; per word for the word
    /// count, per prime for the sieve), `verified` and the engine's
    /// figures. A parameter the command line gave wins over the engine's
    /// figure of the same name.
    pub fn of(o: &Outcome) -> Record {
        let mut r = Record::new(o.job.name(), o.run, o.job.bench().params());
        r.engine = Some(o.engine);
        r.verified = o.result.is_ok();
        match &o.result {
            Ok(m) => {
                let mut f = m.figures.clone();
                if r.params.mapping.is_some() {
                    f.mapping = None;
                }
                if r.params.monitor.is_some() {
                    f.monitor = None;
                }
                r.details = Some(Details::Bench(f));
                r.ops = Some(m.ops);
                r.wall_ms = Some(m.wall.as_secs_f64() * 1e3);
                r.ns_per_op = Some(m.ns_per_op());
            }
            Err(e) => r.error = Some(e.clone()),
        }
        r
    }

    /// The record of run `run` of application `bench` under `opts`:
    /// `bench`, `workers`, `mapping`, `monitor`, `logs` (when given),
    /// `run`, `allocator`, `wall_ms`, `verified` (and `problems` when not),
    /// the application's figures, the plan's under `--mapping auto`, and
    /// the runtime's ([`RunFigures`]); a run that could not finish has
    /// `error` instead of the figures.
    pub fn of_app(
        bench: &'static str,
        opts: &AppOpts,
        run: u32,
        result: &Result<AppRun, String>,
    ) -> Record {
        let params = Params {
            workers: Some(opts.workers),
            mapping: Some(opts.mapping.name()),
            monitor: Some(opts.monitor.to_string()),
            logs: opts.logs.clone(),
            ..Params::default()
        };
        let mut r = Record::new(bench, run, params);
        match result {
            Ok(a) => {
                r.wall_ms = Some(a.wall.as_secs_f64() * 1e3);
                r.verified = a.verified;
                r.problems = (!a.verified).then(|| a.problems.clone());
                r.details = Some(Details::App(AppDetails {
                    figures: a.figures.clone(),
                    auto: a.auto.clone(),
                    runtime: RunFigures::of(a),
                }));
            }
            Err(e) => r.error = Some(e.clone()),
        }
        r
    }

    /// A record of run `run` of `bench` with `params` and nothing measured.
    fn new(bench: &'static str, run: u32, params: Params) -> Record {
        Record {
            bench,
            engine: None,
            run,
            allocator: allocator(),
            params,
            ops: None,
            wall_ms: None,
            ns_per_op: None,
            verified: false,
            error: None,
            problems: None,
            details: None,
        }
    }

    /// The record as one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a record serialises")
    }
}

/// The JSON object of one run ([`Record::of`]).
pub fn json_line(o: &Outcome) -> Value {
    serde_json::to_value(Record::of(o)).expect("a record serialises")
}

/// Median, min and max of some figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// The median (the mean of the two middle values for an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Stats {
    /// Stats of `values`, or `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

/// The table row of one engine for one job: its stats, or the first error.
fn engine_cell(job: &Job, engine: Engine, outcomes: &[Outcome]) -> Result<Stats, String> {
    let mine: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.engine == engine && o.job.is(job))
        .collect();
    let failed: Vec<&String> = mine
        .iter()
        .filter_map(|o| o.result.as_ref().err())
        .collect();
    if let Some(first) = failed.first() {
        return Err(if failed.len() == mine.len() {
            (*first).clone()
        } else {
            format!("{first} ({} of {} runs failed)", failed.len(), mine.len())
        });
    }
    let figures: Vec<f64> = mine
        .iter()
        .filter_map(|o| o.result.as_ref().ok().and_then(|m| figure(job, m)))
        .collect();
    Stats::of(&figures).ok_or_else(|| "no figure measured".to_string())
}

fn fmt_figure(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// The ratio column: `engine/rill = 3.2x`, or why there is none.
fn ratio(
    engine: Engine,
    mine: &Result<Stats, String>,
    rill: Option<&Result<Stats, String>>,
) -> String {
    if is_rill(engine) {
        return "-".to_string();
    }
    let label = format!("{engine}/rill");
    match (mine, rill) {
        (Ok(s), Some(Ok(r))) if r.median > 0.0 => format!("{label} = {:.2}x", s.median / r.median),
        (_, None) => String::new(),
        _ => format!("{label} = n/a"),
    }
}

/// Whether `engine` is rill, the engine the others are compared with.
pub fn is_rill(engine: Engine) -> bool {
    engine.name() == "rill"
}

/// Writes the table of a command's jobs (one pipe, ring or word count, or
/// every micro row): its title, then one row per engine (and micro row) with
/// median, min and max over the repeats and the ratio to rill, or the error.
pub fn write_tables(
    out: &mut dyn Write,
    command: &Command,
    jobs: &[Job],
    engines: &[Engine],
    outcomes: &[Outcome],
) -> io::Result<()> {
    let repeat = command.run_args().map_or(1, |c| c.repeat);
    let micro = matches!(command, Command::Micro(_));
    if let Some(first) = jobs.first() {
        writeln!(
            out,
            "{}  ({repeat} run{} per engine, allocator {})",
            first.bench().title(),
            if repeat == 1 { "" } else { "s" },
            allocator()
        )?;
    }
    let mut head = vec!["engine", "unit", "median", "min", "max", "vs rill"];
    if micro {
        head.insert(0, "row");
    }
    let text_cols: &[usize] = if micro { &[0, 1, 6] } else { &[0, 5] };
    let mut table = Table::plain(head).left(text_cols);
    for job in jobs {
        let cells: Vec<(Engine, Result<Stats, String>)> = engines
            .iter()
            .map(|&e| (e, engine_cell(job, e, outcomes)))
            .collect();
        let rill = cells.iter().find(|(e, _)| is_rill(*e)).map(|(_, c)| c);
        for (engine, cell) in &cells {
            let mut row: Vec<String> = if micro {
                job.bench()
                    .params()
                    .row
                    .into_iter()
                    .map(String::from)
                    .collect()
            } else {
                Vec::new()
            };
            row.extend([engine.name().to_string(), unit(job).to_string()]);
            match cell {
                Ok(s) => row.extend([
                    fmt_figure(s.median),
                    fmt_figure(s.min),
                    fmt_figure(s.max),
                    ratio(*engine, cell, rill),
                ]),
                Err(e) => row.extend(["-".into(), "-".into(), "-".into(), format!("error: {e}")]),
            }
            table.row(row);
        }
    }
    write!(out, "{table}")?;
    // Runs under `--mapping auto` (the word count's rill row): their pilots
    // and the files planned, which the table's wall time leaves out.
    for job in jobs {
        let auto: Vec<&AutoFigures> = outcomes
            .iter()
            .filter(|o| o.job.is(job))
            .filter_map(|o| o.result.as_ref().ok())
            .filter_map(|m| m.figures.auto.as_ref())
            .collect();
        let stats =
            |k: fn(&AutoFigures) -> f64| Stats::of(&auto.iter().map(|a| k(a)).collect::<Vec<_>>());
        if let (Some(pilot), Some(total), Some(last)) =
            (stats(|a| a.pilot_ms), stats(|a| a.total_ms), auto.last())
        {
            writeln!(
                out,
                "rill mapping auto: pilot {} ({}) median {:.1} ms, wall + pilot median {:.1} ms (min {:.1}, max {:.1}); mapping file {}",
                last.pilot_size,
                if auto.len() == 1 { "one run".to_string() } else { format!("{} runs", auto.len()) },
                pilot.median,
                total.median,
                total.min,
                total.max,
                last.mapping_file,
            )?;
        }
    }
    Ok(())
}

/// Whether the job's rill run may cross workers (see
/// [`crate::engines::Bench::crosses_workers`]).
pub fn crosses_workers(job: &Job) -> bool {
    job.bench().crosses_workers()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::BenchOpts;
    use crate::bench::{MicroParams, MicroRow, PipeParams, RingParams};
    use crate::engines::Engine::{Rill, Threads, Tokio};
    use std::time::Duration;

    fn pipe_job() -> Job {
        Job::new(PipeParams {
            opts: BenchOpts::on(2),
            depth: 4,
            messages: 10,
            ..PipeParams::default()
        })
    }

    #[test]
    fn stats() {
        assert_eq!(Stats::of(&[]), None);
        let s = Stats::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Stats::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
    }

    #[test]
    fn json_line_has_required_keys() {
        let o = Outcome {
            job: pipe_job(),
            engine: Threads,
            run: 2,
            result: Ok(Measurement::new(Duration::from_millis(3), 30).with(|f| f.threads = Some(4))),
        };
        let v = json_line(&o);
        for key in [
            "bench",
            "engine",
            "workers",
            "placement",
            "wall_ms",
            "ns_per_op",
            "depth",
            "messages",
            "capacity",
            "run",
            "verified",
            "ops",
            "threads",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {v}");
        }
        assert_eq!(v["bench"], "pipe");
        assert_eq!(v["engine"], "threads");
        assert_eq!(v["placement"], "rr");
        assert_eq!(v["run"], 2);
        assert_eq!(v["verified"], true);
        assert_eq!(v["wall_ms"], 3.0);
        assert_eq!(v["ns_per_op"], 100_000.0);
        assert!(v.get("monitor").is_none());
        // One line.
        assert!(!v.to_string().contains('\n'));
    }

    #[test]
    fn json_line_for_ring_micro_and_errors() {
        let ring = Outcome {
            job: Job::new(RingParams::default()),
            engine: Tokio,
            run: 0,
            result: Ok(Measurement::new(Duration::from_millis(1), 1000)),
        };
        let v = json_line(&ring);
        for key in [
            "size",
            "hops",
            "capacity",
            "workers",
            "placement",
            "ns_per_op",
        ] {
            assert!(v.get(key).is_some(), "missing {key} in {v}");
        }
        let idle = Outcome {
            job: Job::new(MicroParams::new(MicroRow::IdleCpu, 8)),
            engine: Threads,
            run: 0,
            result: Ok(
                Measurement::new(Duration::from_millis(50), 0).with(|f| f.cpu_share = Some(0.01))
            ),
        };
        let v = json_line(&idle);
        assert_eq!(v["row"], "idle_cpu");
        assert_eq!(v["workers"], 1);
        assert_eq!(v["ns_per_op"], Value::Null);
        assert_eq!(v["cpu_share"], 0.01);
        let failed = Outcome {
            job: pipe_job(),
            engine: Rill,
            run: 0,
            result: Err("rill engine not wired yet".into()),
        };
        let v = json_line(&failed);
        assert_eq!(v["verified"], false);
        assert_eq!(v["error"], "rill engine not wired yet");
        assert_eq!(v["engine"], "rill");
    }

    #[test]
    fn ratios() {
        let s = |m| {
            Ok(Stats {
                median: m,
                min: m,
                max: m,
            })
        };
        assert_eq!(
            ratio(Threads, &s(30.0), Some(&s(10.0))),
            "threads/rill = 3.00x"
        );
        assert_eq!(ratio(Rill, &s(10.0), Some(&s(10.0))), "-");
        assert_eq!(
            ratio(Tokio, &s(10.0), Some(&Err("x".into()))),
            "tokio/rill = n/a"
        );
        assert_eq!(ratio(Tokio, &s(10.0), None), "");
    }
}
