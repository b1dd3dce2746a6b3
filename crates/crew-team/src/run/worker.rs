//! A teammate's lifecycle: WORK, WAITING (a person must answer), IDLE, SHUTDOWN.
//!
//! An idle worker sleeps on file-system events from its inbox and the tasks (and at least every
//! `idle_poll`), so it uses no CPU to speak of. Inbox order: `shutdown_request` first, then the
//! lead's messages, then the rest as they came. With nothing in the inbox it claims the oldest
//! claimable task that fits its role. After `idle_timeout` with nothing to do it tells the lead
//! (`idle_notification`) and shuts down. What it does with a task or a message is the `Work`
//! given to it: the agent runtime in production, a fake in tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::run::budget::{self, Scope, Spend};
use crate::run::status::StatusHandle;
use crate::work::{INTERRUPTED_BY_PERSON, Job, JobOutcome, Work};
use crew_store::requests::RequestState;
use crew_store::{AgentName, MessageKind, USER};
use crew_store::{
    AgentState, AgentStatus, Claimant, DirWatcher, Draft, Entry, Message, Refusal, Roster, Status,
    StoreError, Task, TaskId, Waker, Workspace,
};
use tokio_util::sync::CancellationToken;

type Fingerprint = (std::time::SystemTime, Option<u64>);

/// How long an idle worker may skip passes when nothing seems to change.
const FULL_PASS_EVERY: Duration = Duration::from_secs(30);

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

/// The job running now, for the heartbeat thread to interrupt: its token, and where in the
/// inbox to look for an `interrupt` from the person (messages before it are older than the job).
struct Running {
    cancel: CancellationToken,
    inbox_from: u64,
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

pub struct Worker {
    workspace: Workspace,
    roster: Roster,
    settings: WorkerSettings,
    status: StatusHandle,
    running: Arc<Mutex<Option<Running>>>,
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
    running: Arc<Mutex<Option<Running>>>,
    cancelled: Arc<AtomicBool>,
}

impl Canceller {
    /// Cancels only the job in hand; the worker goes on (to the shutdown request it was sent).
    pub fn cancel_turn(&self) {
        if let Some(job) = lock(&self.running).as_ref() {
            job.cancel.cancel();
        }
    }

    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        if let Some(job) = lock(&self.running).as_ref() {
            job.cancel.cancel();
        }
    }
}

impl Worker {
    pub fn new(
        workspace: Workspace,
        roster: Roster,
        settings: WorkerSettings,
    ) -> Result<Self, StoreError> {
        let status = StatusHandle::new(
            workspace.agents(),
            carried_over(
                &workspace,
                AgentStatus::new(&settings.name, AgentState::Idle),
            ),
        )?;
        Ok(Worker {
            workspace,
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
        Canceller {
            running: Arc::clone(&self.running),
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
        if let Some(waker) = wake_beat {
            waker.wake();
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
            let name = &self.settings.name;
            self.workspace
                .tasks()
                .release_orphaned(name, &format!("released: {name} shut down ({note})"))?;
        }
        result
    }

    fn lifecycle(&self, work: &mut dyn Work, stop: &AtomicBool) -> Result<ExitReason, StoreError> {
        let boxes = self.workspace.mailboxes();
        let tasks = self.workspace.tasks();
        let watcher =
            DirWatcher::new(&[&self.workspace.mailboxes_dir(), &self.workspace.tasks_dir()])?;
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
                match self.idle_wait(&watcher, &mut idle_since)? {
                    Wake::Exit(exit) => return Ok(exit),
                    Wake::Woke(w) => woke = w,
                }
                continue;
            }
            seen = now_seen;
            last_pass = Instant::now();
            let cursor = boxes.cursor(me)?;
            let batch = boxes.read_from(me, cursor)?;
            let inbox = self.prioritised(batch.entries)?;
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
                    match self.idle_wait(&watcher, &mut Instant::now())? {
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
            // Only when it moved: the cursor lives in the folder every worker watches, so an
            // idle write would wake this worker and all the others, forever.
            if batch.end != cursor {
                boxes.set_cursor(me, batch.end)?;
            }
            held = self.still_held(held)?;
            if !worked && self.settings.claims && held.is_none() {
                let claimant = Claimant {
                    name: me,
                    role: self.settings.role.as_deref(),
                };
                match tasks.claim_next(claimant) {
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
            match self.idle_wait(&watcher, &mut idle_since)? {
                Wake::Exit(exit) => return Ok(exit),
                Wake::Woke(w) => woke = w,
            }
        }
    }

    /// Sleeps until a file event or the idle poll; gives up (telling the lead) once idle for
    /// `idle_timeout` with no work in sight.
    fn idle_wait(
        &self,
        watcher: &DirWatcher,
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
        let lead_busy = self
            .workspace
            .agents()
            .read(&self.settings.lead)?
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
        let tasks = self.workspace.tasks().load_all()?.tasks;
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

    /// What a pass depends on: the tasks folder (every task write renames into it) and the
    /// length of this worker's inbox.
    fn fingerprint(&self) -> Option<Fingerprint> {
        let tasks = std::fs::metadata(self.workspace.tasks_dir()).and_then(|m| m.modified());
        tasks.ok().map(|t| (t, self.inbox_len()))
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
        let requests = self
            .workspace
            .mailboxes()
            .requests(self.settings.request_timeout)?;
        for (scope, budget) in scopes.iter().filter(|(_, b)| limited(b)) {
            let answered = budget::answers(&requests, *scope);
            if answered.stopped {
                return Ok(Gate::Stop);
            }
            let spend = match scope {
                Scope::Team => Spend::team(&self.workspace, &self.roster)?,
                Scope::Agent(name) => Spend::agent(&self.workspace, name)?,
            };
            if let Some(why) = budget::reached(budget, answered.raised + 1, spend) {
                if !answered.pending {
                    budget::ask(&self.workspace, &self.roster, me, *scope, &why)?;
                }
                self.status.update(|s| {
                    s.note = Some(format!("paused: budget reached ({why}); asked the person"));
                })?;
                return Ok(Gate::Paused);
            }
        }
        Ok(Gate::Open)
    }

    /// Bytes in this worker's inbox (`None` while it has none).
    fn inbox_len(&self) -> Option<u64> {
        std::fs::metadata(self.workspace.mailboxes().inbox_path(&self.settings.name))
            .ok()
            .map(|m| m.len())
    }

    /// Unanswered shutdown requests first, then the lead's messages, then the rest in order.
    /// Permission responses belong to the prompter that is waiting for them, and permission
    /// requests to the person, never to an agent (invariant 5); other answers (a plan approved
    /// or rejected, with its feedback) are news for the agent, so they are jobs too.
    fn prioritised(&self, entries: Vec<Entry>) -> Result<Vec<Message>, StoreError> {
        let messages: Vec<Message> = entries
            .into_iter()
            .filter_map(|e| match e {
                Entry::Message { message, .. } => Some(message),
                Entry::Broken { error, .. } => {
                    tracing::warn!(
                        "{}: skipping unreadable inbox line: {error}",
                        self.settings.name
                    );
                    None
                }
            })
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
            self.workspace
                .mailboxes()
                .requests(self.settings.request_timeout)?
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
            .workspace
            .tasks()
            .load_all()?
            .tasks
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
        let now = self.workspace.tasks().read(task.id)?;
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
        let tasks = self.workspace.tasks();
        let (finished, verb) = if let (true, Some(commits)) = (outcome.success, &outcome.commits) {
            (
                tasks.submit_for_review(id, me, outcome.summary.clone(), commits.clone()),
                "is ready for review",
            )
        } else if outcome.success {
            // No commit waits for review (none was made, or merged at once).
            (
                tasks.complete_with_nothing_to_review(id, me, Some(outcome.summary.clone())),
                "done",
            )
        } else {
            (tasks.fail(id, me, outcome.summary.clone()), "failed")
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
        let inbox_from = self.inbox_len().unwrap_or(0);
        {
            let mut running = lock(&self.running);
            // Checked under the lock a canceller takes: a cancel cannot fall between the two.
            if self.cancelled.load(Ordering::Relaxed) {
                cancel.cancel();
            }
            *running = Some(Running {
                cancel: cancel.clone(),
                inbox_from,
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
        if let Some(id) = task
            && let Err(e) =
                self.workspace
                    .tasks()
                    .add_usage(id, outcome.tokens, outcome.cost_micros)
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
        let answered = self.workspace.mailboxes().respond(
            &self.roster,
            request_id,
            &self.settings.name,
            approve,
            Some(note.to_string()),
            self.settings.request_timeout,
        );
        match answered {
            // Already answered (e.g. refused while busy) or expired: nothing more to say.
            Ok(_) | Err(StoreError::Refused(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn tell_lead(&self, kind: MessageKind, text: String) -> Result<(), StoreError> {
        self.workspace
            .mailboxes()
            .send(
                &self.roster,
                Draft {
                    kind,
                    text: Some(text),
                    ..Draft::new(self.settings.name.clone(), self.settings.lead.clone())
                },
            )
            .map(|_| ())
    }

    /// Beats every `heartbeat`; while the worker holds a task it also refuses shutdown requests
    /// at once, with the reason, rather than leaving the lead waiting for the task to end.
    fn spawn_heartbeat(&self, done: Arc<AtomicBool>) -> (thread::JoinHandle<()>, Option<Waker>) {
        let status = self.status.clone();
        let workspace = self.workspace.clone();
        let roster = self.roster.clone();
        let settings = self.settings.clone();
        let running = Arc::clone(&self.running);
        let watcher = DirWatcher::new(&[&workspace.mailboxes_dir()]).ok();
        let waker = watcher.as_ref().map(DirWatcher::waker);
        let beat = thread::spawn(move || {
            let mut last_beat = Instant::now();
            // Only a grown inbox can hold a new shutdown request: skip the scan otherwise.
            let inbox = workspace.mailboxes().inbox_path(&settings.name);
            let mut inbox_len = None;
            while !done.load(Ordering::Relaxed) {
                // Busy, it watches its inbox to refuse shutdown requests promptly; idle, it only
                // has to beat.
                let busy = matches!(status.get().state, AgentState::Work | AgentState::Waiting);
                let nap = if busy {
                    settings.heartbeat.min(Duration::from_millis(500))
                } else {
                    settings.heartbeat
                };
                match &watcher {
                    Some(w) => {
                        w.wait(nap);
                    }
                    None => thread::sleep(nap.min(Duration::from_millis(200))),
                }
                if last_beat.elapsed() >= settings.heartbeat {
                    if let Err(e) = status.beat() {
                        tracing::warn!("{}: heartbeat not written: {e}", settings.name);
                    }
                    last_beat = Instant::now();
                }
                interrupt_if_asked(&workspace, &settings.name, &running);
                let current = status.get();
                let Some(task) = current
                    .task
                    .filter(|_| matches!(current.state, AgentState::Work | AgentState::Waiting))
                else {
                    continue;
                };
                let len = std::fs::metadata(&inbox).ok().map(|m| m.len());
                if len == inbox_len {
                    continue;
                }
                inbox_len = len;
                refuse_shutdowns_while_busy(&workspace, &roster, &settings, task);
            }
        });
        (beat, waker)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cancels the running job when an `interrupt` from the person came after it started.
fn interrupt_if_asked(workspace: &Workspace, me: &AgentName, running: &Mutex<Option<Running>>) {
    let mut guard = lock(running);
    let Some(job) = guard.as_mut() else {
        return;
    };
    if job.cancel.is_cancelled() {
        return;
    }
    let Ok(batch) = workspace.mailboxes().read_from(me, job.inbox_from) else {
        return;
    };
    job.inbox_from = batch.end;
    let asked = batch.entries.iter().any(|e| {
        matches!(e, Entry::Message { message, .. }
            if message.kind == MessageKind::Interrupt && message.from == USER)
    });
    if asked {
        tracing::info!("{me}: {INTERRUPTED_BY_PERSON}");
        job.cancel.cancel();
    }
}

fn refuse_shutdowns_while_busy(
    workspace: &Workspace,
    roster: &Roster,
    settings: &WorkerSettings,
    task: TaskId,
) {
    let boxes = workspace.mailboxes();
    let Ok(requests) = boxes.requests(settings.request_timeout) else {
        return;
    };
    for request in requests.iter().filter(|r| {
        r.state == RequestState::Pending
            && r.to == settings.name
            && r.kind == MessageKind::ShutdownRequest
    }) {
        let note = format!("busy with {task}; ask again when it is done");
        if let Err(e) = boxes.respond(
            roster,
            &request.request_id,
            &settings.name,
            false,
            Some(note),
            settings.request_timeout,
        ) {
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
fn carried_over(workspace: &Workspace, mut status: AgentStatus) -> AgentStatus {
    match workspace.agents().read(&status.name) {
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
