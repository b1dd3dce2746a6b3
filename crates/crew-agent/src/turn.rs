//! One turn: the bounded query loop. Prepare (normalise, compact) → stream the reply
//! (starting safe tools early) → recover from errors → run the tools and loop, until the
//! model finishes or a limit, a recovery bound or the caller stops it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use crate::compaction::estimate_messages;
use crate::event::{AgentEvent, CompactionTrigger, RecoveryKind};
use crate::hook_events::halted;
use crate::normalize::normalize_owned;
use crate::recovery::{MAX_COMPACTION_FAILURES, MAX_CONTINUES, MAX_EMPTY_REPLIES, Recovery};
use crate::repeat::RepeatTracker;
use crate::result::{PermissionDenial, StopReason, ToolUseRecord, TurnResult};
use crate::runtime::Agent;
use crate::stream::{self, Reply};
use crew_model::{self, ChatMessage, ContentBlock, ModelError, Usage};
use crew_tools::{Decision, Note, StopDecision, StopGuard, ToolCallOutcome, ToolContext};

/// Sent after a reply cut at `max_tokens`.
pub const CONTINUE_PROMPT: &str =
    "Your reply was cut off at the output limit. Continue exactly where you stopped.";

/// Sent after an empty reply (no text, no tool call), which small local models give.
pub const EMPTY_REPLY_PROMPT: &str =
    "Your reply was empty. Answer with text, or call one of your tools.";

/// What the turn has gathered so far.
struct TurnState {
    output: String,
    tools_used: Vec<ToolUseRecord>,
    denials: Vec<PermissionDenial>,
    usage: Usage,
    calls: u32,
    recovery: Recovery,
    repeats: RepeatTracker,
    stop_guard: StopGuard,
    /// A tool call reached a folder with instruction files not yet in the prompt.
    new_instructions: bool,
}

pub(crate) type Stop = (StopReason, String);

impl Agent {
    /// Runs one turn on `input`. Never fails: whatever happens ends in a `TurnResult`, and the
    /// history is left normalised (also when `cancel` fires at any moment).
    pub async fn run_turn(&mut self, input: String, cancel: CancellationToken) -> TurnResult {
        self.turns += 1;
        self.emitter.set_turn(self.turns);
        self.emitter.emit(AgentEvent::TurnStart {
            turn: self.turns,
            input: input.clone(),
            prefix_fingerprint: self.fingerprint.clone(),
        });
        let turn_cancel = cancel.child_token();
        let timed_out = Arc::new(AtomicBool::new(false));
        let timer = {
            let (token, flag, limit) = (
                turn_cancel.clone(),
                Arc::clone(&timed_out),
                self.limits.wall_time,
            );
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                flag.store(true, Ordering::SeqCst);
                token.cancel();
            })
        };
        let mut state = TurnState {
            output: String::new(),
            tools_used: Vec::new(),
            denials: Vec::new(),
            usage: Usage::default(),
            calls: 0,
            recovery: Recovery::default(),
            repeats: RepeatTracker::default(),
            stop_guard: StopGuard::new(),
            new_instructions: false,
        };
        let (mut stop_reason, mut reason) = match self.opening_hooks(&input, &turn_cancel).await {
            Ok(message) => {
                self.history.push(message);
                self.persist();
                self.drive(&mut state, &turn_cancel).await
            }
            Err(stop) => stop,
        };
        timer.abort();
        if stop_reason == StopReason::Interrupted && timed_out.load(Ordering::SeqCst) {
            stop_reason = StopReason::MaxBudgetReached;
            reason = format!(
                "the wall-time limit of {:?} was reached",
                self.limits.wall_time
            );
        }
        self.history = normalize_owned(std::mem::take(&mut self.history));
        self.persist();
        let result = TurnResult {
            input,
            output: state.output,
            tools_used: state.tools_used,
            permission_denials: state.denials,
            usage: state.usage,
            stop_reason,
            turns: state.calls,
            reason,
            prefix_fingerprint: self.fingerprint.clone(),
        };
        self.emitter.emit(AgentEvent::TurnEnd {
            result: result.clone(),
        });
        result
    }

    async fn drive(&mut self, st: &mut TurnState, cancel: &CancellationToken) -> Stop {
        self.ask_window(cancel).await;
        let mut suffix = self.dynamic_suffix();
        loop {
            if cancel.is_cancelled() {
                return interrupted();
            }
            if st.calls >= self.limits.max_turns {
                let max = self.limits.max_turns;
                return (
                    StopReason::MaxTurnsReached,
                    format!("reached max_turns ({max})"),
                );
            }
            if st.usage.total() >= self.limits.max_tokens_budget {
                let budget = self.limits.max_tokens_budget;
                return (
                    StopReason::MaxBudgetReached,
                    format!(
                        "the token budget of {budget} was used up ({} spent)",
                        st.usage.total()
                    ),
                );
            }
            self.history = normalize_owned(std::mem::take(&mut self.history));
            let threshold = self.compaction.compact_at_tokens;
            if self.fixed_tokens(&suffix) + estimate_messages(&self.history) > threshold
                && self.may_compact()
            {
                if let Some(stop) = self
                    .pre_compact_hooks(CompactionTrigger::Proactive, cancel)
                    .await
                {
                    return stop;
                }
                self.compact(&suffix, threshold, CompactionTrigger::Proactive, cancel)
                    .await;
            }
            let attempt = cancel.child_token();
            let ctx = ToolContext {
                cancel: attempt.clone(),
                ..self.tool_ctx.clone()
            };
            let request = self.request(&suffix);
            if let Some(link) = &self.subagent_link {
                link.record_request(&request);
            }
            let stream = self.model.stream(request);
            let reply = stream::receive(
                stream,
                &self.pipeline,
                &ctx,
                &self.emitter,
                st.calls + 1,
                self.limits.max_repeats,
                cancel,
            )
            .await;
            let (message, stop, calls) = match reply {
                Reply::Cancelled { usage } => {
                    st.usage += self.with_prompt_estimate(usage, &suffix);
                    return interrupted();
                }
                Reply::Repeating { usage, times } => {
                    st.usage += self.with_prompt_estimate(usage, &suffix);
                    return (
                        StopReason::RepeatedAction,
                        format!(
                            "the reply kept writing the same text (its last stretch {times} times); it was cut"
                        ),
                    );
                }
                Reply::Failed { error, usage } => {
                    st.usage += usage;
                    match self.recover(st, error, &suffix, cancel).await {
                        Ok(()) => continue,
                        Err(stop) => return stop,
                    }
                }
                Reply::Complete {
                    message,
                    stop,
                    usage,
                    calls,
                } => {
                    st.calls += 1;
                    st.usage += usage;
                    self.emitter.emit(AgentEvent::MessageStop {
                        stop_reason: stop.clone(),
                        usage,
                    });
                    (message, stop, calls)
                }
            };
            if let Some(stop) = self
                .after_reply(st, message, stop, calls, &ctx, cancel)
                .await
            {
                return stop;
            }
            if std::mem::take(&mut st.new_instructions) {
                // A subfolder's instruction file joined: the next call carries it.
                suffix = self.dynamic_suffix();
            }
        }
    }

    /// Takes a complete reply into the history and decides what comes next: `None` to call
    /// the model again (tool results, a continuation, a Stop hook's request), or the stop.
    async fn after_reply(
        &mut self,
        st: &mut TurnState,
        message: ChatMessage,
        stop: crew_model::FinishReason,
        calls: Vec<stream::PendingCall>,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> Option<Stop> {
        let truncated = stop == crew_model::FinishReason::MaxTokens;
        let text = message.text();
        let empty = calls.is_empty() && text.trim().is_empty();
        if !truncated && !empty {
            st.recovery.progress();
        }
        if let Some(link) = &self.subagent_link {
            link.record_reply(&message);
        }
        self.history.push(message);
        self.persist();
        if truncated && !calls.is_empty() {
            // The calls cut off come back as tool errors; how often that may happen is bounded.
            let Some(attempt) = st.recovery.take_continue() else {
                return Some(still_cut());
            };
            self.recovery_event(
                RecoveryKind::MaxTokens,
                attempt,
                "output cut at max_tokens inside a tool call; the cut call is answered with an error",
            );
        }
        if !calls.is_empty() {
            st.output.clear();
            // The reply's words before its calls are why the agent makes them.
            let words: String = text
                .trim()
                .chars()
                .take(crew_tools::context::PURPOSE_KEPT)
                .collect();
            let ctx = &ToolContext {
                purpose: (!words.is_empty()).then_some(words),
                ..ctx.clone()
            };
            let outcomes = stream::finish(calls, &self.pipeline, ctx).await;
            if let Some(link) = &self.subagent_link {
                // Subagents spend within the caller's turn and its budget.
                st.usage += link.take_spent();
            }
            self.record_results(st, &outcomes);
            if cancel.is_cancelled() {
                self.persist();
                return Some(interrupted());
            }
            if let Some(reason) = outcomes.iter().find_map(|o| o.halt.as_deref()) {
                self.persist();
                return Some(halted(reason));
            }
            let run = st.repeats.observe(&outcomes);
            let mut names: Vec<&str> = Vec::new();
            for outcome in &outcomes {
                if !names.contains(&outcome.name.as_str()) {
                    names.push(&outcome.name);
                }
            }
            let names = names.join(", ");
            let max = self.limits.max_repeats;
            if run >= max {
                self.persist();
                return Some((
                    StopReason::RepeatedAction,
                    format!(
                        "the same call ({names}) with the same input was made {run} times in a row"
                    ),
                ));
            }
            if run + 1 == max {
                let warning = format!(
                    "You made the same call ({names}) with the same input {run} times in a row. Making it again will not help, and once more ends your turn: do something else, or finish with your answer."
                );
                self.recovery_event(RecoveryKind::RepeatedCall, run, &warning);
                if let Some(results) = self.history.last_mut() {
                    results.content.push(ContentBlock::Text { text: warning });
                }
            }
            self.persist();
            return None;
        }
        if empty && !truncated {
            let Some(attempt) = st.recovery.take_empty_reply() else {
                return Some((
                    StopReason::Error,
                    format!(
                        "the model's reply was empty {} times in a row",
                        MAX_EMPTY_REPLIES + 1
                    ),
                ));
            };
            self.recovery_event(
                RecoveryKind::EmptyReply,
                attempt,
                "the reply was empty (no text, no tool call); asking the model to answer",
            );
            self.history
                .push(ChatMessage::user_text(EMPTY_REPLY_PROMPT));
            return None;
        }
        st.output.push_str(&text);
        if truncated {
            let Some(attempt) = st.recovery.take_continue() else {
                return Some(still_cut());
            };
            self.recovery_event(
                RecoveryKind::MaxTokens,
                attempt,
                "output cut at max_tokens; asking to continue",
            );
            self.history.push(ChatMessage::user_text(CONTINUE_PROMPT));
            return None;
        }
        let (event, decision) = self.stop_hooks(&mut st.stop_guard, cancel).await;
        match decision {
            StopDecision::Stop { notes, halt } => {
                self.hook_notes(event, notes);
                if let Some(reason) = halt {
                    return Some(halted(&reason));
                }
                Some((
                    StopReason::Completed,
                    "the model finished its answer".to_string(),
                ))
            }
            StopDecision::Continue { reason, notes } => {
                self.hook_notes(event, notes);
                self.recovery_event(RecoveryKind::StopHook, 1, &reason);
                self.history.push(ChatMessage::user_text(format!(
                    "A {event:?} hook asks you to continue: {reason}"
                )));
                st.output.clear();
                None
            }
        }
    }

    /// Decides what a failed model call leads to: `Ok` to try again, `Err` to stop.
    async fn recover(
        &mut self,
        st: &mut TurnState,
        error: ModelError,
        suffix: &str,
        cancel: &CancellationToken,
    ) -> Result<(), Stop> {
        if cancel.is_cancelled() {
            return Err(interrupted());
        }
        if let Some(window) = error.context_window() {
            // The server said how big its window is: the thresholds follow it from now on.
            self.fit_window(window);
        }
        match error {
            ModelError::PromptTooLong { message } => {
                if !self.may_compact() {
                    return Err((
                        StopReason::Error,
                        format!(
                            "prompt too long ({message}); compaction failed {MAX_COMPACTION_FAILURES} times in a row, not trying again"
                        ),
                    ));
                }
                if !st.recovery.take_reactive() {
                    return Err((
                        StopReason::Error,
                        format!(
                            "prompt still too long after this turn's reactive compaction ({message})"
                        ),
                    ));
                }
                self.recovery_event(RecoveryKind::PromptTooLong, 1, &message);
                if let Some(stop) = self
                    .pre_compact_hooks(CompactionTrigger::Reactive, cancel)
                    .await
                {
                    return Err(stop);
                }
                // The estimate was evidently too low: aim for half of it, or below the
                // threshold of a window just learned.
                let estimate = self.fixed_tokens(suffix) + estimate_messages(&self.history);
                let target = (estimate / 2).min(self.compaction.compact_at_tokens);
                let compacted = self
                    .compact(suffix, target, CompactionTrigger::Reactive, cancel)
                    .await;
                if compacted.changed {
                    Ok(())
                } else {
                    Err((
                        StopReason::Error,
                        format!("prompt too long ({message}) and nothing is left to compact"),
                    ))
                }
            }
            ModelError::Stream { message } => match st.recovery.take_stream_retry() {
                Some(attempt) => {
                    self.recovery_event(
                        RecoveryKind::StreamError,
                        attempt,
                        &format!("partial reply discarded: {message}"),
                    );
                    Ok(())
                }
                None => Err((
                    StopReason::Error,
                    format!("the reply stream kept breaking: {message}"),
                )),
            },
            other => Err((StopReason::Error, format!("model call failed: {other}"))),
        }
    }

    /// A reply cut short before the server said what it read: the prompt it was sent counts
    /// as its estimate (bytes / 4), not as nothing.
    fn with_prompt_estimate(&self, mut usage: Usage, suffix: &str) -> Usage {
        if usage.input_tokens + usage.cache_read_input_tokens == 0 {
            usage.input_tokens = self.fixed_tokens(suffix) + estimate_messages(&self.history);
        }
        usage
    }

    fn recovery_event(&self, kind: RecoveryKind, attempt: u32, reason: &str) {
        self.emitter.emit(AgentEvent::Recovery {
            kind,
            attempt,
            reason: reason.to_string(),
        });
    }

    /// Emits the results, records uses and denials, and appends the results message (with any
    /// hook context for the model) to the history.
    fn record_results(&mut self, st: &mut TurnState, outcomes: &[ToolCallOutcome]) {
        let mut content = Vec::with_capacity(outcomes.len());
        let mut context = Vec::new();
        for outcome in outcomes {
            if !outcome.output.is_error
                && let Some(path) = outcome.effective_input.get("path").and_then(|p| p.as_str())
            {
                st.new_instructions |= self
                    .instructions
                    .touched(&self.workspace, std::path::Path::new(path));
            }
            st.tools_used.push(ToolUseRecord {
                id: outcome.id.clone(),
                name: outcome.name.clone(),
                is_error: outcome.output.is_error,
            });
            if let Some(Decision::Deny(reason)) = outcome.decision.as_ref().map(|d| &d.decision) {
                st.denials.push(PermissionDenial {
                    tool_use_id: outcome.id.clone(),
                    tool: outcome.name.clone(),
                    reason: reason.clone(),
                });
            }
            for note in &outcome.notes {
                if let Note::AdditionalContext { text, .. } | Note::HookFeedback { text, .. } = note
                {
                    context.push(ContentBlock::Text {
                        text: format!("[hook, on {} {}] {text}", outcome.name, outcome.id),
                    });
                }
            }
            content.push(ContentBlock::tool_result(
                outcome.id.clone(),
                outcome.output.content.clone(),
                outcome.output.is_error,
            ));
            self.emitter.emit(AgentEvent::ToolResult {
                id: outcome.id.clone(),
                name: outcome.name.clone(),
                content: outcome.output.content.clone(),
                is_error: outcome.output.is_error,
                rewritten_input: (outcome.effective_input != outcome.original_input)
                    .then(|| outcome.effective_input.clone()),
                spilled: outcome.spilled.clone(),
                decision: outcome.decision.clone(),
                notes: outcome.notes.clone(),
            });
        }
        content.extend(context);
        self.history.push(ChatMessage::user_tool_results(content));
    }
}

fn still_cut() -> Stop {
    (
        StopReason::Error,
        format!("the reply was still cut at max_tokens after {MAX_CONTINUES} continuations"),
    )
}

/// The caller cancelled the turn; in crew only the person does (the wall-time limit is told
/// apart in `run_turn`).
fn interrupted() -> Stop {
    (
        StopReason::Interrupted,
        "interrupted by the person".to_string(),
    )
}
