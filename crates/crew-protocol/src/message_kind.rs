//! A message's `type`: what it asks or tells.

use std::fmt;

use serde::{Deserialize, Serialize};

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
}
