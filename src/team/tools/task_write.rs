//! `task_create` and `task_update`: changing the task graph. Status changes go through the
//! store's owner-only transitions, as the calling agent.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::task_read::parse_id;
use super::view::detail_output;
use super::{CallError, TeamEnv, json_output, optional_text, require_text, run_store, text_field};
use crate::config::ROLES;
use crate::store::{Claimant, NewTask, StoreError, TaskId, TaskPatch};
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

team_tool! {
    /// Adds a task to the graph.
    TaskCreate
}

impl Tool for TaskCreate {
    fn name(&self) -> &str {
        "task_create"
    }

    fn description(&self) -> &str {
        "Create a task. blocked_by lists the task ids that must be completed before it can start; \
         role (explorer, planner, reviewer, implementer) limits who may claim it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "subject": {"type": "string", "description": "One line: what is to be done"},
                "description": {"type": "string", "description": "Details, scope, how to check it is done"},
                "blocked_by": {"type": "array", "items": {"type": "string"}},
                "role": {"type": "string", "enum": ROLES}
            },
            "required": ["subject"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        require_text(input, "subject")?;
        check_ids(input)
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let task = store.create(NewTask {
                subject: text_field(&input, "subject")?,
                description: optional_text(&input, "description").unwrap_or_default(),
                blocked_by: id_list(&input).unwrap_or_default(),
                role: optional_text(&input, "role"),
            })?;
            Ok(json_output(&json!({
                "created": task.id,
                "subject": task.subject,
                "blockedBy": task.blocked_by,
            })))
        })
    }
}

team_tool! {
    /// Edits a task and moves it out of `in_progress` (owner only).
    TaskUpdate
}

impl Tool for TaskUpdate {
    fn name(&self) -> &str {
        "task_update"
    }

    fn description(&self) -> &str {
        "Change a task's subject, description or blocked_by, and/or its status: \"completed\" \
         (with an optional result), \"failed\" (result says why) or \"pending\" (give it back). \
         Only the task's owner can change its status, and only while it is in progress. The lead \
         can assign_to a teammate: only that teammate may then claim it (\"\" puts it back in \
         the pool)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "subject": {"type": "string"},
                "description": {"type": "string"},
                "blocked_by": {"type": "array", "items": {"type": "string"}},
                "status": {"type": "string", "enum": ["completed", "failed", "pending"]},
                "result": {"type": "string", "description": "What came of it, or why it failed"},
                "assign_to": {"type": "string", "description": "Lead only: the teammate who alone may claim it; \"\" for anyone"}
            },
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        parse_id(input).map_err(|e| e.to_string())?;
        check_ids(input)?;
        if input.get("subject").is_some() {
            require_text(input, "subject")?;
        }
        let changes = [
            "subject",
            "description",
            "blocked_by",
            "status",
            "assign_to",
        ];
        if !changes.iter().any(|f| input.get(f).is_some()) {
            return Err(
                "nothing to change: give subject, description, blocked_by, status or assign_to"
                    .to_string(),
            );
        }
        if input.get("assign_to").is_some() && self.env.me != self.env.lead {
            return Err(
                "only the lead assigns tasks; claim_task takes one for yourself".to_string(),
            );
        }
        let status = input.get("status").and_then(Value::as_str);
        let result = optional_text(input, "result");
        match (status, result) {
            (Some("failed"), None) => Err("a failed task needs a result saying why".to_string()),
            (Some("completed" | "failed"), _) | (_, None) => Ok(()),
            (_, Some(_)) => {
                Err("a result is recorded only with status completed or failed".to_string())
            }
        }
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let id = parse_id(&input)?;
            let patch = TaskPatch {
                subject: optional_text(&input, "subject"),
                description: input
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                blocked_by: id_list(&input),
            };
            let patched = patch.subject.is_some()
                || patch.description.is_some()
                || patch.blocked_by.is_some();
            if patched {
                store.update(id, patch)?;
            }
            if let Some(to) = input.get("assign_to").and_then(Value::as_str) {
                // "" puts it back in the pool.
                let who = (!to.is_empty())
                    .then(|| Claimant::teammate(&env.teammates, to))
                    .transpose()
                    .map_err(StoreError::from)?;
                store.assign(id, who, &env.me)?;
            }
            let status = input.get("status").and_then(Value::as_str);
            if let Some(status) = status
                && let Err(e) = change_status(env, id, status, optional_text(&input, "result"))
            {
                // The edit above stands; say so, after the store's own words.
                let text = if patched {
                    format!("{e}\n(the other changes were saved)")
                } else {
                    e.to_string()
                };
                return Ok(ToolOutput::error(text));
            }
            let task = store.read(id)?;
            detail_output(&store, &task)
        })
    }
}

fn change_status(
    env: &TeamEnv,
    id: TaskId,
    status: &str,
    result: Option<String>,
) -> Result<(), CallError> {
    let store = env.workspace.tasks();
    let me = env.me.as_str();
    match status {
        "completed" => store.complete(id, me, result)?,
        "failed" => store.fail(id, me, result.unwrap_or_default())?,
        "pending" => store.release(id, me)?,
        other => return Err(CallError::Input(format!("unknown status `{other}`"))),
    };
    Ok(())
}

/// The `blocked_by` field, if given.
fn id_list(input: &Value) -> Option<Vec<String>> {
    input
        .get("blocked_by")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
}

/// Every id in `blocked_by` is a well-formed task id (existence is the store's check).
fn check_ids(input: &Value) -> Result<(), String> {
    for id in id_list(input).unwrap_or_default() {
        TaskId::parse(&id).map_err(|e: StoreError| e.to_string())?;
    }
    Ok(())
}
