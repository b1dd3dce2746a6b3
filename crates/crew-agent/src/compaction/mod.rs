//! The compaction ladder, cheapest rung first; each rung runs only while the context is still
//! over its target: (1) spill oversized tool results, (2) drop stale tool payloads, (3) fold
//! old turns into a record, (4) summarise with the model.

pub mod probe;
pub mod steps;
pub mod summary;

use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::CompactionThresholds;
use crate::emitter::Emitter;
use crate::event::{AgentEvent, CompactionStep, CompactionTrigger};
use crate::normalize::normalize_owned;
use crew_model::{ChatMessage, ContentBlock, ModelProvider, ModelRequest};
use crew_tools::ToolRegistry;

/// Overhead bytes counted per content block (type tags, ids, JSON punctuation).
const BLOCK_OVERHEAD: usize = 16;

/// Tokens estimated as bytes / 4, the usual rough rate; no tokenizer needed.
pub fn tokens_of_bytes(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// Estimated tokens of the messages.
pub fn estimate_messages(messages: &[ChatMessage]) -> u64 {
    let bytes: usize = messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|block| {
            BLOCK_OVERHEAD
                + match block {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::ToolUse { id, name, input } => {
                        id.len() + name.len() + json_len(input)
                    }
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => tool_use_id.len() + content.len(),
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => thinking.len() + signature.len(),
                    ContentBlock::RedactedThinking { data } => data.len(),
                }
        })
        .sum();
    tokens_of_bytes(bytes)
}

fn json_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| json_len(v) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + json_len(v))
                .sum::<usize>()
        }
        other => other.to_string().len(),
    }
}

/// What the ladder needs from the agent.
pub(crate) struct Ladder<'a> {
    pub thresholds: CompactionThresholds,
    pub registry: &'a ToolRegistry,
    pub spill_dir: &'a Path,
    pub model: &'a dyn ModelProvider,
    /// Model name and context for the summarising call.
    pub template: &'a ModelRequest,
    pub cancel: &'a CancellationToken,
    pub emitter: &'a Emitter,
}

/// The ladder's result.
#[derive(Debug, Clone)]
pub(crate) struct Compacted {
    /// Some rung changed the history.
    pub changed: bool,
    /// Old turns were folded or summarised away: what the agent wrote in them (its checklist)
    /// is no longer in the history as it wrote it.
    pub rewrote_turns: bool,
    /// The context is now at or under the target.
    pub fits: bool,
    /// When the model summarised: the history as the cheaper rungs left it just before.
    pub before_summary: Option<Vec<ChatMessage>>,
}

impl Ladder<'_> {
    /// Climbs until the estimate (history plus `fixed_tokens` for system and tools) is at or
    /// under `target`. The history stays normalised.
    pub async fn run(
        &self,
        history: &mut Vec<ChatMessage>,
        fixed_tokens: u64,
        target: u64,
        trigger: CompactionTrigger,
    ) -> Compacted {
        let mut tokens = fixed_tokens + estimate_messages(history);
        let mut changed = false;
        let mut rewrote_turns = false;
        let mut before_summary = None;
        let keep = self.thresholds.keep_recent_messages;
        for step in [
            CompactionStep::Spill,
            CompactionStep::DropStale,
            CompactionStep::Fold,
            CompactionStep::Summarise,
        ] {
            if tokens <= target || self.cancel.is_cancelled() {
                break;
            }
            let stepped = match step {
                CompactionStep::Spill => {
                    let limit = self.thresholds.spill_result_bytes;
                    steps::spill_oversized(history, self.registry, self.spill_dir, limit).await > 0
                }
                CompactionStep::DropStale => steps::drop_stale(history, keep) > 0,
                CompactionStep::Fold => steps::fold(history, keep),
                CompactionStep::Summarise => {
                    let before = history.clone();
                    let done =
                        summary::summarise(history, self.model, self.template, self.cancel).await;
                    if done {
                        before_summary = Some(before);
                    }
                    done
                }
            };
            if !stepped {
                continue;
            }
            *history = normalize_owned(std::mem::take(history));
            let after = fixed_tokens + estimate_messages(history);
            self.emitter.emit(AgentEvent::Compaction {
                step,
                trigger,
                tokens_before: tokens,
                tokens_after: after,
            });
            tokens = after;
            changed = true;
            rewrote_turns |= matches!(step, CompactionStep::Fold | CompactionStep::Summarise);
        }
        Compacted {
            changed,
            rewrote_turns,
            fits: tokens <= target,
            before_summary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_estimate_is_about_a_quarter_of_the_bytes() {
        let small = estimate_messages(&[ChatMessage::user_text("x".repeat(400))]);
        assert_eq!(small, tokens_of_bytes(400 + BLOCK_OVERHEAD));
        let input = json!({"path": "a.rs", "n": [1, 2]});
        assert_eq!(json_len(&input), input.to_string().len() + 2);
    }
}
