//! `.crew/agents/<name>.json`: each agent's state, pid, current task, heartbeat and usage,
//! written atomically by the agent itself (the supervisor marks the dead).

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::atomic::write_atomic;
use crate::task::now_rfc3339;
use crew_protocol::{AgentName, AgentState, TaskId};

/// Prompt-cache input tokens: read from the cache (cheap) and written to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheTokens {
    pub read: u64,
    pub written: u64,
}

impl CacheTokens {
    pub fn is_empty(&self) -> bool {
        self.read == 0 && self.written == 0
    }

    pub fn add(&mut self, other: CacheTokens) {
        self.read += other.read;
        self.written += other.written;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentStatus {
    pub name: AgentName,
    pub state: AgentState,
    /// Its process on `host`.
    pub pid: u32,
    /// The machine its process runs on (its hostname): a pid says something only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default)]
    pub task: Option<TaskId>,
    /// The request it is waiting on, while WAITING.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<crate::RequestId>,
    pub heartbeat: String,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub turns: u64,
    #[serde(default)]
    pub tokens: u64,
    /// What its model calls cost so far, in millionths of a US dollar, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
    /// Input tokens its model calls read from or wrote to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "CacheTokens::is_empty")]
    pub cache: CacheTokens,
    /// Why it is in this state, in a few words (e.g. why it shut down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its own checklist (`todo_write`), as it last wrote it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<crate::TodoItem>,
    /// The subagents it started in its current job, the latest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentLine>,
}

/// A subagent as its caller's pane shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentLine {
    /// `sub<n>` in the caller's session.
    pub id: String,
    pub role: String,
    /// The caller's few words about it.
    pub description: String,
    /// While it runs, the last tool it called; `None` before the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How it ended (`completed`, `max_turns_reached`, …, and a verify subagent's verdict);
    /// `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// Subagent lines kept in a status: the running ones and the latest that ended.
pub const SUBAGENT_LINES: usize = 4;

impl AgentStatus {
    pub fn new(name: &AgentName, state: AgentState) -> Self {
        let now = now_rfc3339();
        AgentStatus {
            name: name.clone(),
            state,
            pid: std::process::id(),
            host: this_host(),
            task: None,
            waiting_on: None,
            heartbeat: now.clone(),
            started_at: now,
            turns: 0,
            tokens: 0,
            cost_micros: None,
            cache: CacheTokens::default(),
            note: None,
            todos: Vec::new(),
            subagents: Vec::new(),
        }
    }

    /// How long since the last heartbeat (zero if it is in the future or unreadable).
    pub fn heartbeat_age(&self, now: SystemTime) -> Duration {
        humantime::parse_rfc3339_weak(&self.heartbeat)
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .unwrap_or_default()
    }

    /// A live state whose process is gone or whose heartbeat is older than `stale_after`.
    pub fn looks_dead(&self, now: SystemTime, stale_after: Duration) -> bool {
        !self.state.is_final() && (!self.process_alive() || self.heartbeat_age(now) > stale_after)
    }

    /// Whether its process still runs, as far as this machine can tell: on this host by its
    /// pid; on another its pid means nothing here, so only its heartbeat can tell.
    pub fn process_alive(&self) -> bool {
        match (&self.host, this_host()) {
            (Some(there), Some(here)) if *there != here => true,
            _ => pid_alive(self.pid),
        }
    }
}

/// This machine's hostname; `None` if the system gives none.
pub fn this_host() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, which is what is passed.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = String::from_utf8_lossy(&buf[..len]).trim().to_string();
    (!name.is_empty()).then_some(name)
}

/// Whether a process with this pid exists (signal 0 probes without sending anything).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !zombie(pid)
}

/// A process that has exited but was not reaped yet (Linux; elsewhere never).
fn zombie(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = &stat[stat.rfind(')')? + 1..];
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(false)
}

#[derive(Debug, Clone)]
pub struct AgentStatuses {
    dir: PathBuf,
}

impl AgentStatuses {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        AgentStatuses { dir: dir.into() }
    }

    fn path(&self, name: &AgentName) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    pub fn write(&self, status: &AgentStatus) -> Result<(), StoreError> {
        let path = self.path(&status.name);
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        let bytes = serde_json::to_vec_pretty(status)
            .map_err(|e| StoreError::malformed(&path, e.to_string()))?;
        write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
    }

    pub fn read(&self, name: &AgentName) -> Result<Option<AgentStatus>, StoreError> {
        let path = self.path(name);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::malformed(&path, format!("invalid agent status: {e}"))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }
}

/// A cost in millionths of a dollar as a person reads it: cents, or tenths of a cent below one
/// cent (so a small spend is not shown as `$0.00`).
pub fn dollars(micros: u64) -> String {
    let value = micros as f64 / 1e6;
    if micros > 0 && micros < 10_000 {
        format!("${value:.4}")
    } else {
        format!("${value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_cost_is_not_shown_as_nothing() {
        assert_eq!(dollars(3000), "$0.0030");
        assert_eq!(dollars(0), "$0.00");
        assert_eq!(dollars(1_234_567), "$1.23");
    }

    #[test]
    fn an_exited_but_unreaped_child_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not waited for: it stays a zombie, which kill(pid, 0) still finds.
        let mut alive = true;
        for _ in 0..500 {
            alive = pid_alive(pid);
            if !alive {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!alive, "a zombie counted as alive");
        child.wait().unwrap();
        assert!(pid_alive(std::process::id()));
    }

    #[test]
    fn another_hosts_pid_is_not_judged_here_only_its_heartbeat() {
        let now = SystemTime::now();
        let name = AgentName::parse("alice").unwrap();
        let mut status = AgentStatus::new(&name, AgentState::Work);
        assert!(status.host.is_some() && status.host == this_host());
        // No such pid here: on this host it is dead; from another, not judged by it.
        status.pid = u32::MAX / 2;
        assert!(status.looks_dead(now, Duration::from_secs(60)));
        status.host = Some("build-box-2".into());
        assert!(!status.looks_dead(now, Duration::from_secs(60)));
        // Silent for longer than allowed: dead wherever it runs.
        let later = now + Duration::from_secs(120);
        assert!(status.looks_dead(later, Duration::from_secs(60)));
    }
}
