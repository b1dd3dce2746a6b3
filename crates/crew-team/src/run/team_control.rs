//! What the person asks of the team running here — stop it, end what still runs, start a worker
//! again — decided and carried out one way whoever asks (`crew down`, `crew worker restart`, the
//! screen). A team daemon is asked through its socket, so what it starts lives in the team's
//! session, not the asking terminal's; a headless team has no socket and is sent SIGTERM, which
//! it takes as ctrl-c; a worker with no daemon to start it is started from here.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crew_config::TeamConfig;
use crew_store::{AgentName, Workspace, pid_alive};

use crate::run::daemon::control::{self, ControlError};
use crate::run::daemon::{self, DaemonStatus, Request, TeamProcess};
use crate::run::supervisor::{Supervisor, SupervisorError};

/// How long past its grace period a stopping team may take: the lead finishes the job in hand.
const LEAD_FINISHING: Duration = Duration::from_secs(60);

/// How often a wait for a stopping team looks again.
const STOP_POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error(transparent)]
    Daemon(#[from] ControlError),
    /// With the log that team writes: a daemon's `daemon.log`, a headless team's `crew.log`
    /// (it writes no daemon log).
    #[error("the team (pid {pid}) is still stopping; `crew down` again waits on, its log is {log}")]
    StillStopping { pid: u32, log: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum RestartError {
    #[error(transparent)]
    Daemon(#[from] ControlError),
    #[error(transparent)]
    Supervisor(#[from] SupervisorError),
}

/// Where a restarted worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restarted {
    /// Started by the team's daemon (pid `daemon_pid`), in the team's session.
    ByDaemon { daemon_pid: u32 },
    /// Started from this process, as process `pid`.
    Here { pid: u32 },
}

/// Asks the team running here to stop, ending the teammates still busy after `grace`: a daemon
/// through its socket, a headless team with SIGTERM. The team is gone a while later
/// ([`wait_stopped`]). `None`: no team runs here.
pub fn stop(ws: &Workspace, grace: Duration) -> Result<Option<TeamProcess>, ControlError> {
    let Some(team) = daemon::running(ws) else {
        return Ok(None);
    };
    if team.headless {
        // SAFETY: a plain signal to the process the team lock names.
        unsafe { libc::kill(team.pid as libc::pid_t, libc::SIGTERM) };
    } else {
        control::ask(
            ws,
            &Request::Stop {
                grace_secs: grace.as_secs(),
            },
        )?;
    }
    Ok(Some(team))
}

/// Ends what still runs of the daemon's team now, without waiting out the grace period.
pub fn force(ws: &Workspace) -> Result<(), ControlError> {
    control::ask(ws, &Request::Force).map(|_| ())
}

/// Waits until `team`, asked to stop with `grace`, is gone; `progress` gets each new line of
/// where the stop has got to (who is still busy, the time left).
pub fn wait_stopped(
    ws: &Workspace,
    team: &TeamProcess,
    grace: Duration,
    progress: &mut dyn FnMut(&str),
) -> Result<(), StopError> {
    let until = Instant::now() + grace + LEAD_FINISHING;
    let mut said = String::new();
    while pid_alive(team.pid) {
        if Instant::now() > until {
            return Err(StopError::StillStopping {
                pid: team.pid,
                log: if team.headless {
                    ".crew/logs/crew.log"
                } else {
                    ".crew/logs/daemon.log"
                },
            });
        }
        if let Ok(DaemonStatus {
            stopping: Some(stopping),
            ..
        }) = control::ask(ws, &Request::Status)
        {
            let line = stopping.summary();
            if line != said {
                progress(&line);
                said = line;
            }
        }
        std::thread::sleep(STOP_POLL);
    }
    Ok(())
}

/// Starts teammate `name` again (refused while it is alive): by the team's daemon when one runs,
/// else from here with `exe`.
pub fn restart(
    ws: &Workspace,
    config: &TeamConfig,
    exe: PathBuf,
    name: &AgentName,
) -> Result<Restarted, RestartError> {
    if daemon::running(ws).is_some_and(|t| !t.headless) {
        let team = control::ask(ws, &Request::Restart { name: name.clone() })?;
        return Ok(Restarted::ByDaemon {
            daemon_pid: team.pid,
        });
    }
    Ok(Restarted::Here {
        pid: restart_here(ws, config, exe, name)?,
    })
}

/// Starts teammate `name` again as a child of this process, waited for on a thread so it never
/// lingers as a zombie that would still count as alive.
pub(crate) fn restart_here(
    ws: &Workspace,
    config: &TeamConfig,
    exe: PathBuf,
    name: &AgentName,
) -> Result<u32, SupervisorError> {
    let mut supervisor = Supervisor::for_team(ws.clone(), config, exe);
    let started = supervisor.restart(config, name);
    supervisor.reap_in_background();
    started
}
