//! `send_message`: a typed message to a teammate's inbox.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{json_output, recipient, require_text, run_store, text_field, validate_recipient};
use crate::store::{Draft, MessageKind};
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

team_tool!(SendMessage);

impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }

    fn description(&self) -> &str {
        "Send a message to a teammate's inbox. type: message (default), task_assignment or \
         status_update. The person at the screen cannot be addressed here: they read the \
         lead's conversation."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "A teammate's name"},
                // Requests and responses have their own tools.
                "type": {"type": "string", "enum": MessageKind::INFORMATIONAL.iter().map(MessageKind::as_str).collect::<Vec<_>>()},
                "text": {"type": "string"}
            },
            "required": ["to", "text"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn validate(&self, input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        require_text(input, "text")?;
        validate_recipient(&self.env, input)
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        run_store(&self.env, move |env| {
            let to = recipient(env, &input)?;
            let kind = input
                .get("type")
                .and_then(Value::as_str)
                .map_or(MessageKind::Message, MessageKind::from);
            let sent = env.workspace.mailboxes().send(
                &env.roster,
                Draft {
                    from: env.me.clone(),
                    to,
                    kind,
                    text: Some(text_field(&input, "text")?),
                    ..Draft::default()
                },
            )?;
            Ok(json_output(
                &json!({"sent": sent.id, "to": sent.to, "type": sent.kind}),
            ))
        })
    }
}
