//! `crew worker`, `crew worker restart`, `crew up --headless`, `crew replay`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::cli::args::{ApprovePolicy, MergeArg, UpArgs, WorkerAction, WorkerArgs};
use crate::cli::exit::CliError;
use crate::cli::preflight;
use crate::cli::project::Project;
use crate::cli::team::print_event;
use crew_protocol::joined;
use crew_store::{AgentName, DirWatcher, TaskId};
use crew_team::run::daemon::TeamLock;
use crew_team::run::daemon::control::ControlError;
use crew_team::run::headless::{Happening, MergePolicy, Policy, TeamRun, settings_for};
use crew_team::run::supervisor::SupervisorError;
use crew_team::run::team_control::{self, RestartError, Restarted};
use crew_team::run::worker::{ExitReason, Worker};
use crew_team::work::work_for;

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
    match exit {
        ExitReason::ShutdownApproved { request_id } => println!("{name}: shut down ({request_id})"),
        ExitReason::IdleTimeout => println!("{name}: shut down after being idle"),
        ExitReason::Stopped => println!("{name}: stopped"),
        ExitReason::BudgetStopped => println!("{name}: stopped at the budget, as you answered"),
    }
    Ok(())
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
        },
        args.dangerously_bypass,
    )?;
    print_happenings(&run.events);
    if let Some(goal) = &args.goal {
        run.give_goal(goal)?;
    }
    let watcher = DirWatcher::new(&[&workspace.mailboxes_dir(), &workspace.tasks_dir()])?;
    let stop = Arc::new(AtomicBool::new(false));
    signal_stop(stop.clone())?;
    while !stop.load(Ordering::Relaxed) {
        print_happenings(&run.tick()?);
        if args.until_done && all_done(&workspace)? {
            break;
        }
        run.wait(&watcher, Duration::from_millis(500));
    }
    print_happenings(&run.stop(Duration::from_secs(15))?);
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
        println!("{task} verdict: {verdict}");
    }
    Ok(())
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

pub fn print_happenings(happenings: &[Happening]) {
    for h in happenings {
        match h {
            Happening::Team(e) => print_event(e),
            Happening::Answered {
                request_id,
                from,
                approved,
                what,
            } => println!(
                "{} {from}'s request {request_id}: {what}",
                if *approved { "approved" } else { "denied" }
            ),
            Happening::Reviewed { text, .. } => println!("{text}"),
        }
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
