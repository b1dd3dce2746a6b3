//! The chat-completions request body.

use serde_json::{Value, json};

use crate::types::{ChatMessage, ModelRequest, Role};

/// The streaming request body; the system prompt's two parts are joined into one message.
pub(super) fn body(req: &ModelRequest, default_model: &str) -> Value {
    let model = if req.model.is_empty() {
        default_model
    } else {
        &req.model
    };
    let mut messages = Vec::new();
    let system = req.system.joined();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for msg in &req.messages {
        convert(msg, &mut messages);
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": req.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

/// One crew message becomes one or more chat messages: tool results become `role: tool`
/// messages (placed first, since they must follow the assistant's `tool_calls`), text becomes
/// a user message; an assistant message carries its calls in `tool_calls`.
fn convert(msg: &ChatMessage, out: &mut Vec<Value>) {
    let text = msg.text();
    match msg.role {
        Role::User => {
            let results = msg.tool_results();
            let only_results = !results.is_empty() && text.is_empty();
            for (id, content, is_error) in results {
                // The format has no error flag; say it in the content.
                let content = if is_error {
                    format!("Error: {content}")
                } else {
                    content.to_string()
                };
                out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
            if !only_results {
                out.push(json!({"role": "user", "content": text}));
            }
        }
        Role::Assistant => {
            let calls: Vec<Value> = msg
                .tool_uses()
                .into_iter()
                .map(|(id, name, input)| {
                    json!({"id": id, "type": "function", "function": {
                        "name": name,
                        "arguments": input.to_string(),
                    }})
                })
                .collect();
            let mut message = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                if text.is_empty() {
                    message["content"] = Value::Null;
                }
                message["tool_calls"] = Value::Array(calls);
            }
            out.push(message);
        }
    }
}
