//! The daemon's side: holds the team lock, runs the team (teammates as processes, the lead in a
//! thread) with no policy answering for the person, and answers the control socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::run::daemon::control::{
    BusyAgent, DaemonStatus, Reply, Request, StopProgress, with_short_path,
};
use crate::run::daemon::{TeamLock, TeamProcess, running, socket_path};
use crate::run::headless::{Happening, HeadlessError, MergePolicy, TeamRun};
use crate::run::team_control;
use crew_config::TeamConfig;
use crew_store::{DirWatcher, StoreError, Waker, Workspace};

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
                    task: status.as_ref().and_then(|s| s.task),
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
    let acts = matches!(
        request,
        Request::Stop { .. } | Request::Force | Request::Restart { .. }
    );
    if acts && from_the_team(shared, &stream) {
        reply(
            &stream,
            Reply::Error {
                message: "refused: this connection comes from a process of the team (an \
                          agent's tool); only the person stops or restarts the team"
                    .to_string(),
            },
        );
        return;
    }
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
            let started = team_control::restart_here(
                &shared.workspace,
                &shared.config,
                shared.exe.clone(),
                &name,
            );
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

/// Whether the peer of `stream` is the daemon's own process tree or a worker's: an agent's
/// tool, however it got rid of crew's owner mark. Ancestry, unlike the environment, is not the
/// peer's to choose. A peer that cannot be identified counts as the team: no pid, or a pid
/// whose ancestry cannot be read back to the system's first process (it exited after
/// connecting, e.g. having passed the socket to another process by `SCM_RIGHTS`).
fn from_the_team(shared: &Shared, stream: &UnixStream) -> bool {
    let Some(peer) = peer_pid(stream) else {
        return true;
    };
    let mut roots = vec![std::process::id()];
    let agents = shared.workspace.agents();
    roots.extend(
        shared
            .config
            .agents()
            .filter_map(|a| agents.read(a.name.get_ref()).ok().flatten())
            .map(|status| status.pid)
            .filter(|pid| *pid > 1),
    );
    descends_from(peer, &roots).unwrap_or(true)
}

/// The pid of the process at the other end of a Unix socket (`SO_PEERCRED`), in ours.
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::ucred>()).ok()?;
    // SAFETY: `cred` and `len` are live and sized for SO_PEERCRED's answer.
    let ok = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    } == 0;
    u32::try_from(cred.pid).ok().filter(|pid| ok && *pid > 0)
}

/// Whether `pid` is one of `roots` or a descendant of one (parents from `/proc`); `None` when
/// its ancestry cannot be read up to pid 1 (a process on the way is gone).
fn descends_from(mut pid: u32, roots: &[u32]) -> Option<bool> {
    // Bounded: a parent chain is short, and a race with exiting processes must not loop.
    for _ in 0..256 {
        if roots.contains(&pid) {
            return Some(true);
        }
        if pid == 1 {
            return Some(false);
        }
        match parent_of(pid)? {
            0 => return Some(false),
            parent if parent != pid => pid = parent,
            _ => return None,
        }
    }
    None
}

/// The parent pid from `/proc/PID/stat` (field 4, counted after the command's last `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_descends_from_its_parent_and_not_the_other_way_round() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert_eq!(descends_from(child.id(), &[me]), Some(true));
        assert_eq!(descends_from(me, &[me]), Some(true));
        assert_eq!(descends_from(me, &[child.id()]), Some(false));
        let gone = child.id();
        child.kill().unwrap();
        child.wait().unwrap();
        // A peer that is gone cannot be vouched for.
        assert_eq!(descends_from(gone, &[me + 1_000_000]), None);
    }

    #[test]
    fn the_peer_of_a_socket_is_the_process_at_its_other_end() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        assert_eq!(peer_pid(&ours), Some(std::process::id()));
        drop(theirs);
    }
}
