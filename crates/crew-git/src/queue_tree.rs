//! The merge queue's side of git: the exact commit that merging approved tasks one after the
//! other into the base would make, built in memory (no ref, index or checkout changes), written
//! to a scratch folder to be tested, and landed by moving the base to it only if the base is
//! still where the commit was built on (compare-and-swap).

use std::path::Path;

use super::Author;
use super::error::{Context, GitError};
use super::merge::{Advance, merge_in_memory, with_repo_lock};
use super::names::validate_branch;
use super::task_commits::{find, oid, write_tree_into};
use super::worktree::Worktrees;

/// One approved task as the queue merges it: its last commit, a label for messages, and who
/// the merge commit is by.
#[derive(Debug, Clone)]
pub struct QueuedHead {
    pub label: String,
    pub head: String,
    pub author: Author,
}

/// What building the queue's commit found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueTree {
    /// `commit` is the base at `base` with every head merged in, in order.
    Built { base: String, commit: String },
    /// The head at `index` conflicts with the base and the heads before it.
    Conflict { index: usize, files: Vec<String> },
}

/// How landing ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landing {
    /// The base branch (and every checkout of it) is at the tested commit now.
    Landed,
    /// The base branch is no longer at the commit the tree was built on: nothing moved.
    BaseMoved { now: String },
}

impl Worktrees {
    /// The commit (hex) the base branch is at.
    pub fn base_head(&self, base_branch: &str) -> Result<String, GitError> {
        validate_branch(base_branch)?;
        Ok(self.base_commit(base_branch)?.id().to_string())
    }

    /// Merges `heads` one after the other into the current tip of `base_branch`, in memory: a
    /// head the tree already holds changes nothing, one descending from it is taken as it is
    /// (a fast-forward), any other becomes a merge commit by its author.
    pub fn build_queue_tree(
        &self,
        base_branch: &str,
        heads: &[QueuedHead],
    ) -> Result<QueueTree, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let base = self.base_commit(base_branch)?;
        let mut tip = base.clone();
        for (index, queued) in heads.iter().enumerate() {
            let head = find(repo, oid(&queued.head)?)?;
            let fork = repo
                .merge_base(tip.id(), head.id())
                .context(|| format!("finding the merge base of {} and {}", tip.id(), head.id()))?;
            if fork == head.id() {
                continue;
            }
            if fork == tip.id() {
                tip = head;
                continue;
            }
            let sig = queued.author.signature()?;
            let message = format!("crew: merge {} into {base_branch}", queued.label);
            match merge_in_memory(
                repo,
                &tip,
                &head,
                &sig,
                &queued.label,
                base_branch,
                &message,
            )? {
                Err(files) => return Ok(QueueTree::Conflict { index, files }),
                Ok(commit) => tip = find(repo, commit)?,
            }
        }
        Ok(QueueTree::Built {
            base: base.id().to_string(),
            commit: tip.id().to_string(),
        })
    }

    /// Writes the files of `commit` into `dir` (created when missing), for a test to run on.
    pub fn export_commit(&self, commit: &str, dir: &Path) -> Result<(), GitError> {
        let repo = self.repo();
        let tree = find(repo, oid(commit)?)?
            .tree()
            .context(|| format!("reading the tree of {commit}"))?;
        write_tree_into(repo, &tree, dir)
    }

    /// Moves `base_branch` from `from` to `to` (its checkouts kept in step, invariant 6), but
    /// only if it is still at `from`: a base that moved meanwhile is left alone and said.
    pub fn land(
        &self,
        base_branch: &str,
        from: &str,
        to: &str,
        message: &str,
    ) -> Result<Landing, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let (from, to) = (oid(from)?, oid(to)?);
        with_repo_lock(repo, || {
            let base = self.base_commit(base_branch)?;
            if base.id() != from {
                return Ok(Landing::BaseMoved {
                    now: base.id().to_string(),
                });
            }
            if from == to {
                return Ok(Landing::Landed);
            }
            // The ref moves by compare-and-swap too: a commit made with the git CLI takes no
            // crew lock.
            match Advance::plan(repo, base_branch, &base, to)?.apply(repo, message) {
                Ok(()) => Ok(Landing::Landed),
                Err(GitError::ConcurrentUpdate { .. }) => Ok(Landing::BaseMoved {
                    now: self.base_head(base_branch)?,
                }),
                Err(e) => Err(e),
            }
        })
    }
}
