//! What the coding-agent CLI teammates share. Claude Code and Codex are driven alike by
//! [`CliWork`]: one conversation with the CLI at a time (started when a job needs one, resumed
//! from the id kept before a restart, dropped when it breaks or a new task begins: each task is
//! its own conversation), a job a turn, and permission
//! requests answered by crew's [`PermissionGate`]; an implementation of [`CliAgent`] says only how
//! its CLI starts and how a turn goes. Any `command` shares how a turn begins and becomes the
//! job's outcome ([`begin`], [`conclude`]), and what happens to the task after.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::run::link::{LinkedStore, TeamLink};
use crew_agent::emitter::Emitter;
use crew_agent::{AgentEvent, EventSink, StopReason, TurnResult};
use crew_config::{ModelChoice, TeamConfig};
use crew_model::Usage;
use crew_store::{AgentName, FileStore, Task, TaskId, Workspace};
use crew_tools::{
    Decision, PermissionAnswer, PermissionAsk, PermissionMode, PermissionPolicy, Prompter,
    SandboxMode, ToolKind,
};

use crate::run::status::StatusHandle;
use crate::verdict;
use crate::work::claude_code::permission::CrewView;
use crate::work::task_branch::TaskBranch;
use crate::work::{
    INTERRUPTED_BY_PERSON, Job, JobOutcome, SetupError, Work, cache_tokens, open_transcript,
    permission_setup, person_prompter, task_packet, working_dir,
};

/// What a coding-agent CLI adds to [`CliWork`]: how its conversation starts and how one turn
/// goes. The rest is the same for every CLI teammate.
pub(crate) trait CliAgent: Sized {
    /// The CLI's name on `PATH`, run unless crew.toml's `bin` says otherwise.
    const BIN: &'static str;
    /// The CLI's side of a live conversation: its process and what spans turns.
    type Session;
    /// Why the CLI could not start, or why its conversation broke.
    type Error: std::fmt::Display;

    /// The CLI set up for `seat` (its arguments from the agent's model, say).
    fn new<S: LinkedStore>(seat: &CliTeammate<S>) -> Result<Self, SetupError>;

    /// Where the CLI's conversation id is kept, so a restarted worker resumes it.
    fn conversation_file<S: LinkedStore>(seat: &CliTeammate<S>) -> PathBuf;

    /// Starts the CLI in `workdir` for a conversation (the one kept from before a restart, if
    /// it still has it).
    fn start<S: LinkedStore>(
        &self,
        seat: &CliTeammate<S>,
        workdir: &Path,
    ) -> Result<Self::Session, Self::Error>;

    /// One turn: its input sent, the CLI's events to the transcript until the turn ends. When
    /// the person interrupts, the CLI is asked to stop and the turn ends with what it says then.
    fn turn<S: LinkedStore>(
        &self,
        session: &mut Self::Session,
        turn: &Turn<'_, S>,
    ) -> Result<TurnEnding, Self::Error>;

    /// After a turn that broke `session` (the next job starts a new one).
    fn broken<S: LinkedStore>(&self, _seat: &CliTeammate<S>, _session: &Self::Session) {}
}

/// What one turn of a CLI's conversation works with.
pub(crate) struct Turn<'a, S: LinkedStore> {
    pub seat: &'a CliTeammate<S>,
    pub input: &'a str,
    /// What answers the CLI's permission requests; its emitter is the transcript's.
    pub gate: PermissionGate<'a>,
    /// Fired when the person interrupts.
    pub cancel: &'a CancellationToken,
}

/// A CLI teammate's [`Work`]: each job is one turn of the live conversation, on either store.
pub(crate) struct CliWork<A: CliAgent, S: LinkedStore> {
    seat: CliTeammate<S>,
    agent: A,
    conversation: Option<Conversation<A::Session>>,
}

/// A live conversation: the CLI's session, the transcript, the folder it runs in, its turns.
struct Conversation<S> {
    session: S,
    emitter: Arc<Emitter>,
    workdir: PathBuf,
    turns: u64,
}

impl<A: CliAgent> CliWork<A, FileStore> {
    /// The work of teammate `name` of the team in `workspace`, whose model is the CLI `A`.
    pub(crate) fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let root = workspace.root().to_path_buf();
        let link = TeamLink::files(FileStore::new(workspace, config.roster()));
        CliWork::on(link, root, config, name, bypass_flag)
    }
}

impl<A: CliAgent, S: LinkedStore> CliWork<A, S> {
    /// The work of teammate `name` of the team in `link`'s store, in the checkout (or a joined
    /// host's clone) at `root`.
    pub(crate) fn on(
        link: TeamLink<S>,
        root: PathBuf,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let seat = CliTeammate::new(link, root, config, name, bypass_flag, A::BIN)?;
        Ok(Self {
            agent: A::new(&seat)?,
            seat,
            conversation: None,
        })
    }

    /// The live conversation, started (in the teammate's working folder) when there is none.
    fn conversation(&mut self, status: &StatusHandle) -> Result<Conversation<A::Session>, String> {
        if let Some(conversation) = self.conversation.take() {
            return Ok(conversation);
        }
        let workdir = self.seat.workdir()?;
        let session = self
            .agent
            .start(&self.seat, &workdir)
            .map_err(|e| e.to_string())?;
        let emitter = open_transcript(&self.seat.root, &self.seat.name, status)?;
        Ok(Conversation {
            session,
            emitter,
            workdir,
            turns: 0,
        })
    }
}

impl<A: CliAgent, S: LinkedStore> CliWork<A, S> {
    /// Each task is its own conversation: a task other than the one the conversation worked
    /// on (live, or kept for a restart) starts a new one, so the previous task's history never
    /// comes with it (a task sent back continues its own; its packet says what came back from
    /// review). Messages go on in the conversation there is.
    fn for_task(&mut self, id: TaskId) {
        let kept = self.seat.id_file("conversation", "task");
        let same = std::fs::read_to_string(&kept).is_ok_and(|t| id == t.trim());
        if same {
            return;
        }
        save_id(&kept, &id.to_string());
        // The last task's CLI ends here (its stdin closed); the next turn starts a new one.
        self.conversation = None;
        if let Err(e) = std::fs::remove_file(A::conversation_file(&self.seat))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("{}: the last task's conversation kept: {e}", self.seat.name);
        }
    }
}

impl<A: CliAgent, S: LinkedStore> Work for CliWork<A, S> {
    fn entered_review(&mut self, task: &Task) {
        self.seat.branch().ask_for_review(task);
    }

    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome {
        if let Job::Task(task) = job {
            self.for_task(task.id);
        }
        let link = &self.seat.link;
        let (input, _) = task_packet(job, &|id| {
            link.call(move |store| async move { store.task(id).await })
                .ok()
        });
        let mut conversation = match self.conversation(status) {
            Ok(conversation) => conversation,
            Err(e) => return failed(status, e),
        };
        let begun = begin(
            &self.seat.branch(),
            self.seat.writes,
            job,
            &conversation.emitter,
            &mut conversation.turns,
            &input,
        );
        if let Err(e) = begun {
            self.conversation = Some(conversation);
            return failed(status, e);
        }
        let events = Arc::clone(&conversation.emitter);
        let prompter = person_prompter(
            &self.seat.link,
            &self.seat.config,
            &self.seat.name,
            EventSink::new(move |e| events.emit(e)),
        );
        let turn = Turn {
            seat: &self.seat,
            input: &input,
            gate: PermissionGate {
                writes: self.seat.writes,
                policy: &self.seat.policy,
                sandbox: self.seat.sandbox,
                workdir: &conversation.workdir,
                prompter: prompter.as_ref(),
                runtime: &self.seat.runtime,
                emitter: &conversation.emitter,
            },
            cancel,
        };
        let ended = self
            .agent
            .turn(&mut conversation.session, &turn)
            .map_err(|e| e.to_string());
        let broken = ended.is_err();
        let reviewer = self.seat.role == "reviewer" && matches!(job, Job::Task(_));
        let (mut outcome, result) = conclude(&self.seat.name, reviewer, &input, ended, status);
        conversation.emitter.emit(AgentEvent::TurnEnd { result });
        if broken {
            // A broken conversation is not reused: the next job starts a fresh process.
            self.agent.broken(&self.seat, &conversation.session);
        } else {
            self.conversation = Some(conversation);
        }
        self.seat.settle(job, &mut outcome);
        outcome
    }
}

/// What every CLI teammate is besides its live process: who it is in crew.toml, crew's policy
/// for it, and a task the person interrupted (their next message continues it).
pub(crate) struct CliTeammate<S: LinkedStore> {
    /// The checkout (or a joined host's clone) it works in.
    pub root: PathBuf,
    pub link: TeamLink<S>,
    pub config: Arc<TeamConfig>,
    pub name: AgentName,
    pub role: String,
    pub writes: bool,
    /// The agent's `model = {...}` in crew.toml.
    pub model: ModelChoice,
    /// The CLI to run: crew.toml's `bin`, else the provider's own name on `PATH`.
    pub bin: String,
    pub mode: PermissionMode,
    pub policy: PermissionPolicy,
    pub sandbox: SandboxMode,
    pub runtime: tokio::runtime::Runtime,
    pub interrupted_task: Option<Task>,
}

impl<S: LinkedStore> CliTeammate<S> {
    pub(crate) fn new(
        link: TeamLink<S>,
        root: PathBuf,
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
            model: entry.model.clone(),
            bin: entry
                .model
                .bin
                .clone()
                .unwrap_or_else(|| default_bin.to_string()),
            sandbox: config.permissions.sandbox,
            name: entry.name.get_ref().clone(),
            link,
            root,
            config,
            mode,
            policy,
            runtime,
            interrupted_task: None,
        })
    }

    pub(crate) fn branch(&self) -> TaskBranch<'_, S> {
        TaskBranch {
            link: &self.link,
            root: &self.root,
            config: &self.config,
            name: &self.name,
        }
    }

    /// The folder the CLI runs in: the teammate's worktree, or the repository for one that
    /// does not write.
    pub(crate) fn workdir(&self) -> Result<PathBuf, String> {
        working_dir(&self.root, &self.config, &self.name, self.writes)
            .map_err(|e| format!("no worktree: {e}"))
    }

    /// Where the CLI's conversation id is kept (`.crew/FOLDER/NAME.EXT`), so a restarted
    /// worker resumes the conversation.
    pub(crate) fn id_file(&self, folder: &str, ext: &str) -> PathBuf {
        self.root
            .join(".crew")
            .join(folder)
            .join(format!("{}.{ext}", self.name))
    }

    /// After a job: keeps the task the person interrupted, or commits a writer's task.
    pub(crate) fn settle(&mut self, job: &Job, outcome: &mut JobOutcome) {
        let held = self.interrupted_task.take();
        self.interrupted_task = self.branch().settle(job, held, self.writes, outcome);
    }
}

/// The credentials crew took out of its environment (see `secret::seal_process`) whose names
/// start with one of `prefixes` (the CLI's own: `ANTHROPIC_`, `OPENAI_`, …). Only the CLI gets
/// them, not the commands of crew's own tools; their values are redacted from transcripts like
/// crew's own keys.
pub(crate) fn credentials(prefixes: &[&str]) -> Vec<(String, String)> {
    crew_model::secret::sealed_vars()
        .iter()
        .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
        .inspect(|(_, value)| crew_store::secrets::register(value))
        .cloned()
        .collect()
}

/// The conversation to resume: the last id the CLI reported (kept in `path`), if it looks like one.
pub(crate) fn saved_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    let plausible = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    plausible.then(|| id.to_string())
}

/// Keeps the CLI's conversation id (a failure only costs the resume after a restart).
pub(crate) fn save_id(path: &Path, id: &str) {
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
pub(crate) struct TurnEnding {
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
pub(crate) fn conclude(
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
pub(crate) fn note(status: &StatusHandle, reason: &str) {
    if let Err(e) = status.update(|s| s.note = Some(reason.to_string())) {
        tracing::warn!("status not written: {e}");
    }
}

/// Before a job's turn: a writer's task is brought up to date on its branch (`Err`: why it
/// cannot start), and the turn's start goes to the transcript.
pub(crate) fn begin<S: LinkedStore>(
    branch: &TaskBranch<'_, S>,
    writes: bool,
    job: &Job,
    emitter: &Emitter,
    turns: &mut u64,
    input: &str,
) -> Result<(), String> {
    if let (Job::Task(task), true) = (job, writes) {
        branch.prepare(task)?;
    }
    *turns += 1;
    emitter.set_turn(*turns);
    emitter.emit(AgentEvent::TurnStart {
        turn: *turns,
        input: input.to_string(),
        prefix_fingerprint: String::new(),
    });
    Ok(())
}

/// A job that could not run, and why (also the agent's note).
pub(crate) fn failed(status: &StatusHandle, why: String) -> JobOutcome {
    note(status, &why);
    JobOutcome::failed(why)
}

/// What every CLI teammate needs from crew.toml besides its model: its permission mode and
/// policy, and a runtime for asking the person.
pub(crate) fn permissions(
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
    pub prompter: &'a dyn Prompter,
    pub runtime: &'a tokio::runtime::Runtime,
    pub emitter: &'a Emitter,
}

impl PermissionGate<'_> {
    /// crew's answer to one request for `view`; `input` is what the person is shown, `purpose`
    /// why the agent says it wants it.
    pub(crate) fn decide(
        &self,
        view: CrewView,
        input: &Value,
        purpose: Option<String>,
    ) -> Result<(), String> {
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
            purpose,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
