//! The vocabulary crew's processes share through the store: the person, message kinds, how a
//! request pairs with its answer, and agent states. Every other module uses these types; the
//! strings they stand for appear only here and in their serde (ARCHITECTURE.md, "On disk").

use std::fmt;

use serde::{Deserialize, Serialize};

/// The person at the screen: may always send and answer, never needs an entry in `crew.toml`.
pub const USER: &str = "user";

/// The `type` of an inbox message. Kinds crew does not know are kept as written in `Other`, so a
/// newer or foreign writer's messages round-trip and are shown raw.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum MessageKind {
    #[default]
    Message,
    TaskAssignment,
    StatusUpdate,
    IdleNotification,
    ShutdownRequest,
    ShutdownResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    PermissionRequest,
    PermissionResponse,
    Interrupt,
    BudgetRequest,
    BudgetResponse,
    /// Asks the team's reviewer to review a task in review; the task id is in the `task` field.
    ReviewRequest,
    Other(String),
}

/// Each known kind with its wire name; the one table both directions read.
const KNOWN: &[(MessageKind, &str)] = &[
    (MessageKind::Message, "message"),
    (MessageKind::TaskAssignment, "task_assignment"),
    (MessageKind::StatusUpdate, "status_update"),
    (MessageKind::IdleNotification, "idle_notification"),
    (MessageKind::ShutdownRequest, "shutdown_request"),
    (MessageKind::ShutdownResponse, "shutdown_response"),
    (MessageKind::PlanApprovalRequest, "plan_approval_request"),
    (MessageKind::PlanApprovalResponse, "plan_approval_response"),
    (MessageKind::PermissionRequest, "permission_request"),
    (MessageKind::PermissionResponse, "permission_response"),
    (MessageKind::Interrupt, "interrupt"),
    (MessageKind::BudgetRequest, "budget_request"),
    (MessageKind::BudgetResponse, "budget_response"),
    (MessageKind::ReviewRequest, "review_request"),
];

impl MessageKind {
    /// The kinds an agent may send with the `send_message` tool: plain information, no request.
    pub const INFORMATIONAL: [MessageKind; 3] = [
        MessageKind::Message,
        MessageKind::TaskAssignment,
        MessageKind::StatusUpdate,
    ];

    /// The wire name, as written in the `type` field.
    pub fn as_str(&self) -> &str {
        match self {
            MessageKind::Other(raw) => raw,
            known => KNOWN
                .iter()
                .find(|(kind, _)| kind == known)
                .map_or("", |(_, name)| name),
        }
    }

    /// Whether crew itself understands this kind (unknown ones are shown raw).
    pub fn is_known(&self) -> bool {
        !matches!(self, MessageKind::Other(_))
    }

    /// Requests the person answers (a teammate cannot answer them for the person).
    pub fn needs_person(&self) -> bool {
        matches!(
            self,
            MessageKind::PermissionRequest
                | MessageKind::PlanApprovalRequest
                | MessageKind::BudgetRequest
        )
    }

    /// Chatter that reports rather than asks: shown dimmed.
    pub fn is_report(&self) -> bool {
        matches!(
            self,
            MessageKind::StatusUpdate | MessageKind::IdleNotification | MessageKind::TaskAssignment
        )
    }

    /// The answer's kind: `X_request` is answered by `X_response`; other kinds by their own.
    pub fn response(&self) -> MessageKind {
        match self.as_str().strip_suffix("_request") {
            Some(stem) => MessageKind::from(format!("{stem}_response")),
            None => self.clone(),
        }
    }
}

impl From<&str> for MessageKind {
    fn from(raw: &str) -> Self {
        KNOWN.iter().find(|(_, name)| *name == raw).map_or_else(
            || MessageKind::Other(raw.to_string()),
            |(kind, _)| kind.clone(),
        )
    }
}

impl From<String> for MessageKind {
    fn from(raw: String) -> Self {
        match MessageKind::from(raw.as_str()) {
            MessageKind::Other(_) => MessageKind::Other(raw),
            known => known,
        }
    }
}

impl From<MessageKind> for String {
    fn from(kind: MessageKind) -> Self {
        match kind {
            MessageKind::Other(raw) => raw,
            known => known.as_str().to_string(),
        }
    }
}

impl std::str::FromStr for MessageKind {
    type Err = std::convert::Infallible;
    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Ok(MessageKind::from(raw))
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Pairs a request with its answer: the asker's message and the answer carry the same id
/// (ARCHITECTURE.md, "On disk": requests).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RequestId(String);

impl RequestId {
    /// A new time-ordered id, unique across processes without coordination.
    pub fn new() -> Self {
        RequestId(format!("req_{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for RequestId {
    fn default() -> Self {
        RequestId::new()
    }
}

impl std::ops::Deref for RequestId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for RequestId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for RequestId {
    fn from(raw: &str) -> Self {
        RequestId(raw.to_string())
    }
}

impl From<String> for RequestId {
    fn from(raw: String) -> Self {
        RequestId(raw)
    }
}

impl PartialEq<str> for RequestId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RequestId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for RequestId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An agent's state in `.crew/agents/<name>.json` (ARCHITECTURE.md, "Workers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AgentState {
    /// Running the agent loop on a task or a message.
    Work,
    /// Inside WORK, blocked on a person (a permission or plan approval).
    Waiting,
    /// Nothing to do: watching its inbox and the tasks.
    Idle,
    Shutdown,
    /// Found gone (pid missing or heartbeat stale) by the supervisor.
    Dead,
}

impl AgentState {
    /// Every state, in the order the screen counts them.
    pub const ALL: [AgentState; 5] = [
        AgentState::Work,
        AgentState::Waiting,
        AgentState::Idle,
        AgentState::Shutdown,
        AgentState::Dead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Work => "WORK",
            AgentState::Waiting => "WAITING",
            AgentState::Idle => "IDLE",
            AgentState::Shutdown => "SHUTDOWN",
            AgentState::Dead => "DEAD",
        }
    }

    /// Shut down or dead: nothing more will come from it until restarted.
    pub fn is_final(self) -> bool {
        matches!(self, AgentState::Shutdown | AgentState::Dead)
    }

    /// Alive: it can be told something and will act on it.
    pub fn is_live(self) -> bool {
        !self.is_final()
    }
}

impl fmt::Display for AgentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_kind_round_trips_through_its_wire_name() {
        for (kind, name) in KNOWN {
            assert_eq!(kind.as_str(), *name);
            assert_eq!(&MessageKind::from(*name), kind);
            let json = serde_json::to_string(kind).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(&serde_json::from_str::<MessageKind>(&json).unwrap(), kind);
        }
    }

    #[test]
    fn unknown_kinds_are_kept_raw() {
        let kind: MessageKind = serde_json::from_str("\"weird_kind\"").unwrap();
        assert_eq!(kind, MessageKind::Other("weird_kind".into()));
        assert!(!kind.is_known());
        assert_eq!(serde_json::to_string(&kind).unwrap(), "\"weird_kind\"");
    }

    #[test]
    fn a_request_is_answered_by_its_response_kind() {
        assert_eq!(
            MessageKind::PermissionRequest.response(),
            MessageKind::PermissionResponse
        );
        assert_eq!(
            MessageKind::ShutdownRequest.response(),
            MessageKind::ShutdownResponse
        );
        assert_eq!(
            MessageKind::from("custom_request").response(),
            MessageKind::Other("custom_response".into())
        );
        assert_eq!(MessageKind::Message.response(), MessageKind::Message);
    }

    #[test]
    fn agent_states_use_their_upper_case_names() {
        for state in AgentState::ALL {
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.as_str()));
            assert_eq!(serde_json::from_str::<AgentState>(&json).unwrap(), state);
        }
    }
}
