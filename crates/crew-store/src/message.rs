//! One line of an inbox: a typed message. Unknown types and fields are kept as they are.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crew_protocol::{AgentName, MessageKind, RequestId};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub ts: String,
    pub from: AgentName,
    pub to: AgentName,
    #[serde(rename = "type")]
    pub kind: MessageKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Set on a response only: the answer to the request with the same `request_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    pub fn is_request(&self) -> bool {
        self.request_id.is_some() && self.approve.is_none()
    }

    pub fn is_response(&self) -> bool {
        self.request_id.is_some() && self.approve.is_some()
    }
}

/// What a sender supplies; the store adds id, timestamp and (for requests) a request id.
#[derive(Debug, Clone)]
pub struct Draft {
    pub from: AgentName,
    pub to: AgentName,
    pub kind: MessageKind,
    pub text: Option<String>,
    pub request: bool,
    /// Extra typed fields (e.g. a permission request's tool and input).
    pub extra: Map<String, Value>,
}

impl Draft {
    /// A plain message from `from` to `to` with no text yet; the other fields are set with
    /// struct update syntax (`Draft { text, ..Draft::new(from, to) }`).
    pub fn new(from: AgentName, to: AgentName) -> Self {
        Draft {
            from,
            to,
            kind: MessageKind::Message,
            text: None,
            request: false,
            extra: Map::new(),
        }
    }
}

/// Time-ordered unique ids, safe across processes without coordination.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}
