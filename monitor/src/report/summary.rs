//! The run summary (`summary`'s totals and workers: the paper's Table III)
//! and the per-worker utilisation bars.

use rill_log::MonitorFlags;

use super::html::{self, BarRow, Cell, Row};
use super::Ctx;

const BUSY: &str = "#4c78a8";
const WAIT: &str = "#b8b8b8";
const OTHER: &str = "#f4d58d";

/// `≈` before an estimate (sample mode).
fn est(ctx: &Ctx<'_>, s: String) -> String {
    if ctx.sampled() {
        format!("≈ {s}")
    } else {
        s
    }
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let s = ctx.summary();
    let run = ctx.run;
    let mut o = String::new();
    let sum = |f: &dyn Fn(&crate::summary::model::WorkerSummary) -> u64| {
        s.workers.iter().fold(0u64, |n, w| n.saturating_add(f(w)))
    };
    let (busy, wt, we, disp, spins, unacc) = (
        sum(&|w| w.busy_ns),
        sum(&|w| w.wait_ns),
        sum(&|w| w.waiting_events),
        sum(&|w| w.dispatches),
        sum(&|w| w.spins),
        sum(&|w| w.unaccounted_ns),
    );
    let all_time = sum(&|w| w.span_ns) as f64;
    let messages = run
        .streams
        .values()
        .fold(0u64, |n, st| n.saturating_add(st.written.max(st.read)));
    let mut totals = vec![
        (
            "wall (the run's span, first to last time stamp)",
            html::ns(s.span_ns),
        ),
        (
            "busy, summed over the workers",
            est(
                ctx,
                format!(
                    "{} ({} of their time)",
                    html::ns(busy),
                    html::pct(busy as f64, all_time)
                ),
            ),
        ),
        (
            "waiting time WT, summed",
            est(
                ctx,
                format!("{} ({})", html::ns(wt), html::pct(wt as f64, all_time)),
            ),
        ),
        ("waiting events WE, summed", we.to_string()),
        (
            "unaccounted (span − busy − WT), summed",
            est(ctx, html::ns(unacc)),
        ),
        (
            "dispatches (task resumptions, as RunStats counts them)",
            disp.to_string(),
        ),
        (
            "spins before a block (each logged as a period more)",
            spins.to_string(),
        ),
        ("tasks", run.tasks.len().to_string()),
        ("streams", run.streams.len().to_string()),
    ];
    if run.flags.contains(MonitorFlags::STREAM) {
        totals.push((
            "messages (per stream, the larger of written and read)",
            messages.to_string(),
        ));
    }
    if let Some(t) = &s.throughput {
        totals.push((
            "throughput",
            format!("{:.1} {}/s ({} {})", t.per_sec, t.basis, t.count, t.basis),
        ));
    }
    let rows: Vec<Row> = totals
        .into_iter()
        .map(|(k, v)| Row::from(vec![Cell::text(k), Cell::num(v)]))
        .collect();
    o.push_str(&html::table(&["figure", "value"], &rows));

    o.push_str("<h3>Per worker</h3>\n");
    let rows: Vec<Row> = s
        .workers
        .iter()
        .map(|w| {
            Row::from(vec![
                Cell::num(w.name.clone().unwrap_or_else(|| w.worker.to_string())),
                Cell::num(html::ns(w.span_ns)),
                Cell::num(est(ctx, html::ns(w.busy_ns))),
                Cell::num(html::pct(w.busy_ns as f64, w.span_ns as f64)),
                Cell::num(est(ctx, html::ns(w.wait_ns))),
                Cell::num(w.waiting_events.to_string()),
                Cell::num(est(ctx, html::ns(w.unaccounted_ns))),
                Cell::num(w.dispatches.to_string()),
                Cell::num(w.spins.to_string()),
                Cell::text(match &w.truncated {
                    Some(t) => format!("log truncated: {t}"),
                    None => String::new(),
                }),
            ])
        })
        .collect();
    o.push_str(&html::table(
        &[
            "worker",
            "span",
            "busy",
            "busy %",
            "WT",
            "WE",
            "unaccounted",
            "dispatches",
            "spins",
            "",
        ],
        &rows,
    ));
    o.push_str(&html::note(
        "WT = waiting time (the worker idle: spinning or parked), WE = waiting events (how \
         often it went idle); unaccounted = span − busy − WT (scheduling between tasks, and \
         time no record covers). dispatches = task resumptions (rill::RunStats::dispatches); \
         spins = times a task about to block spun first and went on without leaving its \
         worker, which the log shows as a period that ended blocked, a wait and a new \
         period: a log holds dispatches + spins periods.",
    ));
    for n in &s.notes {
        if n.starts_with("no ") {
            o.push_str(&html::missing(n));
        } else {
            o.push_str(&html::note(n));
        }
    }
    if run.flags.contains(MonitorFlags::MESSAGE) && ctx.periods() {
        o.push_str(&html::note(
            "Per-input latency and jitter are left to `rill-mon summary DIR`: they replay every \
             message, which this page does not.",
        ));
    } else {
        o.push_str(&html::missing(
            "per-input latency and jitter: they need the order of reads and writes in each \
             period (the MESSAGE flag, part of `full`), which this run did not record.",
        ));
    }
    o
}

pub(super) fn utilisation(ctx: &Ctx<'_>) -> String {
    let s = ctx.summary();
    let mut o = String::new();
    if !ctx.periods() && !ctx.sampled() {
        o.push_str(&html::missing(
            "busy time: the run recorded neither periods (SCHEDULER flag) nor samples, so \
             the workers' time cannot be split.",
        ));
        return o;
    }
    let err = ctx.share_error();
    let rows: Vec<BarRow> = s
        .workers
        .iter()
        .map(|w| {
            let span = w.span_ns.max(1) as f64;
            let (b, t, u) = (
                w.busy_ns as f64 / span,
                w.wait_ns as f64 / span,
                w.unaccounted_ns as f64 / span,
            );
            let pm = if err > 0.0 {
                format!(" ±{:.1}", err * 100.0)
            } else {
                String::new()
            };
            let wn = w.name.clone().unwrap_or_else(|| w.worker.to_string());
            BarRow {
                label: format!("worker {wn}"),
                parts: vec![
                    (
                        b,
                        BUSY,
                        format!("worker {wn}: busy {}{pm} points", html::pct(b, 1.0)),
                    ),
                    (
                        t,
                        WAIT,
                        format!("worker {wn}: waiting (WT) {}", html::pct(t, 1.0)),
                    ),
                    (
                        u,
                        OTHER,
                        format!("worker {wn}: unaccounted {}", html::pct(u, 1.0)),
                    ),
                ],
                right: format!(
                    "busy {:.0}%{pm} · WT {:.0}% · other {:.0}% · WE {}",
                    b * 100.0,
                    t * 100.0,
                    u * 100.0,
                    w.waiting_events
                ),
                range: (err > 0.0).then(|| ((b - err).max(0.0), (b + err).min(1.0))),
            }
        })
        .collect();
    o.push_str("<div class=\"scroll\">\n");
    o.push_str(&html::bars_svg(
        &rows,
        1.0,
        &[
            (BUSY, "busy (running tasks)"),
            (WAIT, "waiting (WT)"),
            (OTHER, "unaccounted"),
        ],
    ));
    o.push_str("</div>\n");
    o.push_str(&html::note(
        "Each bar is one worker's span (its first to its last time stamp), split into the \
         time it ran tasks, the time it waited for work (WT) and the rest.",
    ));
    if err > 0.0 {
        o.push_str(&html::note(&format!(
            "Sample mode: busy and waiting shares are estimates, each within ±{:.1} points \
             (95%, from the fewest samples of any worker: the black error bars).",
            err * 100.0
        )));
    }
    if !ctx.run.flags.contains(MonitorFlags::WORKER) {
        o.push_str(&html::missing(
            "waiting time: the run did not record worker waits (WORKER flag), so it shows as \
             unaccounted.",
        ));
    }
    o
}
