//! The evolution's picture: one stacked-share panel per view (task states,
//! worker states, running by group, each worker), step-shaped (a bucket's
//! share is flat across it), each with its time axis in ms and its legend
//! on the right; the notes below.

use std::fmt::Write as _;

use super::{
    Evolution, EvolutionSource, Series, StateKey, SAMPLED_TASK_STATES, SAMPLED_WORKER_STATES,
    TASK_STATES, WAIT_WORKER_STATES, WORKER_STATES,
};
use crate::render::number::{fmt_ms_step, nice_step};
use crate::render::prose::wrap_indented;
use crate::render::svg::xml_escape;

const LEFT: f64 = 58.0;
/// Room right of a plot for the live-task axis.
const RIGHT_AXIS: f64 = 48.0;
/// The legend's column.
const LEGEND_W: f64 = 330.0;
const TOP: f64 = 40.0;
/// Above a plot (its title) and below it (tick labels).
const TITLE_H: f64 = 24.0;
const AXIS_H: f64 = 30.0;
const LEGEND_ROW: f64 = 17.0;
/// Approximate width of a character of the 11px font.
const CHAR_W: f64 = 6.2;
/// Per-worker panels are drawn for at most this many workers.
const MAX_WORKER_PANELS: usize = 8;

/// Colours of group series, busiest first; the rest is grey.
const GROUP_COLOURS: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#1b9e77", "#7570b3", "#e7298a",
];
const REST_COLOUR: &str = "#bab0ac";

/// One layer of a stack.
struct Layer<'a> {
    label: String,
    colour: String,
    series: &'a Series,
}

/// One panel.
struct Panel<'a> {
    title: String,
    height: f64,
    layers: Vec<Layer<'a>>,
    /// A line over the stack on its own axis (the live tasks).
    line: Option<(&'a [f64], &'static str)>,
    /// What a series' mean counts.
    unit: &'static str,
    /// A legend line instead of the layers' (per-worker panels).
    legend_note: Option<String>,
}

/// The horizontal geometry.
struct Xs {
    from: f64,
    to: f64,
    plot_w: f64,
    /// Each bucket's left and right edge, px.
    edges: Vec<(f64, f64)>,
}

impl Xs {
    fn x(&self, ms: f64) -> f64 {
        let span = (self.to - self.from).max(1e-12);
        LEFT + ((ms - self.from) / span).clamp(0.0, 1.0) * self.plot_w
    }
}

fn layers<'a>(keys: &[StateKey], series: &'a [Series]) -> Vec<Layer<'a>> {
    keys.iter()
        .zip(series)
        .map(|(k, s)| Layer {
            label: k.label.to_owned(),
            colour: k.colour.to_owned(),
            series: s,
        })
        .collect()
}

/// Shortens `s` to `n` characters.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A round number at or above `v` for an axis' top.
fn axis_top(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let step = nice_step(v, 4.0);
    (v / step).ceil() * step
}

/// Draws the picture of `ev`, `width` pixels wide.
pub(super) fn draw(ev: &Evolution, width: u32) -> String {
    let width = f64::from(width.max(640));
    let plot_w = width - LEFT - RIGHT_AXIS - LEGEND_W;
    let n = ev.start_ms.len();
    let mut xs = Xs {
        from: ev.from_ms,
        to: ev.to_ms,
        plot_w,
        edges: Vec::with_capacity(n),
    };
    for i in 0..n {
        let a = xs.x(ev.start_ms[i]);
        let b = xs.x(ev.start_ms.get(i + 1).copied().unwrap_or(ev.to_ms));
        xs.edges.push((a, b));
    }
    let panels = panels(ev);
    let mut body = String::new();
    let mut y = TOP;
    for p in &panels {
        y += TITLE_H;
        panel(&mut body, ev, &xs, p, y);
        y += p.height + AXIS_H;
    }
    if panels.is_empty() {
        y += TITLE_H;
        let _ = write!(
            body,
            "<text x=\"{LEFT}\" y=\"{y:.1}\" class=\"label\">nothing to draw in this window</text>"
        );
        y += AXIS_H;
    }
    // Notes, wrapped.
    let mut lines: Vec<String> = Vec::new();
    let per_line = ((width - 2.0 * LEFT) / CHAR_W) as usize;
    let mut say = |prefix: &str, s: &str| {
        lines.extend(wrap_indented(s, per_line, &format!("{prefix} "), "    "));
    };
    for u in &ev.unavailable {
        say("• not available:", u);
    }
    for note in &ev.notes {
        say("•", note);
    }
    for w in ev.warnings.iter().take(5) {
        say("• warning:", w);
    }
    if ev.warnings.len() > 5 {
        say("• warning:", &format!("{} more", ev.warnings.len() - 5));
    }
    y += 6.0;
    for l in &lines {
        y += 15.0;
        let _ = write!(
            body,
            "<text x=\"{LEFT}\" y=\"{y:.1}\" class=\"note\">{}</text>",
            xml_escape(l)
        );
    }
    let height = y + 16.0;

    let mode = match ev.source {
        EvolutionSource::Periods => "periods (exact)".to_owned(),
        EvolutionSource::Samples => match ev.sampling.as_ref().and_then(|s| s.hz) {
            Some(hz) => format!("sample mode at {hz} Hz (estimates)"),
            None => "sample mode (estimates)".to_owned(),
        },
        EvolutionSource::WorkerWaits => "worker waits only".to_owned(),
    };
    let step = nice_step((ev.to_ms - ev.from_ms).max(1e-9), 10.0);
    let title = format!(
        "rill run {}: evolution from {}, {} to {} ms, {} buckets of {}",
        ev.dir,
        mode,
        fmt_ms_step(ev.from_ms, step / 10.0),
        fmt_ms_step(ev.to_ms, step / 10.0),
        n,
        crate::render::number::fmt_ns(ev.bucket_ms * 1e6)
    );
    let mut svg = String::with_capacity(body.len() + 2048);
    let _ = write!(
        svg,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\">\n\
         <defs><style>.label{{font-size:11px;fill:#111}} .note{{font-size:11px;fill:#333}} \
         .tick{{font-size:11px;text-anchor:middle;fill:#333}} \
         .ytick{{font-size:10px;text-anchor:end;fill:#555}} \
         .rtick{{font-size:10px;text-anchor:start;fill:#222}} \
         .panel{{font-size:13px;font-weight:bold;fill:#222}} .title{{font-size:14px}}</style></defs>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
         <text x=\"{LEFT}\" y=\"22\" class=\"title\">{}</text>\n",
        xml_escape(&title)
    );
    svg.push_str(&body);
    svg.push_str("\n</svg>\n");
    svg
}

/// The panels `ev` has data for.
fn panels(ev: &Evolution) -> Vec<Panel<'_>> {
    let mut out = Vec::new();
    let (task_keys, worker_keys): (&[StateKey], &[StateKey]) = match ev.source {
        EvolutionSource::Periods => (&TASK_STATES, &WORKER_STATES),
        EvolutionSource::Samples => (&SAMPLED_TASK_STATES, &SAMPLED_WORKER_STATES),
        EvolutionSource::WorkerWaits => (&[], &WAIT_WORKER_STATES),
    };
    let est = if ev.estimated { " (estimated)" } else { "" };
    if !ev.task_states.is_empty() && !ev.live_tasks.is_empty() {
        let ls = layers(task_keys, &ev.task_states);
        out.push(Panel {
            title: format!(
                "Tasks: share of the live tasks in each state{est}; the line: live tasks \
                 (right axis)"
            ),
            height: 200.0f64.max(LEGEND_ROW * (ls.len() + 2) as f64),
            layers: ls,
            line: Some((&ev.live_tasks, "live tasks (created, not ended)")),
            unit: "tasks",
            legend_note: None,
        });
    }
    let nw = ev.workers.len();
    let ls = layers(worker_keys, &ev.worker_states);
    out.push(Panel {
        title: format!(
            "Workers: share of the {nw} worker{}' time in each state{est}",
            if nw == 1 { "" } else { "s" }
        ),
        height: 150.0f64.max(LEGEND_ROW * (ls.len() + 1) as f64),
        layers: ls,
        line: None,
        unit: "workers",
        legend_note: Some(if ev.source == EvolutionSource::Samples {
            "white: no samples (worker not running)".to_owned()
        } else {
            "white: worker not started, or ended".to_owned()
        }),
    });
    if !ev.groups.is_empty() && ev.source != EvolutionSource::WorkerWaits {
        let ls: Vec<Layer<'_>> = ev
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let rest = g.group.starts_with("other") && i + 1 == ev.groups.len();
                Layer {
                    label: format!("{} ({} task{})", g.group, g.tasks, plural(g.tasks)),
                    colour: if rest {
                        REST_COLOUR.to_owned()
                    } else {
                        GROUP_COLOURS[i % GROUP_COLOURS.len()].to_owned()
                    },
                    series: &g.series,
                }
            })
            .collect();
        let what = if ev.grouped {
            "task group (numbered names folded)"
        } else {
            "task"
        };
        out.push(Panel {
            title: format!("Running, by {what}: share of the workers' time{est}"),
            height: 150.0f64.max(LEGEND_ROW * (ls.len() + 1) as f64),
            layers: ls,
            line: None,
            unit: "tasks",
            legend_note: None,
        });
    }
    if nw > 1 && nw <= MAX_WORKER_PANELS {
        for w in &ev.workers {
            out.push(Panel {
                title: format!(
                    "Worker {}",
                    w.name.clone().unwrap_or_else(|| w.worker.to_string())
                ),
                height: 56.0,
                layers: layers(worker_keys, &w.states),
                line: None,
                unit: "of the bucket",
                legend_note: Some("states as in Workers".to_owned()),
            });
        }
    }
    out
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Draws panel `p` with its plot's top at `y`.
fn panel(o: &mut String, ev: &Evolution, xs: &Xs, p: &Panel<'_>, y: f64) {
    let h = p.height;
    let y_of = |share: f64| y + h - share.clamp(0.0, 1.0) * h;
    let x1 = LEFT + xs.plot_w;
    let _ = write!(
        o,
        "<g><text x=\"{LEFT}\" y=\"{:.1}\" class=\"panel\">{}</text>\
         <rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"#fff\" stroke=\"#bbb\"/>",
        y - 8.0,
        xml_escape(&p.title),
        xs.plot_w
    );
    // The stack, bottom first: each layer a step-shaped band.
    let n = xs.edges.len();
    let mut lower = vec![0.0f64; n];
    for l in &p.layers {
        let share = &l.series.share;
        if share.iter().all(|&s| s <= 0.0) {
            continue;
        }
        let upper: Vec<f64> = (0..n)
            .map(|i| (lower[i] + share.get(i).copied().unwrap_or(0.0)).min(1.0))
            .collect();
        let mut d = String::new();
        for (i, &(a, b)) in xs.edges.iter().enumerate() {
            let yy = y_of(upper[i]);
            let _ = write!(
                d,
                "{}{a:.2},{yy:.2}L{b:.2},{yy:.2}",
                if i == 0 { "M" } else { "L" }
            );
        }
        for (i, &(a, b)) in xs.edges.iter().enumerate().rev() {
            let yy = y_of(lower[i]);
            let _ = write!(d, "L{b:.2},{yy:.2}L{a:.2},{yy:.2}");
        }
        let _ = write!(
            o,
            "<path d=\"{d}Z\" fill=\"{}\" stroke=\"{}\" stroke-width=\"0.4\"><title>{}</title></path>",
            l.colour,
            l.colour,
            xml_escape(&l.label)
        );
        lower = upper;
    }
    // Grid lines and the share axis.
    for (k, frac) in [0.0, 0.25, 0.5, 0.75, 1.0].into_iter().enumerate() {
        let yy = y_of(frac);
        if k % 4 != 0 {
            let _ = write!(
                o,
                "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{x1:.1}\" y2=\"{yy:.1}\" stroke=\"#000\" \
                 stroke-opacity=\"0.15\" stroke-dasharray=\"3,3\"/>"
            );
        }
        if h >= 100.0 || k % 2 == 0 {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" class=\"ytick\">{:.0}%</text>",
                LEFT - 5.0,
                yy + 3.5,
                frac * 100.0
            );
        }
    }
    // The line on its own axis.
    if let Some((values, label)) = p.line {
        let top = axis_top(values.iter().copied().fold(0.0, f64::max));
        let ly = |v: f64| y + h - (v / top).clamp(0.0, 1.0) * h;
        let mut d = String::new();
        for (i, &(a, b)) in xs.edges.iter().enumerate() {
            let v = values.get(i).copied().unwrap_or(0.0);
            let _ = write!(
                d,
                "{}{a:.2},{:.2}L{b:.2},{:.2}",
                if i == 0 { "M" } else { "L" },
                ly(v),
                ly(v)
            );
        }
        let _ = write!(
            o,
            "<path d=\"{d}\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"><title>{}</title></path>",
            xml_escape(label)
        );
        for frac in [0.0, 0.5, 1.0] {
            let v = top * frac;
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" class=\"rtick\">{}</text>",
                x1 + 5.0,
                y + h - frac * h + 3.5,
                fmt_count(v)
            );
        }
    }
    // Hover: a column per bucket naming its figures.
    for (i, &(a, b)) in xs.edges.iter().enumerate() {
        let mut t = format!(
            "{} to {} ms",
            fmt_count(ev.start_ms[i]),
            fmt_count(ev.start_ms.get(i + 1).copied().unwrap_or(ev.to_ms))
        );
        if let Some((values, _)) = p.line {
            let _ = write!(t, ": {} live tasks", fmt_count(values[i]));
        }
        for l in p.layers.iter().rev() {
            let s = l.series;
            let (m, sh) = (s.mean[i], s.share[i]);
            if m > 0.0 || sh > 0.0 {
                let unit = if p.unit == "of the bucket" {
                    String::new()
                } else {
                    format!(" {} ", p.unit)
                };
                let _ = write!(
                    t,
                    "\n{}: {}{unit}({:.1}%)",
                    clip(&l.label, 48),
                    fmt_count(m),
                    sh * 100.0
                );
            }
        }
        let _ = write!(
            o,
            "<rect x=\"{a:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{h:.1}\" fill=\"#000\" \
             fill-opacity=\"0\"><title>{}</title></rect>",
            (b - a).max(0.0),
            xml_escape(&t)
        );
    }
    // The time axis.
    let ay = y + h;
    let step = nice_step((xs.to - xs.from).max(1e-9), xs.plot_w / 110.0);
    let mut k = (xs.from / step).ceil();
    let mut count = 0;
    while k * step <= xs.to + step * 1e-9 && count < 1000 {
        let ms = k * step;
        let x = xs.x(ms);
        let _ = write!(
            o,
            "<line x1=\"{x:.2}\" y1=\"{ay:.1}\" x2=\"{x:.2}\" y2=\"{:.1}\" stroke=\"#333\"/>\
             <text x=\"{x:.2}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            ay + 4.0,
            ay + 15.0,
            fmt_ms_step(ms, step)
        );
        k += 1.0;
        count += 1;
    }
    let _ = write!(
        o,
        "<text x=\"{x1:.1}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\" style=\"text-anchor:end\">ms</text>",
        ay + 27.0
    );
    // The legend: top of the stack first.
    let lx = x1 + RIGHT_AXIS;
    let mut ly = y + 2.0;
    let chars = ((LEGEND_W - 28.0) / CHAR_W) as usize;
    if let Some((_, label)) = p.line {
        let _ = write!(
            o,
            "<line x1=\"{lx:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">{}</text>",
            ly + 6.0,
            lx + 14.0,
            ly + 6.0,
            lx + 20.0,
            ly + 10.0,
            xml_escape(&clip(label, chars))
        );
        ly += LEGEND_ROW;
    }
    if p.legend_note.is_none() || p.height >= 100.0 {
        for l in p.layers.iter().rev() {
            let _ = write!(
                o,
                "<rect x=\"{lx:.1}\" y=\"{ly:.1}\" width=\"14\" height=\"12\" fill=\"{}\" stroke=\"#888\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">{}<title>{}</title></text>",
                l.colour,
                lx + 20.0,
                ly + 10.0,
                xml_escape(&clip(&l.label, chars)),
                xml_escape(&l.label)
            );
            ly += LEGEND_ROW;
        }
    }
    if let Some(note) = &p.legend_note {
        let _ = write!(
            o,
            "<text x=\"{lx:.1}\" y=\"{:.1}\" class=\"note\">{}</text>",
            ly + 10.0,
            xml_escape(&clip(note, chars))
        );
    }
    o.push_str("</g>\n");
}

/// A count or time for a label: up to three decimals, fewer for large values.
fn fmt_count(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}
