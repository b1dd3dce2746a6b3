//! Where everything lives in the repository a team works on.

use std::path::{Path, PathBuf};

use crate::store::{AgentStatuses, Mailboxes, TaskStore};

/// crew's runtime folders in a repository, never committed.
pub const RUNTIME_FOLDERS: &[&str] = &[".tasks", ".mailboxes", ".worktrees", ".crew"];

/// The team's configuration file at the repository root.
pub const CONFIG_FILE: &str = "crew.toml";

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join(".tasks")
    }

    pub fn mailboxes_dir(&self) -> PathBuf {
        self.root.join(".mailboxes")
    }

    pub fn crew_dir(&self) -> PathBuf {
        self.root.join(".crew")
    }

    pub fn tasks(&self) -> TaskStore {
        TaskStore::new(self.tasks_dir())
    }

    pub fn mailboxes(&self) -> Mailboxes {
        Mailboxes::new(self.mailboxes_dir())
    }

    pub fn agents(&self) -> AgentStatuses {
        AgentStatuses::new(self.crew_dir().join("agents"))
    }
}
