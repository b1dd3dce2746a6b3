//! How tasks look to the model: a one-word state and compact JSON.

use serde_json::{Value, json};

use super::{CallError, json_output};
use crate::run::link::LinkedStore;
use crate::tools::TeamEnv;
use crew_protocol::joined;
use crew_store::dag::Graph;
use crew_store::{Status, Task};
use crew_tools::ToolOutput;

/// `done`, `failed`, `running (owner)`, `in review (owner)`, `blocked by a, b`, `claimable`, `assigned to x` (a
/// pending task with an owner: only x may claim it), or both of the last two kinds.
pub(super) fn state_of(graph: &Graph<'_>, task: &Task) -> String {
    match task.status {
        Status::Completed => "done".to_string(),
        Status::Failed => "failed".to_string(),
        Status::InProgress => format!("running ({})", task.owner.as_deref().unwrap_or("nobody")),
        // Done by its owner, waiting for its commits to be merged; dependents wait for that.
        Status::Review => format!("in review ({})", task.owner.as_deref().unwrap_or("nobody")),
        Status::Pending => {
            let open = graph.open_blockers(task);
            let assigned = task.owner.as_ref().map(|o| format!("assigned to {o}"));
            match (open.is_empty(), assigned) {
                (true, Some(assigned)) => assigned,
                (true, None) => "claimable".to_string(),
                (false, None) => format!("blocked by {}", joined(&open, ", ")),
                (false, Some(assigned)) => {
                    format!("{assigned}, blocked by {}", joined(&open, ", "))
                }
            }
        }
    }
}

/// One line of `task_list`: what is needed to choose a task.
pub(super) fn summary(graph: &Graph<'_>, task: &Task) -> Value {
    let mut value = json!({"id": task.id, "subject": task.subject, "state": state_of(graph, task)});
    if let Some(role) = &task.role {
        value["role"] = json!(role);
    }
    value
}

/// `task` in full as the tool result. Its state depends on its blockers, so the other tasks
/// are read for that.
pub(super) fn detail_output<S: LinkedStore>(
    env: &TeamEnv<S>,
    task: &Task,
) -> Result<ToolOutput, CallError> {
    let tasks = env.tasks()?;
    Ok(json_output(&detail(&Graph::new(&tasks), task)))
}

/// A whole task with its derived state.
fn detail(graph: &Graph<'_>, task: &Task) -> Value {
    let mut value = json!({
        "id": task.id,
        "subject": task.subject,
        "description": task.description,
        "status": task.status.as_str(),
        "state": state_of(graph, task),
        "owner": task.owner,
        "blockedBy": task.blocked_by,
    });
    for (field, present) in [
        ("role", &task.role),
        ("worktree", &task.worktree),
        ("result", &task.result),
    ] {
        if let Some(text) = present {
            value[field] = json!(text);
        }
    }
    value
}
