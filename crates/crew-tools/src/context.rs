//! What every tool call gets: where it works, where big results go, what it has read,
//! how to stop, the environment its commands see, its own checklist, its memory and skills.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use crate::skills::SkillCatalogue;
use crate::todo::TodoList;
use crew_model::secret::is_secret_name;
use crew_sandbox::Sandbox;
use crew_store::AgentMemory;

/// The most characters of an agent's words kept as its purpose.
pub const PURPOSE_KEPT: usize = 600;

/// Per-call context. Cloning shares the read-state tracker and the cancellation token.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The agent's working directory (its worktree); every path must stay inside it.
    pub workspace: PathBuf,
    /// `<repo>/.crew/tool-results`: spilled results, readable back with `read`.
    pub spill_dir: PathBuf,
    pub read_state: ReadState,
    pub cancel: CancellationToken,
    /// This process's environment with credentials scrubbed (see [`scrub_env`]); a command
    /// gets only what its sandbox's allow-list names of it (`Sandbox::environment`).
    pub env: Vec<(String, String)>,
    pub sandbox: Sandbox,
    /// The agent's own checklist (`todo_write`), shared like the read state.
    pub todos: TodoList,
    /// The agent's memories (`memory_*` tools, hooks' memories): its memory folders, or the
    /// team's store; none outside an agent.
    pub memory: Option<Arc<dyn AgentMemory>>,
    /// The skills `skill_load` may load (found once, when the agent starts).
    pub skills: Arc<SkillCatalogue>,
    /// What the agent said in its reply before these calls: why it makes them, shown to the
    /// person with a permission request.
    pub purpose: Option<String>,
}

impl ToolContext {
    /// A context with this process's environment scrubbed, no sandbox (the agent runtime sets
    /// the configured one), and nothing read yet.
    pub fn new(workspace: impl Into<PathBuf>, spill_dir: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            spill_dir: spill_dir.into(),
            read_state: ReadState::default(),
            cancel: CancellationToken::new(),
            env: scrub_env(std::env::vars()),
            sandbox: Sandbox::off(),
            todos: TodoList::default(),
            memory: None,
            skills: Arc::default(),
            purpose: None,
        }
    }

    /// This context with the workspace read-only to commands: for a command granted because
    /// it only reads, so a wrong entry in the read-only list cannot write.
    pub fn read_only(&self) -> Self {
        Self {
            sandbox: self.sandbox.read_only(),
            ..self.clone()
        }
    }

    /// Roots a reading tool may look in: the workspace, then the spill directory.
    pub fn read_roots(&self) -> [&Path; 2] {
        [self.workspace.as_path(), self.spill_dir.as_path()]
    }

    /// Roots a writing tool may touch: the workspace only.
    pub fn write_roots(&self) -> [&Path; 1] {
        [self.workspace.as_path()]
    }
}

/// Variables that point a command at a server outside the sandbox (ssh-agent, D-Bus, tmux, the
/// display), which would act for it unconfined.
const OUTSIDE_SERVERS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
    "TMUX",
    "DISPLAY",
    "WAYLAND_DISPLAY",
];

/// Drops every variable that may carry a credential (see [`is_secret_name`]) or name a server
/// outside the sandbox (see [`OUTSIDE_SERVERS`]).
pub fn scrub_env(vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    vars.into_iter()
        .filter(|(name, _)| !is_secret_name(name) && !OUTSIDE_SERVERS.contains(&name.as_str()))
        .collect()
}

/// What a file looked like when it was last read or written by a tool. `modified` is kept
/// for callers that want a cheap hint (e.g. not re-injecting a file the model just read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified: Option<SystemTime>,
    pub len: u64,
    pub hash: u64,
}

impl FileStamp {
    pub fn of(bytes: &[u8], metadata: &std::fs::Metadata) -> Self {
        Self {
            modified: metadata.modified().ok(),
            len: bytes.len() as u64,
            hash: content_hash(bytes),
        }
    }

    /// True when `bytes` is what this stamp recorded. Content decides, not the modification
    /// time: a coarse clock can hide a same-second change, and a `touch` changes nothing.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.len == bytes.len() as u64 && self.hash == content_hash(bytes)
    }
}

fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// Path → stamp at the last read, shared by all clones of a context (one agent session).
#[derive(Debug, Clone, Default)]
pub struct ReadState {
    inner: Arc<Mutex<HashMap<PathBuf, FileStamp>>>,
}

impl ReadState {
    pub fn record(&self, path: &Path, stamp: FileStamp) {
        self.lock().insert(path.to_path_buf(), stamp);
    }

    pub fn get(&self, path: &Path) -> Option<FileStamp> {
        self.lock().get(path).copied()
    }

    /// A separate tracker starting with what this one knows now (a forked subagent knows the
    /// files its caller read; what it reads later is its own).
    pub fn snapshot(&self) -> ReadState {
        ReadState {
            inner: Arc::new(Mutex::new(self.lock().clone())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, FileStamp>> {
        // A poisoned map still holds valid stamps: a panic elsewhere cannot corrupt a HashMap insert.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_scrubbed() {
        let vars = [
            "PATH",
            "HOME",
            "MY_API_KEY",
            "GITHUB_TOKEN",
            "client_secret",
            "DB_PASSWORD",
            "ANTHROPIC_BASE_URL",
            "OPENAI_ORG",
            "AWS_REGION",
            "LANG",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "TMUX",
            "DISPLAY",
            "WAYLAND_DISPLAY",
        ]
        .map(|n| (n.to_string(), "v".to_string()));
        let kept: Vec<String> = scrub_env(vars).into_iter().map(|(n, _)| n).collect();
        assert_eq!(kept, ["PATH", "HOME", "LANG"]);
    }
}
