//! Creating, listing and discarding the teammates' worktrees (`.worktrees/<name>` on `crew/<name>`).

use std::fs;
use std::path::{Path, PathBuf};

use git2::{
    BranchType, Repository, Status, StatusOptions, WorktreeAddOptions, WorktreePruneOptions,
};
use serde::Serialize;
use tracing::{debug, info, warn};

use super::branch_for;
use super::cli;
use super::error::{Context, GitError, io_error};
use super::merge::with_repo_lock;
use super::names::{normalize_relative, validate_branch, validate_name};
use super::provision::{Skipped, exclude, provision};

/// Folder under the repository root that holds the teammates' worktrees.
const WORKTREES_DIR: &str = ".worktrees";

/// The teammates' worktrees of one repository.
pub struct Worktrees {
    repo: Repository,
    root: PathBuf,
    /// `[limits] max_task_bytes`: what one commit of a worktree's work may add (0: no limit).
    max_task_bytes: u64,
}

/// A worktree ready for a teammate, as `ensure` left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Worktree {
    pub name: String,
    pub path: PathBuf,
    pub branch: String,
    /// True when this call created the worktree (or re-created a stale one).
    pub created: bool,
    pub copied: Vec<String>,
    pub linked: Vec<String>,
    /// `copy`/`link` entries that were not brought in, with the reason.
    pub skipped: Vec<Skipped>,
}

/// One worktree as `list` sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorktreeInfo {
    pub name: String,
    pub path: PathBuf,
    pub branch: String,
    /// Commit id (hex) the branch points at.
    pub head: String,
    /// Commits on the branch that the base branch lacks.
    pub ahead: usize,
    /// Commits on the base branch that the branch lacks.
    pub behind: usize,
    /// Changed, deleted and untracked (not ignored) files in the working directory.
    pub dirty_files: usize,
}

impl Worktrees {
    /// Opens the repository whose main checkout is at `repo_root` (or contains it).
    pub fn open(repo_root: &Path) -> Result<Self, GitError> {
        let not_a_repo = |source| GitError::NotARepository {
            path: repo_root.to_path_buf(),
            source,
        };
        let mut repo = Repository::open(repo_root).map_err(not_a_repo)?;
        if repo.is_worktree() {
            // Worktrees are managed from the main checkout, which owns `.worktrees/`.
            let common = repo.commondir().to_path_buf();
            repo = Repository::open(&common).map_err(not_a_repo)?;
        }
        let root = match repo.workdir() {
            Some(dir) => dir.to_path_buf(),
            None => {
                return Err(GitError::BareRepository {
                    path: repo_root.to_path_buf(),
                });
            }
        };
        Ok(Self {
            repo,
            root,
            max_task_bytes: 0,
        })
    }

    /// These worktrees, refusing to commit uncommitted work of more than `bytes` (0: any size).
    pub fn with_max_task_bytes(mut self, bytes: u64) -> Self {
        self.max_task_bytes = bytes;
        self
    }

    pub(crate) fn max_task_bytes(&self) -> u64 {
        self.max_task_bytes
    }

    /// The main checkout's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn repo(&self) -> &Repository {
        &self.repo
    }

    /// Where the worktree of `name` lives (whether or not it exists).
    pub fn path_of(&self, name: &str) -> Result<PathBuf, GitError> {
        validate_name(name)?;
        Ok(self.root.join(WORKTREES_DIR).join(name))
    }

    /// Makes sure `.worktrees/<name>` exists on branch `crew/<name>` (created from `base_branch`
    /// the first time), then copies `copy` files and symlinks `link` folders from the main
    /// checkout where they are not there yet. Idempotent; repairs a registration whose folder was
    /// deleted (keeping the branch and its commits).
    pub fn ensure(
        &self,
        name: &str,
        base_branch: &str,
        copy: &[String],
        link: &[String],
    ) -> Result<Worktree, GitError> {
        let path = self.path_of(name)?;
        validate_branch(base_branch)?;
        let copy = normalize_all(copy, "copy")?;
        let link = normalize_all(link, "link")?;
        let branch = branch_for(name);

        // git reads every worktree's admin folder when it adds one, and fails on another being
        // made that moment (three teammates starting together did), so creations take turns.
        let (path, created) = with_repo_lock(&self.repo, || match self.registered(name)? {
            Some(wt) if wt.validate().is_ok() => {
                self.worktree_repo(&wt, name)?;
                Ok((wt.path().to_path_buf(), false))
            }
            Some(wt) => {
                info!(name, "repairing stale worktree registration");
                wt.prune(None)
                    .context(|| format!("pruning stale worktree {name:?}"))?;
                self.create(name, &path, &branch, base_branch)?;
                Ok((path, true))
            }
            None => {
                self.create(name, &path, &branch, base_branch)?;
                Ok((path, true))
            }
        })?;

        exclude(self.repo.commondir(), &[&copy[..], &link[..]].concat())?;
        let done = provision(&self.root, &path, &copy, &link)?;
        Ok(Worktree {
            name: name.to_string(),
            path,
            branch,
            created,
            copied: done.copied,
            linked: done.linked,
            skipped: done.skipped,
        })
    }

    fn create(
        &self,
        name: &str,
        path: &Path,
        branch: &str,
        base_branch: &str,
    ) -> Result<(), GitError> {
        if path.symlink_metadata().is_ok() {
            return Err(GitError::UnregisteredFolder {
                repo: self.root.clone(),
                path: path.to_path_buf(),
            });
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        // An existing branch keeps its commits: a re-created worktree picks up where it was.
        let branch_ref = match self.repo.find_branch(branch, BranchType::Local) {
            Ok(existing) => existing,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                let base = self.base_commit(base_branch)?;
                self.repo
                    .branch(branch, &base, false)
                    .context(|| format!("creating branch {branch:?} from {base_branch:?}"))?
            }
            Err(e) => {
                return Err(e).context(|| format!("looking up branch {branch:?}"));
            }
        };
        // libgit2 makes .git/worktrees for the first worktree and fails if another process
        // made it a moment before: two teammates starting together raced on it.
        let admin = self.repo.commondir().join("worktrees");
        fs::create_dir_all(&admin).map_err(io_error(&admin))?;
        // The git CLI checks a big tree out about twice as fast as libgit2 (see `cli`); libgit2
        // does it when git is missing or refuses (git cleans up after itself when it fails).
        let by = if cli::worktree_add(&self.root, path, branch) {
            "git CLI"
        } else {
            let mut opts = WorktreeAddOptions::new();
            opts.reference(Some(branch_ref.get()));
            self.repo
                .worktree(name, path, Some(&opts))
                .context(|| format!("creating worktree {} on {branch:?}", path.display()))?;
            "libgit2"
        };
        info!(name, path = %path.display(), branch, by, "created worktree");
        Ok(())
    }

    /// The crew worktrees (registered, folder present, on `crew/<name>`), with their state
    /// relative to `base_branch`.
    pub fn list(&self, base_branch: &str) -> Result<Vec<WorktreeInfo>, GitError> {
        validate_branch(base_branch)?;
        let base = self.base_commit(base_branch)?.id();
        let mut infos = Vec::new();
        for name in worktree_names(&self.repo)? {
            if validate_name(&name).is_err() {
                continue;
            }
            let Some(wt) = self.registered(&name)? else {
                continue;
            };
            if wt.validate().is_err() {
                debug!(name, "skipping stale worktree registration");
                continue;
            }
            let repo = match self.worktree_repo(&wt, &name) {
                Ok(repo) => repo,
                Err(GitError::WrongBranch { .. }) => continue,
                Err(e) => return Err(e),
            };
            let head = head_commit(&repo)?;
            let (ahead, behind) = self
                .repo
                .graph_ahead_behind(head, base)
                .context(|| format!("comparing crew/{name} with {base_branch:?}"))?;
            infos.push(WorktreeInfo {
                branch: branch_for(&name),
                path: wt.path().to_path_buf(),
                head: head.to_string(),
                ahead,
                behind,
                dirty_files: dirty_count(&repo)?,
                name,
            });
        }
        infos.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(infos)
    }

    /// Removes the worktree folder, its registration and its branch `crew/<name>`. The work in
    /// it is gone afterwards: this is the explicit "throw it away".
    pub fn discard(&self, name: &str) -> Result<(), GitError> {
        validate_name(name)?;
        let branch = branch_for(name);
        let wt = self.registered(name)?;
        let had_worktree = wt.is_some();
        if let Some(wt) = wt {
            if wt.validate().is_ok() {
                // Only ever delete a worktree that is really the teammate's.
                self.worktree_repo(&wt, name)?;
            }
            let mut opts = WorktreePruneOptions::new();
            opts.valid(true).working_tree(true);
            wt.prune(Some(&mut opts))
                .context(|| format!("removing worktree {}", wt.path().display()))?;
        }
        match self.repo.find_branch(&branch, BranchType::Local) {
            Ok(mut b) => b
                .delete()
                .context(|| format!("deleting branch {branch:?}"))?,
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                if !had_worktree {
                    return Err(self.not_found(name));
                }
                warn!(name, "worktree had no branch to delete");
            }
            Err(e) => return Err(e).context(|| format!("looking up branch {branch:?}")),
        }
        info!(name, "discarded worktree");
        Ok(())
    }

    /// Opens the worktree of `name` as a repository, checking it exists and is on `crew/<name>`.
    pub(crate) fn open_worktree(&self, name: &str) -> Result<Repository, GitError> {
        validate_name(name)?;
        match self.registered(name)? {
            Some(wt) if wt.validate().is_ok() => self.worktree_repo(&wt, name),
            _ => Err(self.not_found(name)),
        }
    }

    /// The repository's `core.hooksPath`, when set: the folder whose scripts git runs as hooks
    /// (relative to a checkout's root unless absolute).
    pub fn hooks_path(&self) -> Result<Option<String>, GitError> {
        let config = self
            .repo
            .config()
            .context(|| format!("reading the git config of {}", self.root.display()))?;
        match config.get_string("core.hooksPath") {
            Ok(path) => Ok(Some(path)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e).context(|| "reading core.hooksPath".to_string()),
        }
    }

    /// The tip commit of a local branch, with an error naming the repo and branch.
    pub(crate) fn base_commit(&self, branch: &str) -> Result<git2::Commit<'_>, GitError> {
        let found = self
            .repo
            .find_branch(branch, BranchType::Local)
            .and_then(|b| b.get().peel_to_commit());
        match found {
            Ok(commit) => Ok(commit),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Err(GitError::BranchNotFound {
                repo: self.root.clone(),
                branch: branch.to_string(),
            }),
            Err(e) => {
                Err(e).context(|| format!("reading branch {branch:?} in {}", self.root.display()))
            }
        }
    }

    fn not_found(&self, name: &str) -> GitError {
        GitError::WorktreeNotFound {
            repo: self.root.clone(),
            name: name.to_string(),
        }
    }

    fn registered(&self, name: &str) -> Result<Option<git2::Worktree>, GitError> {
        if !worktree_names(&self.repo)?.iter().any(|n| n == name) {
            return Ok(None);
        }
        self.repo
            .find_worktree(name)
            .map(Some)
            .context(|| format!("opening worktree {name:?}"))
    }

    fn worktree_repo(&self, wt: &git2::Worktree, name: &str) -> Result<Repository, GitError> {
        let repo = Repository::open_from_worktree(wt)
            .context(|| format!("opening worktree {}", wt.path().display()))?;
        let expected = format!("refs/heads/{}", branch_for(name));
        let found = head_ref(&repo)?.unwrap_or_else(|| "(detached HEAD)".to_string());
        if found != expected {
            return Err(GitError::WrongBranch {
                path: wt.path().to_path_buf(),
                expected,
                found,
            });
        }
        Ok(repo)
    }
}

fn normalize_all(entries: &[String], what: &'static str) -> Result<Vec<String>, GitError> {
    entries
        .iter()
        .map(|entry| normalize_relative(entry, what))
        .collect()
}

/// The commit HEAD points at in `repo`.
pub(crate) fn head_commit(repo: &Repository) -> Result<git2::Oid, GitError> {
    repo.head()
        .and_then(|h| h.peel_to_commit())
        .map(|c| c.id())
        .context(|| format!("reading HEAD of {}", display_dir(repo)))
}

/// The full ref name HEAD points at (`refs/heads/...`), or `None` when HEAD is detached.
pub(crate) fn head_ref(repo: &Repository) -> Result<Option<String>, GitError> {
    let head = repo
        .find_reference("HEAD")
        .context(|| format!("reading HEAD of {}", display_dir(repo)))?;
    Ok(head
        .symbolic_target_bytes()
        .map(|target| String::from_utf8_lossy(target).into_owned()))
}

/// Names of the linked worktrees registered in `repo`.
pub(crate) fn worktree_names(repo: &Repository) -> Result<Vec<String>, GitError> {
    let names = repo
        .worktrees()
        .context(|| format!("listing worktrees of {}", display_dir(repo)))?;
    Ok(names
        .iter()
        .flatten()
        .flatten()
        .map(str::to_string)
        .collect())
}

/// The checkout folder of a repository (its git dir when bare).
pub(crate) fn checkout_dir(repo: &Repository) -> PathBuf {
    repo.workdir().unwrap_or(repo.path()).to_path_buf()
}

/// The checkout folder of a repository, for messages.
pub(crate) fn display_dir(repo: &Repository) -> String {
    checkout_dir(repo).display().to_string()
}

fn dirty_count(repo: &Repository) -> Result<usize, GitError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context(|| format!("reading status of {}", display_dir(repo)))?;
    Ok(statuses
        .iter()
        .filter(|e| !e.status().is_empty() && !e.status().contains(Status::IGNORED))
        .count())
}
