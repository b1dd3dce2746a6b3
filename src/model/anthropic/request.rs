//! The Messages API request body.

use serde_json::{Value, json};

use crate::model::types::{ContentBlock, Message, ModelRequest};

/// Marks a prefix of the prompt as cacheable.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The streaming request body. The static system block and the last tool definition carry
/// `cache_control`, so tools + static prompt form one cached prefix.
pub(super) fn body(req: &ModelRequest, default_model: &str) -> Value {
    let model = if req.model.is_empty() {
        default_model
    } else {
        &req.model
    };
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "messages": req.messages.iter().map(message).collect::<Vec<_>>(),
        "stream": true,
    });
    let mut system = Vec::new();
    if !req.system.static_prefix.is_empty() {
        system.push(json!({
            "type": "text",
            "text": req.system.static_prefix,
            "cache_control": ephemeral(),
        }));
    }
    if !req.system.dynamic_suffix.is_empty() {
        system.push(json!({"type": "text", "text": req.system.dynamic_suffix}));
    }
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                })
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// A message as the API wants it: the API rejects empty text blocks, so they are left out
/// (unless nothing else is left).
fn message(msg: &Message) -> Value {
    let is_empty_text =
        |block: &&ContentBlock| matches!(block, ContentBlock::Text { text } if text.is_empty());
    let kept: Vec<&ContentBlock> = msg.content.iter().filter(|b| !is_empty_text(b)).collect();
    let content = if kept.is_empty() {
        msg.content.iter().collect()
    } else {
        kept
    };
    json!({"role": msg.role, "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{RequestContext, Role, SystemPrompt, ToolDefinition};

    fn request() -> ModelRequest {
        ModelRequest {
            model: String::new(),
            system: SystemPrompt {
                static_prefix: "You are crew.".into(),
                dynamic_suffix: "Today is Monday.".into(),
            },
            messages: vec![Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: String::new(),
                    },
                    ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "read".into(),
                        input: json!({"path": "a"}),
                    },
                ],
            }],
            tools: vec![
                ToolDefinition {
                    name: "read".into(),
                    description: "Read".into(),
                    input_schema: json!({"type": "object"}),
                },
                ToolDefinition {
                    name: "write".into(),
                    description: "Write".into(),
                    input_schema: json!({"type": "object"}),
                },
            ],
            max_tokens: 100,
            context: RequestContext::default(),
        }
    }

    #[test]
    fn empty_model_falls_back_and_empty_text_blocks_are_dropped() {
        let body = body(&request(), "claude-default");
        assert_eq!(body["model"], "claude-default");
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}])
        );
    }

    #[test]
    fn empty_system_parts_and_tools_are_omitted() {
        let mut req = request();
        req.model = "m".into();
        req.system.static_prefix.clear();
        req.tools.clear();
        let body = body(&req, "unused");
        assert_eq!(body["model"], "m");
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Today is Monday."}])
        );
        assert!(body.get("tools").is_none());
    }
}
