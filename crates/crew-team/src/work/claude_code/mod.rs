//! Claude Code as a teammate (`model = { provider = "claude-code", … }`).
//!
//! The CLI runs its own agent loop and tools, so it replaces crew's agent loop, not crew's model:
//! it is a [`CliAgent`] (its work a `CliWork`, next to `AgentWork`), and the worker around it
//! claims, reports and releases tasks as for any teammate. One long-lived `claude -p`
//! stream-json process per conversation runs in the teammate's worktree; each job (a task or a
//! message) is one user line on its stdin and ends at the CLI's `result`. Each `can_use_tool`
//! request is decided by crew's policy, and what it would ask goes to the person as a crew
//! `permission_request` through the lead's inbox (the approvals pane, `crew respond`, or the
//! headless policy). The CLI's events become crew transcript events. A CLI that cannot start,
//! speaks another version, prints a line that is not JSON or dies ends the job as failed with the
//! reason; the next job starts a new process, which resumes the CLI's session (also after the
//! worker restarts) unless it is a new task, which starts a new conversation.

pub(crate) mod permission;
mod stream;

use std::collections::VecDeque;
use std::path::Path;

use serde_json::json;

use crew_store::message::new_id;

use crate::run::link::LinkedStore;
use crate::tools::mcp;
use crate::work::cli_agent::{self, CliAgent, CliTeammate, PermissionGate, Turn, TurnEnding};
use crate::work::cli_process::{CliProcess, Line, StdinClosed};
use crate::work::{SetupError, role_prompt};
use crew_tools::SandboxMode;
use permission::{BashConfinement, CrewView, control_response, unsupported};
use stream::Translator;

/// The major version whose protocol crew speaks (recorded from Claude Code 2.1.197).
const SUPPORTED_MAJOR: &str = "2";

/// Whether crew speaks the protocol of this Claude Code version (`2.1.197`).
pub fn version_supported(version: &str) -> bool {
    version.split('.').next() == Some(SUPPORTED_MAJOR)
}

/// How the role's instructions name crew's team tools for a CLI that sees them through MCP.
const MCP_NOTE: &str = "crew's team tools named above (task_create, task_list, send_message, …) \
     are your MCP tools `mcp__crew__<name>` (e.g. `mcp__crew__task_create`); `mcp__crew__read_inbox` \
     shows your inbox. They act as you; crew checks every call as for any agent of the team.";

/// How often a turn waiting on the CLI looks whether the person interrupted it.
const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// How long a permission request waits for the end of the reply that made the call (the CLI
/// may ask before the reply's last stream events), so the transcript keeps the order of events
/// and the call's whole usage.
const REPLY_END_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaudeError {
    #[error(
        "cannot start Claude Code `{bin}`: {source} (install it, or set `bin = \"/path/to/claude\"` in the agent's model)"
    )]
    Start { bin: String, source: std::io::Error },
    #[error("Claude Code stopped reading its input")]
    StdinClosed(#[from] StdinClosed),
    #[error(
        "Claude Code {0} is not supported: crew speaks the stream-json protocol of Claude Code {SUPPORTED_MAJOR}.x"
    )]
    Version(String),
    #[error("Claude Code printed a line that is not JSON, so the conversation was ended: {0}")]
    NotJson(String),
    #[error("Claude Code exited mid-turn ({0})")]
    Died(String),
    #[error("crew mcp not set up: {0}")]
    McpSetup(std::io::Error),
}

/// The flags that make `claude` a two-way stream-json peer that asks crew before each tool.
pub(crate) const PROTOCOL_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    // The reply's raw stream too, so its words reach the pane as they come.
    "--include-partial-messages",
    "--permission-prompt-tool",
    "stdio",
];

/// Claude Code reads the person's own settings only: the worktree's `.claude/settings*.json`
/// are the agent's to write, and could allow what crew's policy asks about, add hooks that run
/// unconfined, or switch crew's own hook off.
pub const PERSONS_SETTINGS_ONLY: &[&str] = &["--setting-sources", "user"];

/// The live conversation's process and what spans its turns.
pub(crate) struct Session {
    process: CliProcess,
    translator: Translator,
    /// The CLI's `total_cost_usd` at the end of the last turn (it counts the whole session).
    cost_so_far: f64,
    /// Whether the process has said `init` (so a session id it was given worked).
    initialised: bool,
    /// Where its Bash commands are confined (`None`: they cannot be here, and ask).
    confinement: Option<BashConfinement>,
}

/// Claude Code for one teammate: its extra arguments and the role's instructions.
pub(crate) struct ClaudeCode {
    args: Vec<String>,
    /// The role's instructions, appended to the CLI's own system prompt.
    instructions: String,
}

impl ClaudeCode {
    /// What crew adds to the CLI's arguments: its team tools as the MCP server `crew`
    /// (`crew mcp --as NAME`, this very binary) and the role's instructions.
    fn crew_args<S: LinkedStore>(&self, seat: &CliTeammate<S>) -> std::io::Result<Vec<String>> {
        let exe = std::env::current_exe()?;
        let store = seat.link.store().store_args();
        let config = mcp::write_client_config(&seat.root, &seat.name, &exe, &store)?;
        Ok(vec![
            "--mcp-config".to_string(),
            config.display().to_string(),
            "--append-system-prompt".to_string(),
            self.instructions.clone(),
        ])
    }
}

impl CliAgent for ClaudeCode {
    const BIN: &'static str = "claude";
    type Session = Session;
    type Error = ClaudeError;

    /// The CLI's session id.
    fn conversation_file<S: LinkedStore>(seat: &CliTeammate<S>) -> std::path::PathBuf {
        seat.id_file("claude-code", "session")
    }

    fn new<S: LinkedStore>(seat: &CliTeammate<S>) -> Result<Self, SetupError> {
        let mut args = Vec::new();
        if let Some(model) = &seat.model.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        args.extend(seat.model.args.iter().cloned());
        let root = &seat.root;
        role_prompt::check(&seat.config, root)?;
        let instructions = format!(
            "{}\n\n{MCP_NOTE}",
            role_prompt::assemble(
                &seat.role,
                &role_prompt::duties(&seat.config, root, &seat.role)?
            )
        );
        Ok(Self { args, instructions })
    }

    fn start<S: LinkedStore>(
        &self,
        seat: &CliTeammate<S>,
        workdir: &Path,
    ) -> Result<Session, ClaudeError> {
        let mut args: Vec<String> = PROTOCOL_ARGS
            .iter()
            .chain(PERSONS_SETTINGS_ONLY)
            .map(|a| a.to_string())
            .collect();
        args.extend(self.crew_args(seat).map_err(ClaudeError::McpSetup)?);
        args.extend(self.args.iter().cloned());
        if let Some(id) = cli_agent::saved_id(&Self::conversation_file(seat)) {
            args.extend(["--resume".to_string(), id]);
        }
        let process = CliProcess::spawn(
            &seat.bin,
            &args,
            workdir,
            &cli_agent::credentials(&["ANTHROPIC_", "CLAUDE_"]),
        )
        .map_err(|source| ClaudeError::Start {
            bin: seat.bin.clone(),
            source,
        })?;
        let confinement = seat
            .config
            .agent(seat.name.as_str())
            .and_then(|entry| BashConfinement::new(seat.config.sandbox_for(entry)));
        Ok(Session {
            process,
            translator: Translator::default(),
            cost_so_far: 0.0,
            initialised: false,
            confinement,
        })
    }

    /// One turn: the input as a user line, then the CLI's events until its `result`. When the
    /// person interrupts, the CLI is sent its own `interrupt` request and the turn ends with the
    /// `result` that follows.
    fn turn<S: LinkedStore>(
        &self,
        session: &mut Session,
        turn: &Turn<'_, S>,
    ) -> Result<TurnEnding, ClaudeError> {
        let session_file = Self::conversation_file(turn.seat);
        let sent = session.process.send(&json!({
            "type": "user",
            "message": {"role": "user", "content": turn.input},
        }));
        if sent.is_err() {
            // Gone while idle: say why, as for a death mid-turn.
            return Err(ClaudeError::Died(session.process.death()));
        }
        let mut interrupted = false;
        // Lines read ahead while a permission request waited for its reply's end.
        let mut backlog = VecDeque::new();
        loop {
            let Some(line) = backlog
                .pop_front()
                .or_else(|| session.process.next_within(INTERRUPT_POLL))
            else {
                if turn.cancel.is_cancelled() && !interrupted {
                    interrupted = true;
                    session.translator.interrupt();
                    session.process.send(&json!({
                        "type": "control_request",
                        "request_id": new_id("req_int"),
                        "request": {"subtype": "interrupt"},
                    }))?;
                }
                continue;
            };
            let line = match line {
                Line::Json(line) => line,
                Line::NotJson(text) => return Err(ClaudeError::NotJson(text)),
                Line::Closed => return Err(ClaudeError::Died(session.process.death())),
            };
            match line["type"].as_str() {
                Some("system") if line["subtype"] == "init" => {
                    let version = line["claude_code_version"].as_str().unwrap_or("(unnamed)");
                    if !version_supported(version) {
                        return Err(ClaudeError::Version(version.to_string()));
                    }
                    session.initialised = true;
                    if let Some(id) = line["session_id"].as_str() {
                        cli_agent::save_id(&session_file, id);
                    }
                }
                Some("assistant" | "user" | "stream_event") => {
                    for event in session.translator.events(&line) {
                        turn.gate.emitter.emit(event);
                    }
                }
                Some("control_request") => {
                    let request_id = line["request_id"].as_str().unwrap_or_default();
                    let request = &line["request"];
                    let reply = match request["subtype"].as_str().unwrap_or_default() {
                        "can_use_tool" => {
                            finish_reply(session, turn, &mut backlog);
                            let tool = request["tool_name"].as_str().unwrap_or_default();
                            let input = &request["input"];
                            let view = CrewView::of(tool, input);
                            let purpose = input["description"].as_str().or_else(|| {
                                let id = request["tool_use_id"].as_str().unwrap_or_default();
                                session.translator.words_before(id)
                            });
                            let confined = session
                                .confinement
                                .as_ref()
                                .and_then(|c| c.wrap(tool, input, turn.gate.workdir));
                            let gate = PermissionGate {
                                // A command crew confines is no longer one the CLI runs
                                // outside crew's sandbox: what the mode allows, runs.
                                sandbox: if confined.is_some() {
                                    SandboxMode::Off
                                } else {
                                    turn.gate.sandbox
                                },
                                ..turn.gate
                            };
                            let verdict = gate.decide(
                                view,
                                &permission::shown_input(tool, input, turn.gate.workdir),
                                purpose.map(str::to_string),
                            );
                            control_response(
                                request_id,
                                confined.as_ref().unwrap_or(input),
                                verdict.as_ref().map(|_| ()).map_err(String::as_str),
                            )
                        }
                        other => unsupported(request_id, other),
                    };
                    session.process.send(&reply)?;
                }
                Some("result") => {
                    let (events, end) = session.translator.finish(&line);
                    for event in events {
                        turn.gate.emitter.emit(event);
                    }
                    let cost_micros = end.total_cost_usd.map(|total| {
                        let spent = (total - session.cost_so_far).max(0.0);
                        session.cost_so_far = total;
                        crew_model::types::micros_of_dollars(spent)
                    });
                    return Ok(TurnEnding {
                        success: end.success,
                        interrupted,
                        text: end.text,
                        turns: end.turns,
                        usage: end.usage,
                        cost_micros,
                    });
                }
                // Status, subagent progress, acknowledgements: nothing crew shows.
                _ => {}
            }
        }
    }

    /// A process that died before `init` may have been refused the session it was to resume:
    /// the next one starts a new conversation instead of failing the same way.
    fn broken<S: LinkedStore>(&self, seat: &CliTeammate<S>, session: &Session) {
        if !session.initialised
            && let Err(e) = std::fs::remove_file(Self::conversation_file(seat))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(
                "{}: stale Claude Code session not forgotten: {e}",
                seat.name
            );
        }
    }
}

/// Before a permission request: the stream events of the reply that made the call, read ahead
/// (within [`REPLY_END_WAIT`]) to its end; other lines wait in `backlog` for their turn.
fn finish_reply<S: LinkedStore>(
    session: &mut Session,
    turn: &Turn<'_, S>,
    backlog: &mut VecDeque<Line>,
) {
    let deadline = std::time::Instant::now() + REPLY_END_WAIT;
    while session.translator.replying() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        let Some(line) = session.process.next_within(left.min(INTERRUPT_POLL)) else {
            continue;
        };
        let Line::Json(value) = &line else {
            backlog.push_back(line);
            return;
        };
        match (value["type"].as_str(), value["subtype"].as_str()) {
            (Some("stream_event" | "assistant"), _) => {
                for event in session.translator.events(value) {
                    turn.gate.emitter.emit(event);
                }
            }
            // Status and token estimates: nothing crew shows (as in the turn).
            (Some("system"), Some(subtype)) if subtype != "init" => {}
            _ => {
                backlog.push_back(line);
                return;
            }
        }
    }
}
