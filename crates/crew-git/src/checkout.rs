//! Keeping the checkouts of a branch (the main checkout or any worktree) in step when the branch
//! moves, without touching anyone's uncommitted work: only the paths the move changes are
//! updated, and only when each of them is clean there.

use std::path::PathBuf;

use git2::build::CheckoutBuilder;
use git2::{Oid, Repository, Status, StatusOptions, Tree};

use super::error::{BlockedFile, Context, GitError};
use super::worktree::{display_dir, head_ref, worktree_names};

/// Every non-bare checkout whose HEAD is on `branch`: the main one and any linked worktree.
pub(crate) fn checkouts_of(main: &Repository, branch: &str) -> Result<Vec<Repository>, GitError> {
    let full = format!("refs/heads/{branch}");
    let mut found = Vec::new();
    let reopened =
        Repository::open(main.path()).context(|| format!("opening {}", display_dir(main)))?;
    if !reopened.is_bare() && is_on(&reopened, &full)? {
        found.push(reopened);
    }
    for name in worktree_names(main)? {
        let Ok(wt) = main.find_worktree(&name) else {
            continue;
        };
        if wt.validate().is_err() {
            continue;
        }
        let repo = Repository::open_from_worktree(&wt)
            .context(|| format!("opening worktree {}", wt.path().display()))?;
        if is_on(&repo, &full)? {
            found.push(repo);
        }
    }
    Ok(found)
}

fn is_on(repo: &Repository, full_ref: &str) -> Result<bool, GitError> {
    Ok(head_ref(repo)?.as_deref() == Some(full_ref))
}

/// Paths that differ between two trees (both sides of every change).
pub(crate) fn changed_paths(
    repo: &Repository,
    old: &Tree<'_>,
    new: &Tree<'_>,
) -> Result<Vec<PathBuf>, GitError> {
    let diff = repo
        .diff_tree_to_tree(Some(old), Some(new), None)
        .context(|| format!("comparing trees {} and {}", old.id(), new.id()))?;
    let mut paths: Vec<PathBuf> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(PathBuf::from)
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// The paths among `paths` that the checkout could not take without losing local work: changed
/// or staged, deleted, untracked or ignored where the update would write.
pub(crate) fn blocked_files(
    checkout: &Repository,
    paths: &[PathBuf],
) -> Result<Vec<BlockedFile>, GitError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(true)
        .exclude_submodules(true)
        .disable_pathspec_match(true);
    for path in paths {
        opts.pathspec(path);
    }
    let statuses = checkout
        .statuses(Some(&mut opts))
        .context(|| format!("reading status of {}", display_dir(checkout)))?;
    Ok(statuses
        .iter()
        .filter(|e| !e.status().is_empty())
        .map(|e| BlockedFile {
            path: String::from_utf8_lossy(e.path_bytes()).into_owned(),
            reason: reason(e.status()).to_string(),
        })
        .collect())
}

fn reason(status: Status) -> &'static str {
    if status.contains(Status::CONFLICTED) {
        "unmerged"
    } else if status.intersects(
        Status::INDEX_NEW
            | Status::INDEX_MODIFIED
            | Status::INDEX_DELETED
            | Status::INDEX_RENAMED
            | Status::INDEX_TYPECHANGE,
    ) {
        "staged changes"
    } else if status.contains(Status::WT_NEW) {
        "untracked file would be overwritten"
    } else if status.contains(Status::IGNORED) {
        "ignored file would be overwritten"
    } else if status.contains(Status::WT_DELETED) {
        "deleted locally"
    } else {
        "modified locally"
    }
}

/// Writes `tree` into the checkout's index and files for `paths` only. `safe` refuses to
/// overwrite anything that differs from the checkout's HEAD; `force` is only for putting back
/// paths this module itself just wrote.
pub(crate) fn update_paths(
    checkout: &Repository,
    tree: Oid,
    paths: &[PathBuf],
    force: bool,
) -> Result<(), GitError> {
    if paths.is_empty() {
        return Ok(());
    }
    // libgit2 wants the tree looked up through the very repository handle it checks out into.
    let tree = checkout
        .find_tree(tree)
        .context(|| format!("reading tree {tree} in {}", display_dir(checkout)))?;
    let mut builder = CheckoutBuilder::new();
    if force {
        builder.force();
    } else {
        builder.safe();
    }
    builder.disable_pathspec_match(true);
    for path in paths {
        builder.path(path);
    }
    checkout
        .checkout_tree(tree.as_object(), Some(&mut builder))
        .context(|| format!("updating files in {}", display_dir(checkout)))
}
