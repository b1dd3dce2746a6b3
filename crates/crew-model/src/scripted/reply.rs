//! Turns a scenario rule into the events a real provider would stream.

use std::path::Path;

use serde_json::Value;

use super::scenario::{Rule, ScriptedError, ScriptedStop, Situation};
use crate::error::ModelError;
use crate::event::StreamEvent;
use crate::types::{FinishReason, ModelRequest, Usage};

/// Words per text delta, so text arrives in several pieces like a real stream.
const WORDS_PER_DELTA: usize = 3;

type Item = Result<StreamEvent, ModelError>;

/// The events for `rule`; tool-call ids are numbered from `first_id`.
pub(super) fn play(rule: &Rule, situation: &Situation<'_>, first_id: u64) -> Vec<Item> {
    let req = situation.request();
    let text = render(rule.text.as_deref().unwrap_or(""), situation);
    let simulated = |what: &str| format!("scripted simulator: {what}");
    let mut usage = Usage {
        input_tokens: input_estimate(req),
        ..Usage::default()
    };
    match rule.error {
        Some(ScriptedError::Overloaded) => {
            return vec![Err(ModelError::Overloaded {
                message: simulated("overloaded"),
            })];
        }
        Some(ScriptedError::RateLimited) => {
            return vec![Err(ModelError::RateLimited {
                retry_after: None,
                message: simulated("rate limited"),
            })];
        }
        Some(ScriptedError::PromptTooLong) => {
            return vec![Err(ModelError::PromptTooLong {
                message: simulated("prompt too long"),
            })];
        }
        Some(ScriptedError::Disconnect) => {
            let mut items = vec![Ok(StreamEvent::MessageStart), Ok(StreamEvent::Usage(usage))];
            let deltas = deltas(if text.is_empty() {
                "partial reply"
            } else {
                &text
            });
            let half = deltas.len().div_ceil(2);
            items.extend(deltas.into_iter().take(half).map(Ok));
            items.push(Err(ModelError::stream(simulated(
                "disconnected mid-stream",
            ))));
            return items;
        }
        None => {}
    }
    let mut items = vec![Ok(StreamEvent::MessageStart), Ok(StreamEvent::Usage(usage))];
    items.extend(deltas(&text).into_iter().map(Ok));
    let mut output_bytes = text.len();
    for (n, call) in rule.tool_calls.iter().enumerate() {
        let input = render_value(&call.input, situation);
        output_bytes += call.name.len() + input.to_string().len();
        items.push(Ok(StreamEvent::ToolUse {
            id: format!("toolu_scripted_{}", first_id + n as u64),
            name: call.name.clone(),
            input,
        }));
    }
    usage.output_tokens = tokens(output_bytes);
    let reason = match rule.stop {
        Some(ScriptedStop::EndTurn) => FinishReason::EndTurn,
        Some(ScriptedStop::ToolUse) => FinishReason::ToolUse,
        Some(ScriptedStop::MaxTokens) => FinishReason::MaxTokens,
        None if rule.tool_calls.is_empty() => FinishReason::EndTurn,
        None => FinishReason::ToolUse,
    };
    items.push(Ok(StreamEvent::Usage(usage)));
    items.push(Ok(StreamEvent::Stop { reason, usage }));
    items
}

/// The reply when no rule matches: says so plainly and ends the turn.
pub(super) fn fallback(origin: &Path, situation: &Situation<'_>) -> Vec<Item> {
    let req = situation.request();
    let ctx = &req.context;
    let turn = situation.turn();
    let text = format!(
        "[scripted simulator] The scenario {} has no rule for this situation \
         (agent {:?}, role {:?}, turn {turn}). Add a rule to the scenario to script a reply.",
        origin.display(),
        ctx.agent,
        ctx.role,
    );
    let usage = Usage {
        input_tokens: input_estimate(req),
        output_tokens: tokens(text.len()),
        ..Usage::default()
    };
    let mut items = vec![Ok(StreamEvent::MessageStart)];
    items.extend(deltas(&text).into_iter().map(Ok));
    items.push(Ok(StreamEvent::Usage(usage)));
    items.push(Ok(StreamEvent::Stop {
        reason: FinishReason::EndTurn,
        usage,
    }));
    items
}

/// `{task}`, `{agent}`, `{last_user}` and `{last_result}` replaced from the request.
fn render(text: &str, situation: &Situation<'_>) -> String {
    let ctx = &situation.request().context;
    text.replace("{task}", ctx.task.as_deref().unwrap_or(""))
        .replace("{agent}", &ctx.agent)
        .replace("{last_user}", situation.user_text())
        .replace("{last_result}", &situation.result_text())
}

/// `render` applied to every string inside a JSON value.
fn render_value(value: &Value, situation: &Situation<'_>) -> Value {
    match value {
        Value::String(text) => Value::String(render(text, situation)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| render_value(v, situation)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render_value(v, situation)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Text cut into deltas of a few words each (whitespace kept, so they join back exactly).
fn deltas(text: &str) -> Vec<StreamEvent> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    words
        .chunks(WORDS_PER_DELTA)
        .map(|chunk| StreamEvent::TextDelta(chunk.concat()))
        .collect()
}

/// About four bytes per token, the usual rough estimate.
fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

fn input_estimate(req: &ModelRequest) -> u64 {
    let json_len = |value: Result<String, serde_json::Error>| value.map_or(0, |s| s.len());
    tokens(
        req.system.joined().len()
            + json_len(serde_json::to_string(&req.messages))
            + json_len(serde_json::to_string(&req.tools)),
    )
}
