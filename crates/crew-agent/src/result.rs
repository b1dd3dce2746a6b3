//! What one turn returns: a structured, serialisable record, whatever happened.

use serde::{Deserialize, Serialize};

use crew_model::Usage;

/// Why the agent stopped (distinct from the model's own stop reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished with a final answer.
    Completed,
    MaxTurnsReached,
    /// The token budget or the wall-time limit was used up.
    MaxBudgetReached,
    /// The caller cancelled the turn.
    Interrupted,
    /// An unrecoverable model error, or a recovery path ran out of attempts.
    Error,
    /// The same tool calls kept producing the same results.
    RepeatedAction,
    /// A hook said `continue: false`, or a UserPromptSubmit hook blocked the input.
    HookStopped,
}

/// A tool call the permission step refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDenial {
    pub tool_use_id: String,
    pub tool: String,
    pub reason: String,
}

/// A tool call made during the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolUseRecord {
    pub id: String,
    pub name: String,
    pub is_error: bool,
}

/// The outcome of `Agent::run_turn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    pub input: String,
    /// The final answer: assistant text after the last tool calls.
    pub output: String,
    pub tools_used: Vec<ToolUseRecord>,
    pub permission_denials: Vec<PermissionDenial>,
    pub usage: Usage,
    pub stop_reason: StopReason,
    /// Model calls made (recovered failures not counted).
    pub turns: u32,
    /// Why it stopped, for a person.
    pub reason: String,
    /// Fingerprint of the cacheable prompt prefix at the end of the turn.
    pub prefix_fingerprint: String,
}
