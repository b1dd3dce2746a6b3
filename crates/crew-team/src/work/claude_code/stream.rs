//! Claude Code's stream-json output as crew's transcript events, so the panes, folding and
//! `crew replay` show a Claude Code teammate like any other. With `--include-partial-messages`
//! the CLI also sends each reply's raw API stream (`stream_event` lines): its text and thinking
//! go to the transcript as they arrive, a reply ends at its `message_stop` with the call's whole
//! usage, and the `assistant` lines that then repeat each finished block only bring the tool
//! calls (and the text of a CLI that does not stream). Unknown event types and blocks are
//! skipped (the CLI adds them between releases); what matters for the turn is `result`.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use crew_agent::AgentEvent;
use crew_model::{ContentBlock, FinishReason, Usage};

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

/// The reply being received (or the last one, after its `message_stop`: its blocks may still
/// come as `assistant` lines).
#[derive(Debug, Default)]
struct Reply {
    id: String,
    closed: bool,
    used_tools: bool,
    usage: Usage,
    /// `message_delta`'s stop reason.
    stop_reason: Option<FinishReason>,
    /// Text blocks streamed (what of each arrived) whose whole `assistant` repeat is still to
    /// come, and thinking blocks streamed to their end whose repeat is.
    streamed_text: VecDeque<String>,
    streamed_thinking: u32,
    /// The thinking block being streamed (text, signature).
    thinking: Option<(String, String)>,
    /// The reply's text so far: what the agent says before a tool call.
    text: String,
}

/// Turns assistant, user and stream events into crew events, keeping what spans events: the
/// reply under way, the names of the tools called and the words before each call.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    calls: u32,
    reply: Option<Reply>,
    /// The person interrupted: the open reply stops as interrupted.
    interrupted: bool,
    tool_names: HashMap<String, String>,
    words_before: HashMap<String, String>,
}

impl Translator {
    /// Events for one `assistant`, `user` or `stream_event` line (nothing for other types).
    pub(crate) fn events(&mut self, line: &Value) -> Vec<AgentEvent> {
        let mut out = Vec::new();
        match line["type"].as_str() {
            // A subagent's stream is not the teammate's reply (its whole lines still show).
            Some("stream_event") if line["parent_tool_use_id"].is_null() => {
                self.stream_event(&line["event"], &mut out)
            }
            Some("assistant") => self.assistant(&line["message"], &mut out),
            Some("user") => {
                self.close_reply(&mut out);
                let blocks = line["message"]["content"].as_array().cloned();
                for block in blocks.unwrap_or_default() {
                    if block["type"] != "tool_result" {
                        continue;
                    }
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

    /// The person interrupted the turn: the reply under way ends as interrupted.
    pub(crate) fn interrupt(&mut self) {
        self.interrupted = true;
    }

    /// Whether a reply is still being received (its `message_stop` not yet seen).
    pub(crate) fn replying(&self) -> bool {
        self.reply.as_ref().is_some_and(|r| !r.closed)
    }

    /// What the agent said in its reply before tool call `tool_use_id`, if anything.
    pub(crate) fn words_before(&self, tool_use_id: &str) -> Option<&str> {
        self.words_before.get(tool_use_id).map(String::as_str)
    }

    /// Closes the open reply (if any) and reads the turn's end from a `result` line.
    pub(crate) fn finish(&mut self, line: &Value) -> (Vec<AgentEvent>, TurnEnd) {
        let mut out = Vec::new();
        self.close_reply(&mut out);
        self.reply = None;
        self.interrupted = false;
        self.words_before.clear();
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

    /// The reply with message id `id`, opened (closing another) when it is new.
    fn reply_for(&mut self, id: &str, out: &mut Vec<AgentEvent>) -> &mut Reply {
        if self.reply.as_ref().is_some_and(|r| r.id != id) {
            self.close_reply(out);
            self.reply = None;
        }
        if self.reply.is_none() {
            self.calls += 1;
            out.push(AgentEvent::MessageStart { call: self.calls });
        }
        self.reply.get_or_insert_with(|| Reply {
            id: id.to_string(),
            ..Reply::default()
        })
    }

    fn stream_event(&mut self, event: &Value, out: &mut Vec<AgentEvent>) {
        match event["type"].as_str() {
            Some("message_start") => {
                let message = &event["message"];
                let id = message["id"].as_str().unwrap_or_default().to_string();
                let usage = serde_json::from_value::<Usage>(message["usage"].clone());
                let reply = self.reply_for(&id, out);
                if let Ok(usage) = usage {
                    reply.usage = usage;
                }
            }
            Some("content_block_start") => {
                let Some(reply) = self.reply.as_mut().filter(|r| !r.closed) else {
                    return;
                };
                match event["content_block"]["type"].as_str() {
                    Some("text") => reply.streamed_text.push_back(String::new()),
                    Some("thinking") => reply.thinking = Some(Default::default()),
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let Some(reply) = self.reply.as_mut().filter(|r| !r.closed) else {
                    return;
                };
                let delta = &event["delta"];
                let piece = |key: &str| delta[key].as_str().unwrap_or_default();
                match (delta["type"].as_str(), &mut reply.thinking) {
                    (Some("text_delta"), _) => {
                        reply.text.push_str(piece("text"));
                        if let Some(block) = reply.streamed_text.back_mut() {
                            block.push_str(piece("text"));
                        }
                        out.push(AgentEvent::MessageDelta {
                            text: piece("text").to_string(),
                        });
                    }
                    (Some("thinking_delta"), Some((thinking, _))) => {
                        thinking.push_str(piece("thinking"))
                    }
                    (Some("signature_delta"), Some((_, signature))) => {
                        signature.push_str(piece("signature"))
                    }
                    _ => {}
                }
            }
            Some("content_block_stop") => {
                let Some(reply) = self.reply.as_mut().filter(|r| !r.closed) else {
                    return;
                };
                if let Some((thinking, signature)) = reply.thinking.take() {
                    reply.streamed_thinking += 1;
                    out.push(AgentEvent::Thinking {
                        block: ContentBlock::Thinking {
                            thinking,
                            signature,
                        },
                    });
                }
            }
            Some("message_delta") => {
                let Some(reply) = self.reply.as_mut().filter(|r| !r.closed) else {
                    return;
                };
                if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                    reply.stop_reason = Some(FinishReason::from_anthropic(reason));
                }
                // The call's final counts: output always, the rest when given.
                let usage = &event["usage"];
                let count = |key: &str| usage[key].as_u64();
                let u = &mut reply.usage;
                for (field, key) in [
                    (&mut u.output_tokens, "output_tokens"),
                    (&mut u.input_tokens, "input_tokens"),
                    (&mut u.cache_read_input_tokens, "cache_read_input_tokens"),
                    (
                        &mut u.cache_creation_input_tokens,
                        "cache_creation_input_tokens",
                    ),
                ] {
                    if let Some(n) = count(key) {
                        *field = n;
                    }
                }
            }
            Some("message_stop") => self.close_reply(out),
            _ => {}
        }
    }

    fn assistant(&mut self, message: &Value, out: &mut Vec<AgentEvent>) {
        let id = message["id"].as_str().unwrap_or_default().to_string();
        let usage = serde_json::from_value::<Usage>(message["usage"].clone());
        let reply = self.reply_for(&id, out);
        let streamed = !reply.streamed_text.is_empty()
            || reply.streamed_thinking > 0
            || reply.thinking.is_some()
            || reply.closed;
        if let (Ok(usage), false) = (usage, streamed) {
            // Without stream events this is all there is of the call's usage.
            reply.usage = usage;
        }
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        let mut called = Vec::new();
        for block in blocks {
            match block["type"].as_str() {
                Some("text") => {
                    let whole = block["text"].as_str().unwrap_or_default();
                    // What the stream did not bring (all of it without stream events; the
                    // end of a reply cut by an interrupt).
                    let streamed = reply.streamed_text.pop_front().unwrap_or_default();
                    let rest = whole.strip_prefix(streamed.as_str()).unwrap_or_default();
                    if !rest.is_empty() {
                        reply.text.push_str(rest);
                        out.push(AgentEvent::MessageDelta {
                            text: rest.to_string(),
                        });
                    }
                }
                Some("thinking") if reply.streamed_thinking > 0 => reply.streamed_thinking -= 1,
                Some("thinking" | "redacted_thinking") => {
                    // The whole block (with its signature) stands for the one being streamed.
                    reply.thinking = None;
                    if let Ok(block) = serde_json::from_value::<ContentBlock>(block) {
                        out.push(AgentEvent::Thinking { block });
                    }
                }
                Some("tool_use") => {
                    let id = block["id"].as_str().unwrap_or_default().to_string();
                    let name = block["name"].as_str().unwrap_or_default().to_string();
                    reply.used_tools = true;
                    let words: String = reply
                        .text
                        .trim()
                        .chars()
                        .take(crew_tools::context::PURPOSE_KEPT)
                        .collect();
                    called.push((id.clone(), name.clone(), words));
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
        for (id, name, words) in called {
            if !words.is_empty() {
                self.words_before.insert(id.clone(), words);
            }
            self.tool_names.insert(id, name);
        }
    }

    /// Ends the reply under way, with the call's usage and why it stopped.
    fn close_reply(&mut self, out: &mut Vec<AgentEvent>) {
        let Some(reply) = self.reply.as_mut().filter(|r| !r.closed) else {
            return;
        };
        reply.closed = true;
        let stop_reason = if self.interrupted {
            FinishReason::Interrupted
        } else if reply.used_tools {
            FinishReason::ToolUse
        } else {
            reply.stop_reason.clone().unwrap_or(FinishReason::EndTurn)
        };
        out.push(AgentEvent::MessageStop {
            stop_reason,
            usage: reply.usage,
        });
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
    use serde_json::json;

    use super::*;

    const TOOLS: &str =
        include_str!("../../../../../tests/fixtures/claude-code/tools.stream.jsonl");

    const PARTIAL: &str =
        include_str!("../../../../../tests/fixtures/claude-code/partial.transcript.jsonl");

    /// Each turn of the recorded partial-messages session (Claude Code 2.1.197 with
    /// `--include-partial-messages`): its events and its end. The person's interrupt (an `in`
    /// line) is told to the translator as the turn loop does.
    fn partial_turns() -> (Translator, Vec<(Vec<AgentEvent>, TurnEnd)>) {
        let mut translator = Translator::default();
        let mut turns = Vec::new();
        let mut events = Vec::new();
        for line in PARTIAL.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            let line = &entry["line"];
            match (entry["dir"].as_str(), line["type"].as_str()) {
                (Some("in"), Some("control_request")) => translator.interrupt(),
                (Some("out"), Some("result")) => {
                    let (more, end) = translator.finish(line);
                    events.extend(more);
                    turns.push((std::mem::take(&mut events), end));
                }
                (Some("out"), _) => events.extend(translator.events(line)),
                _ => {}
            }
        }
        (translator, turns)
    }

    fn said(events: &[AgentEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::MessageDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn partial_messages_stream_text_and_thinking_once_and_each_call_counts_its_whole_usage() {
        let (_, turns) = partial_turns();
        let (events, end) = &turns[0];
        // Text arrives in pieces, each piece once (the assistant lines' repeats are dropped).
        let deltas = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::MessageDelta { .. }))
            .count();
        assert!(deltas > 4, "{events:#?}");
        assert_eq!(
            said(events),
            "I'll write the greeting file.Done: greeting.txt greets the crew."
        );
        let thinking: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Thinking {
                    block: ContentBlock::Thinking { thinking, .. },
                } => Some(thinking.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            thinking,
            ["The greeting belongs in its own file, so I write greeting.txt."]
        );
        // In the order it happened: thinking, words, the call, the reply's end.
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                AgentEvent::MessageStart { .. } => "start",
                AgentEvent::Thinking { .. } => "thinking",
                AgentEvent::MessageDelta { .. } => "text",
                AgentEvent::ToolUse { .. } => "tool",
                AgentEvent::ToolResult { .. } => "result",
                AgentEvent::MessageStop { .. } => "stop",
                _ => "other",
            })
            .collect::<Vec<_>>()
            .into_iter()
            .fold(Vec::new(), |mut acc, k| {
                if acc.last() != Some(&k) {
                    acc.push(k);
                }
                acc
            });
        assert_eq!(
            kinds,
            [
                "start", "thinking", "text", "tool", "stop", "result", "start", "tool", "stop",
                "result", "start", "text", "stop"
            ]
        );
        // The calls' usages add up to the turn's.
        let calls: Vec<Usage> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::MessageStop { usage, .. } => Some(*usage),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 3);
        let sum: u64 = calls.iter().map(Usage::total).sum();
        assert_eq!(sum, end.usage.total(), "{calls:?} vs {:?}", end.usage);
        assert!(end.success);
    }

    #[test]
    fn the_words_before_a_call_are_kept_as_why_the_agent_makes_it() {
        let mut translator = Translator::default();
        for line in PARTIAL.lines() {
            let entry: Value = serde_json::from_str(line).unwrap();
            let line = &entry["line"];
            if line["type"] == "control_request" && line["request"]["tool_name"] == "Write" {
                let id = line["request"]["tool_use_id"].as_str().unwrap();
                assert_eq!(
                    translator.words_before(id),
                    Some("I'll write the greeting file.")
                );
                return;
            }
            if entry["dir"] == "out" {
                translator.events(line);
            }
        }
        panic!("the sample has a Write request");
    }

    #[test]
    fn an_interrupted_reply_stops_as_interrupted_with_its_partial_text_once() {
        let (_, turns) = partial_turns();
        let (events, end) = &turns[1];
        assert_eq!(said(events), "This is a very slow answ");
        let stops: Vec<&FinishReason> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::MessageStop { stop_reason, .. } => Some(stop_reason),
                _ => None,
            })
            .collect();
        assert_eq!(stops, [&FinishReason::Interrupted]);
        assert!(!end.success);
    }

    #[test]
    fn the_end_of_a_reply_the_stream_did_not_bring_comes_from_its_whole_block() {
        let mut translator = Translator::default();
        let stream = |event: Value| json!({"type": "stream_event", "event": event, "parent_tool_use_id": null});
        let mut events = translator.events(&stream(
            json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 10}}}),
        ));
        events.extend(translator.events(&stream(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )));
        events.extend(translator.events(&stream(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}}),
        )));
        translator.interrupt();
        events.extend(
            translator.events(&json!({"type": "assistant", "parent_tool_use_id": null,
            "message": {"id": "m1", "content": [{"type": "text", "text": "Half a reply"}]}})),
        );
        assert_eq!(said(&events), "Half a reply");
        assert!(translator.replying());
        let (end, _) =
            translator.finish(&json!({"type": "result", "subtype": "error_during_execution"}));
        assert!(
            matches!(&end[..], [AgentEvent::MessageStop { stop_reason: FinishReason::Interrupted, usage }] if usage.input_tokens == 10),
            "{end:?}"
        );
    }

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
