//! `crew worker`, `crew worker restart`, `crew up --headless`, `crew replay`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::cli::args::{ApprovePolicy, MergeArg, UpArgs, WorkerAction, WorkerArgs};
use crate::cli::exit::CliError;
use crate::cli::preflight;
use crate::cli::progress::{Progress, RunEnd, until_done};
use crate::cli::project::Project;
use crew_store::{AgentName, DirWatcher};
use crew_team::run::daemon::TeamLock;
use crew_team::run::daemon::control::ControlError;
use crew_team::run::headless::{Happening, MergePolicy, Policy, TeamRun, settings_for};
use crew_team::run::supervisor::SupervisorError;
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
    let (policy, merge) = policies(&args);
    let workspace = project.workspace.clone();
    let config = Arc::new(project.config);
    let mut run = TeamRun::start(
        workspace.clone(),
        config.clone(),
        std::env::current_exe()?,
        policy,
        merge,
        args.dangerously_bypass,
    )?;
    let mut progress = Progress::new(args.json).with_agents(&workspace, config.lead_name());
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
        let mut happened = run.tick()?;
        // The agents' retries come before the failed turn they led to.
        happened.extend(progress.agents());
        progress.happenings(&happened);
        let tasks = workspace.tasks().load_all()?.tasks;
        let requests = workspace.mailboxes().requests(config.request_timeout())?;
        progress.look(&tasks, &requests);
        if args.until_done
            && let Some(end) = until_done(&happened, &tasks)
        {
            match end {
                RunEnd::GaveUp(why) => unfinished = Some(why),
                RunEnd::Done(failed) => (unfinished, finished) = (failed, true),
            }
            break;
        }
        run.wait(&watcher, Duration::from_millis(500));
    }
    // The last look: a task that ended after this loop's look at the store is still told.
    progress.look(
        &workspace.tasks().load_all()?.tasks,
        &workspace.mailboxes().requests(config.request_timeout())?,
    );
    let grace = Duration::from_secs(15);
    // With every task done the lead's reply to the last notice changes nothing: not waited for.
    let stopped = if finished {
        run.finish(grace)?
    } else {
        run.stop(grace)?
    };
    progress.agents();
    progress.happenings(&stopped);
    progress.summary(&workspace.tasks().load_all()?.tasks);
    match unfinished {
        Some(why) => Err(CliError::Unfinished(why).into()),
        None => Ok(()),
    }
}

/// What stands in for the person in a headless run: `--approve` and `--merge`.
pub(crate) fn policies(args: &UpArgs) -> (Option<Policy>, MergePolicy) {
    let policy = args.approve.map(|p| match p {
        ApprovePolicy::Allow => Policy::Allow,
        ApprovePolicy::Deny => Policy::Deny,
    });
    let merge = match args.merge {
        MergeArg::Auto => MergePolicy::Auto,
        MergeArg::Manual => MergePolicy::Manual,
        MergeArg::Queue => MergePolicy::Queue,
    };
    (policy, merge)
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
    Progress::new(false).happenings(happenings);
}
