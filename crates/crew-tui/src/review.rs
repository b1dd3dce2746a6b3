//! The diff review's reducer half: keys in the diff view, opening it, and what merge and
//! discard results do to the screen.

use crate::action::Action;
use crate::diffview::DiffView;
use crate::event::Effect;
use crate::state::{AppState, Confirm, Level, Overlay, PromptKind};
use crate::submit::open_prompt;
use crew_git::MergeOutcome;
use crew_store::{AgentName, TaskId};

pub(crate) fn merged(
    state: &mut AppState,
    name: AgentName,
    result: Result<MergeOutcome, String>,
) -> Vec<Effect> {
    let text = match &result {
        Ok(MergeOutcome::FastForward { new_head }) => {
            format!("merged {name} (fast-forward to {})", short(new_head))
        }
        Ok(MergeOutcome::Merged { commit }) => {
            format!("merged {name} (merge commit {})", short(commit))
        }
        Ok(MergeOutcome::UpToDate) => format!("{name}: nothing to merge, up to date"),
        Ok(MergeOutcome::Conflicts { files }) => format!(
            "{name} NOT merged: conflicts in {} (nothing was changed)",
            files.join(", ")
        ),
        Err(e) => format!("merge of {name} failed: {e}"),
    };
    let level = match &result {
        Ok(MergeOutcome::Conflicts { .. }) => Level::Warning,
        Ok(_) => Level::Info,
        Err(_) => Level::Error,
    };
    state.set_status(level, text.clone());
    if let Some(view) = state.diff.as_mut().filter(|v| v.name == name) {
        view.outcome = Some(text);
        let task = view.task;
        return vec![Effect::LoadDiff { name, task }];
    }
    Vec::new()
}

pub(crate) fn discarded(
    state: &mut AppState,
    name: AgentName,
    result: Result<(), String>,
) -> Vec<Effect> {
    match result {
        Ok(()) => {
            state.set_status(Level::Info, format!("discarded {name}'s worktree"));
            if state.diff.as_ref().is_some_and(|v| v.name == name) {
                state.diff = None;
            }
        }
        Err(e) => state.set_status(Level::Error, format!("discard failed: {e}")),
    }
    Vec::new()
}

fn short(id: &str) -> String {
    id.chars().take(10).collect()
}

pub(crate) fn act_diff(state: &mut AppState, action: Action) -> Vec<Effect> {
    let theme = state.theme.syntax.clone();
    let Some(view) = state.diff.as_mut() else {
        return Vec::new();
    };
    let page = state.size.1.saturating_sub(8).max(1) as isize;
    match action {
        Action::Back | Action::Cancel => state.diff = None,
        Action::Quit => state.quit = true,
        Action::Help => state.overlay = Some(Overlay::Help { scroll: 0 }),
        Action::NextFile | Action::Right => view.move_file(1),
        Action::PrevFile | Action::Left => view.move_file(-1),
        Action::NextHunk => view.move_hunk(1),
        Action::PrevHunk => view.move_hunk(-1),
        Action::Up => view.scroll_by(-1),
        Action::Down => view.scroll_by(1),
        Action::PageUp => view.scroll_by(-page),
        Action::PageDown => view.scroll_by(page),
        Action::Top => view.scroll = 0,
        Action::Bottom => view.scroll_by(isize::MAX / 2),
        Action::SideBySide => view.side_by_side = !view.side_by_side,
        Action::Merge | Action::SendBack | Action::Discard if let Some(id) = view.task => {
            if action == Action::Merge {
                view.outcome = Some(format!("merging {id}..."));
            }
            return answer_review(state, id, action);
        }
        Action::Merge => {
            let name = view.name.clone();
            view.outcome = Some(format!("merging {name}..."));
            return vec![Effect::Merge { name }];
        }
        Action::SendBack => {
            let to = view.name.clone();
            open_prompt(state, PromptKind::SendBack { to });
            return Vec::new();
        }
        Action::Discard => {
            let name = view.name.clone();
            state.overlay = Some(Overlay::Confirm(Confirm::Discard { name }));
            return Vec::new();
        }
        _ => {}
    }
    match state.diff.as_mut() {
        Some(view) => highlight_current(view, &theme),
        None => Vec::new(),
    }
}

/// Asks for the current file's highlighting if it is not there yet.
pub(crate) fn highlight_current(view: &mut DiffView, theme: &str) -> Vec<Effect> {
    match view.current() {
        Some(file) if !file.binary && !view.highlights.contains_key(&view.file) => {
            let effect = Effect::HighlightFile {
                name: view.name.clone(),
                file: view.file,
                diff: Box::new(file.clone()),
                theme: theme.to_string(),
            };
            // Mark as requested so moving around does not ask again.
            view.highlights.insert(view.file, Vec::new());
            vec![effect]
        }
        _ => Vec::new(),
    }
}

pub(crate) fn open_diff(state: &mut AppState) -> Vec<Effect> {
    let Some(name) = state.selected_teammate() else {
        return Vec::new();
    };
    if !state.workspace.writes(&name) {
        state.set_status(
            Level::Warning,
            format!("{name} does not write: it has no worktree to review"),
        );
        return Vec::new();
    }
    state.diff = Some(DiffView::new(&name));
    vec![Effect::LoadDiff { name, task: None }]
}

/// The diff of the review selected in the approvals pane: only that task's commits.
pub(crate) fn open_review(state: &mut AppState) -> Vec<Effect> {
    let Some(review) = state.selected_review() else {
        return Vec::new();
    };
    let task = review.id;
    let Some(name) = review.owner.clone() else {
        state.set_status(
            Level::Warning,
            format!("{task} has no owner: no branch to show"),
        );
        return Vec::new();
    };
    let mut view = DiffView::new(&name);
    view.task = Some(task);
    state.diff = Some(view);
    vec![Effect::LoadDiff {
        name,
        task: Some(task),
    }]
}

/// `M`, `b`, `X` on a task in review (from its diff or the review queue).
pub(crate) fn answer_review(state: &mut AppState, id: TaskId, action: Action) -> Vec<Effect> {
    match action {
        Action::Merge => {
            state.set_status(Level::Info, format!("merging {id}..."));
            vec![Effect::MergeReview { id }]
        }
        Action::SendBack => {
            open_prompt(state, PromptKind::ReviewSendBack { id });
            Vec::new()
        }
        Action::Discard => {
            open_prompt(state, PromptKind::ReviewDiscard { id });
            Vec::new()
        }
        _ => Vec::new(),
    }
}
