//! The findings of `bottleneck`, strongest first, with their evidence.

use std::fmt::Write as _;

use super::html::{self, esc, Cell, Row};
use super::Ctx;

/// Findings under this share of the waiting are counted, not listed (as in
/// `rill-mon bottleneck`'s text).
const MINOR: f64 = 0.01;

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let b = ctx.bottlenecks();
    let mut o = String::new();
    if !ctx.periods() && !ctx.sampled() {
        o.push_str(&html::missing(
            "findings need the busy time of tasks over time: the run recorded neither periods \
             (SCHEDULER flag) nor samples (sample mode).",
        ));
        return o;
    }
    let shown: Vec<(usize, &crate::explain::findings::Finding)> = b
        .bottlenecks
        .iter()
        .enumerate()
        .filter(|(k, f)| *k == 0 || f.share >= MINOR)
        .collect();
    if shown.is_empty() {
        o.push_str(&html::para(
            "No task, stream or worker met the thresholds in any window; the verdict above \
             says what bounds the run instead.",
        ));
    } else {
        let base = if ctx.sampled() {
            format!(
                "share = the part of all work in the run ({} of busy time, estimated from \
                 samples) done while the finding held; sample mode measures no wait times",
                html::ns(b.waiting_ns)
            )
        } else {
            format!(
                "share = the part of all waiting in the run ({} of tasks blocked or ready, \
                 added up over the tasks) that the finding accounts for; for placement, the \
                 part of the predicted time the proposed mapping saves",
                html::ns(b.waiting_ns)
            )
        };
        let _ = writeln!(o, "<p>Strongest first; {}.</p>", esc(&base));
        let rows: Vec<Row> = shown
            .iter()
            .map(|(k, f)| {
                Row::from(vec![
                    Cell::num((k + 1).to_string()),
                    Cell::text(f.kind.clone()),
                    Cell::text(f.name.clone()),
                    Cell::html(match f.predicted_speedup {
                        Some(x) => {
                            format!("{}<br/>saved ({x:.2}x predicted)", html::share_bar(f.share))
                        }
                        None => html::share_bar(f.share),
                    }),
                    Cell::text(f.evidence.clone()),
                ])
            })
            .collect();
        o.push_str(&html::table(
            &["#", "kind", "what", "share", "evidence"],
            &rows,
        ));
        let minor = b.bottlenecks.len() - shown.len();
        if minor > 0 {
            o.push_str(&html::note(&format!(
                "and {minor} minor finding(s), each under 1% (`rill-mon bottleneck DIR --json` \
                 lists them)"
            )));
        }
    }
    o.push_str(&html::note(&format!(
        "How: the run is cut into {} windows of {}. In a window, a task is a bottleneck when \
         its worker is busy at least α = {:.0}%, it runs at least half of that, and others wait \
         on it at least β = {:.0}% of the window (writers blocked on its full inputs, readers on \
         its empty outputs, tasks of its worker ready behind it); a stream, when its ends run \
         on different workers and wake-ups on it cost at least γ = {:.0}% of the window with no \
         bottleneck task connected to it; a worker, when it is busy at least α while another \
         is idle at least β. The times are exact to the clock, the causes inferred; a \
         bottleneck that moves within a window can be missed (`rill-mon bottleneck --windows \
         N`). {}{}",
        b.windows,
        html::ns(b.window_ns),
        b.alpha * 100.0,
        b.beta * 100.0,
        b.gamma * 100.0,
        if b.across_ranks {
            format!("{} ", crate::explain::findings::CROSS_RANK_RULE)
        } else {
            String::new()
        },
        crate::explain::placement::rule_text()
    )));
    // Sample mode's note is the table's heading above.
    for n in b.notes.iter().filter(|n| n.starts_with("no ")) {
        o.push_str(&html::missing(n));
    }
    o
}
