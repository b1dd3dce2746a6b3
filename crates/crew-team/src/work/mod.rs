//! What runs an agent's jobs: crew's own agent loop (`agent`), or a coding-agent CLI that runs
//! its own (`claude_code`, `codex`, any `command`); `work_for` picks one by the model's provider.

pub mod agent;
pub mod claude_code;
mod cli_agent;
mod cli_process;
pub mod codex;
pub mod command;
pub mod role_prompt;
mod task_branch;

use std::sync::Arc;

use crate::run::worker::Work;
use crate::work::agent::{AgentWork, SetupError};
use crate::work::claude_code::ClaudeCodeWork;
use crate::work::codex::CodexWork;
use crate::work::command::CommandWork;
use crew_config::TeamConfig;
use crew_store::Workspace;

/// The work of agent `name`, by its model's provider.
pub fn work_for(
    workspace: Workspace,
    config: Arc<TeamConfig>,
    name: &str,
    bypass: bool,
) -> Result<Box<dyn Work + Send>, SetupError> {
    let provider = config.agent(name).map(|a| a.model.provider.as_str());
    Ok(match provider {
        Some("claude-code") => Box::new(ClaudeCodeWork::new(workspace, config, name, bypass)?),
        Some("command") => Box::new(CommandWork::new(workspace, config, name)?),
        Some("codex") => Box::new(CodexWork::new(workspace, config, name, bypass)?),
        _ => Box::new(AgentWork::new(workspace, config, name, bypass)?),
    })
}
