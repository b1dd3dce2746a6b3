//! `claim_task`: take a task atomically, by id or the oldest claimable one for my role.

use schemars::JsonSchema;
use serde::Deserialize;

use super::run_store;
use super::view::detail_output;
use crate::run::link::LinkedStore;
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

impl<S: LinkedStore> TypedTool for ClaimTask<S> {
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
            let (me, role) = (env.me.clone(), env.role.clone());
            let task = env.link.call(|store| async move {
                let who = Claimant {
                    name: &me,
                    role: Some(&role),
                };
                match input.id {
                    Some(id) => store.claim(id, who).await,
                    None => store.claim_next(who).await,
                }
            })?;
            detail_output(env, &task)
        })
    }
}
