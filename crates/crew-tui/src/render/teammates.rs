//! One box per teammate: state badge (WAITING unmistakable), current task, its checklist, last
//! output lines.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::action::Action;
use crate::keymap::Mode;
use crate::layout::cells;
use crate::render::header::tokens_text;
use crate::render::{badge, conversation, one_line, pane_block, plain};
use crate::state::{AppState, Pane};
use crew_store::{AgentName, AgentState, AgentStatus, MessageKind, TodoStatus};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let names = state.workspace.teammates();
    let mut title = format!(" teammates ({}) ", names.len());
    if state.zoom {
        title.push_str(&zoom_hint(state));
    }
    let block = pane_block(state, Pane::Teammates, Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let theme = &state.theme;
    if names.is_empty() {
        frame.render_widget(
            Paragraph::new(plain(theme.style("dim"), "no teammates in crew.toml")),
            inner,
        );
        return;
    }
    let selected = state.selected(Pane::Teammates).min(names.len() - 1);
    if state.zoom {
        // Zoomed: the selected teammate alone, its whole kept transcript scrolling.
        render_one(state, &names[selected], true, frame, inner);
        return;
    }
    // Each box gets an equal share, at least 3 rows; only the boxes that fit are drawn,
    // keeping the selected one in view.
    let per = (inner.height / cells(names.len()).max(1)).max(3);
    let fit = (inner.height / per).max(1) as usize;
    let start = crate::render::window_start(selected, fit);
    for (slot, name) in names.iter().enumerate().skip(start).take(fit) {
        let y = inner
            .y
            .saturating_add(cells(slot - start).saturating_mul(per));
        let rect = Rect::new(inner.x, y, inner.width, per.min(inner.bottom() - y));
        render_one(state, name, slot == selected, frame, rect);
    }
}

/// The keys of the zoomed view, from the active keymap.
fn zoom_hint(state: &AppState) -> String {
    let key = |action| {
        state
            .keymap
            .key_for(Mode::Teammates, action)
            .unwrap_or_else(|| "?".into())
    };
    format!(
        "· {}/{} another teammate · {}/{} scroll · {}/{} calls · {} unfold · {} back ",
        key(Action::Left),
        key(Action::Right),
        key(Action::Up),
        key(Action::Down),
        key(Action::PrevCall),
        key(Action::NextCall),
        key(Action::Expand),
        key(Action::Zoom),
    )
}

fn render_one(state: &AppState, name: &AgentName, selected: bool, frame: &mut Frame, area: Rect) {
    let theme = &state.theme;
    let status = state.agent(name);
    let waiting = status.is_some_and(|s| s.state == AgentState::Waiting);
    let mut title = vec![
        Span::styled(
            format!(" {name} "),
            if selected {
                theme.style("title.focus")
            } else {
                theme.style("title")
            },
        ),
        badge(state, status.map(|s| s.state)),
    ];
    if let Some(standing) = state.workspace.standing.get(name) {
        // A team in the store spans hosts: whose host went silent (first: it matters most), and
        // where each works.
        if !standing.lapsed.is_empty() {
            title.push(Span::styled(
                format!(
                    " LEASE LAPSED {} ",
                    crew_protocol::joined(&standing.lapsed, ", ")
                ),
                theme.style("badge.dead"),
            ));
        }
        if let Some(host) = status.and_then(|s| s.host.as_deref()) {
            let host = crew_protocol::terminal_text::one_line(host);
            title.push(Span::styled(
                format!(" on {} ", one_line(&host, 24)),
                theme.style("dim"),
            ));
        }
    }
    if state.workspace.writes(name) {
        title.push(Span::styled(" writes ", theme.style("dim")));
    }
    if let Some(status) = status.filter(|s| !s.cache.is_empty()) {
        title.push(Span::styled(
            format!(
                " cache {} read {} written ",
                tokens_text(status.cache.read),
                tokens_text(status.cache.written)
            ),
            theme.style("dim"),
        ));
    }
    let border = if waiting {
        theme.style("badge.waiting")
    } else if selected {
        theme.style("border.focus")
    } else {
        theme.style("border")
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(border)
        .title(Line::from(title));
    frame.render_widget(block, area);
    let (head, placed) = body(state, name, selected, area);
    let head_area = Rect::new(area.x, area.y + 1, area.width, cells(head.len()));
    frame.render_widget(Paragraph::new(head), head_area.intersection(area));
    let lines = conversation::window(
        state,
        name,
        placed.layout,
        placed.area.height as usize,
        placed.back,
    )
    .map(|w| w.lines)
    .unwrap_or_default();
    frame.render_widget(Paragraph::new(lines), placed.area);
}

/// A teammate box's first lines (its task, what it waits for) and where its transcript goes
/// below them, for the box at `area` (its top border included).
fn body(
    state: &AppState,
    name: &AgentName,
    selected: bool,
    area: Rect,
) -> (Vec<Line<'static>>, conversation::Placement) {
    let theme = &state.theme;
    let inner = Block::default().borders(Borders::TOP).inner(area);
    let width = inner.width as usize;
    let status = state.agent(name);
    let task = status
        .and_then(|s| s.task)
        .map(|id| {
            let subject = state
                .workspace
                .tasks
                .iter()
                .find(|t| t.id == id)
                .map(|t| t.subject.as_str())
                .unwrap_or("");
            one_line(&format!("task {id} {subject}"), width)
        })
        .unwrap_or_else(|| "no task".to_string());
    let mut lines = vec![plain(theme.style("task.in_progress"), task)];
    lines.extend(todo_lines(state, status, width));
    lines.extend(subagent_lines(state, status, width));
    let pending = state.workspace.pending();
    let asks = pending.iter().filter(|r| r.from == *name).count();
    let plans = pending
        .iter()
        .filter(|r| r.from == *name && r.kind == MessageKind::PlanApprovalRequest)
        .count();
    if status.is_some_and(|s| s.state == AgentState::Waiting) {
        lines.push(plain(
            theme.style("badge.waiting"),
            format!("waiting for you: {asks} request(s) in approvals"),
        ));
    } else if plans > 0 {
        // A teammate does not block on its plan (it is free meanwhile), but it writes nothing
        // until the plan is approved: by the lead, or by the person in approvals.
        lines.push(plain(
            theme.style("msg.pending"),
            format!("{plans} plan(s) awaiting approval (the lead's, or yours in approvals)"),
        ));
    }
    let head = cells(lines.len()).min(inner.height);
    let placed = conversation::Placement {
        name: name.clone(),
        area: Rect::new(inner.x, inner.y + head, inner.width, inner.height - head),
        layout: conversation::Layout {
            // Glanced at in a box, read when zoomed.
            base: theme.style(if state.zoom { "text" } else { "dim" }),
            width,
            wrap: state.zoom,
            focused: selected && state.focus == Pane::Teammates,
        },
        back: if state.zoom {
            state.scroll(Pane::Teammates)
        } else {
            0
        },
    };
    (lines, placed)
}

/// Most checklist items a teammate box shows (zoomed, all are shown).
const TODOS_SHOWN: usize = 5;

/// The agent's checklist, one item a line: done, in progress, pending. A long list shows the
/// item in progress and those around it, and says how many more there are.
fn todo_lines(state: &AppState, status: Option<&AgentStatus>, width: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let todos = status.map(|s| s.todos.as_slice()).unwrap_or_default();
    let shown = if state.zoom { todos.len() } else { TODOS_SHOWN };
    let current = todos
        .iter()
        .position(|t| t.status != TodoStatus::Completed)
        .unwrap_or(0);
    let start = current
        .saturating_sub(1)
        .min(todos.len().saturating_sub(shown));
    let mut lines: Vec<Line<'static>> = todos
        .iter()
        .skip(start)
        .take(shown)
        .map(|item| {
            let style = match item.status {
                TodoStatus::Completed => "dim",
                TodoStatus::InProgress => "task.in_progress",
                TodoStatus::Pending => "text",
            };
            plain(
                theme.style(style),
                one_line(&format!("{} {}", item.mark(), item.content), width),
            )
        })
        .collect();
    let hidden = todos.len() - lines.len();
    if hidden > 0 {
        let done = todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        lines.push(plain(
            theme.style("dim"),
            format!("… {hidden} more ({done}/{} done)", todos.len()),
        ));
    }
    lines
}

/// The agent's subagents, nested under it: role, what for, and the tool it is on or how it
/// ended.
fn subagent_lines(
    state: &AppState,
    status: Option<&AgentStatus>,
    width: usize,
) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let subagents = status.map(|s| s.subagents.as_slice()).unwrap_or_default();
    subagents
        .iter()
        .map(|sub| {
            let (style, now) = match (&sub.outcome, &sub.tool) {
                (Some(outcome), _) => ("dim", outcome.clone()),
                (None, Some(tool)) => ("task.in_progress", format!("running: {tool}")),
                (None, None) => ("task.in_progress", "starting".to_string()),
            };
            plain(
                theme.style(style),
                one_line(
                    &format!("  ↳ {} {}: {} — {now}", sub.id, sub.role, sub.description),
                    width,
                ),
            )
        })
        .collect()
}

/// Where the zoomed teammate's transcript is drawn in the teammates pane at `area`.
pub(crate) fn zoomed_placement(state: &AppState, area: Rect) -> Option<conversation::Placement> {
    let name = state.selected_teammate()?;
    let inner = Block::default().borders(Borders::ALL).inner(area);
    Some(body(state, &name, true, inner).1)
}
