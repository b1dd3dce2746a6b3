//! The merge queue's view, reducer half: opened with `ctrl-r` from the approvals pane (so
//! `ctrl-r ctrl-r` from anywhere), reloaded each second while open (the test's output is
//! live), and its keys: pause / resume, remove, retry. The queue's worker runs in the team's
//! process; the screen only reads and changes the queue's file, as `crew queue` does.

use std::collections::BTreeMap;

use crate::action::Action;
use crate::event::Effect;
use crate::state::{AppState, Level, Overlay};
use crew_store::{QueueState, TaskId};

/// What the view shows, as loaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueSnapshot {
    pub queue: QueueState,
    /// Each queued task's subject.
    pub subjects: BTreeMap<TaskId, String>,
    /// The end of the current (or last) test run's output.
    pub output: String,
}

#[derive(Debug, Clone, Default)]
pub struct QueueView {
    pub selected: usize,
    pub snapshot: Option<Result<QueueSnapshot, String>>,
}

impl QueueView {
    /// The task of the selected row.
    pub fn selected_id(&self) -> Option<TaskId> {
        let Some(Ok(snapshot)) = &self.snapshot else {
            return None;
        };
        snapshot.queue.entries.get(self.selected).map(|e| e.id)
    }

    fn rows(&self) -> usize {
        match &self.snapshot {
            Some(Ok(s)) => s.queue.entries.len(),
            _ => 0,
        }
    }
}

pub(crate) fn open(state: &mut AppState) -> Vec<Effect> {
    state.queue = Some(QueueView::default());
    vec![Effect::LoadQueue]
}

pub(crate) fn loaded(state: &mut AppState, snapshot: Result<QueueSnapshot, String>) {
    if let Some(view) = state.queue.as_mut() {
        view.snapshot = Some(snapshot);
        view.selected = view.selected.min(view.rows().saturating_sub(1));
    }
}

/// `A` on a review: into the merge queue.
pub(crate) fn approve(state: &mut AppState, id: TaskId) -> Vec<Effect> {
    state.set_status(
        Level::Info,
        format!("approving {id} into the merge queue..."),
    );
    vec![Effect::ApproveReview { id }]
}

pub(crate) fn act(state: &mut AppState, action: Action) -> Vec<Effect> {
    let Some(view) = state.queue.as_mut() else {
        return Vec::new();
    };
    let last = view.rows().saturating_sub(1);
    match action {
        Action::Back | Action::Cancel | Action::MergeQueue => state.queue = None,
        Action::Quit => state.quit = true,
        Action::Help => state.overlay = Some(Overlay::Help { scroll: 0 }),
        Action::Up => view.selected = view.selected.saturating_sub(1),
        Action::Down => view.selected = (view.selected + 1).min(last),
        Action::Top => view.selected = 0,
        Action::Bottom => view.selected = last,
        Action::QueuePause => {
            let paused = matches!(&view.snapshot, Some(Ok(s)) if s.queue.paused);
            return vec![Effect::PauseQueue { paused: !paused }, Effect::LoadQueue];
        }
        Action::QueueRemove | Action::QueueRetry => {
            let Some(id) = view.selected_id() else {
                state.set_status(Level::Warning, "no task selected in the merge queue");
                return Vec::new();
            };
            let effect = if action == Action::QueueRemove {
                Effect::RemoveFromQueue { id }
            } else {
                Effect::RetryInQueue { id }
            };
            return vec![effect, Effect::LoadQueue];
        }
        _ => {}
    }
    Vec::new()
}
