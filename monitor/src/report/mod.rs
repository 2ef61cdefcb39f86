//! `rill-mon report`: one self-contained HTML page that explains a run.
//!
//! The page is a header (the run's facts and the bottleneck verdict as its
//! headline), a table of contents and a list of sections, each built by one
//! function from a shared [`Ctx`] that computes every analysis once, on
//! first use ([`SECTIONS`] lists them in page order). Sections are built
//! side by side, one thread each, so the timeline's scan of the logs and
//! the bottleneck pass overlap.
//!
//! Each section shows what the run's monitoring mode allows and says in one
//! line what it cannot show and why (`full` has everything but a time per
//! message; `map,worker,task,stream` has periods and counts but no message
//! order; `sample` has no periods: times are estimates from samples, waits
//! exact counts without durations). A section whose analysis fails (a bug
//! that panics, on some damaged log) becomes one line saying so; the rest of
//! the page stands.
//!
//! Self-contained: inline CSS, inline SVG, no script, no font, no image, no
//! address to fetch (the mapping file's download link is a `data:` address).
//! Every name from the logs is escaped. The markup is well-formed XML as
//! well (every element closed), which the tests check.

mod about;
mod evolution;
mod findings;
mod groups;
mod html;
mod mapping;
mod rankmapping;
mod summary;
mod timeline;
mod waits;

use std::fmt::Write as _;
use std::sync::OnceLock;

use crate::evolution::{evolution, evolution_from, Evolution, EvolutionOptions};
use crate::explain::bottleneck::{bottleneck, bottleneck_of};
use crate::explain::findings::{BottleneckOptions, Bottlenecks};
use crate::explain::waits::{waits, Waits};
use crate::load::model::RunLog;
use crate::replay::activity::activity_from;
use crate::replay::activity_model::Activity;
use crate::summary::model::Summary;
use crate::summary::summarize::summarize_totals;
use crate::trace::timeline::{lanes_from, timeline_svg_with, LaneSvg, TimelineOptions};

use html::esc;

/// What [`report_html`] draws.
#[derive(Clone, Copy, Debug)]
pub struct ReportOptions {
    /// Rows per table (0 = all; default 30).
    pub rows: usize,
    /// Width of the timelines in pixels (default 1200).
    pub timeline_width_px: u32,
    /// The bottleneck analysis (default: `rill-mon bottleneck`'s).
    pub bottleneck: BottleneckOptions,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            rows: 30,
            timeline_width_px: 1200,
            bottleneck: BottleneckOptions::default(),
        }
    }
}

/// The run and its analyses, each computed once, on first use, by whichever
/// section asks first (the others wait for it).
pub(crate) struct Ctx<'a> {
    pub run: &'a RunLog,
    pub opts: &'a ReportOptions,
    summary: OnceLock<Summary>,
    bottlenecks: OnceLock<Bottlenecks>,
    waits: OnceLock<Waits>,
    merged: OnceLock<Merged>,
}

/// What the page's heaviest passes take from the one merged pass of a run
/// with periods ([`Ctx::merged`]).
struct Merged {
    activity: Activity,
    evolution: anyhow::Result<Evolution>,
    lanes: Vec<LaneSvg>,
}

impl Ctx<'_> {
    /// `summary`'s totals (no latency replay).
    pub fn summary(&self) -> &Summary {
        self.summary.get_or_init(|| summarize_totals(self.run))
    }

    /// `bottleneck`'s findings and verdict.
    pub fn bottlenecks(&self) -> &Bottlenecks {
        self.bottlenecks.get_or_init(|| match self.merged() {
            Some(m) => bottleneck_of(self.run, &self.opts.bottleneck, &m.activity),
            None => bottleneck(self.run, &self.opts.bottleneck),
        })
    }

    /// The evolution section's series, handed to `f`.
    pub fn with_evolution<T>(&self, f: impl FnOnce(&anyhow::Result<Evolution>) -> T) -> T {
        match self.merged() {
            Some(m) => f(&m.evolution),
            None => f(&evolution(self.run, &self.evolution_options())),
        }
    }

    /// The whole run's timeline.
    pub fn timeline(&self) -> String {
        let opts = self.timeline_options();
        let lanes = self.merged().map(|m| m.lanes.as_slice());
        timeline_svg_with(self.run, &opts, lanes)
    }

    /// What the timeline section draws of the whole run.
    pub fn timeline_options(&self) -> TimelineOptions {
        TimelineOptions {
            width_px: self.opts.timeline_width_px.max(400),
            ..TimelineOptions::default()
        }
    }

    /// What the evolution section draws.
    pub fn evolution_options(&self) -> EvolutionOptions {
        EvolutionOptions {
            width_px: self.opts.timeline_width_px.max(400),
            ..EvolutionOptions::default()
        }
    }

    /// For a run with periods, the bottleneck's activity, the evolution's
    /// series and the whole run's timeline lanes from one merged pass over
    /// the logs, read by the three side by side (`merge::shared`): the
    /// page's heaviest passes decode the logs once. `None` for other runs
    /// (their sections compute their own, from samples or totals).
    fn merged(&self) -> Option<&Merged> {
        if !self.periods() || self.sampled() {
            return None;
        }
        Some(self.merged.get_or_init(|| {
            let run = self.run;
            let windows = self.opts.bottleneck.windows;
            let (evo_opts, tl_opts) = (self.evolution_options(), self.timeline_options());
            let (mut activity, mut evolution, mut lanes) = (None, None, None);
            crate::replay::merge::shared(
                run,
                vec![
                    Box::new(|ev| activity = Some(activity_from(run, windows, ev))),
                    Box::new(|ev| evolution = Some(evolution_from(run, &evo_opts, ev))),
                    Box::new(|ev| lanes = Some(lanes_from(run, &tl_opts, ev))),
                ],
            );
            Merged {
                activity: activity.expect("the activity pass ran"),
                evolution: evolution.expect("the evolution pass ran"),
                lanes: lanes.expect("the lanes pass ran"),
            }
        }))
    }

    /// `waits`, task names folded into groups.
    pub fn waits(&self) -> &Waits {
        self.waits.get_or_init(|| waits(self.run, true))
    }

    /// Whether the run recorded periods (every dispatch with its times).
    pub fn periods(&self) -> bool {
        self.run.flags.contains(rill_log::MonitorFlags::SCHEDULER)
    }

    /// Whether the run is in sample mode only (no periods: the times are
    /// estimates from samples).
    pub fn sampled(&self) -> bool {
        crate::load::sampled::is_sample_only(self.run)
    }

    /// The 95% bound of a worker's share estimated from samples, as a
    /// fraction (sample mode), else 0.
    pub fn share_error(&self) -> f64 {
        match &self.run.sampled {
            Some(sm) if self.sampled() => {
                crate::load::samples::Sampled::share_error(sm.min_samples())
            }
            _ => 0.0,
        }
    }

    /// Rows to show of `n`.
    pub fn cut(&self, n: usize) -> usize {
        if self.opts.rows == 0 {
            n
        } else {
            n.min(self.opts.rows)
        }
    }

    /// The line under a table cut at [`cut`](Self::cut) rows, if it was.
    pub fn more(&self, n: usize, what: &str, cmd: &str) -> String {
        let shown = self.cut(n);
        if n > shown {
            html::note(&format!(
                "{} more {what} not shown (the {shown} heaviest are); `{cmd}` lists them all, or \
                 `rill-mon report --rows 0` shows every row here.",
                n - shown
            ))
        } else {
            String::new()
        }
    }
}

/// One section of the page: its anchor, its heading and the function that
/// writes its body.
pub(crate) struct SectionDef {
    pub id: &'static str,
    pub title: &'static str,
    pub build: fn(&Ctx<'_>) -> String,
}

/// The sections, in page order. A new analysis (the evolution of task
/// states over time, say) is one more entry: its body function takes the
/// [`Ctx`] and returns its markup, with [`html::missing`] lines for what
/// the run's mode does not allow.
pub(crate) const SECTIONS: &[SectionDef] = &[
    SectionDef {
        id: "findings",
        title: "Findings",
        build: findings::body,
    },
    SectionDef {
        id: "summary",
        title: "Run summary",
        build: summary::body,
    },
    SectionDef {
        id: "utilisation",
        title: "Worker utilisation",
        build: summary::utilisation,
    },
    SectionDef {
        id: "timeline",
        title: "Timeline",
        build: timeline::body,
    },
    // After the timeline, whose dense stretches it summarises.
    SectionDef {
        id: "evolution",
        title: "Evolution of task states",
        build: evolution::body,
    },
    SectionDef {
        id: "waits",
        title: "Waits",
        build: waits::body,
    },
    SectionDef {
        id: "groups",
        title: "Task groups",
        build: groups::body,
    },
    SectionDef {
        id: "mapping",
        title: "Proposed mapping",
        build: mapping::body,
    },
    SectionDef {
        id: "logs",
        title: "About these logs",
        build: about::body,
    },
];

/// The page's style: readable on a laptop, printable. (The timelines'
/// own SVG style names the classes `lane`, `label`, `tick` and `title`,
/// which this page leaves alone.)
const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;\
color:#1b1b1b;line-height:1.45;max-width:1240px;margin:0 auto;padding:1em 1.6em 3em}\
h1{font-size:1.55em;margin:.3em 0 .1em}\
h2{font-size:1.22em;margin:1.8em 0 .5em;padding-bottom:.2em;border-bottom:1px solid #ccc}\
h3{font-size:1.02em;margin:1.2em 0 .3em}\
.facts{color:#444;margin:.2em 0 .8em}\
.facts span{margin-right:1.4em;white-space:nowrap}\
.verdict{background:#fff5dc;border-left:6px solid #e09b00;padding:.7em 1em;font-size:1.06em;margin:.8em 0}\
.verdict b{display:block;font-size:.8em;text-transform:uppercase;letter-spacing:.05em;color:#8a5a00}\
.warn{background:#fdeaea;border-left:6px solid #c62828;padding:.5em 1em;margin:.8em 0}\
nav.toc{background:#f6f7f9;border:1px solid #e1e4e8;padding:.4em 1em;margin:1em 0}\
nav.toc ol{margin:.2em 0;padding-left:1.4em;columns:2}\
nav.toc a{text-decoration:none}\
table{border-collapse:collapse;font-size:.88em;margin:.4em 0 .8em}\
th,td{border-bottom:1px solid #e1e1e1;padding:3px 9px;text-align:left;vertical-align:top}\
th{background:#f1f3f5;font-weight:600}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tr.cross td{background:#eef3ff}\
.tag{font-size:.8em;padding:0 .4em;border-radius:3px;background:#3d6fd6;color:#fff;white-space:nowrap}\
.missing{color:#6b4500;background:#fff8e8;border:1px solid #f1dfb5;padding:.3em .7em;border-radius:3px}\
.note{color:#555;font-size:.88em;margin:.3em 0}\
pre{background:#f6f7f9;border:1px solid #e1e4e8;padding:.6em .8em;overflow-x:auto;font-size:.84em}\
pre.cmd{background:#1f2328;color:#f0f0f0;border:none}\
.bar{display:inline-block;width:70px;height:9px;background:#eee;border:1px solid #bbb;vertical-align:middle}\
.bar span{display:block;height:100%;background:#d9822b}\
.share{white-space:nowrap}\
.scroll{overflow-x:auto}\
svg{max-width:100%;height:auto}\
footer{margin-top:3em;color:#777;font-size:.85em}\
@media print{body{max-width:none;padding:0;font-size:10pt}\
nav.toc{display:none}.download{display:none}.scroll{overflow:visible}\
table{font-size:8pt}th,td{padding:2px 5px}\
h2,h3{break-after:avoid}table,svg,pre.cmd,.verdict{break-inside:avoid}\
a{color:inherit;text-decoration:none}}";

/// The run's monitoring mode in words.
pub(crate) fn mode_line(run: &RunLog) -> String {
    use rill_log::MonitorFlags as F;
    let f = run.flags;
    if crate::load::sampled::is_sample_only(run) {
        let hz = f
            .sample_hz()
            .map_or("the default rate".to_owned(), |hz| format!("{hz} Hz"));
        format!(
            "sample mode ({f}) at {hz}: exact counts of dispatches, messages and waits; busy \
             and waiting times estimated from samples; no per-dispatch records"
        )
    } else if f.contains(F::FULL) {
        format!("{f}: every dispatch with its times, message counts and order")
    } else if f.contains(F::SCHEDULER) {
        format!("{f}: every dispatch with its times; what the flags leave out is noted per section")
    } else {
        format!("{f}: no dispatches recorded (no SCHEDULER flag and no samples)")
    }
}

/// The page's header: title, facts, the verdict as headline, warnings.
fn header(ctx: &Ctx<'_>, verdict: Option<&str>) -> String {
    let run = ctx.run;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<header>\n<h1>rill run report</h1>\n<div class=\"facts\"><span><b>{}</b></span></div>",
        esc(&run.dir.display().to_string())
    );
    // Dispatches as the runtime counts them (resumptions), its spins
    // before a block apart.
    let (dispatches, spins) = run.workers.iter().fold((0u64, 0u64), |(d, s), w| {
        (
            d.saturating_add(w.stats.resumptions()),
            s.saturating_add(w.stats.spins()),
        )
    });
    let spins = if spins > 0 {
        format!(", {spins} spins")
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "<div class=\"facts\"><span>wall {}</span><span>{} worker(s)</span><span>{} task(s)</span>\
         <span>{} stream(s)</span><span>{} dispatches{}</span><span>log {}</span></div>",
        html::ns(run.span_ns()),
        run.worker_count,
        run.tasks.len(),
        run.streams.len(),
        dispatches,
        spins,
        html::bytes(run.bytes())
    );
    if let Some(r) = &run.ranks {
        let _ = writeln!(
            o,
            "<div class=\"facts\">across ranks: {}</div>",
            esc(&r.describe())
        );
    }
    let _ = writeln!(
        o,
        "<div class=\"facts\">monitoring: {}</div>",
        esc(&mode_line(run))
    );
    match verdict {
        Some(v) => {
            let _ = writeln!(o, "<div class=\"verdict\"><b>Verdict</b>{}</div>", esc(v));
        }
        None => o.push_str(
            "<div class=\"warn\">The bottleneck analysis failed on these logs: no verdict.</div>\n",
        ),
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(
            o,
            "<div class=\"warn\">The logs have {} problem(s) (damaged records, missing or \
             truncated logs): the figures cover what could be read. See \
             <a href=\"#logs\">About these logs</a>.</div>",
            run.warnings.len()
        );
    }
    o.push_str("</header>\n");
    o
}

/// Writes the report of `run` as one HTML page (see the module
/// documentation). It does not fail: a section that cannot be drawn says
/// why in one line.
pub fn report_html(run: &RunLog, opts: &ReportOptions) -> String {
    let ctx = Ctx {
        run,
        opts,
        summary: OnceLock::new(),
        bottlenecks: OnceLock::new(),
        waits: OnceLock::new(),
        merged: OnceLock::new(),
    };
    let bodies: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = SECTIONS
            .iter()
            .map(|d| {
                let ctx = &ctx;
                s.spawn(move || (d.build)(ctx))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    html::missing(
                        "this section's analysis failed on these logs (an internal error; \
                         the message is on stderr)",
                    )
                })
            })
            .collect()
    });
    let verdict = ctx.bottlenecks.get().map(|b| b.verdict.as_str());

    let mut o = String::with_capacity(bodies.iter().map(String::len).sum::<usize>() + 8192);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>rill run report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&run.dir.display().to_string())
    );
    o.push_str(&header(&ctx, verdict));
    o.push_str("<nav class=\"toc\"><b>Contents</b>\n<ol>\n");
    for d in SECTIONS {
        let _ = writeln!(o, "<li><a href=\"#{}\">{}</a></li>", d.id, esc(d.title));
    }
    o.push_str("</ol>\n</nav>\n");
    for (d, body) in SECTIONS.iter().zip(&bodies) {
        let _ = write!(
            o,
            "<section id=\"{}\">\n<h2>{}</h2>\n{body}</section>\n",
            d.id,
            esc(d.title)
        );
    }
    let _ = writeln!(
        o,
        "<footer>Written by rill-mon {} (rill-mon report). Each figure is defined in \
         rill-monitor's README; the text commands (summary, waits, bottleneck, map) print the \
         same figures.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    o
}
