//! `crew mcp --as NAME`: the agent's team tools over MCP on stdio. Its stdout is the protocol
//! alone; logs go to `.crew/logs` (started by `Project::find`).

use crate::cli::exit::CliError;
use crate::cli::project::Project;
use crate::team::mcp::TeamMcpServer;

pub fn run(project: Project, name: &str) -> anyhow::Result<()> {
    // A name that is not an agent is the protocol's refusal (exit 3), like `--as` elsewhere.
    let server = TeamMcpServer::new(project.workspace, &project.config, name)
        .map_err(|e| CliError::Refused(e.to_string()))?;
    tracing::info!(agent = name, "crew mcp: serving on stdio");
    // The store waits on file locks off the async threads (`spawn_blocking`); one thread
    // is enough for the protocol itself.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(server.serve_stdio())?;
    Ok(())
}
