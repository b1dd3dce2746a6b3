//! What the coding-agent CLI teammates (Claude Code, Codex) share around their process: the
//! credentials only the CLI gets, the id of the conversation a restarted worker resumes, their
//! permissions, and how a turn becomes the job's outcome and what happens to the task after.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent_work::{SetupError, cache_tokens, permission_setup, working_dir};
use crate::status::StatusHandle;
use crate::task_branch::TaskBranch;
use crate::verdict;
use crate::worker::{INTERRUPTED_BY_PERSON, Job, JobOutcome};
use crew_agent::emitter::Emitter;
use crew_agent::{AgentEvent, StopReason, TurnResult};
use crew_config::TeamConfig;
use crew_model::Usage;
use crew_store::{AgentName, Task, Workspace};
use crew_tools::{PermissionMode, PermissionPolicy, SandboxMode};

/// What every CLI teammate is besides its live process: who it is in crew.toml, crew's policy
/// for it, and a task the person interrupted (their next message continues it).
pub struct CliTeammate {
    pub workspace: Workspace,
    pub config: Arc<TeamConfig>,
    pub name: AgentName,
    pub role: String,
    pub writes: bool,
    /// The CLI to run: crew.toml's `bin`, else the provider's own name on `PATH`.
    pub bin: String,
    pub mode: PermissionMode,
    pub policy: PermissionPolicy,
    pub sandbox: SandboxMode,
    pub runtime: tokio::runtime::Runtime,
    pub interrupted_task: Option<Task>,
}

impl CliTeammate {
    pub fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
        default_bin: &str,
    ) -> Result<Self, SetupError> {
        let entry = config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?;
        let (mode, policy, runtime) = permissions(&config, name, bypass_flag)?;
        Ok(CliTeammate {
            role: config.role_of(name).unwrap_or("lead").to_string(),
            writes: entry.writes,
            bin: entry
                .model
                .bin
                .clone()
                .unwrap_or_else(|| default_bin.to_string()),
            sandbox: config.permissions.sandbox,
            name: entry.name.get_ref().clone(),
            workspace,
            config,
            mode,
            policy,
            runtime,
            interrupted_task: None,
        })
    }

    pub fn branch(&self) -> TaskBranch<'_> {
        TaskBranch {
            workspace: &self.workspace,
            config: &self.config,
            name: &self.name,
        }
    }

    /// The folder the CLI runs in: the teammate's worktree, or the repository for one that
    /// does not write.
    pub fn workdir(&self) -> Result<PathBuf, String> {
        working_dir(&self.workspace, &self.config, &self.name, self.writes)
            .map_err(|e| format!("no worktree: {e}"))
    }

    /// Where the CLI's conversation id is kept (`.crew/FOLDER/NAME.EXT`), so a restarted
    /// worker resumes the conversation.
    pub fn id_file(&self, folder: &str, ext: &str) -> PathBuf {
        self.workspace
            .root()
            .join(".crew")
            .join(folder)
            .join(format!("{}.{ext}", self.name))
    }

    /// After a job: keeps the task the person interrupted, or commits a writer's task.
    pub fn settle(&mut self, job: &Job, outcome: &mut JobOutcome) {
        let held = self.interrupted_task.take();
        self.interrupted_task = self.branch().settle(job, held, self.writes, outcome);
    }
}

/// The credentials crew took out of its environment (see `secret::seal_process`) whose names
/// start with one of `prefixes` (the CLI's own: `ANTHROPIC_`, `OPENAI_`, …). Only the CLI gets
/// them, not the commands of crew's own tools; their values are redacted from transcripts like
/// crew's own keys.
pub fn credentials(prefixes: &[&str]) -> Vec<(String, String)> {
    crew_model::secret::sealed_vars()
        .iter()
        .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
        .inspect(|(_, value)| crew_store::secrets::register(value))
        .cloned()
        .collect()
}

/// The conversation to resume: the last id the CLI reported (kept in `path`), if it looks like one.
pub fn saved_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    let plausible = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    plausible.then(|| id.to_string())
}

/// Keeps the CLI's conversation id (a failure only costs the resume after a restart).
pub fn save_id(path: &Path, id: &str) {
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crew_store::atomic::write_atomic(path, id.as_bytes()));
    if let Err(e) = saved {
        tracing::warn!("conversation id not kept in {}: {e}", path.display());
    }
}

/// How a CLI's turn ended, in crew's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnding {
    pub success: bool,
    /// Ended by the person's interrupt (the task is kept for their next message).
    pub interrupted: bool,
    /// The CLI's last text, or why the turn failed.
    pub text: String,
    pub turns: u32,
    pub usage: Usage,
    pub cost_micros: Option<u64>,
}

/// The job's outcome and the transcript's turn result for a turn that ended (`Ok`) or a
/// conversation that broke (`Err`, why: also the agent's note). A reviewer's task passes only
/// with an explicit verdict.
pub fn conclude(
    name: &str,
    reviewer: bool,
    input: &str,
    ended: Result<TurnEnding, String>,
    status: &StatusHandle,
) -> (JobOutcome, TurnResult) {
    let result = TurnResult {
        input: input.to_string(),
        output: String::new(),
        tools_used: Vec::new(),
        permission_denials: Vec::new(),
        usage: Usage::default(),
        stop_reason: StopReason::Error,
        turns: 0,
        reason: String::new(),
        prefix_fingerprint: String::new(),
    };
    match ended {
        Ok(end) => {
            let (success, no_verdict) = verdict::judge(reviewer, end.success, &end.text);
            let outcome = JobOutcome {
                success,
                summary: no_verdict.unwrap_or_else(|| end.text.trim().to_string()),
                turns: u64::from(end.turns),
                tokens: end.usage.input_tokens + end.usage.output_tokens,
                cost_micros: end.cost_micros,
                cache: cache_tokens(&end.usage),
                commits: None,
                interrupted: end.interrupted,
            };
            let result = TurnResult {
                output: end.text,
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
                ..result
            };
            (outcome, result)
        }
        Err(error) => {
            let reason = format!("{name}: {error}");
            note(status, &reason);
            (
                JobOutcome::failed(reason.clone()),
                TurnResult { reason, ..result },
            )
        }
    }
}

/// Puts `reason` in the agent's status note (what the pane shows).
pub fn note(status: &StatusHandle, reason: &str) {
    if let Err(e) = status.update(|s| s.note = Some(reason.to_string())) {
        tracing::warn!("status not written: {e}");
    }
}

/// Before a job's turn, once the CLI's conversation is up (`started`: its transcript and turn
/// count, or why it is not): a writer's task is brought up to date on its branch, and the turn's
/// start goes to the transcript. `Some` is the job, failed with why (also the agent's note).
pub fn begin(
    branch: &TaskBranch<'_>,
    writes: bool,
    job: &Job,
    started: Result<(&Emitter, &mut u64), String>,
    input: &str,
    status: &StatusHandle,
) -> Option<JobOutcome> {
    let prepared = match (job, writes) {
        (Job::Task(task), true) => started.and_then(|up| branch.prepare(task).map(|()| up)),
        _ => started,
    };
    match prepared {
        Ok((emitter, turns)) => {
            *turns += 1;
            emitter.set_turn(*turns);
            emitter.emit(AgentEvent::TurnStart {
                turn: *turns,
                input: input.to_string(),
                prefix_fingerprint: String::new(),
            });
            None
        }
        Err(e) => {
            note(status, &e);
            Some(JobOutcome::failed(e))
        }
    }
}

/// What every CLI teammate needs from crew.toml besides its model: its permission mode and
/// policy, and a runtime for asking the person.
fn permissions(
    config: &TeamConfig,
    name: &str,
    bypass_flag: bool,
) -> Result<(PermissionMode, PermissionPolicy, tokio::runtime::Runtime), SetupError> {
    let (mode, rules, bypass) = permission_setup(config, name, bypass_flag)?;
    let policy =
        PermissionPolicy::new(mode, &rules, bypass).map_err(|e| SetupError::Permissions {
            name: name.to_string(),
            message: e.to_string(),
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SetupError::Runtime)?;
    Ok((mode, policy, runtime))
}
