//! `crew mcp --as NAME`: the agent's team tools over MCP on stdio. Its stdout is the protocol
//! alone; logs go to `.crew/logs` (started by `Project::find`). On PostgreSQL
//! (`crew --store ROLE_URL mcp --as NAME`, what a CLI agent's worker there configures) the same
//! server works on the store: [`on_store`].

use crate::cli::exit::CliError;
use crate::cli::project::Project;
use crew_store::AgentName;
use crew_team::tools::mcp::TeamMcpServer;
use crew_tools::orphans::OWNER_ENV;

pub fn run(project: Project, name: &AgentName) -> anyhow::Result<()> {
    let status = project.workspace.agents().read(name).ok().flatten();
    check_owner(name, status.map(|s| s.pid))?;
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
/// `pid`: the process `name`'s status names (its worker's), on whichever store the team is.
pub(crate) fn check_owner(name: &AgentName, pid: Option<u32>) -> Result<(), CliError> {
    let Some(owner) = std::env::var_os(OWNER_ENV) else {
        return Ok(());
    };
    let owner = owner.to_string_lossy();
    let owner_pid = owner
        .split_once(':')
        .and_then(|(pid, _)| pid.parse::<u32>().ok());
    if owner_pid.is_some() && owner_pid == pid {
        return Ok(());
    }
    Err(CliError::Refused(format!(
        "`crew mcp --as {name}` was started by a process of another agent ({OWNER_ENV}={owner}); \
         an agent's MCP server speaks only as that agent"
    )))
}

/// `crew --store ROLE_URL mcp --as NAME`: the team tools of `name` on the team in the store at
/// `url` (the agent's own role, its password read as its worker read it), files under `root`
/// (the folder the CLI runs crew in: the checkout or a joined host's clone).
pub fn on_store(url: &str, name: &AgentName, root: &std::path::Path) -> anyhow::Result<()> {
    // The store's connections run on this runtime's threads while a tool call, on the
    // protocol's own thread, waits for them.
    let (runtime, store, config) = crate::cli::on_store::reach_team(url)?;
    let status = runtime.block_on(store.agent_status(name))?;
    check_owner(name, status.map(|s| s.pid))?;
    let link = crew_team::run::link::TeamLink::postgres(store, runtime.handle().clone());
    let server = TeamMcpServer::on(link, root, &config, name)
        .map_err(|e| CliError::Refused(e.to_string()))?;
    tracing::info!(
        agent = name.as_str(),
        "crew mcp: serving on stdio, on the store"
    );
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(server.serve_stdio())?;
    Ok(())
}
