//! crew's team protocol as an MCP server (`crew mcp --as NAME`, stdio, the `rmcp` SDK).
//!
//! It serves the team tools of NAME's role, the very tools crew's own agents get (see
//! `roles::team_toolset`), and runs each call as NAME through the same store, so the store's
//! refusals (owner-only transitions, unknown recipients, cycles) hold as for any agent. The
//! identity is fixed when the server starts: no call can name another sender. A tool of another
//! role, an unknown tool or an argument naming a sender is a protocol error saying why; bad
//! input and the store's refusals are error results the model reads, as crew's own agents do.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use crate::run::link::{LinkedStore, TeamLink};
use crate::tools::roles::team_toolset;
use crate::tools::{TeamEnv, team_tools};
use crew_config::TeamConfig;
use crew_store::{AgentName, StoreError, Workspace};
use crew_store::{FileStore, USER};
use crew_tools::{ToolContext, ToolRegistry};

/// The server's name in `--mcp-config`: Claude Code calls its tools `mcp__crew__<tool>`.
pub(crate) const SERVER_NAME: &str = "crew";

/// Argument names that would say who is calling: the caller is fixed by `--as`.
const SENDER_FIELDS: &[&str] = &["from", "as", "sender", "me"];

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error(
        "`crew mcp --as {USER}` refused: `{USER}` is the person, who answers from the screen or \
         `crew respond`; an MCP client speaks as an agent of crew.toml"
    )]
    Person,
    #[error("crew mcp --as {0}: {1}")]
    Unknown(String, StoreError),
    #[error("the MCP session on stdio failed: {0}")]
    Session(String),
    #[error("the team tools did not register: {0}")]
    Tools(#[from] crew_tools::registry::RegistryError),
}

/// One agent's team tools over MCP.
#[derive(Clone)]
pub struct TeamMcpServer {
    name: String,
    role: String,
    tools: ToolRegistry,
    /// Every team tool, to tell "not yours" from "no such tool".
    all: Vec<String>,
    ctx: ToolContext,
}

impl TeamMcpServer {
    /// The server for agent `name` of the team in `workspace`; refused for the person and
    /// unknown names.
    pub fn new(
        workspace: Workspace,
        config: &TeamConfig,
        name: &AgentName,
    ) -> Result<Self, McpError> {
        let root = workspace.root().to_path_buf();
        let link = TeamLink::files(FileStore::new(workspace, config.roster()));
        TeamMcpServer::on(link, &root, config, name)
    }

    /// The server for agent `name` of the team in `link`'s store, its tools' files under
    /// `root` (the checkout, or a joined host's clone).
    pub fn on<S: LinkedStore>(
        link: TeamLink<S>,
        root: &Path,
        config: &TeamConfig,
        name: &AgentName,
    ) -> Result<Self, McpError> {
        if *name == USER {
            return Err(McpError::Person);
        }
        config
            .roster()
            .check("agent", name)
            .map_err(|refusal| McpError::Unknown(name.to_string(), refusal.into()))?;
        let role = config.role_of(name).unwrap_or("lead").to_string();
        let env = Arc::new(TeamEnv::of(link, config, name, &role));
        let all = team_tools(Arc::clone(&env))
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        Ok(Self {
            tools: team_toolset(&role, env)?,
            all,
            ctx: ToolContext::new(root, root.join(".crew/tool-results")),
            name: name.to_string(),
            role,
        })
    }

    /// Serves MCP on stdin/stdout until the client closes it.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let session = |e: &dyn std::fmt::Display| McpError::Session(e.to_string());
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| session(&e))?;
        let reason = running.waiting().await.map_err(|e| session(&e))?;
        tracing::info!(?reason, "crew mcp: the client ended the session");
        Ok(())
    }

    /// A protocol error for a call crew refuses before it reaches a tool.
    fn refuse(&self, tool: &str, arguments: &Value) -> Option<ErrorData> {
        let name = &self.name;
        if let Some(field) = SENDER_FIELDS.iter().find(|f| arguments.get(**f).is_some()) {
            return Some(ErrorData::invalid_params(
                format!(
                    "`{field}` refused: this server speaks as {name} (crew mcp --as {name}) and \
                     no call may name another sender"
                ),
                None,
            ));
        }
        if self.tools.get(tool).is_some() {
            return None;
        }
        let role = &self.role;
        let message = if self.all.iter().any(|t| t == tool) {
            format!(
                "`{tool}` is not a tool of {name} (role {role}); its tools are: {}",
                self.tools.names().join(", ")
            )
        } else {
            format!(
                "unknown tool `{tool}`; {name}'s tools are: {}",
                self.tools.names().join(", ")
            )
        };
        Some(ErrorData::invalid_params(message, None))
    }
}

impl ServerHandler for TeamMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "crew's team tools, as {} (role {}): the task graph and the team's inboxes.",
                self.name, self.role
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .definitions()
            .into_iter()
            .map(|def| {
                let schema = match def.input_schema {
                    Value::Object(map) => map,
                    _ => Default::default(),
                };
                Tool::new(def.name, def.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let input = Value::Object(request.arguments.unwrap_or_default());
        if let Some(refusal) = self.refuse(name, &input) {
            tracing::warn!(agent = %self.name, tool = name, "crew mcp refused: {}", refusal.message);
            return Err(refusal);
        }
        let Some(tool) = self.tools.get(name) else {
            return Err(ErrorData::invalid_params(format!("no tool {name}"), None));
        };
        let failed =
            |text: String| Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        // The pipeline's own steps, without hooks and permission: the client asked for the call
        // (Claude Code asks crew's policy first, through its permission prompt).
        if let Some(Err(reason)) = self.tools.check_input(name, &input) {
            return failed(format!("invalid input for {name}: {reason}"));
        }
        let prepared = match tool.prepare(&input) {
            Ok(prepared) => prepared,
            Err(reason) => return failed(format!("invalid input for {name}: {reason}")),
        };
        if let Err(reason) = prepared.validate(&self.ctx) {
            return failed(format!("invalid input for {name}: {reason}"));
        }
        tracing::info!(agent = %self.name, tool = name, "crew mcp call");
        match prepared.call(self.ctx.clone()).await {
            Ok(out) if out.is_error => failed(out.content),
            Ok(out) => Ok(CallToolResult::success(vec![ContentBlock::text(out.content)]).into()),
            Err(e) => failed(e.to_string()),
        }
    }
}

/// Writes the `--mcp-config` file that makes a CLI agent start `exe [STORE] mcp --as NAME` on
/// the team in `root` (`store`: how it reaches the team's store, see
/// `LinkedStore::store_args`), and returns its path (`.crew/mcp/NAME.json`).
pub(crate) fn write_client_config(
    root: &Path,
    name: &str,
    exe: &Path,
    store: &[String],
) -> std::io::Result<PathBuf> {
    let dir = root.join(".crew/mcp");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{name}.json"));
    let mut args: Vec<Value> = vec!["-C".into(), root.display().to_string().into()];
    args.extend(store.iter().map(|a| Value::from(a.as_str())));
    args.extend(["mcp", "--as", name].map(Value::from));
    let config = json!({
        "mcpServers": {
            SERVER_NAME: {
                "type": "stdio",
                "command": exe,
                "args": args,
            }
        }
    });
    let text = serde_json::to_vec_pretty(&config).map_err(std::io::Error::other)?;
    crew_store::atomic::write_atomic(&path, &text)?;
    Ok(path)
}
