//! Moving focus and selections.

use crew_store::AgentName;

use crate::action::Action;
use crate::state::{AppState, PANES, Pane};

pub(crate) fn focus_step(from: Pane, step: isize) -> Pane {
    let at = PANES.iter().position(|p| *p == from).unwrap_or(0) as isize;
    let n = PANES.len() as isize;
    PANES[(at + step).rem_euclid(n) as usize]
}

/// How many items the pane selects among (0 for panes that only scroll).
fn item_count(state: &AppState, pane: Pane) -> usize {
    match pane {
        Pane::Teammates => state.workspace.teammates().len(),
        Pane::Tasks => state.workspace.task_rows.len(),
        Pane::Approvals => state.workspace.pending().len() + state.reviews.len(),
        Pane::Lead | Pane::Mailboxes => 0,
    }
}

/// Inboxes the mailboxes pane offers: every agent, the person, and any other inbox on disk.
pub(crate) fn inbox_names(state: &AppState) -> Vec<AgentName> {
    let mut names: Vec<AgentName> = state
        .workspace
        .config
        .as_ref()
        .map(|c| c.roster().names().to_vec())
        .unwrap_or_default();
    for name in state.workspace.inboxes.keys() {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// Up/down/page/top/bottom/left/right in the focused pane. Selecting panes move a selection;
/// the lead and mailboxes scroll back from the newest line (0 = following the end).
pub(crate) fn move_selection(state: &mut AppState, action: Action) {
    let pane = state.focus;
    let page = state.size.1.saturating_sub(6).max(1) as isize;
    let count = item_count(state, pane);
    if pane == Pane::Mailboxes && matches!(action, Action::Left | Action::Right) {
        let n = inbox_names(state).len().max(1) as isize;
        let step = if action == Action::Left { -1 } else { 1 };
        let next = (state.selected(pane) as isize + step).rem_euclid(n) as usize;
        state.selected.insert(pane, next);
        state.scroll.insert(pane, 0);
        return;
    }
    if pane == Pane::Teammates && matches!(action, Action::Left | Action::Right) {
        let step = if action == Action::Left { -1 } else { 1 };
        state.scroll.insert(pane, 0);
        return select(state, pane, count, step);
    }
    // A zoomed teammate scrolls its transcript; left/right pick the teammate.
    let count = if pane == Pane::Teammates && state.zoom {
        0
    } else {
        count
    };
    let delta = match action {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -page,
        Action::PageDown => page,
        Action::Top => isize::MIN / 2,
        Action::Bottom => isize::MAX / 2,
        _ => return,
    };
    if count > 0 {
        select(state, pane, count, delta);
    } else {
        // Scrolling back: up moves away from the newest line (home twice must not overflow).
        let back = (state.scroll(pane) as isize).saturating_sub(delta);
        state.scroll.insert(pane, back.max(0) as usize);
    }
}

fn select(state: &mut AppState, pane: Pane, count: usize, delta: isize) {
    let next = (state.selected(pane) as isize).saturating_add(delta);
    let next = next.clamp(0, count.saturating_sub(1) as isize) as usize;
    state.selected.insert(pane, next);
}
