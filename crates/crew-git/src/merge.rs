//! Merging a teammate's worktree into the base branch without ever losing work (invariant 6).
//!
//! Everything is decided before anything is written: the worktree's uncommitted work becomes a
//! commit object, the merge is done in memory, and every checkout of the base branch is checked
//! for local changes on the paths the merge changes. Only then are the worktree branch, the base
//! checkouts and finally the base branch ref updated. A conflict or a refusal leaves every ref,
//! index and file as it was (at most some unreferenced objects are added to the object store).

use std::fs::OpenOptions;
use std::path::PathBuf;

use git2::{Commit, ErrorCode, Index, IndexAddOption, Oid, Repository, RepositoryState, Signature};
use serde::Serialize;
use tracing::{info, warn};

use super::checkout::{blocked_files, changed_paths, checkouts_of, update_paths};
use super::cli::{self, StagedIndex};
use super::error::{BlockedFiles, Context, GitError, io_error};
use super::names::validate_branch;
use super::symlinks::check_symlinks;
use super::task_commits::conflict_files;
use super::uncommitted;
use super::worktree::{Worktrees, checkout_dir, display_dir, head_commit};
use super::{Author, branch_for};

/// What `merge` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum MergeOutcome {
    /// The base branch was moved forward to the worktree's commit (hex id).
    FastForward { new_head: String },
    /// A merge commit (hex id) was made on the base branch.
    Merged { commit: String },
    /// The base branch already contains everything in the worktree.
    UpToDate,
    /// The merge would conflict in these files; nothing was changed anywhere.
    Conflicts { files: Vec<String> },
}

/// The worktree's uncommitted work, committed but not yet on the branch.
pub(crate) struct Snapshot<'r> {
    pub(crate) index: Staged,
    pub(crate) commit: Commit<'r>,
}

/// The worktree's index with everything staged, not yet written over the real one.
pub(crate) enum Staged {
    /// Staged by the git CLI, in a file beside the index.
    Cli(StagedIndex),
    /// Staged by libgit2, in memory.
    Memory(Index),
}

impl Staged {
    pub(crate) fn install(self, wt: &Repository) -> Result<(), GitError> {
        let index = wt.path().join("index");
        match self {
            Staged::Cli(staged) => staged.install(&index).map_err(io_error(&index)),
            Staged::Memory(mut staged) => staged
                .write()
                .context(|| format!("writing the index of {}", display_dir(wt))),
        }
    }
}

impl Worktrees {
    /// Merges `crew/<name>` (plus the worktree's uncommitted and untracked work, committed first
    /// as `author`) into `base_branch`, updating any checkout of the base branch safely.
    pub fn merge(
        &self,
        name: &str,
        base_branch: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        validate_branch(base_branch)?;
        let wt = self.open_worktree(name)?;
        let repo = self.repo();
        with_repo_lock(repo, || self.merge_locked(&wt, name, base_branch, author))
    }

    fn merge_locked(
        &self,
        wt: &Repository,
        name: &str,
        base_branch: &str,
        author: &Author,
    ) -> Result<MergeOutcome, GitError> {
        let repo = self.repo();
        let sig = author.signature()?;
        let branch = branch_for(name);
        let base = self.base_commit(base_branch)?;
        let old_tip = head_commit(wt)?;

        let snapshot = snapshot(
            wt,
            old_tip,
            &sig,
            &format!("crew: save uncommitted work of {name}"),
            self.max_task_bytes(),
        )?;
        let tip = match &snapshot {
            Some(s) => s.commit.id(),
            None => old_tip,
        };
        let tip_commit = repo
            .find_commit(tip)
            .context(|| format!("reading the tip of {branch:?}"))?;

        let fork = repo
            .merge_base(base.id(), tip)
            .context(|| format!("finding the merge base of {base_branch:?} and {branch:?}"))?;
        let (new_base, outcome) = if fork == tip {
            return Ok(MergeOutcome::UpToDate);
        } else if fork == base.id() {
            (
                tip,
                MergeOutcome::FastForward {
                    new_head: tip.to_string(),
                },
            )
        } else {
            let message = format!("Merge branch '{branch}' into {base_branch}");
            match merge_in_memory(
                repo,
                &base,
                &tip_commit,
                &sig,
                &branch,
                base_branch,
                &message,
            )? {
                Err(files) => return Ok(MergeOutcome::Conflicts { files }),
                Ok(commit) => (
                    commit,
                    MergeOutcome::Merged {
                        commit: commit.to_string(),
                    },
                ),
            }
        };

        let advance = Advance::plan(repo, base_branch, &base, new_base)?;

        let message = format!("crew: merge {branch} into {base_branch}");
        if let Some(snap) = snapshot {
            move_ref(wt, &branch, tip, old_tip, &message)?;
            snap.index.install(wt)?;
        }
        advance.apply(repo, &message)?;
        info!(name, base_branch, ?outcome, "merged worktree");
        Ok(outcome)
    }
}

/// Runs `f` holding the per-repository lock file that serialises crew's merges and worktree
/// creation (a second one waits, then sees the moved branches). Not reentrant: `f` must not take
/// it again.
pub(crate) fn with_repo_lock<T>(
    repo: &Repository,
    f: impl FnOnce() -> Result<T, GitError>,
) -> Result<T, GitError> {
    let path = repo.commondir().join("crew.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_error(&path))?;
    let mut lock = fd_lock::RwLock::new(file);
    let _held = lock.write().map_err(io_error(&path))?;
    f()
}

/// Moving a branch from one commit to another with every checkout of it kept in step: planned
/// (and refused on local changes in the way) before anything is written, then applied.
pub(crate) struct Advance {
    branch: String,
    old: Oid,
    new: Oid,
    old_tree: Oid,
    new_tree: Oid,
    paths: Vec<PathBuf>,
    checkouts: Vec<Repository>,
}

impl Advance {
    pub(crate) fn plan(
        repo: &Repository,
        branch: &str,
        old: &Commit<'_>,
        new: Oid,
    ) -> Result<Advance, GitError> {
        let old_tree = old.tree().context(|| format!("reading {branch:?}"))?;
        let new_tree = repo
            .find_commit(new)
            .and_then(|c| c.tree())
            .context(|| format!("reading the tree of {new}"))?;
        let paths = changed_paths(repo, &old_tree, &new_tree)?;
        let checkouts = checkouts_of(repo, branch)?;
        check_checkouts(&checkouts, &paths, branch)?;
        check_symlinks(repo, &new_tree, &paths, &checkouts)?;
        Ok(Advance {
            branch: branch.to_string(),
            old: old.id(),
            new,
            old_tree: old_tree.id(),
            new_tree: new_tree.id(),
            paths,
            checkouts,
        })
    }

    /// The files in every checkout, then the ref; a failure puts the files back.
    pub(crate) fn apply(&self, repo: &Repository, message: &str) -> Result<(), GitError> {
        for (done, checkout) in self.checkouts.iter().enumerate() {
            if let Err(e) = update_paths(checkout, self.new_tree, &self.paths, false) {
                restore(&self.checkouts[..done], self.old_tree, &self.paths);
                return Err(e);
            }
        }
        if let Err(e) = move_ref(repo, &self.branch, self.new, self.old, message) {
            restore(&self.checkouts, self.old_tree, &self.paths);
            return Err(e);
        }
        Ok(())
    }
}

/// Refuses the merge if any checkout of the base branch is mid-operation or has local changes
/// on a path the merge changes.
fn check_checkouts(
    checkouts: &[Repository],
    paths: &[PathBuf],
    base_branch: &str,
) -> Result<(), GitError> {
    for checkout in checkouts {
        let state = checkout.state();
        if state != RepositoryState::Clean {
            return Err(GitError::CheckoutBusy {
                checkout: checkout_dir(checkout),
                branch: base_branch.to_string(),
                state: format!("{state:?}").to_lowercase(),
            });
        }
        let blocked = blocked_files(checkout, paths)?;
        if !blocked.is_empty() {
            return Err(GitError::CheckoutDirty {
                checkout: checkout_dir(checkout),
                branch: base_branch.to_string(),
                files: BlockedFiles(blocked),
            });
        }
    }
    Ok(())
}

/// Commits the worktree's uncommitted and untracked (not ignored) files on top of `head` as
/// `message`, without moving any ref or writing the index yet. `None` when there is nothing to commit.
/// Refused before anything is staged when `uncommitted::check` refuses the work.
pub(crate) fn snapshot<'r>(
    wt: &'r Repository,
    head: Oid,
    sig: &Signature<'_>,
    message: &str,
    max_task_bytes: u64,
) -> Result<Option<Snapshot<'r>>, GitError> {
    uncommitted::check(wt, max_task_bytes)?;
    let dir = display_dir(wt);
    let (tree_id, index) = match cli::stage_all(&checkout_dir(wt), &wt.path().join("index")) {
        Some((tree, staged)) => (tree, Staged::Cli(staged)),
        None => {
            let mut index = wt
                .index()
                .context(|| format!("reading the index of {dir}"))?;
            index
                .add_all(["*"], IndexAddOption::DEFAULT, None)
                .and_then(|()| index.update_all(["*"], None))
                .context(|| format!("collecting uncommitted work in {dir}"))?;
            let tree = index
                .write_tree()
                .context(|| format!("snapshotting {dir}"))?;
            (tree, Staged::Memory(index))
        }
    };
    let parent = wt
        .find_commit(head)
        .context(|| format!("reading HEAD of {dir}"))?;
    if parent.tree_id() == tree_id {
        return Ok(None);
    }
    let tree = wt
        .find_tree(tree_id)
        .context(|| format!("snapshotting {dir}"))?;
    let commit = wt
        .commit(None, sig, sig, message, &tree, &[&parent])
        .and_then(|id| wt.find_commit(id))
        .context(|| format!("committing uncommitted work in {dir}"))?;
    Ok(Some(Snapshot { index, commit }))
}

/// A three-way merge in memory: the merge commit's id (not on any branch yet), or the
/// conflicted paths.
pub(crate) fn merge_in_memory(
    repo: &Repository,
    base: &Commit<'_>,
    tip: &Commit<'_>,
    sig: &Signature<'_>,
    branch: &str,
    base_branch: &str,
    message: &str,
) -> Result<Result<Oid, Vec<String>>, GitError> {
    let mut index = repo
        .merge_commits(base, tip, None)
        .context(|| format!("merging {branch:?} into {base_branch:?}"))?;
    let files = conflict_files(&index)?;
    if !files.is_empty() {
        return Ok(Err(files));
    }
    let tree_id = index
        .write_tree_to(repo)
        .context(|| format!("writing the merged tree of {branch:?}"))?;
    let commit = repo
        .find_tree(tree_id)
        .and_then(|tree| repo.commit(None, sig, sig, message, &tree, &[base, tip]))
        .context(|| format!("committing the merge of {branch:?} into {base_branch:?}"))?;
    Ok(Ok(commit))
}

/// Moves `refs/heads/<branch>` from `old` to `new`, failing if someone else moved it meanwhile.
pub(crate) fn move_ref(
    repo: &Repository,
    branch: &str,
    new: Oid,
    old: Oid,
    message: &str,
) -> Result<(), GitError> {
    match repo.reference_matching(&format!("refs/heads/{branch}"), new, true, old, message) {
        Ok(_) => Ok(()),
        Err(e) if e.code() == ErrorCode::Modified => Err(GitError::ConcurrentUpdate {
            repo: checkout_dir(repo),
            branch: branch.to_string(),
        }),
        Err(e) => Err(e).context(|| format!("moving branch {branch:?} to {new}")),
    }
}

/// Puts back the paths an aborted merge already wrote in base checkouts. They were verified
/// clean before being written, so forcing the old content back loses nothing.
fn restore(checkouts: &[Repository], old_tree: Oid, paths: &[PathBuf]) {
    for checkout in checkouts {
        if let Err(e) = update_paths(checkout, old_tree, paths, true) {
            warn!(checkout = %display_dir(checkout), error = %e, "could not restore checkout");
        }
    }
}
