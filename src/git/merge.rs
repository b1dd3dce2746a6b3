//! Merging a teammate's worktree into the base branch without ever losing work (invariant 6).
//!
//! Everything is decided before anything is written: the worktree's uncommitted work becomes a
//! commit object, the merge is done in memory, and every checkout of the base branch is checked
//! for local changes on the paths the merge changes. Only then are the worktree branch, the base
//! checkouts and finally the base branch ref updated. A conflict or a refusal leaves every ref,
//! index and file as it was (at most some unreferenced objects are added to the object store).

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use git2::{Commit, ErrorCode, Index, IndexAddOption, Oid, Repository, RepositoryState, Signature};
use serde::Serialize;
use tracing::{info, warn};

use super::checkout::{blocked_files, changed_paths, checkouts_of, update_paths};
use super::cli::{self, StagedIndex};
use super::error::{BlockedFiles, Context, GitError, io_error};
use super::names::validate_branch;
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
struct Snapshot<'r> {
    index: Staged,
    commit: Commit<'r>,
}

/// The worktree's index with everything staged, not yet written over the real one.
enum Staged {
    /// Staged by the git CLI, in a file beside the index.
    Cli(StagedIndex),
    /// Staged by libgit2, in memory.
    Memory(Index),
}

impl Staged {
    fn install(self, wt: &Repository) -> Result<(), GitError> {
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
        // One crew merge at a time per repository: a second one waits, then sees the moved base.
        let (lock_path, mut lock) = merge_lock(repo)?;
        let _merging = lock.write().map_err(io_error(&lock_path))?;

        let sig = author.signature()?;
        let branch = branch_for(name);
        let base = self.base_commit(base_branch)?;
        let old_tip = head_commit(&wt)?;

        let snapshot = snapshot(&wt, old_tip, &sig, name)?;
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
            match merge_in_memory(repo, &base, &tip_commit, &sig, &branch, base_branch)? {
                Err(files) => return Ok(MergeOutcome::Conflicts { files }),
                Ok(commit) => (
                    commit,
                    MergeOutcome::Merged {
                        commit: commit.to_string(),
                    },
                ),
            }
        };

        let old_tree = base.tree().context(|| format!("reading {base_branch:?}"))?;
        let new_tree = repo
            .find_commit(new_base)
            .and_then(|c| c.tree())
            .context(|| format!("reading the merged tree {new_base}"))?;
        let paths = changed_paths(repo, &old_tree, &new_tree)?;
        let checkouts = checkouts_of(repo, base_branch)?;
        check_checkouts(&checkouts, &paths, base_branch)?;

        let message = format!("crew: merge {branch} into {base_branch}");
        if let Some(snap) = snapshot {
            move_ref(&wt, &branch, tip, old_tip, &message)?;
            snap.index.install(&wt)?;
        }

        for (done, checkout) in checkouts.iter().enumerate() {
            if let Err(e) = update_paths(checkout, new_tree.id(), &paths, false) {
                restore(&checkouts[..done], old_tree.id(), &paths);
                return Err(e);
            }
        }
        if let Err(e) = move_ref(repo, base_branch, new_base, base.id(), &message) {
            restore(&checkouts, old_tree.id(), &paths);
            return Err(e);
        }
        info!(name, base_branch, ?outcome, "merged worktree");
        Ok(outcome)
    }
}

/// The per-repository lock file that serialises crew merges.
fn merge_lock(repo: &Repository) -> Result<(PathBuf, fd_lock::RwLock<File>), GitError> {
    let path = repo.commondir().join("crew-merge.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_error(&path))?;
    Ok((path, fd_lock::RwLock::new(file)))
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

/// Commits the worktree's uncommitted and untracked (not ignored) files on top of `head`,
/// without moving any ref or writing the index yet. `None` when there is nothing to commit.
fn snapshot<'r>(
    wt: &'r Repository,
    head: Oid,
    sig: &Signature<'_>,
    name: &str,
) -> Result<Option<Snapshot<'r>>, GitError> {
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
    let message = format!("crew: save uncommitted work of {name}");
    let commit = wt
        .commit(None, sig, sig, &message, &tree, &[&parent])
        .and_then(|id| wt.find_commit(id))
        .context(|| format!("committing uncommitted work in {dir}"))?;
    Ok(Some(Snapshot { index, commit }))
}

/// A three-way merge in memory: the merge commit's id (not on any branch yet), or the
/// conflicted paths.
fn merge_in_memory(
    repo: &Repository,
    base: &Commit<'_>,
    tip: &Commit<'_>,
    sig: &Signature<'_>,
    branch: &str,
    base_branch: &str,
) -> Result<Result<Oid, Vec<String>>, GitError> {
    let mut index = repo
        .merge_commits(base, tip, None)
        .context(|| format!("merging {branch:?} into {base_branch:?}"))?;
    if index.has_conflicts() {
        let conflicts = index
            .conflicts()
            .context(|| format!("listing conflicts of {branch:?} with {base_branch:?}"))?;
        let mut files = Vec::new();
        for conflict in conflicts {
            let conflict = conflict
                .context(|| format!("listing conflicts of {branch:?} with {base_branch:?}"))?;
            let entry = conflict.our.or(conflict.their).or(conflict.ancestor);
            if let Some(entry) = entry {
                files.push(String::from_utf8_lossy(&entry.path).into_owned());
            }
        }
        files.sort();
        files.dedup();
        return Ok(Err(files));
    }
    let tree_id = index
        .write_tree_to(repo)
        .context(|| format!("writing the merged tree of {branch:?}"))?;
    let message = format!("Merge branch '{branch}' into {base_branch}");
    let commit = repo
        .find_tree(tree_id)
        .and_then(|tree| repo.commit(None, sig, sig, &message, &tree, &[base, tip]))
        .context(|| format!("committing the merge of {branch:?} into {base_branch:?}"))?;
    Ok(Ok(commit))
}

/// Moves `refs/heads/<branch>` from `old` to `new`, failing if someone else moved it meanwhile.
fn move_ref(
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
