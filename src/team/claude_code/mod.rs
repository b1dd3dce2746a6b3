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

mod permission;
mod process;
mod stream;

use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use serde_json::{Value, json};

use crate::agent::emitter::Emitter;
use crate::agent::transcript::{TranscriptWriter, transcript_path};
use crate::agent::{AgentEvent, EventSink, MailboxPrompter, StopReason, TurnResult};
use crate::config::TeamConfig;
use crate::store::message::new_id;
use crate::store::{Task, Workspace};
use crate::team::agent_work::{
    SetupError, cache_tokens, permission_setup, person_prompter, status_sink, task_packet,
    working_dir,
};
use crate::team::status::StatusHandle;
use crate::team::task_branch::TaskBranch;
use crate::team::verdict;
use crate::team::worker::{INTERRUPTED_BY_PERSON, Job, JobOutcome, Work};
use crate::tools::{
    Decision, PermissionAnswer, PermissionAsk, PermissionPolicy, Prompter, SandboxMode,
};

use permission::{CrewView, control_response, unsupported};
use process::{ClaudeProcess, Line};
use stream::{Translator, TurnEnd};

/// The major version whose protocol crew speaks (recorded from Claude Code 2.1.197).
const SUPPORTED_MAJOR: &str = "2";

/// How often a turn waiting on the CLI looks whether the person interrupted it.
const INTERRUPT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum ClaudeError {
    #[error(
        "cannot start Claude Code `{bin}`: {source} (install it, or set `bin = \"/path/to/claude\"` in the agent's model)"
    )]
    Start { bin: String, source: std::io::Error },
    #[error("Claude Code stopped reading its input")]
    StdinClosed,
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

/// The live conversation: the process, its transcript, and what spans turns.
struct Session {
    process: ClaudeProcess,
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
    workspace: Workspace,
    config: Arc<TeamConfig>,
    name: String,
    role: String,
    writes: bool,
    bin: String,
    args: Vec<String>,
    policy: PermissionPolicy,
    sandbox: SandboxMode,
    runtime: tokio::runtime::Runtime,
    session: Option<Session>,
    /// A task whose turn the person interrupted: their next message continues it.
    interrupted_task: Option<Task>,
}

impl ClaudeCodeWork {
    pub fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let entry = config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?;
        let (mode, rules, bypass) = permission_setup(&config, name, bypass_flag)?;
        let policy =
            PermissionPolicy::new(mode, &rules, bypass).map_err(|e| SetupError::Permissions {
                name: name.to_string(),
                message: e.to_string(),
            })?;
        let mut args = Vec::new();
        if let Some(model) = &entry.model.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        args.extend(entry.model.args.iter().cloned());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SetupError::Runtime)?;
        Ok(Self {
            role: config.role_of(name).unwrap_or("lead").to_string(),
            writes: entry.writes,
            bin: entry
                .model
                .bin
                .clone()
                .unwrap_or_else(|| "claude".to_string()),
            args,
            sandbox: config.permissions.sandbox,
            name: name.to_string(),
            workspace,
            config,
            policy,
            runtime,
            session: None,
            interrupted_task: None,
        })
    }

    fn branch(&self) -> TaskBranch<'_> {
        TaskBranch {
            workspace: &self.workspace,
            config: &self.config,
            name: &self.name,
        }
    }

    /// Where the CLI's session id is kept, so a restarted worker resumes the conversation.
    fn session_file(&self) -> PathBuf {
        self.workspace
            .root()
            .join(".crew/claude-code")
            .join(format!("{}.session", self.name))
    }

    /// The CLI session to resume: the last one this teammate's CLI reported, if it looks like one.
    fn saved_session(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.session_file()).ok()?;
        let id = text.trim();
        let plausible = !id.is_empty()
            && id.len() <= 128
            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        plausible.then(|| id.to_string())
    }

    /// The live session, started (in the teammate's working folder) when there is none.
    fn session(&mut self, status: &StatusHandle) -> Result<&mut Session, String> {
        let session = if let Some(session) = self.session.take() {
            session
        } else {
            let workdir = working_dir(&self.workspace, &self.config, &self.name, self.writes)
                .map_err(|e| format!("no worktree: {e}"))?;
            let mut args = self.args.clone();
            if let Some(id) = self.saved_session() {
                args.extend(["--resume".to_string(), id]);
            }
            let process = ClaudeProcess::spawn(&self.bin, &args, &workdir, &cli_credentials())
                .map_err(|e| e.to_string())?;
            let path = transcript_path(self.workspace.root(), &self.name, &new_id("session"));
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

    /// Sends `input` and follows the stream to the turn's `result`.
    /// One turn: `input` as a user line, then the CLI's events until its `result`. When the
    /// person interrupts, the CLI is sent its own `interrupt` request and the turn ends with the
    /// `result` that follows.
    fn turn(&mut self, input: &str, cancel: &CancellationToken) -> Result<TurnEnd, ClaudeError> {
        let prompter = person_prompter(&self.workspace, &self.config, &self.name);
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
                        save_session(&session_file, id);
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
                            let verdict = decide(
                                &self.policy,
                                self.sandbox,
                                &session.workdir,
                                request,
                                &prompter,
                                &self.runtime,
                                &session.emitter,
                            );
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

/// crew's answer to one `can_use_tool` request: its policy first, then the person.
fn decide(
    policy: &PermissionPolicy,
    sandbox: SandboxMode,
    workdir: &std::path::Path,
    request: &Value,
    prompter: &MailboxPrompter,
    runtime: &tokio::runtime::Runtime,
    emitter: &Emitter,
) -> Result<(), String> {
    let tool_name = request["tool_name"].as_str().unwrap_or_default();
    let input = &request["input"];
    let view = CrewView::of(tool_name, input);
    let outcome = view.decide(policy, sandbox, workdir);
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
            // "Always" is a crew rule for this session, never a Claude Code one.
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

impl Work for ClaudeCodeWork {
    fn entered_review(&mut self, task: &Task) {
        self.branch().ask_for_review(task);
    }

    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome {
        let (input, _) = task_packet(job);
        let started = self.session(status).map(|_| ());
        let prepared = match (job, self.writes) {
            (Job::Task(task), true) => started.and_then(|()| self.branch().prepare(task)),
            _ => started,
        };
        let session = prepared.and_then(|()| {
            self.session
                .as_mut()
                .ok_or_else(|| ClaudeError::NotStarted.to_string())
        });
        match session {
            Ok(session) => {
                session.turns += 1;
                session.emitter.set_turn(session.turns);
                session.emitter.emit(AgentEvent::TurnStart {
                    turn: session.turns,
                    input: input.clone(),
                    prefix_fingerprint: String::new(),
                });
            }
            Err(e) => {
                if let Err(note) = status.update(|s| s.note = Some(e.clone())) {
                    tracing::warn!("status not written: {note}");
                }
                return JobOutcome::failed(e);
            }
        }
        let ended = self.turn(&input, cancel);
        let broken = ended.is_err();
        let Some(session) = self.session.as_mut() else {
            return JobOutcome::failed(ClaudeError::NotStarted.to_string());
        };
        let (mut outcome, result) = match ended {
            Ok(end) => {
                let reviewer = self.role == "reviewer" && matches!(job, Job::Task(_));
                let (success, no_verdict) = verdict::judge(reviewer, end.success, &end.text);
                let cost = end.total_cost_usd.map(|total| {
                    let spent = (total - session.cost_so_far).max(0.0);
                    session.cost_so_far = total;
                    crate::model::types::micros_of_dollars(spent)
                });
                let outcome = JobOutcome {
                    success,
                    summary: no_verdict.unwrap_or_else(|| end.text.trim().to_string()),
                    turns: u64::from(end.turns),
                    tokens: end.usage.input_tokens + end.usage.output_tokens,
                    cost_micros: cost,
                    cache: cache_tokens(&end.usage),
                    commits: None,
                    interrupted: end.interrupted,
                };
                let result = TurnResult {
                    input: input.clone(),
                    output: end.text.clone(),
                    tools_used: Vec::new(),
                    permission_denials: Vec::new(),
                    usage: end.usage,
                    stop_reason: match (end.interrupted, end.success) {
                        (true, _) => StopReason::Interrupted,
                        (false, true) => StopReason::Completed,
                        (false, false) => StopReason::Error,
                    },
                    turns: end.turns,
                    reason: if end.interrupted {
                        INTERRUPTED_BY_PERSON.to_string()
                    } else {
                        String::new()
                    },
                    prefix_fingerprint: String::new(),
                };
                (outcome, result)
            }
            Err(error) => {
                let reason = format!("{}: {error}", self.name);
                let result = TurnResult {
                    input: input.clone(),
                    output: String::new(),
                    tools_used: Vec::new(),
                    permission_denials: Vec::new(),
                    usage: Default::default(),
                    stop_reason: StopReason::Error,
                    turns: 0,
                    reason: reason.clone(),
                    prefix_fingerprint: String::new(),
                };
                if let Err(note) = status.update(|s| s.note = Some(reason.clone())) {
                    tracing::warn!("status not written: {note}");
                }
                (JobOutcome::failed(reason), result)
            }
        };
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
                    self.name
                );
            }
            // A broken conversation is not reused: the next job starts a fresh process.
            self.session = None;
        }
        let mut interrupted = self.interrupted_task.take();
        self.branch()
            .settle(job, &mut interrupted, self.writes, &mut outcome);
        self.interrupted_task = interrupted;
        outcome
    }
}

/// Keeps the CLI's session id (a failure only costs the resume after a restart).
fn save_session(path: &std::path::Path, id: &str) {
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::store::atomic::write_atomic(path, id.as_bytes()));
    if let Err(e) = saved {
        tracing::warn!("Claude Code session id not kept in {}: {e}", path.display());
    }
}

/// The credentials crew took out of its environment (see `secret::seal_process`) that the CLI
/// needs to reach its API: `ANTHROPIC_*` (key, auth token, base URL) and `CLAUDE_*` (its OAuth
/// token, provider switches). Only the CLI gets them, not the commands of crew's own tools; their
/// values are redacted from transcripts like crew's own keys.
fn cli_credentials() -> Vec<(String, String)> {
    crate::model::secret::sealed_vars()
        .iter()
        .filter(|(name, _)| name.starts_with("ANTHROPIC_") || name.starts_with("CLAUDE_"))
        .inspect(|(_, value)| crate::store::secrets::register(value))
        .cloned()
        .collect()
}
