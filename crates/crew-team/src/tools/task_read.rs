//! `task_list` and `task_get`: reading the task graph.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::view::{detail_output, summary};
use super::{json_output, run_store};
use crate::run::link::LinkedStore;
use crew_store::TaskId;
use crew_store::dag::Graph;

use crew_tools::{NoInput, ToolContext, ToolFuture, ToolKind, ToolOutput, TypedTool};

team_tool! {
    /// Every task with its state: done, running (owner), claimable, or blocked by what.
    TaskList
}

impl<S: LinkedStore> TypedTool for TaskList<S> {
    type Input = NoInput;
    const NAME: &'static str = "task_list";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "List the team's tasks, oldest first, each with its state: done, failed, running (owner), \
         claimable, or blocked by the tasks it waits for. A task with a role only goes to that role."
    }

    fn is_concurrency_safe(&self, _input: &NoInput) -> bool {
        true
    }

    fn run(&self, _input: NoInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            // On files a task file that does not parse is reported too.
            let loaded = match env.link.store().files() {
                Some(workspace) => workspace.tasks().load_all()?,
                None => crew_store::Loaded {
                    tasks: env.tasks()?,
                    problems: Vec::new(),
                },
            };
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskGetInput {
    /// task_<n> or <n>
    #[schemars(with = "String", pattern(TaskId::PATTERN))]
    pub id: TaskId,
}

impl<S: LinkedStore> TypedTool for TaskGet<S> {
    type Input = TaskGetInput;
    const NAME: &'static str = "task_get";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Show one task in full: subject, description, status, state, owner, blockedBy, role and \
         result."
    }

    fn is_concurrency_safe(&self, _input: &TaskGetInput) -> bool {
        true
    }

    fn run(&self, input: TaskGetInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let task = env.task(input.id)?;
            detail_output(env, &task)
        })
    }
}
