//! A [`Snapshot`] as plain text: what `rill-mon watch --once` and `--plain`
//! print, and the lines the terminal view is made of.

use std::fmt::Write as _;

use super::follower::{RunState, Snapshot};
use super::model::{Figures, Source};

/// Width of a utilisation bar, characters.
const BAR: usize = 20;

/// A share as a percentage (`-` when unknown).
pub(crate) fn pct(x: Option<f64>) -> String {
    match x {
        Some(x) => format!("{:.1}%", x * 100.0),
        None => "-".to_owned(),
    }
}

/// A bar of `width` characters, filled to `share`.
pub(crate) fn bar(share: Option<f64>, width: usize) -> String {
    let n = share.map_or(0, |s| (s.clamp(0.0, 1.0) * width as f64).round() as usize);
    let mut b = "#".repeat(n);
    b.push_str(&".".repeat(width - n));
    b
}

/// One line saying where the run stands.
pub(crate) fn status_line(s: &Snapshot) -> String {
    let f = &s.figures;
    match s.state {
        RunState::NoDirectory => format!(
            "{}: waiting for the directory to appear (the run has not started)",
            s.dir
        ),
        RunState::NoLogs => format!("{}: waiting for the run's logs", s.dir),
        RunState::Running if f.source == Some(Source::Counts) => format!("{}: running", s.dir),
        RunState::Running => {
            let mut l = format!("{}: running, {:.1} s", s.dir, f.elapsed_s);
            if s.quiet_s >= 3.0 {
                let _ = write!(
                    l,
                    ", no new records for {:.0} s (stopped or killed?)",
                    s.quiet_s
                );
            }
            l
        }
        RunState::Ended if f.source == Some(Source::Counts) => format!("{}: ended", s.dir),
        RunState::Ended => format!("{}: ended after {:.1} s", s.dir, f.elapsed_s),
    }
}

/// One line saying where the figures come from.
pub(crate) fn source_line(f: &Figures) -> String {
    let workers = format!("{} worker(s)", f.worker_count);
    match f.source {
        Some(Source::Samples) => {
            let hz = f
                .sample_hz
                .map_or_else(|| "the default rate".to_owned(), |h| format!("{h} Hz"));
            format!(
                "monitor {}: times are estimates from samples ({hz}); {workers}",
                f.mode
            )
        }
        Some(Source::Periods) => format!(
            "monitor {}: times from the periods (exact); {workers}",
            f.mode
        ),
        Some(Source::Counts) => format!(
            "monitor {}: no periods or samples, so no times (names and counts only); {workers}",
            f.mode
        ),
        None => String::new(),
    }
}

/// The workers' heading.
pub(crate) fn workers_title(f: &Figures) -> String {
    format!("workers: busy over the last {:.1} s", f.window_s)
}

/// One worker's line (without a history).
pub(crate) fn worker_line(w: &super::model::WorkerRow) -> String {
    let err = w
        .recent_error_pp
        .map(|e| format!(" ±{e:.1}"))
        .unwrap_or_default();
    let end = if w.ended { "  ended" } else { "" };
    format!(
        "worker {:<3} [{}] {:>6}{err:<6}  waiting {:>6}  run {:>6}{end}",
        w.worker,
        bar(w.recent, BAR),
        pct(w.recent),
        pct(w.recent_wait),
        pct(w.run),
    )
}

/// The task groups' heading.
pub(crate) fn groups_title(f: &Figures) -> String {
    let err = f
        .groups_error_pp
        .map(|e| format!(", ±{e:.1} points"))
        .unwrap_or_default();
    format!(
        "busiest task groups: share of all workers' time, last {:.1} s and run{err}",
        f.window_s
    )
}

/// The task groups' column names.
pub(crate) const GROUP_COLUMNS: [&str; 5] = ["group", "tasks", "last", "run", "dispatches"];

/// A task group's cells.
pub(crate) fn group_cells(g: &super::model::GroupRow) -> [String; 5] {
    [
        g.group.clone(),
        g.tasks_recent.to_string(),
        pct(Some(g.recent)),
        pct(Some(g.run)),
        if g.dispatches > 0 {
            g.dispatches.to_string()
        } else {
            "-".to_owned()
        },
    ]
}

/// The streams' heading.
pub(crate) fn streams_title(f: &Figures) -> String {
    if f.stream_waits_recent {
        format!("streams with the most waits, last {:.1} s", f.window_s)
    } else {
        "streams with the most waits (exact counts of the ends closed so far)".to_owned()
    }
}

/// The streams' column names.
pub(crate) const STREAM_COLUMNS: [&str; 5] = [
    "stream (writer -> reader)",
    "streams",
    "reader waits",
    "writer waits",
    "messages",
];

/// A stream row's cells.
pub(crate) fn stream_cells(r: &super::model::StreamRow) -> [String; 5] {
    [
        r.label.clone(),
        r.streams.to_string(),
        r.reader_waits.to_string(),
        r.writer_waits.to_string(),
        r.messages.to_string(),
    ]
}

/// The verdict's heading.
pub(crate) fn verdict_title(s: &Snapshot) -> String {
    match (s.state, s.verdict_age_s) {
        (RunState::Ended, _) => "bottleneck, over the whole run".to_owned(),
        (_, Some(age)) => format!("bottleneck, over the run so far ({age:.0} s ago)"),
        _ => "bottleneck".to_owned(),
    }
}

/// The verdict, or why there is none.
pub(crate) fn verdict_text(s: &Snapshot) -> String {
    match (&s.verdict, s.figures.source) {
        (Some(v), _) => v.clone(),
        (None, Some(Source::Samples | Source::Periods)) if s.verdict_error.is_some() => format!(
            "not available yet: {}",
            s.verdict_error.as_deref().unwrap_or_default()
        ),
        (None, Some(Source::Counts)) => {
            "needs periods or samples (--monitor full or sample)".to_owned()
        }
        (None, Some(_)) => "computing...".to_owned(),
        (None, None) => String::new(),
    }
}

/// Lays `rows` out in columns (the first left-aligned, the others right).
fn columns(o: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |o: &mut String, cells: &[String]| {
        o.push_str("  ");
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i == 0 {
                o.push_str(c);
                o.push_str(&" ".repeat(pad));
            } else {
                o.push_str("  ");
                o.push_str(&" ".repeat(pad));
                o.push_str(c);
            }
        }
        o.push('\n');
    };
    let head: Vec<String> = head.iter().map(|h| h.to_string()).collect();
    line(o, &head);
    for r in rows {
        line(o, r);
    }
}

/// The whole snapshot as text.
pub fn snapshot_text(s: &Snapshot) -> String {
    let mut o = String::new();
    let f = &s.figures;
    let _ = writeln!(o, "{}", status_line(s));
    if f.source.is_none() {
        return o;
    }
    let _ = writeln!(o, "{}", source_line(f));
    if f.source == Some(Source::Counts) {
        let _ = writeln!(o, "\nbottleneck:\n  {}", verdict_text(s));
        return o;
    }
    let _ = writeln!(o, "\n{}", workers_title(f));
    for w in &f.workers {
        let _ = writeln!(o, "  {}", worker_line(w));
    }
    let _ = writeln!(o, "\n{}", groups_title(f));
    let rows: Vec<Vec<String>> = f.groups.iter().map(|g| group_cells(g).to_vec()).collect();
    if rows.is_empty() {
        o.push_str("  (no task ran yet)\n");
    } else {
        columns(&mut o, &GROUP_COLUMNS, &rows);
    }
    if f.groups_more > 0 {
        let _ = writeln!(o, "  ... and {} more", f.groups_more);
    }
    let _ = writeln!(o, "\n{}", streams_title(f));
    let rows: Vec<Vec<String>> = f.streams.iter().map(|r| stream_cells(r).to_vec()).collect();
    if rows.is_empty() {
        o.push_str("  (no waits yet)\n");
    } else {
        columns(&mut o, &STREAM_COLUMNS, &rows);
    }
    if f.streams_more > 0 {
        let _ = writeln!(o, "  ... and {} more", f.streams_more);
    }
    let v = verdict_text(s);
    if !v.is_empty() {
        let _ = writeln!(o, "\n{}:\n  {v}", verdict_title(s));
    }
    if !s.warnings.is_empty() {
        o.push_str("\nwarnings:\n");
        for w in &s.warnings {
            let _ = writeln!(o, "  {w}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::model::{GroupRow, StreamRow, WorkerRow};

    fn snapshot() -> Snapshot {
        Snapshot {
            dir: "logs".into(),
            state: RunState::Running,
            quiet_s: 0.0,
            figures: Figures {
                source: Some(Source::Samples),
                mode: "sample".into(),
                worker_count: 2,
                elapsed_s: 3.25,
                window_s: 3.0,
                workers: vec![
                    WorkerRow {
                        worker: 0,
                        recent: Some(0.5),
                        recent_error_pp: Some(1.4),
                        run: Some(0.25),
                        recent_wait: Some(0.5),
                        ..WorkerRow::default()
                    },
                    WorkerRow {
                        worker: 1,
                        ended: true,
                        ..WorkerRow::default()
                    },
                ],
                groups: vec![GroupRow {
                    group: "mc/star/*/step/*".into(),
                    tasks_recent: 12,
                    tasks_run: 20,
                    recent: 0.6,
                    run: 0.55,
                    dispatches: 0,
                }],
                groups_more: 2,
                streams: vec![StreamRow {
                    label: "a -> b".into(),
                    streams: 3,
                    reader_waits: 40,
                    writer_waits: 2,
                    messages: 1000,
                }],
                groups_error_pp: Some(1.0),
                ..Figures::default()
            },
            verdict: Some("b holds the run back.".into()),
            verdict_age_s: Some(1.0),
            verdict_error: None,
            warnings: vec!["worker-1.rlog: damaged".into()],
        }
    }

    #[test]
    fn the_text_has_every_part() {
        let t = snapshot_text(&snapshot());
        assert!(t.starts_with("logs: running, 3.2 s\n"), "{t}");
        assert!(
            t.contains("estimates from samples (the default rate)"),
            "{t}"
        );
        assert!(
            t.contains(
                "worker 0   [##########..........]  50.0% ±1.4   waiting  50.0%  run  25.0%"
            ),
            "{t}"
        );
        assert!(
            t.contains("worker 1   [....................]      -"),
            "{t}"
        );
        assert!(t.contains("ended"));
        assert!(
            t.contains("mc/star/*/step/*     12  60.0%  55.0%           -"),
            "{t}"
        );
        assert!(t.contains("... and 2 more"));
        assert!(t.contains("a -> b"));
        assert!(t.contains("ends closed so far"));
        assert!(t.contains("(1 s ago):\n  b holds the run back."), "{t}");
        assert!(t.contains("warnings:\n  worker-1.rlog: damaged"));
    }

    #[test]
    fn a_run_without_times_says_so_and_no_more() {
        let mut s = snapshot();
        s.figures.source = Some(Source::Counts);
        s.state = RunState::Ended;
        s.verdict = None;
        let t = snapshot_text(&s);
        assert!(t.starts_with("logs: ended\n"), "{t}");
        assert!(t.contains("no periods or samples"), "{t}");
        assert!(t.contains("needs periods or samples"), "{t}");
        assert!(!t.contains("worker 0"), "{t}");
    }

    #[test]
    fn waiting_and_silent_runs_say_so() {
        let mut s = snapshot();
        s.state = RunState::NoDirectory;
        s.figures = Figures::default();
        assert!(snapshot_text(&s).contains("waiting for the directory"));
        let mut s = snapshot();
        s.quiet_s = 12.0;
        assert!(snapshot_text(&s).contains("no new records for 12 s"));
    }
}
