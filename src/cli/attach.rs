//! `crew up` / `crew` / `crew demo`: the team runs as a daemon detached from the terminal, and
//! this process is only a screen attached to it. Also the daemon's own entry point
//! (`crew up --daemon`, started by the others).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};

use crate::cli::exit::CliError;
use crew_config::TeamConfig;
use crew_store::{Draft, Workspace};
use crew_team::run::daemon::{self, Request, TeamProcess};

/// How long a starting daemon may take to answer on its socket.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The daemon's process: runs the team until stopped, logging what happened to its stdout
/// (`.crew/logs/daemon.log`). Exit 3 when another team already runs here.
pub fn run_daemon(
    workspace: Workspace,
    config: Arc<TeamConfig>,
    goal: Option<&str>,
    bypass: bool,
) -> anyhow::Result<()> {
    let interrupted = Arc::new(AtomicBool::new(false));
    crate::cli::run_team::signal_stop(interrupted.clone())?;
    match daemon::serve(
        workspace,
        config,
        std::env::current_exe()?,
        goal,
        bypass,
        &interrupted,
        &mut |happened| crate::cli::run_team::print_happenings(happened),
    ) {
        Err(daemon::DaemonError::AlreadyRunning(pid)) => {
            return Err(CliError::Refused(format!("the team already runs (pid {pid})")).into());
        }
        other => other?,
    }
    println!("the team stopped");
    Ok(())
}

/// Starts the team's daemon unless one runs, then attaches a screen to it until the person
/// detaches. `goal` goes to the lead either way.
pub fn start_and_attach(
    workspace: &Workspace,
    config: &TeamConfig,
    goal: Option<&str>,
    bypass: bool,
    options: crew_tui::Options,
) -> anyhow::Result<()> {
    match daemon::running(workspace) {
        Some(team) if team.headless => {
            eprintln!(
                "crew: the team runs in the foreground (crew up --headless, pid {}); this screen \
                 watches it, and it stops where it runs",
                team.pid
            );
            send_goal(workspace, config, goal)?;
        }
        Some(_) => send_goal(workspace, config, goal)?,
        None => start(workspace, goal, bypass)?,
    }
    crew_tui::run(workspace.root(), options).context(
        "the screen could not open; the team runs on in the background (`crew status`, `crew down`)",
    )?;
    match daemon::running(workspace) {
        Some(team) if !team.headless => {
            // From another folder, `crew` alone would not find this team: name its folder.
            let here = std::env::current_dir()
                .and_then(|d| d.canonicalize())
                .is_ok_and(|d| d.starts_with(workspace.root()));
            let crew = if here {
                "crew".to_string()
            } else {
                format!("crew -C {}", workspace.root().display())
            };
            println!(
                "detached; the team keeps running (pid {}). `{crew}` attaches again, `{crew} down` stops it.",
                team.pid
            );
        }
        Some(_) => {}
        None => println!("the team stopped"),
    }
    Ok(())
}

fn send_goal(workspace: &Workspace, config: &TeamConfig, goal: Option<&str>) -> anyhow::Result<()> {
    if let Some(goal) = goal {
        workspace.mailboxes().send(
            &config.roster(),
            Draft {
                text: Some(format!("Goal: {goal}")),
                ..Draft::new(crew_store::USER, config.lead_name().clone())
            },
        )?;
    }
    Ok(())
}

/// Starts `crew up --daemon` in its own session (no terminal, so no SIGHUP when this one
/// goes), output to `.crew/logs/daemon.log`, and waits until it answers on its socket.
fn start(workspace: &Workspace, goal: Option<&str>, bypass: bool) -> anyhow::Result<()> {
    let root = workspace.root();
    let logs = workspace.crew_dir().join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let log_path = logs.join("daemon.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = Command::new(std::env::current_exe()?);
    command
        .arg("-C")
        .arg(root)
        .args(["up", "--daemon"])
        .current_dir(root)
        // Sealed out of our own environment: handed to the team explicitly.
        .envs(crew_model::secret::sealed_vars().iter().cloned())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    if let Some(goal) = goal {
        command.args(["--goal", goal]);
    }
    if bypass {
        command.arg("--dangerously-bypass");
    }
    // SAFETY: setsid is async-signal-safe and touches nothing of the parent's.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .context("starting the team's daemon (crew up --daemon)")?;
    let started = Instant::now();
    loop {
        if daemon::control::ask(workspace, &Request::Status).is_ok() {
            // Reaped when it ends, so it never lingers as a zombie while this screen runs.
            std::thread::spawn(move || child.wait());
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            // Another `crew up` won the race: attach to its team.
            if status.code() == Some(3) && daemon::running(workspace).is_some() {
                return Ok(());
            }
            // Its last words are the reason (a bad crew.toml, a socket path too long...).
            let said = std::fs::read_to_string(&log_path).unwrap_or_default();
            let last = said
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(anyhow!(
                "the team's daemon ended at start ({status}): {last} (log: {})",
                log_path.display()
            ));
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(anyhow!(
                "the team's daemon did not answer within {}s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Why `crew up --headless` cannot run here: the team already does.
pub fn refuse_second_team(root: &Path, team: &TeamProcess) -> CliError {
    let how = if team.headless {
        "in the foreground (crew up --headless)"
    } else {
        "as a daemon; `crew` attaches a screen, `crew down` stops it"
    };
    CliError::Refused(format!(
        "the team of {} already runs {how}: pid {}, since {}",
        root.display(),
        team.pid,
        humantime::format_rfc3339_seconds(team.started())
    ))
}
