//! Codex's `item/*`, token-usage and `turn/completed` notifications as crew's transcript events,
//! so the panes, folding and `crew replay` show a Codex teammate like any other. Agent messages
//! become messages, reasoning a folded thinking block, commands `bash` calls, file changes
//! `apply_patch` calls; items Codex never completes (after an interrupt or `cancel`) are closed
//! when the turn ends. Unknown item types and notifications are skipped (Codex adds them between
//! releases).

use std::collections::HashMap;

use serde_json::{Value, json};

use crew_agent::AgentEvent;
use crew_model::{ContentBlock, FinishReason, Usage};
use crew_tools::TypedTool;
use crew_tools::builtin::BashTool;

/// How a turn ended, from `turn/completed`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnEnd {
    /// `completed`, `interrupted` or `failed`.
    pub status: String,
    /// The last agent message, or why the turn failed.
    pub text: String,
    /// What this turn used (the thread's total now less the total when it began).
    pub usage: Usage,
    /// Agent messages in the turn (what crew counts as model calls).
    pub calls: u32,
}

/// Turns one turn's notifications into crew events, keeping what spans them.
#[derive(Debug, Default)]
pub(crate) struct Items {
    calls: u32,
    /// The agent message being streamed, and whether deltas for it arrived.
    open_message: Option<(String, bool)>,
    /// Tool items started and not completed: id → crew tool name.
    open_tools: HashMap<String, &'static str>,
    /// The `changes` of each file change seen started (the approval request does not carry them).
    changes: HashMap<String, Value>,
    last_text: String,
    /// The turn under way (from `turn/start`'s answer).
    turn_id: String,
    /// The thread's token total when this turn began, and now.
    usage_at_start: Usage,
    usage_now: Usage,
}

impl Items {
    /// Starts turn `id` (the thread's usage so far is its baseline).
    pub(crate) fn begin_turn(&mut self, id: &str) {
        self.turn_id = id.to_string();
        self.calls = 0;
        self.last_text.clear();
        self.usage_at_start = self.usage_now;
    }

    /// The file changes of item `id`, as its `item/started` listed them.
    pub(crate) fn changes_of(&self, id: &str) -> Option<&Value> {
        self.changes.get(id)
    }

    /// Events for one notification; `Some` end when it is the turn's `turn/completed`.
    pub(crate) fn on(
        &mut self,
        method: &str,
        params: &Value,
        out: &mut Vec<AgentEvent>,
    ) -> Option<TurnEnd> {
        let item = &params["item"];
        let id = item["id"].as_str().unwrap_or_default().to_string();
        match (method, item["type"].as_str()) {
            ("item/started", Some("agentMessage")) => {
                self.close_message(out);
                self.calls += 1;
                out.push(AgentEvent::MessageStart { call: self.calls });
                self.open_message = Some((id, false));
            }
            ("item/agentMessage/delta", _) => {
                if let Some((_, streamed)) = &mut self.open_message {
                    *streamed = true;
                }
                out.push(AgentEvent::MessageDelta {
                    text: params["delta"].as_str().unwrap_or_default().to_string(),
                });
            }
            ("item/completed", Some("agentMessage")) => {
                let text = item["text"].as_str().unwrap_or_default().to_string();
                // Deltas may be missing (a resumed or quiet stream): the item carries the text.
                if !self
                    .open_message
                    .as_ref()
                    .is_some_and(|(_, streamed)| *streamed)
                {
                    if self.open_message.is_none() {
                        self.calls += 1;
                        out.push(AgentEvent::MessageStart { call: self.calls });
                        self.open_message = Some((id, false));
                    }
                    out.push(AgentEvent::MessageDelta { text: text.clone() });
                }
                self.close_message(out);
                self.last_text = text;
            }
            // Its reasoning, whole once the item completes: folded like every provider's thinking.
            ("item/completed", Some("reasoning")) => {
                let thinking = reasoning_text(item);
                if !thinking.is_empty() {
                    out.push(AgentEvent::Thinking {
                        block: ContentBlock::Thinking {
                            thinking,
                            signature: String::new(),
                        },
                    });
                }
            }
            ("item/started", Some("commandExecution")) => {
                self.close_message(out);
                self.open_tools.insert(id.clone(), BashTool::NAME);
                out.push(AgentEvent::ToolUse {
                    id,
                    name: BashTool::NAME.to_string(),
                    input: json!({"command": item["command"], "cwd": item["cwd"]}),
                    early: false,
                });
            }
            ("item/completed", Some("commandExecution")) => {
                self.open_tools.remove(&id);
                let status = item["status"].as_str().unwrap_or("unknown");
                let output = item["aggregatedOutput"].as_str().unwrap_or_default();
                let exit = item["exitCode"].as_i64();
                let content = match (status, exit) {
                    ("declined", _) => "declined: the command was not run".to_string(),
                    (_, Some(0)) | ("completed", None) => output.to_string(),
                    (_, Some(code)) => format!("{output}\n(exit code {code})"),
                    (other, None) => format!("{output}\n({other})"),
                };
                out.push(tool_result(
                    id,
                    BashTool::NAME,
                    content,
                    status != "completed" || exit.is_some_and(|c| c != 0),
                ));
            }
            ("item/started", Some("fileChange")) => {
                self.close_message(out);
                self.open_tools.insert(id.clone(), "apply_patch");
                self.changes.insert(id.clone(), item["changes"].clone());
                out.push(AgentEvent::ToolUse {
                    id,
                    name: "apply_patch".to_string(),
                    input: json!({ "changes": item["changes"] }),
                    early: false,
                });
            }
            ("item/completed", Some("fileChange")) => {
                self.open_tools.remove(&id);
                self.changes.remove(&id);
                let status = item["status"].as_str().unwrap_or("unknown");
                let paths: Vec<&str> = item["changes"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|c| c["path"].as_str()).collect())
                    .unwrap_or_default();
                let content = match status {
                    "completed" => format!("changed {}", paths.join(", ")),
                    "declined" => format!("declined: {} not changed", paths.join(", ")),
                    other => format!("{other}: {}", paths.join(", ")),
                };
                out.push(tool_result(
                    id,
                    "apply_patch",
                    content,
                    status != "completed",
                ));
            }
            ("thread/tokenUsage/updated", _) => {
                let total = &params["tokenUsage"]["total"];
                let count = |key: &str| total[key].as_u64().unwrap_or(0);
                // Codex counts cached input inside its input tokens; crew counts them apart.
                self.usage_now = Usage {
                    input_tokens: count("inputTokens").saturating_sub(count("cachedInputTokens")),
                    output_tokens: count("outputTokens"),
                    cache_creation_input_tokens: count("cacheWriteInputTokens"),
                    cache_read_input_tokens: count("cachedInputTokens"),
                    cost_micros: None,
                };
                // A resumed thread first reports its history (under an earlier turn's id): that
                // is where this turn starts counting, not what it used.
                if params["turnId"].as_str() != Some(self.turn_id.as_str()) {
                    self.usage_at_start = self.usage_now;
                }
            }
            ("turn/completed", _) => return Some(self.finish(&params["turn"], out)),
            _ => {}
        }
        None
    }

    /// Closes what the turn left open and reads how it ended.
    fn finish(&mut self, turn: &Value, out: &mut Vec<AgentEvent>) -> TurnEnd {
        self.close_message(out);
        let status = turn["status"].as_str().unwrap_or("unknown").to_string();
        let mut open: Vec<(String, &'static str)> = self.open_tools.drain().collect();
        open.sort();
        for (id, name) in open {
            // Codex never completes an item its turn abandoned (interrupt, cancel).
            out.push(tool_result(
                id,
                name,
                format!("{status}: Codex ended the turn before this finished"),
                true,
            ));
        }
        self.changes.clear();
        let text = match status.as_str() {
            "failed" => format!(
                "Codex failed the turn: {}",
                turn["error"]["message"]
                    .as_str()
                    .unwrap_or("no reason given")
            ),
            _ => std::mem::take(&mut self.last_text),
        };
        let start = std::mem::replace(&mut self.usage_at_start, self.usage_now);
        let now = &self.usage_now;
        TurnEnd {
            status,
            text,
            usage: Usage {
                input_tokens: now.input_tokens.saturating_sub(start.input_tokens),
                output_tokens: now.output_tokens.saturating_sub(start.output_tokens),
                cache_creation_input_tokens: now
                    .cache_creation_input_tokens
                    .saturating_sub(start.cache_creation_input_tokens),
                cache_read_input_tokens: now
                    .cache_read_input_tokens
                    .saturating_sub(start.cache_read_input_tokens),
                cost_micros: None,
            },
            calls: self.calls,
        }
    }

    fn close_message(&mut self, out: &mut Vec<AgentEvent>) {
        if self.open_message.take().is_some() {
            out.push(AgentEvent::MessageStop {
                stop_reason: if self.open_tools.is_empty() {
                    FinishReason::EndTurn
                } else {
                    FinishReason::ToolUse
                },
                usage: Usage::default(),
            });
        }
    }
}

fn tool_result(id: String, name: &str, content: String, is_error: bool) -> AgentEvent {
    AgentEvent::ToolResult {
        id,
        name: name.to_string(),
        content,
        is_error,
        rewritten_input: None,
        spilled: None,
        decision: None,
        notes: Vec::new(),
    }
}

/// A reasoning item's text: its summary, else its raw content (parts as strings or `{text}`).
fn reasoning_text(item: &Value) -> String {
    let parts = |key: &str| -> Vec<String> {
        item[key]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|p| p.as_str().or_else(|| p["text"].as_str()))
                    .filter(|t| !t.trim().is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let summary = parts("summary");
    let shown = if summary.is_empty() {
        parts("content")
    } else {
        summary
    };
    shown.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reasoning_item_is_one_folded_thinking_block() {
        let mut items = Items::default();
        let mut out = Vec::new();
        let item = json!({"type": "reasoning", "id": "rs_1",
            "summary": ["Look at the tests first.", {"text": "Then fix the parser."}], "content": []});
        items.on("item/completed", &json!({ "item": item }), &mut out);
        let empty = json!({"type": "reasoning", "id": "rs_2", "summary": [], "content": []});
        items.on("item/completed", &json!({ "item": empty }), &mut out);
        match &out[..] {
            [
                AgentEvent::Thinking {
                    block: ContentBlock::Thinking { thinking, .. },
                },
            ] => {
                assert_eq!(thinking, "Look at the tests first.\n\nThen fix the parser.")
            }
            other => panic!("{other:?}"),
        }
    }

    const RECORDED: &str = include_str!(
        "../../../../../tests/fixtures/codex/approvals-followup-interrupt.transcript.jsonl"
    );

    /// The notifications of the recording, turn by turn, through one translator.
    fn replay() -> (Vec<AgentEvent>, Vec<TurnEnd>) {
        let mut items = Items::default();
        let (mut events, mut ends) = (Vec::new(), Vec::new());
        for line in RECORDED.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            let msg = &entry["msg"];
            let Some(method) = msg["method"].as_str() else {
                continue;
            };
            if entry["dir"] != "out" || msg.get("id").is_some() {
                continue;
            }
            if method == "turn/started" {
                items.begin_turn(msg["params"]["turn"]["id"].as_str().unwrap());
            }
            if let Some(end) = items.on(method, &msg["params"], &mut events) {
                ends.push(end);
            }
        }
        (events, ends)
    }

    #[test]
    fn a_recorded_session_becomes_messages_commands_file_changes_and_turn_ends() {
        let (events, ends) = replay();
        let statuses: Vec<&str> = ends.iter().map(|e| e.status.as_str()).collect();
        assert_eq!(
            statuses,
            ["completed", "completed", "interrupted", "completed"]
        );
        assert_eq!(ends[0].text, "Turn 1 done.");
        assert_eq!(
            ends[1].text,
            "Follow-up answer: the thread remembers turn 1."
        );
        // 3150 tokens in turn 1 (3000 in of which 600 cached, 150 out), 1050 in each later one.
        assert_eq!(
            (
                ends[0].usage.input_tokens,
                ends[0].usage.cache_read_input_tokens,
                ends[0].usage.output_tokens
            ),
            (2400, 600, 150)
        );
        assert_eq!(ends[1].usage.total(), 1050);
        let uses: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses, ["bash", "apply_patch", "bash"]);
        let results: Vec<(String, bool)> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(results[0], ("wrote-outside\n".to_string(), false));
        assert!(results[1].0.starts_with("declined"), "{results:?}");
        // The interrupted `sleep 30` never completed: it is closed when the turn ends.
        assert!(results[2].0.starts_with("interrupted"), "{results:?}");
        assert!(results[2].1);
        let starts = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::MessageStart { .. }))
            .count();
        let stops = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::MessageStop { .. }))
            .count();
        assert_eq!((starts, stops), (4, 4), "every message is closed");
    }
}
