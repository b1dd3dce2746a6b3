//! `task_create` and `task_update`: changing the task graph. Edits, assignments and status
//! changes go through the store's rules, as the calling agent (`TeamEnv::actor`): the store,
//! not this tool, decides who may change what.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::view::detail_output;
use super::{CallError, TeamEnv, actor, json_output, required_text, run_store, trimmed};
use crate::run::link::LinkedStore;
use crew_config::ROLES;
use crew_store::{Claimant, NewTask, StoreError, TaskId, TaskPatch};
use crew_tools::{ToolContext, ToolFuture, ToolKind, ToolOutput, TypedTool};

team_tool! {
    /// Adds a task to the graph.
    TaskCreate
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskCreateInput {
    /// One line: what is to be done
    pub subject: String,
    /// Details, scope, how to check it is done
    pub description: Option<String>,
    #[serde(default)]
    #[schemars(with = "Vec<String>", inner(pattern(TaskId::PATTERN)))]
    pub blocked_by: Vec<TaskId>,
    #[schemars(extend("enum" = ROLES))]
    pub role: Option<String>,
}

impl<S: LinkedStore> TypedTool for TaskCreate<S> {
    type Input = TaskCreateInput;
    const NAME: &'static str = "task_create";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Create a task. blocked_by lists the task ids that must be completed before it can start; \
         role (explorer, planner, reviewer, implementer) limits who may claim it."
    }

    fn validate(&self, input: &TaskCreateInput, _ctx: &ToolContext) -> Result<(), String> {
        required_text("subject", &input.subject).map(drop)
    }

    fn run(&self, input: TaskCreateInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let role = input.role.as_deref().and_then(trimmed);
            if let Some(role) = &role {
                check_role_is_staffed(env, role)?;
            }
            let new = NewTask {
                subject: required_text("subject", &input.subject).map_err(CallError::Input)?,
                description: input
                    .description
                    .as_deref()
                    .and_then(trimmed)
                    .unwrap_or_default(),
                blocked_by: input.blocked_by,
                role,
            };
            let task = env
                .link
                .call(|store| async move { store.create_task(new).await })?;
            Ok(json_output(&json!({
                "created": task.id,
                "subject": task.subject,
                "blockedBy": task.blocked_by,
            })))
        })
    }
}

/// A task for a role no teammate has would sit claimable for ever: refused, naming the roles
/// the team has.
fn check_role_is_staffed<S: LinkedStore>(env: &TeamEnv<S>, role: &str) -> Result<(), CallError> {
    if env
        .teammates
        .iter()
        .any(|t| t.role.as_deref() == Some(role))
    {
        return Ok(());
    }
    let mut roles: Vec<&str> = env
        .teammates
        .iter()
        .filter_map(|t| t.role.as_deref())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let has = if roles.is_empty() {
        "no teammate has a role; leave role out".to_string()
    } else {
        format!("the team's roles are {}", roles.join(", "))
    };
    Err(CallError::Refused(format!(
        "no teammate has role `{role}`, so nobody could claim it; {has}"
    )))
}

team_tool! {
    /// Edits a task and moves it out of `in_progress` (owner only).
    TaskUpdate
}

/// Where an owner may move its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusChange {
    Completed,
    Failed,
    Pending,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdateInput {
    #[schemars(with = "String", pattern(TaskId::PATTERN))]
    pub id: TaskId,
    pub subject: Option<String>,
    pub description: Option<String>,
    #[schemars(with = "Option<Vec<String>>", inner(pattern(TaskId::PATTERN)))]
    pub blocked_by: Option<Vec<TaskId>>,
    pub status: Option<StatusChange>,
    /// What came of it, or why it failed
    pub result: Option<String>,
    /// Lead only: the teammate who alone may claim it; "" for anyone
    pub assign_to: Option<String>,
}

impl<S: LinkedStore> TypedTool for TaskUpdate<S> {
    type Input = TaskUpdateInput;
    const NAME: &'static str = "task_update";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Change a task's subject, description or blocked_by, and/or its status: \"completed\" \
         (with an optional result), \"failed\" (result says why) or \"pending\" (give it back). \
         Only the task's owner can change its status, and only while it is in progress. The lead \
         can assign_to a teammate: only that teammate may then claim it (\"\" puts it back in \
         the pool)."
    }

    fn validate(&self, input: &TaskUpdateInput, _ctx: &ToolContext) -> Result<(), String> {
        if let Some(subject) = &input.subject {
            required_text("subject", subject)?;
        }
        let changes = input.subject.is_some()
            || input.description.is_some()
            || input.blocked_by.is_some()
            || input.status.is_some()
            || input.assign_to.is_some();
        if !changes {
            return Err(
                "nothing to change: give subject, description, blocked_by, status or assign_to"
                    .to_string(),
            );
        }
        let result = input.result.as_deref().and_then(trimmed);
        match (input.status, result) {
            (Some(StatusChange::Failed), None) => {
                Err("a failed task needs a result saying why".to_string())
            }
            (Some(StatusChange::Completed | StatusChange::Failed), _) | (_, None) => Ok(()),
            (_, Some(_)) => {
                Err("a result is recorded only with status completed or failed".to_string())
            }
        }
    }

    fn run(&self, input: TaskUpdateInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let id = input.id;
            let (me, lead, writes) = (env.me.clone(), env.me == env.lead, env.writes);
            let patch = TaskPatch {
                subject: input.subject.as_deref().and_then(trimmed),
                description: input.description,
                blocked_by: input.blocked_by,
            };
            let patched = patch.subject.is_some()
                || patch.description.is_some()
                || patch.blocked_by.is_some();
            if patched {
                let me = me.clone();
                env.link.call(|store| async move {
                    store.update(id, patch, actor(&me, lead, writes)).await
                })?;
            }
            if let Some(to) = &input.assign_to {
                // "" puts it back in the pool.
                let who = (!to.is_empty())
                    .then(|| Claimant::teammate(&env.teammates, to))
                    .transpose()
                    .map_err(StoreError::from)?
                    .map(|c| (c.name.clone(), c.role.map(str::to_string)));
                let me = me.clone();
                env.link.call(|store| async move {
                    let who = who.as_ref().map(|(name, role)| Claimant {
                        name,
                        role: role.as_deref(),
                    });
                    store.assign(id, who, actor(&me, lead, writes)).await
                })?;
            }
            if let Some(status) = input.status
                && let Err(e) =
                    change_status(env, id, status, input.result.as_deref().and_then(trimmed))
            {
                // The edit above stands; say so, after the store's own words.
                let text = if patched {
                    format!("{e}\n(the other changes were saved)")
                } else {
                    e.to_string()
                };
                return Ok(ToolOutput::error(text));
            }
            let task = env.task(id)?;
            detail_output(env, &task)
        })
    }
}

fn change_status<S: LinkedStore>(
    env: &TeamEnv<S>,
    id: TaskId,
    status: StatusChange,
    result: Option<String>,
) -> Result<(), CallError> {
    let (me, lead, writes) = (env.me.clone(), env.me == env.lead, env.writes);
    env.link.call(|store| async move {
        match status {
            StatusChange::Completed => store.complete(id, actor(&me, lead, writes), result).await,
            StatusChange::Failed => store.fail(id, &me, result.unwrap_or_default()).await,
            StatusChange::Pending => store.release(id, &me).await,
        }
    })?;
    Ok(())
}
