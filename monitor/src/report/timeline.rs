//! The timeline (`timeline_svg`): the whole run, and for a run too dense to
//! show its periods one by one at that scale, a window from its middle
//! where they are.

use rill_log::MonitorFlags;

use super::html;
use super::Ctx;
use crate::load::model::RunLog;
use crate::trace::timeline::{timeline_svg, TimelineOptions};

/// Periods per worker lane the detail window aims at.
const DETAIL_PERIODS: f64 = 120.0;

/// The SVG for inlining: without its XML declaration, its pattern id made
/// unique on the page (`many` → `many-{tag}`).
pub(super) fn inline(svg: &str, tag: &str) -> String {
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
    let opts = ctx.timeline_options();
    let width = opts.width_px;
    o.push_str("<div class=\"scroll\">\n");
    o.push_str(&inline(&ctx.timeline(), "all"));
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
    // room for, a window around that lane's median period holding about
    // DETAIL_PERIODS of its periods.
    let densest = (0..run.workers.len()).max_by_key(|&i| run.workers[i].stats.dispatches);
    let plot_px = f64::from(width) - 120.0;
    let window = densest
        .filter(|&i| ctx.periods() && run.workers[i].stats.dispatches as f64 > plot_px / 4.0)
        .and_then(|i| detail_window(run, i));
    if let Some((from, to)) = window {
        let len = to - from;
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
            "The busiest worker ran {} periods, too many to tell apart at the scale of the \
             whole run; this window, around its median period (half of its periods start \
             before), holds about {} of them.",
            densest.map_or(0, |i| run.workers[i].stats.dispatches),
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

/// Buckets the detail window's search cuts the run into.
const BUCKETS: usize = 256;

/// A window (ms after the run's start) around the median period of worker
/// `li`'s log, as long as DETAIL_PERIODS periods take at the density of
/// the run's 1/[`BUCKETS`] around it: the chunks of that log that straddle a
/// bucket's edge are decoded, the others counted whole (`load/chunks.rs`).
fn detail_window(run: &RunLog, li: usize) -> Option<(f64, f64)> {
    let w = &run.workers[li];
    let span = run.t1.checked_sub(run.t0).filter(|&s| s > 0)?;
    let mut counts = vec![0u64; BUCKETS];
    w.count_starts(&mut counts, |t| {
        let rel = t.checked_sub(run.t0).filter(|&rel| rel <= span)?;
        let b = (u128::from(rel) * BUCKETS as u128 / u128::from(span)) as usize;
        Some(b.min(BUCKETS - 1))
    });
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let mut seen = 0u64;
    let b = counts.iter().position(|&c| {
        seen += c;
        seen * 2 >= total
    })?;
    let span_ms = run.span_ns() as f64 / 1e6;
    let bucket_ms = span_ms / BUCKETS as f64;
    let len = (DETAIL_PERIODS * bucket_ms / counts[b].max(1) as f64).clamp(span_ms * 1e-6, span_ms);
    let centre = (b as f64 + 0.5) * bucket_ms;
    let from = (centre - len / 2.0).clamp(0.0, span_ms - len);
    Some((from, from + len))
}

/// Milliseconds with enough decimals to tell the ends of a window `len`
/// ms long apart.
fn fmt_ms(ms: f64, len: f64) -> String {
    let decimals = (2.0 - len.max(1e-9).log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{ms:.decimals$}")
}
