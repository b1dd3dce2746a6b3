//! Events the loop streams out while it works. The loop never prints; a sink decides what to
//! do with them (the screen, a channel, a test). Every event also goes to the transcript.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::result::{StopReason, TurnResult};
use crate::subagent::{SubagentContext, SubagentRole};
use crew_model::{self, Usage};
use crew_tools::{HookEvent, Note, PermissionOutcome};

/// A rung of the compaction ladder, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStep {
    /// Oversized tool results written to `.crew/tool-results/`, preview kept.
    Spill,
    /// Old tool results' payloads replaced by a marker, call/result pairs kept.
    DropStale,
    /// Old turns folded into one deterministic record.
    Fold,
    /// Old turns summarised by the model.
    Summarise,
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The estimate was over the threshold before a call.
    Proactive,
    /// The provider said the prompt is too long.
    Reactive,
}

/// A recovery path the loop took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryKind {
    /// Prompt too long: compacted, retrying once.
    PromptTooLong,
    /// Output cut at `max_tokens`: asking the model to continue.
    MaxTokens,
    /// The stream broke mid-way: the partial reply was discarded, retrying.
    StreamError,
    /// The model call failed before any of the reply came (rate limit, overload, 5xx,
    /// connection): retrying after a wait.
    ModelRetry,
    /// A Stop hook asked the model to carry on.
    StopHook,
    /// The reply was empty (no text, no call): asking the model to answer.
    EmptyReply,
    /// The same calls with the same input again: the model was told the next repeat stops it.
    RepeatedCall,
}

/// One thing that happened in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    TurnStart {
        /// 1-based count of turns in this session.
        turn: u64,
        input: String,
        prefix_fingerprint: String,
    },
    /// A model call's reply has begun (`call` counts calls in this turn, from 1).
    MessageStart {
        call: u32,
    },
    MessageDelta {
        text: String,
    },
    /// A thinking or redacted-thinking block of the reply, whole (signature included).
    Thinking {
        block: crew_model::ContentBlock,
    },
    /// The provider handed the calls over to a fallback model.
    ModelFallback {
        from: String,
        to: String,
        reason: String,
    },
    /// The reply is complete and entered the history.
    MessageStop {
        stop_reason: crew_model::FinishReason,
        usage: Usage,
    },
    /// The model asked for a tool; `early` when it started before the reply ended.
    ToolUse {
        id: String,
        name: String,
        input: Value,
        early: bool,
    },
    ToolResult {
        id: String,
        name: String,
        content: String,
        is_error: bool,
        /// What the tool received when a hook rewrote the model's input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewritten_input: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spilled: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<PermissionOutcome>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<Note>,
    },
    PermissionAsked {
        tool: String,
        input: Value,
        reason: String,
    },
    /// A permission request was sent and the agent is blocked on a person (WAITING).
    PermissionWaiting {
        request_id: crew_store::RequestId,
        to: crew_store::AgentName,
    },
    PermissionAnswered {
        tool: String,
        allowed: bool,
        detail: String,
    },
    Compaction {
        step: CompactionStep,
        trigger: CompactionTrigger,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// After a summary: what the agent said it is working on, and whether that named its goal
    /// (`expected`: the goal's words it was checked against). Failed: the summary was undone.
    CompactionProbe {
        passed: bool,
        answer: String,
        expected: Vec<String>,
    },
    Recovery {
        kind: RecoveryKind,
        attempt: u32,
        reason: String,
    },
    /// What hooks outside a tool call said for the person (context, messages, warnings).
    HookNotes {
        event: HookEvent,
        notes: Vec<Note>,
    },
    TurnEnd {
        result: TurnResult,
    },
    /// A subagent started (its own events are in `transcript`).
    SubagentStart {
        /// `sub<n>`, unique in this session.
        id: String,
        role: SubagentRole,
        context: SubagentContext,
        description: String,
        transcript: PathBuf,
    },
    /// The subagent called a tool.
    SubagentTool {
        id: String,
        tool: String,
    },
    /// The subagent ended; only its report went back to the model.
    SubagentEnd {
        id: String,
        stop_reason: StopReason,
        /// Its model calls.
        calls: u32,
        usage: Usage,
        /// A verify subagent's verdict as shown (`pass`, `fail`, `partial`, `no verdict`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verdict: Option<String>,
    },
}

/// Where events go. Cheap to clone; emitting never blocks.
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(AgentEvent) + Send + Sync>);

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

impl EventSink {
    pub fn new(f: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// A sink feeding an unbounded channel (a closed receiver just drops events).
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = Self::new(move |event| {
            // Nobody listening any more is not the loop's problem.
            let _ = tx.send(event);
        });
        (sink, rx)
    }

    /// A sink that drops everything (the transcript still records it all).
    pub fn discard() -> Self {
        Self::new(|_| {})
    }

    pub fn emit(&self, event: AgentEvent) {
        (self.0)(event)
    }
}
