//! The lead: its conversation (from `.crew/transcripts/<lead>/`) and the input box.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::layout::cells;
use crate::render::{badge, conversation, pane_block, plain};
use crate::state::{AppState, Pane};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let lead = state.workspace.lead_name();
    let title = Line::from(vec![
        Span::raw(format!(" {lead} ")),
        badge(state, state.agent(&lead).map(|a| a.state)),
        Span::raw(" "),
    ]);
    let block = pane_block(state, Pane::Lead, title);
    frame.render_widget(block, area);
    let (placed, input_area) = placement(state, area);
    let theme = &state.theme;
    let lines = conversation::window(
        state,
        &lead,
        placed.layout,
        placed.area.height as usize,
        placed.back,
    )
    .map(|w| w.lines)
    .unwrap_or_else(|| {
        vec![plain(
            theme.style("dim"),
            format!("no conversation yet (.crew/transcripts/{lead}/*.jsonl)"),
        )]
    });
    frame.render_widget(Paragraph::new(lines), placed.area);
    let input_block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style("border"))
        .title(Span::styled(" to the lead ", theme.style("dim")));
    let input_inner = input_block.inner(input_area);
    frame.render_widget(input_block, input_area);
    frame.render_widget(&state.input, input_inner);
}

/// Where the conversation goes inside the lead pane at `area`, and where the input box goes.
pub(crate) fn placement(state: &AppState, area: Rect) -> (conversation::Placement, Rect) {
    let inner = Block::default().borders(Borders::ALL).inner(area);
    let input_rows = cells(state.input.lines().len())
        .saturating_add(2)
        .clamp(3, 8)
        .min(inner.height / 2);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(1), Constraint::Length(input_rows)])
        .split(inner);
    let placed = conversation::Placement {
        name: state.workspace.lead_name(),
        area: parts[0],
        layout: conversation::Layout {
            base: state.theme.style("text"),
            width: parts[0].width as usize,
            wrap: true,
            focused: state.focus == Pane::Lead,
        },
        back: state.scroll(Pane::Lead),
    };
    (placed, parts[1])
}
