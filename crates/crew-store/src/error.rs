//! What can go wrong in the store. `Refused` is the protocol saying no (exit code 3 at the CLI);
//! everything else is an error of input or of the machine.

use std::path::{Path, PathBuf};

use crew_protocol::{AgentName, InvalidName, TaskId, joined};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error(transparent)]
    InvalidName(#[from] InvalidName),
    #[error("no such task: {0}")]
    NoSuchTask(TaskId),
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// Another backend's failure (the PostgreSQL store's, say), neither a refusal nor a missing
    /// task: its own error, whole.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn malformed(path: &Path, reason: impl Into<String>) -> Self {
        StoreError::Malformed {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// The protocol refusing an action, with exactly why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("{id} is already claimed by {owner}")]
    AlreadyClaimed { id: TaskId, owner: AgentName },
    #[error("{id} is {status}, not pending")]
    NotPending { id: TaskId, status: String },
    #[error("{id} is blocked by {}", joined(by, ", "))]
    Blocked { id: TaskId, by: Vec<TaskId> },
    #[error("{id} needs role {needed}, but {who} has role {}", have.as_deref().unwrap_or("none"))]
    RoleMismatch {
        id: TaskId,
        needed: String,
        who: AgentName,
        have: Option<String>,
    },
    #[error("{id} is owned by {}, not {who}", owner.as_deref().unwrap_or("nobody"))]
    NotOwner {
        id: TaskId,
        owner: Option<AgentName>,
        who: AgentName,
    },
    #[error("{id} is {status}; only an in_progress task can be {action}")]
    NotInProgress {
        id: TaskId,
        status: String,
        action: &'static str,
    },
    #[error("{id} is in review: merge it, send it back or discard it first (crew review)")]
    InReview { id: TaskId },
    #[error("{id} is {status}, not in review")]
    NotInReview { id: TaskId, status: String },
    #[error("{id} is completed; a completed task cannot be assigned")]
    AlreadyCompleted { id: TaskId },
    #[error("blockedBy would make a cycle: {}", joined(cycle, " -> "))]
    WouldCycle { cycle: Vec<TaskId> },
    #[error("{id} cannot be blocked by unknown task {unknown}")]
    UnknownBlocker { id: TaskId, unknown: TaskId },
    #[error("no claimable task for {who}")]
    NothingClaimable { who: AgentName },
    #[error("unknown {role} {name:?}; the team is: {}", joined(valid, ", "))]
    UnknownAgent {
        role: &'static str,
        name: String,
        valid: Vec<AgentName>,
    },
    #[error("no request with id {0}")]
    UnknownRequest(String),
    #[error("request {id} was already answered ({state}) by {by}")]
    AlreadyAnswered {
        id: String,
        state: String,
        by: String,
    },
    #[error("request {id} expired {age} ago without an answer")]
    Expired { id: String, age: String },
    #[error("request {id} is addressed to {to}; {who} cannot answer it")]
    NotAddressee {
        id: String,
        to: AgentName,
        who: AgentName,
    },
    #[error(
        "{what} is {size} {unit}; the limit is {limit} ([limits] {setting} in crew.toml): put \
         bigger content in a file and give its path"
    )]
    TooLarge {
        what: &'static str,
        size: usize,
        unit: &'static str,
        limit: usize,
        setting: &'static str,
    },
    #[error("{id} is already in the merge queue")]
    AlreadyQueued { id: TaskId },
    #[error("{id} is not in the merge queue")]
    NotQueued { id: TaskId },
    #[error("{id} is {state} in the merge queue; only a failed one is retried")]
    NotFailedInQueue { id: TaskId, state: &'static str },
    #[error("{who} may not change {id}'s {field}: {rule}")]
    NotAllowed {
        id: TaskId,
        who: AgentName,
        field: &'static str,
        rule: &'static str,
    },
    #[error(
        "{id} is a writing teammate's task: it is completed only when review merges its \
         commits; end your turn and crew commits your work and submits it for review"
    )]
    NeedsReview { id: TaskId },
    #[error("{what} is one line; put the rest in the description")]
    NotOneLine { what: &'static str },
    #[error("no memory named {name:?} in {scope}")]
    NoSuchMemory { name: String, scope: String },
    #[error(
        "the description must be one line of at most {limit} characters ([limits] \
         subject_chars); it is {what}: put the detail in the body"
    )]
    MemoryDescription { what: String, limit: usize },
    #[error(
        "{scope} already holds {count} memories, the limit ([limits] memories_per_scope in \
         crew.toml): update or forget one first"
    )]
    MemoriesFull { scope: String, count: usize },
    #[error(
        "conversation {key} of {agent} holds {held} messages: nothing can be kept from \
         position {at}"
    )]
    ConversationGap {
        agent: AgentName,
        key: String,
        held: usize,
        at: usize,
    },
    /// The database itself refused what the connected agent's role may not do (PostgreSQL's
    /// row-level security, grants and guards), with its reason.
    #[error("not permitted by the store: {0}")]
    NotPermitted(String),
}
