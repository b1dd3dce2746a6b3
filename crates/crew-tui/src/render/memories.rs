//! The memories dialog: one line per memory (scope, type, name, description, STALE when it
//! names a path that is gone), or the selected memory's body.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::action::Action;
use crate::keymap::Mode;
use crate::memories::MemoryView;
use crate::render::overlay::{centered, popup};
use crate::render::{one_line, plain, window_start};
use crate::state::AppState;

pub fn render(state: &AppState, view: &MemoryView, frame: &mut Frame, body: Rect) {
    let area = centered(
        body,
        body.width.saturating_sub(4).max(40),
        body.height.saturating_sub(2),
    );
    frame.render_widget(Clear, area);
    let theme = &state.theme;
    let key = |action| {
        state
            .keymap
            .key_for(Mode::Memory, action)
            .unwrap_or_default()
    };
    if view.open
        && let Some(entry) = view.current()
    {
        let title = format!(
            " memory {} ({}, {}) · {} back ",
            entry.name,
            entry.kind,
            if entry.team {
                "team"
            } else {
                view.agent.as_str()
            },
            key(Action::Back)
        );
        let mut lines = vec![plain(theme.style("dim"), entry.description.clone())];
        if !entry.stale.is_empty() {
            lines.push(plain(
                theme.style("status.warning"),
                format!("STALE: {} no longer exists", entry.stale.join(", ")),
            ));
        }
        lines.push(Line::default());
        lines.extend(
            entry
                .body
                .lines()
                .map(|l| plain(theme.style("text"), l.to_string())),
        );
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .scroll((view.scroll, 0))
                .block(popup(state, title)),
            area,
        );
        return;
    }
    let title = format!(
        " {}'s memories and the team's (read-only) · {} opens · {} closes ",
        view.agent,
        key(Action::Open),
        key(Action::Back)
    );
    let width = area.width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    if view.entries.is_empty() {
        lines.push(plain(
            theme.style("dim"),
            format!(
                "no memories yet in .crew/memory/{}/ or .crew/memory/team/",
                view.agent
            ),
        ));
    }
    let height = area
        .height
        .saturating_sub(2_u16.saturating_add(crate::layout::cells(view.broken.len())))
        as usize;
    let start = window_start(view.selected, height);
    for (i, entry) in view.entries.iter().enumerate().skip(start).take(height) {
        let style = if i == view.selected {
            theme.style("selection")
        } else {
            theme.style("text")
        };
        let head = format!(
            "{:<6} {:<9} {} ",
            if entry.team { "team" } else { "own" },
            entry.kind,
            entry.name
        );
        let mut spans = vec![Span::styled(head.clone(), style)];
        let stale = if entry.stale.is_empty() {
            String::new()
        } else {
            format!(" STALE: {}", entry.stale.join(", "))
        };
        let room = width.saturating_sub(head.chars().count() + stale.chars().count());
        spans.push(Span::styled(
            one_line(&entry.description, room),
            theme.style("dim"),
        ));
        if !stale.is_empty() {
            spans.push(Span::styled(stale, theme.style("status.warning")));
        }
        lines.push(Line::from(spans));
    }
    for broken in &view.broken {
        lines.push(plain(
            theme.style("status.error"),
            one_line(&format!("unreadable: {broken}"), width),
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(popup(state, title)), area);
}
