//! `read_inbox`: the caller's own inbox, for an agent whose messages are not pushed to it (an
//! MCP client driving a team). It moves no cursor: a worker that delivers the same inbox as
//! prompts still sees every message, and the caller pages with `after`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallError, json_output, run_store, trimmed};
use crate::run::link::LinkedStore;
use crew_store::{Entry, Message};
use crew_tools::{ToolContext, ToolFuture, ToolKind, TypedTool};

/// Messages returned when the call names no `limit`.
const DEFAULT_LIMIT: u64 = 20;
/// The most one call returns.
const MAX_LIMIT: u64 = 100;

team_tool! {
    /// The latest messages of the caller's inbox, or those after a given one.
    ReadInbox
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInboxInput {
    /// A message id from an earlier read: only the messages after it
    pub after: Option<String>,
    /// How many messages at most (default 20)
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

impl<S: LinkedStore> TypedTool for ReadInbox<S> {
    type Input = ReadInboxInput;
    const NAME: &'static str = "read_inbox";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Read your own inbox, oldest first: the latest messages, or those after the message id \
         `after` (pass the last id you saw to get only new ones). Reading marks nothing as read."
    }

    fn is_concurrency_safe(&self, _input: &ReadInboxInput) -> bool {
        true
    }

    fn run(&self, input: ReadInboxInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
            let after = input.after.as_deref().and_then(trimmed);
            // On files a line that does not parse is shown too.
            let mut lines: Vec<Value> = match env.link.store().files() {
                Some(workspace) => workspace
                    .mailboxes()
                    .read_from(&env.me, 0)?
                    .entries
                    .iter()
                    .map(entry_view)
                    .collect(),
                None => {
                    let me = env.me.clone();
                    env.link
                        .call(|store| async move { store.inbox(&me).await })?
                        .iter()
                        .map(message_view)
                        .collect()
                }
            };
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
        Entry::Message { message, .. } => message_view(message),
        Entry::Broken { offset, raw, error } => {
            json!({"id": format!("broken@{offset}"), "unreadable": raw, "error": error})
        }
    }
}

fn message_view(message: &Message) -> Value {
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
