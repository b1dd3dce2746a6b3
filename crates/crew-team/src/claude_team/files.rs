//! The files of a Claude Code agent team (recorded from Claude Code 2.1.197, an experimental
//! feature whose formats change between releases): read defensively, unknown fields kept, and
//! turned into crew's own task and message types.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crew_store::{AgentName, Message, MessageKind, RequestId, Status, Task, TaskId};

/// A request crew's derivation never expires: a Claude Code teammate waits until answered.
pub(crate) const NO_EXPIRY_SECS: u64 = 10 * 365 * 24 * 3600;

/// `teams/<team>/config.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TeamFile {
    #[serde(default)]
    pub lead_agent_id: String,
    #[serde(default)]
    pub lead_session_id: String,
    #[serde(default)]
    pub members: Vec<Member>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Member {
    pub name: String,
    #[serde(default)]
    pub is_active: Option<bool>,
    #[serde(default)]
    pub backend_type: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

/// One element of `teams/<team>/inboxes/<agent>.json` (a JSON array of them).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct InboxMessage {
    #[serde(default)]
    pub from: String,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub timestamp: String,
    #[serde(default)]
    pub msg_id: Option<String>,
    /// Everything else (`summary`, `color`, `msgV`, `type`, `read`, fields of later versions).
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl InboxMessage {
    /// What identifies this message across versions of its inbox.
    pub(crate) fn key(&self) -> String {
        self.msg_id
            .clone()
            .unwrap_or_else(|| format!("{}|{}|{}", self.from, self.timestamp, self.text))
    }
}

/// Parses one version of an inbox file.
pub(crate) fn parse_inbox(bytes: &[u8]) -> Result<Vec<InboxMessage>, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not a JSON array of messages: {e}"))
}

/// The fields of a crew message, which an inbox message's own fields must not shadow.
const CREW_FIELDS: &[&str] = &[
    "id",
    "ts",
    "from",
    "to",
    "type",
    "text",
    "request_id",
    "approve",
    "tool",
    "input",
    "timeout_secs",
    "protocol",
];

/// `message` (found in `to`'s inbox) as a crew message. `crew_name` maps a Claude Code name to
/// crew's. Protocol messages (a JSON object in `text`) keep their own type and fields; a
/// permission request gets the request id and the `tool`/`input` crew's approvals pane shows,
/// a permission response the `approve` crew derives answers from.
pub(crate) fn to_crew(
    message: &InboxMessage,
    to: &str,
    crew_name: &dyn Fn(&str) -> AgentName,
) -> Message {
    let mut extra = Map::new();
    for (key, value) in &message.rest {
        // Claude Code's own `type` (and any later field named like one of crew's) is kept
        // under another name, so it cannot stand in for crew's.
        let kept = if CREW_FIELDS.contains(&key.as_str()) {
            format!("claude_{key}")
        } else {
            key.clone()
        };
        extra.insert(kept, value.clone());
    }
    extra.insert("claude_from".into(), json!(message.from));
    let mut crew = Message {
        id: format!(
            "cc-{}",
            message
                .msg_id
                .clone()
                .unwrap_or_else(|| short_hash(&message.key()))
        ),
        ts: message.timestamp.clone(),
        from: crew_name(&message.from),
        to: crew_name(to),
        kind: MessageKind::Message,
        text: Some(message.text.clone()),
        request_id: None,
        approve: None,
        extra,
    };
    let Ok(Value::Object(protocol)) = serde_json::from_str::<Value>(&message.text) else {
        return crew;
    };
    let Some(kind) = protocol.get("type").and_then(Value::as_str) else {
        return crew;
    };
    // Claude Code's protocol kinds are crew's own names (unknown ones stay `Other`).
    crew.kind = MessageKind::from(kind);
    crew.text = Some(describe(&crew.kind, &protocol));
    match crew.kind {
        MessageKind::PermissionRequest => {
            crew.request_id = protocol
                .get("request_id")
                .and_then(Value::as_str)
                .map(RequestId::from);
            crew.extra.insert(
                "tool".into(),
                protocol.get("tool_name").cloned().unwrap_or(Value::Null),
            );
            crew.extra.insert(
                "input".into(),
                protocol.get("input").cloned().unwrap_or(Value::Null),
            );
            crew.extra
                .insert("timeout_secs".into(), json!(NO_EXPIRY_SECS));
        }
        MessageKind::PermissionResponse => {
            crew.request_id = protocol
                .get("request_id")
                .and_then(Value::as_str)
                .map(RequestId::from);
            crew.approve = Some(protocol.get("subtype").and_then(Value::as_str) == Some("success"));
        }
        _ => {}
    }
    crew.extra
        .insert("protocol".into(), Value::Object(protocol));
    crew
}

/// A line for the mailboxes pane: the protocol message's gist, its raw JSON for unknown types.
fn describe(kind: &MessageKind, protocol: &Map<String, Value>) -> String {
    let field = |name: &str| protocol.get(name).and_then(Value::as_str).unwrap_or("");
    match kind {
        MessageKind::PermissionRequest => format!(
            "asks to use {}: {}",
            field("tool_name"),
            field("description")
        ),
        MessageKind::PermissionResponse => match field("subtype") {
            "success" => "allowed".to_string(),
            other => format!("denied ({other}) {}", field("error")),
        },
        MessageKind::TaskAssignment => {
            format!("task {} assigned: {}", field("taskId"), field("subject"))
        }
        MessageKind::IdleNotification => format!("idle ({})", field("idleReason")),
        _ => Value::Object(protocol.clone()).to_string(),
    }
}

/// The answer Claude Code expects in the asking teammate's inbox, as the `text` of an inbox
/// message. An approval repeats the input (`updated_input` is required); the shape of a denial
/// was not recorded and follows the `error` subtype of Claude Code's control responses.
pub(crate) fn permission_response(
    request: &Map<String, Value>,
    approve: bool,
    note: &str,
) -> Value {
    let request_id = request.get("request_id").cloned().unwrap_or(Value::Null);
    if approve {
        json!({
            "type": "permission_response",
            "request_id": request_id,
            "subtype": "success",
            "response": {"updated_input": request.get("input").cloned().unwrap_or(json!({}))},
        })
    } else {
        json!({
            "type": "permission_response",
            "request_id": request_id,
            "subtype": "error",
            "error": if note.is_empty() { "denied by the person in crew" } else { note },
        })
    }
}

/// `tasks/<team>/<id>.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskFile {
    pub id: String,
    #[serde(default)]
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub blocked_by: Vec<String>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// crew's id for a Claude Code task id (a whole number), if it is one.
pub(crate) fn crew_task_id(id: &str) -> Option<TaskId> {
    id.parse::<u64>().ok().map(TaskId)
}

/// The task as crew shows it; an unknown status is kept in the notes.
pub(crate) fn to_crew_task(task: &TaskFile, crew_name: &dyn Fn(&str) -> AgentName) -> Option<Task> {
    let id = crew_task_id(&task.id)?;
    let mut notes = Vec::new();
    let status = match task.status.as_str() {
        "pending" => Status::Pending,
        "in_progress" => Status::InProgress,
        "completed" => Status::Completed,
        other => {
            notes.push(format!("Claude Code status {other:?}"));
            Status::Pending
        }
    };
    let mut extra = task.rest.clone();
    extra.insert("claude_id".into(), json!(task.id));
    Some(Task {
        id,
        subject: task.subject.clone(),
        description: task.description.clone(),
        status,
        owner: task.owner.as_deref().map(crew_name),
        blocked_by: task
            .blocked_by
            .iter()
            .filter_map(|b| crew_task_id(b))
            .collect(),
        created_at: String::new(),
        updated_at: String::new(),
        role: None,
        worktree: None,
        result: None,
        commits: None,
        review: None,
        notes,
        usage: None,
        extra,
    })
}

/// A crew name for a Claude Code name: `[a-z][a-z0-9_-]{0,31}`, as close to it as can be.
pub(crate) fn crew_name(name: &str) -> AgentName {
    AgentName::from_lossy(name)
}

fn short_hash(text: &str) -> String {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_crew_names() {
        assert_eq!(crew_name("worker1"), "worker1");
        assert_eq!(crew_name("Team Lead"), "team-lead");
        assert_eq!(crew_name("1st"), "a1st");
        assert_eq!(crew_name(&"x".repeat(40)).len(), 32);
    }

    #[test]
    fn an_unknown_protocol_type_is_kept_and_shown_raw() {
        let m: InboxMessage = serde_json::from_str(
            r#"{"from":"w","text":"{\"type\":\"from_the_future\",\"x\":1}","timestamp":"t","msgV":9,"novel":true}"#,
        )
        .unwrap();
        let crew = to_crew(&m, "lead", &crew_name);
        assert_eq!(crew.kind.as_str(), "from_the_future");
        assert!(crew.text.unwrap().contains("\"x\":1"));
        assert_eq!(crew.extra["novel"], true);
        assert_eq!(crew.extra["msgV"], 9);
    }
}
