//! Receiving one model reply. Text is streamed out as it arrives; a tool call that is safe to
//! run concurrently for its input (and has no unsafe call before it) starts at once, before
//! the reply ends; the rest wait for the reply to finish. A reply that breaks mid-way is
//! returned as a failure: none of it enters the history, and its early tools are cancelled.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::compaction::{estimate_messages, tokens_of_bytes};
use crate::emitter::Emitter;
use crate::event::{AgentEvent, RecoveryKind};
use crew_model::{self, ChatMessage, ContentBlock, ModelError, Role, StreamEvent, Usage};
use crew_tools::{Pipeline, ToolCall, ToolCallOutcome, ToolContext};

/// A tool call of a complete reply.
pub(crate) enum PendingCall {
    /// Already running since its `ToolUse` event arrived.
    Early(ToolCall, JoinHandle<ToolCallOutcome>),
    /// To run after the reply, in order.
    Queued(ToolCall),
    /// Never run: the model wrote it so that it cannot run; the result is this error.
    Refused(ToolCall, String),
}

pub(crate) enum Reply {
    Complete {
        message: ChatMessage,
        stop: crew_model::FinishReason,
        usage: Usage,
        calls: Vec<PendingCall>,
    },
    /// The call failed before or during the reply; `usage` is what was reported so far.
    Failed {
        error: ModelError,
        usage: Usage,
    },
    Cancelled {
        usage: Usage,
    },
    /// The reply kept writing the same text (a small model echoing its prompt, say): cut,
    /// none of it enters the history; `times` is how often its last stretch had come.
    Repeating {
        usage: Usage,
        times: usize,
    },
}

/// How long a stretch of a reply's text is compared, and how often it may come before the
/// reply counts as stuck: long enough that repeated code (tests, boilerplate) is not caught.
const REPEAT_SPAN: usize = 512;
const REPEAT_TIMES: usize = 4;
/// How often (in bytes of text) a streaming reply is checked.
const REPEAT_CHECK_EVERY: usize = 1024;

/// How often the last `REPEAT_SPAN` bytes of `text` occur in it, when that is `REPEAT_TIMES`
/// or more.
fn repeating(text: &str) -> Option<usize> {
    if text.len() < REPEAT_SPAN * REPEAT_TIMES {
        return None;
    }
    let from = (text.len() - REPEAT_SPAN..text.len()).find(|&i| text.is_char_boundary(i))?;
    let times = text.matches(&text[from..]).count();
    (times >= REPEAT_TIMES).then_some(times)
}

/// Reads `stream` to its end. Early tools run with `ctx` (whose token the caller owns; it is
/// cancelled here when the reply is abandoned). A call whose exact copy (name and input) is
/// already in the reply `max_copies` times is refused, not run: a model stuck writing the same
/// call a hundred times in one reply must not send a hundred messages or create a hundred tasks
/// before the repeat guard sees the reply.
pub(crate) async fn receive(
    mut stream: BoxStream<'static, Result<StreamEvent, ModelError>>,
    pipeline: &Arc<Pipeline>,
    ctx: &ToolContext,
    emitter: &Emitter,
    call: u32,
    max_copies: u32,
    cancel: &CancellationToken,
) -> Reply {
    let mut content: Vec<ContentBlock> = Vec::new();
    let mut text = String::new();
    let mut calls: Vec<PendingCall> = Vec::new();
    let mut copies: HashMap<(String, String), u32> = HashMap::new();
    let mut usage = Usage::default();
    let mut unsafe_seen = false;
    // All the reply's text, for the repeat check, and where it was last checked.
    let mut written = String::new();
    let mut checked = 0;
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                abandon(calls, ctx, emitter, "the reply was cut off (the turn was cancelled or reached its wall-time limit)").await;
                // Most providers report output tokens only at the reply's end: a reply cut
                // short (the wall-time limit, the person) still spent what it streamed.
                if usage.output_tokens == 0 {
                    let streamed = ChatMessage {
                        role: Role::Assistant,
                        content: content.clone(),
                    };
                    usage.output_tokens = estimate_messages(&[streamed]) + tokens_of_bytes(text.len());
                }
                return Reply::Cancelled { usage };
            }
            item = stream.next() => item,
        };
        let event = match item {
            Some(Ok(event)) => event,
            Some(Err(error)) => {
                abandon(
                    calls,
                    ctx,
                    emitter,
                    "the reply failed before it was complete",
                )
                .await;
                return Reply::Failed { error, usage };
            }
            None => {
                abandon(
                    calls,
                    ctx,
                    emitter,
                    "the reply ended before it was complete",
                )
                .await;
                return Reply::Failed {
                    error: ModelError::stream("the reply ended before it was complete"),
                    usage,
                };
            }
        };
        match event {
            StreamEvent::MessageStart => emitter.emit(AgentEvent::MessageStart { call }),
            StreamEvent::TextDelta(delta) => {
                text.push_str(&delta);
                written.push_str(&delta);
                emitter.emit(AgentEvent::MessageDelta { text: delta });
                if written.len() >= checked + REPEAT_CHECK_EVERY {
                    checked = written.len();
                    if let Some(times) = repeating(&written) {
                        abandon(calls, ctx, emitter, "the reply kept repeating itself").await;
                        usage.output_tokens =
                            usage.output_tokens.max(tokens_of_bytes(written.len()));
                        return Reply::Repeating { usage, times };
                    }
                }
            }
            StreamEvent::ToolUse { id, name, input } => {
                if !text.is_empty() {
                    content.push(ContentBlock::Text {
                        text: std::mem::take(&mut text),
                    });
                }
                content.push(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                });
                let tool_call = ToolCall { id, name, input };
                let seen = copies
                    .entry((tool_call.name.clone(), tool_call.input.to_string()))
                    .or_default();
                *seen += 1;
                if *seen > max_copies {
                    emitter.emit(AgentEvent::ToolUse {
                        id: tool_call.id.clone(),
                        name: tool_call.name.clone(),
                        input: tool_call.input.clone(),
                        early: false,
                    });
                    let problem = format!(
                        "this reply already made the same call with the same input {max_copies} times; copies are not run"
                    );
                    // Calls after it wait, so results stay in call order.
                    unsafe_seen = true;
                    calls.push(PendingCall::Refused(tool_call, problem));
                    continue;
                }
                let early = !unsafe_seen && pipeline.is_concurrency_safe(&tool_call);
                unsafe_seen |= !early;
                emitter.emit(AgentEvent::ToolUse {
                    id: tool_call.id.clone(),
                    name: tool_call.name.clone(),
                    input: tool_call.input.clone(),
                    early,
                });
                calls.push(if early {
                    let (pipeline, ctx, call) =
                        (Arc::clone(pipeline), ctx.clone(), tool_call.clone());
                    let handle = tokio::spawn(async move { pipeline.run(call, &ctx).await });
                    PendingCall::Early(tool_call, handle)
                } else {
                    PendingCall::Queued(tool_call)
                });
            }
            StreamEvent::BadToolUse {
                id,
                name,
                input,
                problem,
            } => {
                if !text.is_empty() {
                    content.push(ContentBlock::Text {
                        text: std::mem::take(&mut text),
                    });
                }
                content.push(ContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                });
                emitter.emit(AgentEvent::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                    early: false,
                });
                // Calls after it wait, so results stay in call order.
                unsafe_seen = true;
                calls.push(PendingCall::Refused(ToolCall { id, name, input }, problem));
            }
            StreamEvent::Thinking(block) => {
                if !text.is_empty() {
                    content.push(ContentBlock::Text {
                        text: std::mem::take(&mut text),
                    });
                }
                content.push(block.clone());
                emitter.emit(AgentEvent::Thinking { block });
            }
            // The provider is retrying: what streamed so far (no tool call) is void.
            StreamEvent::Restart { attempt, reason } => {
                let partial = !content.is_empty() || !text.is_empty();
                content.clear();
                text.clear();
                emitter.emit(if partial {
                    AgentEvent::Recovery {
                        kind: RecoveryKind::StreamError,
                        attempt,
                        reason: format!("partial reply discarded, retrying: {reason}"),
                    }
                } else {
                    AgentEvent::Recovery {
                        kind: RecoveryKind::ModelRetry,
                        attempt,
                        reason: format!("the model call failed, retrying: {reason}"),
                    }
                });
            }
            StreamEvent::Fallback { from, to, reason } => {
                emitter.emit(AgentEvent::ModelFallback { from, to, reason })
            }
            StreamEvent::Usage(snapshot) => usage = snapshot,
            StreamEvent::Stop {
                reason,
                usage: total,
            } => {
                if !text.is_empty() {
                    content.push(ContentBlock::Text { text });
                }
                return Reply::Complete {
                    message: ChatMessage {
                        role: Role::Assistant,
                        content,
                    },
                    stop: reason,
                    usage: total,
                    calls,
                };
            }
        }
    }
}

/// Cancels and waits for the early tools of an abandoned reply. Their results are dropped (the
/// calls never enter the history), but the transcript says of every call what became of it,
/// and why: a call shown with no result would read as one still running.
async fn abandon(calls: Vec<PendingCall>, ctx: &ToolContext, emitter: &Emitter, why: &str) {
    ctx.cancel.cancel();
    for call in calls {
        let (call, what) = match call {
            PendingCall::Early(call, handle) => {
                // The outcome is discarded either way; a panicked task has nothing to clean up.
                let _ = handle.await;
                (
                    call,
                    "started early, then cancelled; its result is discarded",
                )
            }
            PendingCall::Queued(call) | PendingCall::Refused(call, _) => (call, "not run"),
        };
        emitter.emit(AgentEvent::ToolResult {
            id: call.id,
            name: call.name,
            content: format!("{what}: {why}"),
            is_error: true,
            rewritten_input: None,
            spilled: None,
            decision: None,
            notes: Vec::new(),
        });
    }
}

/// Runs what is left of a complete reply's calls and returns every outcome in call order:
/// the early ones are awaited first (they all come before the first queued call), then the
/// queued ones go through the batch runner, a refused call's error in its place.
pub(crate) async fn finish(
    calls: Vec<PendingCall>,
    pipeline: &Pipeline,
    ctx: &ToolContext,
) -> Vec<ToolCallOutcome> {
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut queued = Vec::new();
    for call in calls {
        match call {
            PendingCall::Early(call, handle) => outcomes.push(handle.await.unwrap_or_else(|e| {
                ToolCallOutcome::cancelled(&call, format!("the tool task failed: {e}"))
            })),
            PendingCall::Queued(call) => queued.push(call),
            PendingCall::Refused(call, problem) => {
                outcomes.extend(pipeline.run_batch(std::mem::take(&mut queued), ctx).await);
                outcomes.push(ToolCallOutcome::cancelled(
                    &call,
                    format!("tool call not run: {problem}"),
                ));
            }
        }
    }
    outcomes.extend(pipeline.run_batch(queued, ctx).await);
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_repeating_a_long_stretch_is_stuck_and_repeated_code_is_not() {
        let prompt = "You are lead, a lead agent on a crew team. ".repeat(13);
        assert!(prompt.len() > REPEAT_SPAN);
        assert_eq!(
            repeating(&prompt.repeat(3)),
            None,
            "three times may be code"
        );
        assert!(repeating(&prompt.repeat(5)).is_some_and(|t| t >= REPEAT_TIMES));
        // Tests with the same shape but their own names are not one stretch repeated.
        let tests: String = (0..40)
            .map(|i| {
                format!("#[test]\nfn case_{i}() {{\n    assert_eq!(count(\"{i}\"), {i});\n}}\n\n")
            })
            .collect();
        assert_eq!(repeating(&tests), None);
        assert_eq!(repeating("short"), None);
        let wide = "é".repeat(2000);
        assert!(repeating(&wide).is_some(), "cut on a char boundary");
    }
}
