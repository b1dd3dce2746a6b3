//! The team tools (tasks, messages, shutdown and plan protocols) over the store.
//!
//! Every tool works on the team's store (the repository root's `.tasks` and `.mailboxes`, never
//! the agent's worktree; or PostgreSQL, for a teammate on another host) as `env.me`. Store refusals come back as error results carrying the refusal's
//! exact text, so the model reads the protocol's own reason.

/// A tool holding the team environment it shares with the other team tools.
macro_rules! team_tool {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<S: $crate::run::link::LinkedStore = crew_store::FileStore> {
            env: std::sync::Arc<$crate::tools::TeamEnv<S>>,
        }

        impl<S: $crate::run::link::LinkedStore> $name<S> {
            pub fn new(env: std::sync::Arc<$crate::tools::TeamEnv<S>>) -> Self {
                Self { env }
            }
        }
    };
}

mod claim;
mod inbox;
pub mod mcp;
mod message;
mod protocols;
mod read_only_bash;
pub mod roles;
mod task_read;
mod task_write;
mod view;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::run::link::{LinkedStore, TeamLink};
use crew_protocol::{AgentName, USER};
use crew_store::{Actor, FileStore, Roster, StoreError, Task, TaskId};
use crew_tools::{Tool, ToolError, ToolOutput};

pub use claim::ClaimTask;
pub(crate) use inbox::ReadInbox;
pub use message::SendMessage;
pub use protocols::{RequestPlanApproval, RequestShutdown, ReviewPlan};
pub use read_only_bash::ReadOnlyBash;
pub use task_read::{TaskGet, TaskList};
pub use task_write::{TaskCreate, TaskUpdate};

/// What the team tools of one agent share.
#[derive(Clone)]
pub struct TeamEnv<S: LinkedStore = FileStore> {
    /// The team's store.
    pub link: TeamLink<S>,
    pub roster: Roster,
    /// The agent calling the tools.
    pub me: AgentName,
    pub role: String,
    /// The lead's name: plan approval requests go there.
    pub lead: AgentName,
    /// Each teammate's name and role: whom the lead may assign a task to.
    pub teammates: Vec<crew_store::Teammate>,
    /// Whether the calling agent writes (has a worktree): its tasks complete through review.
    pub writes: bool,
    /// How long a request stays pending before it expires.
    pub request_timeout: Duration,
}

impl<S: LinkedStore> TeamEnv<S> {
    /// The environment of agent `name` (role `role`) of the team `config` describes.
    pub(crate) fn of(
        link: TeamLink<S>,
        config: &crew_config::TeamConfig,
        name: &AgentName,
        role: &str,
    ) -> Self {
        Self {
            link,
            roster: config.roster(),
            me: name.clone(),
            role: role.to_string(),
            lead: config.lead_name().clone(),
            teammates: config.teammate_roles(),
            writes: config.agent(name).is_some_and(|a| a.writes),
            request_timeout: config.request_timeout(),
        }
    }

    fn task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.link.call(|store| async move { store.task(id).await })
    }

    fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        self.link.call(|store| async move { store.tasks().await })
    }
}

/// The standing of `me` in the store's rules: the lead, or a teammate that writes or not.
fn actor(me: &AgentName, lead: bool, writes: bool) -> Actor<'_> {
    if lead {
        Actor::Lead(me)
    } else {
        Actor::Teammate { name: me, writes }
    }
}

/// Every team tool, in prompt order; roles pick from these by name.
pub fn team_tools<S: LinkedStore>(env: Arc<TeamEnv<S>>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(TaskCreate::new(Arc::clone(&env))),
        Arc::new(TaskList::new(Arc::clone(&env))),
        Arc::new(TaskGet::new(Arc::clone(&env))),
        Arc::new(TaskUpdate::new(Arc::clone(&env))),
        Arc::new(ClaimTask::new(Arc::clone(&env))),
        Arc::new(SendMessage::new(Arc::clone(&env))),
        Arc::new(RequestShutdown::new(Arc::clone(&env))),
        Arc::new(RequestPlanApproval::new(Arc::clone(&env))),
        Arc::new(ReviewPlan::new(Arc::clone(&env))),
        Arc::new(ReadInbox::new(env)),
    ]
}

/// Why a team tool call did not happen.
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// The store said no (or failed): shown to the model with the store's text.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A rule of the team tools themselves said no: shown to the model as is.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Input(String),
}

/// Runs a store operation off the async runtime: the store waits on file locks, or on the
/// server.
fn run_store<S, F>(
    env: &Arc<TeamEnv<S>>,
    op: F,
) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
where
    S: LinkedStore,
    F: FnOnce(&TeamEnv<S>) -> Result<ToolOutput, CallError> + Send + 'static,
{
    let env = Arc::clone(env);
    Box::pin(async move {
        match tokio::task::spawn_blocking(move || op(&env)).await {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e @ (CallError::Store(_) | CallError::Refused(_)))) => {
                Ok(ToolOutput::error(e.to_string()))
            }
            Ok(Err(CallError::Input(reason))) => Err(ToolError::InvalidInput(reason)),
            Err(e) => Err(ToolError::Refused(format!(
                "the store operation did not finish: {e}"
            ))),
        }
    })
}

/// A text field as the tools use it: trimmed, and `None` when blank.
fn trimmed(value: &str) -> Option<String> {
    Some(value.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// A required text field, trimmed; a blank one is refused, naming the field.
fn required_text(field: &str, value: &str) -> Result<String, String> {
    trimmed(value).ok_or_else(|| format!("`{field}` must not be empty"))
}

/// Who an agent may address: a teammate on the roster, never `user` and never itself.
fn check_recipient<S: LinkedStore>(env: &TeamEnv<S>, to: &AgentName) -> Result<(), String> {
    if *to == USER {
        return Err(format!(
            "nobody may address `{USER}`: the person is reached through the lead's conversation"
        ));
    }
    if *to == env.me {
        return Err(format!("{to} cannot address itself"));
    }
    env.roster
        .check("recipient", to)
        .map_err(|refusal| refusal.to_string())
}

/// Compact JSON for the model.
fn json_output(value: &Value) -> ToolOutput {
    ToolOutput::ok(value.to_string())
}
