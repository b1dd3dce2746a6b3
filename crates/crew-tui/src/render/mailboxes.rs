//! Inboxes, one at a time: messages typed and coloured by type, each request linked to its
//! answer (or pending with its age), each answer to its request, broken lines shown in place.

use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::navigate::inbox_names;
use crate::render::{age, one_line, pane_block, plain};
use crate::state::{AppState, Pane};
use crew_store::{Entry, Message, RequestInfo, RequestState, USER};

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let names = inbox_names(state);
    let current = names
        .get(state.selected(Pane::Mailboxes) % names.len().max(1))
        .cloned()
        // No crew.toml read yet: the person's inbox, the one there always is.
        .unwrap_or(USER);
    let theme = &state.theme;
    let mut title = vec![Span::raw(" mailboxes ")];
    for name in &names {
        let count = state.workspace.inboxes.get(name).map_or(0, Vec::len);
        let style = if *name == current {
            theme.style("tab.active")
        } else {
            theme.style("tab")
        };
        title.push(Span::styled(format!(" {name} {count} "), style));
    }
    let block = pane_block(state, Pane::Mailboxes, Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let entries = state
        .workspace
        .inboxes
        .get(&current)
        .map_or(&[][..], Vec::as_slice);
    if entries.is_empty() {
        frame.render_widget(
            Paragraph::new(plain(
                theme.style("dim"),
                format!("{current}'s inbox is empty"),
            )),
            inner,
        );
        return;
    }
    let requests: HashMap<&str, &RequestInfo> = state
        .workspace
        .requests
        .iter()
        .map(|r| (r.request_id.as_str(), r))
        .collect();
    let height = inner.height as usize;
    let back = state
        .scroll(Pane::Mailboxes)
        .min(entries.len().saturating_sub(1));
    let end = entries.len() - back;
    let width = inner.width as usize;
    let lines: Vec<Line> = entries[end.saturating_sub(height)..end]
        .iter()
        .map(|e| entry_line(state, e, &requests, width))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn kind_style(message: &Message) -> &'static str {
    if !message.kind.is_known() {
        "msg.unknown"
    } else if message.is_request() {
        "msg.request"
    } else if message.is_response() {
        "msg.response"
    } else if message.kind.is_report() {
        "msg.status"
    } else {
        "msg.message"
    }
}

fn entry_line(
    state: &AppState,
    entry: &Entry,
    requests: &HashMap<&str, &RequestInfo>,
    width: usize,
) -> Line<'static> {
    let theme = &state.theme;
    let message = match entry {
        Entry::Message { message, .. } => message,
        Entry::Broken { error, .. } => {
            return plain(
                theme.style("msg.broken"),
                one_line(&format!("!! {error}"), width),
            );
        }
    };
    let time = message.ts.get(11..19).unwrap_or(&message.ts).to_string();
    let style = theme.style(kind_style(message));
    let mut spans = vec![
        Span::styled(format!("{time} "), theme.style("dim")),
        Span::styled(format!("{} ", message.from), theme.style("title")),
        Span::styled(format!("{} ", message.kind), style),
    ];
    if let Some(id) = &message.request_id {
        let short: String = id
            .chars()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if message.is_response() {
            let verdict = if message.approve == Some(true) {
                "approved"
            } else {
                "rejected"
            };
            spans.push(Span::styled(format!("↩ {verdict} …{short} "), style));
        } else if let Some(info) = requests.get(id.as_str()) {
            let (text, key) = match info.state {
                RequestState::Pending => {
                    (format!("◌ pending {} ", age(info.age_secs)), "msg.pending")
                }
                RequestState::Approved => (
                    format!(
                        "✓ approved by {} ",
                        info.answered_by.as_deref().unwrap_or("?")
                    ),
                    "msg.response",
                ),
                RequestState::Rejected => (
                    format!(
                        "✗ rejected by {} ",
                        info.answered_by.as_deref().unwrap_or("?")
                    ),
                    "status.error",
                ),
                RequestState::Expired => ("– expired ".to_string(), "dim"),
            };
            spans.push(Span::styled(format!("…{short} "), theme.style("dim")));
            spans.push(Span::styled(text, theme.style(key)));
        }
    }
    let body = match (&message.text, message.kind.is_known()) {
        (Some(text), true) => text.clone(),
        (text, _) => {
            // Unknown types are shown raw, extra fields and all.
            let extra = serde_json::Value::Object(message.extra.clone());
            format!("{} {extra}", text.as_deref().unwrap_or(""))
        }
    };
    spans.push(Span::styled(one_line(&body, width), theme.style("text")));
    Line::from(spans)
}
