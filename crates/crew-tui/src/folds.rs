//! Folded tool calls: moving between an agent's calls and unfolding one.

use ratatui::layout::{Position, Rect};

use crate::action::Action;
use crate::layout::areas;
use crate::render::{conversation, lead, teammates};
use crate::state::{AppState, Level, Pane};

/// Moving between an agent's tool calls (the lead's, or the selected teammate's) and unfolding
/// one. The view scrolls so the selected call ends at the bottom of the pane.
pub(crate) fn step(state: &mut AppState, action: Action) {
    let (name, pane) = match state.focus {
        Pane::Lead => (state.workspace.lead_name(), Pane::Lead),
        Pane::Teammates => match state.selected_teammate() {
            Some(name) => (name, Pane::Teammates),
            None => return,
        },
        _ => return,
    };
    let Some(kept) = state.workspace.transcripts.get(&name) else {
        state.set_status(Level::Warning, format!("{name} has made no tool calls yet"));
        return;
    };
    let folds = state.folds.entry(name.clone()).or_default();
    let current = folds.selected.filter(|n| kept.index(*n).is_some());
    let last = kept.calls().next_back();
    let target = match (action, current) {
        (_, None) => last,
        (Action::PrevCall, Some(n)) => kept.calls().rev().find(|c| *c < n).or(Some(n)),
        (Action::NextCall, Some(n)) => kept.calls().find(|c| *c > n).or(Some(n)),
        (_, Some(n)) => Some(n),
    };
    let Some(target) = target else {
        state.set_status(Level::Warning, format!("{name} has made no tool calls yet"));
        return;
    };
    folds.selected = Some(target);
    if action == Action::Expand && !folds.open.remove(&target) {
        folds.open.insert(target);
    }
    // The small teammate boxes follow the end; unfolding is read in the zoomed view.
    if let Some(placed) = placement(state, pane) {
        let back = conversation::lines_after(state, &name, target, placed.layout);
        state.scroll.insert(pane, back);
    }
}

/// Where the lead's or the zoomed teammate's transcript is drawn now, as the renderer does it.
fn placement(state: &AppState, pane: Pane) -> Option<conversation::Placement> {
    let screen = Rect::new(0, 0, state.size.0, state.size.1);
    let (_, area) = areas(state, screen)?
        .panes
        .into_iter()
        .find(|(p, _)| *p == pane)?;
    match pane {
        Pane::Lead => Some(lead::placement(state, area).0),
        Pane::Teammates if state.zoom => teammates::zoomed_placement(state, area),
        _ => None,
    }
}

/// A click on a folded call's line unfolds it (or folds it again), in the lead pane or a
/// zoomed teammate.
pub(crate) fn click(state: &mut AppState, at: Position) {
    if state.diff.is_some() {
        return;
    }
    let placed = [Pane::Lead, Pane::Teammates]
        .into_iter()
        .filter_map(|pane| placement(state, pane))
        .find(|p| p.area.contains(at));
    let Some(placed) = placed else {
        return;
    };
    let height = placed.area.height as usize;
    let hit = conversation::window(state, &placed.name, placed.layout, height, placed.back)
        .and_then(|w| {
            w.calls
                .get(usize::from(at.y - placed.area.y))
                .copied()
                .flatten()
        });
    if let Some(number) = hit {
        let folds = state.folds.entry(placed.name).or_default();
        folds.selected = Some(number);
        if !folds.open.remove(&number) {
            folds.open.insert(number);
        }
    }
}
