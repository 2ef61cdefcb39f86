//! About the logs: the monitoring mode, the files, the problems found in
//! them, and the commands that go further.

use std::fmt::Write as _;

use super::html::{self, esc, Cell, Row};
use super::Ctx;

/// Warnings listed in full; the rest are counted.
const MAX_WARNINGS: usize = 100;

/// A run across ranks: each rank's directory, workers and clock.
fn ranks_table(r: &crate::load::ranks::model::Ranks) -> String {
    let rows: Vec<Row> = r
        .ranks
        .iter()
        .map(|i| {
            Row::from(vec![
                Cell::num(i.rank.to_string()),
                Cell::text(i.dir.display().to_string()),
                Cell::num(format!(
                    "{}..{}",
                    i.first_worker,
                    i.first_worker + i.workers.saturating_sub(1)
                )),
                Cell::num(format!("{} ns", i.clock_offset_ns)),
                Cell::num(
                    i.clock_residual_ns
                        .map_or_else(|| "-".to_owned(), |ns| format!("±{ns} ns")),
                ),
                Cell::text(if i.described {
                    "rank.json read"
                } else {
                    "no rank.json: clock taken as rank 0's"
                }),
            ])
        })
        .collect();
    let mut o = String::from("<h3>Ranks</h3>\n");
    o.push_str(&html::table(
        &[
            "rank",
            "directory",
            "workers",
            "clock offset",
            "residual",
            "",
        ],
        &rows,
    ));
    o.push_str(&html::note(
        "Each rank's times were moved onto rank 0's clock by its offset; rank R's task and \
         stream ids are R × the id stride + its own id, and the two halves of a cross-rank \
         stream are one stream (⇄).",
    ));
    o
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let run = ctx.run;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<p>Monitoring mode: {}.</p>",
        esc(&super::mode_line(run))
    );
    let n = ctx.cut(run.workers.len());
    let mut rows: Vec<Row> = run.workers[..n]
        .iter()
        .map(|w| {
            let end = match w.truncation() {
                Some(t) => t,
                None => w.end.to_string(),
            };
            Row::from(vec![
                Cell::text(w.file_name()),
                Cell::num(run.worker_name(w.worker)),
                Cell::num(w.valid_len.to_string()),
                Cell::num(w.stats.events.to_string()),
                Cell::text(end),
            ])
        })
        .collect();
    if let Some(sm) = &run.sampled {
        rows.push(Row::from(vec![
            Cell::text(crate::load::samples::SAMPLER_FILE),
            Cell::text("sampler"),
            Cell::num("-"),
            Cell::num(format!("{} windows", sm.windows.len())),
            Cell::text(""),
        ]));
    }
    o.push_str(&html::table(
        &["file", "worker", "bytes read", "events", "end"],
        &rows,
    ));
    o.push_str(&ctx.more(run.workers.len(), "logs", "rill-mon summary DIR"));
    if let Some(r) = &run.ranks {
        o.push_str(&ranks_table(r));
    }
    if run.warnings.is_empty() {
        o.push_str(&html::para("No problem was found in the logs."));
    } else {
        let _ = writeln!(
            o,
            "<p>Problems found ({}); the figures on this page cover what could be read:</p>\n<ul>",
            run.warnings.len()
        );
        for w in run.warnings.iter().take(MAX_WARNINGS) {
            let _ = writeln!(o, "<li>{}</li>", esc(w));
        }
        o.push_str("</ul>\n");
        if run.warnings.len() > MAX_WARNINGS {
            o.push_str(&html::note(&format!(
                "and {} more (rill-mon summary DIR lists them all).",
                run.warnings.len() - MAX_WARNINGS
            )));
        }
    }
    o.push_str("<p>Further, on the same directory:</p>\n");
    let dir = html::sh(&run.dir.display().to_string());
    o.push_str(&html::command(&format!(
        "rill-mon summary {dir}      # every task and stream, latency and jitter\n\
         rill-mon bottleneck {dir} --windows 100\n\
         rill-mon trace {dir} -o run.pftrace   # every period, zoomable, at ui.perfetto.dev"
    )));
    o
}
