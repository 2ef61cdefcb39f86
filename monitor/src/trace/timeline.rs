//! `rill-mon timeline`: an SVG of task periods per worker (the paper's Figure 4).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rill_log::EndState;

use crate::load::bytes::Behind;

use crate::load::ids::IdIndex;

use crate::load::model::RunLog;
use crate::load::scan::{Item, ScannedPeriod};
use crate::render::number::{fmt_ms, fmt_ms_step, nice_step};
use crate::render::svg::{task_colour, xml_escape};
use crate::replay::merge::{Event, Events};
use crate::summary::summarize::end_state_name;

/// What to draw.
#[derive(Clone, Debug)]
pub struct TimelineOptions {
    /// Window start, milliseconds after the run's first time stamp (default: 0).
    pub from_ms: Option<f64>,
    /// Window end, milliseconds after the run's first time stamp (default: the
    /// run's end).
    pub to_ms: Option<f64>,
    /// Total picture width in pixels (default 1600).
    pub width_px: u32,
    /// Height of one worker lane in pixels (default 28).
    pub lane_height_px: u32,
    /// Most tasks listed in the legend (default 24).
    pub legend_max: usize,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            from_ms: None,
            to_ms: None,
            width_px: 1600,
            lane_height_px: 28,
            legend_max: 24,
        }
    }
}

/// Lane labels take this much room on the left.
const LEFT: f64 = 80.0;
const RIGHT: f64 = 40.0;
const TOP: f64 = 36.0;
const LANE_GAP: f64 = 8.0;
/// Room above each rank's group of lanes, for its label (runs across
/// ranks).
const RANK_GAP: f64 = 20.0;
/// Approximate width of a character of the 11px label font.
const CHAR_W: f64 = 6.2;

/// Sub-pixel items merged into one block per pixel column.
#[derive(Default)]
struct Column {
    col: Option<i64>,
    count: u64,
    ticks: u64,
}

struct Lane<'a> {
    out: &'a mut String,
    y: f64,
    h: f64,
}

impl Lane<'_> {
    /// Draws a merged column: periods over the lane's height, waits as a
    /// strip along its bottom (so both stay visible in one column).
    fn flush(&mut self, c: &mut Column, what: &str, fill: &str, npt: f64) {
        if let Some(col) = c.col.take() {
            let (y, h) = if what == "short waits" {
                (self.y + self.h * 0.75, self.h * 0.25)
            } else {
                (self.y + 1.0, self.h - 2.0)
            };
            let _ = write!(
                self.out,
                "<rect x=\"{col}\" y=\"{y:.1}\" width=\"1\" height=\"{h:.1}\" fill=\"{fill}\">\
                 <title>{} {what} ({} in all)</title></rect>",
                c.count,
                crate::render::number::fmt_ns(c.ticks as f64 * npt)
            );
            c.count = 0;
            c.ticks = 0;
        }
    }
}

/// Where a lane's items go: the window in ticks since `t0`, the plot's
/// width and a lane's height in pixels, and nanoseconds per tick.
#[derive(Clone, Copy)]
struct LaneGeometry {
    w0: f64,
    w1: f64,
    plot_w: f64,
    lane_h: f64,
    npt: f64,
}

/// One worker's lane.
pub(crate) struct LaneSvg {
    svg: String,
    /// Ticks drawn per task, in first-drawn order.
    drawn: Vec<(u64, u64)>,
    /// Whether periods narrower than a pixel were merged.
    any_narrow: bool,
}

/// Draws the lane of `run.workers[li]`.
fn lane(run: &RunLog, li: usize, g: &LaneGeometry) -> LaneSvg {
    lane_reading(run, li, g, true)
}

/// [`lane`], skipping the chunks outside the window or (`skip` false)
/// reading the whole log.
fn lane_reading(run: &RunLog, li: usize, g: &LaneGeometry, skip: bool) -> LaneSvg {
    let mut d = LaneDraw::new(run, li, g);
    if let Some(sm) = run
        .sampled
        .as_ref()
        .filter(|_| crate::load::sampled::is_sample_only(run))
    {
        let mut lane = Lane {
            out: &mut d.body,
            y: d.y,
            h: g.lane_h,
        };
        let (ix, drawn) = (&mut d.drawn_ix, &mut d.drawn);
        sampled_lane(run, sm, li, g, &mut lane, &mut |task, ticks| {
            add_drawn(ix, drawn, task, ticks)
        });
        return d.finish();
    }
    let w = &run.workers[li];
    // Only the chunks of the log that reach into the window (`load/chunks.rs`):
    // the rest hold nothing drawn. (Every time in a log is at or after
    // `t0`, where the offset from it grows with the time.)
    let rel = |t: u64| t.wrapping_sub(run.t0) as i64 as f64;
    let outside = |c: &crate::load::chunks::Chunk| {
        c.min_t <= c.max_t && c.min_t >= run.t0 && (rel(c.max_t) < g.w0 || rel(c.min_t) > g.w1)
    };
    let stretches = w.stretches(|c| !(skip && outside(c)));
    let (mut behind, mut n) = (Behind::default(), 0u32);
    for (mut sc, stop) in stretches {
        while sc.offset() < stop {
            let Some(item) = sc.next() else { break };
            n = n.wrapping_add(1);
            if n & 0xffff == 0 {
                behind.advance(w, sc.offset());
            }
            match item {
                Item::Period(p) => d.item(p.start, p.end.max(p.start), Some(&p)),
                Item::WorkerWait { t, dur } => d.item(t, t.saturating_add(dur), None),
                _ => {}
            }
        }
    }
    d.finish()
}

/// The lanes of the whole run's timeline ([`timeline_svg`] with `opts`),
/// from a merged pass's events (`replay/merge.rs`): each log's periods and waits
/// come in its order, as a lane reads them.
pub(crate) fn lanes_from(run: &RunLog, opts: &TimelineOptions, events: Events<'_>) -> Vec<LaneSvg> {
    let g = Frame::of(run, opts).geometry;
    let mut ds: Vec<LaneDraw<'_>> = (0..run.workers.len())
        .map(|li| LaneDraw::new(run, li, &g))
        .collect();
    events.for_each_event(true, |i, e| match e {
        Event::Period(p) => ds[i].item(p.p.start, p.p.end.max(p.p.start), Some(&p.p)),
        Event::Wait { t, dur } => ds[i].item(t, t.saturating_add(dur), None),
    });
    ds.into_iter().map(LaneDraw::finish).collect()
}

/// Adds `ticks` drawn of `task`.
fn add_drawn(ix: &mut IdIndex, drawn: &mut Vec<(u64, u64)>, task: u64, ticks: u64) {
    let (i, new) = ix.index(task, drawn.len());
    if new {
        drawn.push((task, 0));
    }
    drawn[i].1 = drawn[i].1.saturating_add(ticks);
}

/// The rank of `run.workers[li]`, in a run across ranks.
fn rank_of_lane(run: &RunLog, li: usize) -> Option<u32> {
    let ranks = run.ranks.as_ref()?;
    ranks.worker(run.workers[li].worker).map(|(r, _)| r)
}

/// How many ranks' groups of lanes start at or above lane `li` (`li` =
/// the number of lanes: all of them); 0 for one process's run.
fn rank_groups(run: &RunLog, li: usize) -> usize {
    if run.ranks.is_none() {
        return 0;
    }
    let mut groups = 0;
    let mut last = None;
    for i in 0..(li + 1).min(run.workers.len()) {
        let r = rank_of_lane(run, i);
        if i == 0 || r != last {
            groups += 1;
        }
        last = r;
    }
    groups
}

/// Where lane `li` starts: the lanes, one under the other, and the ranks'
/// labels above their groups.
fn lane_top(run: &RunLog, li: usize, lane_h: f64) -> f64 {
    TOP + li as f64 * (lane_h + LANE_GAP) + rank_groups(run, li) as f64 * RANK_GAP
}

/// A lane being drawn, item by item in its log's order.
struct LaneDraw<'r> {
    run: &'r RunLog,
    /// The worker's name (`3`, or `r1/w0` across ranks).
    worker: String,
    g: LaneGeometry,
    y: f64,
    body: String,
    drawn_ix: IdIndex,
    drawn: Vec<(u64, u64)>,
    any_narrow: bool,
    colours: BTreeMap<u64, String>,
    narrow: Column,
    narrow_wait: Column,
}

impl<'r> LaneDraw<'r> {
    /// The lane of `run.workers[li]`: its label and its frame.
    fn new(run: &'r RunLog, li: usize, g: &LaneGeometry) -> Self {
        let worker = run.worker_name(run.workers[li].worker);
        let (plot_w, lane_h) = (g.plot_w, g.lane_h);
        let y = lane_top(run, li, lane_h);
        let mut body = String::new();
        // Across ranks the label is the name alone (`r1/w0`): the room on
        // the left holds no more.
        let label = if run.ranks.is_some() {
            worker.clone()
        } else {
            format!("worker {worker}")
        };
        let _ = write!(
            body,
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"lane\">{}</text>\
             <rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{plot_w:.1}\" height=\"{lane_h:.1}\" \
             fill=\"#fff\" stroke=\"#bbb\"><title>worker {}: white = unaccounted time</title></rect>",
            LEFT - 8.0,
            y + lane_h / 2.0 + 4.0,
            xml_escape(&label),
            worker
        );
        LaneDraw {
            run,
            worker,
            g: *g,
            y,
            body,
            drawn_ix: IdIndex::default(),
            drawn: Vec::new(),
            any_narrow: false,
            colours: BTreeMap::new(),
            narrow: Column::default(),
            narrow_wait: Column::default(),
        }
    }

    fn x_of(&self, rel_ticks: f64) -> f64 {
        let g = &self.g;
        LEFT + (rel_ticks - g.w0) / (g.w1 - g.w0) * g.plot_w
    }

    /// Draws an item from `s` to `e` (ticks): a period, or (`None`) a wait
    /// of the worker.
    fn item(&mut self, s: u64, e: u64, period: Option<&ScannedPeriod>) {
        let LaneGeometry {
            w0,
            w1,
            lane_h,
            npt,
            ..
        } = self.g;
        let run = self.run;
        let rs = s.wrapping_sub(run.t0) as i64 as f64;
        let re = e.wrapping_sub(run.t0) as i64 as f64;
        if re < w0 || rs > w1 {
            return;
        }
        let x0 = self.x_of(rs.max(w0));
        let x1 = self.x_of(re.min(w1));
        let ticks = e - s;
        let y = self.y;
        let mut lane = Lane {
            out: &mut self.body,
            y,
            h: lane_h,
        };
        if x1 - x0 < 1.0 {
            // `floor` without a call to the library's (`x0` is at least
            // the plot's left edge, where truncation is the floor).
            let col = if x0 >= 0.0 {
                x0 as i64
            } else {
                x0.floor() as i64
            };
            let c = if period.is_some() {
                &mut self.narrow
            } else {
                &mut self.narrow_wait
            };
            if c.col != Some(col) {
                if period.is_some() {
                    lane.flush(c, "short periods", "url(#many)", npt);
                } else {
                    lane.flush(c, "short waits", "#a0a0a0", npt);
                }
                c.col = Some(col);
            }
            c.count += 1;
            c.ticks = c.ticks.saturating_add(ticks);
            if let Some(p) = period {
                add_drawn(&mut self.drawn_ix, &mut self.drawn, p.task, ticks);
                self.any_narrow = true;
            }
            return;
        }
        let (fill, label, title) = match period {
            Some(p) => {
                add_drawn(&mut self.drawn_ix, &mut self.drawn, p.task, ticks);
                let name = run.task_label(p.task);
                let fill = self
                    .colours
                    .entry(p.task)
                    .or_insert_with(|| task_colour(p.task))
                    .clone();
                let state = end_state_name(p.end_state);
                let on = match p.end_state {
                    EndState::BlockedInput { stream } | EndState::BlockedOutput { stream } => {
                        format!(" on stream {stream}")
                    }
                    _ => String::new(),
                };
                let title = format!(
                    "{name} (task {}) on worker {}: {} ms + {}, ended {state}{on}",
                    p.task,
                    self.worker,
                    fmt_ms(rs * npt / 1e6),
                    crate::render::number::fmt_ns(ticks as f64 * npt)
                );
                let full = format!("{name} ({state})");
                let room = x1 - x0 - 4.0;
                let label = if full.chars().count() as f64 * CHAR_W <= room {
                    Some(full)
                } else if name.chars().count() as f64 * CHAR_W <= room {
                    Some(name)
                } else {
                    None
                };
                (fill, label, title)
            }
            None => (
                "#a0a0a0".to_owned(),
                None,
                format!(
                    "worker {} waiting: {} ms + {}",
                    self.worker,
                    fmt_ms(rs * npt / 1e6),
                    crate::render::number::fmt_ns(ticks as f64 * npt)
                ),
            ),
        };
        let _ = write!(
            lane.out,
            "<rect x=\"{x0:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{fill}\">\
             <title>{}</title></rect>",
            y + 1.0,
            x1 - x0,
            lane_h - 2.0,
            xml_escape(&title)
        );
        if let Some(l) = label {
            let _ = write!(
                lane.out,
                "<text x=\"{:.2}\" y=\"{:.1}\" class=\"label\">{}</text>",
                x0 + 2.0,
                y + lane_h / 2.0 + 4.0,
                xml_escape(&l)
            );
        }
    }

    /// The lane, its last merged columns drawn.
    fn finish(mut self) -> LaneSvg {
        let mut lane = Lane {
            out: &mut self.body,
            y: self.y,
            h: self.g.lane_h,
        };
        lane.flush(&mut self.narrow, "short periods", "url(#many)", self.g.npt);
        lane.flush(&mut self.narrow_wait, "short waits", "#a0a0a0", self.g.npt);
        LaneSvg {
            svg: self.body,
            drawn: self.drawn,
            any_narrow: self.any_narrow,
        }
    }
}

/// A sample-mode run's lane: a column per window of samples of the worker,
/// its height split by what the samples found (tasks, biggest first, then
/// between tasks, spinning, idle, parked).
fn sampled_lane(
    run: &RunLog,
    sm: &crate::load::samples::Sampled,
    li: usize,
    g: &LaneGeometry,
    lane: &mut Lane<'_>,
    add_drawn: &mut impl FnMut(u64, u64),
) {
    let w = &run.workers[li];
    let x_of = |rel_ticks: f64| LEFT + (rel_ticks - g.w0) / (g.w1 - g.w0) * g.plot_w;
    for win in sm.windows.iter().filter(|x| x.worker == w.worker) {
        let rs = win.t.wrapping_sub(run.t0) as i64 as f64;
        let re = rs + win.dur as f64;
        if re < g.w0 || rs > g.w1 || win.total == 0 {
            continue;
        }
        let x0 = x_of(rs.max(g.w0));
        let x1 = x_of(re.min(g.w1)).max(x0 + 0.5);
        let per = win.dur as f64 / f64::from(win.total);
        let mut parts: Vec<(String, String, u32)> = win
            .tasks
            .iter()
            .map(|&(t, k)| {
                add_drawn(t, (f64::from(k) * per) as u64);
                (task_colour(t), run.task_label(t), k)
            })
            .collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.2));
        for (fill, what, k) in SAMPLED_KEYS
            .iter()
            .zip([win.sched, win.spin, win.idle, win.parked])
            .map(|((f, w), k)| (f, w, k))
        {
            parts.push(((*fill).to_owned(), (*what).to_owned(), k));
        }
        let mut yy = lane.y + 1.0;
        let unit = (g.lane_h - 2.0) / f64::from(win.total);
        for (fill, what, k) in parts.into_iter().filter(|p| p.2 > 0) {
            let h = f64::from(k) * unit;
            let _ = write!(
                lane.out,
                "<rect x=\"{x0:.2}\" y=\"{yy:.2}\" width=\"{:.2}\" height=\"{h:.2}\" \
                 fill=\"{fill}\"><title>{}</title></rect>",
                x1 - x0,
                xml_escape(&format!(
                    "worker {} from {} ms for {}: {what}, {k} of {} samples",
                    run.worker_name(w.worker),
                    fmt_ms(rs * g.npt / 1e6),
                    crate::render::number::fmt_ns(win.dur as f64 * g.npt),
                    win.total
                ))
            );
            yy += h;
        }
    }
}

/// The colours of a sampled lane's states other than a running task.
const SAMPLED_KEYS: [(&str, &str); 4] = [
    ("#e8e8e8", "between tasks"),
    ("#c0c0c0", "spinning"),
    ("#a0a0a0", "idle"),
    ("#808080", "parked"),
];

/// Opens the group of rank `rank`'s lanes (the first at `top`) with its
/// label: the rank, its workers and how its clock was aligned.
fn rank_group_head(
    body: &mut String,
    run: &RunLog,
    ranks: &crate::load::ranks::model::Ranks,
    rank: Option<u32>,
    top: f64,
) {
    let info = rank.and_then(|r| ranks.ranks.iter().find(|i| i.rank == r));
    let (name, detail) = match info {
        Some(i) => (
            format!("rank {}", i.rank),
            format!(
                "{} worker(s); clock offset {} ns{}",
                i.workers,
                i.clock_offset_ns,
                match i.clock_residual_ns {
                    Some(ns) => format!(", aligned within ±{ns} ns"),
                    None if i.described => ", residual not stated".to_owned(),
                    None => ", no rank.json: not aligned".to_owned(),
                }
            ),
        ),
        None => ("no rank".to_owned(), "workers no rank has".to_owned()),
    };
    let _ = write!(
        body,
        "<g class=\"rank\" data-rank=\"{}\"><text x=\"{LEFT}\" y=\"{:.1}\" class=\"rank-label\">{}\
         <title>{}</title></text>",
        rank.map_or_else(|| "-".to_owned(), |r| r.to_string()),
        top - 6.0,
        xml_escape(&format!("{name}: {detail}")),
        xml_escape(&format!("{} in {}", name, run.dir.display()))
    );
}

/// Draws the timeline (one lane per worker; periods coloured per task and
/// labelled with the task name and end state where wide enough; waits grey;
/// unaccounted time white; periods narrower than a pixel merged into one
/// hatched block per pixel column; a time axis in milliseconds; a legend).
pub fn timeline_svg(run: &RunLog, opts: &TimelineOptions) -> String {
    timeline_svg_with(run, opts, None)
}

/// The window, the plot and the lanes' geometry of a timeline.
struct Frame {
    from_ms: f64,
    to_ms: f64,
    width: f64,
    axis_y: f64,
    geometry: LaneGeometry,
}

impl Frame {
    fn of(run: &RunLog, opts: &TimelineOptions) -> Self {
        let npt = run.calibration.ns_per_tick();
        let tpn = 1.0 / npt;
        let span_ms = run.span_ns() as f64 / 1e6;
        let from_ms = opts.from_ms.unwrap_or(0.0).max(0.0);
        let mut to_ms = opts.to_ms.unwrap_or(span_ms);
        if to_ms <= from_ms {
            to_ms = from_ms + span_ms.max(1e-3) * 1e-3 + 1e-6;
        }
        let width = f64::from(opts.width_px.max(200));
        let lane_h = f64::from(opts.lane_height_px.max(8));
        let nlanes = run.workers.len();
        Frame {
            from_ms,
            to_ms,
            width,
            axis_y: lane_top(run, nlanes, lane_h),
            // The window in ticks relative to t0.
            geometry: LaneGeometry {
                w0: from_ms * 1e6 * tpn,
                w1: to_ms * 1e6 * tpn,
                plot_w: width - LEFT - RIGHT,
                lane_h,
                npt,
            },
        }
    }
}

/// [`timeline_svg`], with the lanes drawn already (by [`lanes_from`]) or
/// (`None`) drawn here, each from its own log, side by side on the
/// available cores.
pub(crate) fn timeline_svg_with(
    run: &RunLog,
    opts: &TimelineOptions,
    lanes: Option<&[LaneSvg]>,
) -> String {
    let Frame {
        from_ms,
        to_ms,
        width,
        axis_y,
        geometry,
    } = Frame::of(run, opts);
    let plot_w = geometry.plot_w;
    let own: Vec<LaneSvg>;
    let drawn_lanes = match lanes {
        Some(lanes) => lanes,
        None => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let lis: Vec<usize> = (0..run.workers.len()).collect();
            own = crate::load::pool::parallel(&lis, cores, |&li| Ok(lane(run, li, &geometry)))
                .unwrap_or_default();
            &own
        }
    };
    let mut body = String::new();
    // task -> ticks drawn in the window (for the legend order)
    let mut drawn_ix = IdIndex::default();
    let mut drawn: Vec<(u64, u64)> = Vec::new();
    let mut any_narrow = false;
    let mut group = None;
    for (li, l) in drawn_lanes.iter().enumerate() {
        if let Some(ranks) = &run.ranks {
            let r = rank_of_lane(run, li);
            if li == 0 || r != group {
                if li > 0 {
                    body.push_str("</g>");
                }
                group = r;
                rank_group_head(&mut body, run, ranks, r, lane_top(run, li, geometry.lane_h));
            }
        }
        body.push_str(&l.svg);
        any_narrow |= l.any_narrow;
        for &(task, ticks) in &l.drawn {
            add_drawn(&mut drawn_ix, &mut drawn, task, ticks);
        }
    }

    if run.ranks.is_some() && !drawn_lanes.is_empty() {
        body.push_str("</g>");
    }

    // Time axis.
    let mut axis = String::new();
    let _ = write!(
        axis,
        "<line x1=\"{LEFT}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"#333\"/>",
        LEFT + plot_w
    );
    let step = nice_step(to_ms - from_ms, plot_w / 110.0);
    let mut k = (from_ms / step).ceil();
    let mut n = 0;
    while k * step <= to_ms + step * 1e-9 && n < 1000 {
        let ms = k * step;
        let x = LEFT + (ms - from_ms) / (to_ms - from_ms) * plot_w;
        let _ = write!(
            axis,
            "<line x1=\"{x:.2}\" y1=\"{axis_y:.1}\" x2=\"{x:.2}\" y2=\"{:.1}\" stroke=\"#333\"/>\
             <text x=\"{x:.2}\" y=\"{:.1}\" class=\"tick\">{}</text>",
            axis_y + 5.0,
            axis_y + 17.0,
            fmt_ms_step(ms, step)
        );
        k += 1.0;
        n += 1;
    }
    let _ = write!(
        axis,
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"tick\">time since the run's first record (ms)</text>",
        LEFT + plot_w / 2.0,
        axis_y + 32.0
    );

    // Legend: tasks by time drawn, then the fixed keys.
    let mut legend = String::new();
    let mut tasks = drawn;
    tasks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut entries: Vec<(String, String)> = tasks
        .iter()
        .take(opts.legend_max)
        .map(|&(id, _)| (task_colour(id), run.task_label(id)))
        .collect();
    if tasks.len() > opts.legend_max {
        entries.push((
            "none".to_owned(),
            format!("… {} more tasks", tasks.len() - opts.legend_max),
        ));
    }
    if run.sampled.is_some() && crate::load::sampled::is_sample_only(run) {
        for (fill, what) in SAMPLED_KEYS {
            entries.push((fill.to_owned(), what.to_owned()));
        }
        entries.push((
            "#fff".to_owned(),
            "sample mode: a column per window of samples, split by what they found".to_owned(),
        ));
    } else {
        entries.push(("#a0a0a0".to_owned(), "waiting".to_owned()));
        entries.push(("#fff".to_owned(), "unaccounted".to_owned()));
    }
    if any_narrow {
        entries.push(("url(#many)".to_owned(), "many short periods".to_owned()));
    }
    let legend_y = axis_y + 46.0;
    let (mut lx, mut ly) = (LEFT, legend_y);
    for (fill, text) in &entries {
        let w = 22.0 + text.chars().count() as f64 * CHAR_W + 16.0;
        if lx + w > width - RIGHT && lx > LEFT {
            lx = LEFT;
            ly += 18.0;
        }
        let _ = write!(
            legend,
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"14\" height=\"12\" fill=\"{fill}\" stroke=\"#888\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">{}</text>",
            ly,
            lx + 18.0,
            ly + 10.0,
            xml_escape(text)
        );
        lx += w;
    }
    let height = ly + 28.0;

    let title = format!(
        "rill run {}: {} worker(s){}, {} to {} ms",
        run.dir.display(),
        run.workers.len(),
        run.ranks
            .as_ref()
            .map_or_else(String::new, |r| format!(" on {} rank(s)", r.ranks.len())),
        fmt_ms_step(from_ms, step / 10.0),
        fmt_ms_step(to_ms, step / 10.0)
    );
    let mut svg = String::with_capacity(body.len() + axis.len() + legend.len() + 1024);
    let _ = write!(
        svg,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\">\n\
         <defs><pattern id=\"many\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" fill=\"#c8c8c8\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#777\" stroke-width=\"2\"/></pattern>\
         <style>.lane{{font-size:12px;text-anchor:end}} .label{{font-size:11px;fill:#111}} \
         .rank-label{{font-size:12px;font-weight:bold;fill:#333}} \
         .tick{{font-size:11px;text-anchor:middle;fill:#333}} .title{{font-size:14px}}</style></defs>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
         <text x=\"{LEFT}\" y=\"20\" class=\"title\">{}</text>\n",
        xml_escape(&title)
    );
    svg.push_str("<g class=\"lanes\">");
    svg.push_str(&body);
    svg.push_str("</g>\n<g class=\"axis\">");
    svg.push_str(&axis);
    svg.push_str("</g>\n<g class=\"legend\">");
    svg.push_str(&legend);
    svg.push_str("</g>\n</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lanes drawn from a merged pass's events are the lanes drawn from
    /// each log, for the whole run and for a window.
    #[test]
    fn lanes_from_merged_events_are_the_lanes_read_from_the_logs() {
        let (_dir, run) = crate::replay::chunky_logs::run();
        for (from_ms, to_ms) in [(None, None), (Some(0.007), Some(0.0072))] {
            let opts = TimelineOptions {
                from_ms,
                to_ms,
                ..TimelineOptions::default()
            };
            let g = Frame::of(&run, &opts).geometry;
            let merged = lanes_from(&run, &opts, Events::Run(&run));
            assert_eq!(merged.len(), 2);
            for (li, m) in merged.iter().enumerate() {
                let own = lane(&run, li, &g);
                assert_eq!(
                    (&m.svg, &m.drawn, m.any_narrow),
                    (&own.svg, &own.drawn, own.any_narrow)
                );
            }
            assert!(merged.iter().all(|m| m.svg.contains("<rect")));
        }
    }

    /// A lane drawn from the chunks that reach into its window is the lane
    /// drawn from the whole log, for windows anywhere in the run, at its
    /// edges and past them.
    #[test]
    fn skipping_chunks_draws_the_same_lanes() {
        let (_dir, run) = crate::replay::chunky_logs::run();
        let end = (run.t1 - run.t0) as f64;
        for (w0, w1) in [
            (0.0, end),
            (100.0, 900.0),
            (7_000.0, 7_300.0),
            (7_200.0, 7_250.0),
            (20_000.0, 30_000.0),
            (end - 5.0, end + 50.0),
            (end + 1.0, end + 2.0),
        ] {
            let g = LaneGeometry {
                w0,
                w1,
                plot_w: 800.0,
                lane_h: 20.0,
                npt: 1.0,
            };
            for li in 0..2 {
                let (a, b) = (
                    lane_reading(&run, li, &g, true),
                    lane_reading(&run, li, &g, false),
                );
                assert_eq!(a.svg, b.svg, "[{w0}, {w1}] lane {li}");
                assert_eq!(a.drawn, b.drawn);
                assert_eq!(a.any_narrow, b.any_narrow);
            }
        }
    }
}
