//! The proposed mapping of a run across ranks (`map --ranks`): over the
//! run's ranks and its largest rank's workers, the plan's what-if
//! estimate, the costs of crossing workers and ranks (measured or
//! assumed), the loads per place and the mapping file.

use std::fmt::Write as _;

use super::html::{self, esc, sh, Cell, Row};
use super::Ctx;
use crate::plan::rankmap::{plan_rank_mapping, RankMapPlan};

fn plan_section(ctx: &Ctx<'_>, plan: &RankMapPlan) -> String {
    let run = ctx.run;
    let (r, w) = (plan.ranks, plan.workers);
    let mut o = String::new();
    let _ = writeln!(o, "<h3>On {r} rank(s) of {w} worker(s)</h3>");
    let cut = |c: &crate::plan::rankmap::LevelCut| {
        format!(
            "{} stream(s) between ranks ({} waits), {} between workers of a rank ({} waits)",
            c.rank_streams, c.rank_waits, c.worker_streams, c.worker_waits
        )
    };
    let rows = vec![
        Row::from(vec![
            Cell::text("observed run (its span)"),
            Cell::num(html::ns(plan.observed_span_ns)),
            Cell::text(cut(&plan.observed_cut)),
        ]),
        Row::from(vec![
            Cell::text("predicted, observed mapping"),
            Cell::num(html::ns(plan.observed_mapping_ns)),
            Cell::text(""),
        ]),
        Row::from(vec![
            Cell::html("<b>predicted, this mapping</b>"),
            Cell::num(html::ns(plan.proposed_ns)),
            Cell::text(format!(
                "{}{}",
                cut(&plan.proposed_cut),
                if plan.kept_observed {
                    "; the observed mapping, kept: no mapping found is predicted faster"
                } else {
                    ""
                }
            )),
        ]),
    ];
    o.push_str(&html::table(&["run", "time", ""], &rows));
    o.push_str(&html::note(&format!(
        "Model: time = max over places (rank, worker) of (busy time of its tasks + c_w × waits \
         on its streams to other workers of its rank + c_r × waits on its streams to other \
         ranks). c_w = {} per wait, {}; c_r = {} per wait, {}. It ignores dependencies and the \
         busy time crossing adds.",
        crate::render::number::fmt_ns(plan.worker_cost.cost_ns),
        plan.worker_cost.basis,
        crate::render::number::fmt_ns(plan.rank_cost.cost_ns),
        plan.rank_cost.basis
    )));
    let rows: Vec<Row> = plan
        .loads
        .iter()
        .map(|l| {
            Row::from(vec![
                Cell::num(format!("{}:{}", l.rank, l.worker)),
                Cell::num(html::ns(l.busy_ns)),
                Cell::num(html::ns(l.crossing_ns)),
                Cell::num(l.names.to_string()),
            ])
        })
        .collect();
    let n = ctx.cut(rows.len());
    o.push_str(&html::table(
        &["rank:worker", "busy", "crossing", "task names"],
        &rows[..n],
    ));
    o.push_str(&ctx.more(
        rows.len(),
        "places",
        "rill-mon map DIR --ranks R --workers W -o FILE",
    ));
    let file = plan.to_file();
    let name = format!("proposed-{r}x{w}.map");
    let dir = run.dir.display().to_string();
    let _ = writeln!(
        o,
        "<p>The mapping file<span class=\"download\"> (<a download=\"{}\" \
         href=\"data:text/plain;charset=utf-8,{}\">save it</a>)</span>; the command below \
         writes the same file:</p>",
        esc(&name),
        html::percent_encode(&file)
    );
    let _ = writeln!(o, "<pre>{}</pre>", esc(&file));
    o.push_str(&html::command(&format!(
        "rill-mon map {} --ranks {r} --workers {w} -o {name}",
        sh(&dir)
    )));
    o
}

/// The section's body for a run across ranks.
pub(super) fn body(ctx: &Ctx<'_>, ranks: &crate::load::ranks::model::Ranks) -> String {
    let mut o = String::new();
    o.push_str(&html::para(
        "A partition of the observed task graph over ranks, then over each rank's workers, \
         that balances busy time and keeps streams with many waits on one rank (and one \
         worker), with a what-if estimate of the run time.",
    ));
    let r = ranks.ranks.len().max(1);
    let w = ranks
        .ranks
        .iter()
        .map(|i| i.workers as usize)
        .max()
        .unwrap_or(1)
        .max(1);
    match plan_rank_mapping(ctx.run, r, w) {
        Ok(plan) => o.push_str(&plan_section(ctx, &plan)),
        Err(e) => o.push_str(&html::missing(&format!(
            "a mapping on {r} rank(s) of {w} worker(s): {e:#}"
        ))),
    }
    o
}
