//! The reducer: `update(state, event) -> effects`. Pure state changes happen here; anything that
//! touches disk or git comes back as an `Effect` for the runtime (or a test) to carry out.

use ratatui::crossterm::event::{KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui_textarea::Input;

use crate::action::Action;
use crate::ask;
use crate::event::{Effect, Event};
use crate::folds;
use crate::keymap::{Lookup, Mode};
use crate::keys::Chord;
use crate::layout::{areas, tab_cells};
use crate::memories;
use crate::navigate::{focus_step, move_selection};
use crate::proposal;
use crate::queue_view;
use crate::render::tab_labels;
use crate::review::{
    act_diff, answer_review, discarded, highlight_current, merged, open_diff, open_review,
};
use crate::state::{AppState, Confirm, Level, Overlay, Pane, PromptKind, Proposal};
use crate::steer;
use crate::submit::{confirm, open_prompt, submit_prompt};

pub fn update(state: &mut AppState, event: Event) -> Vec<Effect> {
    match event {
        Event::Key(key) => on_key(state, key),
        Event::Mouse(mouse) => on_mouse(state, mouse),
        Event::Resize(w, h) => {
            state.size = (w, h);
            Vec::new()
        }
        Event::Tick(now) => {
            state.now = now;
            state.workspace.tick(now);
            // The queue's view follows the test as it runs.
            if state.queue.is_some() {
                return vec![Effect::LoadQueue];
            }
            Vec::new()
        }
        Event::Queue(snapshot) => {
            queue_view::loaded(state, snapshot);
            Vec::new()
        }
        Event::Data(changes) => on_data(state, changes),
        Event::Daemon(status) => {
            // The team went away (stopped from here, another screen or `crew down`).
            if status.is_none() && state.daemon.is_some() {
                state.quit = true;
            }
            state.daemon = status;
            Vec::new()
        }
        Event::Reviews(result) => {
            match result {
                Ok(reviews) => state.reviews = reviews,
                Err(e) => state.set_status(Level::Error, format!("reviews not loaded: {e}")),
            }
            Vec::new()
        }
        Event::Diff { name, task, result } => {
            let theme = state.theme.syntax.clone();
            let Some(view) = state
                .diff
                .as_mut()
                .filter(|v| v.name == name && v.task == task)
            else {
                return Vec::new();
            };
            view.diff = Some(result);
            view.file = view.file.min(view.files().len().saturating_sub(1));
            view.highlights.clear();
            highlight_current(view, &theme)
        }
        Event::FileHighlighted { name, file, hunks } => {
            if let Some(view) = state.diff.as_mut().filter(|v| v.name == name) {
                view.highlights.insert(file, hunks);
            }
            Vec::new()
        }
        Event::CommandHighlighted {
            request_id,
            segments,
        } => {
            state.commands.insert(request_id, segments);
            Vec::new()
        }
        Event::Proposal { request_id, diff } => {
            let effects = match &diff {
                Ok(file) => vec![Effect::HighlightProposal {
                    request_id: request_id.clone(),
                    diff: file.clone(),
                    theme: state.theme.syntax.clone(),
                }],
                Err(_) => Vec::new(),
            };
            let proposal = Proposal {
                diff,
                highlights: None,
            };
            state.proposals.insert(request_id, proposal);
            effects
        }
        Event::ProposalHighlighted { request_id, hunks } => {
            if let Some(p) = state.proposals.get_mut(&request_id) {
                p.highlights = Some(hunks);
            }
            Vec::new()
        }
        Event::Merged { name, result } => merged(state, name, result),
        Event::Discarded { name, result } => discarded(state, name, result),
        Event::Done(result) => {
            // A review answered from its diff: the view shows the result in place of
            // "merging task_1..." (every `Done` answers a review).
            if let Some(view) = state.diff.as_mut().filter(|v| v.task.is_some()) {
                view.outcome = Some(match &result {
                    Ok(text) => text.clone(),
                    Err(e) => format!("failed: {e}"),
                });
            }
            match result {
                Ok(text) => state.set_status(Level::Info, text),
                Err(e) => state.set_status(Level::Error, e),
            }
            Vec::new()
        }
        Event::Said(text) => {
            // It names files and notes from teammates' branches: shown escaped, on one line.
            let text = crew_protocol::terminal_text::one_line(&text).into_owned();
            state.set_status(Level::Info, text);
            // A landing or a send-back changes the reviews.
            vec![Effect::LoadReviews]
        }
    }
}

fn on_data(state: &mut AppState, changes: Vec<crate::data::Change>) -> Vec<Effect> {
    let first = !state.workspace.loaded;
    let applied = state.workspace.apply(changes, state.now);
    if first && let Some(seen) = state.since.take() {
        let mut summary = seen.summary(&state.workspace, state.now);
        // Attached again: the person comes back to look, so the screen starts outside the
        // lead's text box, where `q` detaches as it did before (not a `q` typed to the lead).
        if state.focus == Pane::Lead && state.input.lines().iter().all(|l| l.is_empty()) {
            state.focus = Pane::Teammates;
            let key = |action| state.keymap.key_for(Mode::Teammates, action);
            if let (Some(lead), Some(quit)) = (key(Action::FocusLead), key(Action::Quit)) {
                summary.push_str(&format!(" · {lead} types to the lead, {quit} detaches"));
            }
        }
        state.set_status(Level::Info, summary);
    }
    let mut effects = Vec::new();
    if applied.reviews_changed {
        // An empty queue needs no git: it is known from the tasks alone.
        if state.workspace.in_review().is_empty() {
            state.reviews.clear();
        } else {
            effects.push(Effect::LoadReviews);
        }
    }
    if !applied.new_requests.is_empty() || !applied.new_reviews.is_empty() {
        if state.workspace.ui.bell != Some(false) {
            effects.push(Effect::Bell);
        }
        if state.workspace.ui.desktop_notifications != Some(false) {
            let asks = applied
                .new_requests
                .iter()
                .map(|r| format!("{} asks: {}", r.from, r.kind.as_str().replace('_', " ")));
            let reviews = applied
                .new_reviews
                .iter()
                .map(|id| format!("{id} waits for your review"));
            effects.extend(
                asks.chain(reviews)
                    .map(|text| Effect::DesktopNotify { text }),
            );
        }
    }
    if let Some(command) = &state.workspace.ui.notify_command {
        for request in &applied.new_requests {
            effects.push(Effect::Notify {
                command: command.clone(),
                request: Box::new(request.clone()),
            });
        }
    }
    let to_highlight: Vec<_> = if first {
        state.workspace.pending().into_iter().cloned().collect()
    } else {
        applied.new_requests
    };
    for request in to_highlight {
        if proposal::applies(&request.request) {
            effects.push(Effect::PrepareProposal {
                request_id: request.request_id.clone(),
                request: Box::new(request.request.clone()),
            });
        }
        if let Some(command) = ask::command(&request.request) {
            effects.push(Effect::HighlightCommand {
                request_id: request.request_id.clone(),
                command: command.to_string(),
                theme: state.theme.syntax.clone(),
            });
        }
    }
    effects
}

fn on_key(state: &mut AppState, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    let chord = Chord::from_event(&key);
    let mode = state.mode();
    state.pending_keys.push(chord);
    let mut found = state.keymap.lookup(mode, &state.pending_keys);
    if found == Lookup::None && state.pending_keys.len() > 1 {
        // An unfinished sequence followed by something else: start again from this key.
        state.pending_keys = vec![chord];
        found = state.keymap.lookup(mode, &state.pending_keys);
    }
    match found {
        Lookup::Prefix => Vec::new(),
        Lookup::Action(action) => {
            state.pending_keys.clear();
            act(state, action)
        }
        Lookup::None => {
            state.pending_keys.clear();
            type_into(state, key);
            Vec::new()
        }
    }
}

/// A key no binding claimed goes to the text box in front, if any.
fn type_into(state: &mut AppState, key: KeyEvent) {
    let input = Input::from(key);
    match &mut state.overlay {
        Some(Overlay::Prompt(prompt)) => {
            if let Some((_, field)) = prompt.fields.get_mut(prompt.active) {
                field.input(input);
            }
        }
        None if state.diff.is_none() && state.focus == Pane::Lead => {
            state.input.input(input);
        }
        _ => {}
    }
}

fn act(state: &mut AppState, action: Action) -> Vec<Effect> {
    if let Some(overlay) = state.overlay.take() {
        return act_overlay(state, overlay, action);
    }
    if state.stopping().is_some() {
        match action {
            Action::Quit => state.quit = true,
            Action::Confirm => return vec![Effect::ForceStop],
            _ => {}
        }
        return Vec::new();
    }
    // Stopping the team works from the diff view too (its confirmation is drawn over it).
    if state.diff.is_some() && action != Action::StopTeam {
        return act_diff(state, action);
    }
    if state.queue.is_some() {
        return queue_view::act(state, action);
    }
    match action {
        Action::Quit => state.quit = true,
        Action::StopTeam if state.daemon.is_some() => {
            state.overlay = Some(Overlay::Confirm(Confirm::StopTeam))
        }
        Action::StopTeam => state.set_status(
            Level::Warning,
            "no team daemon runs here: nothing to stop from this screen (`crew down`)",
        ),
        Action::Help => state.overlay = Some(Overlay::Help { scroll: 0 }),
        Action::FocusNext => state.focus = focus_step(state.focus, 1),
        Action::FocusPrev => state.focus = focus_step(state.focus, -1),
        Action::FocusLead => state.focus = Pane::Lead,
        Action::FocusTeammates => state.focus = Pane::Teammates,
        Action::FocusTasks => state.focus = Pane::Tasks,
        Action::FocusMailboxes => state.focus = Pane::Mailboxes,
        Action::FocusApprovals => state.focus = Pane::Approvals,
        Action::Zoom => state.zoom = !state.zoom,
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
        | Action::Left
        | Action::Right => move_selection(state, action),
        Action::Open if state.focus == Pane::Tasks => state.task_open = !state.task_open,
        Action::Open if state.focus == Pane::Teammates => return open_diff(state),
        Action::Open if state.focus == Pane::Approvals => return open_review(state),
        Action::MergeQueue => return queue_view::open(state),
        Action::Always if let Some(id) = state.selected_review().map(|r| r.id) => {
            return queue_view::approve(state, id);
        }
        Action::Merge | Action::SendBack | Action::Discard if state.focus == Pane::Approvals => {
            match state.selected_review().map(|r| r.id) {
                Some(id) => return answer_review(state, id, action),
                None => state.set_status(Level::Warning, "no review selected"),
            }
        }
        Action::Back => state.task_open = false,
        Action::Send => return send_to_lead(state),
        Action::Newline => state.input.insert_newline(),
        Action::HistoryPrev | Action::HistoryNext => recall(state, action == Action::HistoryPrev),
        Action::Approve | Action::Deny => {
            let selected = state
                .workspace
                .pending()
                .get(state.selected(Pane::Approvals))
                .map(|r| (r.request_id.clone(), r.from.clone()));
            match selected {
                Some((request_id, _)) if action == Action::Approve => {
                    return vec![Effect::Respond {
                        request_id,
                        approve: true,
                        note: None,
                    }];
                }
                // A denial asks for a note first: the agent is told it with the answer.
                Some((request_id, from)) => {
                    open_prompt(state, PromptKind::Deny { request_id, from })
                }
                None => state.set_status(Level::Warning, "no pending request selected"),
            }
        }
        Action::Always => {
            let selected = state
                .workspace
                .pending()
                .get(state.selected(Pane::Approvals))
                .cloned();
            match selected {
                Some(request) => match ask::allow_rule(&request.request) {
                    Some(rule) => {
                        state.overlay = Some(Overlay::Confirm(Confirm::Always {
                            request_id: request.request_id.clone(),
                            rule,
                        }))
                    }
                    None => state.set_status(
                        Level::Warning,
                        "this request names no tool: there is no rule to add",
                    ),
                },
                None => state.set_status(Level::Warning, "no pending request selected"),
            }
        }
        Action::AddTask => open_prompt(state, PromptKind::AddTask),
        Action::Release => return steer::release(state),
        Action::EditDeps | Action::Assign => steer::edit_task(state, action),
        Action::Expand | Action::PrevCall | Action::NextCall => folds::step(state, action),
        Action::Shutdown => steer::shutdown(state),
        Action::Interrupt => return steer::interrupt(state),
        Action::Restart => return steer::restart(state),
        Action::Diff => return open_diff(state),
        Action::Memories => memories::open(state),
        Action::Message => {
            if let Some(name) = state.selected_teammate() {
                open_prompt(state, PromptKind::Message { to: name });
            }
        }
        _ => {}
    }
    Vec::new()
}

fn act_overlay(state: &mut AppState, overlay: Overlay, action: Action) -> Vec<Effect> {
    match overlay {
        Overlay::Help { scroll } => {
            state.overlay = match action {
                Action::Help | Action::Back | Action::Cancel => None,
                Action::Up => Some(Overlay::Help {
                    scroll: scroll.saturating_sub(1),
                }),
                Action::Down => Some(Overlay::Help { scroll: scroll + 1 }),
                _ => Some(Overlay::Help { scroll }),
            };
            Vec::new()
        }
        Overlay::Prompt(mut prompt) => match action {
            Action::Confirm => submit_prompt(state, prompt),
            Action::Cancel | Action::Back => Vec::new(),
            Action::NextField => {
                prompt.active = (prompt.active + 1) % prompt.fields.len().max(1);
                state.overlay = Some(Overlay::Prompt(prompt));
                Vec::new()
            }
            _ => {
                state.overlay = Some(Overlay::Prompt(prompt));
                Vec::new()
            }
        },
        Overlay::Memories(view) => {
            memories::act(state, view, action);
            Vec::new()
        }
        Overlay::Confirm(what) => match action {
            Action::Confirm => confirm(state, what),
            Action::Cancel | Action::Back => Vec::new(),
            _ => {
                state.overlay = Some(Overlay::Confirm(what));
                Vec::new()
            }
        },
    }
}

fn send_to_lead(state: &mut AppState) -> Vec<Effect> {
    let text = state.input.lines().join("\n");
    if text.trim().is_empty() {
        return Vec::new();
    }
    state.history.push(text.clone());
    state.history_pos = None;
    state.input = crate::state::new_input();
    vec![Effect::Send {
        to: state.workspace.lead_name(),
        text,
    }]
}

fn recall(state: &mut AppState, older: bool) {
    if state.history.is_empty() {
        return;
    }
    let last = state.history.len() - 1;
    let pos = match (state.history_pos, older) {
        (None, true) => Some(last),
        (None, false) => None,
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) if p < last => Some(p + 1),
        (Some(_), false) => None,
    };
    state.history_pos = pos;
    state.input = crate::state::new_input();
    if let Some(p) = pos {
        state.input.insert_str(&state.history[p]);
    }
}

fn on_mouse(state: &mut AppState, mouse: MouseEvent) -> Vec<Effect> {
    let at = Position::new(mouse.column, mouse.row);
    let under = pane_at(state, at);
    match mouse.kind {
        MouseEventKind::Down(MouseButton::Left) if state.overlay.is_none() => {
            if let Some(pane) = under {
                state.focus = pane;
            }
            folds::click(state, at);
        }
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let up = mouse.kind == MouseEventKind::ScrollUp;
            if let Some(view) = state.diff.as_mut() {
                view.scroll_by(if up { -3 } else { 3 });
            } else if let Some(pane) = under.filter(|_| state.overlay.is_none()) {
                let focus = state.focus;
                state.focus = pane;
                for _ in 0..3 {
                    move_selection(state, if up { Action::Up } else { Action::Down });
                }
                state.focus = focus;
            }
        }
        _ => {}
    }
    Vec::new()
}

/// The pane (or tab) drawn at `at`, found with the same layout the renderer uses.
fn pane_at(state: &AppState, at: Position) -> Option<Pane> {
    let screen = Rect::new(0, 0, state.size.0, state.size.1);
    let areas = areas(state, screen)?;
    let tabs = areas
        .tabs
        .map(|t| tab_cells(t, &tab_labels(state)))
        .unwrap_or_default();
    tabs.into_iter()
        .chain(areas.panes)
        .find(|(_, r)| r.contains(at))
        .map(|(p, _)| p)
}
