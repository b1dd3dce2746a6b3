//! `task_list` and `task_get`: reading the task graph.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::view::{detail_output, summary};
use super::{CallError, json_output, run_store, text_field};
use crate::store::TaskId;
use crate::store::dag::Graph;
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

team_tool! {
    /// Every task with its state: done, running (owner), claimable, or blocked by what.
    TaskList
}

impl Tool for TaskList {
    fn name(&self) -> &str {
        "task_list"
    }

    fn description(&self) -> &str {
        "List the team's tasks, oldest first, each with its state: done, failed, running (owner), \
         claimable, or blocked by the tasks it waits for. A task with a role only goes to that role."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(
        &self,
        _input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let loaded = store.load_all()?;
            if loaded.tasks.is_empty() && loaded.problems.is_empty() {
                return Ok(ToolOutput::ok("no tasks yet"));
            }
            let graph = Graph::new(&loaded.tasks);
            let tasks: Vec<Value> = graph.tasks().iter().map(|t| summary(&graph, t)).collect();
            let mut out = json!({"tasks": tasks});
            if !loaded.problems.is_empty() {
                let problems: Vec<String> = loaded.problems.iter().map(|p| p.to_string()).collect();
                out["unreadable"] = json!(problems);
            }
            Ok(json_output(&out))
        })
    }
}

team_tool! {
    /// One task in full: description, owner, blockers, result.
    TaskGet
}

impl Tool for TaskGet {
    fn name(&self) -> &str {
        "task_get"
    }

    fn description(&self) -> &str {
        "Show one task in full: subject, description, status, state, owner, blockedBy, role and \
         result."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "task_<n> or <n>"}},
            "required": ["id"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        parse_id(input).map(|_| ()).map_err(|e| e.to_string())
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let id = parse_id(&input)?;
            let task = store.read(id)?;
            detail_output(&store, &task)
        })
    }
}

/// The `id` field as a task id.
pub(super) fn parse_id(input: &Value) -> Result<TaskId, CallError> {
    task_id(&text_field(input, "id")?)
}

/// A task id as the model wrote it (`task_<n>` or `<n>`, surrounding blanks ignored).
pub(super) fn task_id(raw: &str) -> Result<TaskId, CallError> {
    Ok(TaskId::parse(raw.trim())?)
}
