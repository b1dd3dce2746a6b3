//! The daemon's side: holds the team lock, runs the team (teammates as processes, the lead in a
//! thread) with no policy answering for the person, and answers the control socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::config::TeamConfig;
use crate::store::{DirWatcher, StoreError, Waker, Workspace};
use crate::team::daemon::control::{
    BusyAgent, DaemonStatus, Reply, Request, StopProgress, with_short_path,
};
use crate::team::daemon::{TeamLock, TeamProcess, running, socket_path};
use crate::team::headless::{Happening, HeadlessError, MergePolicy, TeamRun};
use crate::team::supervisor::Supervisor;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("the team already runs (pid {0})")]
    AlreadyRunning(u32),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Team(#[from] HeadlessError),
    #[error("cannot listen on {path}: {source}")]
    Listen {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the socket's threads and the team's loop share.
struct Shared {
    me: TeamProcess,
    workspace: Workspace,
    config: Arc<TeamConfig>,
    exe: PathBuf,
    screens: AtomicUsize,
    /// The grace period of the stop asked for, once one is.
    stop: Mutex<Option<Duration>>,
    progress: Mutex<Option<StopProgress>>,
    force: AtomicBool,
    waker: Waker,
}

impl Shared {
    fn status(&self) -> DaemonStatus {
        DaemonStatus {
            pid: self.me.pid,
            started_at: self.me.started_at,
            screens: self.screens.load(Ordering::Relaxed),
            stopping: self
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    fn ask_stop(&self, grace: Duration) {
        let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
        if stop.is_none() {
            *stop = Some(grace);
            *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = Some(StopProgress {
                grace_secs: grace.as_secs(),
                secs_left: grace.as_secs(),
                busy: Vec::new(),
                forced: false,
            });
        }
        drop(stop);
        self.waker.wake();
    }

    fn stop_asked(&self) -> Option<Duration> {
        *self.stop.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs the team of `workspace` until a stop is asked for on the socket or `interrupted` is
/// set (SIGTERM), then stops it through the shutdown protocol. What happens goes to `report`
/// as it happens (the daemon's log).
pub fn serve(
    workspace: Workspace,
    config: Arc<TeamConfig>,
    exe: PathBuf,
    goal: Option<&str>,
    bypass: bool,
    interrupted: &AtomicBool,
    report: &mut dyn FnMut(&[Happening]),
) -> Result<(), DaemonError> {
    let Some(lock) = TeamLock::take(&workspace, false)? else {
        return Err(DaemonError::AlreadyRunning(
            running(&workspace).map_or(0, |p| p.pid),
        ));
    };
    let path = socket_path(&workspace);
    // Left by a daemon that was killed: nobody listens on it (we hold the lock).
    let _ = std::fs::remove_file(&path);
    let listener = with_short_path(&path, |p| UnixListener::bind(p)).map_err(|source| {
        DaemonError::Listen {
            path: path.clone(),
            source,
        }
    })?;
    // Only this user's processes may stop the team or ask about it.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).map_err(
        |source| DaemonError::Listen {
            path: path.clone(),
            source,
        },
    )?;
    let watcher = DirWatcher::new(&[&workspace.mailboxes_dir(), &workspace.tasks_dir()])?;
    let shared = Arc::new(Shared {
        me: lock.me.clone(),
        workspace: workspace.clone(),
        config: config.clone(),
        exe: exe.clone(),
        screens: AtomicUsize::new(0),
        stop: Mutex::new(None),
        progress: Mutex::new(None),
        force: AtomicBool::new(false),
        waker: watcher.waker(),
    });
    let accepting = shared.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let shared = accepting.clone();
            std::thread::spawn(move || answer(&shared, stream));
        }
    });

    let mut team = TeamRun::start(
        workspace.clone(),
        config,
        exe,
        None,
        MergePolicy::Manual,
        bypass,
    )?;
    report(&std::mem::take(&mut team.events));
    if let Some(goal) = goal {
        team.give_goal(goal)?;
    }
    let grace = loop {
        if let Some(grace) = shared.stop_asked() {
            break grace;
        }
        if interrupted.load(Ordering::Relaxed) {
            shared.ask_stop(super::DEFAULT_GRACE);
            continue;
        }
        report(&team.tick()?);
        // Reported already; a daemon runs for days, so they are not kept.
        team.events.clear();
        team.wait(&watcher, Duration::from_millis(300));
    };
    tracing::info!(grace_secs = grace.as_secs(), "the team is stopping");
    let agents = workspace.agents();
    let stopped = team.stop_watched(grace, &mut |names, left| {
        let busy = names
            .iter()
            .map(|name| {
                let status = agents.read(name).ok().flatten();
                BusyAgent {
                    name: name.clone(),
                    state: status.as_ref().map(|s| s.state),
                    task: status.as_ref().and_then(|s| s.task.clone()),
                    waiting_on: status.and_then(|s| s.waiting_on),
                }
            })
            .collect();
        let forced = shared.force.load(Ordering::Relaxed);
        *shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(StopProgress {
            grace_secs: grace.as_secs(),
            // Whole seconds, rounded up.
            secs_left: left.as_secs() + u64::from(left.subsec_nanos() > 0),
            busy,
            forced,
        });
        forced
    })?;
    report(&stopped);
    // Clients see the team gone as soon as the socket is.
    let _ = std::fs::remove_file(&path);
    drop(lock);
    Ok(())
}

/// One client connection: a request, its answer, and for an attachment the wait for its end.
fn answer(shared: &Shared, stream: UnixStream) {
    let mut line = String::new();
    let mut reader = BufReader::new(&stream);
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let reply = |mut out: &UnixStream, reply: Reply| {
        let mut text = serde_json::to_string(&reply).unwrap_or_default();
        text.push('\n');
        let _ = out.write_all(text.as_bytes());
    };
    let request = match serde_json::from_str::<Request>(&line) {
        Ok(request) => request,
        Err(e) => {
            reply(
                &stream,
                Reply::Error {
                    message: format!("not a request ({e}): {:?}", line.trim_end()),
                },
            );
            return;
        }
    };
    match request {
        Request::Status => {}
        Request::Stop { grace_secs } => shared.ask_stop(Duration::from_secs(grace_secs)),
        Request::Force => {
            if shared.stop_asked().is_none() {
                shared.ask_stop(Duration::ZERO);
            }
            shared.force.store(true, Ordering::Relaxed);
        }
        Request::Restart { name } => {
            let mut supervisor = Supervisor::new(
                shared.workspace.clone(),
                shared.config.roster(),
                shared.config.lead_name(),
                shared.exe.clone(),
                Duration::from_secs(shared.config.worker.heartbeat_secs),
            );
            let started = supervisor.restart(&shared.config, &name);
            supervisor.reap_in_background();
            if let Err(e) = started {
                reply(
                    &stream,
                    Reply::Error {
                        message: e.to_string(),
                    },
                );
                return;
            }
        }
        Request::Attach => {
            shared.screens.fetch_add(1, Ordering::Relaxed);
            reply(&stream, Reply::Status(shared.status()));
            // The screen sends nothing more: the read ends when it goes away.
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
            shared.screens.fetch_sub(1, Ordering::Relaxed);
            return;
        }
    }
    reply(&stream, Reply::Status(shared.status()));
}
