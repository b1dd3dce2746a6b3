//! Which `Work` runs an agent: crew's own agent loop, or a coding-agent CLI that runs its own.

use std::sync::Arc;

use crate::agent_work::{AgentWork, SetupError};
use crate::claude_code::ClaudeCodeWork;
use crate::codex::CodexWork;
use crate::command_work::CommandWork;
use crate::worker::Work;
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
