//! The waiting relation (`waits`): per stream, folded by task group,
//! heaviest first, rows across workers marked; then per worker pair.

use std::fmt::Write as _;

use rill_log::MonitorFlags;

use super::html::{self, esc, Cell, Row};
use super::Ctx;

fn cross_tag(cross: bool) -> Cell {
    if cross {
        Cell::html("<span class=\"tag\">across workers</span>")
    } else {
        Cell::text("")
    }
}

/// The mark of a row that crosses ranks (`⇄ r0→r1`), else of one across
/// workers.
fn rank_tag(cross: bool, rank: &Option<String>) -> Cell {
    match rank {
        Some(m) => Cell::html(format!(
            "<span class=\"tag\">{} across ranks</span>",
            esc(m)
        )),
        None => cross_tag(cross),
    }
}

pub(super) fn body(ctx: &Ctx<'_>) -> String {
    let w = ctx.waits();
    let run = ctx.run;
    let mut o = String::new();
    if w.streams.is_empty() {
        if run.flags.contains(MonitorFlags::STREAM) || ctx.periods() {
            o.push_str(&html::para(
                "The run has no streams between its tasks: nothing waited on a stream.",
            ));
        } else {
            o.push_str(&html::missing(
                "waits: the run recorded neither streams (STREAM flag) nor periods ending \
                 blocked on one (SCHEDULER flag).",
            ));
        }
        return o;
    }
    let timed = ctx.periods();
    o.push_str(&html::para(
        "W(A,B) = A waited for B: a reader waits when it reads its stream empty (for the \
         writer), a writer when it writes it full (for the reader); each wait lasts to the \
         task's next dispatch.",
    ));
    if timed {
        let _ = writeln!(
            o,
            "<p>Waiting on streams: <b>{}</b>, of which across workers <b>{}</b> ({}).</p>",
            esc(&html::ns(w.total_wait_ns)),
            esc(&html::ns(w.cross_worker_wait_ns)),
            html::pct(w.cross_worker_wait_ns as f64, w.total_wait_ns as f64)
        );
        if let Some(r) = w.cross_rank_wait_ns {
            let _ = writeln!(
                o,
                "<p>Of it across ranks (on cross-rank streams, marked ⇄): <b>{}</b> ({}).</p>",
                esc(&html::ns(r)),
                html::pct(r as f64, w.total_wait_ns as f64)
            );
        }
    }
    if w.grouped {
        o.push_str(&html::note(
            "Names differing only in numeric path segments are folded (relay/* for relay/1, \
             relay/2, ...); a folded row adds up its streams (+N more).",
        ));
    }
    let n = ctx.cut(w.streams.len());
    let rows: Vec<Row> = w.streams[..n]
        .iter()
        .map(|s| {
            let mut id = match &s.stream_name {
                Some(name) => format!("{name} ({})", s.stream),
                None => s.stream.to_string(),
            };
            if s.streams > 1 {
                let _ = write!(id, " +{}", s.streams - 1);
            }
            let time = |ns| wait_time(timed, ns);
            Row {
                cells: vec![
                    Cell::text(id),
                    Cell::text(s.writer.clone()),
                    Cell::text(s.reader.clone()),
                    Cell::num(s.messages.to_string()),
                    Cell::num(s.reader_waits.to_string()),
                    time(s.reader_wait_ns),
                    Cell::num(s.writer_waits.to_string()),
                    time(s.writer_wait_ns),
                    rank_tag(s.cross_worker, &s.cross_rank),
                ],
                class: s.cross_worker.then_some("cross"),
            }
        })
        .collect();
    o.push_str("<div class=\"scroll\">\n");
    o.push_str(&html::table(
        &[
            "stream",
            "writer",
            "reader",
            "messages",
            "reader waits",
            "reader waited",
            "writer waits",
            "writer waited",
            "",
        ],
        &rows,
    ));
    o.push_str("</div>\n");
    o.push_str(&ctx.more(
        w.streams.len(),
        "stream rows",
        "rill-mon waits DIR --limit 0",
    ));

    if w.worker_pairs.len() > 1 || w.worker_pairs.iter().any(|p| p.cross_worker) {
        o.push_str("<h3>Between workers</h3>\n");
        let label = |x: Option<u32>| x.map_or_else(|| "-".to_owned(), |x| run.worker_name(x));
        let n = ctx.cut(w.worker_pairs.len());
        let rows: Vec<Row> = w.worker_pairs[..n]
            .iter()
            .map(|p| {
                let time = |ns| wait_time(timed, ns);
                Row {
                    cells: vec![
                        Cell::num(label(p.writer_worker)),
                        Cell::num(label(p.reader_worker)),
                        Cell::num(p.streams.to_string()),
                        Cell::num(p.messages.to_string()),
                        Cell::num(p.reader_waits.to_string()),
                        time(p.reader_wait_ns),
                        Cell::num(p.writer_waits.to_string()),
                        time(p.writer_wait_ns),
                        cross_tag(p.cross_worker),
                    ],
                    class: p.cross_worker.then_some("cross"),
                }
            })
            .collect();
        o.push_str(&html::table(
            &[
                "writers' worker",
                "readers' worker",
                "streams",
                "messages",
                "reader waits",
                "reader waited",
                "writer waits",
                "writer waited",
                "",
            ],
            &rows,
        ));
        o.push_str(&ctx.more(
            w.worker_pairs.len(),
            "worker pairs",
            "rill-mon waits DIR --limit 0",
        ));
    }
    if w.open_waits > 0 {
        o.push_str(&html::note(&format!(
            "{} wait(s) never ended (the task's last period ended blocked): counted to the \
             run's end.",
            w.open_waits
        )));
    }
    if w.unattributed_polls > 0 {
        o.push_str(&html::note(&format!(
            "{} poll wait(s) ({}) are on no stream: the period after them read nothing.",
            w.unattributed_polls,
            html::ns(w.unattributed_poll_ns)
        )));
    }
    o.push_str(&html::note(
        "A task counts on the worker that ran most of its busy time; a row is across workers \
         when its writer and reader ran on different ones. Wait counts are exact; a wait's time \
         includes the time from its wake-up to the dispatch.",
    ));
    if !timed {
        o.push_str(&html::missing(
            "wait times: they need periods (SCHEDULER flag); in sample mode the waits are \
             exact counts without durations.",
        ));
    }
    for n in &w.notes {
        if n.starts_with("no ") {
            o.push_str(&html::missing(n));
        }
    }
    o
}

/// A waiting time's cell: the time, or "-" for a run that recorded none.
fn wait_time(timed: bool, ns: u64) -> Cell {
    if timed {
        Cell::num(html::ns(ns))
    } else {
        Cell::num("-")
    }
}
