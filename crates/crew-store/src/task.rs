//! One task file, `.tasks/task_<n>.json`. Unknown fields survive a rewrite.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crew_protocol::{AgentName, TaskId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    /// Finished by a writing teammate; its commits wait to be merged into the base branch.
    Review,
    Completed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Review => "review",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: TaskId,
    pub subject: String,
    #[serde(default)]
    pub description: String,
    pub status: Status,
    #[serde(default)]
    pub owner: Option<AgentName>,
    #[serde(default)]
    pub blocked_by: Vec<TaskId>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The commits this task added on its teammate's branch, once it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<Box<TaskCommits>>,
    /// The reviewer agent's verdict on the task's commits, once one reviewed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Box<ReviewerVerdict>>,
    /// What happened to it beyond its status, oldest first (e.g. released from a dead worker).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the agents' work on it used so far, every job and send-back added up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TaskUsage>,
    /// Fields this version does not know, kept so a rewrite loses nothing.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Tokens and cost spent on a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskUsage {
    pub tokens: u64,
    /// In millionths of a dollar; `None` while some of its work had no known price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl TaskUsage {
    /// `usage` with one more job's tokens and cost: the cost stays unknown once a job of the
    /// task had no known price. Both backends' `add_usage`.
    pub fn added(usage: Option<TaskUsage>, tokens: u64, cost_micros: Option<u64>) -> TaskUsage {
        match usage {
            None => TaskUsage {
                tokens,
                cost_micros,
            },
            // Saturating: a store row may hold any number (a hand-edited file, raw SQL).
            Some(sum) => TaskUsage {
                tokens: sum.tokens.saturating_add(tokens),
                cost_micros: sum
                    .cost_micros
                    .zip(cost_micros)
                    .map(|(a, b)| a.saturating_add(b)),
            },
        }
    }

    /// `tokens, $cost` (or `cost unknown`), as a person reads it.
    pub fn text(&self) -> String {
        let cost = self
            .cost_micros
            .map_or_else(|| "cost unknown".to_string(), crate::agents::dollars);
        format!("{} tokens, {cost}", self.tokens)
    }
}

/// The commits a task added on a teammate's branch: after `start` up to and including `head`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCommits {
    /// `crew/<name>`.
    pub branch: String,
    /// The branch's commit (hex) just before the task's first commit.
    pub start: String,
    /// The task's last commit (hex).
    pub head: String,
}

/// What a reviewer agent said about a task's commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewerVerdict {
    pub by: AgentName,
    /// `pass`, `fail`, `partial`, or `no verdict` (never a pass).
    pub verdict: String,
    /// The commit it reviewed (hex): a verdict on older commits is stale.
    pub head: String,
    pub report: String,
}

/// Now, as RFC 3339 UTC with milliseconds: sortable, readable, what every file carries.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
