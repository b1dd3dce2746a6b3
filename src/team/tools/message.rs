//! `send_message`: a typed message to a teammate's inbox.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{CallError, json_output, recipient, required_text, run_store};
use crate::store::{Draft, MessageKind};
use crate::tools::{ToolContext, ToolFuture, ToolKind, TypedTool};

team_tool!(SendMessage);

/// The types an agent may send freely; requests and responses have their own tools.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FreeMessageKind {
    #[default]
    Message,
    TaskAssignment,
    StatusUpdate,
}

impl From<FreeMessageKind> for MessageKind {
    fn from(kind: FreeMessageKind) -> Self {
        match kind {
            FreeMessageKind::Message => MessageKind::Message,
            FreeMessageKind::TaskAssignment => MessageKind::TaskAssignment,
            FreeMessageKind::StatusUpdate => MessageKind::StatusUpdate,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageInput {
    /// A teammate's name
    pub to: String,
    #[serde(rename = "type")]
    pub kind: Option<FreeMessageKind>,
    pub text: String,
}

impl TypedTool for SendMessage {
    type Input = SendMessageInput;
    const NAME: &'static str = "send_message";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Send a message to a teammate's inbox. type: message (default), task_assignment or \
         status_update. The person at the screen cannot be addressed here: they read the \
         lead's conversation."
    }

    fn validate(&self, input: &SendMessageInput, _ctx: &ToolContext) -> Result<(), String> {
        required_text("text", &input.text)?;
        recipient(&self.env, &input.to)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn run(&self, input: SendMessageInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            let to = recipient(env, &input.to)?;
            let text = required_text("text", &input.text).map_err(CallError::Input)?;
            let sent = env.workspace.mailboxes().send(
                &env.roster,
                Draft {
                    from: env.me.clone(),
                    to,
                    kind: input.kind.unwrap_or_default().into(),
                    text: Some(text),
                    ..Draft::default()
                },
            )?;
            Ok(json_output(
                &json!({"sent": sent.id, "to": sent.to, "type": sent.kind}),
            ))
        })
    }
}
