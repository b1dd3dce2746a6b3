//! A worker's `Work` in production: the agent runtime, set up for the agent's role.
//!
//! Conversations last: the lead keeps one for the life of the team; a teammate keeps one per
//! task (a message naming the task, or the task coming back, continues it; any other message
//! continues its latest one). Each is kept on disk (`agent::conversation`), so a new worker
//! process resumes it. The agent runs with the toolset of the role, in the teammate's worktree
//! if it writes. A permission `ask` goes to the lead's inbox
//! through the mailbox prompter; while it waits, the status says WAITING.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crew_agent::conversation;
use crew_agent::{Agent, AgentConfig, Limits, StopReason};
use crew_config::{AgentEntry, ModelChoice, TeamConfig};
use crew_git::Worktrees;
use crew_model::scripted::ScriptedProvider;
use crew_model::{ModelProvider, ProviderSpec, RetryPolicy, provider_from_spec};

use crate::review;
use crate::run::link::{LinkedStore, TeamLink};
use crate::run::status::StatusHandle;
use crate::tools::TeamEnv;
use crate::tools::roles::toolset;
use crate::verdict::{self, Verdict};
use crate::work::role_prompt;
use crate::work::store_conversation::StoreConversation;
use crate::work::store_memory::StoreMemory;
use crate::work::task_branch::TaskBranch;
use crate::work::{
    INTERRUPTED_BY_PERSON, Job, JobOutcome, SetupError, Work, cache_tokens, permission_setup,
    person_prompter, status_sink, task_packet, working_dir,
};
use crew_store::MessageKind;
use crew_store::requests::RequestState;
use crew_store::{
    AgentName, Draft, FileStore, Message, ReviewerVerdict, Status, Task, TaskId, Workspace,
};
use crew_tools::permissions::{BypassSwitches, RuleSet};
use crew_tools::spill::floor_char_boundary;
use crew_tools::{Hooks, PermissionMode, PermissionPolicy, Pipeline, Sandbox};

/// How a reviewer ends a report; without the line the review has no verdict and is not a pass.
const REVIEWER_ENDING: &str = "As the reviewer: show each command you ran as a `$ command` line \
     followed by its output, and end your report with exactly one line `VERDICT: PASS`, \
     `VERDICT: FAIL` or `VERDICT: PARTIAL`. A report without that line counts as no verdict, \
     never as a pass.";

pub(crate) struct AgentWork<S: LinkedStore = FileStore> {
    /// This host's repository: the person's checkout, or a joined host's clone.
    root: PathBuf,
    link: TeamLink<S>,
    config: Arc<TeamConfig>,
    name: AgentName,
    role: String,
    writes: bool,
    plan_mode_required: bool,
    model: Arc<dyn ModelProvider>,
    model_name: String,
    permissions: PermissionMode,
    rules: RuleSet,
    bypass: BypassSwitches,
    sandbox: Sandbox,
    /// The rules part of the static prompt: general rules, team protocol, the role's duties.
    instructions: String,
    runtime: tokio::runtime::Runtime,
    /// The agent of the conversation last worked on, kept while jobs continue it.
    current: Option<Current>,
}

struct Current {
    conversation: Conversation,
    /// Whether its toolset was built with the plan approved (a change rebuilds the agent).
    plan_approved: bool,
    agent: Agent,
}

/// Which provider a `model = {...}` entry means. A scripted `scenario` is a file relative to the
/// repository, or else the name of a scenario built into crew (`demo`, `echo`).
pub(crate) fn provider_for(
    entry: &ModelChoice,
    repo_root: &std::path::Path,
) -> Result<Arc<dyn ModelProvider>, String> {
    if entry.provider == "scripted"
        && let Some(scenario) = &entry.scenario
    {
        let path = repo_root.join(scenario);
        if !path.exists()
            && let Some(builtin) = ScriptedProvider::builtin(scenario)
        {
            return builtin
                .map(|p| Arc::new(p) as Arc<dyn ModelProvider>)
                .map_err(|e| e.to_string());
        }
    }
    let spec = ProviderSpec {
        kind: entry.provider.clone(),
        model: entry.model.clone().unwrap_or_default(),
        base_url: entry.base_url.clone(),
        api_key_env: entry.api_key_env.clone(),
        scenario: entry.scenario.as_ref().map(|s| repo_root.join(s)),
        thinking: entry.thinking.as_ref().map(|t| *t.get_ref()),
        fallback_model: entry.fallback_model.as_ref().map(|f| f.get_ref().clone()),
        fallback_after: entry.fallback_after,
        stream: entry.stream.as_ref().map(|s| *s.get_ref()),
    };
    provider_from_spec(&spec)
        .map(Arc::from)
        .map_err(|e| e.to_string())
}

impl AgentWork<FileStore> {
    pub(crate) fn new(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let root = workspace.root().to_path_buf();
        let link = TeamLink::files(FileStore::new(workspace, config.roster()));
        AgentWork::on(link, root, config, name, bypass_flag)
    }
}

impl<S: LinkedStore> AgentWork<S> {
    /// Agent `name`'s work in the repository at `root`, its team in the store `link` reaches.
    pub(crate) fn on(
        link: TeamLink<S>,
        root: PathBuf,
        config: Arc<TeamConfig>,
        name: &str,
        bypass_flag: bool,
    ) -> Result<Self, SetupError> {
        let entry: &AgentEntry = config
            .agent(name)
            .ok_or_else(|| SetupError::UnknownAgent(name.to_string()))?;
        let role = config.role_of(name).unwrap_or("lead").to_string();
        let model = provider_for(&entry.model, &root).map_err(|message| SetupError::Model {
            name: name.to_string(),
            message,
        })?;
        let (permissions, rules, bypass) = permission_setup(&config, name, bypass_flag)?;
        Hooks::new(config.hooks.clone()).map_err(|e| SetupError::Hooks(e.to_string()))?;
        let sandbox = config.sandbox_for(entry);
        // Probed here, once, before the first command; said in this agent's log.
        if let Some(warning) = sandbox.warning() {
            tracing::warn!(agent = name, "{warning}");
        }
        role_prompt::check(&config, &root)?;
        let instructions =
            role_prompt::assemble(&role, &role_prompt::duties(&config, &root, &role)?);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(SetupError::Runtime)?;
        Ok(AgentWork {
            writes: entry.writes,
            // `plan` mode asks every teammate for a plan, as `plan_mode_required` asks one.
            plan_mode_required: entry.plan_mode_required || permissions == PermissionMode::Plan,
            model_name: entry.model.model.clone().unwrap_or_default(),
            name: entry.name.get_ref().clone(),
            role,
            link,
            root,
            config,
            model,
            permissions,
            rules,
            bypass,
            sandbox,
            instructions,
            runtime,
            current: None,
        })
    }

    /// A plan-mode teammate writes only once a plan of its was approved (read from the inboxes).
    fn plan_approved(&self) -> bool {
        if !self.plan_mode_required {
            return true;
        }
        let timeout = self.config.request_timeout();
        self.link
            .call(|store| async move { store.requests(timeout).await })
            .map(|all| {
                all.iter().any(|r| {
                    r.kind == MessageKind::PlanApprovalRequest
                        && r.from == self.name
                        && r.state == RequestState::Approved
                })
            })
            .unwrap_or(false)
    }

    fn working_dir(&self) -> Result<PathBuf, String> {
        working_dir(&self.root, &self.config, &self.name, self.writes)
    }

    fn team_facts(&self, workdir: &std::path::Path) -> Vec<String> {
        let mates: Vec<String> = self
            .config
            .teammates
            .iter()
            .map(|t| {
                let name = t.name.get_ref();
                format!("{name} ({})", self.config.role_of(name).unwrap_or("?"))
            })
            .collect();
        let mut facts = vec![
            format!(
                "You are {} ({}) on team {}. The lead is {}. Teammates: {}.",
                self.name,
                self.role,
                self.config.team.name.get_ref(),
                self.config.lead_name(),
                mates.join(", ")
            ),
            format!("You work in {}.", workdir.display()),
        ];
        if self.role == "reviewer" {
            facts.push(REVIEWER_ENDING.to_string());
        }
        facts
    }

    fn branch(&self) -> TaskBranch<'_, S> {
        TaskBranch {
            link: &self.link,
            root: &self.root,
            config: &self.config,
            name: &self.name,
        }
    }

    fn build_agent(&self, workdir: PathBuf, status: &StatusHandle) -> Result<Agent, String> {
        let env = Arc::new(TeamEnv::of(
            self.link.clone(),
            &self.config,
            &self.name,
            &self.role,
        ));
        let extra: Vec<String> = self.config.team.test_command.iter().cloned().collect();
        let plan_approved = self.plan_approved();
        let registry = toolset(&self.role, self.writes, plan_approved, env, &extra)
            .map_err(|e| e.to_string())?;
        // Until its plan is approved an agent is in plan mode whatever the configured mode, so
        // no tool (whatever its toolset) writes or runs commands; then `plan` gives way.
        let mode = if plan_approved {
            self.permissions.after_plan_approval()
        } else {
            PermissionMode::Plan
        };
        let policy =
            PermissionPolicy::new(mode, &self.rules, self.bypass).map_err(|e| e.to_string())?;
        let sink = status_sink(status.clone());
        let prompter = person_prompter(&self.link, &self.config, &self.name, sink.clone());
        let hooks = Hooks::new(self.config.hooks.clone())
            .map_err(|e| e.to_string())?
            .confined(&self.sandbox);
        let pipeline = Pipeline::new(registry, policy)
            .with_hooks(hooks)
            .with_prompter(prompter);
        let mut agent = Agent::new(
            AgentConfig {
                name: self.name.clone(),
                role: self.role.clone(),
                model: self.model.clone(),
                model_name: self.model_name.clone(),
                pipeline,
                workspace: workdir.clone(),
                repo_root: self.root.clone(),
                limits: self.limits(),
                retry: RetryPolicy::default(),
                compaction: crew_agent::CompactionThresholds {
                    context_window: self
                        .config
                        .agent(&self.name)
                        .and_then(|a| a.model.context_window)
                        .map(|w| u64::from(w.0)),
                    ..self.config.compaction.thresholds()
                },
                sandbox: self.sandbox.clone(),
            },
            sink,
        )
        .map_err(|e| e.to_string())?;
        agent.set_rules(self.instructions.clone());
        agent.set_memory_limits(self.config.limits);
        // On another host the memories are the store's, shared with the team.
        if self.link.store().files().is_none() {
            agent.set_memory(Arc::new(StoreMemory {
                link: self.link.clone(),
                agent: self.name.clone(),
            }));
        }
        agent.enable_subagents(self.config.subagents.clone());
        agent.set_team_facts(self.team_facts(&workdir));
        show_todos(&agent, status);
        Ok(agent)
    }
}

/// The agent's checklist goes into its status (the screen shows it in its pane); a new agent
/// starts with an empty one, and with no subagents shown.
fn show_todos(agent: &Agent, status: &StatusHandle) {
    let write = |status: &StatusHandle, items: &[crew_store::TodoItem]| {
        if let Err(e) = status.update(|s| s.todos = items.to_vec()) {
            tracing::warn!("status not written: {e}");
        }
    };
    write(status, &[]);
    if let Err(e) = status.update(|s| s.subagents.clear()) {
        tracing::warn!("status not written: {e}");
    }
    let status = status.clone();
    agent.todos().watch(move |items| write(&status, items));
}

impl<S: LinkedStore> AgentWork<S> {
    /// The provider's own figure when it reports one, else the configured price, else unknown.
    fn cost_micros(&self, usage: &crew_model::Usage) -> Option<u64> {
        usage.cost_micros.or_else(|| {
            let price = self.config.agent(&self.name)?.model.price?;
            Some(price.micros(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_input_tokens,
                usage.cache_creation_input_tokens,
            ))
        })
    }
}

impl<S: LinkedStore> AgentWork<S> {
    /// Which conversation a job continues: the lead's only one; a task's own; for a message,
    /// the task it names (a `task` field), else the latest one, else the first messages'.
    fn conversation_of(&self, job: &Job) -> Conversation {
        if self.name == *self.config.lead_name() {
            return Conversation::Lead;
        }
        match job {
            Job::Task(task) => Conversation::Task(task.id),
            Job::Message(m) => m
                .extra
                .get("task")
                .and_then(|t| t.as_str())
                .and_then(|t| TaskId::parse(t).ok())
                .map(Conversation::Task)
                .or_else(|| self.current.as_ref().map(|c| c.conversation))
                .or_else(|| self.latest_key().map(|key| Conversation::of_key(&key)))
                .unwrap_or(Conversation::Messages),
        }
    }

    /// The key of the conversation this agent kept last: on files in its checkout, else in the
    /// store (whichever host kept it).
    fn latest_key(&self) -> Option<String> {
        if self.link.store().files().is_some() {
            return conversation::latest_key(&self.root, &self.name);
        }
        let name = self.name.clone();
        self.link
            .call(|store| async move { store.latest_conversation(&name).await })
            .unwrap_or_else(|e| {
                tracing::warn!(agent = %self.name, "latest conversation not read: {e}");
                None
            })
    }

    /// Makes `current` the agent for `conversation`: the one in memory when it is that
    /// conversation's, else a new one resuming the conversation from its file (on files) or
    /// from the store.
    fn ensure_agent(
        &mut self,
        conversation: Conversation,
        workdir: PathBuf,
        status: &StatusHandle,
    ) -> Result<(), String> {
        let plan_approved = self.plan_approved();
        let reuse = self
            .current
            .as_ref()
            .is_some_and(|c| c.conversation == conversation && c.plan_approved == plan_approved);
        if !reuse {
            self.current = None;
            let mut agent = self.build_agent(workdir, status)?;
            let root = &self.root;
            let key = conversation.key();
            if self.link.store().files().is_some() {
                let path = conversation::conversation_path(root, &self.name, &key)
                    .map_err(|e| e.to_string())?;
                agent.resume_from(path).map_err(|e| e.to_string())?;
                conversation::set_latest_key(root, &self.name, &key).map_err(|e| e.to_string())?;
            } else {
                let kept = StoreConversation {
                    link: self.link.clone(),
                    who: self.name.clone(),
                    key,
                };
                let (raw, unreadable) = kept.load().map_err(|e| e.to_string())?;
                agent
                    .resume_with(Box::new(kept), raw, unreadable)
                    .map_err(|e| e.to_string())?;
            }
            self.current = Some(Current {
                conversation,
                plan_approved,
                agent,
            });
        }
        Ok(())
    }
}

impl<S: LinkedStore> AgentWork<S> {
    fn task(&self, id: TaskId) -> Result<Task, crew_store::StoreError> {
        self.link.call(|store| async move { store.task(id).await })
    }

    /// Makes sure this host's repository has the commits under review: on a joined host they
    /// were made on another, so its base is brought to the remote's and the task's branch
    /// fetched at its recorded head.
    fn commits_here(&self, id: TaskId, commits: &crew_store::TaskCommits) -> Result<(), String> {
        if self.link.store().files().is_some() {
            return Ok(());
        }
        let Some(remote) = review::team_remote(&self.config, &self.root) else {
            return Err("the team has no remote to fetch the task's commits from".into());
        };
        let base = &self.config.team.base_branch;
        remote
            .update_base(&self.root, base)
            .map_err(|e| e.to_string())?;
        let trees = Worktrees::open(&self.root).map_err(|e| e.to_string())?;
        remote
            .fetch_task(&trees, &commits.branch, &id.to_string(), &commits.head)
            .map_err(|e| e.to_string())
    }
}

impl<S: LinkedStore> Work for AgentWork<S> {
    fn entered_review(&mut self, task: &Task) {
        self.branch().ask_for_review(task);
    }

    fn run(&mut self, job: &Job, status: &StatusHandle, cancel: &CancellationToken) -> JobOutcome {
        if let Job::Message(m) = job
            && m.kind == MessageKind::ReviewRequest
        {
            return self.review_job(m, status, cancel);
        }
        let workdir = match self.working_dir() {
            Ok(dir) => dir,
            Err(e) => return JobOutcome::failed(format!("no worktree: {e}")),
        };
        if let (Job::Task(task), true) = (job, self.writes)
            && let Err(e) = self.branch().prepare(task)
        {
            return JobOutcome::failed(e);
        }
        let conversation = self.conversation_of(job);
        if let Err(e) = self.ensure_agent(conversation, workdir, status) {
            return JobOutcome::failed(format!("agent not started: {e}"));
        }
        let Some(Current { agent, .. }) = self.current.as_mut() else {
            return JobOutcome::failed("agent not started".to_string());
        };
        let link = &self.link;
        let read = |id: TaskId| link.call(|store| async move { store.task(id).await }).ok();
        let (input, task) = task_packet(job, &read);
        if task.is_some() {
            agent.set_task(task);
        }
        let result = self.runtime.block_on(agent.run_turn(input, cancel.clone()));
        let interrupted = result.stop_reason == StopReason::Interrupted;
        if interrupted {
            agent.add_note(INTERRUPTED_BY_PERSON);
        }
        let completed = result.stop_reason == StopReason::Completed;
        let reviewer = self.role == "reviewer" && matches!(job, Job::Task(_));
        let (success, no_verdict) = verdict::judge(reviewer, completed, &result.output);
        let summary = match no_verdict {
            Some(summary) => summary,
            None if completed => result.output.trim().to_string(),
            None => format!("stopped ({:?}): {}", result.stop_reason, result.reason),
        };
        let mut outcome = JobOutcome {
            success,
            summary: truncate(&summary, 4000),
            turns: u64::from(result.turns),
            tokens: result.usage.input_tokens + result.usage.output_tokens,
            cost_micros: self.cost_micros(&result.usage),
            cache: cache_tokens(&result.usage),
            commits: None,
            interrupted,
        };
        // The task this job worked on: its own, or the one a message after an interrupt
        // continues (its work is committed the same way). An interrupted one needs no keeping
        // here: its conversation is the current one, which the next message continues.
        let continued = match job {
            Job::Task(_) => None,
            Job::Message(_) => self.continued_task(),
        };
        self.branch()
            .settle(job, continued, self.writes, &mut outcome);
        outcome
    }
}

impl<S: LinkedStore> AgentWork<S> {
    /// One job's limits: the agent's `budget.wall_secs`, else the team's, else the default;
    /// the agent's `max_output_tokens`, else the default.
    fn limits(&self) -> Limits {
        let entry = self.config.agent(&self.name);
        let defaults = Limits::default();
        let wall = entry
            .and_then(|a| a.budget.wall_secs)
            .or(self.config.budget.wall_secs);
        Limits {
            wall_time: wall.map_or(defaults.wall_time, std::time::Duration::from_secs),
            max_output_tokens: entry
                .and_then(|a| a.model.max_output_tokens)
                .map_or(defaults.max_output_tokens, |n| n.0),
            ..defaults
        }
    }

    /// The task of the current conversation when it is still in progress under this agent (a
    /// message continues a task the person interrupted).
    fn continued_task(&self) -> Option<Task> {
        let Conversation::Task(id) = self.current.as_ref()?.conversation else {
            return None;
        };
        let task = self.task(id).ok()?;
        (task.status == Status::InProgress && task.owner.as_ref() == Some(&self.name))
            .then_some(task)
    }

    /// The reviewer's side: the base with the task's commits merged in, written to a temporary
    /// folder, reviewed there (the team's `test_command` included); the verdict is recorded on
    /// the task, told to the lead, and a FAIL sends the task back when the team asked for that.
    fn review_job(
        &self,
        request: &Message,
        status: &StatusHandle,
        cancel: &CancellationToken,
    ) -> JobOutcome {
        let mut outcome = JobOutcome::failed(String::new());
        let task = request
            .extra
            .get("task")
            .and_then(|v| v.as_str())
            .and_then(|id| TaskId::parse(id).ok())
            .and_then(|id| Some((id, self.task(id).ok()?)));
        let Some((id, task, commits)) = task
            .filter(|(_, t)| t.status == Status::Review)
            .and_then(|(id, t)| t.commits.clone().map(|c| (id, t, c)))
        else {
            outcome.success = true;
            outcome.summary = "nothing to review: that task is not in review".into();
            return outcome;
        };
        let dir = self
            .root
            .join(".crew/reviews")
            .join(format!("{}-{}", task.id, self.name));
        let _ = std::fs::remove_dir_all(&dir);
        let base = &self.config.team.base_branch;
        let exported = self
            .commits_here(id, &commits)
            .and_then(|()| Worktrees::open(&self.root).map_err(|e| e.to_string()))
            .and_then(|t| {
                t.export_merged(&commits.head, base, &dir)
                    .map_err(|e| e.to_string())
            });
        let report = match exported {
            Err(e) => format!("could not check out {base} with {}: {e}", task.id),
            Ok(conflicts) if !conflicts.is_empty() => format!(
                "{} does not merge into {base}: conflicts in {}\n\nVERDICT: FAIL",
                task.id,
                conflicts.join(", ")
            ),
            Ok(_) => self.run_review(&task, &dir, status, &mut outcome, cancel),
        };
        let _ = std::fs::remove_dir_all(&dir);
        let verdict = verdict::parse(&report);
        let label = verdict::label(verdict);
        let verdict_of = ReviewerVerdict {
            by: self.name.clone(),
            verdict: label.to_string(),
            head: commits.head.clone(),
            report: truncate(&report, 4000),
        };
        let recorded = self
            .link
            .call(|store| async move { store.record_verdict(id, verdict_of).await });
        let mut said = format!("{} reviewed {}: {label}", self.name, task.id);
        if let Err(e) = recorded {
            said.push_str(&format!(" (not recorded: {e})"));
        } else if verdict == Some(Verdict::Fail)
            && self.config.worktree.auto_send_back_on_fail
            && auto_send_backs(&task, &self.name) >= MAX_AUTO_SEND_BACKS
        {
            said.push_str(&format!(
                "; left for the person: sent back automatically {MAX_AUTO_SEND_BACKS} times already"
            ));
        } else if verdict == Some(Verdict::Fail) && self.config.worktree.auto_send_back_on_fail {
            let note = format!(
                "{} found it failing:\n{}",
                self.name,
                truncate(&report, 2000)
            );
            let (config, root, by) = (self.config.clone(), self.root.clone(), self.name.clone());
            let sent_back = self.link.call(|store| async move {
                let desk = review::Desk::new(store, root, &config);
                Ok(desk.send_back(id, &by, &note).await)
            });
            match sent_back.map_err(review::ReviewError::from).and_then(|r| r) {
                Ok(_) => said.push_str("; sent back to its teammate (auto_send_back_on_fail)"),
                Err(e) => said.push_str(&format!("; not sent back: {e}")),
            }
        }
        let draft = Draft {
            kind: MessageKind::StatusUpdate,
            text: Some(said.clone()),
            ..Draft::new(self.name.clone(), self.config.lead_name().clone())
        };
        let told = self
            .link
            .call(|store| async move { store.send(draft).await });
        if let Err(e) = told {
            tracing::warn!("{}: review note not sent: {e}", self.name);
        }
        outcome.success = verdict.is_some();
        outcome.summary = said;
        outcome
    }

    fn run_review(
        &self,
        task: &Task,
        dir: &std::path::Path,
        status: &StatusHandle,
        outcome: &mut JobOutcome,
        cancel: &CancellationToken,
    ) -> String {
        let mut agent = match self.build_agent(dir.to_path_buf(), status) {
            Ok(agent) => agent,
            Err(e) => return format!("reviewer not started: {e}"),
        };
        let test = self
            .config
            .team
            .test_command
            .as_deref()
            .map(|c| format!(" The team's test command is `{c}`: run it."))
            .unwrap_or_default();
        let input = format!(
            "Review {}: {} (by {}). This folder holds {} with the task's commits merged in.{test} \
             Look at what the task changed, then end with a VERDICT line.\n\nWhat its teammate \
             said:\n{}",
            task.id,
            task.subject,
            task.owner.as_deref().unwrap_or("?"),
            self.config.team.base_branch,
            task.result.as_deref().unwrap_or("")
        );
        agent.set_task(Some(format!("review of {}: {}", task.id, task.subject)));
        let result = self.runtime.block_on(agent.run_turn(input, cancel.clone()));
        outcome.interrupted = result.stop_reason == StopReason::Interrupted;
        outcome.turns = u64::from(result.turns);
        outcome.tokens = result.usage.input_tokens + result.usage.output_tokens;
        outcome.cost_micros = self.cost_micros(&result.usage);
        outcome.cache = cache_tokens(&result.usage);
        if result.stop_reason == StopReason::Completed {
            result.output.trim().to_string()
        } else {
            format!("stopped ({:?}): {}", result.stop_reason, result.reason)
        }
    }
}

/// Which of an agent's lasting conversations a job goes on with; its key names the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Conversation {
    /// The lead's one conversation.
    Lead,
    Task(TaskId),
    /// A teammate's, when its first job is a message.
    Messages,
}

impl Conversation {
    /// The file's key (a valid conversation key: a generated id would be longer than a name
    /// may be).
    fn key(self) -> String {
        match self {
            Conversation::Lead => "lead".to_string(),
            Conversation::Task(id) => id.to_string(),
            Conversation::Messages => "messages".to_string(),
        }
    }

    /// The conversation a key read back from `latest` names (only `key` writes them).
    fn of_key(key: &str) -> Conversation {
        match key {
            "lead" => Conversation::Lead,
            key => TaskId::parse(key).map_or(Conversation::Messages, Conversation::Task),
        }
    }
}

/// A reviewer sends a failing task back on its own at most this often; then the person decides
/// (a teammate that cannot fix it would otherwise bounce between the two for ever).
const MAX_AUTO_SEND_BACKS: usize = 3;

/// How often `reviewer` has already sent `task` back (its notes say so each time).
fn auto_send_backs(task: &Task, reviewer: &str) -> usize {
    let said = format!(": sent back by {reviewer}: ");
    task.notes.iter().filter(|n| n.contains(&said)).count()
}

fn truncate(text: &str, max: usize) -> String {
    let end = floor_char_boundary(text, max);
    if end == text.len() {
        text.to_string()
    } else {
        format!("{}…", &text[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_model::Usage;

    fn work(model: &str) -> AgentWork {
        let text = format!("[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {model}\n");
        let config = TeamConfig::parse(std::path::Path::new("crew.toml"), &text).unwrap();
        let dir = tempfile::tempdir().unwrap();
        AgentWork::new(Workspace::new(dir.path()), Arc::new(config), "lead", false).unwrap()
    }

    #[test]
    fn cost_is_the_providers_figure_else_the_configured_price_else_unknown() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 200,
            cache_read_input_tokens: 10_000,
            cache_creation_input_tokens: 0,
            cost_micros: None,
        };
        let priced = work(
            r#"{ provider = "scripted", price = { input = 3.0, output = 15.0, cache_read = 0.3 } }"#,
        );
        // 1,000 × 3 + 200 × 15 + 10,000 × 0.3 millionths of a dollar.
        assert_eq!(priced.cost_micros(&usage), Some(9_000));
        let reported = Usage {
            cost_micros: Some(42),
            ..usage
        };
        assert_eq!(priced.cost_micros(&reported), Some(42));
        let unpriced = work(r#"{ provider = "scripted" }"#);
        assert_eq!(unpriced.cost_micros(&usage), None);
    }

    #[test]
    fn the_configured_output_limit_is_each_jobs_and_the_default_otherwise() {
        let set = work(r#"{ provider = "scripted", max_output_tokens = 2048 }"#);
        assert_eq!(set.limits().max_output_tokens, 2048);
        let unset = work(r#"{ provider = "scripted" }"#);
        assert_eq!(
            unset.limits().max_output_tokens,
            Limits::default().max_output_tokens
        );
    }

    /// The whole static prompt of each role (what providers cache), and its fingerprint
    /// unchanged across jobs, conversations and a new process.
    #[test]
    fn each_roles_static_prompt_is_assembled_in_order_and_stays_stable() {
        let text = "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = { provider = \"scripted\" }\n";
        let mut text = text.to_string();
        for role in ["planner", "implementer", "reviewer", "explorer"] {
            text.push_str(&format!(
                "\n[[teammate]]\nname = \"{role}1\"\nrole = \"{role}\"\nmodel = {{ provider = \"scripted\" }}\n"
            ));
        }
        let config = Arc::new(TeamConfig::parse(std::path::Path::new("crew.toml"), &text).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        for name in ["lead", "planner1", "implementer1", "reviewer1", "explorer1"] {
            let work = AgentWork::new(ws.clone(), config.clone(), name, false).unwrap();
            let status = StatusHandle::new(
                &crate::run::link::TeamLink::files(crew_store::FileStore::new(
                    ws.clone(),
                    config.roster(),
                )),
                crew_store::AgentStatus::new(&name.parse().unwrap(), crew_store::AgentState::Idle),
            )
            .unwrap();
            let agent = work.build_agent(dir.path().to_path_buf(), &status).unwrap();
            insta::assert_snapshot!(format!("role_prompt_{}", work.role), agent.static_prefix());
            let again = AgentWork::new(ws.clone(), config.clone(), name, false)
                .unwrap()
                .build_agent(dir.path().to_path_buf(), &status)
                .unwrap();
            assert_eq!(agent.prefix_fingerprint(), again.prefix_fingerprint());
        }
    }
}
