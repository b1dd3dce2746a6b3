//! The last rung: the model summarises the old part of the conversation. Lossy and costs a
//! call, so it only runs when the cheap rungs were not enough.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crew_model::{
    ChatMessage, ContentBlock, ModelProvider, ModelRequest, Role, StreamEvent, SystemPrompt,
};
use crew_tools::spill::floor_char_boundary;

/// The first line of a summary record.
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation]";

/// What the summarising call is asked to do (scenarios match on its start).
pub const SUMMARY_INSTRUCTION: &str = "Summarise the conversation below for your own later use. \
Keep: what was asked, decisions made, files read or changed (with paths), commands run and their \
outcomes, open problems and next steps. Be concise; do not invent anything.";

/// Bytes of one tool result shown to the summariser.
const RESULT_PREVIEW: usize = 2_000;

/// Replaces everything before the latest user input with a model-written summary. Returns
/// false when there is nothing to summarise or the call failed (logged).
pub async fn summarise(
    history: &mut Vec<ChatMessage>,
    model: &dyn ModelProvider,
    template: &ModelRequest,
    cancel: &CancellationToken,
) -> bool {
    let Some(split) = super::steps::split_point(history, 1) else {
        return false;
    };
    let request = ModelRequest {
        system: SystemPrompt {
            static_prefix: "You write faithful, compact summaries of coding sessions.".into(),
            dynamic_suffix: String::new(),
        },
        messages: vec![ChatMessage::user_text(format!(
            "{SUMMARY_INSTRUCTION}\n\n{}",
            as_text(&history[..split])
        ))],
        tools: Vec::new(),
        ..template.clone()
    };
    let text = match reply_text(model, request, cancel).await {
        Ok(text) => text,
        Err(reason) => {
            tracing::warn!("summarising compaction failed: {reason}");
            return false;
        }
    };
    if text.trim().is_empty() {
        return false;
    }
    history.splice(
        ..split,
        [ChatMessage::user_text(format!(
            "{SUMMARY_HEADER}\n{}",
            text.trim()
        ))],
    );
    true
}

/// The text of the model's reply to `request` (tool calls ignored); `Err` says why there is
/// none (cancelled, an error, a reply that ended early).
pub(crate) async fn reply_text(
    model: &dyn ModelProvider,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let mut stream = model.stream(request);
    let mut text = String::new();
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err("cancelled".to_string()),
            item = stream.next() => item,
        };
        match item {
            Some(Ok(StreamEvent::TextDelta(delta))) => text.push_str(&delta),
            // The provider is retrying: the reply starts again.
            Some(Ok(StreamEvent::Restart { .. })) => text.clear(),
            Some(Ok(StreamEvent::Stop { .. })) => return Ok(text),
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(error.to_string()),
            None => return Err("the reply ended early".to_string()),
        }
    }
}

/// The conversation as plain text, tool results shortened.
fn as_text(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        let who = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => out.push_str(&format!("{who}: {text}\n")),
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push_str(&format!("{who} called {name} {input}\n"));
                }
                ContentBlock::ToolResult {
                    content, is_error, ..
                } => {
                    let cut = floor_char_boundary(content, RESULT_PREVIEW);
                    let kind = if *is_error { "error" } else { "result" };
                    out.push_str(&format!("{kind}: {}\n", &content[..cut]));
                }
                // Reasoning is not part of what was said or done.
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
            }
        }
    }
    out
}
