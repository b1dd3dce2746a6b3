//! `send_message`: a typed message to a teammate's inbox.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{
    CallError, TeamEnv, check_recipient, json_output, require_text, run_store, text_field,
};
use crate::store::Draft;
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// The types an agent may send freely; requests and responses have their own tools.
const TYPES: &[&str] = &["message", "task_assignment", "status_update"];

pub struct SendMessage {
    env: Arc<TeamEnv>,
}

impl SendMessage {
    pub fn new(env: Arc<TeamEnv>) -> Self {
        Self { env }
    }
}

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
                "type": {"type": "string", "enum": TYPES},
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
        check_recipient(
            &self.env,
            input.get("to").and_then(Value::as_str).unwrap_or_default(),
        )
    }

    fn call(
        &self,
        input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let env = Arc::clone(&self.env);
        run_store(move || {
            let to = text_field(&input, "to")?;
            check_recipient(&env, &to).map_err(CallError::Refused)?;
            let kind = input
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message");
            let sent = env.workspace.mailboxes().send(
                &env.roster,
                Draft {
                    from: env.me.clone(),
                    to,
                    kind: kind.to_string(),
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
