//! `claim_task`: take a task atomically, by id or the oldest claimable one for my role.

use schemars::JsonSchema;
use serde::Deserialize;

use super::run_store;
use super::view::detail_output;
use crew_store::{Claimant, TaskId};
use crew_tools::{ToolContext, ToolFuture, ToolKind, TypedTool};

team_tool!(ClaimTask);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimTaskInput {
    /// task_<n>; omit for the next claimable one
    #[schemars(with = "Option<String>", pattern(TaskId::PATTERN))]
    pub id: Option<TaskId>,
}

impl TypedTool for ClaimTask {
    type Input = ClaimTaskInput;
    const NAME: &'static str = "claim_task";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Claim a task so you own it and it is in progress. Without an id, claims the oldest \
         claimable task that fits your role. Refused when the task is blocked, already claimed, \
         or meant for another role."
    }

    fn run(&self, input: ClaimTaskInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let store = env.workspace.tasks();
            let who = Claimant {
                name: &env.me,
                role: Some(&env.role),
            };
            let task = match input.id {
                Some(id) => store.claim(id, who)?,
                None => store.claim_next(who)?,
            };
            detail_output(&store, &task)
        })
    }
}
