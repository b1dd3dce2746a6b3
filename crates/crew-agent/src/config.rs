//! How an agent is set up: who it is, which model and tools it uses, where it works, and the
//! limits that bound every turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crew_model::{ModelProvider, RetryPolicy};
use crew_sandbox::Sandbox;
use crew_tools::Pipeline;

/// Hard gates on one `run_turn`. Normal work should never reach them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Model calls per turn (failed attempts that were recovered do not count).
    pub max_turns: u32,
    /// Tokens (input of every kind plus output) spent per turn.
    pub max_tokens_budget: u64,
    /// Wall-clock time per turn, model calls and tools included.
    pub wall_time: Duration,
    /// `max_tokens` of each model request.
    pub max_output_tokens: u32,
    /// The same tool calls with the same inputs this many times in a row (whatever they
    /// returned) stop the turn; the model is warned one repeat before.
    pub max_repeats: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_tokens_budget: 2_000_000,
            wall_time: Duration::from_secs(30 * 60),
            max_output_tokens: 16_384,
            max_repeats: 3,
        }
    }
}

/// When and how hard the compaction ladder works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionThresholds {
    /// Estimated prompt tokens (bytes / 4) above which the ladder runs before a model call.
    pub compact_at_tokens: u64,
    /// A tool result in the history longer than this (bytes) is spilled by the first step.
    pub spill_result_bytes: usize,
    /// The most recent messages that dropping and folding leave untouched.
    pub keep_recent_messages: usize,
    /// `max_tokens` of the summarising model call (the last step).
    pub summary_max_tokens: u32,
    /// After old turns were folded or summarised away, this many of the files read or written
    /// most recently are put back as they are now…
    pub reattach_files: usize,
    /// …each cut at this many bytes…
    pub reattach_file_bytes: usize,
    /// …and all of them together at this many.
    pub reattach_total_bytes: usize,
    /// After a summary, a small model call checks the agent still knows its task; a failed
    /// check puts back the history as it was before the summary.
    pub probe: bool,
    /// The model's context window in tokens, from the configuration. The server's answer (or
    /// an overflow error naming the window) counts too; the smaller wins, and
    /// `compact_at_tokens`, `summary_max_tokens` and the output limit are lowered to fit it.
    pub context_window: Option<u64>,
}

impl Default for CompactionThresholds {
    fn default() -> Self {
        Self {
            compact_at_tokens: 160_000,
            spill_result_bytes: 20_000,
            keep_recent_messages: 8,
            summary_max_tokens: 4_096,
            reattach_files: 5,
            reattach_file_bytes: 8 * 1024,
            reattach_total_bytes: 32 * 1024,
            probe: true,
            context_window: None,
        }
    }
}

/// Everything `Agent::new` needs.
pub struct AgentConfig {
    /// The agent's name; names its transcript folder.
    pub name: crew_store::AgentName,
    pub role: String,
    /// The provider; the agent wraps it in `crew_model::Retrying` with `retry`.
    pub model: Arc<dyn ModelProvider>,
    /// Model name sent with each request; empty = the provider's configured model.
    pub model_name: String,
    /// Tools, permissions, hooks and prompter.
    pub pipeline: Pipeline,
    /// Where tools work (the agent's worktree).
    pub workspace: PathBuf,
    /// The repository root: `.crew/` lives here, and instruction files are collected up to it.
    pub repo_root: PathBuf,
    pub limits: Limits,
    pub retry: RetryPolicy,
    pub compaction: CompactionThresholds,
    pub sandbox: Sandbox,
}
