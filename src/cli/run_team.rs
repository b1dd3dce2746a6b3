//! `crew worker`, `crew worker restart`, `crew up --headless`, `crew replay`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::cli::args::{ApprovePolicy, MergeArg, UpArgs, WorkerAction, WorkerArgs};
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::preflight;
use crate::cli::project::Project;
use crate::cli::team::print_event;
use crew_agent::AgentEvent;
use crew_agent::StopReason;
use crew_agent::transcript_follower::TranscriptFollower;
use crew_protocol::joined;
use crew_store::requests::RequestState;
use crew_store::{AgentName, DirWatcher, MessageKind, TaskId};
use crew_team::run::daemon::TeamLock;
use crew_team::run::daemon::control::ControlError;
use crew_team::run::headless::{Happening, MergePolicy, Policy, TeamRun, settings_for};
use crew_team::run::supervisor::{SupervisorError, TeamEvent};
use crew_team::run::team_control::{self, RestartError, Restarted};
use crew_team::run::worker::{ExitReason, Worker};
use crew_team::work::work_for;
use serde_json::json;

pub fn worker(project: Project, args: WorkerArgs) -> anyhow::Result<()> {
    match (args.action, args.name) {
        (Some(WorkerAction::Restart { name }), _) => restart(&project, &name),
        (None, Some(name)) => run_worker(project, &name, args.dangerously_bypass),
        (None, None) => Err(CliError::Usage("give --name NAME, or `restart NAME`".into()).into()),
    }
}

fn run_worker(project: Project, name: &AgentName, bypass: bool) -> anyhow::Result<()> {
    project
        .roster
        .check("agent", name)
        .map_err(crew_store::StoreError::from)?;
    preflight::worker(&project.config, name)?;
    let config = Arc::new(project.config);
    let mut work = work_for(project.workspace.clone(), config.clone(), name, bypass)?;
    let worker = Worker::new(
        project.workspace,
        config.roster(),
        settings_for(&config, name),
    )?;
    let exit = worker.run(work.as_mut(), &AtomicBool::new(false))?;
    print_exit(name, exit);
    Ok(())
}

/// How a worker run from the command line ended, said.
pub(crate) fn print_exit(name: &AgentName, exit: ExitReason) {
    match exit {
        ExitReason::ShutdownApproved { request_id } => println!("{name}: shut down ({request_id})"),
        ExitReason::IdleTimeout => println!("{name}: shut down after being idle"),
        ExitReason::Stopped => println!("{name}: stopped"),
        ExitReason::BudgetStopped => println!("{name}: stopped at the budget, as you answered"),
    }
}

/// Starts a worker again in the background; refused while one is alive. With a team daemon
/// running, the daemon starts it, so it lives in the team's session rather than this terminal's.
fn restart(project: &Project, name: &AgentName) -> anyhow::Result<()> {
    let restarted = team_control::restart(
        &project.workspace,
        &project.config,
        std::env::current_exe()?,
        name,
    );
    match restarted {
        Ok(Restarted::ByDaemon { daemon_pid }) => println!(
            "restarted {name} in the team (pid {daemon_pid}); its output goes to .crew/logs/{name}.log"
        ),
        Ok(Restarted::Here { pid }) => {
            println!("restarted {name} (pid {pid}); its output goes to .crew/logs/{name}.log")
        }
        Err(
            RestartError::Daemon(ControlError::Refused(why))
            | RestartError::Supervisor(SupervisorError::Refused(why)),
        ) => return Err(CliError::Refused(why).into()),
        Err(RestartError::Supervisor(SupervisorError::Store(e))) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

pub fn up(project: Project, args: UpArgs) -> anyhow::Result<()> {
    if !args.here.is_empty() {
        return Err(crate::cli::exit::CliError::Usage(
            "--here names the teammates of this machine on a team in the store: give --store URL too"
                .into(),
        )
        .into());
    }
    // The daemon was checked by the `crew up` that started it; a running team is attached to.
    if !args.daemon && crew_team::run::daemon::running(&project.workspace).is_none() {
        preflight::team(
            &project.config,
            project.workspace.root(),
            args.goal.is_some(),
            args.simulator,
        )?;
    }
    if let Some(line) = preflight::simulator_line(&project.config) {
        eprintln!("crew: {line}");
        tracing::warn!("{line}");
    }
    // Said before anything starts (the screen repeats it in its header; workers log it).
    let sandbox = crew_tools::Sandbox::new(project.config.permissions.sandbox, false, true);
    if let Some(warning) = sandbox.warning() {
        eprintln!("crew: warning: {warning}");
        tracing::warn!("{warning}");
    }
    if args.daemon {
        return crate::cli::attach::run_daemon(
            project.workspace,
            Arc::new(project.config),
            args.goal.as_deref(),
            args.dangerously_bypass,
        );
    }
    if !args.headless {
        return crate::cli::attach::start_and_attach(
            &project.workspace,
            &project.config,
            args.goal.as_deref(),
            args.dangerously_bypass,
            crew_tui::Options::default(),
        );
    }
    // One team per repository: the lock is held until this process ends.
    let Some(_lock) = TeamLock::take(&project.workspace, true)? else {
        let root = project.workspace.root().to_path_buf();
        return Err(match crew_team::run::daemon::running(&project.workspace) {
            Some(team) => crate::cli::attach::refuse_second_team(&root, &team),
            None => CliError::Refused(format!("the team of {} is starting", root.display())),
        }
        .into());
    };
    let policy = args.approve.map(|p| match p {
        ApprovePolicy::Allow => Policy::Allow,
        ApprovePolicy::Deny => Policy::Deny,
    });
    let workspace = project.workspace.clone();
    let config = Arc::new(project.config);
    let mut run = TeamRun::start(
        workspace.clone(),
        config.clone(),
        std::env::current_exe()?,
        policy,
        match args.merge {
            MergeArg::Auto => MergePolicy::Auto,
            MergeArg::Manual => MergePolicy::Manual,
            MergeArg::Queue => MergePolicy::Queue,
        },
        args.dangerously_bypass,
    )?;
    let mut progress = Progress::new(args.json, config.request_timeout())
        .with_agents(&workspace, config.lead_name());
    if args.json {
        // Whether the simulator plays, first: a reader must not take its run for a model's.
        progress.say(
            "team",
            json!({"simulator": config.simulated()}),
            String::new(),
        );
    }
    progress.happenings(&run.events);
    if let Some(goal) = &args.goal {
        run.give_goal(goal)?;
    }
    let watcher = DirWatcher::new(&[&workspace.mailboxes_dir(), &workspace.tasks_dir()])?;
    let stop = Arc::new(AtomicBool::new(false));
    signal_stop(stop.clone())?;
    let mut unfinished = None;
    let mut finished = false;
    while !stop.load(Ordering::Relaxed) {
        let happened = run.tick()?;
        // The agents' retries come before the failed turn they led to.
        progress.agents();
        progress.happenings(&happened);
        progress.store(&workspace)?;
        if args.until_done {
            if let Some(why) = lead_gave_up(&happened, &workspace)? {
                unfinished = Some(why);
                break;
            }
            if all_done(&workspace)? {
                unfinished = failed_tasks(&workspace)?;
                finished = true;
                break;
            }
        }
        run.wait(&watcher, Duration::from_millis(500));
    }
    // The last look: a task that ended after this loop's look at the store is still told.
    progress.store(&workspace)?;
    let grace = Duration::from_secs(15);
    // With every task done the lead's reply to the last notice changes nothing: not waited for.
    let stopped = if finished {
        run.finish(grace)?
    } else {
        run.stop(grace)?
    };
    progress.agents();
    progress.happenings(&stopped);
    // The closing summary: what waits for review, and each review's verdict (none is no pass).
    let tasks = workspace.tasks().load_all()?.tasks;
    let waiting: Vec<TaskId> = tasks
        .iter()
        .filter(|t| t.status == crew_store::Status::Review)
        .map(|t| t.id)
        .collect();
    if !waiting.is_empty() {
        println!(
            "waiting for review: {} (crew review list)",
            joined(&waiting, ", ")
        );
    }
    for (task, verdict) in crew_team::verdict::of_reviews(&tasks) {
        println!("{task} verdict: {}", output::one_line(&verdict));
    }
    match unfinished {
        Some(why) => Err(CliError::Unfinished(why).into()),
        None => Ok(()),
    }
}

/// `--until-done` with a lead that will not go on: its turn failed for good (the model's
/// retries are behind it), or it ended with not one task created, so nothing would ever end.
fn lead_gave_up(
    happened: &[Happening],
    workspace: &crew_store::Workspace,
) -> anyhow::Result<Option<String>> {
    for h in happened {
        let Happening::LeadTurn { success, summary } = h else {
            continue;
        };
        if !success {
            return Ok(Some(format!(
                "the lead's turn failed: {}",
                output::one_line(summary)
            )));
        }
        if workspace.tasks().load_all()?.tasks.is_empty() {
            return Ok(Some(format!(
                "the lead ended its turn without creating a task: {}",
                output::one_line(summary)
            )));
        }
    }
    Ok(None)
}

/// Every task ended and some failed: which, and why.
fn failed_tasks(workspace: &crew_store::Workspace) -> anyhow::Result<Option<String>> {
    let failed: Vec<String> = workspace
        .tasks()
        .load_all()?
        .tasks
        .iter()
        .filter(|t| t.status == crew_store::Status::Failed)
        .map(|t| {
            format!(
                "{} ({}): {}",
                t.id,
                output::one_line(&t.subject),
                output::one_line(t.result.as_deref().unwrap_or("no reason given"))
            )
        })
        .collect();
    Ok((!failed.is_empty()).then(|| format!("failed: {}", failed.join("; "))))
}

/// Every task completed or failed (and there is at least one): nothing runs and no review waits.
pub fn all_done(workspace: &crew_store::Workspace) -> anyhow::Result<bool> {
    use crew_store::Status;
    let tasks = workspace.tasks().load_all()?.tasks;
    Ok(!tasks.is_empty()
        && tasks
            .iter()
            .all(|t| matches!(t.status, Status::Completed | Status::Failed)))
}

/// The headless progress: one line (or, with `--json`, one JSON object with a `type`) per event
/// a person cares about. Task changes are seen in the store, so every writer's are reported;
/// model trouble (retries, recoveries, a teammate's failed turn) in the agents' transcripts;
/// text an agent wrote is escaped for the terminal.
struct Progress {
    json: bool,
    request_timeout: Duration,
    tasks: HashMap<TaskId, crew_store::Status>,
    asked: HashSet<crew_store::RequestId>,
    /// The agents' transcripts, and the lead (whose failed turns are told as `lead_error`).
    transcripts: Option<(TranscriptFollower, AgentName)>,
}

impl Progress {
    fn new(json: bool, request_timeout: Duration) -> Self {
        Progress {
            json,
            request_timeout,
            tasks: HashMap::new(),
            asked: HashSet::new(),
            transcripts: None,
        }
    }

    /// Also tells what the agents' transcripts say of their models from now on.
    fn with_agents(mut self, workspace: &crew_store::Workspace, lead: &AgentName) -> Self {
        self.transcripts = Some((TranscriptFollower::new(workspace.root()), lead.clone()));
        self
    }

    /// Model retries, recoveries and fallbacks of every agent, and a teammate's turn that
    /// stopped short (the lead's is a `Happening::LeadTurn`), since the last look.
    fn agents(&mut self) {
        let Some((follower, lead)) = &mut self.transcripts else {
            return;
        };
        let lead = lead.clone();
        for (agent, line) in follower.new_lines() {
            let who = output::one_line(&agent).into_owned();
            match line.event {
                AgentEvent::Recovery {
                    kind,
                    attempt,
                    reason,
                } => self.say(
                    "recovery",
                    json!({"agent": agent, "kind": kind, "attempt": attempt, "text": reason}),
                    format!("{who}: {}", output::one_line(&reason)),
                ),
                AgentEvent::ModelFallback { from, to, reason } => self.say(
                    "model_fallback",
                    json!({"agent": agent, "from": from, "to": to, "text": reason}),
                    format!(
                        "{who}: model {} → {}: {}",
                        output::one_line(&from),
                        output::one_line(&to),
                        output::one_line(&reason)
                    ),
                ),
                AgentEvent::TurnEnd { result }
                    if agent != lead.as_str()
                        && !matches!(
                            result.stop_reason,
                            StopReason::Completed | StopReason::Interrupted
                        ) =>
                {
                    self.say(
                        "turn_stopped",
                        json!({"agent": agent, "stop_reason": result.stop_reason, "text": result.reason}),
                        format!(
                            "{who}'s turn stopped ({:?}): {}",
                            result.stop_reason,
                            output::one_line(&result.reason)
                        ),
                    )
                }
                _ => {}
            }
        }
    }

    fn say(&self, kind: &str, mut fields: serde_json::Value, line: String) {
        if self.json {
            fields["type"] = kind.into();
            println!("{}", output::json_line(&fields));
        } else {
            println!("{line}");
        }
    }

    fn happenings(&self, happenings: &[Happening]) {
        for h in happenings {
            match h {
                Happening::Team(e) if !self.json => print_event(e),
                Happening::Team(e) => self.say("agent", team_event_json(e), String::new()),
                Happening::Answered {
                    request_id,
                    from,
                    approved,
                    what,
                } => self.say(
                    "request_answered",
                    json!({"request_id": request_id, "from": from, "approved": approved, "text": what}),
                    format!(
                        "{} {from}'s request {request_id}: {}",
                        if *approved { "approved" } else { "denied" },
                        output::one_line(what)
                    ),
                ),
                Happening::Reviewed { id, text } => self.say(
                    "review",
                    json!({"id": id, "text": text}),
                    output::one_line(text).into_owned(),
                ),
                Happening::Queue { text } => self.say(
                    "queue",
                    json!({"text": text}),
                    output::one_line(text).into_owned(),
                ),
                Happening::LeadTurn { success: true, .. } => {}
                Happening::LeadTurn {
                    success: false,
                    summary,
                } => self.say(
                    "lead_error",
                    json!({"text": summary}),
                    format!("the lead's turn failed: {}", output::one_line(summary)),
                ),
            }
        }
    }

    /// What changed in the tasks and the requests since the last look.
    fn store(&mut self, workspace: &crew_store::Workspace) -> anyhow::Result<()> {
        use crew_store::Status;
        for task in workspace.tasks().load_all()?.tasks {
            let before = self.tasks.insert(task.id, task.status);
            if before == Some(task.status) {
                continue;
            }
            let id = task.id;
            let owner = task
                .owner
                .as_ref()
                .map(|o| o.to_string())
                .unwrap_or_default();
            let subject = output::one_line(&task.subject);
            if before.is_none() {
                self.say(
                    "task_created",
                    json!({"id": id, "subject": task.subject, "role": task.role}),
                    format!("{id} created: {subject}"),
                );
            }
            let why = output::one_line(task.result.as_deref().unwrap_or("no reason given"));
            // Looks are apart: a task claimed and ended between two was still claimed.
            let unclaimed_before = matches!(before, None | Some(Status::Pending));
            let worked = matches!(
                task.status,
                Status::Review | Status::Completed | Status::Failed
            );
            if unclaimed_before && worked && task.owner.is_some() {
                self.say(
                    "task_claimed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} claimed by {owner}"),
                );
            }
            match task.status {
                Status::Pending if before.is_some() => self.say(
                    "task_released",
                    json!({"id": id}),
                    format!("{id} is pending again"),
                ),
                Status::Pending => {}
                Status::InProgress => self.say(
                    "task_claimed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} claimed by {owner}"),
                ),
                Status::Review => self.say(
                    "task_in_review",
                    json!({"id": id, "owner": owner}),
                    format!("{id} is in review (crew review show {id})"),
                ),
                Status::Completed if before == Some(Status::Review) => {
                    self.say("task_merged", json!({"id": id}), format!("{id} merged"))
                }
                Status::Completed => self.say(
                    "task_completed",
                    json!({"id": id, "owner": owner}),
                    format!("{id} done by {owner}: {subject}"),
                ),
                Status::Failed => self.say(
                    "task_failed",
                    json!({"id": id, "owner": owner, "reason": task.result}),
                    format!("{id} failed ({owner}): {why}"),
                ),
            }
        }
        for r in workspace.mailboxes().requests(self.request_timeout)? {
            let person_answers = matches!(
                r.kind,
                MessageKind::PermissionRequest | MessageKind::BudgetRequest
            );
            if r.state != RequestState::Pending
                || !person_answers
                || self.asked.contains(&r.request_id)
            {
                continue;
            }
            self.asked.insert(r.request_id.clone());
            let answer = format!("crew respond {} --as user approve|reject", r.request_id);
            let text = r.text.as_deref().unwrap_or_default();
            let (kind, what) = if r.kind == MessageKind::BudgetRequest {
                ("budget_reached", "budget reached")
            } else {
                ("request_waiting", "waiting")
            };
            self.say(
                kind,
                json!({"request_id": r.request_id, "from": r.from, "text": text, "answer": answer}),
                format!(
                    "{what}, {} from {}: {} — answer with `{answer}`",
                    r.request_id,
                    r.from,
                    output::one_line(text)
                ),
            );
        }
        Ok(())
    }
}

fn team_event_json(e: &TeamEvent) -> serde_json::Value {
    match e {
        TeamEvent::Started { name, pid } => json!({"event": "started", "name": name, "pid": pid}),
        TeamEvent::Adopted { name, pid } => json!({"event": "adopted", "name": name, "pid": pid}),
        TeamEvent::Died {
            name,
            released,
            why,
        } => json!({"event": "died", "name": name, "released": released, "why": why}),
        TeamEvent::Exited { name, code } => {
            json!({"event": "stopped", "name": name, "code": code})
        }
        TeamEvent::ShutDown { name } => json!({"event": "stopped", "name": name}),
    }
}

/// Ctrl-C (and SIGTERM) ask the loop to stop and shut the team down cleanly.
pub fn signal_stop(stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal listener")?;
    std::thread::spawn(move || {
        runtime.block_on(async {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    Ok(())
}

pub fn replay(path: &std::path::Path) -> anyhow::Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let text = crew_agent::transcript::render(std::io::BufReader::new(file))
        .with_context(|| format!("reading {}", path.display()))?;
    print!("{}", crate::cli::output::block(&text));
    Ok(())
}

/// `crew ui`: a screen on the repository, attached to its team when one runs (without one it
/// shows the store as it is; `crew up` starts the team).
pub fn ui(project: Project, options: crew_tui::Options) -> anyhow::Result<()> {
    crew_tui::run(project.workspace.root(), options)
}

/// The team's happenings as progress lines (the daemon's log).
pub fn print_happenings(happenings: &[Happening]) {
    Progress::new(false, Duration::ZERO).happenings(happenings);
}
