//! What runs an agent's jobs, and what every kind of it shares. A [`Work`] runs one job (a task
//! or a message) to its end for the worker around it (`run::worker`), which claims, reports and
//! releases tasks the same whatever runs them: crew's own agent loop (`agent`), or a coding-agent
//! CLI that runs its own loop and tools (`claude_code` and `codex`, driven alike by `cli_agent`;
//! any `command`). `work_for` picks one by the model's provider; what they all need (the job's
//! text, permissions from crew.toml, the working folder, asking the person, the status a
//! transcript's events keep) is here, and a writer's branch is `task_branch`.

pub(crate) mod agent;
pub(crate) mod claude_code;
pub(crate) mod cli_agent;
mod cli_process;
pub(crate) mod codex;
pub(crate) mod command;
pub(crate) mod role_prompt;
mod store_conversation;
mod store_memory;
mod store_prompter;
mod task_branch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crew_agent::emitter::Emitter;
use crew_agent::transcript::{TranscriptWriter, transcript_path};
use crew_agent::{AgentEvent, EventSink, MailboxPrompter};
use crew_config::TeamConfig;
use crew_git::Worktrees;
use crew_store::message::new_id;
use crew_store::review::review_notes;
use crew_store::{
    AgentName, AgentState, CacheTokens, FileStore, Message, SUBAGENT_LINES, SubagentLine, Task,
    TaskCommits, TaskId, Workspace,
};
use crew_tools::PermissionMode;
use crew_tools::PermissionPolicy;
use crew_tools::permissions::{BypassSwitches, RuleSet};

pub use claude_code::PERSONS_SETTINGS_ONLY;
pub use claude_code::version_supported as claude_code_version_supported;
pub use codex::version_supported as codex_version_supported;

use crate::run::link::{LinkedStore, TeamLink};
use crate::run::status::StatusHandle;
use crate::work::agent::AgentWork;
use crate::work::claude_code::ClaudeCode;
use crate::work::cli_agent::CliWork;
use crate::work::codex::Codex;
use crate::work::command::CommandWork;
use crate::work::store_prompter::StorePrompter;
use crew_tools::Prompter;

/// The work of agent `name`, by its model's provider.
pub fn work_for(
    workspace: Workspace,
    config: Arc<TeamConfig>,
    name: &str,
    bypass: bool,
) -> Result<Box<dyn Work + Send>, SetupError> {
    let provider = config.agent(name).map(|a| a.model.provider.as_str());
    Ok(match provider {
        Some("claude-code") => Box::new(CliWork::<ClaudeCode, _>::new(
            workspace, config, name, bypass,
        )?),
        Some("command") => {
            let root = workspace.root().to_path_buf();
            let link = TeamLink::files(FileStore::new(workspace, config.roster()));
            Box::new(CommandWork::new(link, root, config, name)?)
        }
        Some("codex") => Box::new(CliWork::<Codex, _>::new(workspace, config, name, bypass)?),
        _ => Box::new(AgentWork::new(workspace, config, name, bypass)?),
    })
}

/// The work of agent `name` on a team reached through its store (`crew worker --join`, or a
/// worker of the person's checkout on PostgreSQL), in the clone or checkout at `root`: crew's
/// own agent loop, a `command` teammate, or a Claude Code or Codex CLI (its team tools served
/// by `crew --store ROLE_URL mcp`).
pub fn work_on_joined_host<S: LinkedStore>(
    link: TeamLink<S>,
    root: std::path::PathBuf,
    config: Arc<TeamConfig>,
    name: &str,
    bypass: bool,
) -> Result<Box<dyn Work + Send>, SetupError> {
    let provider = config
        .agent(name)
        .map(|a| a.model.provider.clone())
        .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?;
    match provider.as_str() {
        "command" => Ok(Box::new(CommandWork::new(link, root, config, name)?)),
        "claude-code" => Ok(Box::new(CliWork::<ClaudeCode, S>::on(
            link, root, config, name, bypass,
        )?)),
        "codex" => Ok(Box::new(CliWork::<Codex, S>::on(
            link, root, config, name, bypass,
        )?)),
        _ => Ok(Box::new(AgentWork::on(link, root, config, name, bypass)?)),
    }
}

/// What a worker is asked to do.
#[derive(Debug, Clone)]
pub enum Job {
    Task(Task),
    Message(Message),
}

#[derive(Debug, Clone, PartialEq)]
pub struct JobOutcome {
    pub success: bool,
    /// For a task: its result (or why it failed), told to the lead.
    pub summary: String,
    pub turns: u64,
    pub tokens: u64,
    /// Millionths of a dollar, when the provider reports a cost or crew.toml gives a price.
    pub cost_micros: Option<u64>,
    /// Of the input tokens, those read from and written to the provider's prompt cache.
    pub cache: CacheTokens,
    /// A finished task's commits that are not in the base branch yet: it goes to `review`.
    pub commits: Option<TaskCommits>,
    /// The person interrupted it: a task stays with the worker until their next message.
    pub interrupted: bool,
}

impl JobOutcome {
    /// A job that did not run to its end, and why.
    pub(crate) fn failed(summary: String) -> Self {
        Self {
            success: false,
            summary,
            turns: 0,
            tokens: 0,
            cost_micros: None,
            cache: CacheTokens::default(),
            commits: None,
            interrupted: false,
        }
    }
}

/// Runs one job to its end. Implementations update WAITING through the status handle, and
/// stop soon after `cancel` fires (the person interrupted the agent).
pub trait Work {
    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome;

    /// A task this worker did was recorded as waiting for review.
    fn entered_review(&mut self, _task: &Task) {}
}

/// What the person sees on an interrupted agent, and what the agent reads when resumed.
pub(crate) const INTERRUPTED_BY_PERSON: &str = "interrupted by the person";

/// Team tools only coordinate (tasks and messages); asking a person for each would be noise.
/// Deny rules still beat this.
const TEAM_TOOLS: &[&str] = &[
    "task_create",
    "task_list",
    "task_get",
    "task_update",
    "claim_task",
    "send_message",
    "request_shutdown",
    "request_plan_approval",
    "review_plan",
    "read_inbox",
];

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("no agent named {0:?} in crew.toml")]
    UnknownAgent(String),
    #[error("{name}: model: {message}")]
    Model { name: String, message: String },
    #[error("{name}: permissions: {message}")]
    Permissions { name: String, message: String },
    #[error("crew.toml [[hooks]]: {0}")]
    Hooks(String),
    #[error(transparent)]
    Role(#[from] crate::work::role_prompt::RoleError),
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// The mode, rules (team tools allowed) and bypass switches of agent `name`, checked once so a
/// bad rule fails at start, not at the first tool call.
pub(crate) fn permission_setup(
    config: &TeamConfig,
    name: &str,
    bypass_flag: bool,
) -> Result<(PermissionMode, RuleSet, BypassSwitches), SetupError> {
    let perms = &config.permissions;
    let invalid = |message: String| SetupError::Permissions {
        name: name.to_string(),
        message,
    };
    let permissions: PermissionMode = perms
        .mode
        .get_ref()
        .parse()
        .map_err(|e| invalid(format!("{e}")))?;
    let mut allow = perms.allow.clone();
    allow.extend(TEAM_TOOLS.iter().map(|t| t.to_string()));
    let rules = RuleSet {
        allow,
        ask: perms.ask.clone(),
        deny: perms.deny.clone(),
    };
    let bypass = BypassSwitches {
        config_allows: perms.allow_bypass,
        flag_given: bypass_flag,
    };
    PermissionPolicy::new(permissions, &rules, bypass).map_err(|e| invalid(e.to_string()))?;
    Ok((permissions, rules, bypass))
}

/// The teammate's worktree if it writes (made on first need), else the repository root.
pub(crate) fn working_dir(
    root: &Path,
    config: &TeamConfig,
    name: &str,
    writes: bool,
) -> Result<PathBuf, String> {
    if !writes {
        return Ok(root.to_path_buf());
    }
    let trees = Worktrees::open(root).map_err(|e| e.to_string())?;
    let wt = &config.worktree;
    trees
        .ensure(name, &config.team.base_branch, &wt.copy, &wt.link)
        .map(|w| w.path)
        .map_err(|e| e.to_string())
}

/// How agent `name` asks the person: requests through the lead's inbox, answered in time.
pub(crate) fn mailbox_prompter(
    workspace: &Workspace,
    config: &TeamConfig,
    name: &AgentName,
) -> MailboxPrompter {
    MailboxPrompter::new(
        workspace.mailboxes(),
        config.roster(),
        name.clone(),
        config.lead_name().clone(),
        config.request_timeout(),
    )
}

/// How agent `name` asks the person on whichever store the team is on (the mailbox files,
/// or the store's inboxes for a joined host), `events` told while it waits.
pub(crate) fn person_prompter<S: LinkedStore>(
    link: &TeamLink<S>,
    config: &TeamConfig,
    name: &AgentName,
    events: EventSink,
) -> Arc<dyn Prompter> {
    match link.store().files() {
        Some(workspace) => Arc::new(mailbox_prompter(workspace, config, name).with_events(events)),
        None => Arc::new(
            StorePrompter::new(
                link.clone(),
                name.clone(),
                config.lead_name().clone(),
                config.request_timeout(),
            )
            .with_events(events),
        ),
    }
}

/// WAITING while a permission request is out, WORK again when it is answered.
pub(crate) fn status_sink(status: StatusHandle) -> EventSink {
    EventSink::new(move |event| {
        let result = match &event {
            // Each call's tokens as they come; the job's end settles the count.
            AgentEvent::MessageStop { usage, .. } => {
                status.update(|s| s.tokens += usage.input_tokens + usage.output_tokens)
            }
            AgentEvent::PermissionWaiting { request_id, .. } => status.update(|s| {
                s.state = AgentState::Waiting;
                s.waiting_on = Some(request_id.clone());
            }),
            AgentEvent::PermissionAnswered { .. } => status.update(|s| {
                s.state = AgentState::Work;
                s.waiting_on = None;
            }),
            AgentEvent::SubagentStart {
                id,
                role,
                description,
                ..
            } => status.update(|s| {
                s.subagents.push(SubagentLine {
                    id: id.clone(),
                    role: role.to_string(),
                    description: description.clone(),
                    tool: None,
                    outcome: None,
                });
                // Running ones stay; the oldest that ended go first.
                while s.subagents.len() > SUBAGENT_LINES {
                    let Some(at) = s.subagents.iter().position(|l| l.outcome.is_some()) else {
                        break;
                    };
                    s.subagents.remove(at);
                }
            }),
            AgentEvent::SubagentTool { id, tool } => status.update(|s| {
                if let Some(line) = s.subagents.iter_mut().find(|l| &l.id == id) {
                    line.tool = Some(tool.clone());
                }
            }),
            AgentEvent::SubagentEnd {
                id,
                stop_reason,
                verdict,
                ..
            } => status.update(|s| {
                if let Some(line) = s.subagents.iter_mut().find(|l| &l.id == id) {
                    let reason = serde_json::to_value(stop_reason)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    line.outcome = Some(match verdict {
                        Some(verdict) => format!("{reason}, verdict {verdict}"),
                        None => reason,
                    });
                }
            }),
            _ => Ok(()),
        };
        if let Err(e) = result {
            tracing::warn!("status not written: {e}");
        }
    })
}

/// A new transcript for agent `name`'s turns, its events also kept in the status.
pub(crate) fn open_transcript(
    root: &Path,
    name: &str,
    status: &StatusHandle,
) -> Result<Arc<Emitter>, String> {
    let path = transcript_path(root, name, &new_id("session"));
    let writer = TranscriptWriter::open(path).map_err(|e| e.to_string())?;
    Ok(Arc::new(Emitter::new(status_sink(status.clone()), writer)))
}

/// The turn's input for `job`, and the task it is about. A task starts a conversation of its
/// own, so what it builds on is told here: each blocker's subject, who did it and its summary.
pub(crate) fn task_packet(
    job: &Job,
    read: &dyn Fn(TaskId) -> Option<Task>,
) -> (String, Option<String>) {
    match job {
        Job::Task(task) => {
            let mut text = format!("Task {}: {}\n", task.id, task.subject);
            if !task.description.is_empty() {
                text.push_str(&format!("\n{}\n", task.description));
            }
            let earlier = earlier_work(task, read);
            if !earlier.is_empty() {
                text.push_str("\nIt builds on work done before it:\n");
                for line in earlier {
                    text.push_str(&format!("- {line}\n"));
                }
            }
            let notes = review_notes(task);
            if !notes.is_empty() {
                text.push_str(
                    "\nYour earlier work on it is committed in your worktree; it was sent back \
                     from review:\n",
                );
                for note in notes {
                    text.push_str(&format!("- {note}\n"));
                }
            }
            text.push_str(
                "\nDo it and run its acceptance checks, then reply with a short summary of what you \
                 did and how you checked it.",
            );
            (
                text,
                Some(format!(
                    "{}: {}\n{}",
                    task.id, task.subject, task.description
                )),
            )
        }
        Job::Message(m) => {
            let answer = match m.approve {
                Some(true) => ", approved",
                Some(false) => ", rejected",
                None => "",
            };
            (
                format!(
                    "Message from {} ({}{answer}): {}",
                    m.from,
                    m.kind,
                    m.text.as_deref().unwrap_or("")
                ),
                None,
            )
        }
    }
}

/// Longest summary of a blocker's work carried into a task's packet.
const EARLIER_SUMMARY_MAX: usize = 600;

/// One line per blocker of `task` that is done: its subject, its owner and what it said at its
/// end (cut to `EARLIER_SUMMARY_MAX`); a blocker that cannot be read is left out.
fn earlier_work(task: &Task, read: &dyn Fn(TaskId) -> Option<Task>) -> Vec<String> {
    task.blocked_by
        .iter()
        .filter_map(|id| read(*id))
        .filter(|t| t.status == crew_store::Status::Completed)
        .map(|t| {
            let by = t
                .owner
                .as_ref()
                .map_or("crew".to_string(), |o| o.to_string());
            let summary = t.result.as_deref().unwrap_or("no summary").trim();
            let summary: String = if summary.chars().count() > EARLIER_SUMMARY_MAX {
                let cut: String = summary.chars().take(EARLIER_SUMMARY_MAX).collect();
                format!("{cut}…")
            } else {
                summary.to_string()
            };
            format!("{} ({}), done by {by}: {summary}", t.id, t.subject)
        })
        .collect()
}

/// The prompt-cache part of a turn's input tokens.
pub(crate) fn cache_tokens(usage: &crew_model::Usage) -> CacheTokens {
    CacheTokens {
        read: usage.cache_read_input_tokens,
        written: usage.cache_creation_input_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_store::tasks::NewTask;
    use crew_store::{Actor, Claimant, TaskId};

    #[test]
    fn a_task_packet_tells_what_its_done_blockers_did() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        let tasks = ws.tasks();
        let new = |subject: &str, blocked_by: Vec<TaskId>| NewTask {
            subject: subject.into(),
            description: String::new(),
            blocked_by,
            role: None,
        };
        tasks.create(new("Add a lexer", vec![])).unwrap();
        tasks.create(new("Sketch the parser", vec![])).unwrap();
        let bob = AgentName::parse("bob").unwrap();
        tasks
            .claim(
                TaskId(1),
                Claimant {
                    name: &bob,
                    role: None,
                },
            )
            .unwrap();
        let reader = Actor::Teammate {
            name: &bob,
            writes: false,
        };
        let long = format!("Lexer in src/lex.rs; tokens are {}", "x".repeat(900));
        tasks.complete(TaskId(1), reader, Some(long)).unwrap();
        let third = tasks
            .create(new("Add the parser", vec![TaskId(1), TaskId(2)]))
            .unwrap();
        let (text, _) = task_packet(&Job::Task(third), &|id| ws.tasks().read(id).ok());
        assert!(text.contains("It builds on work done before it:\n- task_1 (Add a lexer), done by bob: Lexer in src/lex.rs; tokens are xxx"), "{text}");
        assert!(text.contains("x…\n"), "a long summary is cut: {text}");
        assert!(
            !text.contains("Sketch the parser"),
            "only done blockers: {text}"
        );
    }
}
