//! The proposed mapping (`map`): for the run's worker count (and, for a run
//! on one worker, for two), the plan's what-if estimate against the
//! observed run, its per-worker loads, the mapping file and the commands to
//! write and use it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::html::{self, esc, sh, Cell, Row};
use super::Ctx;
use crate::load::model::RunLog;
use crate::plan::mapfile::MapPlan;
use crate::plan::planner::{plan_mapping, MAX_MAP_WORKERS};

/// The `rill-bench` application the run's task names point to (their most
/// common first path segment), if any.
fn app_of(run: &RunLog) -> Option<&'static str> {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for t in run.tasks.values() {
        if let Some(first) = t.name.as_deref().and_then(|n| n.split('/').next()) {
            *count.entry(first).or_default() += 1;
        }
    }
    let (first, _) = count.into_iter().max_by_key(|&(_, n)| n)?;
    Some(match first {
        "des" => "des",
        "mc" => "mc",
        "rt" => "rt",
        "ant" => "ant",
        "pipe" => "pipe",
        "ring" => "ring",
        "wc" => "wordcount",
        _ => return None,
    })
}

fn plan_section(ctx: &Ctx<'_>, plan: &MapPlan) -> String {
    let run = ctx.run;
    let e = &plan.estimate;
    let w = plan.workers;
    let mut o = String::new();
    let _ = writeln!(o, "<h3>On {w} worker(s)</h3>");
    let r = e.observed_mapping_ns as f64 / e.proposed_ns.max(1) as f64;
    let ratio = if r >= 1.005 {
        format!("predicted {r:.2}x faster than the observed mapping")
    } else if r <= 0.995 {
        format!("predicted {:.2}x slower than the observed mapping", 1.0 / r)
    } else {
        "predicted as fast as the observed mapping".to_owned()
    };
    let bound = if e.calibrated { "" } else { " (lower bound)" };
    let rows = vec![
        Row::from(vec![
            Cell::text("observed run (its span)"),
            Cell::num(html::ns(e.observed_span_ns)),
            Cell::text(format!(
                "{} stream(s) between workers, {} messages",
                e.observed_cut.streams, e.observed_cut.messages
            )),
        ]),
        Row::from(vec![
            Cell::text(format!("predicted, observed mapping{bound}")),
            Cell::num(html::ns(e.observed_mapping_ns)),
            Cell::text(""),
        ]),
        Row::from(vec![
            Cell::html(format!("<b>predicted, this mapping{}</b>", esc(bound))),
            Cell::num(html::ns(e.proposed_ns)),
            Cell::text(format!(
                "{} stream(s) between workers, {} messages; {ratio}; {}",
                e.proposed_cut.streams,
                e.proposed_cut.messages,
                e.basis.describe()
            )),
        ]),
    ];
    o.push_str(&html::table(&["run", "time", ""], &rows));
    let cost = if e.calibrated {
        format!(
            "c_busy = {} of busy time per message across workers at each end, fitted to the busy \
             times of tasks of one group that cross in different proportions (taken out of the \
             busy times above); c = {} per message or wait across workers, calibrated so that \
             the model under the observed mapping gives the observed span",
            crate::render::number::fmt_ns(e.busy_crossing_cost_ns),
            crate::render::number::fmt_ns(e.crossing_cost_ns)
        )
    } else {
        "c = 0: the observed run left no time to put on crossings (or had none), so both \
         predictions are lower bounds"
            .to_owned()
    };
    let deps = if w > 1 {
        format!(
            " It ignores dependencies: a run serialised by its graph (a token ring) takes up \
             to {w}x longer than predicted. Read the two predictions as a comparison of \
             mappings under one model."
        )
    } else {
        String::new()
    };
    o.push_str(&html::note(&format!(
        "Model: time = max over workers of (busy time of its tasks + c_busy × messages + c × \
         traffic of its streams to other workers), traffic = messages + waits; {cost}.{deps}"
    )));
    let rows: Vec<Row> = plan
        .loads
        .iter()
        .map(|l| {
            Row::from(vec![
                Cell::num(l.worker.to_string()),
                Cell::num(html::ns(l.busy_ns)),
                Cell::num(html::ns(l.crossing_ns)),
                Cell::num(l.names.to_string()),
            ])
        })
        .collect();
    let n = ctx.cut(rows.len());
    o.push_str(&html::table(
        &[
            "worker",
            "busy",
            "crossing (c_busy × messages + c × traffic)",
            "task names",
        ],
        &rows[..n],
    ));
    o.push_str(&ctx.more(
        rows.len(),
        "workers",
        "rill-mon map DIR --workers W -o FILE",
    ));
    if plan.unnamed_tasks > 0 {
        o.push_str(&html::note(&format!(
            "{} unnamed task(s) cannot be listed: the runtime places them round-robin, and the \
             estimate puts them there.",
            plan.unnamed_tasks
        )));
    }
    // The plan's own cautions (the run's warnings are in the page's header).
    for warning in plan.warnings.iter().filter(|x| !run.warnings.contains(x)) {
        o.push_str(&html::caution(&format!("{warning}.")));
    }
    if w == 1 {
        o.push_str(&html::note(
            "On one worker every task runs on worker 0: no mapping file is needed.",
        ));
        return o;
    }
    let file = plan.to_file();
    let name = format!("proposed-{w}.map");
    let dir = run.dir.display().to_string();
    let app = app_of(run);
    let (how, cmd) = match app {
        Some(app) => (
            "the first command below writes the same file, the second runs the application \
             with it",
            format!(
                "rill-mon map {} --workers {w} -o {name}\nrill-bench {app} --workers {w} \
                 --mapping {name}",
                sh(&dir)
            ),
        ),
        None => (
            "the command below writes the same file; the program loads it into its runtime's \
             builder",
            format!(
                "rill-mon map {} --workers {w} -o {name}\n\n// in the program:\n\
                 let rt = rill::Runtime::builder()\n    .workers({w})\n    \
                 .mapping(rill::Mapping::Manual(rill::ManualTable::load(\"{name}\")?))\n    \
                 .build()?;",
                sh(&dir)
            ),
        ),
    };
    let _ = writeln!(
        o,
        "<p>The mapping file<span class=\"download\"> (<a download=\"{}\" \
         href=\"data:text/plain;charset=utf-8,{}\">save it</a>)</span>; {how}:</p>",
        esc(&name),
        html::percent_encode(&file)
    );
    let _ = writeln!(o, "<pre>{}</pre>", esc(&file));
    o.push_str(&html::command(&cmd));
    o
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let run = ctx.run;
    if let Some(ranks) = &run.ranks {
        return super::rankmapping::body(ctx, ranks);
    }
    let mut o = String::new();
    let w = run.worker_count as usize;
    if w == 0 || w > MAX_MAP_WORKERS {
        o.push_str(&html::missing(&format!(
            "a mapping: the logs announce {w} workers; `map` plans for 1 to {MAX_MAP_WORKERS}."
        )));
        return o;
    }
    o.push_str(&html::para(
        "A partition of the observed task graph (busy time per task name, messages and waits \
         per stream) that balances busy time and keeps heavy streams on one worker (of two \
         cuts predicted within 3% of each other, the one that cuts fewer streams), with a \
         what-if estimate of the run time.",
    ));
    if !ctx.periods() && !ctx.sampled() {
        o.push_str(&html::missing(
            "busy times: without periods (SCHEDULER flag) or samples every task weighs 0, so \
             the plan balances the number of names only.",
        ));
    } else if ctx.sampled() {
        o.push_str(&html::note(
            "Sample mode: the busy times are estimates from samples and the waits exact counts.",
        ));
    }
    let counts: Vec<usize> = if w == 1 { vec![1, 2] } else { vec![w] };
    for k in counts {
        match plan_mapping(run, k) {
            Ok(plan) => o.push_str(&plan_section(ctx, &plan)),
            Err(e) => {
                o.push_str(&html::missing(&format!(
                    "a mapping on {k} worker(s): {e:#}"
                )));
                break;
            }
        }
    }
    o
}
