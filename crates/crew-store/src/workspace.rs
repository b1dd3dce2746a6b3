//! Where everything lives in the repository a team works on.

use std::path::{Path, PathBuf};

use crate::{AgentStatuses, Limits, Mailboxes, MemoryBook, TaskStore};
use crew_protocol::AgentName;

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

    /// `agent`'s memories and the team's, under `.crew/memory/`.
    pub fn memories(&self, agent: &AgentName) -> MemoryBook {
        MemoryBook::new(&self.crew_dir(), agent).with_limits(self.limits)
    }

    /// The merge queue, in `.crew/merge-queue.json`.
    pub fn merge_queue(&self) -> crate::MergeQueue {
        crate::MergeQueue::new(&self.crew_dir())
    }

    pub fn agents(&self) -> AgentStatuses {
        AgentStatuses::new(self.crew_dir().join("agents"))
    }

    /// The main checkout of the git repository whose worktrees the teammates work in: the
    /// workspace itself, unless `.crew/repository` names another folder. That is a workspace
    /// crew keeps for another tool's team (`crew attach claude`) whose teammates crew runs in
    /// worktrees of the person's repository: its reviews diff and merge there.
    pub fn repository_root(&self) -> PathBuf {
        std::fs::read_to_string(self.crew_dir().join(REPOSITORY_LINK))
            .ok()
            .map(|text| PathBuf::from(text.trim_end_matches('\n')))
            .filter(|path| path.is_absolute())
            .unwrap_or_else(|| self.root.clone())
    }

    /// Whether `.crew/repository` names the repository (see [`Self::repository_root`]).
    pub fn is_linked(&self) -> bool {
        self.repository_root() != self.root
    }

    /// Names `repository` as the one the team's worktrees belong to.
    pub fn link_repository(&self, repository: &Path) -> std::io::Result<()> {
        let dir = self.crew_dir();
        std::fs::create_dir_all(&dir)?;
        let text = format!("{}\n", repository.display());
        crate::atomic::write_atomic(&dir.join(REPOSITORY_LINK), text.as_bytes())
    }
}

/// In `.crew/`: the path of the repository a linked workspace reviews in.
const REPOSITORY_LINK: &str = "repository";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_its_own_repository_unless_linked_to_another() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        assert_eq!(ws.repository_root(), dir.path());
        assert!(!ws.is_linked());
        ws.link_repository(Path::new("/srv/repo")).unwrap();
        assert_eq!(ws.repository_root(), Path::new("/srv/repo"));
        assert!(ws.is_linked());
    }
}
