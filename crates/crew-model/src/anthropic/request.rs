//! The Messages API request body.

use serde_json::{Value, json};

use crate::types::{ChatMessage, ContentBlock, ModelRequest, Role};

/// Marks a prefix of the prompt as cacheable.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The streaming request body. Four cache breakpoints, the API's limit: the last tool
/// definition and the static system block (tools + static prompt form one cached prefix), the
/// last message (written to the cache for the next call) and the last user message before the
/// latest reply, which ended the previous call (read back from the cache). Earlier messages go
/// out byte for byte as before. With `thinking`, that many tokens may go to reasoning on top of
/// `max_tokens` for the reply.
pub(super) fn body(req: &ModelRequest, default_model: &str, thinking: Option<u32>) -> Value {
    let model = if req.model.is_empty() {
        default_model
    } else {
        &req.model
    };
    let mut messages: Vec<Value> = req.messages.iter().map(message).collect();
    for index in breakpoints(&req.messages) {
        mark_last_block(&mut messages[index]);
    }
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if let Some(budget) = thinking {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        // The API counts thinking inside max_tokens and wants max_tokens above the budget.
        body["max_tokens"] = json!(req.max_tokens.saturating_add(budget));
    }
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

/// The messages that carry a breakpoint: the last one, and the last user message before the
/// last assistant message (what the previous call ended with).
fn breakpoints(messages: &[ChatMessage]) -> Vec<usize> {
    let Some(last) = messages.len().checked_sub(1) else {
        return Vec::new();
    };
    let previous = messages[..last]
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .and_then(|reply| messages[..reply].iter().rposition(|m| m.role == Role::User));
    previous.into_iter().chain([last]).collect()
}

/// Puts `cache_control` on the message's last block that may carry one (thinking blocks may
/// not).
fn mark_last_block(message: &mut Value) {
    let Some(blocks) = message["content"].as_array_mut() else {
        return;
    };
    let markable = |block: &&mut Value| {
        !matches!(
            block["type"].as_str(),
            Some("thinking" | "redacted_thinking")
        )
    };
    if let Some(block) = blocks.iter_mut().rev().find(markable) {
        block["cache_control"] = ephemeral();
    }
}

/// A message as the API wants it: the API rejects empty text blocks, so they are left out
/// (unless nothing else is left).
fn message(msg: &ChatMessage) -> Value {
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
    use crate::types::{RequestContext, SystemPrompt, ToolDefinition};

    fn request() -> ModelRequest {
        ModelRequest {
            model: String::new(),
            system: SystemPrompt {
                static_prefix: "You are crew.".into(),
                dynamic_suffix: "Today is Monday.".into(),
            },
            messages: vec![ChatMessage {
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
        let body = body(&request(), "claude-default", None);
        assert_eq!(body["model"], "claude-default");
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"},
                "cache_control": {"type": "ephemeral"}}])
        );
    }

    #[test]
    fn empty_system_parts_and_tools_are_omitted() {
        let mut req = request();
        req.model = "m".into();
        req.system.static_prefix.clear();
        req.tools.clear();
        let body = body(&req, "unused", None);
        assert_eq!(body["model"], "m");
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Today is Monday."}])
        );
        assert!(body.get("tools").is_none());
    }

    fn conversation(turns: usize) -> Vec<ChatMessage> {
        let mut messages = vec![ChatMessage::user_text("start")];
        for n in 0..turns {
            messages.push(ChatMessage {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: format!("plan {n}"),
                        signature: format!("sig{n}"),
                    },
                    ContentBlock::ToolUse {
                        id: format!("t{n}"),
                        name: "read".into(),
                        input: json!({}),
                    },
                ],
            });
            messages.push(ChatMessage::user_tool_results(vec![
                ContentBlock::tool_result(format!("t{n}"), "ok", false),
            ]));
        }
        messages
    }

    fn marked(body: &Value) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        for (m, message) in body["messages"].as_array().unwrap().iter().enumerate() {
            for (b, block) in message["content"].as_array().unwrap().iter().enumerate() {
                if block.get("cache_control").is_some() {
                    found.push((m, b));
                }
            }
        }
        found
    }

    #[test]
    fn breakpoints_sit_on_the_last_message_and_the_one_the_previous_call_ended_with() {
        let mut req = request();
        req.messages = conversation(0);
        assert_eq!(marked(&body(&req, "m", None)), vec![(0, 0)]);
        req.messages = conversation(3);
        assert_eq!(marked(&body(&req, "m", None)), vec![(4, 0), (6, 0)]);
        // A thinking block never carries a breakpoint.
        req.messages.push(ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::RedactedThinking { data: "x".into() }],
        });
        assert_eq!(marked(&body(&req, "m", None)), vec![(4, 0)]);
    }

    #[test]
    fn never_more_than_four_breakpoints() {
        let mut req = request();
        req.messages = conversation(5);
        let text = body(&req, "m", None).to_string();
        assert_eq!(text.matches("cache_control").count(), 4);
    }

    #[test]
    fn thinking_budget_is_sent_and_added_to_max_tokens() {
        let body = body(&request(), "m", Some(2048));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], 2148);
    }
}
