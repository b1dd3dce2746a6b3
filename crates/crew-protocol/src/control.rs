//! What the team daemon's control socket (`.crew/daemon.sock`) carries: one JSON object a line
//! each way. A client sends a [`Request`] and reads one [`Reply`]; `attach` keeps the connection
//! open (the daemon counts open attachments as screens) and says nothing more.

use serde::{Deserialize, Serialize};

use crate::{AgentName, AgentState, RequestId, TaskId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Status,
    /// A screen attaches; it stays counted until it closes the connection.
    Attach,
    /// Stop the team through the shutdown protocol, ending stragglers after `grace_secs`.
    Stop {
        grace_secs: u64,
    },
    /// End what is still running now, without waiting out the grace period.
    Force,
    /// Start a teammate again (after it died or shut down), as the daemon's child: in the
    /// team's session, not the asking terminal's.
    Restart {
        name: AgentName,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Status(DaemonStatus),
    Error { message: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    pub pid: u32,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    pub screens: usize,
    /// Set once a stop was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<StopProgress>,
}

/// Where a stop has got to: who still runs, and how long until they are ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopProgress {
    pub grace_secs: u64,
    pub secs_left: u64,
    pub busy: Vec<BusyAgent>,
    pub forced: bool,
}

impl StopProgress {
    /// One line: who is still busy, with what, and the time left.
    pub fn summary(&self) -> String {
        if self.busy.is_empty() {
            return "asking the team to shut down...".into();
        }
        let who: Vec<String> = self
            .busy
            .iter()
            .map(|b| {
                let what = b
                    .waiting_on
                    .as_ref()
                    .map(|r| format!(" waiting on {}", r.as_str()))
                    .or(b.task.map(|t| format!(" on {t}")))
                    .unwrap_or_default();
                format!("{} {}{what}", b.name, b.state_text())
            })
            .collect();
        format!(
            "still running: {}; {}s left of {}s before they are ended",
            who.join(", "),
            self.secs_left,
            self.grace_secs
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyAgent {
    pub name: AgentName,
    /// Its state as its status file says; `None` when it has none to read.
    pub state: Option<AgentState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// The request it waits on, while WAITING.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<RequestId>,
}

impl BusyAgent {
    pub fn state_text(&self) -> &'static str {
        self.state.map_or("?", AgentState::as_str)
    }
}
