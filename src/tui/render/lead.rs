//! The lead: its conversation (from `.crew/transcripts/<lead>/`) and the input box.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::render::{badge, conversation, pane_block, plain};
use crate::tui::state::{AppState, Pane};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let lead = state.model.lead_name();
    let title = Line::from(vec![
        Span::raw(format!(" {lead} ")),
        badge(state, state.agent(lead).map(|a| a.state.as_str())),
        Span::raw(" "),
    ]);
    let block = pane_block(state, Pane::Lead, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let input_rows = (state.input.lines().len() as u16 + 2)
        .clamp(3, 8)
        .min(inner.height / 2);
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(1), Constraint::Length(input_rows)])
        .split(inner);
    let theme = &state.theme;
    let layout = conversation::Layout {
        base: theme.style("text"),
        width: parts[0].width as usize,
        wrap: true,
        focused: state.focus == Pane::Lead,
    };
    let lines = conversation::window(
        state,
        lead,
        layout,
        parts[0].height as usize,
        state.scroll(Pane::Lead),
    )
    .unwrap_or_else(|| {
        vec![plain(
            theme.style("dim"),
            format!("no conversation yet (.crew/transcripts/{lead}/*.jsonl)"),
        )]
    });
    frame.render_widget(Paragraph::new(lines), parts[0]);
    let input_block = Block::default()
        .borders(Borders::TOP)
        .border_style(theme.style("border"))
        .title(Span::styled(" to the lead ", theme.style("dim")));
    let input_inner = input_block.inner(parts[1]);
    frame.render_widget(input_block, parts[1]);
    frame.render_widget(&state.input, input_inner);
}
