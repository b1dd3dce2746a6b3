//! A team running without a screen: the teammates as processes, the lead in this process, and
//! permission requests answered by an explicit policy (never by accident: no policy, no answer,
//! and an unanswered request expires into a denial).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::merge_queue::QueueRunner;
use crate::review;
use crate::run::stand_in::StandIn;
use crate::run::supervisor::{Supervisor, SupervisorError, TeamEvent};
use crate::run::worker::{self, Canceller, ExitReason, JobReport, Worker, WorkerSettings};
use crate::work::SetupError;
use crate::work::work_for;
use crew_config::TeamConfig;
use crew_store::{AgentName, Draft, FileStore, StoreError, TaskId, Workspace};
use crew_store::{MessageKind, USER};
use std::sync::mpsc::Receiver;

/// What answers permission requests when no person is at a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Allow,
    Deny,
}

/// What happens to a task that enters review when no person is at a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergePolicy {
    /// Merged at once (a conflict, or changes to what governs the team, still wait).
    Auto,
    /// Waits, like a permission request, for `crew review merge` from another terminal.
    Manual,
    /// Approved into the merge queue at once: merged only when the tests pass on what would
    /// land (changes to what governs the team still wait for the person).
    Queue,
}

/// Something that happened, for the caller to show.
#[derive(Debug, Clone, PartialEq)]
pub enum Happening {
    Team(TeamEvent),
    Answered {
        request_id: crew_store::RequestId,
        from: AgentName,
        approved: bool,
        what: String,
    },
    /// The lead's turn ended: how, and what it said (or why it failed).
    LeadTurn {
        success: bool,
        summary: String,
    },
    /// A review was merged (by the merge policy) or could not be: what was said about it.
    Reviewed {
        id: TaskId,
        text: String,
    },
    /// The merge queue tested, landed or sent back tasks: what it said.
    Queue {
        text: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum HeadlessError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
    #[error(transparent)]
    Setup(#[from] SetupError),
}

/// How a worker for `name` is set up from crew.toml.
pub fn settings_for(config: &TeamConfig, name: &AgentName) -> WorkerSettings {
    let is_lead = name == config.lead_name();
    let secs = Duration::from_secs;
    WorkerSettings {
        name: name.clone(),
        role: config.role_of(name).map(str::to_string),
        lead: config.lead_name().clone(),
        claims: !is_lead,
        idle_poll: secs(config.worker.idle_poll_secs),
        idle_timeout: (!is_lead).then(|| secs(config.worker.idle_timeout_secs)),
        heartbeat: secs(config.worker.heartbeat_secs),
        request_timeout: config.request_timeout(),
        team_budget: config.budget,
        budget: config.agent(name).map(|a| a.budget).unwrap_or_default(),
    }
}

pub struct TeamRun {
    workspace: Workspace,
    config: Arc<TeamConfig>,
    supervisor: Supervisor,
    stand_in: StandIn,
    /// Teammates started again after they idled out, with when their old life began (until
    /// the new life writes its status, the old one still says SHUTDOWN).
    woken: std::collections::HashMap<AgentName, String>,
    lead: Option<JoinHandle<Result<ExitReason, StoreError>>>,
    /// Ends the lead's turn when a stop cannot wait for it.
    lead_cancel: Canceller,
    lead_turns: Receiver<JobReport>,
    /// Tests and lands what the person approved (and, with `--merge queue`, every review).
    queue: Option<QueueRunner>,
    pub events: Vec<Happening>,
}

/// How long a cancelled lead may take to wind its turn down before the stop goes on without it.
const LEAD_WIND_DOWN: Duration = Duration::from_secs(5);

impl TeamRun {
    /// Starts every teammate as `exe worker --name NAME`, and the lead in a thread here.
    pub fn start(
        workspace: Workspace,
        config: Arc<TeamConfig>,
        exe: PathBuf,
        policy: Option<Policy>,
        merge: MergePolicy,
        bypass: bool,
    ) -> Result<TeamRun, HeadlessError> {
        let mut supervisor = Supervisor::for_team(workspace.clone(), &config, exe);
        let lead_name = config.lead_name().clone();
        // crew's own runtime, or a CLI (Claude Code) that reaches the team through `crew mcp`.
        let mut work = work_for(workspace.clone(), config.clone(), &lead_name, bypass)?;
        let mut worker = Worker::new(
            workspace.clone(),
            config.roster(),
            settings_for(&config, &lead_name),
        )?;
        let lead_cancel = worker.canceller();
        let lead_turns = worker.report_jobs();
        // The lead stops like every teammate, through a shutdown request in its inbox: a file
        // event wakes it at once, where a flag would wait for its next idle poll.
        let lead = std::thread::spawn(move || worker.run(work.as_mut(), &AtomicBool::new(false)));
        let mut events = Vec::new();
        let extra: Vec<String> = if bypass {
            vec!["--dangerously-bypass".into()]
        } else {
            Vec::new()
        };
        for mate in &config.teammates {
            let name = mate.name.get_ref();
            if let Some(status) = workspace.agents().read(name)?
                && !status.state.is_final()
                && crew_store::pid_alive(status.pid)
            {
                events.push(Happening::Team(TeamEvent::Adopted {
                    name: name.clone(),
                    pid: status.pid,
                }));
                continue;
            }
            let pid = supervisor.start(name, &extra)?;
            events.push(Happening::Team(TeamEvent::Started {
                name: name.clone(),
                pid,
            }));
        }
        let (workspace_for_queue, queue_config) = (workspace.clone(), config.clone());
        Ok(TeamRun {
            workspace,
            config,
            supervisor,
            stand_in: StandIn::new(policy, merge),
            woken: Default::default(),
            lead: Some(lead),
            lead_cancel,
            lead_turns,
            queue: Some(QueueRunner::start(workspace_for_queue, queue_config)),
            events,
        })
    }

    pub(crate) fn teammates(&self) -> Vec<AgentName> {
        self.config.teammate_names()
    }

    /// Sends the lead its goal, as a message from the person.
    pub fn give_goal(&self, goal: &str) -> Result<(), StoreError> {
        self.tell_lead(MessageKind::Message, format!("Goal: {goal}"), false)
    }

    /// A message (or a request) from the person to the lead.
    fn tell_lead(&self, kind: MessageKind, text: String, request: bool) -> Result<(), StoreError> {
        self.workspace
            .mailboxes()
            .send(
                &self.config.roster(),
                Draft {
                    kind,
                    text: Some(text),
                    request,
                    ..Draft::new(USER, self.config.lead_name().clone())
                },
            )
            .map(|_| ())
    }

    /// One look: dead or exited workers, and pending permission requests for the policy.
    pub fn tick(&mut self) -> Result<Vec<Happening>, StoreError> {
        let mut new: Vec<Happening> = self
            .supervisor
            .check(&self.teammates())?
            .into_iter()
            .map(Happening::Team)
            .collect();
        new.extend(
            self.lead_turns
                .try_iter()
                .filter(|r| !r.interrupted)
                .map(|r| Happening::LeadTurn {
                    success: r.success,
                    summary: r.summary,
                }),
        );
        new.extend(self.wake_idled_out()?);
        let desk = review::Desk::files(&self.workspace, &self.config);
        let store = FileStore::new(self.workspace.clone(), self.config.roster());
        new.extend(futures::executor::block_on(self.stand_in.act(
            &store,
            &desk,
            &self.workspace.merge_queue(),
            self.config.request_timeout(),
        ))?);
        if let Some(queue) = &self.queue {
            new.extend(
                queue
                    .said()
                    .into_iter()
                    .map(|text| Happening::Queue { text }),
            );
        }
        self.events.extend(new.iter().cloned());
        Ok(new)
    }

    /// Teammates that shut themselves down for idleness, started again once a task they may
    /// claim is ready (its blockers completed).
    fn wake_idled_out(&mut self) -> Result<Vec<Happening>, StoreError> {
        let mut woken = Vec::new();
        let mut tasks: Option<Vec<crew_store::Task>> = None;
        for name in self.teammates() {
            let Some(status) = self.workspace.agents().read(&name)? else {
                continue;
            };
            if !worker::idled_out(&status) || self.woken.get(&name) == Some(&status.started_at) {
                continue;
            }
            let tasks = match &mut tasks {
                Some(tasks) => tasks,
                None => tasks.insert(self.workspace.tasks().load_all()?.tasks),
            };
            let done: Vec<TaskId> = tasks
                .iter()
                .filter(|t| t.status == crew_store::Status::Completed)
                .map(|t| t.id)
                .collect();
            let me = crew_store::Claimant {
                name: &name,
                role: self.config.role_of(&name),
            };
            let ready = tasks
                .iter()
                .any(|t| me.may_get(t) && t.blocked_by.iter().all(|b| done.contains(b)));
            if !ready {
                continue;
            }
            match self.supervisor.restart(&self.config, &name) {
                Ok(pid) => {
                    self.woken.insert(name.clone(), status.started_at.clone());
                    woken.push(Happening::Team(TeamEvent::Started { name, pid }));
                }
                Err(e) => tracing::warn!("{name} not started again for its new task: {e}"),
            }
        }
        Ok(woken)
    }

    /// Waits for the next change in the inboxes or tasks, at most `max`.
    pub fn wait(&self, watcher: &crew_store::DirWatcher, max: Duration) {
        watcher.wait(max);
    }

    /// Shuts the team down: the lead and every teammate are asked to stop and given `grace`
    /// to finish the job in hand; then teammates still busy are ended and the lead's turn is
    /// cancelled.
    pub fn stop(self, grace: Duration) -> Result<Vec<Happening>, StoreError> {
        self.stop_watched(grace, &mut |_, _| false)
    }

    /// As [`TeamRun::stop`] with nothing left to do for the lead (every task done): its turn
    /// (a reply to the last notice, say) is cancelled at once rather than waited for.
    pub fn finish(self, grace: Duration) -> Result<Vec<Happening>, StoreError> {
        self.stop_inner(grace, true, &mut |_, _| false)
    }

    /// As [`TeamRun::stop`], telling `watch` who is still running and the time left (see
    /// [`Supervisor::shut_down_watched`]); `watch` returning true ends the wait at once.
    pub(crate) fn stop_watched(
        self,
        grace: Duration,
        watch: &mut dyn FnMut(&[AgentName], Duration) -> bool,
    ) -> Result<Vec<Happening>, StoreError> {
        self.stop_inner(grace, false, watch)
    }

    fn stop_inner(
        mut self,
        grace: Duration,
        cancel_lead_turn: bool,
        watch: &mut dyn FnMut(&[AgentName], Duration) -> bool,
    ) -> Result<Vec<Happening>, StoreError> {
        // One grace period for everyone: the lead's counts from the stop's start too.
        let deadline = Instant::now() + grace;
        // A test in progress ends; its tasks wait in the queue for the next start.
        drop(self.queue.take());
        let teammates = self.teammates();
        let mut forced = false;
        let mut out: Vec<Happening> = self
            .supervisor
            .shut_down_watched(&teammates, grace, &mut |names, left| {
                forced = watch(names, left);
                forced
            })?
            .into_iter()
            .map(Happening::Team)
            .collect();
        if let Some(lead) = self.lead.take() {
            // Asked once the teammates are done, so their last reports reach it first.
            if !lead.is_finished() {
                self.ask_lead_to_stop()?;
                if cancel_lead_turn {
                    self.lead_cancel.cancel_turn();
                }
            }
            // An idle lead answers at once: that moment is given even when the grace is spent.
            let deadline = deadline.max(Instant::now() + Duration::from_secs(1));
            let lead_name = [self.config.lead_name().clone()];
            let mut cancelled_at = None;
            while !lead.is_finished() {
                let left = deadline.saturating_duration_since(Instant::now());
                if cancelled_at.is_none() && (forced || left.is_zero() || watch(&lead_name, left)) {
                    tracing::warn!("the lead's turn is cancelled: the stop's grace period is over");
                    self.lead_cancel.cancel();
                    cancelled_at = Some(Instant::now());
                }
                if cancelled_at.is_some_and(|at: Instant| at.elapsed() > LEAD_WIND_DOWN) {
                    // The process ends, and with it the thread.
                    tracing::warn!("the lead did not wind down its cancelled turn; left behind");
                    self.events.extend(out.iter().cloned());
                    return Ok(out);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            match lead.join() {
                Ok(Ok(_)) => out.push(Happening::Team(TeamEvent::Exited {
                    name: self.config.lead_name().clone(),
                    code: Some(0),
                })),
                Ok(Err(e)) => return Err(e),
                Err(_) => tracing::error!("the lead's thread panicked"),
            }
        }
        self.events.extend(out.iter().cloned());
        Ok(out)
    }

    /// The person asks the lead to shut down; it answers and exits at its next look at its
    /// inbox (at once when idle, after the job in hand when busy).
    fn ask_lead_to_stop(&self) -> Result<(), StoreError> {
        self.tell_lead(
            MessageKind::ShutdownRequest,
            "the team is shutting down".into(),
            true,
        )
    }
}
