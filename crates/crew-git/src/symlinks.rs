//! What a merge refuses to write because of symlinks: a path under a symlink in a checkout
//! (the write would land wherever the link points), and a symlink whose target, resolved as the
//! kernel will once it is checked out (through the tree's other symlinks, `..` included), is
//! outside the checkout, in its `.git`, or in one of crew's folders (the store, the inboxes).

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use git2::{FileMode, Repository, Tree};

use super::error::{Context, GitError};
use super::worktree::checkout_dir;
use crew_protocol::RUNTIME_FOLDERS;

/// More links than this in one resolution is a loop, as the kernel's `ELOOP` says.
const MAX_HOPS: usize = 40;

/// Refuses the update of `paths` to `tree` in any of `checkouts` if one would go through a
/// symlink there, or if the tree makes one of them a symlink pointing where crew's or git's
/// own files are, or out of the checkout.
pub(crate) fn check_symlinks(
    repo: &Repository,
    tree: &Tree<'_>,
    paths: &[PathBuf],
    checkouts: &[Repository],
) -> Result<(), GitError> {
    for path in paths {
        if let Some(target) = link_target(repo, tree, path)? {
            let reach = resolve(repo, tree, path, &target)?;
            if let Err(reason) = reach.as_deref().map_or(Err("leaves the checkout"), allowed) {
                return Err(GitError::SymlinkOutOfBounds {
                    path: path.display().to_string(),
                    target: String::from_utf8_lossy(&target).into_owned(),
                    reason,
                });
            }
        }
        for checkout in checkouts {
            let root = checkout_dir(checkout);
            let mut prefix = PathBuf::new();
            let parents = path.parent().map(Path::components).into_iter().flatten();
            for part in parents {
                prefix.push(part);
                let on_disk = root.join(&prefix);
                if on_disk.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
                    return Err(GitError::ThroughSymlink {
                        checkout: root,
                        path: path.display().to_string(),
                        link: prefix.display().to_string(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Where a resolved path may not be.
fn allowed(path: &Path) -> Result<(), &'static str> {
    let first = path.components().next().map(Component::as_os_str);
    match first.and_then(OsStr::to_str) {
        Some(name) if name.eq_ignore_ascii_case(".git") => Err("points into .git"),
        Some(name) if RUNTIME_FOLDERS.contains(&name) => Err("points into crew's folders"),
        _ => Ok(()),
    }
}

/// The target of the symlink at `path` in `tree`; None when it is not a symlink there.
fn link_target(
    repo: &Repository,
    tree: &Tree<'_>,
    path: &Path,
) -> Result<Option<Vec<u8>>, GitError> {
    let Ok(entry) = tree.get_path(path) else {
        return Ok(None);
    };
    if entry.filemode() != i32::from(FileMode::Link) {
        return Ok(None);
    }
    let blob = repo
        .find_blob(entry.id())
        .context(|| format!("reading the symlink {}", path.display()))?;
    Ok(Some(blob.content().to_vec()))
}

/// The path (from the checkout's root) the link at `link` with `target` reaches, following the
/// tree's own symlinks on the way; None when it leaves the checkout (absolute, above the root,
/// or a loop).
fn resolve(
    repo: &Repository,
    tree: &Tree<'_>,
    link: &Path,
    target: &[u8],
) -> Result<Option<PathBuf>, GitError> {
    let mut reached: Vec<String> = parts(link.parent().unwrap_or(Path::new("")))?;
    let mut pending: VecDeque<String> = match relative_parts(target) {
        Some(parts) => parts.into(),
        None => return Ok(None),
    };
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part.as_str() {
            "" | "." => continue,
            ".." => {
                if reached.pop().is_none() {
                    return Ok(None);
                }
                continue;
            }
            _ => reached.push(part),
        }
        let here: PathBuf = reached.iter().collect();
        if let Some(next) = link_target(repo, tree, &here)? {
            hops += 1;
            let Some(next) = relative_parts(&next).filter(|_| hops <= MAX_HOPS) else {
                return Ok(None);
            };
            reached.pop();
            for part in next.into_iter().rev() {
                pending.push_front(part);
            }
        }
    }
    Ok(Some(reached.iter().collect()))
}

/// A link target's parts; None for an absolute one (it leaves the checkout).
fn relative_parts(target: &[u8]) -> Option<Vec<String>> {
    let text = String::from_utf8_lossy(target);
    if text.starts_with('/') {
        return None;
    }
    Some(text.split('/').map(str::to_string).collect())
}

fn parts(path: &Path) -> Result<Vec<String>, GitError> {
    path.components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name.to_string_lossy().into_owned()),
            _ => Err(GitError::InvalidPath {
                path: path.display().to_string(),
                what: "a merge",
                reason: "a tree path is plain names",
            }),
        })
        .collect()
}
