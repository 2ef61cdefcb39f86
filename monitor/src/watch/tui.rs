//! The terminal view's loop: poll the logs every interval, ask for the
//! verdict when it is due, draw, and answer keys in between. At the run's
//! end it asks for the summary and shows it (or, with `--exit-at-end`,
//! leaves the terminal as it found it and prints it).

use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use super::analyst::Analyst;
use super::follower::{Follower, RunState};
use super::view::{draw, Ui};
use super::{add_verdict, catch_up, has_time, WatchOptions};

/// The longest wait for a key before the loop looks at the analyses again.
const KEY_WAIT: Duration = Duration::from_millis(100);

/// Runs the terminal view until `q` (or the run's end, with
/// `exit_at_end`).
pub(crate) fn run(opts: &WatchOptions) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init()
        .map_err(|e| anyhow::anyhow!("cannot use the terminal: {e} (try --plain)"))?;
    let result = event_loop(&mut terminal, opts);
    ratatui::restore();
    if let Some(text) = result? {
        print!("{text}");
    }
    Ok(())
}

/// The summary's text, with the verdict.
fn final_text(analyst: &Analyst) -> Option<String> {
    let text = match analyst.final_result()? {
        Ok(f) => match &f.verdict {
            Some(v) => format!("bottleneck:\n  {v}\n\n{}", f.summary),
            None => f.summary.clone(),
        },
        Err(e) => format!("The summary could not be made: {e}\n"),
    };
    Some(text)
}

/// Returns the text to print after leaving the terminal, if any.
fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    opts: &WatchOptions,
) -> anyhow::Result<Option<String>> {
    let mut follower = Follower::new(&opts.dir);
    let mut analyst = Analyst::new(&opts.dir);
    let mut ui = Ui::default();
    let mut next_poll = Instant::now();
    let mut lines = 0u16;
    // Drawn only when something changed: a poll, an analysis, a key.
    let mut dirty = true;
    loop {
        let ended = follower.state() == RunState::Ended;
        if !ended && Instant::now() >= next_poll {
            catch_up(&mut follower, 4);
            next_poll = Instant::now() + opts.interval;
            dirty = true;
            match follower.state() {
                RunState::Running if has_time(&follower) => analyst.verdict_if_due(),
                RunState::Ended => analyst.ask_final(has_time(&follower)),
                _ => {}
            }
        }
        dirty |= analyst.collect();
        if ui.final_text.is_none() {
            if let Some(t) = final_text(&analyst) {
                if opts.exit_at_end {
                    return Ok(Some(t));
                }
                lines = u16::try_from(t.lines().count()).unwrap_or(u16::MAX);
                ui.final_text = Some(t);
                dirty = true;
            }
        }
        if dirty {
            let mut snap = follower.snapshot(&opts.snapshot);
            add_verdict(&mut snap, &analyst);
            terminal.draw(|frame| draw(frame, &snap, &ui))?;
            dirty = false;
        }
        let wait = if ended {
            KEY_WAIT
        } else {
            next_poll
                .saturating_duration_since(Instant::now())
                .min(KEY_WAIT)
        };
        if !event::poll(wait)? {
            continue;
        }
        let key = match event::read()? {
            Event::Key(k) if k.kind == KeyEventKind::Press => k,
            Event::Resize(..) => {
                dirty = true;
                continue;
            }
            _ => continue,
        };
        dirty = true;
        let page = terminal
            .size()
            .map_or(10, |s| s.height.saturating_sub(6).max(1));
        let last = lines.saturating_sub(1);
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(None),
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Ok(None),
            KeyCode::Char('l') => ui.show_live = !ui.show_live,
            KeyCode::Down | KeyCode::Char('j') => ui.scroll = (ui.scroll + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => ui.scroll = ui.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => {
                ui.scroll = ui.scroll.saturating_add(page).min(last)
            }
            KeyCode::PageUp => ui.scroll = ui.scroll.saturating_sub(page),
            KeyCode::Home => ui.scroll = 0,
            KeyCode::End => ui.scroll = last.saturating_sub(page),
            _ => {}
        }
    }
}
