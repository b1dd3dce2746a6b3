//! `claim_task`: take a task atomically, by id or the oldest claimable one for my role.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::run_store;
use super::task_read::parse_id;
use super::view::detail_output;
use crate::store::Claimant;
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

team_tool!(ClaimTask);

impl Tool for ClaimTask {
    fn name(&self) -> &str {
        "claim_task"
    }

    fn description(&self) -> &str {
        "Claim a task so you own it and it is in progress. Without an id, claims the oldest \
         claimable task that fits your role. Refused when the task is blocked, already claimed, \
         or meant for another role."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "task_<n>; omit for the next claimable one"}},
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        if input.get("id").is_some() {
            parse_id(input).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let who = Claimant {
                name: &env.me,
                role: Some(&env.role),
            };
            let task = if input.get("id").is_some() {
                store.claim(parse_id(&input)?, who)?
            } else {
                store.claim_next(who)?
            };
            detail_output(&store, &task)
        })
    }
}
