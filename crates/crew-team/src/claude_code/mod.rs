//! Claude Code as a teammate (`model = { provider = "claude-code", … }`).
//!
//! The CLI runs its own agent loop and tools, so it replaces crew's agent loop, not crew's model:
//! it is a [`Work`], next to `AgentWork`, and the worker around it claims, reports and releases
//! tasks as for any teammate. One long-lived `claude -p` stream-json process per conversation
//! runs in the teammate's worktree; each job (a task or a message) is one user line on its stdin
//! and ends at the CLI's `result`. Each `can_use_tool` request is decided by crew's policy, and
//! what it would ask goes to the person as a crew `permission_request` through the lead's inbox
//! (the approvals pane, `crew respond`, or the headless policy). The CLI's events become crew
//! transcript events. A CLI that cannot start, speaks another version, prints a line that is not
//! JSON or dies ends the job as failed with the reason; the next job starts a new process, which
//! resumes the CLI's session (also after the worker restarts).

pub(crate) mod permission;
mod stream;

use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use serde_json::{Value, json};

use crate::agent_work::{SetupError, person_prompter, status_sink, task_packet};
use crate::status::StatusHandle;
use crate::worker::{Job, JobOutcome, Work};
use crate::{mcp, role_prompt};
use crew_agent::emitter::Emitter;
use crew_agent::transcript::{TranscriptWriter, transcript_path};
use crew_agent::{AgentEvent, EventSink, MailboxPrompter};
use crew_config::TeamConfig;
use crew_store::message::new_id;
use crew_store::{Task, Workspace};
use crew_tools::{
    Decision, PermissionAnswer, PermissionAsk, PermissionPolicy, Prompter, SandboxMode, ToolKind,
};

use crate::cli_agent::{self, CliTeammate, TurnEnding};
use crate::cli_process::{CliProcess, Line, StdinClosed};
use permission::{CrewView, control_response, unsupported};
use stream::{Translator, TurnEnd};

/// The major version whose protocol crew speaks (recorded from Claude Code 2.1.197).
const SUPPORTED_MAJOR: &str = "2";

/// How the role's instructions name crew's team tools for a CLI that sees them through MCP.
const MCP_NOTE: &str = "crew's team tools named above (task_create, task_list, send_message, …) \
     are your MCP tools `mcp__crew__<name>` (e.g. `mcp__crew__task_create`); `mcp__crew__read_inbox` \
     shows your inbox. They act as you; crew checks every call as for any agent of the team.";

/// How often a turn waiting on the CLI looks whether the person interrupted it.
const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum ClaudeError {
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
    #[error("Claude Code was not started")]
    NotStarted,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The flags that make `claude` a two-way stream-json peer that asks crew before each tool.
pub const PROTOCOL_ARGS: &[&str] = &[
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
];

/// The live conversation: the process, its transcript, and what spans turns.
struct Session {
    process: CliProcess,
    emitter: Arc<Emitter>,
    translator: Translator,
    workdir: PathBuf,
    turns: u64,
    /// The CLI's `total_cost_usd` at the end of the last turn (it counts the whole session).
    cost_so_far: f64,
    /// Whether the process has said `init` (so a session id it was given worked).
    initialised: bool,
}

pub struct ClaudeCodeWork {
    seat: CliTeammate,
    args: Vec<String>,
    /// The role's instructions, appended to the CLI's own system prompt.
    instructions: String,
    session: Option<Session>,
}

impl ClaudeCodeWork {
    pub fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let seat = CliTeammate::new(workspace, config, name, bypass_flag, "claude")?;
        let model = &seat
            .config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?
            .model;
        let mut args = Vec::new();
        if let Some(model) = &model.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        args.extend(model.args.iter().cloned());
        let root = seat.workspace.root();
        role_prompt::check(&seat.config, root)?;
        let instructions = format!(
            "{}\n\n{MCP_NOTE}",
            role_prompt::assemble(
                &seat.role,
                &role_prompt::duties(&seat.config, root, &seat.role)?
            )
        );
        Ok(Self {
            seat,
            args,
            instructions,
            session: None,
        })
    }

    /// Where the CLI's session id is kept, so a restarted worker resumes the conversation.
    fn session_file(&self) -> PathBuf {
        self.seat.id_file("claude-code", "session")
    }

    /// The live session, started (in the teammate's working folder) when there is none.
    fn session(&mut self, status: &StatusHandle) -> Result<&mut Session, String> {
        let session = if let Some(session) = self.session.take() {
            session
        } else {
            let workdir = self.seat.workdir()?;
            let mut args: Vec<String> = PROTOCOL_ARGS.iter().map(|a| a.to_string()).collect();
            args.extend(
                self.crew_args()
                    .map_err(|e| format!("crew mcp not set up: {e}"))?,
            );
            args.extend(self.args.iter().cloned());
            if let Some(id) = cli_agent::saved_id(&self.session_file()) {
                args.extend(["--resume".to_string(), id]);
            }
            let process = CliProcess::spawn(
                &self.seat.bin,
                &args,
                &workdir,
                &cli_agent::credentials(&["ANTHROPIC_", "CLAUDE_"]),
            )
            .map_err(|source| {
                ClaudeError::Start {
                    bin: self.seat.bin.clone(),
                    source,
                }
                .to_string()
            })?;
            let path = transcript_path(
                self.seat.workspace.root(),
                &self.seat.name,
                &new_id("session"),
            );
            let writer = TranscriptWriter::open(path).map_err(|e| e.to_string())?;
            Session {
                process,
                emitter: Arc::new(Emitter::new(status_sink(status.clone()), writer)),
                translator: Translator::default(),
                workdir,
                turns: 0,
                cost_so_far: 0.0,
                initialised: false,
            }
        };
        Ok(self.session.insert(session))
    }

    /// What crew adds to the CLI's arguments: its team tools as the MCP server `crew`
    /// (`crew mcp --as NAME`, this very binary) and the role's instructions.
    fn crew_args(&self) -> std::io::Result<Vec<String>> {
        let exe = std::env::current_exe()?;
        let config = mcp::write_client_config(self.seat.workspace.root(), &self.seat.name, &exe)?;
        Ok(vec![
            "--mcp-config".to_string(),
            config.display().to_string(),
            "--append-system-prompt".to_string(),
            self.instructions.clone(),
        ])
    }

    /// Sends `input` and follows the stream to the turn's `result`.
    /// One turn: `input` as a user line, then the CLI's events until its `result`. When the
    /// person interrupts, the CLI is sent its own `interrupt` request and the turn ends with the
    /// `result` that follows.
    fn turn(&mut self, input: &str, cancel: &CancellationToken) -> Result<TurnEnd, ClaudeError> {
        let prompter = person_prompter(&self.seat.workspace, &self.seat.config, &self.seat.name);
        let session_file = self.session_file();
        let Some(session) = self.session.as_mut() else {
            return Err(ClaudeError::NotStarted);
        };
        let events = Arc::clone(&session.emitter);
        let prompter = prompter.with_events(EventSink::new(move |e| events.emit(e)));
        let sent = session.process.send(&json!({
            "type": "user",
            "message": {"role": "user", "content": input},
        }));
        if sent.is_err() {
            // Gone while idle: say why, as for a death mid-turn.
            return Err(ClaudeError::Died(session.process.death()));
        }
        let mut interrupted = false;
        loop {
            let Some(line) = session.process.next_within(INTERRUPT_POLL) else {
                if cancel.is_cancelled() && !interrupted {
                    interrupted = true;
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
                    if version.split('.').next() != Some(SUPPORTED_MAJOR) {
                        return Err(ClaudeError::Version(version.to_string()));
                    }
                    session.initialised = true;
                    if let Some(id) = line["session_id"].as_str() {
                        cli_agent::save_id(&session_file, id);
                    }
                }
                Some("assistant" | "user") => {
                    for event in session.translator.events(&line) {
                        session.emitter.emit(event);
                    }
                }
                Some("control_request") => {
                    let request_id = line["request_id"].as_str().unwrap_or_default();
                    let request = &line["request"];
                    let reply = match request["subtype"].as_str().unwrap_or_default() {
                        "can_use_tool" => {
                            let gate = PermissionGate {
                                writes: self.seat.writes,
                                policy: &self.seat.policy,
                                sandbox: self.seat.sandbox,
                                workdir: &session.workdir,
                                prompter: &prompter,
                                runtime: &self.seat.runtime,
                                emitter: &session.emitter,
                            };
                            let view = CrewView::of(
                                request["tool_name"].as_str().unwrap_or_default(),
                                &request["input"],
                            );
                            let verdict = gate.decide(view, &request["input"]);
                            control_response(
                                request_id,
                                &request["input"],
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
                        session.emitter.emit(event);
                    }
                    return Ok(TurnEnd { interrupted, ..end });
                }
                // Status, subagent progress, acknowledgements: nothing crew shows.
                _ => {}
            }
        }
    }
}

/// The refusal of a file-changing tool for an agent that does not write (crew's own such agents
/// have no write tools at all).
fn refuse_writes(writes: bool, view: &CrewView) -> Option<String> {
    (!writes && view.kind == ToolKind::Write).then(|| {
        format!(
            "{} is not allowed: this agent does not change files (no `writes = true` in crew.toml)",
            view.tool
        )
    })
}

/// What answers a CLI's permission requests (Claude Code's `can_use_tool`, Codex's approvals):
/// crew's policy for the teammate's working folder, then the person through the mailbox.
pub(crate) struct PermissionGate<'a> {
    /// Whether the agent may change files at all (`writes` in crew.toml).
    pub writes: bool,
    pub policy: &'a PermissionPolicy,
    pub sandbox: SandboxMode,
    pub workdir: &'a std::path::Path,
    pub prompter: &'a MailboxPrompter,
    pub runtime: &'a tokio::runtime::Runtime,
    pub emitter: &'a Emitter,
}

impl PermissionGate<'_> {
    /// crew's answer to one request for `view`; `input` is what the person is shown.
    pub fn decide(&self, view: CrewView, input: &Value) -> Result<(), String> {
        if let Some(refusal) = refuse_writes(self.writes, &view) {
            return Err(refusal);
        }
        let PermissionGate {
            writes: _,
            policy,
            sandbox,
            workdir,
            prompter,
            runtime,
            emitter,
        } = self;
        let outcome = view.decide(policy, *sandbox, workdir);
        let reason = match outcome.decision {
            Decision::Allow => return Ok(()),
            Decision::Deny(reason) => return Err(reason),
            Decision::Ask(reason) => reason,
        };
        emitter.emit(AgentEvent::PermissionAsked {
            tool: view.tool.clone(),
            input: input.clone(),
            reason: reason.clone(),
        });
        let answer = runtime.block_on(prompter.ask(PermissionAsk {
            tool: view.tool.clone(),
            input: input.clone(),
            subject: view.subject.clone(),
            reason,
            workspace: workdir.to_path_buf(),
        }));
        let verdict = match answer {
            PermissionAnswer::Allow => Ok(()),
            PermissionAnswer::AllowAlways(rule) => {
                // "Always" is a crew rule for this session, never one of the CLI's.
                policy.remember_written(&rule);
                Ok(())
            }
            PermissionAnswer::Deny(reason) => Err(reason),
        };
        emitter.emit(AgentEvent::PermissionAnswered {
            tool: view.tool,
            allowed: verdict.is_ok(),
            detail: verdict.clone().err().unwrap_or_default(),
        });
        verdict
    }
}

impl Work for ClaudeCodeWork {
    fn entered_review(&mut self, task: &Task) {
        self.seat.branch().ask_for_review(task);
    }

    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome {
        let (input, _) = task_packet(job);
        let started = self.session(status).map(|_| ());
        let branch = self.seat.branch();
        let started = started.and_then(|()| {
            let session = self
                .session
                .as_mut()
                .ok_or_else(|| ClaudeError::NotStarted.to_string())?;
            Ok((&*session.emitter, &mut session.turns))
        });
        if let Some(failed) =
            cli_agent::begin(&branch, self.seat.writes, job, started, &input, status)
        {
            return failed;
        }
        let ended = self.turn(&input, cancel);
        let broken = ended.is_err();
        let Some(session) = self.session.as_mut() else {
            return JobOutcome::failed(ClaudeError::NotStarted.to_string());
        };
        let ended = ended.map_err(|e| e.to_string()).map(|end| {
            let cost_micros = end.total_cost_usd.map(|total| {
                let spent = (total - session.cost_so_far).max(0.0);
                session.cost_so_far = total;
                crew_model::types::micros_of_dollars(spent)
            });
            TurnEnding {
                success: end.success,
                interrupted: end.interrupted,
                text: end.text,
                turns: end.turns,
                usage: end.usage,
                cost_micros,
            }
        });
        let reviewer = self.seat.role == "reviewer" && matches!(job, Job::Task(_));
        let (mut outcome, result) =
            cli_agent::conclude(&self.seat.name, reviewer, &input, ended, status);
        session.emitter.emit(AgentEvent::TurnEnd { result });
        if broken {
            // A process that died before `init` may have been refused the session it was to
            // resume: the next one starts a new conversation instead of failing the same way.
            if !session.initialised
                && let Err(e) = std::fs::remove_file(self.session_file())
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(
                    "{}: stale Claude Code session not forgotten: {e}",
                    self.seat.name
                );
            }
            // A broken conversation is not reused: the next job starts a fresh process.
            self.session = None;
        }
        self.seat.settle(job, &mut outcome);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_that_does_not_write_is_refused_file_changes_only() {
        let input = json!({"file_path": "src/a.rs"});
        for tool in ["Write", "Edit", "MultiEdit"] {
            let view = CrewView::of(tool, &input);
            let refusal = refuse_writes(false, &view).unwrap_or_default();
            assert!(
                refusal.contains("does not change files"),
                "{tool}: {refusal}"
            );
            assert_eq!(refuse_writes(true, &view), None);
        }
        for tool in ["Read", "Grep", "Bash", "mcp__crew__task_create"] {
            assert_eq!(
                refuse_writes(false, &CrewView::of(tool, &input)),
                None,
                "{tool}"
            );
        }
    }
}
