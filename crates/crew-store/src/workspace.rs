//! Where everything lives in the repository a team works on.

use std::path::{Path, PathBuf};

use crate::{AgentStatuses, Limits, Mailboxes, TaskStore};

pub use crew_protocol::{CONFIG_FILE, RUNTIME_FOLDERS};

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    limits: Limits,
}

impl Workspace {
    /// The folders under `root`, with the default [`Limits`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace {
            root: root.into(),
            limits: Limits::default(),
        }
    }

    /// The same folders, storing text within `limits` (crew.toml's `[limits]`).
    pub fn with_limits(self, limits: Limits) -> Self {
        Workspace { limits, ..self }
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
        TaskStore::new(self.tasks_dir()).with_limits(self.limits)
    }

    pub fn mailboxes(&self) -> Mailboxes {
        Mailboxes::new(self.mailboxes_dir()).with_limits(self.limits)
    }

    /// The merge queue, in `.crew/merge-queue.json`.
    pub fn merge_queue(&self) -> crate::MergeQueue {
        crate::MergeQueue::new(&self.crew_dir())
    }

    pub fn agents(&self) -> AgentStatuses {
        AgentStatuses::new(self.crew_dir().join("agents"))
    }
}
