//! Codex as a teammate (`model = { provider = "codex", … }`).
//!
//! As for Claude Code, the CLI runs its own agent loop and tools, so it is a [`Work`] beside
//! `AgentWork`, and the worker around it claims, commits and sends to review as for any
//! teammate. One `codex app-server` (JSON-RPC over stdio; `exec` cannot hand approvals to
//! another program) runs per conversation in the teammate's worktree: `initialize`, then
//! `thread/start` with the worktree as `cwd` (or `thread/resume` of the thread kept from before a
//! restart), then one `turn/start` per job on that thread. Codex's approval requests go through
//! crew's policy and then to the person, and are answered `accept`, `decline` or (when the
//! person interrupted meanwhile) `cancel`; crew's interrupt sends `turn/interrupt`. A binary
//! that is missing or too old, a line that is not JSON-RPC, or a process that dies ends the job
//! as failed with the reason; the next job starts a new process.

mod approval;
mod items;
mod rpc;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::agent_work::{SetupError, person_prompter, status_sink, task_packet};
use crate::claude_code::PermissionGate;
use crate::cli_agent::{self, CliTeammate, TurnEnding};
use crate::cli_process::CliProcess;
use crate::status::StatusHandle;
use crate::worker::{Job, JobOutcome, Work};
use crew_agent::emitter::Emitter;
use crew_agent::transcript::{TranscriptWriter, transcript_path};
use crew_agent::{AgentEvent, EventSink};
use crew_config::TeamConfig;
use crew_store::message::new_id;
use crew_store::{Task, Workspace};
use crew_tools::PermissionMode;

use approval::{Approval, decision};
use items::{Items, TurnEnd};
use rpc::{Incoming, Rpc};

/// The oldest Codex whose app-server protocol crew speaks (recorded from Codex CLI 0.171.0).
const OLDEST_SUPPORTED: (u64, u64) = (0, 171);

/// How long the app-server gets to answer a setup request (`initialize`, `thread/start`).
const SETUP_LIMIT: Duration = Duration::from_secs(60);

/// How often a turn waiting on Codex looks whether the person interrupted it.
const INTERRUPT_POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    #[error(
        "cannot start Codex `{bin}`: {source} (install it with `npm install -g @openai/codex`, or set `bin = \"/path/to/codex\"` in the agent's model)"
    )]
    Start { bin: String, source: std::io::Error },
    #[error(
        "Codex {version} is not supported: crew speaks the app-server protocol of Codex {}.{} and later",
        OLDEST_SUPPORTED.0,
        OLDEST_SUPPORTED.1
    )]
    Version { version: String },
    #[error("Codex printed a line that is not JSON-RPC, so the conversation was ended: {0}")]
    NotJson(String),
    #[error("Codex exited ({0})")]
    Died(String),
    #[error("Codex did not answer `{method}` within {secs} s")]
    NoAnswer { method: String, secs: u64 },
    #[error("Codex refused `{method}`: {message}")]
    Refused { method: String, message: String },
    #[error("Codex was not started")]
    NotStarted,
}

/// The live conversation: the app-server, its thread, its transcript.
struct Session {
    rpc: Rpc,
    thread: String,
    emitter: Arc<Emitter>,
    items: Items,
    workdir: PathBuf,
    turns: u64,
}

pub struct CodexWork {
    seat: CliTeammate,
    args: Vec<String>,
    model: Option<String>,
    /// Codex's own sandbox for its commands: writing in the worktree only when crew's mode lets
    /// commands write there anyway; otherwise read-only, so every write asks crew.
    codex_sandbox: &'static str,
    session: Option<Session>,
}

impl CodexWork {
    pub fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let seat = CliTeammate::new(workspace, config, name, bypass_flag, "codex")?;
        let model = seat
            .config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?
            .model
            .clone();
        Ok(Self {
            args: model.args,
            model: model.model,
            codex_sandbox: match seat.mode {
                PermissionMode::WorkspaceWrite | PermissionMode::Bypass => "workspace-write",
                _ => "read-only",
            },
            seat,
            session: None,
        })
    }

    /// Where the thread id is kept, so a restarted worker resumes the conversation.
    fn thread_file(&self) -> PathBuf {
        self.seat.id_file("codex", "thread")
    }

    /// The live session, started (in the teammate's working folder) when there is none.
    fn session(&mut self, status: &StatusHandle) -> Result<&mut Session, String> {
        let session = if let Some(session) = self.session.take() {
            session
        } else {
            let workdir = self.seat.workdir()?;
            let path = transcript_path(
                self.seat.workspace.root(),
                &self.seat.name,
                &new_id("session"),
            );
            let writer = TranscriptWriter::open(path).map_err(|e| e.to_string())?;
            let emitter = Arc::new(Emitter::new(status_sink(status.clone()), writer));
            self.start(workdir, emitter).map_err(|e| e.to_string())?
        };
        Ok(self.session.insert(session))
    }

    /// Starts the app-server, checks its version and opens (or resumes) the thread.
    fn start(&self, workdir: PathBuf, emitter: Arc<Emitter>) -> Result<Session, CodexError> {
        let mut args = vec!["app-server".to_string()];
        args.extend(self.args.iter().cloned());
        let credentials = cli_agent::credentials(&["OPENAI_", "CODEX_"]);
        let process =
            CliProcess::spawn(&self.seat.bin, &args, &workdir, &credentials).map_err(|source| {
                CodexError::Start {
                    bin: self.seat.bin.clone(),
                    source,
                }
            })?;
        let mut rpc = Rpc::new(process);
        let ignore = |_| {};
        let hello = json!({"clientInfo": {
            "name": "crew",
            "title": "crew workbench",
            "version": env!("CARGO_PKG_VERSION"),
        }});
        let init = rpc
            .call("initialize", hello, SETUP_LIMIT, ignore)?
            .map_err(|message| refused("initialize", message))?;
        check_version(init["userAgent"].as_str().unwrap_or("(unnamed)"))?;
        rpc.notify("initialized")?;
        let saved = cli_agent::saved_id(&self.thread_file());
        let resumed = match saved {
            Some(id) => {
                let answer = rpc.call(
                    "thread/resume",
                    json!({ "threadId": id }),
                    SETUP_LIMIT,
                    ignore,
                )?;
                match answer {
                    Ok(_) => Some(id),
                    Err(message) => {
                        // A thread Codex no longer has: the teammate starts a new one.
                        tracing::warn!(
                            "{}: Codex thread {id} not resumed: {message}",
                            self.seat.name
                        );
                        None
                    }
                }
            }
            None => None,
        };
        let thread = match resumed {
            Some(id) => id,
            None => {
                let mut params = json!({
                    "cwd": workdir,
                    "approvalPolicy": "on-request",
                    "sandbox": self.codex_sandbox,
                });
                if let Some(model) = &self.model {
                    params["model"] = json!(model);
                }
                let started = rpc
                    .call("thread/start", params, SETUP_LIMIT, ignore)?
                    .map_err(|message| refused("thread/start", message))?;
                let id = started["thread"]["id"]
                    .as_str()
                    .ok_or_else(|| refused("thread/start", "no thread id in the answer".into()))?
                    .to_string();
                cli_agent::save_id(&self.thread_file(), &id);
                id
            }
        };
        Ok(Session {
            rpc,
            thread,
            emitter,
            items: Items::default(),
            workdir,
            turns: 0,
        })
    }

    /// One turn: `turn/start` with `input`, then Codex's messages until `turn/completed`. When
    /// the person interrupts, Codex is sent `turn/interrupt` and the turn ends with the
    /// `turn/completed` that follows.
    fn turn(&mut self, input: &str, cancel: &CancellationToken) -> Result<TurnEnd, CodexError> {
        let prompter = person_prompter(&self.seat.workspace, &self.seat.config, &self.seat.name);
        let Some(session) = self.session.as_mut() else {
            return Err(CodexError::NotStarted);
        };
        let events = Arc::clone(&session.emitter);
        let prompter = prompter.with_events(EventSink::new(move |e| events.emit(e)));
        let start = session.rpc.request(
            "turn/start",
            json!({"threadId": session.thread, "input": [{"type": "text", "text": input}]}),
        )?;
        let mut turn_id: Option<String> = None;
        let mut interrupted = false;
        let mut out = Vec::new();
        loop {
            if cancel.is_cancelled()
                && !interrupted
                && let Some(turn) = &turn_id
            {
                interrupted = true;
                session.rpc.request(
                    "turn/interrupt",
                    json!({"threadId": session.thread, "turnId": turn}),
                )?;
            }
            let Some(message) = session.rpc.next_within(INTERRUPT_POLL)? else {
                continue;
            };
            match message {
                Incoming::Response { id, result } if id == start => {
                    let turn = result.map_err(|message| refused("turn/start", message))?;
                    let id = turn["turn"]["id"].as_str().unwrap_or_default().to_string();
                    session.items.begin_turn(&id);
                    turn_id = Some(id);
                }
                // `turn/interrupt`'s empty answer: the turn's end follows.
                Incoming::Response { .. } => {}
                Incoming::Notification { method, params } => {
                    let end = session.items.on(&method, &params, &mut out);
                    for event in out.drain(..) {
                        session.emitter.emit(event);
                    }
                    if let Some(end) = end {
                        return Ok(end);
                    }
                }
                Incoming::Request { id, method, params } => {
                    let item = params["itemId"].as_str().unwrap_or_default();
                    let changes = session.items.changes_of(item);
                    let Some(approval) = Approval::of(&method, &params, changes, &session.workdir)
                    else {
                        session
                            .rpc
                            .refuse(&id, &format!("crew does not answer {method}"))?;
                        continue;
                    };
                    let gate = PermissionGate {
                        writes: self.seat.writes,
                        policy: &self.seat.policy,
                        sandbox: self.seat.sandbox,
                        workdir: &session.workdir,
                        prompter: &prompter,
                        runtime: &self.seat.runtime,
                        emitter: &session.emitter,
                    };
                    let verdict = match approval.precheck(
                        &self.seat.policy,
                        self.seat.sandbox,
                        &session.workdir,
                    ) {
                        Err(reason) => Err(reason),
                        Ok(None) => Ok(()),
                        Ok(Some(view)) => gate.decide(view, &approval.input),
                    };
                    if let Err(reason) = &verdict {
                        tracing::info!("{}: Codex's {method} refused: {reason}", self.seat.name);
                    }
                    let cancelled = cancel.is_cancelled() && !interrupted;
                    // `cancel` interrupts the turn itself: no `turn/interrupt` after it.
                    interrupted |= cancelled;
                    session
                        .rpc
                        .respond(&id, decision(verdict.is_ok(), cancelled))?;
                }
            }
        }
    }
}

/// Refuses a Codex older than the protocol crew speaks; `user_agent` is `originator/version …`.
fn check_version(user_agent: &str) -> Result<(), CodexError> {
    let version = user_agent
        .split_whitespace()
        .next()
        .and_then(|first| first.split('/').nth(1))
        .unwrap_or(user_agent);
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) if (major, minor) >= OLDEST_SUPPORTED => Ok(()),
        _ => Err(CodexError::Version {
            version: version.to_string(),
        }),
    }
}

fn refused(method: &str, message: String) -> CodexError {
    CodexError::Refused {
        method: method.to_string(),
        message,
    }
}

impl Work for CodexWork {
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
                .ok_or_else(|| CodexError::NotStarted.to_string())?;
            Ok((&*session.emitter, &mut session.turns))
        });
        if let Some(failed) =
            cli_agent::begin(&branch, self.seat.writes, job, started, &input, status)
        {
            return failed;
        }
        let ended = self.turn(&input, cancel);
        let broken = ended.is_err();
        let price = self
            .seat
            .config
            .agent(&self.seat.name)
            .and_then(|a| a.model.price);
        let ended = ended.map_err(|e| e.to_string()).map(|end| TurnEnding {
            success: end.status == "completed",
            interrupted: end.status == "interrupted",
            text: end.text,
            turns: end.calls,
            // Codex reports tokens, not money: the model's price in crew.toml makes a cost.
            cost_micros: price.map(|price| {
                price.micros(
                    end.usage.input_tokens,
                    end.usage.output_tokens,
                    end.usage.cache_read_input_tokens,
                    end.usage.cache_creation_input_tokens,
                )
            }),
            usage: end.usage,
        });
        let reviewer = self.seat.role == "reviewer" && matches!(job, Job::Task(_));
        let (mut outcome, result) =
            cli_agent::conclude(&self.seat.name, reviewer, &input, ended, status);
        let Some(session) = self.session.as_mut() else {
            return JobOutcome::failed(CodexError::NotStarted.to_string());
        };
        session.emitter.emit(AgentEvent::TurnEnd { result });
        if broken {
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
    fn the_version_comes_from_the_user_agent_and_old_ones_are_refused() {
        assert!(check_version("crew/0.171.0 (Debian 12.0.0; x86_64) xterm (crew; 0.0.1)").is_ok());
        assert!(check_version("crew/0.180.2 (Debian)").is_ok());
        assert!(check_version("crew/1.0.0").is_ok());
        let old = check_version("crew/0.98.0 (Debian)")
            .unwrap_err()
            .to_string();
        assert!(old.contains("Codex 0.98.0 is not supported"), "{old}");
        assert!(check_version("(unnamed)").is_err());
    }
}
