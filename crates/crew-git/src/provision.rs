//! Bringing untracked local files into a fresh worktree: `copy` files (e.g. `.env`) are copied,
//! `link` folders (e.g. `node_modules`) are symlinked, from the main checkout.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use tracing::debug;

use super::error::{GitError, io_error};

/// A `copy`/`link` entry that was not brought in, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// What provisioning did.
#[derive(Debug, Default)]
pub(crate) struct Provisioned {
    pub copied: Vec<String>,
    pub linked: Vec<String>,
    pub skipped: Vec<Skipped>,
}

/// Copies and links entries from `main_root` into `worktree_root`. Entries already present in the
/// worktree are left alone, so a teammate's edits survive a second `ensure`.
pub(crate) fn provision(
    main_root: &Path,
    worktree_root: &Path,
    copy: &[String],
    link: &[String],
) -> Result<Provisioned, GitError> {
    let mut done = Provisioned::default();
    for entry in copy {
        let src = main_root.join(entry);
        let dst = worktree_root.join(entry);
        if dst.symlink_metadata().is_ok() {
            continue;
        }
        match src.metadata() {
            Err(_) => done
                .skipped
                .push(skipped(entry, "missing in the main checkout")),
            Ok(meta) if !meta.is_file() => done
                .skipped
                .push(skipped(entry, "not a regular file (use link for folders)")),
            Ok(_) => {
                make_parent(&dst)?;
                fs::copy(&src, &dst).map_err(io_error(&dst))?;
                done.copied.push(entry.clone());
            }
        }
    }
    for entry in link {
        let src = main_root.join(entry);
        let dst = worktree_root.join(entry);
        if dst.symlink_metadata().is_ok() {
            continue;
        }
        if src.symlink_metadata().is_err() {
            done.skipped
                .push(skipped(entry, "missing in the main checkout"));
            continue;
        }
        make_parent(&dst)?;
        std::os::unix::fs::symlink(&src, &dst).map_err(io_error(&dst))?;
        done.linked.push(entry.clone());
    }
    debug!(?done, worktree = %worktree_root.display(), "provisioned worktree");
    Ok(done)
}

fn skipped(path: &str, reason: &str) -> Skipped {
    Skipped {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

fn make_parent(path: &Path) -> Result<(), GitError> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent).map_err(io_error(parent)),
        None => Ok(()),
    }
}

/// Keeps `entries` (folders at the repository root) out of git: `/<entry>` lines in the shared
/// `info/exclude` of the repository at `repo_root`. Returns that file's path.
pub fn exclude_from_git(
    repo_root: &Path,
    entries: &[&str],
) -> Result<std::path::PathBuf, GitError> {
    use crate::error::Context;
    let repo = git2::Repository::open(repo_root)
        .context(|| format!("opening the repository at {}", repo_root.display()))?;
    let common = repo.commondir().to_path_buf();
    let entries: Vec<String> = entries.iter().map(|e| e.to_string()).collect();
    exclude(&common, &entries)?;
    Ok(common.join("info").join("exclude"))
}

/// The branch checked out at `repo_root`, if HEAD names one.
pub fn current_branch(repo_root: &Path) -> Option<String> {
    let repo = git2::Repository::open(repo_root).ok()?;
    let head = repo.find_reference("HEAD").ok()?;
    let target = head.symbolic_target().ok().flatten()?;
    target.strip_prefix("refs/heads/").map(str::to_string)
}

/// Adds `/<entry>` lines (entries are normalised relative paths) to the shared `info/exclude`, so copied secrets and linked folders are
/// never picked up by the merge's auto-commit (a `node_modules/` rule does not match a symlink).
pub(crate) fn exclude(common_dir: &Path, entries: &[String]) -> Result<(), GitError> {
    if entries.is_empty() {
        return Ok(());
    }
    let info = common_dir.join("info");
    let file = info.join("exclude");
    let existing = match fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io_error(&file)(e)),
    };
    let present: Vec<&str> = existing.lines().map(str::trim).collect();
    let mut missing = String::new();
    for entry in entries {
        let line = format!("/{entry}");
        if !present.contains(&line.as_str()) && !missing.lines().any(|l| l == line) {
            missing.push_str(&line);
            missing.push('\n');
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    if !existing.is_empty() && !existing.ends_with('\n') {
        missing.insert(0, '\n');
    }
    fs::create_dir_all(&info).map_err(io_error(&info))?;
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .map_err(io_error(&file))?;
    out.write_all(missing.as_bytes()).map_err(io_error(&file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_appends_once() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("info")).unwrap();
        fs::write(dir.path().join("info/exclude"), "# comment\n/.env").unwrap();
        let entries = vec![".env".to_string(), "node_modules".to_string()];
        exclude(dir.path(), &entries).unwrap();
        exclude(dir.path(), &entries).unwrap();
        let text = fs::read_to_string(dir.path().join("info/exclude")).unwrap();
        assert_eq!(text, "# comment\n/.env\n/node_modules\n");
    }
}
