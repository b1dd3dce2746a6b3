//! What crew refuses to commit from a worktree, checked before anything is staged (staging
//! writes every new file into the repository's objects): an embedded repository (a `.git`
//! folder or file anywhere below the root), whose configuration would run its commands in
//! every git that walks into it, the person's included; and more new and changed bytes than
//! `[limits] max_task_bytes`.

use std::path::Path;

use git2::{Repository, StatusOptions};

use super::cli;
use super::error::{Context, GitError};
use super::worktree::checkout_dir;

/// `Ok` when the uncommitted work in `wt` may be committed; `max_bytes` 0 is no limit.
pub(crate) fn check(wt: &Repository, max_bytes: u64) -> Result<(), GitError> {
    let dir = checkout_dir(wt);
    let changed = match cli::changed_paths(&dir) {
        Some(paths) => paths,
        None => changed_by_libgit2(wt)?,
    };
    let mut bytes = 0u64;
    for path in &changed {
        if let Some(folder) = embedded_repository(path) {
            return Err(GitError::EmbeddedRepository {
                worktree: dir.clone(),
                folder,
            });
        }
        // A deleted file adds nothing; a symbolic link counts as its target's name.
        bytes += std::fs::symlink_metadata(dir.join(path)).map_or(0, |m| m.len());
    }
    if max_bytes > 0 && bytes > max_bytes {
        return Err(GitError::TaskTooLarge {
            worktree: dir,
            bytes,
            limit: max_bytes,
        });
    }
    Ok(())
}

/// The folder holding a repository of its own, when `path` (as git status lists it) is one:
/// listed as a folder (git lists a nested repository so, never descending into it), or with a
/// `.git` component in any case.
fn embedded_repository(path: &str) -> Option<String> {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').collect();
    if let Some(at) = parts.iter().position(|p| p.eq_ignore_ascii_case(".git")) {
        return Some(parts[..at].join("/"));
    }
    (path.ends_with('/') && Path::new(trimmed).components().next().is_some())
        .then(|| trimmed.to_string())
}

/// As `git status`, through libgit2 when the git CLI is missing.
fn changed_by_libgit2(wt: &Repository) -> Result<Vec<String>, GitError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .exclude_submodules(true);
    let statuses = wt
        .statuses(Some(&mut opts))
        .context(|| format!("listing the changes in {}", checkout_dir(wt).display()))?;
    Ok(statuses
        .iter()
        .filter_map(|entry| entry.path().ok().map(str::to_string))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_repositories_are_found_by_folder_or_component() {
        assert_eq!(embedded_repository("sub/"), Some("sub".to_string()));
        assert_eq!(embedded_repository("a/b/.git"), Some("a/b".to_string()));
        assert_eq!(embedded_repository("a/.GIT/config"), Some("a".to_string()));
        assert_eq!(embedded_repository("a/b.git/x"), None);
        assert_eq!(embedded_repository("src/main.rs"), None);
    }
}
