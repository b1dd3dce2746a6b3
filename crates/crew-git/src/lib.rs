//! Worktrees, diff and safe merge (git2).
//!
//! One git worktree per writing teammate, at `.worktrees/<name>` on branch `crew/<name>`. This
//! layer knows nothing above it: it returns values and never prints.

mod checkout;
mod cli;
mod diff;
mod error;
mod inline;
mod merge;
mod names;
mod provision;
mod queue_tree;
mod remote;
mod scratch;
mod symlinks;
mod task_commits;
mod uncommitted;
mod worktree;

use serde::{Deserialize, Serialize};

pub use diff::{
    DiffLine, DiffTotals, EntryKind, FileDiff, FileStatus, Hunk, LineKind, WorktreeDiff,
    patched_change, proposed_change,
};
pub use error::{BlockedFile, BlockedFiles, GitError};
pub use inline::{InlineChanges, inline_changes};
pub use merge::MergeOutcome;
pub use names::validate_name;
pub use provision::{Skipped, current_branch, exclude_from_git};
pub use queue_tree::{Landing, QueueTree, QueuedHead};
pub use remote::TeamRemote;
pub use scratch::init_with_files;
pub use worktree::{Worktree, WorktreeInfo, Worktrees};

/// Who commits: the teammate whose work is committed or merged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Author {
    pub fn new(name: impl Into<String>, email: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            email: email.into(),
        }
    }

    /// A teammate (or the person) as crew commits for them: `NAME <NAME@crew.invalid>`.
    pub fn crew(name: &str) -> Self {
        Self::new(name, format!("{name}@crew.invalid"))
    }

    /// A git signature stamped now.
    fn signature(&self) -> Result<git2::Signature<'static>, GitError> {
        use error::Context;
        git2::Signature::now(&self.name, &self.email)
            .context(|| format!("invalid author {:?} <{}>", self.name, self.email))
    }
}

/// The branch a teammate's worktree lives on.
fn branch_for(name: &str) -> String {
    format!("crew/{name}")
}
