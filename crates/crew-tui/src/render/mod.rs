//! Pure rendering: `render(state, frame)` draws everything from the state and nothing else.
//! Each pane only formats the rows it can show, so big stores cost nothing off-screen.

mod approvals;
pub(crate) mod conversation;
pub(crate) mod diff;
mod header;
pub(crate) mod lead;
mod mailboxes;
pub(crate) mod memories;
pub(crate) mod overlay;
mod queue;
mod tasks;
pub(crate) mod teammates;

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Paragraph};
use unicode_width::UnicodeWidthChar;

use crew_store::AgentState;

pub use overlay::help_lines;

use crate::layout::{areas, tab_cells};
use crate::state::{AppState, Level, PANES, Pane};

pub fn render(state: &AppState, frame: &mut Frame) {
    let area = frame.area();
    let Some(areas) = areas(state, area) else {
        let text = format!(
            "crew needs at least {}×{} (this is {}×{})",
            crate::layout::MIN_WIDTH,
            crate::layout::MIN_HEIGHT,
            area.width,
            area.height
        );
        frame.render_widget(
            Paragraph::new(text)
                .alignment(Alignment::Center)
                .style(state.theme.style("status.warning")),
            area,
        );
        return;
    };
    header::render(state, frame, areas.header);
    if let Some(tabs) = areas.tabs {
        render_tabs(state, frame, tabs);
    }
    match (&state.diff, &state.queue) {
        (Some(view), _) => diff::render(state, view, frame, areas.body),
        (None, Some(view)) => queue::render(state, view, frame, areas.body),
        (None, None) => {
            for (pane, rect) in &areas.panes {
                render_pane(state, *pane, frame, *rect);
            }
        }
    }
    render_status(state, frame, areas.status);
    overlay::render(state, frame, areas.body);
}

fn render_pane(state: &AppState, pane: Pane, frame: &mut Frame, area: Rect) {
    match pane {
        Pane::Lead => lead::render(state, frame, area),
        Pane::Teammates => teammates::render(state, frame, area),
        Pane::Tasks => tasks::render(state, frame, area),
        Pane::Mailboxes => mailboxes::render(state, frame, area),
        Pane::Approvals => approvals::render(state, frame, area),
    }
}

/// Tab labels, with the count that matters for each pane.
pub(crate) fn tab_labels(state: &AppState) -> Vec<String> {
    PANES
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let count = match p {
                Pane::Approvals => {
                    format!(
                        " ({})",
                        state.workspace.pending().len() + state.reviews.len()
                    )
                }
                Pane::Tasks => format!(" ({})", state.workspace.tasks.len()),
                _ => String::new(),
            };
            format!("{} {}{count}", i + 1, p.title())
        })
        .collect()
}

fn render_tabs(state: &AppState, frame: &mut Frame, area: Rect) {
    let labels = tab_labels(state);
    for ((pane, cell), label) in tab_cells(area, &labels).into_iter().zip(&labels) {
        let style = if pane == state.focus {
            state.theme.style("tab.active")
        } else if pane == Pane::Approvals
            && !(state.workspace.pending().is_empty() && state.reviews.is_empty())
        {
            state.theme.style("msg.pending")
        } else {
            state.theme.style("tab")
        };
        frame.render_widget(Paragraph::new(format!(" {label} ")).style(style), cell);
    }
}

fn render_status(state: &AppState, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let help = state
        .keymap
        .key_for(state.mode(), crate::action::Action::Help)
        .map(|k| format!("{k} help"))
        .unwrap_or_default();
    let line = match (&state.status, state.warnings.last()) {
        (Some((level, text)), _) => {
            let key = match level {
                Level::Info => "status",
                Level::Warning => "status.warning",
                Level::Error => "status.error",
            };
            Line::from(Span::styled(text.clone(), theme.style(key)))
        }
        // A broken crew.toml blocks nothing: answers go on with the last good configuration.
        (None, _) if let Some(e) = &state.workspace.config_error => Line::from(Span::styled(
            format!("crew.toml: {e} (answers still work with the last good one)"),
            theme.style("status.warning"),
        )),
        (None, Some(w)) => Line::from(vec![
            Span::styled(
                format!("{} warning(s): ", state.warnings.len()),
                theme.style("status.warning"),
            ),
            Span::styled(w.to_string(), theme.style("status.warning")),
        ]),
        (None, None) => Line::from(Span::styled(
            format!("{} · {help}", state.mode().name()),
            theme.style("status"),
        )),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A pane's frame: highlighted when focused.
pub(crate) fn pane_block<'a>(state: &AppState, pane: Pane, title: Line<'a>) -> Block<'a> {
    let focused = state.focus == pane && state.diff.is_none() && state.queue.is_none();
    let theme = &state.theme;
    let (border, title_style) = if focused {
        (theme.style("border.focus"), theme.style("title.focus"))
    } else {
        (theme.style("border"), theme.style("title"))
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(border)
        .title(title.style(title_style))
}

/// Seconds as a short age: `42s`, `3m`, `5h`, `2d`.
pub(crate) fn age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// An agent state as a badge (`None`: no readable status file).
/// Glyphs here are one cell wide everywhere: an emoji-capable one (⚠) is drawn two wide by
/// many terminals and pushes the rest of its row, right border included, out of line.
pub(crate) fn badge(state: &AppState, agent_state: Option<AgentState>) -> Span<'static> {
    let (text, key) = match agent_state {
        Some(AgentState::Work) => (" WORK ", "badge.work"),
        Some(AgentState::Waiting) => (" ! WAITING ", "badge.waiting"),
        Some(AgentState::Idle) => (" IDLE ", "badge.idle"),
        Some(AgentState::Shutdown) => (" SHUTDOWN ", "badge.shutdown"),
        Some(AgentState::Dead) => (" DEAD ", "badge.dead"),
        None => (" ? unknown ", "badge.unknown"),
    };
    Span::styled(text, state.theme.style(key))
}

/// The first `n` chars of `text` on one line.
pub(crate) fn one_line(text: &str, n: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut used = 0;
    let mut cut = text.lines().nth(1).is_some();
    for c in first.chars() {
        // Columns, not characters: CJK text takes two per character.
        let w = c.width().unwrap_or(0);
        if used + w > n {
            cut = true;
            break;
        }
        used += w;
        out.push(c);
    }
    if cut {
        out.push('…');
    }
    out
}

/// The first visible row so that `selected` stays on screen in `height` rows.
pub(crate) fn window_start(selected: usize, height: usize) -> usize {
    (selected + 1).saturating_sub(height.max(1))
}

pub(crate) fn plain(style: Style, text: impl Into<String>) -> Line<'static> {
    Line::from(Span::styled(text.into(), style))
}
