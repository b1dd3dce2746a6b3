//! Dialogs over the panes: help (generated from the active keymap), prompts, confirmations,
//! an agent's memories (see `memories`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::action::Action;
use crate::keymap::{MODES, Mode};
use crate::keys::sequence_text;
use crate::layout::cells;
use crate::render::plain;
use crate::state::{AppState, Confirm, Overlay, Prompt, PromptKind};
use crew_protocol::control::StopProgress;

pub fn render(state: &AppState, frame: &mut Frame, body: Rect) {
    if let Some(progress) = state.stopping() {
        return stopping(state, progress, frame, body);
    }
    match &state.overlay {
        None => {}
        Some(Overlay::Help { scroll }) => help(state, *scroll, frame, body),
        Some(Overlay::Prompt(prompt)) => render_prompt(state, prompt, frame, body),
        Some(Overlay::Confirm(what)) => confirm(state, what, frame, body),
        Some(Overlay::Memories(view)) => crate::render::memories::render(state, view, frame, body),
    }
}

pub(crate) fn centered(body: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(body.width);
    let h = height.min(body.height);
    Rect::new(
        body.x + (body.width - w) / 2,
        body.y + (body.height - h) / 2,
        w,
        h,
    )
}

pub(crate) fn popup<'a>(state: &AppState, title: String) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(state.theme.style("border.focus"))
        .style(state.theme.style("popup"))
        .title(Span::styled(title, state.theme.style("title.focus")))
}

/// Every binding of the active keymap, mode by mode.
pub fn help_lines(state: &AppState) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let mut lines = vec![plain(
        theme.style("dim"),
        format!(
            "keymap {:?} · theme {:?} · keys are looked up in the pane's mode, then global",
            state.keymap.name, state.theme.name
        ),
    )];
    for (name, mode) in MODES {
        let bindings = state.keymap.bindings(*mode);
        if bindings.is_empty() {
            continue;
        }
        lines.push(Line::default());
        lines.push(plain(theme.style("title.focus"), format!("[{name}]")));
        // One line per action, with every key bound to it (`5, alt-5, ctrl-r`).
        let mut actions: Vec<(crate::action::Action, Vec<String>)> = Vec::new();
        for b in bindings {
            let keys = sequence_text(&b.keys);
            match actions.iter_mut().find(|(a, _)| *a == b.action) {
                Some((_, all)) => all.push(keys),
                None => actions.push((b.action, vec![keys])),
            }
        }
        for (action, keys) in actions {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {:<12}", keys.join(", ")),
                    theme.style("approval.key"),
                ),
                Span::styled(format!(" {}", action.help()), theme.style("text")),
            ]));
        }
    }
    lines
}

fn help(state: &AppState, scroll: u16, frame: &mut Frame, body: Rect) {
    let area = centered(body, 70, body.height.saturating_sub(2));
    frame.render_widget(Clear, area);
    let close = state
        .keymap
        .key_for(Mode::Help, Action::Help)
        .unwrap_or_default();
    frame.render_widget(
        Paragraph::new(help_lines(state))
            .block(popup(state, format!(" help ({close} closes) ")))
            .scroll((scroll, 0)),
        area,
    );
}

fn render_prompt(state: &AppState, prompt: &Prompt, frame: &mut Frame, body: Rect) {
    let title = match &prompt.kind {
        PromptKind::AddTask => " add a task ".to_string(),
        PromptKind::Message { to } => format!(" message {to} "),
        PromptKind::SendBack { to } => format!(" send {to}'s work back "),
        PromptKind::EditDeps { id } => format!(" what {id} waits for "),
        PromptKind::Assign { id } => format!(" assign {id} "),
        PromptKind::ReviewSendBack { id } => format!(" send {id} back "),
        PromptKind::ReviewDiscard { id } => format!(" discard {id} "),
        PromptKind::Deny { from, .. } => format!(" deny {from}'s request "),
    };
    let height = cells(prompt.fields.len())
        .saturating_mul(2)
        .saturating_add(3);
    let area = centered(body, 64, height);
    frame.render_widget(Clear, area);
    let block = popup(state, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    for (i, (label, field)) in prompt.fields.iter().enumerate() {
        let y = inner.y.saturating_add(cells(i).saturating_mul(2));
        if y + 1 >= inner.bottom() {
            break;
        }
        let style = if i == prompt.active {
            state.theme.style("title.focus")
        } else {
            state.theme.style("dim")
        };
        frame.render_widget(
            Paragraph::new(plain(style, label.clone())),
            Rect::new(inner.x, y, inner.width, 1),
        );
        frame.render_widget(field, Rect::new(inner.x, y + 1, inner.width, 1));
    }
    let keys = [Action::Confirm, Action::NextField, Action::Cancel]
        .iter()
        .map(|a| {
            format!(
                "{} {}",
                state.keymap.key_for(Mode::Prompt, *a).unwrap_or_default(),
                a.name()
            )
        })
        .collect::<Vec<_>>()
        .join(" · ");
    frame.render_widget(
        Paragraph::new(plain(state.theme.style("dim"), keys)),
        Rect::new(inner.x, inner.bottom().saturating_sub(1), inner.width, 1),
    );
}

fn confirm(state: &AppState, what: &Confirm, frame: &mut Frame, body: Rect) {
    let question = match what {
        Confirm::Always { rule, request_id } => format!(
            "Add {rule:?} to [permissions] allow in crew.toml (comments are kept) and approve {request_id}?"
        ),
        Confirm::Discard { name } => format!(
            "Discard {name}'s worktree and branch crew/{name}? Its work is gone afterwards."
        ),
        Confirm::Shutdown { name } => format!(
            "Ask {name} to shut down? It stops when it is not holding a task (it refuses while busy)."
        ),
        Confirm::StopTeam => {
            "Stop the whole team? Teammates are asked to shut down; a busy one is \
            ended after the grace period. (To leave it running, detach instead.)"
                .to_string()
        }
        Confirm::ReleaseTask { name, id } => format!(
            "{name} was interrupted and keeps {id}. Release {id} back to the pool for anyone to claim?"
        ),
    };
    let yes = state
        .keymap
        .key_for(Mode::Confirm, Action::Confirm)
        .unwrap_or_default();
    let no = state
        .keymap
        .key_for(Mode::Confirm, Action::Cancel)
        .unwrap_or_default();
    let area = centered(body, 64, 7);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(vec![
            plain(state.theme.style("text"), question),
            Line::default(),
            plain(state.theme.style("dim"), format!("{yes} yes · {no} no")),
        ])
        .wrap(Wrap { trim: false })
        .block(popup(state, " confirm ".into())),
        area,
    );
}

/// The stop's progress: who is still busy and with what, the time left, and the key to force.
fn stopping(state: &AppState, progress: &StopProgress, frame: &mut Frame, body: Rect) {
    let theme = &state.theme;
    let mut lines = vec![plain(
        theme.style("text"),
        if progress.forced {
            "Ending what still runs...".to_string()
        } else if progress.busy.is_empty() {
            "Asking the team to shut down...".to_string()
        } else {
            format!(
                "Waiting for the team to shut down: {}s left of {}s, then they are ended.",
                progress.secs_left, progress.grace_secs
            )
        },
    )];
    lines.push(Line::default());
    for busy in &progress.busy {
        let what = match (&busy.waiting_on, &busy.task) {
            (Some(request), _) => format!("waits on {}", request.as_str()),
            (None, Some(task)) => format!("works on {task}"),
            (None, None) => "finishing".to_string(),
        };
        lines.push(plain(
            theme.style("text"),
            format!("  {:<12} {:<8} {what}", busy.name, busy.state_text()),
        ));
    }
    let force = state
        .keymap
        .key_for(Mode::Confirm, Action::Confirm)
        .unwrap_or_default();
    let detach = state
        .keymap
        .key_for(Mode::Global, Action::Quit)
        .unwrap_or_default();
    lines.push(Line::default());
    lines.push(plain(
        theme.style("dim"),
        format!("{force} force the stop now · {detach} detach (the stop goes on)"),
    ));
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let area = centered(body, 72, height);
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(popup(state, " stopping the team ".into())),
        area,
    );
}
