//! Claude Code's stream-json output as crew's transcript events, so the panes, folding and
//! `crew replay` show a Claude Code teammate like any other. Unknown event types and blocks are
//! skipped (the CLI adds them between releases); what matters for the turn is `result`.

use std::collections::HashMap;

use serde_json::Value;

use crew_agent::AgentEvent;
use crew_model::{FinishReason, Usage};

/// The end of one turn, from the `result` event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnEnd {
    pub success: bool,
    /// The last text, or why it failed.
    pub text: String,
    pub turns: u32,
    pub usage: Usage,
    /// The session's cost so far (the CLI's `total_cost_usd` counts the whole session).
    pub total_cost_usd: Option<f64>,
    pub session_id: Option<String>,
}

/// Turns assistant and user events into crew events, keeping what spans events: the open
/// message and the names of the tools called.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    calls: u32,
    open_message: Option<String>,
    used_tools: bool,
    last_usage: Usage,
    tool_names: HashMap<String, String>,
}

impl Translator {
    /// Events for one `assistant` or `user` line (nothing for other types).
    pub(crate) fn events(&mut self, line: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        let message = &line["message"];
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        match line["type"].as_str() {
            Some("assistant") => {
                let id = message["id"].as_str().unwrap_or_default().to_string();
                if self.open_message.as_deref() != Some(id.as_str()) {
                    self.close_message(&mut out);
                    self.calls += 1;
                    out.push(AgentEvent::MessageStart { call: self.calls });
                    self.open_message = Some(id);
                }
                if let Ok(usage) = serde_json::from_value::<Usage>(message["usage"].clone()) {
                    self.last_usage = usage;
                }
                for block in blocks {
                    match block["type"].as_str() {
                        Some("text") => out.push(AgentEvent::MessageDelta {
                            text: block["text"].as_str().unwrap_or_default().to_string(),
                        }),
                        Some("tool_use") => {
                            let id = block["id"].as_str().unwrap_or_default().to_string();
                            let name = block["name"].as_str().unwrap_or_default().to_string();
                            self.used_tools = true;
                            self.tool_names.insert(id.clone(), name.clone());
                            out.push(AgentEvent::ToolUse {
                                id,
                                name,
                                input: block["input"].clone(),
                                early: false,
                            });
                        }
                        _ => {}
                    }
                }
            }
            Some("user") => {
                self.close_message(&mut out);
                for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
                    let id = block["tool_use_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    out.push(AgentEvent::ToolResult {
                        name: self.tool_names.get(&id).cloned().unwrap_or_default(),
                        id,
                        content: result_text(&block["content"]),
                        is_error: block["is_error"].as_bool().unwrap_or(false),
                        rewritten_input: None,
                        spilled: None,
                        decision: None,
                        notes: Vec::new(),
                    });
                }
            }
            _ => {}
        }
        out
    }

    /// Closes the open message (if any) and reads the turn's end from a `result` line.
    pub(crate) fn finish(&mut self, line: &Value) -> (Vec<AgentEvent>, TurnEnd) {
        let mut out = Vec::new();
        self.close_message(&mut out);
        let usage = serde_json::from_value::<Usage>(line["usage"].clone()).unwrap_or_default();
        let is_error = line["is_error"].as_bool().unwrap_or(true);
        let subtype = line["subtype"].as_str().unwrap_or("unknown");
        let text = line["result"].as_str().unwrap_or_default().to_string();
        let end = TurnEnd {
            success: !is_error && subtype == "success",
            text: if subtype == "success" {
                text
            } else {
                format!("Claude Code ended the turn with {subtype}: {text}")
            },
            turns: line["num_turns"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            usage,
            total_cost_usd: line["total_cost_usd"].as_f64(),
            session_id: line["session_id"].as_str().map(str::to_string),
        };
        (out, end)
    }

    fn close_message(&mut self, out: &mut Vec<AgentEvent>) {
        if self.open_message.take().is_some() {
            let stop_reason = if std::mem::take(&mut self.used_tools) {
                FinishReason::ToolUse
            } else {
                FinishReason::EndTurn
            };
            out.push(AgentEvent::MessageStop {
                stop_reason,
                usage: std::mem::take(&mut self.last_usage),
            });
        }
    }
}

/// A tool result's content: a string, or text blocks joined.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &str =
        include_str!("../../../../../tests/fixtures/claude-code/tools.stream.jsonl");

    #[test]
    fn a_recorded_stream_becomes_messages_tool_calls_and_results() {
        let mut translator = Translator::default();
        let mut events = Vec::new();
        let mut end = None;
        for line in TOOLS.lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            if value["type"] == "result" {
                let (more, finished) = translator.finish(&value);
                events.extend(more);
                end = Some(finished);
            } else {
                events.extend(translator.events(&value));
            }
        }
        let end = end.expect("the sample ends with a result");
        assert!(end.success, "{end:?}");
        let uses: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses[..2], ["Bash", "Write"]);
        let first_result = events
            .iter()
            .find_map(|e| match e {
                AgentEvent::ToolResult { name, content, .. } => Some((name, content)),
                _ => None,
            })
            .unwrap();
        assert_eq!(first_result, (&"Bash".to_string(), &"hi".to_string()));
        let starts = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::MessageStart { .. }))
            .count();
        let stops = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::MessageStop { .. }))
            .count();
        assert_eq!(starts, stops, "every message is closed");
    }
}
