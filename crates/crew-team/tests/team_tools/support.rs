//! A temporary team: lead, alice (implementer), bob (reviewer), carol (explorer).

use std::sync::Arc;
use std::time::Duration;

use crew_store::{AgentName, Entry, FileStore, Message, Roster, Teammate, Workspace};
use crew_team::run::link::TeamLink;
use crew_team::tools::TeamEnv;
use crew_tools::schema::InputSchema;
use crew_tools::{Tool, ToolContext, ToolJson, ToolOutput};
use serde_json::Value;

pub struct Team {
    pub dir: tempfile::TempDir,
    pub workspace: Workspace,
}

impl Team {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path());
        Team { dir, workspace }
    }

    pub fn env(&self, me: &str) -> Arc<TeamEnv> {
        let role = match me {
            "lead" => "lead",
            "alice" => "implementer",
            "bob" => "reviewer",
            _ => "explorer",
        };
        let roster = Roster::new(["lead", "alice", "bob", "carol"].map(name));
        Arc::new(TeamEnv {
            link: TeamLink::files(FileStore::new(self.workspace.clone(), roster.clone())),
            roster,
            me: name(me),
            role: role.to_string(),
            lead: name("lead"),
            teammates: [
                ("alice", "implementer"),
                ("bob", "reviewer"),
                ("carol", "explorer"),
            ]
            .map(|(n, r)| Teammate {
                name: name(n),
                role: Some(r.to_string()),
            })
            .to_vec(),
            writes: false,
            request_timeout: Duration::from_secs(600),
        })
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext::new(self.dir.path(), self.dir.path().join(".crew/tool-results"))
    }

    /// Every message in `name`'s inbox.
    pub fn inbox(&self, name: &str) -> Vec<Message> {
        self.workspace
            .mailboxes()
            .read_from(&self::name(name), 0)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| match e {
                Entry::Message { message, .. } => message,
                Entry::Broken { raw, .. } => panic!("broken line {raw}"),
            })
            .collect()
    }
}

/// An agent's name, checked.
pub fn name(raw: &str) -> AgentName {
    raw.parse().unwrap()
}

/// Runs a call the way the pipeline does (schema, validate, call), keeping each refusal's text
/// as is: a schema or validation problem and a call error all become error outputs.
pub async fn run(tool: &dyn Tool, input: Value, ctx: &ToolContext) -> ToolOutput {
    let schema = InputSchema::compile(&tool.input_schema()).unwrap();
    if let Err(problems) = schema.check(&input) {
        return ToolOutput::error(problems);
    }
    if let Err(reason) = tool.validate_json(&input, ctx) {
        return ToolOutput::error(reason);
    }
    tool.call_json(&input, ctx.clone())
        .await
        .unwrap_or_else(|e| ToolOutput::error(e.to_string()))
}

/// A successful call's JSON.
pub async fn ok_json(tool: &dyn Tool, input: Value, ctx: &ToolContext) -> Value {
    let out = run(tool, input, ctx).await;
    assert!(!out.is_error, "unexpected error: {}", out.content);
    serde_json::from_str(&out.content).unwrap()
}

/// A refused call's text.
pub async fn refusal(tool: &dyn Tool, input: Value, ctx: &ToolContext) -> String {
    let out = run(tool, input, ctx).await;
    assert!(out.is_error, "expected a refusal, got: {}", out.content);
    out.content
}
