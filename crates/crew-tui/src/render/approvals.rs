//! Every pending permission or plan request in full: who, what tool, the whole input (a bash
//! command highlighted, a write or edit as the diff it would make), where, why; with the keys
//! that answer it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::action::Action;
use crate::ask;
use crate::highlight::Segments;
use crate::keymap::Mode;
use crate::render::{age, diff, pane_block, plain};
use crate::state::{AppState, Pane, Proposal};
use crew_git::{FileDiff, FileStatus};
use crew_protocol::joined;
use crew_store::MessageKind;
use crew_store::RequestInfo;

pub fn render(state: &AppState, frame: &mut Frame, area: Rect) {
    let pending = state.workspace.pending();
    let theme = &state.theme;
    let title = format!(
        " approvals ({}) · reviews ({}) ",
        pending.len(),
        state.reviews.len()
    );
    let block = pane_block(state, Pane::Approvals, Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if pending.is_empty() && state.reviews.is_empty() {
        frame.render_widget(
            Paragraph::new(plain(theme.style("dim"), "nothing waiting for you")),
            inner,
        );
        return;
    }
    let selected = state.selected(Pane::Approvals);
    let mut lines = Vec::new();
    // The review queue first when a review is selected, so the selection is always in view.
    let reviews_first = selected >= pending.len();
    if reviews_first {
        lines.extend(review_lines(state, selected - pending.len()));
    }
    if !pending.is_empty() {
        lines.extend(request_section(state, &pending));
    }
    if !reviews_first && !state.reviews.is_empty() {
        lines.extend(review_lines(state, usize::MAX));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// The review queue: the keys, then one entry per task in review (the selected one marked).
fn review_lines(state: &AppState, selected: usize) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let keys = key_hints(
        state,
        &[
            (Action::Open, "diff"),
            (Action::Merge, "merge"),
            (Action::Always, "queue"),
            (Action::SendBack, "send back"),
            (Action::Discard, "discard"),
        ],
    );
    let mut lines = vec![
        plain(
            theme.style("title.focus"),
            format!("reviews waiting ({})", state.reviews.len()),
        ),
        keys,
    ];
    for (i, r) in state.reviews.iter().enumerate() {
        let marker = if i == selected { "▶ " } else { "  " };
        let mut head = vec![
            Span::styled(marker, theme.style("msg.pending")),
            Span::styled(format!("{} ", r.id), theme.style("task.review")),
            Span::styled(
                r.owner.as_deref().unwrap_or("nobody").to_string(),
                theme.style("title.focus"),
            ),
            Span::styled(format!("  {}", r.subject), theme.style("text")),
        ];
        if i == selected {
            head = head
                .into_iter()
                .map(|s| s.patch_style(theme.style("selection")))
                .collect();
        }
        lines.push(Line::from(head));
        // Counted from when it entered review to the screen's clock, so it grows while shown.
        let entered = state
            .workspace
            .tasks
            .iter()
            .find(|t| t.id == r.id)
            .and_then(|t| humantime::parse_rfc3339_weak(&t.updated_at).ok());
        let age_secs = entered
            .and_then(|t| state.now.duration_since(t).ok())
            .map_or(r.age_secs, |d| d.as_secs());
        lines.push(Line::from(vec![
            Span::styled(format!("    {} files ", r.files.len()), theme.style("dim")),
            Span::styled(format!("+{}", r.additions), theme.style("task.completed")),
            Span::styled(format!(" -{}", r.deletions), theme.style("task.failed")),
            Span::styled(
                format!("  {} ago  {}", age(age_secs), r.files.join(", ")),
                theme.style("dim"),
            ),
        ]));
        if let Some(verdict) = &r.verdict {
            let style = if verdict.ends_with(": pass") {
                theme.style("task.completed")
            } else {
                theme.style("status.warning")
            };
            lines.push(plain(style, format!("    reviewer {verdict}")));
        }
        if let Some(why) = &r.unavailable {
            lines.push(plain(theme.style("status.error"), format!("    {why}")));
        }
        if !r.also_brings.is_empty() {
            lines.push(plain(
                theme.style("status.warning"),
                format!(
                    "    merging also brings {}, not in its commits",
                    r.also_brings.join(", ")
                ),
            ));
        }
        if !r.conflicts.is_empty() {
            lines.push(plain(
                theme.style("status.error"),
                format!(
                    "    conflicts with the base in {}: merge refuses",
                    r.conflicts.join(", ")
                ),
            ));
        }
        if !r.protected.is_empty() {
            lines.push(plain(
                theme.style("status.warning"),
                format!(
                    "    ⚠ changes {}: it governs the team, read it closely",
                    joined(&r.protected, ", ")
                ),
            ));
        }
        if i == selected
            && let Some(first) = r.summary.lines().find(|l| !l.trim().is_empty())
        {
            lines.push(plain(theme.style("text"), format!("    {first}")));
        }
    }
    lines.push(Line::default());
    lines
}

/// `key  what` for each action, with the keys of the active keymap.
fn key_hints(state: &AppState, actions: &[(Action, &str)]) -> Line<'static> {
    let theme = &state.theme;
    let spans: Vec<Span> = actions
        .iter()
        .flat_map(|(action, what)| {
            let key = state
                .keymap
                .key_for(Mode::Approvals, *action)
                .unwrap_or_default();
            [
                Span::styled(format!(" {key} "), theme.style("approval.key")),
                Span::styled(format!(" {what}  "), theme.style("dim")),
            ]
        })
        .collect();
    Line::from(spans)
}

fn request_section(state: &AppState, pending: &[&RequestInfo]) -> Vec<Line<'static>> {
    let keys = key_hints(
        state,
        &[Action::Approve, Action::Deny, Action::Always].map(|a| (a, a.name())),
    );
    let selected = state.selected(Pane::Approvals).min(pending.len() - 1);
    let mut lines = vec![keys];
    // The selected request first, in full; the others follow as long as there is room.
    let order = std::iter::once(selected).chain((0..pending.len()).filter(|i| *i != selected));
    for i in order {
        lines.extend(request_lines(state, pending[i], i == selected));
        lines.push(Line::default());
    }
    lines
}

fn request_lines(state: &AppState, r: &RequestInfo, selected: bool) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let m = &r.request;
    let marker = if selected { "▶ " } else { "  " };
    let what = if r.kind == MessageKind::PlanApprovalRequest {
        "a plan".to_string()
    } else {
        ask::tool(m).unwrap_or("permission").to_string()
    };
    let mut head = vec![
        Span::styled(marker, theme.style("msg.pending")),
        Span::styled(r.from.to_string(), theme.style("title.focus")),
        Span::styled(" asks for ", theme.style("text")),
        Span::styled(what, theme.style("approval.tool")),
        Span::styled(
            format!("  {} ago · {}", age(r.age_secs), r.request_id),
            theme.style("dim"),
        ),
    ];
    if selected {
        head = head
            .into_iter()
            .map(|s| s.patch_style(theme.style("selection")))
            .collect();
    }
    let mut lines = vec![Line::from(head)];
    if let Some(ws) = ask::workspace_shown(m, &state.root) {
        lines.push(plain(theme.style("dim"), format!("  in {ws}")));
    }
    let proposal = state.proposals.get(&r.request_id);
    if let Some(command) = ask::command(m) {
        lines.extend(command_lines(state, &r.request_id, command));
    } else if let Some(Proposal {
        diff: Ok(file),
        highlights,
    }) = proposal
    {
        // The selected request's diff in full when zoomed; a taste of the others.
        let most = match (selected, state.zoom) {
            (true, true) => usize::MAX,
            (true, false) => 30,
            (false, _) => 6,
        };
        lines.extend(proposal_lines(state, file, highlights.as_ref(), most));
    } else if let Some(input) = ask::input(m) {
        if let Some(Proposal { diff: Err(why), .. }) = proposal {
            lines.push(plain(
                theme.style("status.warning"),
                format!("  no diff: {why}"),
            ));
        }
        let text = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
        lines.extend(
            text.lines()
                .map(|l| plain(theme.style("approval.command"), format!("  {l}"))),
        );
    }
    // Why, in the agent's own words, beside crew's reason for asking.
    let why = if r.kind == MessageKind::PlanApprovalRequest {
        "the plan"
    } else {
        "crew asks"
    };
    let labelled = [
        (format!("{} says", r.from), ask::purpose(m)),
        (why.to_string(), ask::reason(m)),
    ];
    let width = labelled
        .iter()
        .filter(|(_, text)| text.is_some())
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0);
    for (label, text) in labelled {
        let Some(text) = text else { continue };
        for (i, l) in text.lines().enumerate() {
            let lead = if i == 0 {
                format!("{label}:")
            } else {
                String::new()
            };
            lines.push(plain(
                theme.style("text"),
                format!("  {lead:<w$} {l}", w = width + 1),
            ));
        }
    }
    lines
}

/// A write or edit as the diff it would make, at most `most` lines of it.
fn proposal_lines(
    state: &AppState,
    file: &FileDiff,
    highlights: Option<&Vec<Segments>>,
    most: usize,
) -> Vec<Line<'static>> {
    let theme = &state.theme;
    let verb = match file.status {
        FileStatus::Added => "new file",
        _ => "changes",
    };
    let mut lines = vec![plain(
        theme.style("diff.file"),
        format!(
            "  {verb} {}  +{} -{}",
            file.path, file.additions, file.deletions
        ),
    )];
    let total: usize = file.hunks.iter().map(|h| 1 + h.lines.len()).sum();
    let mut shown = 0;
    'hunks: for (h, hunk) in file.hunks.iter().enumerate() {
        for j in std::iter::once(None).chain((0..hunk.lines.len()).map(Some)) {
            if shown == most {
                break 'hunks;
            }
            shown += 1;
            lines.push(match j {
                None => plain(theme.style("diff.hunk"), format!("  {}", hunk.header)),
                Some(j) => {
                    let segs = highlights.and_then(|hl| hl.get(h)).and_then(|l| l.get(j));
                    diff::unified_line(state, hunk, j, segs)
                }
            });
        }
    }
    if shown < total {
        let key = state
            .keymap
            .key_for(Mode::Approvals, Action::Zoom)
            .unwrap_or_default();
        lines.push(plain(
            theme.style("dim"),
            format!(
                "  … {} more lines ({key} zooms the selected request)",
                total - shown
            ),
        ));
    }
    lines
}

/// The command with its highlighting once the background highlighter has sent it.
fn command_lines(state: &AppState, request_id: &str, command: &str) -> Vec<Line<'static>> {
    let base = state.theme.style("approval.command");
    let segments = state.commands.get(request_id);
    command
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut spans = vec![Span::styled("  $ ", base)];
            match segments.and_then(|s| s.get(i)) {
                Some(segs) if !segs.is_empty() => {
                    for (color, range) in segs {
                        let piece = line.get(range.clone()).unwrap_or("");
                        spans.push(Span::styled(piece.to_string(), base.fg(*color)));
                    }
                }
                _ => spans.push(Span::styled(line.to_string(), base)),
            }
            Line::from(spans)
        })
        .collect()
}
