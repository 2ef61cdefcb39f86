//! `rill-mon diff A B`: two runs side by side, the largest changes first.
//!
//! What is compared (each figure as [`summarize`](crate::summarize) and
//! [`waits`](crate::explain::waits()) define it; B − A, relative to A):
//!
//! * the run: wall time (the span, first to last time stamp), busy time,
//!   waiting time WT and waiting events WE over all workers, dispatches,
//!   the waiting on streams and the part of it across workers;
//! * per worker, matched by worker id: busy, WT, WE;
//! * per task group ([`group_of`]: numeric path segments folded, so runs of
//!   different sizes or worker counts still match; `--no-group` compares
//!   task names), matched by name: tasks, dispatches, busy time, and the
//!   group's stream waits (how often and how long its tasks were blocked
//!   reading an empty or writing a full stream, to their next dispatch);
//! * per (writer, reader) pair of groups: its stream waits and whether its
//!   streams crossed workers.
//!
//! The ranking holds the times of the rows found in both runs (worker busy
//! and WT, group busy and waits), by the size of the change;
//! rows found in one run only are listed as unmatched, not ranked. The
//! relative ranking leaves out times under 1% of the longer wall time.
//!
//! The latency replay is not needed, so neither run pays for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::explain::waits::{notes_and_warnings, waits, Waits};
use crate::load::groups::group_of;
use crate::load::model::RunLog;
use crate::render::number::fmt_ns;
use crate::render::table::table;
use crate::summary::model::Summary;
use crate::summary::summarize::summarize_totals;

/// A figure in A and in B. Times are nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Change {
    /// The figure in A (`null`: the row is not in A).
    pub a: Option<u64>,
    /// The figure in B (`null`: the row is not in B).
    pub b: Option<u64>,
    /// B − A (a missing side counts 0; saturating).
    pub delta: i64,
    /// `delta / A` (`null` when A is missing or 0).
    pub relative: Option<f64>,
}

impl Change {
    /// The change from `a` to `b`.
    pub fn new(a: Option<u64>, b: Option<u64>) -> Self {
        let (x, y) = (a.unwrap_or(0), b.unwrap_or(0));
        let delta = i128::from(y) - i128::from(x);
        let delta = delta.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        Change {
            a,
            b,
            delta,
            relative: (x > 0).then(|| delta as f64 / x as f64),
        }
    }

    fn both(a: u64, b: u64) -> Self {
        Change::new(Some(a), Some(b))
    }

    /// The larger of the two sides (a missing side counts 0).
    fn larger(&self) -> u64 {
        self.a.unwrap_or(0).max(self.b.unwrap_or(0))
    }
}

/// One run of the two.
#[derive(Clone, Debug, Serialize)]
pub struct DiffSide {
    /// The log directory.
    pub dir: String,
    /// Workers, from the headers.
    pub workers: u32,
    /// The monitoring flags the run recorded.
    pub flags: String,
    /// The run's span (wall time), ns.
    pub span_ns: u64,
    /// Tasks seen.
    pub tasks: u64,
    /// Problems with its logs.
    pub warnings: Vec<String>,
}

/// One row of the run totals.
#[derive(Clone, Debug, Serialize)]
pub struct TotalDiff {
    /// What is compared (`wall`, `busy`, `wait`, `waiting_events`,
    /// `dispatches`, `stream_wait`, `cross_worker_wait`).
    pub quantity: String,
    /// Whether it is a time (ns) or a count.
    pub unit: String,
    /// A and B.
    #[serde(flatten)]
    pub change: Change,
}

/// One worker in both runs (or in one).
#[derive(Clone, Debug, Serialize)]
pub struct WorkerDiff {
    /// Worker id.
    pub worker: u32,
    /// Busy time.
    pub busy_ns: Change,
    /// Waiting time WT.
    pub wait_ns: Change,
    /// Waiting events WE.
    pub waiting_events: Change,
    /// Dispatches.
    pub dispatches: Change,
}

/// One task group (or task) in both runs (or in one).
#[derive(Clone, Debug, Serialize)]
pub struct GroupDiff {
    /// The group (or task name with `--no-group`).
    pub group: String,
    /// Tasks in it.
    pub tasks: Change,
    /// Dispatches.
    pub dispatches: Change,
    /// Busy time.
    pub busy_ns: Change,
    /// Times its tasks were blocked on a stream (reading it empty or
    /// writing it full).
    pub waits: Change,
    /// How long, in all (to the next dispatch).
    pub wait_ns: Change,
}

/// The stream waits between a writer and a reader group.
#[derive(Clone, Debug, Serialize)]
pub struct PairDiff {
    /// The writing group.
    pub writer: String,
    /// The reading group.
    pub reader: String,
    /// Messages carried.
    pub messages: Change,
    /// Reader and writer waits on the pair's streams.
    pub waits: Change,
    /// Their time.
    pub wait_ns: Change,
    /// Whether any of its streams crossed workers in A (`null`: not in A).
    pub cross_a: Option<bool>,
    /// The same in B.
    pub cross_b: Option<bool>,
}

/// A time found in both runs, for the rankings.
#[derive(Clone, Debug, Serialize)]
pub struct Ranked {
    /// `worker` or `group`.
    pub kind: String,
    /// `worker N` or the group name.
    pub name: String,
    /// `busy`, `wait` (WT for a worker, stream waits otherwise).
    pub quantity: String,
    /// A and B, ns.
    #[serde(flatten)]
    pub change: Change,
}

/// What is in one run only.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Unmatched {
    /// Worker ids.
    pub workers: Vec<u32>,
    /// Task groups (or names).
    pub groups: Vec<String>,
    /// Their busy time.
    pub groups_busy_ns: u64,
    /// Writer/reader pairs.
    pub pairs: u64,
}

/// What `rill-mon diff` prints.
#[derive(Clone, Debug, Serialize)]
pub struct RunDiff {
    /// Run A.
    pub a: DiffSide,
    /// Run B.
    pub b: DiffSide,
    /// Whether task names were folded into groups.
    pub grouped: bool,
    /// A's wall time over B's (above 1: B is faster; `null` when B's is 0).
    pub speedup: Option<f64>,
    /// One sentence: how much faster or slower B is, and the largest change.
    pub headline: String,
    /// The run totals.
    pub totals: Vec<TotalDiff>,
    /// Per worker, by id.
    pub workers: Vec<WorkerDiff>,
    /// Per task group, largest change first (unmatched ones last).
    pub groups: Vec<GroupDiff>,
    /// Per (writer, reader) group pair, largest change of waiting first.
    pub pairs: Vec<PairDiff>,
    /// Times in both runs, largest absolute change first.
    pub changes: Vec<Ranked>,
    /// Times in both runs of at least 1% of the longer wall time, largest
    /// relative change first (from 0 first).
    pub relative_changes: Vec<Ranked>,
    /// In A only.
    pub only_in_a: Unmatched,
    /// In B only.
    pub only_in_b: Unmatched,
    /// What limits the comparison (different programs, worker counts, flags).
    pub notes: Vec<String>,
}

/// What one run contributes.
struct Side {
    summary: Summary,
    waits: Waits,
    groups: BTreeMap<String, GroupSums>,
}

#[derive(Clone, Copy, Default)]
struct GroupSums {
    tasks: u64,
    dispatches: u64,
    busy_ns: u64,
    waits: u64,
    wait_ns: u64,
}

fn side(run: &RunLog, group: bool) -> Side {
    let summary = summarize_totals(run);
    let waits = waits(run, group);
    let key = |name: &str| -> String {
        if group {
            group_of(name).into_owned()
        } else {
            name.to_owned()
        }
    };
    let mut groups: BTreeMap<String, GroupSums> = BTreeMap::new();
    for t in &summary.tasks {
        let g = groups.entry(key(&t.name)).or_default();
        g.tasks += 1;
        g.dispatches = g.dispatches.saturating_add(t.dispatches);
        g.busy_ns = g.busy_ns.saturating_add(t.total_ns);
    }
    // Waits of a group: its tasks as readers and as writers. A `-` end is
    // a task the logs do not know.
    for p in &waits.task_pairs {
        if p.reader != "-" {
            let g = groups.entry(p.reader.clone()).or_default();
            g.waits = g.waits.saturating_add(p.reader_waits);
            g.wait_ns = g.wait_ns.saturating_add(p.reader_wait_ns);
        }
        if p.writer != "-" {
            let g = groups.entry(p.writer.clone()).or_default();
            g.waits = g.waits.saturating_add(p.writer_waits);
            g.wait_ns = g.wait_ns.saturating_add(p.writer_wait_ns);
        }
    }
    Side {
        summary,
        waits,
        groups,
    }
}

fn describe(s: &Side) -> DiffSide {
    DiffSide {
        dir: s.summary.dir.clone(),
        workers: s.summary.worker_count,
        flags: s.summary.flags.clone(),
        span_ns: s.summary.span_ns,
        tasks: s.summary.tasks.len() as u64,
        warnings: s.summary.warnings.clone(),
    }
}

fn sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::saturating_add)
}

/// Compares run `a` with run `b`; `group` folds task names with numeric
/// path segments into groups (see the module documentation).
pub fn diff(a: &RunLog, b: &RunLog, group: bool) -> RunDiff {
    // The two sides are independent passes: one on another thread.
    let (sa, sb) = std::thread::scope(|s| {
        let h = s.spawn(|| side(a, group));
        let sb = side(b, group);
        let sa = match h.join() {
            Ok(sa) => sa,
            Err(p) => std::panic::resume_unwind(p),
        };
        (sa, sb)
    });
    compare(&sa, &sb, group)
}

fn compare(sa: &Side, sb: &Side, group: bool) -> RunDiff {
    let (a, b) = (&sa.summary, &sb.summary);
    let totals = totals(sa, sb);

    // Workers, by id.
    let wa: BTreeMap<u32, _> = a.workers.iter().map(|w| (w.worker, w)).collect();
    let wb: BTreeMap<u32, _> = b.workers.iter().map(|w| (w.worker, w)).collect();
    let ids: BTreeSet<u32> = wa.keys().chain(wb.keys()).copied().collect();
    let mut only_in_a = Unmatched::default();
    let mut only_in_b = Unmatched::default();
    let workers: Vec<WorkerDiff> = ids
        .iter()
        .map(|id| {
            let (x, y) = (wa.get(id), wb.get(id));
            match (x, y) {
                (Some(_), None) => only_in_a.workers.push(*id),
                (None, Some(_)) => only_in_b.workers.push(*id),
                _ => {}
            }
            let c = |f: fn(&crate::summary::model::WorkerSummary) -> u64| {
                Change::new(x.map(|w| f(w)), y.map(|w| f(w)))
            };
            WorkerDiff {
                worker: *id,
                busy_ns: c(|w| w.busy_ns),
                wait_ns: c(|w| w.wait_ns),
                waiting_events: c(|w| w.waiting_events),
                dispatches: c(|w| w.dispatches),
            }
        })
        .collect();

    // Groups, by name.
    let names: BTreeSet<&String> = sa.groups.keys().chain(sb.groups.keys()).collect();
    let mut groups: Vec<GroupDiff> = names
        .into_iter()
        .map(|n| {
            let (x, y) = (sa.groups.get(n), sb.groups.get(n));
            match (x, y) {
                (Some(g), None) => {
                    only_in_a.groups.push(n.clone());
                    only_in_a.groups_busy_ns = only_in_a.groups_busy_ns.saturating_add(g.busy_ns);
                }
                (None, Some(g)) => {
                    only_in_b.groups.push(n.clone());
                    only_in_b.groups_busy_ns = only_in_b.groups_busy_ns.saturating_add(g.busy_ns);
                }
                _ => {}
            }
            let c = |f: fn(&GroupSums) -> u64| Change::new(x.map(f), y.map(f));
            GroupDiff {
                group: n.clone(),
                tasks: c(|g| g.tasks),
                dispatches: c(|g| g.dispatches),
                busy_ns: c(|g| g.busy_ns),
                waits: c(|g| g.waits),
                wait_ns: c(|g| g.wait_ns),
            }
        })
        .collect();
    let matched = |c: &Change| c.a.is_some() && c.b.is_some();
    let weight = |g: &GroupDiff| g.busy_ns.delta.unsigned_abs() + g.wait_ns.delta.unsigned_abs();
    groups.sort_by(|x, y| {
        matched(&y.busy_ns)
            .cmp(&matched(&x.busy_ns))
            .then(weight(y).cmp(&weight(x)))
            .then(x.group.cmp(&y.group))
    });

    // Pairs, by (writer, reader).
    let pa: BTreeMap<(&str, &str), _> = sa
        .waits
        .task_pairs
        .iter()
        .map(|p| ((p.writer.as_str(), p.reader.as_str()), p))
        .collect();
    let pb: BTreeMap<(&str, &str), _> = sb
        .waits
        .task_pairs
        .iter()
        .map(|p| ((p.writer.as_str(), p.reader.as_str()), p))
        .collect();
    let keys: BTreeSet<(&str, &str)> = pa.keys().chain(pb.keys()).copied().collect();
    let mut pairs: Vec<PairDiff> = keys
        .into_iter()
        .map(|k| {
            let (x, y) = (pa.get(&k), pb.get(&k));
            match (x, y) {
                (Some(_), None) => only_in_a.pairs += 1,
                (None, Some(_)) => only_in_b.pairs += 1,
                _ => {}
            }
            let c = |f: fn(&crate::explain::waits::PairWaits) -> u64| {
                Change::new(x.map(|p| f(p)), y.map(|p| f(p)))
            };
            PairDiff {
                writer: k.0.to_owned(),
                reader: k.1.to_owned(),
                messages: c(|p| p.messages),
                waits: c(|p| p.reader_waits.saturating_add(p.writer_waits)),
                wait_ns: c(|p| p.reader_wait_ns.saturating_add(p.writer_wait_ns)),
                cross_a: x.map(|p| p.cross_worker),
                cross_b: y.map(|p| p.cross_worker),
            }
        })
        .collect();
    pairs.sort_by(|x, y| {
        matched(&y.wait_ns)
            .cmp(&matched(&x.wait_ns))
            .then(
                y.wait_ns
                    .delta
                    .unsigned_abs()
                    .cmp(&x.wait_ns.delta.unsigned_abs()),
            )
            .then(y.wait_ns.larger().cmp(&x.wait_ns.larger()))
            .then((&x.writer, &x.reader).cmp(&(&y.writer, &y.reader)))
    });

    // The rankings: times found in both runs.
    let mut ranked: Vec<Ranked> = Vec::new();
    let mut rank = |kind: &str, name: String, quantity: &str, change: Change| {
        if matched(&change) && change.larger() > 0 {
            ranked.push(Ranked {
                kind: kind.to_owned(),
                name,
                quantity: quantity.to_owned(),
                change,
            });
        }
    };
    for w in &workers {
        rank("worker", format!("worker {}", w.worker), "busy", w.busy_ns);
        rank("worker", format!("worker {}", w.worker), "WT", w.wait_ns);
    }
    for g in &groups {
        rank("group", g.group.clone(), "busy", g.busy_ns);
        rank("group", g.group.clone(), "waits", g.wait_ns);
    }
    let mut changes = ranked;
    changes.sort_by(|x, y| {
        y.change
            .delta
            .unsigned_abs()
            .cmp(&x.change.delta.unsigned_abs())
            .then(x.kind.cmp(&y.kind))
            .then(x.name.cmp(&y.name))
            .then(x.quantity.cmp(&y.quantity))
    });
    let floor = a.span_ns.max(b.span_ns) / 100;
    let mut relative_changes: Vec<Ranked> = changes
        .iter()
        .filter(|r| r.change.larger() >= floor.max(1) && r.change.delta != 0)
        .cloned()
        .collect();
    let size = |r: &Ranked| r.change.relative.map_or(f64::INFINITY, f64::abs);
    relative_changes.sort_by(|x, y| size(y).total_cmp(&size(x)));

    let speedup = (b.span_ns > 0).then(|| a.span_ns as f64 / b.span_ns as f64);
    let notes = notes(sa, sb, &only_in_a, &only_in_b, group);
    let headline = headline(a.span_ns, b.span_ns, speedup, changes.first(), &notes);
    RunDiff {
        a: describe(sa),
        b: describe(sb),
        grouped: group,
        speedup,
        headline,
        totals,
        workers,
        groups,
        pairs,
        changes,
        relative_changes,
        only_in_a,
        only_in_b,
        notes,
    }
}

fn totals(sa: &Side, sb: &Side) -> Vec<TotalDiff> {
    let row = |quantity: &str, unit: &str, f: &dyn Fn(&Side) -> u64| TotalDiff {
        quantity: quantity.to_owned(),
        unit: unit.to_owned(),
        change: Change::both(f(sa), f(sb)),
    };
    vec![
        row("wall", "ns", &|s| s.summary.span_ns),
        row("busy", "ns", &|s| {
            sum(s.summary.workers.iter().map(|w| w.busy_ns))
        }),
        row("wait", "ns", &|s| {
            sum(s.summary.workers.iter().map(|w| w.wait_ns))
        }),
        row("waiting_events", "count", &|s| {
            sum(s.summary.workers.iter().map(|w| w.waiting_events))
        }),
        row("dispatches", "count", &|s| {
            sum(s.summary.workers.iter().map(|w| w.dispatches))
        }),
        row("stream_wait", "ns", &|s| s.waits.total_wait_ns),
        row("cross_worker_wait", "ns", &|s| s.waits.cross_worker_wait_ns),
    ]
}

fn notes(sa: &Side, sb: &Side, oa: &Unmatched, ob: &Unmatched, group: bool) -> Vec<String> {
    let (a, b) = (&sa.summary, &sb.summary);
    let mut notes = Vec::new();
    if a.worker_count != b.worker_count {
        notes.push(format!(
            "A ran on {} worker(s), B on {}: worker rows match by id, task groups by name",
            a.worker_count, b.worker_count
        ));
    }
    let common: Vec<&String> = sa
        .groups
        .keys()
        .filter(|g| sb.groups.contains_key(*g))
        .collect();
    // The share of a run's busy time in the groups both runs have.
    let shared = |s: &Side| {
        let all = sum(s.groups.values().map(|g| g.busy_ns));
        let inner = sum(common
            .iter()
            .filter_map(|g| s.groups.get(*g))
            .map(|g| g.busy_ns));
        if all == 0 {
            1.0
        } else {
            inner as f64 / all as f64
        }
    };
    if common.is_empty() && !(sa.groups.is_empty() && sb.groups.is_empty()) {
        notes.push(
            "A and B have no task group in common (different programs?): only the run totals and \
             the workers compare"
                .to_owned(),
        );
    } else if !common.is_empty() && shared(sa).min(shared(sb)) < 0.1 {
        let names: Vec<&str> = common.iter().take(4).map(|g| g.as_str()).collect();
        notes.push(format!(
            "A and B share only {} task group(s) ({}{}), holding under 10% of the busy time of \
             one of them (different programs?): read the run totals and the workers",
            common.len(),
            names.join(", "),
            if common.len() > names.len() {
                ", ..."
            } else {
                ""
            }
        ));
    } else if !oa.groups.is_empty() || !ob.groups.is_empty() {
        notes.push(format!(
            "{} task group(s) only in A, {} only in B ({}): not ranked",
            oa.groups.len(),
            ob.groups.len(),
            if group {
                "names that differ in more than numeric path segments"
            } else {
                "compare with groups to fold numbered names"
            }
        ));
    }
    if a.flags != b.flags {
        notes.push(format!(
            "the runs recorded different monitoring flags (A {}, B {}): a figure one of them did \
             not record shows as 0 there",
            a.flags, b.flags
        ));
    }
    let unnamed = |s: &Summary| s.tasks.iter().any(|t| t.name.starts_with("task#"));
    if unnamed(a) || unnamed(b) {
        notes.push("unnamed tasks (task#ID) match by id".to_owned());
    }
    for (label, s) in [("A", a), ("B", b)] {
        for n in &s.notes {
            notes.push(format!("{label}: {n}"));
        }
    }
    notes
}

/// A relative change: `+12%`, `-85%`, `+1.3%`; `new` or `gone` for a row
/// in one run only, `from 0` for a figure that was 0 in A.
fn fmt_rel(c: &Change) -> String {
    match (c.a, c.b, c.relative) {
        (None, Some(_), _) => "new".to_owned(),
        (Some(_), None, _) => "gone".to_owned(),
        (_, _, Some(r)) => pct(r),
        (_, _, None) if c.b.unwrap_or(0) > 0 => "from 0".to_owned(),
        _ => "-".to_owned(),
    }
}

/// `r` (a ratio) as a signed percentage: whole above 10%, one decimal below.
fn pct(r: f64) -> String {
    let p = r * 100.0;
    if p.abs() >= 10.0 {
        format!("{p:+.0}%")
    } else {
        format!("{p:+.1}%")
    }
}

/// A signed time: `+1.234 ms`, `-5 ns`, `0 ns`.
fn fmt_delta_ns(d: i64) -> String {
    let s = fmt_ns(d as f64);
    if d > 0 {
        format!("+{s}")
    } else {
        s
    }
}

fn fmt_delta(d: i64) -> String {
    if d > 0 {
        format!("+{d}")
    } else {
        d.to_string()
    }
}

fn headline(
    a: u64,
    b: u64,
    speedup: Option<f64>,
    top: Option<&Ranked>,
    notes: &[String],
) -> String {
    let (ta, tb) = (fmt_ns(a as f64), fmt_ns(b as f64));
    let mut h = match speedup {
        Some(s) if s >= 1.005 => format!("B is {s:.2}x faster than A ({ta} -> {tb})"),
        Some(s) if s > 0.0 && s <= 1.0 / 1.005 => {
            format!("B is {:.2}x slower than A ({ta} -> {tb})", 1.0 / s)
        }
        Some(_) if a == 0 => format!("A recorded no time span, B {tb}"),
        Some(_) => format!("A and B take the same time within 0.5% ({ta} -> {tb})"),
        None if a == 0 => "neither run recorded a time span".to_owned(),
        None => format!("B recorded no time span, A {ta}"),
    };
    match top {
        Some(r) if r.change.delta != 0 => {
            let by = match r.change.relative {
                Some(x) => pct(x),
                None => fmt_delta_ns(r.change.delta),
            };
            let _ = write!(
                h,
                "; the largest change: {} {} {by} ({} -> {})",
                r.name,
                r.quantity,
                fmt_ns(r.change.a.unwrap_or(0) as f64),
                fmt_ns(r.change.b.unwrap_or(0) as f64)
            );
        }
        _ if notes.iter().any(|n| n.contains("no task group in common")) => {
            h.push_str("; they share no task group");
        }
        _ => h.push_str("; no worker or task group changed"),
    }
    h.push('.');
    h
}

fn opt_ns(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| fmt_ns(v as f64))
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn cross(v: Option<bool>) -> String {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
    .to_owned()
}

/// The words for a run total.
fn total_label(quantity: &str) -> &str {
    match quantity {
        "wall" => "wall time (span)",
        "busy" => "busy, all workers",
        "wait" => "WT, all workers",
        "waiting_events" => "WE, all workers",
        "dispatches" => "dispatches",
        "stream_wait" => "waiting on streams (task time)",
        "cross_worker_wait" => "  across workers",
        other => other,
    }
}

/// The A, B, change and relative cells of a time.
fn ns_cells(c: &Change) -> [String; 4] {
    [opt_ns(c.a), opt_ns(c.b), fmt_delta_ns(c.delta), fmt_rel(c)]
}

impl RunDiff {
    /// The human-readable comparison, each table cut after `limit` rows
    /// (0 = all).
    pub fn to_text(&self, limit: usize) -> String {
        let mut o = String::new();
        for (label, s) in [("A", &self.a), ("B", &self.b)] {
            let _ = writeln!(
                o,
                "{label}: {} ({} worker(s), {} task(s), span {})",
                s.dir,
                s.workers,
                s.tasks,
                fmt_ns(s.span_ns as f64)
            );
        }
        let _ = writeln!(o, "\n{}", self.headline);
        let cut = |n: usize| if limit == 0 { n } else { n.min(limit) };
        let more = |o: &mut String, n: usize| {
            if n > cut(n) {
                let _ = writeln!(
                    o,
                    "  ... {} more rows (--limit 0 or --json lists all)",
                    n - cut(n)
                );
            }
        };

        o.push_str("\nrun (B - A; relative to A)\n");
        let rows: Vec<Vec<String>> = self
            .totals
            .iter()
            .map(|t| {
                let mut r = vec![total_label(&t.quantity).to_owned()];
                if t.unit == "ns" {
                    r.extend(ns_cells(&t.change));
                } else {
                    r.extend([
                        opt_n(t.change.a),
                        opt_n(t.change.b),
                        fmt_delta(t.change.delta),
                        fmt_rel(&t.change),
                    ]);
                }
                r
            })
            .collect();
        table(&mut o, &["", "A", "B", "change", "relative"], &rows, &[0]);

        if !self.changes.is_empty() {
            o.push_str("\nlargest changes (times in both runs)\n");
            let rows = |list: &[Ranked]| -> Vec<Vec<String>> {
                list.iter()
                    .map(|r| {
                        let mut v = vec![r.name.clone(), r.quantity.clone()];
                        v.extend(ns_cells(&r.change));
                        v
                    })
                    .collect()
            };
            let n = cut(self.changes.len()).min(10);
            table(
                &mut o,
                &["", "", "A", "B", "change", "relative"],
                &rows(&self.changes[..n]),
                &[0, 1],
            );
            if !self.relative_changes.is_empty() {
                o.push_str("\nlargest relative changes (times of at least 1% of the wall time)\n");
                let n = cut(self.relative_changes.len()).min(10);
                table(
                    &mut o,
                    &["", "", "A", "B", "change", "relative"],
                    &rows(&self.relative_changes[..n]),
                    &[0, 1],
                );
            }
        }

        o.push_str("\nworkers (WT = waiting time, WE = waiting events)\n");
        let rows: Vec<Vec<String>> = self
            .workers
            .iter()
            .map(|w| {
                let mut r = vec![w.worker.to_string()];
                let [a, b, d, rel] = ns_cells(&w.busy_ns);
                r.extend([a, b, d, rel]);
                let [a, b, d, _] = ns_cells(&w.wait_ns);
                r.extend([a, b, d]);
                r.extend([opt_n(w.waiting_events.a), opt_n(w.waiting_events.b)]);
                r
            })
            .collect();
        table(
            &mut o,
            &[
                "worker", "busy A", "busy B", "change", "rel", "WT A", "WT B", "change", "WE A",
                "WE B",
            ],
            &rows,
            &[],
        );

        if !self.groups.is_empty() {
            let _ = writeln!(
                o,
                "\n{} (largest change first; waits = blocked on a stream, to the next dispatch)",
                if self.grouped { "task groups" } else { "tasks" }
            );
            let rows: Vec<Vec<String>> = self.groups[..cut(self.groups.len())]
                .iter()
                .map(|g| {
                    let mut r = vec![
                        g.group.clone(),
                        format!("{}/{}", opt_n(g.tasks.a), opt_n(g.tasks.b)),
                    ];
                    r.extend(ns_cells(&g.busy_ns));
                    r.extend(ns_cells(&g.wait_ns));
                    r
                })
                .collect();
            table(
                &mut o,
                &[
                    "group", "tasks", "busy A", "busy B", "change", "rel", "waits A", "waits B",
                    "change", "rel",
                ],
                &rows,
                &[0],
            );
            more(&mut o, self.groups.len());
        }

        if !self.pairs.is_empty() {
            o.push_str("\nwaits per writer -> reader (largest change first)\n");
            let rows: Vec<Vec<String>> = self.pairs[..cut(self.pairs.len())]
                .iter()
                .map(|p| {
                    let mut r = vec![p.writer.clone(), p.reader.clone()];
                    r.extend(ns_cells(&p.wait_ns));
                    r.extend([cross(p.cross_a), cross(p.cross_b)]);
                    r
                })
                .collect();
            table(
                &mut o,
                &[
                    "writer", "reader", "waits A", "waits B", "change", "rel", "cross A", "cross B",
                ],
                &rows,
                &[0, 1],
            );
            more(&mut o, self.pairs.len());
        }

        for (label, u) in [("A", &self.only_in_a), ("B", &self.only_in_b)] {
            let mut parts = Vec::new();
            if !u.workers.is_empty() {
                let ids: Vec<String> = u.workers.iter().map(|w| w.to_string()).collect();
                parts.push(format!("worker(s) {}", ids.join(", ")));
            }
            if !u.groups.is_empty() {
                let shown = u.groups.len().min(8);
                let mut g = u.groups[..shown].join(", ");
                if u.groups.len() > shown {
                    let _ = write!(g, " and {} more", u.groups.len() - shown);
                }
                parts.push(format!(
                    "{} group(s) busy {} in all: {g}",
                    u.groups.len(),
                    fmt_ns(u.groups_busy_ns as f64)
                ));
            }
            if u.pairs > 0 {
                parts.push(format!("{} writer -> reader pair(s)", u.pairs));
            }
            if !parts.is_empty() {
                let _ = writeln!(o, "\nonly in {label}: {}", parts.join("; "));
            }
        }
        let mut warnings = Vec::new();
        for (label, s) in [("A", &self.a), ("B", &self.b)] {
            warnings.extend(s.warnings.iter().map(|w| format!("{label}: {w}")));
        }
        notes_and_warnings(&mut o, &self.notes, &warnings);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_and_their_words() {
        let c = Change::both(200, 30);
        assert_eq!((c.delta, c.relative), (-170, Some(-0.85)));
        assert_eq!(fmt_rel(&c), "-85%");
        assert_eq!(fmt_rel(&Change::both(1000, 1013)), "+1.3%");
        assert_eq!(fmt_rel(&Change::both(0, 5)), "from 0");
        assert_eq!(fmt_rel(&Change::new(None, Some(5))), "new");
        assert_eq!(fmt_rel(&Change::new(Some(5), None)), "gone");
        assert_eq!(fmt_rel(&Change::both(5, 0)), "-100%");
        assert_eq!(fmt_rel(&Change::both(0, 0)), "-");
        let huge = Change::both(u64::MAX, 0);
        assert_eq!(huge.delta, i64::MIN);
        assert_eq!(Change::both(0, u64::MAX).delta, i64::MAX);
        assert_eq!(fmt_delta_ns(1500), "+1.500 µs");
        assert_eq!(fmt_delta_ns(-7), "-7 ns");
    }

    #[test]
    fn headlines() {
        let top = Ranked {
            kind: "group".into(),
            name: "mc/star/*/step/*".into(),
            quantity: "waits".into(),
            change: Change::both(2_000_000, 300_000),
        };
        let h = headline(324_000_000, 200_000_000, Some(1.62), Some(&top), &[]);
        assert_eq!(
            h,
            "B is 1.62x faster than A (324.000 ms -> 200.000 ms); the largest change: \
             mc/star/*/step/* waits -85% (2.000 ms -> 300.000 µs)."
        );
        let h = headline(100, 150, Some(100.0 / 150.0), None, &[]);
        assert!(h.starts_with("B is 1.50x slower than A"), "{h}");
        assert!(h.ends_with("no worker or task group changed."), "{h}");
        let h = headline(1000, 1001, Some(1000.0 / 1001.0), None, &[]);
        assert!(h.starts_with("A and B take the same time"), "{h}");
        assert_eq!(
            headline(0, 0, None, None, &[]),
            "neither run recorded a time span; no worker or task group changed."
        );
    }
}
