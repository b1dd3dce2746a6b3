//! A task's own commits on a teammate's branch: bringing the worktree up to date with the base
//! before a task, committing the task's work as `task_N: <subject>`, and reviewing, merging or
//! reverting exactly the commits one task added (`start` exclusive .. `head`).

use git2::{DiffFindOptions, Oid, Repository};

use super::diff::{WorktreeDiff, collect};
use super::error::{Context, GitError};
use super::merge::{Advance, MergeOutcome, merge_in_memory, move_ref, snapshot, with_repo_lock};
use super::names::validate_branch;
use super::worktree::{Worktrees, display_dir, head_commit};
use super::{Author, branch_for};

impl Worktrees {
    /// The commit (hex) the worktree of `name` is on.
    pub fn head_of(&self, name: &str) -> Result<String, GitError> {
        let wt = self.open_worktree(name)?;
        Ok(head_commit(&wt)?.to_string())
    }

    /// Brings `crew/<name>` up to date with `base_branch` (fast-forward, or a merge of the base
    /// into the branch as `author`), updating the worktree's files. A conflict, or local changes
    /// in the way, change nothing.
    pub fn bring_up_to_date(
        &self,
        name: &str,
        base_branch: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        validate_branch(base_branch)?;
        let wt = self.open_worktree(name)?;
        let repo = self.repo();
        with_repo_lock(repo, || {
            let branch = branch_for(name);
            let base = self.base_commit(base_branch)?;
            let tip = find(repo, head_commit(&wt)?)?;
            let message = format!("Merge branch '{base_branch}' into {branch}");
            let into = Into {
                branch: &branch,
                tip: &tip,
            };
            merge_into(repo, into, &base, base_branch, author, &message)
        })
    }

    /// Merges `head`, the work another teammate did on `from` for a task that now changed
    /// hands, into `crew/<name>`, as [`Self::bring_up_to_date`] merges the base: the new owner
    /// continues from it. The commit must be in this repository (fetched from the team's remote
    /// when it was made on another host).
    pub fn take_over(
        &self,
        name: &str,
        head: &str,
        from: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        validate_branch(from)?;
        let id = oid(head)?;
        let wt = self.open_worktree(name)?;
        let repo = self.repo();
        with_repo_lock(repo, || {
            let branch = branch_for(name);
            let tip = find(repo, head_commit(&wt)?)?;
            let theirs = find(repo, id)?;
            let message = format!("Merge {from} at {head} into {branch}: the task's earlier work");
            let into = Into {
                branch: &branch,
                tip: &tip,
            };
            merge_into(repo, into, &theirs, from, author, &message)
        })
    }

    /// Commits everything uncommitted in the worktree of `name` as `message` by `author`, and
    /// returns the worktree's head afterwards (unchanged when there was nothing to commit).
    pub fn commit_work(
        &self,
        name: &str,
        message: &str,
        author: &Author,
    ) -> Result<String, GitError> {
        let wt = self.open_worktree(name)?;
        // A merge snapshots this same worktree through the same temporary index file.
        with_repo_lock(self.repo(), || {
            let head = head_commit(&wt)?;
            let sig = author.signature()?;
            let Some(snap) = snapshot(&wt, head, &sig, message, self.max_task_bytes())? else {
                return Ok(head.to_string());
            };
            let new = snap.commit.id();
            move_ref(&wt, &branch_for(name), new, head, message)?;
            snap.index.install(&wt)?;
            Ok(new.to_string())
        })
    }

    /// The changes of the commits `start..head`: against the newest base commit they contain
    /// when the base was merged in meanwhile, else against `start`.
    pub fn commits_diff(
        &self,
        start: &str,
        head: &str,
        base_branch: &str,
    ) -> Result<WorktreeDiff, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let start = oid(start)?;
        let head = find(repo, oid(head)?)?;
        let base = self.base_commit(base_branch)?;
        let origin = self.origin(start, head.id(), base.id())?;
        self.tree_diff(origin, &head)
    }

    /// The commit `origin`'s tree against `head`'s, renames detected.
    fn tree_diff(&self, origin: Oid, head: &git2::Commit<'_>) -> Result<WorktreeDiff, GitError> {
        let repo = self.repo();
        let old = find(repo, origin)?
            .tree()
            .context(|| format!("reading the tree of {origin}"))?;
        let new = head
            .tree()
            .context(|| format!("reading the tree of {}", head.id()))?;
        let mut diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .context(|| format!("diffing {origin}..{}", head.id()))?;
        let mut find_opts = DiffFindOptions::new();
        find_opts.renames(true);
        diff.find_similar(Some(&mut find_opts))
            .context(|| format!("detecting renames in {origin}..{}", head.id()))?;
        collect(&diff, &format!("commits {origin}..{}", head.id()))
    }

    fn origin(&self, start: Oid, head: Oid, base: Oid) -> Result<Oid, GitError> {
        let repo = self.repo();
        let fork = repo
            .merge_base(base, head)
            .context(|| format!("finding the merge base of {base} and {head}"))?;
        let newer = fork == start
            || repo
                .graph_descendant_of(fork, start)
                .context(|| format!("comparing {fork} with {start}"))?;
        Ok(if newer { fork } else { start })
    }

    /// Everything merging `head` into `base_branch` brings in (the whole branch since the merge
    /// base, so earlier tasks' unmerged commits too), renames detected: what a merge policy
    /// judges before an automatic merge.
    pub fn merge_diff(&self, head: &str, base_branch: &str) -> Result<WorktreeDiff, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let head = find(repo, oid(head)?)?;
        let base = self.base_commit(base_branch)?;
        let fork = repo
            .merge_base(base.id(), head.id())
            .context(|| format!("finding the merge base of {} and {}", base.id(), head.id()))?;
        self.tree_diff(fork, &head)
    }

    /// Where `head`'s history left `base_branch` (their merge base, hex): the start of what a
    /// review of a branch whose task commits were not recorded one by one shows.
    pub fn fork_point(&self, head: &str, base_branch: &str) -> Result<String, GitError> {
        validate_branch(base_branch)?;
        let base = self.base_commit(base_branch)?.id();
        let head = oid(head)?;
        let fork = self
            .repo()
            .merge_base(base, head)
            .context(|| format!("finding the merge base of {base} and {head}"))?;
        Ok(fork.to_string())
    }

    /// Whether the commit `start` is in `head`'s history (or is `head`): a task's recorded
    /// commits `start..head` mean something only then. A `start` this repository does not have
    /// is in no history here.
    pub fn has_in_history(&self, head: &str, start: &str) -> Result<bool, GitError> {
        let (head, start) = (oid(head)?, oid(start)?);
        if self.repo().find_commit(start).is_err() {
            return Ok(false);
        }
        Ok(head == start
            || self
                .repo()
                .graph_descendant_of(head, start)
                .context(|| format!("comparing {head} with {start}"))?)
    }

    /// Whether `base_branch` already holds the commit `head`. A commit this repository does
    /// not have (made on another host, not fetched) is not in it.
    pub fn base_contains(&self, base_branch: &str, head: &str) -> Result<bool, GitError> {
        validate_branch(base_branch)?;
        let base = self.base_commit(base_branch)?.id();
        let head = oid(head)?;
        if self.repo().find_commit(head).is_err() {
            return Ok(false);
        }
        Ok(base == head
            || self
                .repo()
                .graph_descendant_of(base, head)
                .context(|| format!("comparing {base_branch:?} with {head}"))?)
    }

    /// The files that merging `head` into `base_branch` would conflict in (empty: it merges).
    pub fn merge_conflicts(&self, head: &str, base_branch: &str) -> Result<Vec<String>, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let base = self.base_commit(base_branch)?;
        let tip = find(repo, oid(head)?)?;
        let index = repo
            .merge_commits(&base, &tip, None)
            .context(|| format!("merging {head} into {base_branch:?}"))?;
        conflict_files(&index)
    }

    /// Writes the files of `base_branch` with `head` merged in (in memory: no ref, index or
    /// checkout changes) into the empty folder `dir`, for a reviewer to test. The conflicted
    /// files when they do not merge.
    pub fn export_merged(
        &self,
        head: &str,
        base_branch: &str,
        dir: &std::path::Path,
    ) -> Result<Vec<String>, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        let base = self.base_commit(base_branch)?;
        let tip = find(repo, oid(head)?)?;
        let mut index = repo
            .merge_commits(&base, &tip, None)
            .context(|| format!("merging {head} into {base_branch:?}"))?;
        let files = conflict_files(&index)?;
        if !files.is_empty() {
            return Ok(files);
        }
        let tree = index
            .write_tree_to(repo)
            .and_then(|id| repo.find_tree(id))
            .context(|| format!("writing the merged tree of {head}"))?;
        write_tree_into(repo, &tree, dir)?;
        Ok(Vec::new())
    }

    /// Merges the commit `head` (a task's last commit) into `base_branch` as `author`, keeping
    /// every checkout of the base in step; a conflict changes nothing.
    pub fn merge_commits(
        &self,
        label: &str,
        head: &str,
        base_branch: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        validate_branch(base_branch)?;
        let repo = self.repo();
        with_repo_lock(repo, || {
            let base = self.base_commit(base_branch)?;
            let tip = find(repo, oid(head)?)?;
            let message = format!("crew: merge {label} into {base_branch}");
            let into = Into {
                branch: base_branch,
                tip: &base,
            };
            merge_into(repo, into, &tip, label, author, &message)
        })
    }

    /// Whether `crew/<name>` holds commit `head` (is it, or descends from it).
    pub fn holds(&self, name: &str, head: &str) -> Result<bool, GitError> {
        let id = oid(head)?;
        let wt = self.open_worktree(name)?;
        let tip = head_commit(&wt)?;
        if tip == id {
            return Ok(true);
        }
        self.repo()
            .graph_descendant_of(tip, id)
            .context(|| format!("looking for {head} on {}", branch_for(name)))
    }

    /// Takes the changes of `start..head` back out of `crew/<name>` with a new commit (the
    /// commits stay in its history: nothing is lost), updating the worktree's files.
    pub fn revert_commits(
        &self,
        name: &str,
        start: &str,
        head: &str,
        message: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        let wt = self.open_worktree(name)?;
        let repo = self.repo();
        with_repo_lock(repo, || {
            let branch = branch_for(name);
            let tip = find(repo, head_commit(&wt)?)?;
            let tree_of = |id: Oid| {
                find(repo, id)?
                    .tree()
                    .context(|| format!("reading the tree of {id}"))
            };
            // A three-way merge whose ancestor is the task's head and whose other side is where
            // the task started: exactly the task's changes, undone on top of the branch.
            let index = repo
                .merge_trees(
                    &tree_of(oid(head)?)?,
                    &tree_of(tip.id())?,
                    &tree_of(oid(start)?)?,
                    None,
                )
                .context(|| format!("reverting {start}..{head} on {branch:?}"))?;
            let files = conflict_files(&index)?;
            if !files.is_empty() {
                return Ok(MergeOutcome::Conflicts { files });
            }
            let mut index = index;
            let tree_id = index
                .write_tree_to(repo)
                .context(|| format!("writing the reverted tree of {branch:?}"))?;
            if tree_id == tip.tree_id() {
                return Ok(MergeOutcome::UpToDate);
            }
            let sig = author.signature()?;
            let commit = repo
                .find_tree(tree_id)
                .and_then(|tree| repo.commit(None, &sig, &sig, message, &tree, &[&tip]))
                .context(|| format!("committing the revert on {branch:?}"))?;
            Advance::plan(repo, &branch, &tip, commit)?.apply(repo, message)?;
            Ok(MergeOutcome::Merged {
                commit: commit.to_string(),
            })
        })
    }
}

/// A branch and the commit it is at.
struct Into<'a, 'r> {
    branch: &'a str,
    tip: &'a git2::Commit<'r>,
}

/// Merges the commit `theirs` (called `label`) into `into`: nothing when the branch has it
/// already, a fast-forward when it can, else a merge commit by `author`; the branch and its
/// checkouts move only when all of that is possible. A conflict changes nothing.
fn merge_into(
    repo: &Repository,
    into: Into<'_, '_>,
    theirs: &git2::Commit<'_>,
    label: &str,
    author: &Author,
    message: &str,
) -> Result<MergeOutcome, GitError> {
    let (ours, branch) = (into.tip, into.branch);
    let fork = repo
        .merge_base(ours.id(), theirs.id())
        .context(|| format!("finding the merge base of {branch:?} and {label}"))?;
    let (new, outcome) = if fork == theirs.id() {
        return Ok(MergeOutcome::UpToDate);
    } else if fork == ours.id() {
        let new_head = theirs.id().to_string();
        (theirs.id(), MergeOutcome::FastForward { new_head })
    } else {
        let sig = author.signature()?;
        match merge_in_memory(repo, ours, theirs, &sig, label, branch, message)? {
            Err(files) => return Ok(MergeOutcome::Conflicts { files }),
            Ok(commit) => {
                let outcome = MergeOutcome::Merged {
                    commit: commit.to_string(),
                };
                (commit, outcome)
            }
        }
    };
    Advance::plan(repo, branch, ours, new)?.apply(repo, message)?;
    Ok(outcome)
}

/// Writes the files of `tree` into the folder `dir` (created when missing), touching no index.
pub(crate) fn write_tree_into(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    dir: &std::path::Path,
) -> Result<(), GitError> {
    std::fs::create_dir_all(dir).map_err(super::error::io_error(dir))?;
    let mut builder = git2::build::CheckoutBuilder::new();
    builder
        .target_dir(dir)
        .force()
        .recreate_missing(true)
        .update_index(false);
    repo.checkout_tree(tree.as_object(), Some(&mut builder))
        .context(|| format!("writing the files of {} into {}", tree.id(), dir.display()))
}

pub(crate) fn oid(hex: &str) -> Result<Oid, GitError> {
    Oid::from_str(hex).context(|| format!("invalid commit id {hex:?}"))
}

pub(crate) fn find(repo: &Repository, id: Oid) -> Result<git2::Commit<'_>, GitError> {
    repo.find_commit(id)
        .context(|| format!("reading commit {id} in {}", display_dir(repo)))
}

/// The paths with conflicts in a merged index, sorted.
pub(crate) fn conflict_files(index: &git2::Index) -> Result<Vec<String>, GitError> {
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for conflict in index
        .conflicts()
        .context(|| "listing conflicts".to_string())?
    {
        let conflict = conflict.context(|| "listing conflicts".to_string())?;
        if let Some(entry) = conflict.our.or(conflict.their).or(conflict.ancestor) {
            files.push(String::from_utf8_lossy(&entry.path).into_owned());
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}
