//! Codex as a teammate (`model = { provider = "codex", … }`).
//!
//! As for Claude Code, the CLI runs its own agent loop and tools, so it is a [`CliAgent`] (its
//! work a `CliWork`, beside `AgentWork`), and the worker around it claims, commits and sends to
//! review as for any teammate. One `codex app-server` (JSON-RPC over stdio; `exec` cannot hand approvals to
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

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crew_tools::PermissionMode;

use crate::run::link::LinkedStore;
use crate::work::SetupError;
use crate::work::cli_agent::{self, CliAgent, CliTeammate, Turn, TurnEnding};
use crate::work::cli_process::CliProcess;
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
pub(crate) enum CodexError {
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
}

/// The live conversation: the app-server and its thread.
pub(crate) struct Session {
    rpc: Rpc,
    thread: String,
    items: Items,
}

/// Codex for one teammate.
pub(crate) struct Codex {
    /// Codex's own sandbox for its commands: writing in the worktree only when crew's mode lets
    /// commands write there anyway; otherwise read-only, so every write asks crew.
    codex_sandbox: &'static str,
}

/// Refuses a Codex older than the protocol crew speaks; `user_agent` is `originator/version …`.
fn check_version(user_agent: &str) -> Result<(), CodexError> {
    let version = user_agent
        .split_whitespace()
        .next()
        .and_then(|first| first.split('/').nth(1))
        .unwrap_or(user_agent);
    if version_supported(version) {
        Ok(())
    } else {
        Err(CodexError::Version {
            version: version.to_string(),
        })
    }
}

/// Whether crew speaks the app-server protocol of this Codex version (`0.171.0`).
pub fn version_supported(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    matches!(
        (parts.next().flatten(), parts.next().flatten()),
        (Some(major), Some(minor)) if (major, minor) >= OLDEST_SUPPORTED
    )
}

fn refused(method: &str, message: String) -> CodexError {
    CodexError::Refused {
        method: method.to_string(),
        message,
    }
}

impl CliAgent for Codex {
    const BIN: &'static str = "codex";
    type Session = Session;
    type Error = CodexError;

    /// The thread id.
    fn conversation_file<S: LinkedStore>(seat: &CliTeammate<S>) -> std::path::PathBuf {
        seat.id_file("codex", "thread")
    }

    fn new<S: LinkedStore>(seat: &CliTeammate<S>) -> Result<Self, SetupError> {
        Ok(Self {
            codex_sandbox: match seat.mode {
                PermissionMode::WorkspaceWrite | PermissionMode::Bypass => "workspace-write",
                _ => "read-only",
            },
        })
    }

    /// Starts the app-server, checks its version and opens (or resumes) the thread.
    fn start<S: LinkedStore>(
        &self,
        seat: &CliTeammate<S>,
        workdir: &Path,
    ) -> Result<Session, CodexError> {
        let mut args = vec!["app-server".to_string()];
        args.extend(seat.model.args.iter().cloned());
        let credentials = cli_agent::credentials(&["OPENAI_", "CODEX_"]);
        let process =
            CliProcess::spawn(&seat.bin, &args, workdir, &credentials).map_err(|source| {
                CodexError::Start {
                    bin: seat.bin.clone(),
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
        let saved = cli_agent::saved_id(&Self::conversation_file(seat));
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
                        tracing::warn!("{}: Codex thread {id} not resumed: {message}", seat.name);
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
                if let Some(model) = &seat.model.model {
                    params["model"] = json!(model);
                }
                let started = rpc
                    .call("thread/start", params, SETUP_LIMIT, ignore)?
                    .map_err(|message| refused("thread/start", message))?;
                let id = started["thread"]["id"]
                    .as_str()
                    .ok_or_else(|| refused("thread/start", "no thread id in the answer".into()))?
                    .to_string();
                cli_agent::save_id(&Self::conversation_file(seat), &id);
                id
            }
        };
        Ok(Session {
            rpc,
            thread,
            items: Items::default(),
        })
    }

    /// One turn: `turn/start` with `input`, then Codex's messages until `turn/completed`. When
    /// the person interrupts, Codex is sent `turn/interrupt` and the turn ends with the
    /// `turn/completed` that follows.
    fn turn<S: LinkedStore>(
        &self,
        session: &mut Session,
        turn: &Turn<'_, S>,
    ) -> Result<TurnEnding, CodexError> {
        let start = session.rpc.request(
            "turn/start",
            json!({"threadId": session.thread, "input": [{"type": "text", "text": turn.input}]}),
        )?;
        let mut turn_id: Option<String> = None;
        let mut interrupted = false;
        let mut out = Vec::new();
        loop {
            if turn.cancel.is_cancelled()
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
                        turn.gate.emitter.emit(event);
                    }
                    if let Some(end) = end {
                        return Ok(ending(turn.seat, end));
                    }
                }
                Incoming::Request { id, method, params } => {
                    let item = params["itemId"].as_str().unwrap_or_default();
                    let changes = session.items.changes_of(item);
                    let Some(approval) = Approval::of(&method, &params, changes, turn.gate.workdir)
                    else {
                        session
                            .rpc
                            .refuse(&id, &format!("crew does not answer {method}"))?;
                        continue;
                    };
                    let gate = &turn.gate;
                    let verdict = match approval.precheck(gate.policy, gate.sandbox, gate.workdir) {
                        Err(reason) => Err(reason),
                        Ok(None) => Ok(()),
                        Ok(Some(view)) => gate.decide(
                            view,
                            &approval.input,
                            params["reason"].as_str().map(str::to_string),
                        ),
                    };
                    if let Err(reason) = &verdict {
                        tracing::info!("{}: Codex's {method} refused: {reason}", turn.seat.name);
                    }
                    let cancelled = turn.cancel.is_cancelled() && !interrupted;
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

/// A turn's end in crew's terms.
fn ending<S: LinkedStore>(seat: &CliTeammate<S>, end: TurnEnd) -> TurnEnding {
    let price = seat.model.price;
    TurnEnding {
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
