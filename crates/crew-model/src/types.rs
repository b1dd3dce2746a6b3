//! The conversation vocabulary shared by providers, tools and the agent loop.
//!
//! `ChatMessage` and `ContentBlock` serialise exactly like the Anthropic Messages API blocks, so a
//! transcript on disk and a request body use the same shape.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model sees it: name, description and a JSON schema for its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// Who wrote a message. The system prompt is separate (`SystemPrompt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    /// Extended thinking, kept verbatim: during tool use the API requires it back unchanged,
    /// `signature` included.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Thinking the API encrypted; `data` goes back exactly as received.
    RedactedThinking {
        data: String,
    },
}

impl ContentBlock {
    /// Whether this is model reasoning (plain or redacted) rather than text or a tool block.
    pub fn is_thinking(&self) -> bool {
        matches!(self, Self::Thinking { .. } | Self::RedactedThinking { .. })
    }

    /// A tool result answering the call with id `tool_use_id`.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error,
        }
    }
}

/// A message in the conversation with the model (an inbox line is `store::Message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl ChatMessage {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// A user message carrying tool results (see [`ContentBlock::tool_result`]), in order.
    pub fn user_tool_results(results: Vec<ContentBlock>) -> Self {
        Self {
            role: Role::User,
            content: results,
        }
    }

    /// All text blocks joined with no separator (deltas of one block were already joined).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls in this message as `(id, name, input)`.
    pub fn tool_uses(&self) -> Vec<(&str, &str, &Value)> {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { id, name, input } => {
                    Some((id.as_str(), name.as_str(), input))
                }
                _ => None,
            })
            .collect()
    }

    /// The tool results in this message as `(tool_use_id, content, is_error)`.
    pub fn tool_results(&self) -> Vec<(&str, &str, bool)> {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((tool_use_id.as_str(), content.as_str(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

/// Token counts as the provider reports them. OpenAI-compatible `prompt_tokens` are split into
/// `input_tokens` (uncached) and `cache_read_input_tokens` to match Anthropic's meaning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// What the provider says the call cost, in millionths of a US dollar, when it says so
    /// (OpenAI-compatible routers such as OpenRouter send `usage.cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl Usage {
    /// Everything counted, input of every kind plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cache_creation_input_tokens: self.cache_creation_input_tokens
                + other.cache_creation_input_tokens,
            cache_read_input_tokens: self.cache_read_input_tokens + other.cache_read_input_tokens,
            cost_micros: match (self.cost_micros, other.cost_micros) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// Why the model ended a reply (the agent loop's own ending is `agent::StopReason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
    /// The person interrupted the reply before the model ended it.
    Interrupted,
    /// A reason this crate does not know, kept verbatim.
    Other(String),
}

impl FinishReason {
    /// Maps an Anthropic `stop_reason` string.
    pub fn from_anthropic(reason: &str) -> Self {
        match reason {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "pause_turn" => Self::PauseTurn,
            "refusal" => Self::Refusal,
            other => Self::Other(other.to_string()),
        }
    }
}

/// The system prompt in two parts: a byte-stable prefix that providers mark cacheable, and a
/// per-turn suffix (date, status, reminders) that is sent after it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemPrompt {
    pub static_prefix: String,
    pub dynamic_suffix: String,
}

impl SystemPrompt {
    /// Both parts joined by a blank line, skipping an empty part.
    pub fn joined(&self) -> String {
        match (
            self.static_prefix.is_empty(),
            self.dynamic_suffix.is_empty(),
        ) {
            (false, false) => format!("{}\n\n{}", self.static_prefix, self.dynamic_suffix),
            (false, true) => self.static_prefix.clone(),
            (true, _) => self.dynamic_suffix.clone(),
        }
    }
}

/// Who is asking. Real providers ignore it; the scripted provider matches rules on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestContext {
    pub agent: String,
    pub role: String,
    pub task: Option<String>,
}

/// One model call. An empty `model` means "the provider's configured model".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub model: String,
    pub system: SystemPrompt,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolDefinition>,
    pub max_tokens: u32,
    pub context: RequestContext,
}

/// Dollars as millionths of a dollar, rounded.
#[allow(
    clippy::cast_possible_truncation,
    reason = "a float-to-int `as` saturates (NaN is 0): the right end for a cost"
)]
pub fn micros_of_dollars(dollars: f64) -> u64 {
    (dollars * 1e6).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_blocks_serialise_in_the_messages_api_shape() {
        let msg = ChatMessage {
            role: Role::User,
            content: vec![
                ContentBlock::Text { text: "hi".into() },
                ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "ok".into(),
                    is_error: true,
                },
            ],
        };
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": true}
            ]})
        );
        let back: ChatMessage =
            serde_json::from_value(serde_json::to_value(&msg).unwrap()).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn thinking_blocks_serialise_in_the_messages_api_shape() {
        let blocks = vec![
            ContentBlock::Thinking {
                thinking: "hmm".into(),
                signature: "sig".into(),
            },
            ContentBlock::RedactedThinking { data: "xyz".into() },
        ];
        let value = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            value,
            json!([
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "xyz"}
            ])
        );
        let back: Vec<ContentBlock> = serde_json::from_value(value).unwrap();
        assert_eq!(back, blocks);
        assert!(back.iter().all(ContentBlock::is_thinking));
    }

    #[test]
    fn message_helpers_pick_their_blocks() {
        let msg = ChatMessage {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "a".into() },
                ContentBlock::ToolUse {
                    id: "1".into(),
                    name: "read".into(),
                    input: json!({"p": 1}),
                },
                ContentBlock::Text { text: "b".into() },
            ],
        };
        assert_eq!(msg.text(), "ab");
        assert_eq!(msg.tool_uses(), vec![("1", "read", &json!({"p": 1}))]);
        assert!(msg.tool_results().is_empty());
        assert_eq!(ChatMessage::user_text("x").role, Role::User);
        assert_eq!(ChatMessage::assistant_text("y").text(), "y");
    }

    #[test]
    fn usage_adds_field_by_field() {
        let mut a = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cache_creation_input_tokens: 3,
            cache_read_input_tokens: 4,
            cost_micros: None,
        };
        a += a;
        assert_eq!(
            a,
            Usage {
                input_tokens: 2,
                output_tokens: 4,
                cache_creation_input_tokens: 6,
                cache_read_input_tokens: 8,
                cost_micros: None,
            }
        );
        assert_eq!(a.total(), 20);
        let priced = Usage {
            cost_micros: Some(5),
            ..Usage::default()
        };
        assert_eq!((a + priced + priced).cost_micros, Some(10));
    }

    #[test]
    fn stop_reasons_map_and_keep_unknown_values() {
        assert_eq!(
            FinishReason::from_anthropic("tool_use"),
            FinishReason::ToolUse
        );
        assert_eq!(
            FinishReason::from_anthropic("pause_turn"),
            FinishReason::PauseTurn
        );
        assert_eq!(
            FinishReason::from_anthropic("new_thing"),
            FinishReason::Other("new_thing".into())
        );
    }

    #[test]
    fn system_prompt_joins_non_empty_parts() {
        let both = SystemPrompt {
            static_prefix: "s".into(),
            dynamic_suffix: "d".into(),
        };
        assert_eq!(both.joined(), "s\n\nd");
        let only_static = SystemPrompt {
            static_prefix: "s".into(),
            dynamic_suffix: String::new(),
        };
        assert_eq!(only_static.joined(), "s");
        assert_eq!(SystemPrompt::default().joined(), "");
    }
}
