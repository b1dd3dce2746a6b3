//! What can go wrong in the store. `Refused` is the protocol saying no (exit code 3 at the CLI);
//! everything else is an error of input or of the machine.

use std::path::{Path, PathBuf};

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
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidName {
        what: &'static str,
        value: String,
        reason: String,
    },
    #[error("no such task: {0}")]
    NoSuchTask(String),
    #[error("{0}")]
    Refused(#[from] Refusal),
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
    AlreadyClaimed { id: String, owner: String },
    #[error("{id} is {status}, not pending")]
    NotPending { id: String, status: String },
    #[error("{id} is blocked by {}", by.join(", "))]
    Blocked { id: String, by: Vec<String> },
    #[error("{id} needs role {needed}, but {who} has role {}", have.as_deref().unwrap_or("none"))]
    RoleMismatch {
        id: String,
        needed: String,
        who: String,
        have: Option<String>,
    },
    #[error("{id} is owned by {}, not {who}", owner.as_deref().unwrap_or("nobody"))]
    NotOwner {
        id: String,
        owner: Option<String>,
        who: String,
    },
    #[error("{id} is {status}; only an in_progress task can be {action}")]
    NotInProgress {
        id: String,
        status: String,
        action: &'static str,
    },
    #[error("{id} is in review: merge it, send it back or discard it first (crew review)")]
    InReview { id: String },
    #[error("{id} is {status}, not in review")]
    NotInReview { id: String, status: String },
    #[error("{id} is completed; a completed task cannot be assigned")]
    AlreadyCompleted { id: String },
    #[error("blockedBy would make a cycle: {}", cycle.join(" -> "))]
    WouldCycle { cycle: Vec<String> },
    #[error("{id} cannot be blocked by unknown task {unknown}")]
    UnknownBlocker { id: String, unknown: String },
    #[error("no claimable task for {who}")]
    NothingClaimable { who: String },
    #[error("unknown {role} {name:?}; the team is: {}", valid.join(", "))]
    UnknownAgent {
        role: &'static str,
        name: String,
        valid: Vec<String>,
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
    NotAddressee { id: String, to: String, who: String },
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
    #[error("{what} is one line; put the rest in the description")]
    NotOneLine { what: &'static str },
}
