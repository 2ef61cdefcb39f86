//! Per task group ([`group_of`]: numbered names folded): tasks,
//! dispatches, busy time, messages, waits and the workers they ran on.

use std::collections::{BTreeMap, BTreeSet};

use super::html::{self, Cell, Row};
use super::Ctx;
use crate::load::groups::group_of;
use crate::summary::outlier::{group_outlier, OUTLIER_RATIO};

#[derive(Default)]
struct Group {
    tasks: u64,
    dispatches: u64,
    busy_ns: u64,
    reads: u64,
    writes: u64,
    waits: u64,
    wait_ns: u64,
    workers: BTreeSet<u32>,
    /// Its tasks: id, name, busy ns.
    members: Vec<(u64, String, u64)>,
}

fn workers_text(w: &BTreeSet<u32>) -> String {
    match w.len() {
        0 => "-".to_owned(),
        1..=4 => w.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        n => format!("{n} workers"),
    }
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let run = ctx.run;
    let mut o = String::new();
    if run.tasks.is_empty() {
        o.push_str(&html::missing(
            "task groups: the logs name no task and hold no dispatch (MAPPING and SCHEDULER \
             flags, or sample mode).",
        ));
        return o;
    }
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for t in run.tasks.values() {
        let g = groups.entry(group_of(&t.label()).into_owned()).or_default();
        g.tasks += 1;
        g.dispatches = g.dispatches.saturating_add(t.resumptions());
        g.busy_ns = g.busy_ns.saturating_add(run.ns(t.busy));
        g.reads = g.reads.saturating_add(t.reads);
        g.writes = g.writes.saturating_add(t.writes);
        g.members.push((t.id, t.label(), run.ns(t.busy)));
        if let Some(x) = t.ran_on.or(t.assigned) {
            g.workers.insert(x);
        }
    }
    // Waits of a group: its tasks as readers and as writers (`waits`' task
    // pairs, folded the same way).
    for p in &ctx.waits().task_pairs {
        if let Some(g) = groups.get_mut(&p.reader) {
            g.waits = g.waits.saturating_add(p.reader_waits);
            g.wait_ns = g.wait_ns.saturating_add(p.reader_wait_ns);
        }
        if let Some(g) = groups.get_mut(&p.writer) {
            g.waits = g.waits.saturating_add(p.writer_waits);
            g.wait_ns = g.wait_ns.saturating_add(p.writer_wait_ns);
        }
    }
    let total_busy = groups
        .values()
        .fold(0u64, |n, g| n.saturating_add(g.busy_ns)) as f64;
    let mut list: Vec<(String, Group)> = groups.into_iter().collect();
    list.sort_by(|a, b| {
        b.1.busy_ns
            .cmp(&a.1.busy_ns)
            .then(b.1.dispatches.cmp(&a.1.dispatches))
            .then(a.0.cmp(&b.0))
    });
    let timed = ctx.periods() || ctx.sampled();
    let waited = ctx.periods();
    let est = |s: String| if ctx.sampled() { format!("≈ {s}") } else { s };
    let n = ctx.cut(list.len());
    let rows: Vec<Row> = list[..n]
        .iter()
        .map(|(name, g)| {
            let mean = g
                .busy_ns
                .checked_div(g.dispatches)
                .map_or_else(|| "-".to_owned(), html::ns);
            Row::from(vec![
                Cell::text(name.clone()),
                Cell::num(g.tasks.to_string()),
                Cell::num(g.dispatches.to_string()),
                Cell::num(if timed {
                    est(html::ns(g.busy_ns))
                } else {
                    "-".into()
                }),
                Cell::html(if timed && total_busy > 0.0 {
                    html::share_bar(g.busy_ns as f64 / total_busy)
                } else {
                    "-".into()
                }),
                Cell::num(if timed { est(mean) } else { "-".into() }),
                Cell::num(g.reads.to_string()),
                Cell::num(g.writes.to_string()),
                Cell::num(g.waits.to_string()),
                Cell::num(if waited {
                    html::ns(g.wait_ns)
                } else {
                    "-".into()
                }),
                Cell::text(workers_text(&g.workers)),
            ])
        })
        .collect();
    o.push_str("<div class=\"scroll\">\n");
    o.push_str(&html::table(
        &[
            "group",
            "tasks",
            "dispatches",
            "busy",
            "of all busy",
            "per dispatch",
            "read",
            "written",
            "waits",
            "waited",
            "workers",
        ],
        &rows,
    ));
    o.push_str("</div>\n");
    o.push_str(&ctx.more(list.len(), "groups", "rill-mon summary DIR"));
    if timed {
        for (name, g) in &list {
            let members = g.members.iter().map(|(id, n, b)| (*id, n.as_str(), *b));
            if let Some(x) = group_outlier(members) {
                o.push_str(&html::caution(&format!(
                    "uneven group {name}: {}; its row's sums hide it (a task busy over {}x its \
                     group's median is flagged).",
                    x.describe(),
                    OUTLIER_RATIO
                )));
            }
        }
    }
    o.push_str(&html::note(
        "A group folds the tasks whose names differ only in numeric path segments \
         (mc/star/*/step/* for mc/star/3/step/7); unnamed tasks (task#ID) stay alone. Heaviest \
         busy time first. waits: how often the group's tasks were blocked on a stream (reading \
         it empty or writing it full), waited: how long, to their next dispatch. workers: where \
         its tasks ran (each task on the worker that ran most of it).",
    ));
    if ctx.sampled() {
        o.push_str(&html::note(
            "Sample mode: busy times are estimates from samples (see the run summary for their \
             bound); dispatches, messages and waits are exact counts.",
        ));
    }
    if !timed {
        o.push_str(&html::missing(
            "busy times: the run recorded neither periods (SCHEDULER flag) nor samples.",
        ));
    } else if !waited {
        o.push_str(&html::missing(
            "wait times: sample mode counts the waits but does not time them.",
        ));
    }
    if !run.flags.contains(rill_log::MonitorFlags::MAPPING) {
        o.push_str(&html::missing(
            "task names: the run did not record them (MAPPING flag), so no task folds into a \
             group.",
        ));
    }
    o
}
