//! A teammate's lifecycle: WORK, WAITING (a person must answer), IDLE, SHUTDOWN.
//!
//! The same lifecycle on either team store (`TeamLink`): the checkout's files, or PostgreSQL for
//! a teammate on another host. An idle worker sleeps on changes to its inbox and the tasks (file
//! events, or NOTIFY; and at least every `idle_poll`), so it uses no CPU to speak of. Inbox order: `shutdown_request` first, then the
//! lead's messages, then the rest as they came. With nothing in the inbox it claims the oldest
//! claimable task that fits its role. After `idle_timeout` with nothing to do it tells the lead
//! (`idle_notification`) and shuts down. What it does with a task or a message is the `Work`
//! given to it: the agent runtime in production, a fake in tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::run::budget::{self, Scope, Spend};
use crate::run::link::{ChangeWatch, LinkedStore, Stopper, TeamLink};
use crate::run::status::StatusHandle;
use crate::work::{INTERRUPTED_BY_PERSON, Job, JobOutcome, Work};
use crew_store::requests::{RequestInfo, RequestState};
use crew_store::{AgentName, MessageKind, USER};
use crew_store::{
    AgentState, AgentStatus, Claimant, Draft, FileStore, Message, Refusal, Roster, Status,
    StoreError, Task, TaskId, Workspace,
};
use tokio_util::sync::CancellationToken;

type Fingerprint = (std::time::SystemTime, Option<u64>);

/// How long an idle worker may skip passes when nothing seems to change.
const FULL_PASS_EVERY: Duration = Duration::from_secs(30);

/// Most unread messages one pass takes (the rest wait for the next).
const PASS_MESSAGES: usize = 10_000;

/// How an idle wait ended: a file event (true) or the poll (false), or time to shut down.
enum Wake {
    Woke(bool),
    Exit(ExitReason),
}

#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub name: AgentName,
    pub role: Option<String>,
    pub lead: AgentName,
    /// Whether it claims tasks when idle (teammates do; the lead does not).
    pub claims: bool,
    pub idle_poll: Duration,
    /// `None`: never shuts down for idleness (the lead, while its team runs).
    pub idle_timeout: Option<Duration>,
    pub heartbeat: Duration,
    pub request_timeout: Duration,
    /// `[budget]`: the team's; reaching it pauses new work until the person answers.
    pub team_budget: crew_config::Budget,
    /// This agent's own `budget`.
    pub budget: crew_config::Budget,
}

/// The job running now, for the heartbeat thread to interrupt: its token, and the last message
/// in the inbox when it started (an `interrupt` from the person after it is for this job).
struct Running<P> {
    cancel: CancellationToken,
    seen: Option<P>,
}

/// Whether a worker may take new work, as its budgets stand.
enum Gate {
    Open,
    Paused,
    Stop,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ExitReason {
    ShutdownApproved {
        request_id: crew_store::RequestId,
    },
    IdleTimeout,
    Stopped,
    /// The person answered a budget request with "stop".
    BudgetStopped,
}

pub struct Worker<S: LinkedStore = FileStore> {
    link: TeamLink<S>,
    roster: Roster,
    settings: WorkerSettings,
    status: StatusHandle,
    running: Arc<Mutex<Option<Running<S::Position>>>>,
    cancelled: Arc<AtomicBool>,
    reports: Option<std::sync::mpsc::Sender<JobReport>>,
}

/// How one job ended, for whoever watches this worker (a headless team watches its lead).
#[derive(Debug, Clone, PartialEq)]
pub struct JobReport {
    pub success: bool,
    /// What the job said at its end, or why it failed.
    pub summary: String,
    pub interrupted: bool,
}

/// Ends a worker from another thread: the job in hand is cancelled, no new one starts, and the
/// worker returns [`ExitReason::Stopped`]. A stop that cannot wait for a long model reply (the
/// lead, in this process, past its grace period) uses it.
#[derive(Clone)]
pub struct Canceller {
    cancel_job: Arc<dyn Fn() + Send + Sync>,
    cancelled: Arc<AtomicBool>,
}

impl Canceller {
    /// Cancels only the job in hand; the worker goes on (to the shutdown request it was sent).
    pub fn cancel_turn(&self) {
        (self.cancel_job)();
    }

    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        (self.cancel_job)();
    }
}

impl Worker<FileStore> {
    /// A worker on the checkout's files.
    pub fn new(
        workspace: Workspace,
        roster: Roster,
        settings: WorkerSettings,
    ) -> Result<Self, StoreError> {
        Worker::on(
            TeamLink::files(FileStore::new(workspace, roster.clone())),
            roster,
            settings,
        )
    }
}

impl<S: LinkedStore> Worker<S> {
    /// A worker on whichever store `link` reaches.
    pub fn on(
        link: TeamLink<S>,
        roster: Roster,
        settings: WorkerSettings,
    ) -> Result<Self, StoreError> {
        let status = StatusHandle::new(
            &link,
            carried_over(&link, AgentStatus::new(&settings.name, AgentState::Idle)),
        )?;
        Ok(Worker {
            link,
            roster,
            settings,
            status,
            running: Arc::new(Mutex::new(None)),
            cancelled: Arc::new(AtomicBool::new(false)),
            reports: None,
        })
    }

    /// How each job ends, from now on.
    pub fn report_jobs(&mut self) -> std::sync::mpsc::Receiver<JobReport> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.reports = Some(tx);
        rx
    }

    /// What ends this worker from another thread (see [`Canceller`]).
    pub fn canceller(&self) -> Canceller {
        let running = Arc::clone(&self.running);
        Canceller {
            cancel_job: Arc::new(move || {
                if let Some(job) = lock(&running).as_ref() {
                    job.cancel.cancel();
                }
            }),
            cancelled: Arc::clone(&self.cancelled),
        }
    }

    /// Runs until shut down (by request or idleness) or until `stop` is set.
    pub fn run(&self, work: &mut dyn Work, stop: &AtomicBool) -> Result<ExitReason, StoreError> {
        let done = Arc::new(AtomicBool::new(false));
        let (beat, wake_beat) = self.spawn_heartbeat(done.clone());
        let result = self.lifecycle(work, stop);
        done.store(true, Ordering::Relaxed);
        // Joined before the last status write (a late beat must not overwrite SHUTDOWN), and
        // woken so the exit does not wait out the rest of a heartbeat.
        if let Some(stopper) = wake_beat {
            stopper.stop();
        }
        let _ = beat.join();
        let (state, note) = match &result {
            Ok(ExitReason::ShutdownApproved { request_id }) => (
                AgentState::Shutdown,
                format!("shutdown approved ({request_id})"),
            ),
            Ok(ExitReason::IdleTimeout) => (
                AgentState::Shutdown,
                format!(
                    "{IDLE_NOTE}{}s",
                    self.settings.idle_timeout.unwrap_or_default().as_secs()
                ),
            ),
            Ok(ExitReason::Stopped) => (AgentState::Shutdown, "stopped".to_string()),
            Ok(ExitReason::BudgetStopped) => (
                AgentState::Shutdown,
                "stopped by the person at the budget".to_string(),
            ),
            Err(e) => (AgentState::Shutdown, format!("error: {e}")),
        };
        self.status.update(|s| {
            s.state = state;
            s.note = Some(note.clone());
            s.task = None;
        })?;
        // Nothing stays reserved for a teammate that is gone: what was assigned to it goes back
        // to the pool (it holds nothing in progress: it refuses to shut down while it does).
        if self.settings.claims {
            let name = self.settings.name.clone();
            let why = format!("released: {name} shut down ({note})");
            self.link
                .call(|store| async move { store.release_orphaned(&name, &why).await })?;
        }
        result
    }

    fn lifecycle(&self, work: &mut dyn Work, stop: &AtomicBool) -> Result<ExitReason, StoreError> {
        let mut watcher = self.link.watch(&self.settings.name)?;
        let me = &self.settings.name;
        let mut idle_since = Instant::now();
        let mut seen: Option<Fingerprint> = None;
        let mut woke = true;
        let mut last_pass = Instant::now();
        // A task the person interrupted: kept, and continued by their next message.
        let mut held: Option<Task> = None;
        // A task still in progress under this name was cut by a crash or a restart: its
        // conversation is on disk, so the work continues rather than starting over.
        for task in self.held_tasks()? {
            held = self.run_task(work, task)?;
        }
        loop {
            if stop.load(Ordering::Relaxed) || self.cancelled.load(Ordering::Relaxed) {
                return Ok(ExitReason::Stopped);
            }
            // A pass reads every task. After a periodic wake-up (no file event) it is skipped
            // when neither the tasks nor the inbox changed, except for a full pass now and then
            // in case events are not delivered (some network file systems).
            let now_seen = self.fingerprint();
            if !woke && seen.is_some() && seen == now_seen && last_pass.elapsed() < FULL_PASS_EVERY
            {
                match self.idle_wait(&mut watcher, &mut idle_since)? {
                    Wake::Exit(exit) => return Ok(exit),
                    Wake::Woke(w) => woke = w,
                }
                continue;
            }
            seen = now_seen;
            last_pass = Instant::now();
            let batch = self.unread()?;
            let read_upto = batch.last().map(|(at, _)| *at);
            let inbox = self.prioritised(batch.into_iter().map(|(_, m)| m).collect())?;
            match self.budget_gate()? {
                Gate::Open => {}
                Gate::Stop => return Ok(ExitReason::BudgetStopped),
                // Paused: only a shutdown request is read; the rest waits, unread.
                Gate::Paused => {
                    if let Some(message) = inbox
                        .iter()
                        .find(|m| m.kind == MessageKind::ShutdownRequest)
                    {
                        let request_id = message.request_id.clone().unwrap_or_default();
                        self.answer_shutdown(&request_id, true, "paused at the budget")?;
                        return Ok(ExitReason::ShutdownApproved { request_id });
                    }
                    match self.idle_wait(&mut watcher, &mut Instant::now())? {
                        Wake::Exit(exit) => return Ok(exit),
                        Wake::Woke(w) => woke = w,
                    }
                    continue;
                }
            }
            let mut worked = false;
            for message in inbox {
                if message.kind == MessageKind::ShutdownRequest {
                    // The cursor stays put: what else is unread stays unread for a restart.
                    let request_id = message.request_id.clone().unwrap_or_default();
                    self.answer_shutdown(&request_id, true, "idle, shutting down")?;
                    return Ok(ExitReason::ShutdownApproved { request_id });
                }
                if self.cancelled.load(Ordering::Relaxed) {
                    return Ok(ExitReason::Stopped);
                }
                held = self.still_held(held)?;
                match held.take() {
                    Some(task) => held = self.continue_task(work, task, message)?,
                    None => {
                        self.run_job(work, Job::Message(message), None)?;
                    }
                }
                worked = true;
            }
            // Only when it moved: on files the cursor lives in the folder every worker watches,
            // so an idle write would wake this worker and all the others, forever.
            if let Some(upto) = read_upto {
                let me = me.clone();
                self.link
                    .call(|store| async move { store.mark_read(&me, upto).await })?;
            }
            held = self.still_held(held)?;
            if !worked && self.settings.claims && held.is_none() {
                let claimant = Claimant {
                    name: me,
                    role: self.settings.role.as_deref(),
                };
                match self.claim_next(claimant) {
                    Ok(task) => {
                        held = self.run_task(work, task)?;
                        worked = true;
                    }
                    Err(StoreError::Refused(Refusal::NothingClaimable { .. })) => {}
                    Err(e) => return Err(e),
                }
            }
            if worked {
                idle_since = Instant::now();
                woke = true;
                continue;
            }
            match self.idle_wait(&mut watcher, &mut idle_since)? {
                Wake::Exit(exit) => return Ok(exit),
                Wake::Woke(w) => woke = w,
            }
        }
    }

    fn claim_next(&self, who: Claimant<'_>) -> Result<Task, StoreError> {
        let (name, role) = (who.name.clone(), who.role.map(str::to_string));
        self.link.call(|store| async move {
            let who = Claimant {
                name: &name,
                role: role.as_deref(),
            };
            store.claim_next(who).await
        })
    }

    /// What is unread in this worker's inbox, with where each message ends.
    fn unread(&self) -> Result<Vec<(S::Position, Message)>, StoreError> {
        let me = self.settings.name.clone();
        self.link
            .call(|store| async move { store.unread(&me, PASS_MESSAGES).await })
    }

    fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        self.link.call(|store| async move { store.tasks().await })
    }

    fn task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.link.call(|store| async move { store.task(id).await })
    }

    fn requests(&self) -> Result<Vec<RequestInfo>, StoreError> {
        let timeout = self.settings.request_timeout;
        self.link
            .call(|store| async move { store.requests(timeout).await })
    }

    /// Sleeps until a file event or the idle poll; gives up (telling the lead) once idle for
    /// `idle_timeout` with no work in sight.
    fn idle_wait(
        &self,
        watcher: &mut ChangeWatch,
        idle_since: &mut Instant,
    ) -> Result<Wake, StoreError> {
        let mut wait = self.settings.idle_poll;
        if let Some(timeout) = self.settings.idle_timeout {
            // While the team still plans, idleness is waiting for work, not the lack of it: the
            // clock starts again (a slow lead's first reply can take minutes).
            if idle_since.elapsed() >= timeout && self.work_may_come()? {
                *idle_since = Instant::now();
            }
            let idle = idle_since.elapsed();
            if idle >= timeout {
                self.tell_lead(
                    MessageKind::IdleNotification,
                    format!(
                        "{} has been idle for {}s and is shutting down",
                        self.settings.name,
                        idle.as_secs()
                    ),
                )?;
                return Ok(Wake::Exit(ExitReason::IdleTimeout));
            }
            wait = wait.min(timeout - idle);
        }
        Ok(Wake::Woke(watcher.wait(wait)))
    }

    /// Whether work for this worker may still come: the lead is in a turn (it may create
    /// tasks), a task of its own waits in review (it may be sent back), or a pending task it
    /// may get waits on its blockers.
    fn work_may_come(&self) -> Result<bool, StoreError> {
        let lead = self.settings.lead.clone();
        let lead_busy = self
            .link
            .call(|store| async move { store.agent_status(&lead).await })?
            .is_some_and(|s| {
                matches!(s.state, AgentState::Work | AgentState::Waiting) && s.process_alive()
            });
        if lead_busy || !self.settings.claims {
            return Ok(lead_busy);
        }
        let me = Claimant {
            name: &self.settings.name,
            role: self.settings.role.as_deref(),
        };
        let tasks = self.tasks()?;
        if tasks
            .iter()
            .any(|t| t.status == Status::Review && t.owner.as_ref() == Some(me.name))
        {
            return Ok(true);
        }
        // Coming: every blocker is being worked on (or done). One failed, or left pending with
        // nobody on it, may never complete: waiting for it would keep the worker for ever.
        let moving: Vec<TaskId> = tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.status,
                    Status::InProgress | Status::Review | Status::Completed
                )
            })
            .map(|t| t.id)
            .collect();
        Ok(tasks.iter().any(|t| {
            me.may_get(t)
                && !t.blocked_by.is_empty()
                && t.blocked_by.iter().all(|b| moving.contains(b))
        }))
    }

    /// What a pass depends on, on files: the tasks folder (every task write renames into it)
    /// and the length of this worker's inbox. `None` on a store that wakes its readers surely
    /// (NOTIFY): every wake-up is a pass.
    fn fingerprint(&self) -> Option<Fingerprint> {
        let workspace = self.link.store().files()?;
        let tasks = std::fs::metadata(workspace.tasks_dir()).and_then(|m| m.modified());
        tasks
            .ok()
            .map(|t| (t, inbox_len(workspace, &self.settings.name)))
    }

    /// Whether new work may start: open, paused at a reached budget (asking the person once),
    /// or stopped by the person's answer.
    fn budget_gate(&self) -> Result<Gate, StoreError> {
        let me = &self.settings.name;
        let scopes = [
            (Scope::Team, self.settings.team_budget),
            (Scope::Agent(me), self.settings.budget),
        ];
        let limited = |b: &crew_config::Budget| {
            b.max_turns.is_some() || b.max_tokens.is_some() || b.max_usd.is_some()
        };
        if !scopes.iter().any(|(_, b)| limited(b)) {
            return Ok(Gate::Open);
        }
        let requests = self.requests()?;
        for (scope, budget) in scopes.iter().filter(|(_, b)| limited(b)) {
            let answered = budget::answers(&requests, *scope);
            if answered.stopped {
                return Ok(Gate::Stop);
            }
            let spenders: Vec<AgentName> = match scope {
                Scope::Team => self.roster.names().to_vec(),
                Scope::Agent(name) => vec![(*name).clone()],
            };
            let statuses = self.link.call(|store| async move {
                let mut statuses = Vec::new();
                for name in &spenders {
                    statuses.extend(store.agent_status(name).await?);
                }
                Ok(statuses)
            })?;
            if let Some(why) = budget::reached(budget, answered.raised + 1, Spend::of(&statuses)) {
                if !answered.pending {
                    let draft = budget::request(me, *scope, &why);
                    self.link
                        .call(|store| async move { store.send(draft).await })?;
                }
                self.status.update(|s| {
                    s.note = Some(format!("paused: budget reached ({why}); asked the person"));
                })?;
                return Ok(Gate::Paused);
            }
        }
        Ok(Gate::Open)
    }

    /// Unanswered shutdown requests first, then the lead's messages, then the rest in order.
    /// Permission responses belong to the prompter that is waiting for them, and permission
    /// requests to the person, never to an agent (invariant 5); other answers (a plan approved
    /// or rejected, with its feedback) are news for the agent, so they are jobs too.
    fn prioritised(&self, messages: Vec<Message>) -> Result<Vec<Message>, StoreError> {
        let messages: Vec<Message> = messages
            .into_iter()
            // An interrupt is for the job that runs when it comes (the heartbeat acts on it); a
            // budget answer is for the worker's budget check, not for the agent.
            .filter(|m| {
                !matches!(
                    m.kind,
                    MessageKind::PermissionRequest
                        | MessageKind::PermissionResponse
                        | MessageKind::Interrupt
                        | MessageKind::BudgetResponse
                )
            })
            .collect();
        // Reading every inbox to derive request states is only worth it when a shutdown request
        // is among the new messages (it may have been refused already while busy).
        let pending: Vec<crew_store::RequestId> = if messages
            .iter()
            .any(|m| m.kind == MessageKind::ShutdownRequest)
        {
            self.requests()?
                .into_iter()
                .filter(|r| r.state == RequestState::Pending && r.to == self.settings.name)
                .map(|r| r.request_id)
                .collect()
        } else {
            Vec::new()
        };
        let mut messages: Vec<Message> = messages
            .into_iter()
            .filter(|m| {
                m.kind != MessageKind::ShutdownRequest
                    || m.request_id.as_ref().is_some_and(|id| pending.contains(id))
            })
            .collect();
        let rank = |m: &Message| {
            if m.kind == MessageKind::ShutdownRequest {
                0
            } else if m.from == self.settings.lead {
                1
            } else {
                2
            }
        };
        messages.sort_by_key(rank);
        Ok(messages)
    }

    /// The tasks in progress under this worker's name (none for a worker that does not claim).
    fn held_tasks(&self) -> Result<Vec<Task>, StoreError> {
        if !self.settings.claims {
            return Ok(Vec::new());
        }
        Ok(self
            .tasks()?
            .into_iter()
            .filter(|t| {
                t.status == Status::InProgress && t.owner.as_deref() == Some(&self.settings.name)
            })
            .collect())
    }

    /// Runs a task and records how it ended; an interrupted task is kept (returned) instead.
    fn run_task(&self, work: &mut dyn Work, task: Task) -> Result<Option<Task>, StoreError> {
        let outcome = self.run_job(work, Job::Task(task.clone()), Some(task.id))?;
        self.finish_task(work, task, outcome)
    }

    /// The person's message after an interrupt: it continues the task's conversation, and how
    /// that ends is how the task ends.
    fn continue_task(
        &self,
        work: &mut dyn Work,
        task: Task,
        message: Message,
    ) -> Result<Option<Task>, StoreError> {
        let outcome = self.run_job(work, Job::Message(message), Some(task.id))?;
        self.finish_task(work, task, outcome)
    }

    /// `held` if the task is still in progress under this worker (the person may have
    /// released or reassigned it meanwhile).
    fn still_held(&self, held: Option<Task>) -> Result<Option<Task>, StoreError> {
        let Some(task) = held else {
            return Ok(None);
        };
        let now = self.task(task.id)?;
        let mine =
            now.status == Status::InProgress && now.owner.as_ref() == Some(&self.settings.name);
        if !mine {
            self.status.update(|s| {
                s.task = None;
                s.note = None;
            })?;
        }
        Ok(mine.then_some(now))
    }

    fn finish_task(
        &self,
        work: &mut dyn Work,
        task: Task,
        outcome: JobOutcome,
    ) -> Result<Option<Task>, StoreError> {
        if outcome.interrupted {
            return Ok(Some(task));
        }
        let id = task.id;
        let me = &self.settings.name;
        let (who, summary) = (me.clone(), outcome.summary.clone());
        let (finished, verb) = if let (true, Some(commits)) = (outcome.success, &outcome.commits) {
            let commits = commits.clone();
            (
                self.link.call(|store| async move {
                    store.submit_for_review(id, &who, summary, commits).await
                }),
                "is ready for review",
            )
        } else if outcome.success {
            // No commit waits for review (none was made, or merged at once).
            (
                self.link.call(|store| async move {
                    store
                        .complete_with_nothing_to_review(id, &who, Some(summary))
                        .await
                }),
                "done",
            )
        } else {
            (
                self.link
                    .call(|store| async move { store.fail(id, &who, summary).await }),
                "failed",
            )
        };
        match finished {
            Ok(recorded) if recorded.status == Status::Review => {
                work.entered_review(&recorded);
                self.tell_lead(
                    MessageKind::StatusUpdate,
                    format!("{} {verb}: {}", task.id, outcome.summary),
                )
            }
            Ok(_) => self.tell_lead(
                MessageKind::StatusUpdate,
                format!("{} {verb}: {}", task.id, outcome.summary),
            ),
            // Taken away meanwhile (reassigned or released by the person): the work is
            // reported, not recorded, and the worker goes on.
            Err(StoreError::Refused(why)) => self.tell_lead(
                MessageKind::StatusUpdate,
                format!(
                    "{} {verb} by {me}, but not recorded ({why}): {}",
                    task.id, outcome.summary
                ),
            ),
            Err(e) => Err(e),
        }?;
        Ok(None)
    }

    /// Runs `job` with WORK on `task` in the status (the job's own task, or the interrupted
    /// one a message continues); an interrupted job leaves IDLE with that task and a note, in
    /// one status write.
    fn run_job(
        &self,
        work: &mut dyn Work,
        job: Job,
        task: Option<TaskId>,
    ) -> Result<JobOutcome, StoreError> {
        let cancel = CancellationToken::new();
        let seen = self.unread()?.last().map(|(at, _)| *at);
        {
            let mut running = lock(&self.running);
            // Checked under the lock a canceller takes: a cancel cannot fall between the two.
            if self.cancelled.load(Ordering::Relaxed) {
                cancel.cancel();
            }
            *running = Some(Running {
                cancel: cancel.clone(),
                seen,
            });
        }
        self.status.update(|s| {
            s.state = AgentState::Work;
            s.task = task;
            s.note = None;
        })?;
        // Each call's tokens show as they come (`status_sink`); the job's own count settles them.
        let tokens_before = self.status.get().tokens;
        let outcome = work.run(&job, &self.status, &cancel);
        *lock(&self.running) = None;
        let (tokens, cost) = (outcome.tokens, outcome.cost_micros);
        if let Some(id) = task
            && let Err(e) = self
                .link
                .call(|store| async move { store.add_usage(id, tokens, cost).await })
        {
            tracing::warn!("{id}: this job's tokens and cost not added to it: {e}");
        }
        if let Some(reports) = &self.reports {
            // A watcher that went away has nothing more to learn.
            let _ = reports.send(JobReport {
                success: outcome.success,
                summary: outcome.summary.clone(),
                interrupted: outcome.interrupted,
            });
        }
        self.status.update(|s| {
            s.state = AgentState::Idle;
            // Why a job failed (a CLI agent that died, say) stays on show until the next job.
            if outcome.success {
                s.note = None;
            }
            match (&s.task, outcome.interrupted) {
                (Some(id), true) => {
                    s.note = Some(format!(
                        "{INTERRUPTED_BY_PERSON}; {id} is kept until your next message"
                    ));
                }
                _ => s.task = None,
            }
            s.waiting_on = None;
            s.turns += outcome.turns;
            s.tokens = tokens_before + outcome.tokens;
            if let Some(cost) = outcome.cost_micros {
                s.cost_micros = Some(s.cost_micros.unwrap_or(0) + cost);
            }
            s.cache.add(outcome.cache);
        })?;
        Ok(outcome)
    }

    fn answer_shutdown(
        &self,
        request_id: &str,
        approve: bool,
        note: &str,
    ) -> Result<(), StoreError> {
        let answered = respond(
            &self.link,
            &self.settings,
            request_id,
            approve,
            note.to_string(),
        );
        match answered {
            // Already answered (e.g. refused while busy) or expired: nothing more to say.
            Ok(_) | Err(StoreError::Refused(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn tell_lead(&self, kind: MessageKind, text: String) -> Result<(), StoreError> {
        let draft = Draft {
            kind,
            text: Some(text),
            ..Draft::new(self.settings.name.clone(), self.settings.lead.clone())
        };
        self.link
            .call(|store| async move { store.send(draft).await })
            .map(|_| ())
    }

    /// Beats every `heartbeat` (renewing its leases on PostgreSQL); while the worker holds a
    /// task it also refuses shutdown requests at once, with the reason, rather than leaving the
    /// lead waiting for the task to end.
    fn spawn_heartbeat(&self, done: Arc<AtomicBool>) -> (thread::JoinHandle<()>, Option<Stopper>) {
        let status = self.status.clone();
        let link = self.link.clone();
        let settings = self.settings.clone();
        let running = Arc::clone(&self.running);
        let watcher = match link.watch_inbox(&settings.name) {
            Ok(watcher) => Some(watcher),
            Err(e) => {
                tracing::warn!("{}: inbox not watched: {e}", settings.name);
                None
            }
        };
        let stopper = watcher.as_ref().map(ChangeWatch::stopper);
        let beat = thread::spawn(move || {
            let mut watcher = watcher;
            let mut last_beat = Instant::now();
            // Only a grown inbox can hold a new shutdown request: skip the scan otherwise (on
            // files by its length; on PostgreSQL when a notification woke the heartbeat).
            let mut last_len = None;
            while !done.load(Ordering::Relaxed) {
                // Busy, it watches its inbox to refuse shutdown requests promptly; idle, it only
                // has to beat.
                let busy = matches!(status.get().state, AgentState::Work | AgentState::Waiting);
                let nap = if busy {
                    settings.heartbeat.min(Duration::from_millis(500))
                } else {
                    settings.heartbeat
                };
                let woke = match &mut watcher {
                    Some(w) => w.wait(nap),
                    None => {
                        thread::sleep(nap.min(Duration::from_millis(200)));
                        true
                    }
                };
                if last_beat.elapsed() >= settings.heartbeat {
                    if let Err(e) = status.beat() {
                        tracing::warn!("{}: heartbeat not written: {e}", settings.name);
                    }
                    if let Err(e) = S::renew_leases(&link, &settings.name) {
                        tracing::warn!("{}: leases not renewed: {e}", settings.name);
                    }
                    last_beat = Instant::now();
                }
                interrupt_if_asked(&link, &settings.name, &running);
                let current = status.get();
                let Some(task) = current
                    .task
                    .filter(|_| matches!(current.state, AgentState::Work | AgentState::Waiting))
                else {
                    continue;
                };
                match link.store().files() {
                    Some(workspace) => {
                        let len = inbox_len(workspace, &settings.name);
                        if len == last_len {
                            continue;
                        }
                        last_len = len;
                    }
                    None if !woke => continue,
                    None => {}
                }
                refuse_shutdowns_while_busy(&link, &settings, task);
            }
        });
        (beat, stopper)
    }
}

/// Bytes in `me`'s inbox file (`None` while it has none).
fn inbox_len(workspace: &Workspace, me: &AgentName) -> Option<u64> {
    std::fs::metadata(workspace.mailboxes().inbox_path(me))
        .ok()
        .map(|m| m.len())
}

/// `settings.name` answers request `request_id`.
fn respond<S: LinkedStore>(
    link: &TeamLink<S>,
    settings: &WorkerSettings,
    request_id: &str,
    approve: bool,
    note: String,
) -> Result<Message, StoreError> {
    let (id, me, timeout) = (
        request_id.to_string(),
        settings.name.clone(),
        settings.request_timeout,
    );
    link.call(|store| async move { store.respond(&id, &me, approve, Some(note), timeout).await })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cancels the running job when an `interrupt` from the person came after it started.
fn interrupt_if_asked<S: LinkedStore>(
    link: &TeamLink<S>,
    me: &AgentName,
    running: &Mutex<Option<Running<S::Position>>>,
) {
    let mut guard = lock(running);
    let Some(job) = guard.as_mut() else {
        return;
    };
    if job.cancel.is_cancelled() {
        return;
    }
    let who = me.clone();
    let Ok(unread) = link.call(|store| async move { store.unread(&who, PASS_MESSAGES).await })
    else {
        return;
    };
    let seen = job.seen;
    let new = unread.iter().filter(|(at, _)| seen.is_none_or(|s| *at > s));
    let asked = new
        .clone()
        .any(|(_, m)| m.kind == MessageKind::Interrupt && m.from == USER);
    if let Some((last, _)) = new.last() {
        job.seen = Some(*last);
    }
    if asked {
        tracing::info!("{me}: {INTERRUPTED_BY_PERSON}");
        job.cancel.cancel();
    }
}

fn refuse_shutdowns_while_busy<S: LinkedStore>(
    link: &TeamLink<S>,
    settings: &WorkerSettings,
    task: TaskId,
) {
    let timeout = settings.request_timeout;
    let Ok(requests) = link.call(|store| async move { store.requests(timeout).await }) else {
        return;
    };
    for request in requests.iter().filter(|r| {
        r.state == RequestState::Pending
            && r.to == settings.name
            && r.kind == MessageKind::ShutdownRequest
    }) {
        let note = format!("busy with {task}; ask again when it is done");
        if let Err(e) = respond(link, settings, &request.request_id, false, note) {
            tracing::info!("{}: shutdown refusal not sent: {e}", settings.name);
        }
    }
}

/// How the status note of a worker that shut down for idleness begins.
const IDLE_NOTE: &str = "idle for ";

/// Whether `status` is of a teammate that shut itself down for idleness (not one the person
/// shut down or stopped): the team starts it again when there is work for it.
pub(crate) fn idled_out(status: &AgentStatus) -> bool {
    status.state == AgentState::Shutdown
        && status
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with(IDLE_NOTE))
}

/// A new life's status, with what the agent's earlier lives spent (turns, tokens, cost, cache):
/// the team's spend is kept in the store, not per worker process.
fn carried_over<S: LinkedStore>(link: &TeamLink<S>, mut status: AgentStatus) -> AgentStatus {
    let name = status.name.clone();
    match link.call(|store| async move { store.agent_status(&name).await }) {
        Ok(Some(earlier)) => {
            status.turns = earlier.turns;
            status.tokens = earlier.tokens;
            status.cost_micros = earlier.cost_micros;
            status.cache = earlier.cache;
        }
        Ok(None) => {}
        Err(e) => tracing::warn!("{}: earlier spend not carried over: {e}", status.name),
    }
    status
}
