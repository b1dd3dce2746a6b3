//! Errors of the git layer. Each one names the repository, branch, worktree or file concerned.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

/// A file that blocks updating a checkout, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedFile {
    /// Path relative to the checkout root.
    pub path: String,
    /// Why the file blocks the update (e.g. "modified", "untracked file would be overwritten").
    pub reason: String,
}

/// A list of blocked files, shown as `path (reason), ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedFiles(pub Vec<BlockedFile>);

impl fmt::Display for BlockedFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, file) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} ({})", file.path, file.reason)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not a git repository: {source}")]
    NotARepository {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },

    #[error("{path} is a bare repository; crew needs a checkout")]
    BareRepository { path: PathBuf },

    #[error("invalid worktree name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },

    #[error("invalid path {path:?} in {what}: {reason}")]
    InvalidPath {
        path: String,
        what: &'static str,
        reason: &'static str,
    },

    #[error("invalid branch name {branch:?}")]
    InvalidBranch { branch: String },

    #[error("branch {branch:?} not found in {repo}")]
    BranchNotFound { repo: PathBuf, branch: String },

    #[error("worktree {name:?} not found in {repo}")]
    WorktreeNotFound { repo: PathBuf, name: String },

    #[error("{path} exists but is not a registered worktree of {repo}; move it away first")]
    UnregisteredFolder { repo: PathBuf, path: PathBuf },

    #[error("worktree {path} is on {found:?}, expected branch {expected:?}")]
    WrongBranch {
        path: PathBuf,
        expected: String,
        found: String,
    },

    #[error(
        "refusing to merge into {branch:?}: its checkout {checkout} has local changes to files \
         the merge would change: {files}"
    )]
    CheckoutDirty {
        checkout: PathBuf,
        branch: String,
        files: BlockedFiles,
    },

    #[error(
        "refusing to merge into {branch:?}: its checkout {checkout} is in the middle of a \
         {state}; finish or abort it first"
    )]
    CheckoutBusy {
        checkout: PathBuf,
        branch: String,
        state: String,
    },

    #[error(
        "refusing to merge: {path} would be written through the symlink {link} in {checkout}; \
         nothing was changed"
    )]
    ThroughSymlink {
        checkout: PathBuf,
        path: String,
        link: String,
    },

    #[error("refusing to merge: the symlink {path} -> {target} {reason}; nothing was changed")]
    SymlinkOutOfBounds {
        path: String,
        target: String,
        reason: &'static str,
    },

    #[error("branch {branch:?} in {repo} moved while merging; nothing was merged, try again")]
    ConcurrentUpdate { repo: PathBuf, branch: String },

    #[error(
        "not committed: {folder} in {} is a git repository of its own ({folder}/.git); crew \
         commits no embedded repository, whose configuration could run commands in any git that \
         walks into it. Remove {folder}/.git and finish the task again",
        worktree.display()
    )]
    EmbeddedRepository { worktree: PathBuf, folder: String },

    #[error(
        "not committed: the new and changed files in {} hold {bytes} bytes, more than \
         [limits] max_task_bytes = {limit}; remove build output or large files (or ignore them \
         in .gitignore), or raise the limit in crew.toml",
        worktree.display()
    )]
    TaskTooLarge {
        worktree: PathBuf,
        bytes: u64,
        limit: u64,
    },

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// git, run on the team's remote (`[team] remote`), failed or is not installed.
    #[error("git {action} {url} failed: {message}")]
    Remote {
        action: &'static str,
        url: String,
        message: String,
    },

    /// The team's remote does not hold the commit a task records: its branch there was never
    /// pushed, or was moved (by whoever else may push there) off what the teammate recorded.
    #[error(
        "the team's remote {url} has no commit {head} on {reference} (the task's recorded head); \
         nothing was changed"
    )]
    RemoteLacks {
        url: String,
        reference: String,
        head: String,
    },

    #[error("{context}: {source}")]
    Git {
        context: String,
        #[source]
        source: git2::Error,
    },
}

/// Attaches a description of what was being done (naming the repo, branch or file) to git2 errors.
pub(crate) trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, GitError>;
}

impl<T> Context<T> for Result<T, git2::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, GitError> {
        self.map_err(|source| GitError::Git {
            context: what(),
            source,
        })
    }
}

/// Wraps an io error with the path it concerns.
pub(crate) fn io_error(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> GitError {
    let path = path.into();
    move |source| GitError::Io { path, source }
}
