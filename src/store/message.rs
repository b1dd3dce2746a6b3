//! One line of an inbox: a typed message. Unknown types and fields are kept as they are.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The types crew itself understands; anything else is kept and shown raw.
pub const KNOWN_TYPES: &[&str] = &[
    "message",
    "task_assignment",
    "status_update",
    "idle_notification",
    "shutdown_request",
    "shutdown_response",
    "plan_approval_request",
    "plan_approval_response",
    "permission_request",
    "permission_response",
    "review_request",
];

/// Asks the team's reviewer to review a task in review; the task id is in the `task` field.
pub const REVIEW_REQUEST: &str = "review_request";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub ts: String,
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Set on a response only: the answer to the request with the same `request_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    pub fn is_known_type(&self) -> bool {
        KNOWN_TYPES.contains(&self.kind.as_str())
    }

    pub fn is_request(&self) -> bool {
        self.request_id.is_some() && self.approve.is_none()
    }

    pub fn is_response(&self) -> bool {
        self.request_id.is_some() && self.approve.is_some()
    }
}

/// What a sender supplies; the store adds id, timestamp and (for requests) a request id.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub text: Option<String>,
    pub request: bool,
    /// Extra typed fields (e.g. a permission request's tool and input).
    pub extra: Map<String, Value>,
}

/// Time-ordered unique ids, safe across processes without coordination.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}
