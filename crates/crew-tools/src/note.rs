//! Side information a tool call produces for the agent loop besides the result itself.

use serde::{Deserialize, Serialize};

use crate::hooks::HookEvent;
use crew_store::MemoryDraft;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Note {
    /// A hook's `additionalContext`: text for the model's next turn.
    AdditionalContext { event: HookEvent, text: String },
    /// A hook's `systemMessage`: text for the person watching.
    SystemMessage { event: HookEvent, text: String },
    /// A PostToolUse hook's `decision: "block"` reason: feedback for the model.
    HookFeedback { event: HookEvent, text: String },
    /// Something the person should know (e.g. the sandbox fell back).
    Warning { text: String },
    /// A `Stop` / `PostToolUseFailure` hook's `memory`: kept by the agent (see
    /// `tools::memory::keep_hook_memories`), which replaces this note by what happened.
    Remember {
        event: HookEvent,
        memory: MemoryDraft,
    },
}
