//! Steering the team from the screen: a task's dependencies and owner, a teammate's shutdown
//! and restart. Each opens a dialog or returns the effect that does it.

use crate::action::Action;
use crate::event::Effect;
use crate::keymap::Mode;
use crate::state::{AppState, Confirm, Level, Overlay, Pane, PromptKind};
use crate::submit::open_prompt;
use crew_store::AgentState;
use crew_store::{Status, TaskId};

/// A teammate whose process should be there (as opposed to SHUTDOWN, DEAD or never started).
fn running(state: Option<AgentState>) -> bool {
    state.is_some_and(AgentState::is_live)
}

fn selected_task(state: &AppState) -> Option<TaskId> {
    let row = state.workspace.task_rows.get(state.selected(Pane::Tasks))?;
    state.workspace.tasks.get(row.index).map(|t| t.id)
}

/// The dependency or owner dialog for the selected task.
pub(crate) fn edit_task(state: &mut AppState, action: Action) {
    let Some(id) = selected_task(state) else {
        return;
    };
    let kind = match action {
        Action::EditDeps => PromptKind::EditDeps { id },
        _ => PromptKind::Assign { id },
    };
    open_prompt(state, kind);
}

/// Takes the selected task from its owner (or assignee) back to the pool.
pub(crate) fn release(state: &mut AppState) -> Vec<Effect> {
    let Some(id) = selected_task(state) else {
        return Vec::new();
    };
    let owned = state
        .workspace
        .tasks
        .iter()
        .any(|t| t.id == id && t.owner.is_some() && t.status != Status::Completed);
    if owned {
        return vec![Effect::Assign { id, to: None }];
    }
    state.set_status(Level::Warning, format!("{id} is not claimed or assigned"));
    Vec::new()
}

/// How soon a second interrupt of the same agent offers to release its task.
pub(crate) const RELEASE_WINDOW: std::time::Duration = std::time::Duration::from_secs(3);

/// Interrupts the focused agent (the lead, or the selected teammate) if it works; a second
/// press within `RELEASE_WINDOW` offers to give its task back to the pool.
pub(crate) fn interrupt(state: &mut AppState) -> Vec<Effect> {
    let name = match state.focus {
        Pane::Lead => state.workspace.lead_name(),
        _ => match state.selected_teammate() {
            Some(name) => name,
            None => return Vec::new(),
        },
    };
    let now = state.now;
    let again = state.last_interrupt.as_ref().is_some_and(|(who, at)| {
        *who == name && now.duration_since(*at).is_ok_and(|d| d <= RELEASE_WINDOW)
    });
    let task = state.agent(&name).and_then(|a| a.task);
    if again && let Some(id) = task {
        state.last_interrupt = None;
        state.overlay = Some(Overlay::Confirm(Confirm::ReleaseTask { name, id }));
        return Vec::new();
    }
    let now_state = state.agent(&name).map(|a| a.state);
    if !running(now_state) {
        let now_state = now_state.map_or("never started", AgentState::as_str);
        state.set_status(
            Level::Warning,
            format!("{name} is not running ({now_state})"),
        );
        return Vec::new();
    }
    state.last_interrupt = Some((name.clone(), now));
    let key = state
        .keymap
        .key_for(state.focus.mode(), Action::Interrupt)
        .unwrap_or_default();
    state.set_status(
        Level::Info,
        format!(
            "interrupting {name}; {key} again within {} s offers to release its task",
            RELEASE_WINDOW.as_secs()
        ),
    );
    vec![Effect::Interrupt { name }]
}

/// Asks (after a confirmation) the selected teammate to shut down, if it runs.
pub(crate) fn shutdown(state: &mut AppState) {
    let Some(name) = state.selected_teammate() else {
        return;
    };
    let now = state.agent(&name).map(|a| a.state);
    if running(now) {
        state.overlay = Some(Overlay::Confirm(Confirm::Shutdown { name }));
    } else {
        let now = now.map_or("never started", AgentState::as_str);
        state.set_status(Level::Warning, format!("{name} is not running ({now})"));
    }
}

/// Starts the selected teammate again, unless it runs.
pub(crate) fn restart(state: &mut AppState) -> Vec<Effect> {
    let Some(name) = state.selected_teammate() else {
        return Vec::new();
    };
    if let Some(now) = state.agent(&name).map(|a| a.state)
        && running(Some(now))
    {
        let key = state
            .keymap
            .key_for(Mode::Teammates, Action::Shutdown)
            .unwrap_or_default();
        state.set_status(
            Level::Warning,
            format!("{name} is running ({now}); ask it to shut down first ({key})"),
        );
        return Vec::new();
    }
    state.set_status(Level::Info, format!("restarting {name}..."));
    vec![Effect::Restart {
        name,
        exe: state.worker_exe.clone(),
    }]
}
