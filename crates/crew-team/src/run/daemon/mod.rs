//! The team as a background daemon: one per repository (an flock on `.crew/daemon.lock` that the
//! kernel releases when the holder dies, so a SIGKILLed daemon's files are simply taken over),
//! what it says about itself in `.crew/daemon.json`, and a control socket at
//! `.crew/daemon.sock` that speaks the line-JSON protocol of [`control`]. The screen is a client:
//! it reads the store like everyone else and uses the socket only for what only the daemon
//! knows (screens attached, stop progress) or does (stop, force).

pub mod control;
mod serve;

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fd_lock::{RwLock, RwLockWriteGuard};
use serde::{Deserialize, Serialize};

use crew_store::{StoreError, Workspace, pid_alive};

pub use control::{BusyAgent, DaemonStatus, Reply, Request, StopProgress};
pub use serve::{DaemonError, serve};

/// How long a stop waits for teammates to finish before ending them, unless told otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(15);

/// What the process that holds the team lock says about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamProcess {
    pub pid: u32,
    /// Seconds since the Unix epoch.
    pub started_at: u64,
    /// `crew up --headless` in a terminal: no control socket, stopped where it runs.
    pub headless: bool,
}

impl TeamProcess {
    pub fn started(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.started_at)
    }
}

pub(crate) fn lock_path(ws: &Workspace) -> PathBuf {
    ws.crew_dir().join("daemon.lock")
}

pub(crate) fn info_path(ws: &Workspace) -> PathBuf {
    ws.crew_dir().join("daemon.json")
}

pub(crate) fn socket_path(ws: &Workspace) -> PathBuf {
    ws.crew_dir().join("daemon.sock")
}

/// The team lock, held for as long as this value lives (the process, in practice).
pub struct TeamLock {
    pub me: TeamProcess,
    _guard: RwLockWriteGuard<'static, File>,
    info: PathBuf,
}

impl TeamLock {
    /// Takes the lock if no team runs for this repository (`Ok(None)` when one does), and
    /// records this process in `.crew/daemon.json`.
    pub fn take(ws: &Workspace, headless: bool) -> Result<Option<TeamLock>, StoreError> {
        let path = lock_path(ws);
        let dir = ws.crew_dir();
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        // A client probing with a shared lock holds it for an instant: try a few times.
        let mut tries = 0;
        let guard = loop {
            let same = file.try_clone().map_err(|e| StoreError::io(&path, e))?;
            // Leaked on purpose: the lock lives as long as the team, which is this process.
            let lock: &'static mut RwLock<File> = Box::leak(Box::new(RwLock::new(same)));
            match lock.try_write() {
                Ok(guard) => break guard,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && tries < 10 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(StoreError::io(&path, e)),
            }
        };
        let me = TeamProcess {
            pid: std::process::id(),
            started_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            headless,
        };
        let info = info_path(ws);
        let text =
            serde_json::to_string_pretty(&me).map_err(|e| StoreError::io(&info, e.into()))?;
        crew_store::atomic::write_atomic(&info, text.as_bytes())
            .map_err(|e| StoreError::io(&info, e))?;
        Ok(Some(TeamLock {
            me,
            _guard: guard,
            info,
        }))
    }
}

impl Drop for TeamLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.info);
    }
}

/// The process running this repository's team, if one does: the lock is held and the process
/// it names is alive (a file left by a killed process names a dead pid, and its lock is free).
pub fn running(ws: &Workspace) -> Option<TeamProcess> {
    let text = std::fs::read_to_string(info_path(ws)).ok()?;
    let info: TeamProcess = serde_json::from_str(&text).ok()?;
    (lock_held(ws) && pid_alive(info.pid)).then_some(info)
}

/// Whether some process holds the team lock (probed with a shared lock, released at once).
fn lock_held(ws: &Workspace) -> bool {
    let Ok(file) = File::open(lock_path(ws)) else {
        return false;
    };
    let lock = RwLock::new(file);
    matches!(lock.try_read(), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}
