//! `crew mcp --as NAME`: the agent's team tools over MCP on stdio. Its stdout is the protocol
//! alone; logs go to `.crew/logs` (started by `Project::find`).

use crate::cli::exit::CliError;
use crate::cli::project::Project;
use crew_store::AgentName;
use crew_team::tools::mcp::TeamMcpServer;
use crew_tools::orphans::OWNER_ENV;

pub fn run(project: Project, name: &AgentName) -> anyhow::Result<()> {
    check_owner(&project, name)?;
    // A name that is not an agent is the protocol's refusal (exit 3), like `--as` elsewhere.
    let server = TeamMcpServer::new(project.workspace, &project.config, name)
        .map_err(|e| CliError::Refused(e.to_string()))?;
    tracing::info!(agent = name.as_str(), "crew mcp: serving on stdio");
    // The store waits on file locks off the async threads (`spawn_blocking`); one thread
    // is enough for the protocol itself.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(server.serve_stdio())?;
    Ok(())
}

/// A `crew mcp` started under an agent (its CLI, or a command of its tools, carries the owner
/// mark of the agent's process) may speak only as that agent: one whose status names the
/// marked process. So a CLI agent gets its own tools, and no agent becomes another (invariant 5).
fn check_owner(project: &Project, name: &AgentName) -> Result<(), CliError> {
    let Some(owner) = std::env::var_os(OWNER_ENV) else {
        return Ok(());
    };
    let owner = owner.to_string_lossy();
    let owner_pid = owner
        .split_once(':')
        .and_then(|(pid, _)| pid.parse::<u32>().ok());
    let status = project.workspace.agents().read(name).ok().flatten();
    if owner_pid.is_some() && owner_pid == status.map(|s| s.pid) {
        return Ok(());
    }
    Err(CliError::Refused(format!(
        "`crew mcp --as {name}` was started by a process of another agent ({OWNER_ENV}={owner}); \
         an agent's MCP server speaks only as that agent"
    )))
}
