//! Decodes the Messages API event stream.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::ModelError;
use crate::event::StreamEvent;
use crate::http::classify;
use crate::sse::SseEvent;
use crate::streaming::{Decoder, Progress};
use crate::types::{ContentBlock, FinishReason, Usage};

/// A content block between its start and stop events.
enum Block {
    Text,
    /// A tool call whose input arrives as JSON fragments, parsed at `content_block_stop`.
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Extended thinking: text and signature arrive as deltas.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Encrypted thinking, whole in the start event.
    Redacted {
        data: String,
    },
    /// Block types this crate does not use.
    Ignored,
}

#[derive(Default)]
pub(super) struct AnthropicDecoder {
    usage: Usage,
    stop_reason: Option<FinishReason>,
    blocks: HashMap<u64, Block>,
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Progress, ModelError> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            ModelError::stream(format!(
                "malformed {} event: {e}",
                event.event.as_deref().unwrap_or("unnamed")
            ))
        })?;
        let kind = data["type"]
            .as_str()
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                merge_usage(&mut self.usage, &data["message"]["usage"]);
                out.push(StreamEvent::MessageStart);
                out.push(StreamEvent::Usage(self.usage));
            }
            "content_block_start" => self.start_block(&data, out)?,
            "content_block_delta" => self.delta(&data, out)?,
            "content_block_stop" => self.stop_block(&data, out)?,
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(FinishReason::from_anthropic(reason));
                }
                merge_usage(&mut self.usage, &data["usage"]);
                out.push(StreamEvent::Usage(self.usage));
            }
            "message_stop" => {
                let reason = self
                    .stop_reason
                    .take()
                    .unwrap_or_else(|| FinishReason::Other("unspecified".into()));
                out.push(StreamEvent::Stop {
                    reason,
                    usage: self.usage,
                });
                return Ok(Progress::Done);
            }
            "error" => {
                let error = &data["error"];
                let message = error["message"]
                    .as_str()
                    .unwrap_or("no message")
                    .to_string();
                return Err(classify(
                    None,
                    error["type"].as_str().unwrap_or(""),
                    message,
                    None,
                ));
            }
            "ping" => {}
            other => tracing::debug!(event = other, "ignoring unknown Anthropic stream event"),
        }
        Ok(Progress::More)
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        Err(ModelError::stream(
            "the response ended before message_stop; the reply is incomplete",
        ))
    }
}

impl AnthropicDecoder {
    fn start_block(&mut self, data: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let index = block_index(data)?;
        let block = &data["content_block"];
        let entry = match block["type"].as_str() {
            Some("text") => {
                if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta(text.to_string()));
                }
                Block::Text
            }
            Some("tool_use") => {
                let field = |name: &str| {
                    block[name].as_str().map(str::to_string).ok_or_else(|| {
                        ModelError::stream(format!("tool_use block {index} has no {name}"))
                    })
                };
                Block::Tool {
                    id: field("id")?,
                    name: field("name")?,
                    json: String::new(),
                    initial: block["input"].clone(),
                }
            }
            Some("thinking") => Block::Thinking {
                thinking: block["thinking"].as_str().unwrap_or("").to_string(),
                signature: block["signature"].as_str().unwrap_or("").to_string(),
            },
            Some("redacted_thinking") => Block::Redacted {
                data: block["data"].as_str().unwrap_or("").to_string(),
            },
            _ => Block::Ignored,
        };
        self.blocks.insert(index, entry);
        Ok(())
    }

    fn delta(&mut self, data: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let index = block_index(data)?;
        let delta = &data["delta"];
        match delta["type"].as_str() {
            Some("text_delta") => {
                if let Some(text) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta(text.to_string()));
                }
            }
            Some("input_json_delta") => match self.blocks.get_mut(&index) {
                Some(Block::Tool { json, .. }) => {
                    json.push_str(delta["partial_json"].as_str().unwrap_or(""));
                }
                _ => {
                    return Err(ModelError::stream(format!(
                        "input_json_delta for block {index}, which is not an open tool_use block"
                    )));
                }
            },
            Some(kind @ ("thinking_delta" | "signature_delta")) => {
                match self.blocks.get_mut(&index) {
                    Some(Block::Thinking {
                        thinking,
                        signature,
                    }) => {
                        let (field, target) = if kind == "thinking_delta" {
                            ("thinking", thinking)
                        } else {
                            ("signature", signature)
                        };
                        target.push_str(delta[field].as_str().unwrap_or(""));
                    }
                    _ => {
                        return Err(ModelError::stream(format!(
                            "{kind} for block {index}, which is not an open thinking block"
                        )));
                    }
                }
            }
            other => tracing::debug!(delta = ?other, "ignoring unknown Anthropic delta"),
        }
        Ok(())
    }

    fn stop_block(&mut self, data: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let index = block_index(data)?;
        match self.blocks.remove(&index) {
            Some(Block::Tool {
                id,
                name,
                json,
                initial,
            }) => out.push(tool_use(id, name, json, initial)?),
            Some(Block::Thinking {
                thinking,
                signature,
            }) => out.push(StreamEvent::Thinking(ContentBlock::Thinking {
                thinking,
                signature,
            })),
            Some(Block::Redacted { data }) => {
                out.push(StreamEvent::Thinking(ContentBlock::RedactedThinking {
                    data,
                }))
            }
            Some(Block::Text | Block::Ignored) | None => {}
        }
        Ok(())
    }
}

/// A finished tool call: its input from the JSON fragments, else from the start event.
fn tool_use(
    id: String,
    name: String,
    json: String,
    initial: Value,
) -> Result<StreamEvent, ModelError> {
    let input = if json.trim().is_empty() {
        if initial.is_null() {
            Value::Object(Default::default())
        } else {
            initial
        }
    } else {
        serde_json::from_str(&json).map_err(|e| {
            ModelError::stream(format!(
                "input of tool call {name} ({id}) is not valid JSON: {e}"
            ))
        })?
    };
    Ok(StreamEvent::ToolUse { id, name, input })
}

fn block_index(data: &Value) -> Result<u64, ModelError> {
    data["index"].as_u64().ok_or_else(|| {
        ModelError::stream(format!(
            "{} event without an index",
            data["type"].as_str().unwrap_or("content block")
        ))
    })
}

/// Overwrites the usage fields present in `value`; the API reports running totals.
fn merge_usage(usage: &mut Usage, value: &Value) {
    let fields = [
        ("input_tokens", &mut usage.input_tokens),
        ("output_tokens", &mut usage.output_tokens),
        (
            "cache_creation_input_tokens",
            &mut usage.cache_creation_input_tokens,
        ),
        (
            "cache_read_input_tokens",
            &mut usage.cache_read_input_tokens,
        ),
    ];
    for (name, field) in fields {
        if let Some(n) = value[name].as_u64() {
            *field = n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(decoder: &mut AnthropicDecoder, data: Value) -> Result<Vec<StreamEvent>, ModelError> {
        let mut out = Vec::new();
        let event = SseEvent {
            event: None,
            data: data.to_string(),
        };
        decoder.on_event(event, &mut out).map(|_| out)
    }

    #[test]
    fn tool_input_given_whole_in_the_start_block_is_used() {
        let mut decoder = AnthropicDecoder::default();
        let start = json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "t", "name": "n", "input": {"a": 1}}});
        assert_eq!(feed(&mut decoder, start).unwrap(), vec![]);
        let stop = json!({"type": "content_block_stop", "index": 0});
        assert_eq!(
            feed(&mut decoder, stop).unwrap(),
            vec![StreamEvent::ToolUse {
                id: "t".into(),
                name: "n".into(),
                input: json!({"a": 1})
            }]
        );
    }

    #[test]
    fn json_delta_for_a_block_that_is_not_a_tool_is_an_error() {
        let mut decoder = AnthropicDecoder::default();
        let delta = json!({"type": "content_block_delta", "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": "{"}});
        assert!(matches!(
            feed(&mut decoder, delta),
            Err(ModelError::Stream { .. })
        ));
    }

    #[test]
    fn message_stop_without_a_reason_still_stops() {
        let mut decoder = AnthropicDecoder::default();
        let events = feed(&mut decoder, json!({"type": "message_stop"})).unwrap();
        assert_eq!(
            events,
            vec![StreamEvent::Stop {
                reason: FinishReason::Other("unspecified".into()),
                usage: Usage::default()
            }]
        );
    }
}
