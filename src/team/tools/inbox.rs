//! `read_inbox`: the caller's own inbox, for an agent whose messages are not pushed to it (an
//! MCP client driving a team). It moves no cursor: a worker that delivers the same inbox as
//! prompts still sees every message, and the caller pages with `after`.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{CallError, json_output, optional_text, run_store};
use crate::store::Entry;
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// Messages returned when the call names no `limit`.
const DEFAULT_LIMIT: u64 = 20;
/// The most one call returns.
const MAX_LIMIT: u64 = 100;

team_tool! {
    /// The latest messages of the caller's inbox, or those after a given one.
    ReadInbox
}

impl Tool for ReadInbox {
    fn name(&self) -> &str {
        "read_inbox"
    }

    fn description(&self) -> &str {
        "Read your own inbox, oldest first: the latest messages, or those after the message id \
         `after` (pass the last id you saw to get only new ones). Reading marks nothing as read."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "after": {"type": "string", "description": "A message id from an earlier read"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
            },
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let limit = input
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_LIMIT)
                .clamp(1, MAX_LIMIT) as usize;
            let after = optional_text(&input, "after");
            let batch = env.workspace.mailboxes().read_from(&env.me, 0)?;
            let mut lines: Vec<Value> = batch.entries.iter().map(entry_view).collect();
            if let Some(after) = &after {
                let at = lines
                    .iter()
                    .position(|l| l["id"] == after.as_str())
                    .ok_or_else(|| {
                        CallError::Refused(format!("no message {after:?} in {}'s inbox", env.me))
                    })?;
                lines.drain(..=at);
            }
            let more = lines.len() > limit;
            // Without `after` the latest matter most; with it, the next ones in order.
            let lines: Vec<Value> = if after.is_some() {
                lines.into_iter().take(limit).collect()
            } else {
                let skip = lines.len().saturating_sub(limit);
                lines.into_iter().skip(skip).collect()
            };
            Ok(json_output(&json!({"messages": lines, "more": more})))
        })
    }
}

/// A message as the caller sees it; a line that does not parse is shown raw, never dropped.
fn entry_view(entry: &Entry) -> Value {
    match entry {
        Entry::Message { message, .. } => {
            let mut view = json!({
                "id": message.id,
                "ts": message.ts,
                "from": message.from,
                "type": message.kind,
            });
            if let Some(text) = &message.text {
                view["text"] = json!(text);
            }
            if let Some(id) = &message.request_id {
                view["request_id"] = json!(id);
            }
            if let Some(approve) = message.approve {
                view["approve"] = json!(approve);
            }
            view
        }
        Entry::Broken { offset, raw, error } => {
            json!({"id": format!("broken@{offset}"), "unreadable": raw, "error": error})
        }
    }
}
