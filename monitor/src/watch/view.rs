//! A [`Snapshot`] drawn in the terminal with ratatui: the run's status, a
//! line per worker with a bar and its history, the busiest task groups and
//! the streams with the most waits side by side (stacked on a narrow
//! terminal), the verdict, and the keys. After the run's end, its summary.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Sparkline, Table, Wrap};
use ratatui::Frame;

use super::follower::{RunState, Snapshot};
use super::model::{Source, WorkerRow};
use super::text;

/// Width of a worker's bar, cells.
const BAR: usize = 16;
/// Width of a worker's figures before its history.
const WORKER_TEXT: u16 = 63;
/// From this width on, groups and streams sit side by side.
const SIDE_BY_SIDE: u16 = 120;

/// What the view shows besides the snapshot.
#[derive(Debug, Default)]
pub(crate) struct Ui {
    /// The summary (and verdict) once the run ended.
    pub final_text: Option<String>,
    /// After the end: the last live figures instead of the summary.
    pub show_live: bool,
    /// The summary's first line shown.
    pub scroll: u16,
}

fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// A bar of eighths, `width` cells, filled to `share`.
fn bar(share: Option<f64>, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = share.map_or(0, |s| {
        (s.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize
    });
    let mut b = "█".repeat(eighths / 8);
    if eighths / 8 < width {
        b.push(PARTS[eighths % 8]);
        b.push_str(&" ".repeat(width - eighths / 8 - 1));
    }
    b
}

fn load_colour(share: Option<f64>) -> Color {
    match share {
        Some(s) if s >= 0.9 => Color::Red,
        Some(s) if s >= 0.6 => Color::Yellow,
        Some(_) => Color::Green,
        None => Color::DarkGray,
    }
}

fn worker_line(w: &WorkerRow) -> Line<'static> {
    let err = w
        .recent_error_pp
        .map(|e| format!("±{e:.1}"))
        .unwrap_or_default();
    let mut spans = vec![
        Span::styled(format!("w{:<3}", w.worker), bold()),
        Span::styled(
            bar(w.recent, BAR),
            Style::default().fg(load_colour(w.recent)).bg(Color::Black),
        ),
        Span::raw(format!(" {:>6} ", text::pct(w.recent))),
        Span::styled(format!("{err:<5}"), dim()),
        Span::raw(format!(" wait {:>6}", text::pct(w.recent_wait))),
        Span::raw(format!(" run {:>6}", text::pct(w.run))),
    ];
    if w.ended {
        spans.push(Span::styled(" ended", dim()));
    }
    Line::from(spans)
}

/// Draws `s` (see the module documentation).
pub(crate) fn draw(frame: &mut Frame, s: &Snapshot, ui: &Ui) {
    let area = frame.area();
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let status = Line::styled(text::status_line(s), bold());
    let source = Line::styled(text::source_line(&s.figures), dim());
    frame.render_widget(Paragraph::new(vec![status, source]), head);
    let ended = s.state == RunState::Ended;
    let keys = if ended {
        "q quit · ↑ ↓ PgUp PgDn Home End scroll · l live figures / summary"
    } else {
        "q quit"
    };
    let mut foot_spans = vec![Span::styled(keys, dim())];
    if !s.warnings.is_empty() {
        foot_spans.push(Span::styled(
            format!(" · {} warning(s): {}", s.warnings.len(), s.warnings[0]),
            Style::default().fg(Color::Yellow),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(foot_spans)), foot);
    match s.state {
        RunState::NoDirectory | RunState::NoLogs => {
            let p = Paragraph::new("The view starts when the run writes its first log.")
                .block(Block::bordered())
                .wrap(Wrap { trim: true });
            frame.render_widget(p, body);
        }
        RunState::Ended if !ui.show_live => draw_final(frame, body, ui),
        _ => draw_live(frame, body, s),
    }
}

fn draw_final(frame: &mut Frame, area: Rect, ui: &Ui) {
    let text = ui
        .final_text
        .as_deref()
        .unwrap_or("The run ended; its summary is being made...");
    let p = Paragraph::new(text)
        .block(Block::bordered().title(Span::styled(" summary of the run ", bold())))
        .scroll((ui.scroll, 0));
    frame.render_widget(p, area);
}

fn draw_live(frame: &mut Frame, area: Rect, s: &Snapshot) {
    let f = &s.figures;
    let shown = f.workers.len().min(16) as u16;
    // The tables as high as their rows (a header and borders), the verdict
    // below them; side by side both tables need the taller one's height.
    let side = area.width >= SIDE_BY_SIDE;
    let (g, r) = (f.groups.len().max(1) as u16, f.streams.len().max(1) as u16);
    let tables = if side { g.max(r) + 3 } else { g + r + 6 };
    let [workers, middle, verdict] = Layout::vertical([
        Constraint::Length(shown.max(1) + 2),
        Constraint::Length(tables),
        Constraint::Min(4),
    ])
    .areas(area);
    // Workers: figures, then the history of the busy share.
    let block = Block::bordered().title(Span::styled(
        format!(
            " workers · busy, last {:.1} s · history per {} ms ",
            f.window_s,
            super::BIN_MS
        ),
        bold(),
    ));
    let hidden = f.workers.len() - shown as usize;
    let block = if hidden > 0 {
        block.title_bottom(Line::from(format!("+{hidden} more ")).right_aligned())
    } else {
        block
    };
    let inner = block.inner(workers);
    frame.render_widget(block, workers);
    let rows = Layout::vertical(vec![Constraint::Length(1); shown as usize]).split(inner);
    for (w, row) in f.workers.iter().zip(rows.iter()) {
        let [left, right] =
            Layout::horizontal([Constraint::Length(WORKER_TEXT), Constraint::Min(0)]).areas(*row);
        frame.render_widget(Paragraph::new(worker_line(w)), left);
        let width = right.width as usize;
        let data: Vec<u64> = w
            .history
            .iter()
            .skip(w.history.len().saturating_sub(width))
            .map(|&x| (x * 100.0).round() as u64)
            .collect();
        let spark = Sparkline::default()
            .data(&data)
            .max(100)
            .style(Style::default().fg(Color::Cyan));
        frame.render_widget(spark, right);
    }
    // Task groups and streams.
    let [groups, streams] = if side {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(middle)
    } else {
        Layout::vertical([Constraint::Length(g + 3), Constraint::Length(r + 3)]).areas(middle)
    };
    if f.source != Some(Source::Counts) {
        let rows: Vec<Row> = f
            .groups
            .iter()
            .map(|g| Row::new(text::group_cells(g).map(Cell::from)))
            .collect();
        let more = (f.groups_more > 0).then(|| format!("+{} more ", f.groups_more));
        frame.render_widget(
            table(
                rows,
                &text::GROUP_COLUMNS,
                &[
                    Constraint::Min(16),
                    Constraint::Length(5),
                    Constraint::Length(6),
                    Constraint::Length(6),
                    Constraint::Length(10),
                ],
                format!(
                    "task groups · share of all workers' time, last {:.1} s and run{}",
                    f.window_s,
                    f.groups_error_pp
                        .map(|e| format!(" (±{e:.1})"))
                        .unwrap_or_default()
                ),
                more,
                "no task ran yet",
            ),
            groups,
        );
    } else {
        let p = Paragraph::new("No times: the run records neither periods nor samples.")
            .block(Block::bordered().title(" task groups "));
        frame.render_widget(p, groups);
    }
    let rows: Vec<Row> = f
        .streams
        .iter()
        .map(|r| Row::new(text::stream_cells(r).map(Cell::from)))
        .collect();
    let more = (f.streams_more > 0).then(|| format!("+{} more ", f.streams_more));
    let mut heads = text::STREAM_COLUMNS;
    heads[2] = "r-waits";
    heads[3] = "w-waits";
    frame.render_widget(
        table(
            rows,
            &heads,
            &[
                Constraint::Min(16),
                Constraint::Length(7),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Length(10),
            ],
            if f.stream_waits_recent {
                format!("streams · most waits, last {:.1} s", f.window_s)
            } else {
                "streams · most waits, of the ends closed so far".to_owned()
            },
            more,
            if f.stream_waits_recent {
                "no waits"
            } else {
                "none yet: sample mode counts a stream end's waits when it closes"
            },
        ),
        streams,
    );
    let p = Paragraph::new(text::verdict_text(s))
        .wrap(Wrap { trim: true })
        .block(Block::bordered().title(Span::styled(
            format!(" {} ", text::verdict_title(s)),
            bold(),
        )));
    frame.render_widget(p, verdict);
}

fn table<'a>(
    rows: Vec<Row<'a>>,
    heads: &[&'a str],
    widths: &[Constraint],
    title: String,
    more: Option<String>,
    empty_note: &'a str,
) -> Table<'a> {
    let mut block = Block::bordered().title(Span::styled(format!(" {title} "), bold()));
    if let Some(m) = more {
        block = block.title_bottom(Line::from(m).right_aligned());
    }
    if rows.is_empty() {
        return Table::new(
            vec![Row::new([Cell::from(Span::styled(empty_note, dim()))])],
            [Constraint::Min(0)],
        )
        .block(block);
    }
    Table::new(rows, widths.to_vec())
        .header(Row::new(heads.iter().map(|h| Cell::from(*h))).style(dim()))
        .block(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::model::{Figures, GroupRow, StreamRow};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(s: &Snapshot, ui: &Ui, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, s, ui)).unwrap();
        let buf = t.backend().buffer();
        let mut out = String::new();
        for y in 0..h {
            for x in 0..w {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            dir: "logs".into(),
            state: RunState::Running,
            quiet_s: 0.0,
            figures: Figures {
                source: Some(Source::Samples),
                mode: "sample".into(),
                worker_count: 2,
                elapsed_s: 4.0,
                window_s: 4.0,
                workers: vec![
                    WorkerRow {
                        worker: 0,
                        recent: Some(1.0),
                        recent_error_pp: Some(1.5),
                        run: Some(0.9),
                        history: vec![0.5; 200],
                        ..WorkerRow::default()
                    },
                    WorkerRow {
                        worker: 1,
                        recent: Some(0.25),
                        history: vec![0.25; 10],
                        ..WorkerRow::default()
                    },
                ],
                groups: vec![GroupRow {
                    group: "mc/star/*/step/*".into(),
                    tasks_recent: 3,
                    recent: 0.5,
                    run: 0.4,
                    ..GroupRow::default()
                }],
                streams: vec![StreamRow {
                    label: "mc/dispatch -> mc/star/*/step/*".into(),
                    streams: 4,
                    reader_waits: 17,
                    ..StreamRow::default()
                }],
                ..Figures::default()
            },
            verdict: Some("mc/collect holds the run back.".into()),
            verdict_age_s: Some(2.0),
            verdict_error: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_live_view_shows_workers_groups_streams_and_the_verdict() {
        for (w, h) in [(140, 30), (90, 40), (60, 20)] {
            let out = screen(&snapshot(), &Ui::default(), w, h);
            assert!(out.contains("logs: running, 4.0 s"), "{out}");
            assert!(out.contains("w0"), "{out}");
            assert!(out.contains("100.0%"), "{out}");
            if w >= 90 {
                assert!(out.contains("mc/star/*/step/*"), "{out}");
                assert!(out.contains("17"), "{out}");
                assert!(out.contains("mc/collect holds the run back."), "{out}");
            }
        }
    }

    #[test]
    fn the_end_shows_the_summary_and_scrolls() {
        let mut s = snapshot();
        s.state = RunState::Ended;
        let mut ui = Ui {
            final_text: Some((0..50).map(|i| format!("line {i}\n")).collect()),
            ..Ui::default()
        };
        let out = screen(&s, &ui, 80, 20);
        assert!(out.contains("summary of the run"), "{out}");
        assert!(out.contains("line 0"), "{out}");
        ui.scroll = 10;
        let out = screen(&s, &ui, 80, 20);
        assert!(!out.contains("line 0 "), "{out}");
        assert!(out.contains("line 10"), "{out}");
        ui.show_live = true;
        assert!(screen(&s, &ui, 80, 20).contains("w0"));
    }

    #[test]
    fn a_bar_has_eighths() {
        assert_eq!(bar(Some(1.0), 4), "████");
        assert_eq!(bar(Some(0.0), 4), "    ");
        assert_eq!(bar(Some(0.5 + 1.0 / 16.0), 2).chars().count(), 2);
        assert_eq!(bar(None, 3), "   ");
    }
}
