//! The timeline (`timeline_svg`): the whole run, and for a run too dense to
//! show its periods one by one at that scale, a window from its middle
//! where they are.

use rill_log::MonitorFlags;

use super::html;
use super::Ctx;
use crate::timeline::{timeline_svg, TimelineOptions};

/// Periods per worker lane the detail window aims at.
const DETAIL_PERIODS: f64 = 120.0;

/// The SVG for inlining: without its XML declaration, its pattern id made
/// unique on the page (`many` → `many-{tag}`).
fn inline(svg: &str, tag: &str) -> String {
    let body = match svg.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(svg, |(_, b)| b),
        None => svg,
    };
    body.trim_start()
        .replace("id=\"many\"", &format!("id=\"many-{tag}\""))
        .replace("url(#many)", &format!("url(#many-{tag})"))
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let run = ctx.run;
    let mut o = String::new();
    let drawable = ctx.periods() || ctx.sampled() || run.flags.contains(MonitorFlags::WORKER);
    if !drawable {
        o.push_str(&html::missing(
            "the run recorded no periods (SCHEDULER flag), no worker waits (WORKER) and no \
             samples: there is nothing to draw over time.",
        ));
        return o;
    }
    let width = ctx.opts.timeline_width_px.max(400);
    let span_ms = run.span_ns() as f64 / 1e6;
    let opts = TimelineOptions {
        width_px: width,
        ..TimelineOptions::default()
    };
    o.push_str("<div class=\"scroll\">\n");
    o.push_str(&inline(&timeline_svg(run, &opts), "all"));
    o.push_str("</div>\n");
    if ctx.sampled() {
        o.push_str(&html::note(
            "Sample mode: each worker's lane is a column per window of samples, its height \
             split by what the samples found (the tasks, biggest first, then between tasks, \
             spinning, idle, parked).",
        ));
        o.push_str(&html::missing(
            "single dispatches: sample mode records none, so the lanes show shares per window \
             of samples, not periods.",
        ));
    } else if ctx.periods() {
        o.push_str(&html::note(
            "One lane per worker: each period (a task's dispatch) to scale, coloured per task, \
             labelled where it is wide enough; grey = the worker waiting; white = unaccounted. \
             Periods narrower than a pixel merge into hatched columns. Hover for details.",
        ));
    } else {
        o.push_str(&html::missing(
            "task periods: the run did not record dispatches (SCHEDULER flag); the lanes show \
             the workers' waits only.",
        ));
    }

    // Detail: when the densest lane has more periods than the plot has
    // room for, a window in the middle of the run with about
    // DETAIL_PERIODS of them per lane.
    let densest = run
        .workers
        .iter()
        .map(|w| w.stats.dispatches)
        .max()
        .unwrap_or(0) as f64;
    let plot_px = f64::from(width) - 120.0;
    if ctx.periods() && span_ms > 0.0 && densest > plot_px / 4.0 {
        let len = (span_ms * DETAIL_PERIODS / densest).max(span_ms * 1e-6);
        let from = (span_ms - len) / 2.0;
        let to = from + len;
        let detail = TimelineOptions {
            from_ms: Some(from),
            to_ms: Some(to),
            ..opts
        };
        o.push_str(&format!(
            "<h3>Detail: {} ms to {} ms</h3>\n",
            fmt_ms(from, len),
            fmt_ms(to, len)
        ));
        o.push_str(&html::note(&format!(
            "The whole run holds up to {densest:.0} periods per worker, too many to tell apart \
             at this scale; this window from the middle of the run holds about {} per worker.",
            DETAIL_PERIODS as u64
        )));
        o.push_str("<div class=\"scroll\">\n");
        o.push_str(&inline(&timeline_svg(run, &detail), "detail"));
        o.push_str("</div>\n");
        o.push_str(&html::note(
            "Other windows: `rill-mon timeline DIR -o FILE.svg --from MS --to MS`; every period \
             with zoom: `rill-mon trace DIR -o FILE.pftrace` (ui.perfetto.dev).",
        ));
    }
    o
}

/// Milliseconds with enough decimals to tell the ends of a window `len`
/// ms long apart.
fn fmt_ms(ms: f64, len: f64) -> String {
    let decimals = (2.0 - len.max(1e-9).log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{ms:.decimals$}")
}
