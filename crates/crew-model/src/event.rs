//! What a provider's stream yields while a reply arrives.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{ContentBlock, FinishReason, Usage};

/// One step of a streamed reply, in order: `MessageStart`, then text deltas and complete tool
/// calls interleaved as the model produces them, `Usage` snapshots, and finally `Stop`.
/// A stream that ends without `Stop` (or with an error) is an incomplete reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StreamEvent {
    /// The reply has begun.
    MessageStart,
    /// More text of the reply.
    TextDelta(String),
    /// A tool call whose input is complete; emitted before the stream ends so a safe tool can
    /// start early.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool call the model wrote that cannot run as written (no name, arguments that are
    /// not a JSON object, cut off by the output limit): it enters the history with `input`
    /// (the raw arguments as a JSON string) and is answered with `problem` as a tool error.
    BadToolUse {
        id: String,
        name: String,
        input: Value,
        problem: String,
    },
    /// A complete thinking or redacted-thinking block, in its place among the reply's blocks.
    Thinking(ContentBlock),
    /// The attempt so far is void: discard what this reply streamed (no tool call had come),
    /// it is being sent again after `reason`.
    Restart { attempt: u32, reason: String },
    /// From here on `to` answers instead of `from`, which kept being overloaded.
    Fallback {
        from: String,
        to: String,
        reason: String,
    },
    /// Running usage totals for this reply so far (a snapshot, not an increment).
    Usage(Usage),
    /// The reply is complete; `usage` is the final total for this reply.
    Stop { reason: FinishReason, usage: Usage },
}
