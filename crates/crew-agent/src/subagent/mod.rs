//! Subagents: the `agent` tool starts another agent in the same process for a bounded piece of
//! work (explore the code, verify a change, or anything else) and returns only its final
//! report. It starts fresh (its own short prompt, the role's tools) or as a fork of the caller
//! (the caller's prompt, tools and conversation byte for byte, so the provider's prompt cache
//! is shared). Its events go to a side transcript next to the caller's. It works under the
//! caller's permission policy, never with more tools than the caller has, and cannot start
//! subagents itself.

mod fork;
pub(crate) mod run;
mod tool;

use std::num::NonZeroU32;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crew_tools::memory::{MemoryForgetTool, MemoryWriteTool};
use crew_tools::todo::TodoWriteTool;
use crew_tools::{Tool, ToolKind, TypedTool};

pub use fork::FORK_PLACEHOLDER;
pub(crate) use fork::SubagentLink;
pub use tool::{AgentInput, AgentTool};

/// The name the model calls the tool by.
pub const AGENT_TOOL: &str = "agent";

/// What a subagent is for; decides its tools and its instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubagentRole {
    /// Looks things up: read-only tools only, whatever the caller may do.
    Explore,
    /// Runs checks (reads and commands) and must end with `VERDICT: PASS|FAIL|PARTIAL`.
    Verify,
    /// The caller's tools that read, write or run commands (not `agent`, nor the team's task,
    /// message and approval tools, which act for the caller).
    General,
}

impl SubagentRole {
    pub const ALL: [SubagentRole; 3] = [Self::Explore, Self::Verify, Self::General];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explore => "explore",
            Self::Verify => "verify",
            Self::General => "general",
        }
    }

    /// Whether a subagent of this role may use `tool` (one the caller has).
    pub fn allows(self, tool: &dyn Tool) -> bool {
        if tool.name() == AGENT_TOOL {
            return false;
        }
        // Read-kind by permission (no mode guards them), but they change what the caller and
        // later conversations know: an explore or verify subagent only looks.
        let keeps_state = [
            MemoryWriteTool::NAME,
            MemoryForgetTool::NAME,
            TodoWriteTool::NAME,
        ]
        .contains(&tool.name());
        match self {
            Self::Explore => tool.kind() == ToolKind::Read && !keeps_state,
            Self::Verify => matches!(tool.kind(), ToolKind::Read | ToolKind::Exec) && !keeps_state,
            Self::General => tool.kind() != ToolKind::Other,
        }
    }

    /// What the subagent is told about its job, besides the caller's prompt.
    pub fn instructions(self) -> &'static str {
        match self {
            Self::Explore => {
                "You are an explore subagent: find things out with read-only tools and report \
                 what you found, with file paths and line numbers. You cannot change anything."
            }
            Self::Verify => {
                "You are a verify subagent: check the claim you are given by reading the code \
                 and running the relevant checks. Show each command you ran as `$ command` with \
                 what it printed, and end your report with one line `VERDICT: PASS`, \
                 `VERDICT: FAIL` or `VERDICT: PARTIAL`."
            }
            Self::General => {
                "You are a subagent doing one piece of work for the agent that started you."
            }
        }
    }
}

impl std::fmt::Display for SubagentRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a subagent starts from nothing or from the caller's conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubagentContext {
    /// Its own short prompt and the prompt it is given: cheap, knows only what it is told.
    #[default]
    Fresh,
    /// The caller's prompt and conversation so far, reused byte for byte (a cache hit).
    Fork,
}

/// `[subagents]` in `crew.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentSettings {
    /// Offer the `agent` tool at all.
    pub enabled: bool,
    /// Model calls one subagent may make before it must stop.
    pub max_turns: NonZeroU32,
    /// The roles the `agent` tool offers.
    pub roles: Vec<SubagentRole>,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_turns: NonZeroU32::MIN.saturating_add(19), // 20
            roles: SubagentRole::ALL.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_tools::memory::memory_tools;
    use crew_tools::todo::todo_tools;

    #[test]
    fn looking_subagents_may_read_memories_and_todos_but_not_change_them() {
        let tools: Vec<_> = memory_tools().into_iter().chain(todo_tools()).collect();
        let allowed = |role: SubagentRole| -> Vec<String> {
            tools
                .iter()
                .filter(|t| role.allows(t.as_ref()))
                .map(|t| t.name().to_string())
                .collect()
        };
        for role in [SubagentRole::Explore, SubagentRole::Verify] {
            assert_eq!(allowed(role), ["memory_read", "todo_read"], "{role:?}");
        }
        assert_eq!(allowed(SubagentRole::General).len(), tools.len());
    }
}
