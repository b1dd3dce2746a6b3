//! The task DAG: rows layer by layer, status glyphs, owners, blockers (open ones marked),
//! claimable highlighted; the selected task's description and result on demand.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::render::{one_line, pane_block, plain, window_start};
use crate::state::{AppState, Pane};
use crate::workspace_view::TaskRow;
use crew_protocol::joined;
use crew_store::Status;
use unicode_width::UnicodeWidthStr;

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let model = &state.workspace;
    let claimable = model.task_rows.iter().filter(|r| r.claimable).count();
    let title = format!(" tasks ({}, {claimable} claimable) ", model.tasks.len());
    let block = pane_block(state, Pane::Tasks, Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let theme = &state.theme;
    let (list, detail) = if state.task_open {
        let parts = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(inner);
        (parts[0], Some(parts[1]))
    } else {
        (inner, None)
    };
    let mut lines: Vec<Line> = model
        .task_problems
        .iter()
        .take(2)
        .map(|p| plain(theme.style("msg.broken"), format!("!! {p}")))
        .collect();
    if model.tasks.is_empty() {
        lines.push(plain(theme.style("dim"), "no tasks yet"));
    }
    let height = (list.height as usize).saturating_sub(lines.len());
    let selected = state
        .selected(Pane::Tasks)
        .min(model.task_rows.len().saturating_sub(1));
    let start = window_start(selected, height);
    for (i, row) in model.task_rows.iter().enumerate().skip(start).take(height) {
        lines.push(task_line(
            state,
            row,
            i == selected && state.focus == Pane::Tasks,
            list.width as usize,
        ));
    }
    frame.render_widget(Paragraph::new(lines), list);
    if let (Some(area), Some(row)) = (detail, model.task_rows.get(selected)) {
        render_detail(state, row, frame, area);
    }
}

fn glyph(status: Status) -> (&'static str, &'static str) {
    match status {
        Status::Pending => ("○", "task.pending"),
        Status::InProgress => ("◐", "task.in_progress"),
        Status::Review => ("◑", "task.review"),
        Status::Completed => ("●", "task.completed"),
        Status::Failed => ("✗", "task.failed"),
    }
}

/// Columns a subject keeps before the dependency list is elided instead.
const SUBJECT_MIN: usize = 6;

/// One task row that fits `width`: the subject is shortened first, then the dependency list
/// shows what fits and says how many more (`…+2`), so a row never ends mid-id at the edge.
fn task_line(state: &AppState, row: &TaskRow, selected: bool, width: usize) -> Line<'static> {
    let theme = &state.theme;
    let task = &state.workspace.tasks[row.index];
    let (g, key) = glyph(task.status);
    let layer = row.layer.map_or("L∞".to_string(), |l| format!("L{l}"));
    let mut spans = vec![
        Span::styled(format!("{layer:>3} "), theme.style("dim")),
        Span::styled(format!("{g} "), theme.style(key)),
    ];
    let id_style = if row.claimable {
        theme.style("task.claimable")
    } else {
        theme.style(key)
    };
    spans.push(Span::styled(format!("{} ", task.id), id_style));
    let subject_at = spans.len();
    spans.push(Span::styled(task.subject.clone(), theme.style("text")));
    match (&task.owner, task.status) {
        // Pending with an owner: assigned, only that teammate may claim it.
        (Some(owner), Status::Pending) => spans.push(Span::styled(
            format!(" → {owner} (assigned)"),
            theme.style("task.owner"),
        )),
        (Some(owner), _) => spans.push(Span::styled(
            format!(" @{owner}"),
            theme.style("task.owner"),
        )),
        (None, _) => {}
    }
    if row.claimable {
        spans.push(Span::styled(" ▶ claimable", theme.style("task.claimable")));
    }
    let mut deps: Vec<Span<'static>> = Vec::new();
    if !task.blocked_by.is_empty() {
        deps.push(Span::styled(" ⇠ ", theme.style("dim")));
        for (i, b) in task.blocked_by.iter().enumerate() {
            let open = row.blocked_by.contains(b);
            let style = if open {
                theme.style("task.blocked")
            } else {
                theme.style("task.completed")
            };
            let sep = if i > 0 { ", " } else { "" };
            deps.push(Span::styled(format!("{sep}{b}"), style));
        }
        if !row.blocked_by.is_empty() && task.status == Status::Pending {
            deps.push(Span::styled(" (blocked)", theme.style("task.blocked")));
        }
    }
    fit(&mut spans, subject_at, &mut deps, width, theme.style("dim"));
    spans.extend(deps);
    let line = Line::from(spans);
    if selected {
        line.style(theme.style("selection"))
    } else {
        line
    }
}

/// Shortens the subject (down to `SUBJECT_MIN`), then drops "(blocked)", then dependency ids
/// from the end (saying how many) until the row fits `width`.
fn fit(
    spans: &mut [Span<'static>],
    subject_at: usize,
    deps: &mut Vec<Span<'static>>,
    width: usize,
    dim: ratatui::style::Style,
) {
    let total =
        |spans: &[Span], deps: &[Span]| spans.iter().chain(deps).map(Span::width).sum::<usize>();
    let over = total(spans, deps).saturating_sub(width);
    if over == 0 {
        return;
    }
    let subject = spans[subject_at].content.to_string();
    let keep = subject.width().saturating_sub(over + 1).max(SUBJECT_MIN);
    if keep < subject.width() {
        spans[subject_at].content = one_line(&subject, keep).into();
    }
    // "(blocked)" goes first: the blockers' dim colour says it too.
    if total(spans, deps) > width {
        deps.retain(|s| s.content != " (blocked)");
    }
    let ids = deps.iter().filter(|s| s.content.contains("task_")).count();
    let mut dropped = 0;
    while total(spans, deps) > width && dropped < ids {
        let last_id = deps.iter().rposition(|s| s.content.contains("task_"));
        if let Some(at) = last_id {
            deps.remove(at);
            dropped += 1;
        }
        deps.retain(|s| !s.content.contains('…'));
        // Right after the arrow when no id is left, else after the last id kept.
        let (at, gap) = deps
            .iter()
            .rposition(|s| s.content.contains("task_"))
            .map_or((1, ""), |i| (i + 1, " "));
        deps.insert(at, Span::styled(format!("{gap}…+{dropped}"), dim));
    }
}

fn render_detail(state: &AppState, row: &TaskRow, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let task = &state.workspace.tasks[row.index];
    let mut lines = vec![
        plain(
            theme.style("title"),
            format!("{}: {}", task.id, task.subject),
        ),
        plain(
            theme.style("dim"),
            format!(
                "{} · owner {} · role {} · updated {}",
                task.status,
                task.owner.as_deref().unwrap_or("-"),
                task.role.as_deref().unwrap_or("any"),
                task.updated_at
            ),
        ),
    ];
    if !row.blocked_by.is_empty() {
        lines.push(plain(
            theme.style("task.blocked"),
            format!("blocked by {}", joined(&row.blocked_by, ", ")),
        ));
    }
    lines.push(Line::default());
    lines.extend(
        task.description
            .lines()
            .map(|l| plain(theme.style("text"), l.to_string())),
    );
    if let Some(result) = &task.result {
        lines.push(Line::default());
        lines.push(plain(theme.style("title"), "result"));
        lines.extend(
            result
                .lines()
                .map(|l| plain(theme.style("text"), l.to_string())),
        );
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style("border"));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}
