//! Decodes a chat-completions chunk stream, assembling tool calls from their fragments. A call
//! crew cannot run as written (no name, arguments that are not a JSON object, cut off by the
//! output limit) becomes a `BadToolUse`, which the agent answers with a tool error; calls
//! written as text are found when the reply has no real ones (`text_calls`).

use serde_json::Value;

use crate::error::ModelError;
use crate::event::StreamEvent;
use crate::http::classify;
use crate::sse::SseEvent;
use crate::streaming::{Decoder, Progress};
use crate::types::{FinishReason, Usage};

use super::text_calls::{self, NO_NAME, TextCall};

/// A tool call still receiving fragments.
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
pub(super) struct OpenAiDecoder {
    /// The tools the request offered: a call written as text counts only when it names one.
    tools: Vec<String>,
    /// The reply's text so far, searched for calls written as text at the end.
    text: String,
    started: bool,
    /// Calls still receiving fragments, in arrival order.
    open: Vec<Call>,
    /// Ids of calls already emitted, so a late fragment for one is caught.
    emitted: Vec<(u64, String)>,
    finish_reason: Option<String>,
    usage: Usage,
    /// Counter for ids invented when a server sends none.
    invented_ids: u32,
}

impl Decoder for OpenAiDecoder {
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Progress, ModelError> {
        if event.data.trim() == "[DONE]" {
            self.complete(out)?;
            return Ok(Progress::Done);
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|e| ModelError::stream(format!("malformed chunk: {e}")))?;
        self.start(out);
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .or(error.as_str())
                .unwrap_or("no message");
            let kind = error["type"].as_str().unwrap_or("");
            return Err(classify(None, kind, message.to_string(), None));
        }
        // Only the first choice is used; crew never asks for more than one.
        if let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) {
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                self.text.push_str(text);
                out.push(StreamEvent::TextDelta(text.to_string()));
            }
            if let Some(fragments) = delta["tool_calls"].as_array() {
                for fragment in fragments {
                    self.fragment(fragment, out)?;
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(reason.to_string());
                self.emit_open(out);
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = usage_from(usage);
            out.push(StreamEvent::Usage(self.usage));
        }
        Ok(Progress::More)
    }

    /// Some servers close without `[DONE]`; a reply that got its finish_reason is complete.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.finish_reason.is_none() {
            return Err(ModelError::stream(
                "the response ended before a finish_reason or [DONE]; the reply is incomplete",
            ));
        }
        self.complete(out)
    }
}

impl OpenAiDecoder {
    pub(super) fn new(tools: Vec<String>) -> Self {
        Self {
            tools,
            ..Self::default()
        }
    }

    /// Adds one `delta.tool_calls` fragment. A fragment that starts a new call (a new index, or
    /// a new id at a used index as some servers send for parallel calls) completes the calls
    /// before it, which are emitted then.
    fn fragment(&mut self, fragment: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let index = fragment["index"].as_u64().unwrap_or(0);
        let id = fragment["id"].as_str().filter(|id| !id.is_empty());
        let function = &fragment["function"];
        let continues = |call: &Call| call.index == index && id.is_none_or(|id| id == call.id);
        if !self.open.iter().any(continues) {
            if let Some(id) = id
                && self.emitted.iter().any(|(_, done)| done == id)
            {
                return Err(ModelError::stream(format!(
                    "fragment for tool call {id} after it was complete"
                )));
            }
            if id.is_none() && self.emitted.iter().any(|(done, _)| *done == index) {
                return Err(ModelError::stream(format!(
                    "fragment for tool call index {index} after it was complete"
                )));
            }
            self.emit_open(out);
            let id = match id {
                Some(id) => id.to_string(),
                None => {
                    self.invented_ids += 1;
                    format!("call_crew_{}", self.invented_ids)
                }
            };
            self.open.push(Call {
                index,
                id,
                name: String::new(),
                arguments: String::new(),
            });
        }
        let Some(call) = self.open.iter_mut().rev().find(|call| continues(call)) else {
            return Err(ModelError::stream("tool call fragment matched no call"));
        };
        if let Some(name) = function["name"].as_str()
            && call.name.is_empty()
        {
            call.name = name.to_string();
        }
        if let Some(arguments) = function["arguments"].as_str() {
            call.arguments.push_str(arguments);
        }
        Ok(())
    }

    /// Emits every open call: a `ToolUse` when it can run, else a `BadToolUse` saying why.
    fn emit_open(&mut self, out: &mut Vec<StreamEvent>) {
        for call in std::mem::take(&mut self.open) {
            self.emitted.push((call.index, call.id.clone()));
            let parsed = if call.arguments.trim().is_empty() {
                Ok(Value::Object(Default::default()))
            } else {
                serde_json::from_str(&call.arguments)
                    .map_err(|e| format!("the arguments are not valid JSON ({e})"))
                    .and_then(object_of)
            };
            let event = match (call.name.is_empty(), parsed) {
                (false, Ok(input)) => StreamEvent::ToolUse {
                    id: call.id,
                    name: call.name,
                    input,
                },
                (no_name, parsed) => {
                    let problem = if no_name {
                        "the call has no tool name".to_string()
                    } else {
                        parsed.err().unwrap_or_default()
                    };
                    self.bad(call.id, call.name, call.arguments, problem)
                }
            };
            out.push(event);
        }
    }

    /// A call that cannot run; a reply cut by the output limit says so, since that is why.
    fn bad(&self, id: String, name: String, raw: String, problem: String) -> StreamEvent {
        let problem = if self.finish_reason.as_deref() == Some("length") {
            format!(
                "your reply was cut off at the output limit while you were writing this call, so it was not run ({problem}); make the call again with shorter arguments (write a long file in several smaller steps)"
            )
        } else {
            problem
        };
        StreamEvent::BadToolUse {
            id,
            name: if name.is_empty() {
                NO_NAME.to_string()
            } else {
                name
            },
            // Kept as a JSON string: what goes back to the server must be valid JSON.
            input: Value::String(raw),
            problem,
        }
    }

    /// Calls written as text, when the reply made no real ones.
    fn emit_text_calls(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.emitted.is_empty() || self.tools.is_empty() {
            return;
        }
        for found in text_calls::find(&self.text, &self.tools) {
            self.invented_ids += 1;
            let id = format!("call_crew_{}", self.invented_ids);
            self.emitted.push((u64::MAX, id.clone()));
            out.push(match found {
                TextCall::Call { name, input } => StreamEvent::ToolUse { id, name, input },
                TextCall::Bad { name, raw, problem } => self.bad(
                    id,
                    name,
                    raw,
                    format!("{problem}; call tools through the tool-call interface"),
                ),
            });
        }
    }

    /// Emits `MessageStart` once, before anything else.
    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            out.push(StreamEvent::MessageStart);
        }
    }

    /// Emits the remaining calls and the final `Stop`.
    fn complete(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        self.start(out);
        self.emit_open(out);
        self.emit_text_calls(out);
        let called = !self.emitted.is_empty();
        let reason = match self.finish_reason.as_deref() {
            // Some servers (Ollama) say "stop" even when the reply is tool calls.
            Some("stop") if called => FinishReason::ToolUse,
            Some("stop") => FinishReason::EndTurn,
            // Cut calls were already turned into `BadToolUse`s; the agent bounds how often.
            Some("length") => FinishReason::MaxTokens,
            Some("tool_calls" | "function_call") => FinishReason::ToolUse,
            Some("content_filter") => FinishReason::Refusal,
            Some(other) => FinishReason::Other(other.to_string()),
            None if called => FinishReason::ToolUse,
            None => FinishReason::Other("unspecified".into()),
        };
        out.push(StreamEvent::Stop {
            reason,
            usage: self.usage,
        });
        Ok(())
    }
}

/// A call's input: a JSON object, or a JSON string holding one (some models encode twice).
pub(super) fn object_of(value: Value) -> Result<Value, String> {
    match value {
        Value::Object(_) => Ok(value),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(inner @ Value::Object(_)) => Ok(inner),
            _ => Err(format!(
                "the arguments must be a JSON object, not the string {text:?}"
            )),
        },
        other => Err(format!(
            "the arguments must be a JSON object, not {}",
            other
        )),
    }
}

/// `prompt_tokens` include cached tokens; split them out to match Anthropic's meaning.
fn usage_from(value: &Value) -> Usage {
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    let prompt = count(&value["prompt_tokens"]);
    let cached = count(&value["prompt_tokens_details"]["cached_tokens"]).min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: count(&value["completion_tokens"]),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
        cost_micros: value["cost"]
            .as_f64()
            .filter(|c| c.is_finite() && *c >= 0.0)
            .map(crate::types::micros_of_dollars),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Feeds `data` payloads; returns the events and the first error.
    fn decode(chunks: &[Value]) -> (Vec<StreamEvent>, Option<ModelError>) {
        let mut decoder = OpenAiDecoder::default();
        let mut out = Vec::new();
        for chunk in chunks {
            let event = SseEvent {
                event: None,
                data: chunk.to_string(),
            };
            if let Err(error) = decoder.on_event(event, &mut out) {
                return (out, Some(error));
            }
        }
        let done = SseEvent {
            event: None,
            data: "[DONE]".into(),
        };
        let error = decoder.on_event(done, &mut out).err();
        (out, error)
    }

    fn calls(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": {"tool_calls": delta}, "finish_reason": null}]})
    }

    #[test]
    fn calls_without_ids_get_invented_unique_ids() {
        let (events, error) = decode(&[
            calls(json!([{"index": 0, "function": {"name": "a", "arguments": "{}"}}])),
            calls(json!([{"index": 1, "function": {"name": "b"}}])),
        ]);
        assert_eq!(error, None);
        let ids: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolUse { id, input, .. } => {
                    assert_eq!(input, &json!({}));
                    Some(id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["call_crew_1", "call_crew_2"]);
    }

    #[test]
    fn a_fragment_for_a_completed_call_is_an_error() {
        let (_, error) = decode(&[
            calls(json!([{"index": 0, "id": "c1", "function": {"name": "a", "arguments": "{}"}}])),
            calls(json!([{"index": 1, "id": "c2", "function": {"name": "b", "arguments": "{}"}}])),
            calls(json!([{"index": 0, "function": {"arguments": "more"}}])),
        ]);
        assert!(
            matches!(error, Some(ModelError::Stream { .. })),
            "{error:?}"
        );
    }

    /// The problem of each `BadToolUse`, by call name.
    fn bad_calls(events: &[StreamEvent]) -> Vec<(String, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::BadToolUse { name, problem, .. } => {
                    Some((name.clone(), problem.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_call_without_a_name_or_with_bad_arguments_is_a_bad_call_not_a_stream_error() {
        let (events, error) = decode(&[calls(json!([{"index": 0, "id": "c1"}]))]);
        assert_eq!(error, None);
        assert_eq!(
            bad_calls(&events),
            [(NO_NAME.to_string(), "the call has no tool name".to_string())]
        );
        let (events, error) = decode(&[calls(
            json!([{"index": 0, "id": "c1", "function": {"name": "a", "arguments": "{\"x\":"}}]),
        )]);
        assert_eq!(error, None);
        let bad = bad_calls(&events);
        assert_eq!(bad[0].0, "a");
        assert!(bad[0].1.contains("not valid JSON"), "{bad:?}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolUse { .. }))
        );
        let (events, _) = decode(&[calls(
            json!([{"index": 0, "id": "c1", "function": {"name": "a", "arguments": "[1, 2]"}}]),
        )]);
        assert!(bad_calls(&events)[0].1.contains("JSON object"));
        let (events, _) = decode(&[calls(
            json!([{"index": 0, "id": "c1", "function": {"name": "a", "arguments": "\"{\\\"p\\\":1}\""}}]),
        )]);
        assert!(
            events.contains(&StreamEvent::ToolUse {
                id: "c1".into(),
                name: "a".into(),
                input: json!({"p": 1})
            }),
            "arguments encoded twice are read: {events:?}"
        );
    }

    #[test]
    fn done_without_chunks_still_starts_and_stops() {
        let (events, error) = decode(&[]);
        assert_eq!(error, None);
        assert_eq!(events[0], StreamEvent::MessageStart);
        assert!(matches!(events[1], StreamEvent::Stop { .. }));
    }

    #[test]
    fn a_cost_reported_with_the_usage_is_kept_in_millionths_of_a_dollar() {
        let priced =
            usage_from(&json!({"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.001234}));
        assert_eq!(priced.cost_micros, Some(1234));
        let unpriced = usage_from(&json!({"prompt_tokens": 10, "cost": "n/a"}));
        assert_eq!(unpriced.cost_micros, None);
        assert_eq!(usage_from(&json!({"cost": -1.0})).cost_micros, None);
    }
}
