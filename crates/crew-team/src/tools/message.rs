//! `send_message`: a typed message to a teammate's inbox.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde_json::json;

use super::{CallError, check_recipient, json_output, required_text, run_store};
use crate::run::link::LinkedStore;
use crew_store::{AgentName, Draft, MessageKind};
use crew_tools::{ToolContext, ToolFuture, ToolKind, TypedTool};

team_tool!(SendMessage);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageInput {
    /// A teammate's name
    #[schemars(with = "String", pattern(AgentName::PATTERN))]
    pub to: AgentName,
    /// Requests and responses have their own tools.
    #[serde(rename = "type", default)]
    #[schemars(schema_with = "informational_kind")]
    pub kind: MessageKind,
    pub text: String,
}

impl<S: LinkedStore> TypedTool for SendMessage<S> {
    type Input = SendMessageInput;
    const NAME: &'static str = "send_message";
    const KIND: ToolKind = ToolKind::Other;

    fn description(&self) -> &str {
        "Send a message to a teammate's inbox. type: message (default), task_assignment or \
         status_update. The person at the screen cannot be addressed here: they read the \
         lead's conversation."
    }

    fn validate(&self, input: &SendMessageInput, _ctx: &ToolContext) -> Result<(), String> {
        informational(&input.kind)?;
        required_text("text", &input.text)?;
        check_recipient(&self.env, &input.to)
    }

    fn run(&self, input: SendMessageInput, _ctx: ToolContext) -> ToolFuture {
        run_store(&self.env, move |env| {
            check_recipient(env, &input.to).map_err(CallError::Refused)?;
            informational(&input.kind).map_err(CallError::Input)?;
            let text = required_text("text", &input.text).map_err(CallError::Input)?;
            let draft = Draft {
                kind: input.kind,
                text: Some(text),
                ..Draft::new(env.me.clone(), input.to)
            };
            let sent = env
                .link
                .call(|store| async move { store.send(draft).await })?;
            Ok(json_output(
                &json!({"sent": sent.id, "to": sent.to, "type": sent.kind}),
            ))
        })
    }
}

/// The kinds `send_message` offers: plain information, no request.
fn informational_kind(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = MessageKind::INFORMATIONAL
        .iter()
        .map(MessageKind::as_str)
        .collect();
    json_schema!({"type": "string", "enum": names})
}

/// Checked again here for a caller that skipped the schema: requests have their own tools.
fn informational(kind: &MessageKind) -> Result<(), String> {
    if MessageKind::INFORMATIONAL.contains(kind) {
        Ok(())
    } else {
        Err(format!(
            "a `{kind}` cannot be sent with send_message; requests and responses have their own tools"
        ))
    }
}
