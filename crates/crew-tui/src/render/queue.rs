//! The merge queue's view: the approved tasks in order with their state and how long they have
//! been in it, the test runs (each one's duration) and the queue's throughput, and the live
//! output of the test running now.

use std::time::SystemTime;

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::action::Action;
use crate::keymap::Mode;
use crate::queue_view::{QueueSnapshot, QueueView};
use crate::render::{age, plain, window_start};
use crate::state::AppState;
use crew_store::{EntryState, QueueRun};

pub fn render(state: &AppState, view: &QueueView, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let paused = matches!(&view.snapshot, Some(Ok(s)) if s.queue.paused);
    let title = if paused {
        " merge queue · PAUSED ".to_string()
    } else {
        " merge queue ".to_string()
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style("border.focus"))
        .title(Line::from(title).style(theme.style("title.focus")));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let snapshot = match &view.snapshot {
        None => {
            frame.render_widget(Paragraph::new(plain(theme.style("dim"), "loading…")), inner);
            return;
        }
        Some(Err(e)) => {
            let line = plain(theme.style("status.error"), e.clone());
            frame.render_widget(Paragraph::new(line), inner);
            return;
        }
        Some(Ok(snapshot)) => snapshot,
    };
    let rows_wanted = u16::try_from(snapshot.queue.entries.len().max(1)).unwrap_or(u16::MAX);
    let tasks_height = rows_wanted.saturating_add(2).min(inner.height / 2);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(tasks_height),
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(1),
        ])
        .split(inner);
    frame.render_widget(Paragraph::new(hint_line(state)), rows[0]);
    frame.render_widget(
        Paragraph::new(task_lines(state, view, snapshot, rows[1].height as usize)),
        rows[1],
    );
    frame.render_widget(
        Paragraph::new(plain(theme.style("title"), runs_line(snapshot))),
        rows[2],
    );
    frame.render_widget(
        Paragraph::new(plain(theme.style("dim"), "output of the test run:")),
        rows[3],
    );
    frame.render_widget(
        Paragraph::new(output_lines(state, snapshot, rows[4].height as usize)),
        rows[4],
    );
}

fn hint_line(state: &AppState) -> Line<'static> {
    let theme = &state.theme;
    let spans: Vec<Span> = [
        (Action::QueuePause, "pause / resume"),
        (Action::QueueRemove, "remove"),
        (Action::QueueRetry, "retry"),
        (Action::Back, "back"),
    ]
    .iter()
    .flat_map(|(a, label)| {
        let key = state.keymap.key_for(Mode::Queue, *a).unwrap_or_default();
        [
            Span::styled(format!(" {key} "), theme.style("approval.key")),
            Span::styled(format!(" {label} "), theme.style("dim")),
        ]
    })
    .collect();
    Line::from(spans)
}

fn task_lines(
    state: &AppState,
    view: &QueueView,
    snapshot: &QueueSnapshot,
    height: usize,
) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let entries = &snapshot.queue.entries;
    if entries.is_empty() {
        return vec![plain(
            theme.style("dim"),
            "nothing approved yet: A on a review in the approvals pane adds it",
        )];
    }
    let start = window_start(view.selected, height);
    entries
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(i, e)| {
            let style = theme.style(match e.state {
                EntryState::Waiting => "task.pending",
                EntryState::Testing => "task.in_progress",
                EntryState::Passed | EntryState::Merged => "task.completed",
                EntryState::Failed => "task.failed",
            });
            let subject = snapshot.subjects.get(&e.id).cloned().unwrap_or_default();
            let mut spans = vec![
                Span::styled(format!("{:<9}", e.id.to_string()), theme.style("text")),
                Span::styled(format!("{:<8} ", e.state.as_str()), style),
                Span::styled(format!("{:<32} ", clip(&subject, 32)), theme.style("text")),
                Span::styled(
                    format!("for {:<5}", since(state.now, &e.updated_at)),
                    theme.style("dim"),
                ),
            ];
            if let Some(note) = &e.note {
                spans.push(Span::styled(
                    format!(" {}", clip(note, 80)),
                    theme.style("dim"),
                ));
            }
            let line = Line::from(spans);
            if i == view.selected {
                line.style(theme.style("selection"))
            } else {
                line
            }
        })
        .collect()
}

/// `3 runs · last: task_1, task_2 passed in 1.2 s · 4.0 tasks/hour`.
fn runs_line(snapshot: &QueueSnapshot) -> String {
    let queue = &snapshot.queue;
    let mut text = format!("test runs: {}", queue.runs.len());
    if let Some(last) = queue.runs.last() {
        text.push_str(&format!(" · last: {}", run_text(last)));
    }
    if let Some(throughput) = queue.throughput_text() {
        text.push_str(&format!(" · {throughput}"));
    }
    text
}

fn run_text(run: &QueueRun) -> String {
    let ids: Vec<String> = run.tasks.iter().map(ToString::to_string).collect();
    let outcome = match run.outcome {
        crew_store::RunOutcome::Passed => "passed",
        crew_store::RunOutcome::Failed => "failed",
        crew_store::RunOutcome::BaseMoved => "base moved",
        crew_store::RunOutcome::Interrupted => "interrupted",
        crew_store::RunOutcome::NotRun => "not run",
    };
    format!(
        "{} {outcome} in {:.1} s",
        ids.join(", "),
        run.millis as f64 / 1000.0
    )
}

/// The test's output, its last lines, with control characters shown as `?` (agents' code
/// wrote it).
fn output_lines(state: &AppState, snapshot: &QueueSnapshot, height: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    if snapshot.output.trim().is_empty() {
        return vec![plain(theme.style("dim"), "no test output yet")];
    }
    let lines: Vec<&str> = snapshot.output.lines().collect();
    let skip = lines.len().saturating_sub(height);
    lines[skip..]
        .iter()
        .map(|l| {
            let clean: String = l
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            plain(theme.style("text"), clean)
        })
        .collect()
}

fn clip(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    if first.chars().count() <= max {
        return first.to_string();
    }
    let kept: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// How long ago the RFC 3339 time `at` was.
fn since(now: SystemTime, at: &str) -> String {
    let secs = humantime::parse_rfc3339_weak(at)
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .map_or(0, |d| d.as_secs());
    age(secs)
}
