//! The team's git remote (`[team] remote`): how hosts that share no file system share commits.
//! A teammate pushes its task's commits there, as `<its branch>/<task>` (`crew/alice/task_3`),
//! each time they are committed; the person fetches that branch to review the task, and pushes
//! the base branch after a merge so every host starts its next task from merged code.
//!
//! Whoever may push to the remote may move any branch there, so nothing fetched is trusted by
//! its name: a review uses the head the task records in the store, and a fetched branch that
//! does not hold it is refused ([`GitError::RemoteLacks`]). The base branch is pushed without
//! force: a remote whose base moved under the person is reported, never overwritten.

use std::path::Path;

use crate::cli::{git_remote, run_said};
use crate::task_commits::oid;
use crate::{GitError, Worktrees, names};

/// Where fetched task branches are kept: outside `refs/heads`, so they are never a branch a
/// teammate or the person works on.
const FETCHED: &str = "refs/crew/remote";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamRemote {
    url: String,
}

impl TeamRemote {
    /// `url` as crew.toml gives it (a path, `file://`, `ssh://`, `host:path`); a relative path
    /// is taken from the repository's root, where crew.toml is.
    pub fn new(url: &str, repo_root: &Path) -> Self {
        let url = if Self::is_relative_path(url) {
            repo_root.join(url).display().to_string()
        } else {
            url.to_string()
        };
        TeamRemote { url }
    }

    /// Whether `url` names a folder relative to the checkout (not a URL, not `host:path`):
    /// another host cannot see it.
    pub fn is_relative_path(url: &str) -> bool {
        !url.contains("://") && !is_scp_like(url) && Path::new(url).is_relative()
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The branch on the remote that holds `task`'s commits made on `branch`.
    pub fn task_branch(branch: &str, task: &str) -> String {
        format!("{branch}/{task}")
    }

    /// Pushes `head` (a commit of the repository at `root`) to the task's branch on the remote,
    /// replacing what was there: the task's commits as they stand now.
    pub fn push_task(
        &self,
        root: &Path,
        branch: &str,
        task: &str,
        head: &str,
    ) -> Result<(), GitError> {
        let target = Self::task_branch(branch, task);
        names::validate_branch(&target)?;
        oid(head)?;
        self.git(root, "push", |git| {
            git.args(["push", "--quiet", "--no-verify", &self.url])
                .arg(format!("+{head}:refs/heads/{target}"));
        })
    }

    /// Pushes the base branch of the repository at `root`, fast-forward only.
    pub fn push_base(&self, root: &Path, base: &str) -> Result<(), GitError> {
        names::validate_branch(base)?;
        self.git(root, "push", |git| {
            git.args(["push", "--quiet", "--no-verify", &self.url])
                .arg(format!("refs/heads/{base}:refs/heads/{base}"));
        })
    }

    /// Clones the remote into `dir` (which must not exist yet, or be empty), its `base` branch
    /// checked out: a host that joins the team gets the code from there, never from the
    /// person's checkout.
    pub fn clone_into(&self, dir: &Path, base: &str) -> Result<(), GitError> {
        names::validate_branch(base)?;
        let parent = dir.parent().unwrap_or(Path::new("."));
        self.git(parent, "clone", |git| {
            git.args(["clone", "--quiet", "--no-tags", "--branch", base, &self.url])
                .arg(dir);
        })
    }

    /// Brings the `base` branch of the repository at `root` (checked out there) to the remote's,
    /// fast-forward only: a joined host starts each task from what the person merged and pushed.
    /// Its clone's base is never committed to, so a base that does not fast-forward is a fault,
    /// reported.
    pub fn update_base(&self, root: &Path, base: &str) -> Result<(), GitError> {
        names::validate_branch(base)?;
        let fetched = format!("{FETCHED}/{base}");
        self.fetch(root, &format!("+refs/heads/{base}:{fetched}"))?;
        self.git(root, "merge", |git| {
            git.args(["merge", "--quiet", "--ff-only", &fetched]);
        })
    }

    /// Makes sure the repository of `trees` has `head`, fetching the task's branch from the
    /// remote when it does not. The branch fetched must hold `head`.
    pub fn fetch_task(
        &self,
        trees: &Worktrees,
        branch: &str,
        task: &str,
        head: &str,
    ) -> Result<(), GitError> {
        let id = oid(head)?;
        let has_commit = || trees.repo().find_commit(id).is_ok();
        if has_commit() {
            return Ok(());
        }
        let source = Self::task_branch(branch, task);
        names::validate_branch(&source)?;
        self.fetch(
            trees.root(),
            &format!("+refs/heads/{source}:{FETCHED}/{source}"),
        )?;
        if has_commit() {
            Ok(())
        } else {
            Err(GitError::RemoteLacks {
                url: self.url.clone(),
                reference: source,
                head: head.to_string(),
            })
        }
    }

    /// Fetches `refspec` from the remote into the repository at `root`, without its tags or
    /// a FETCH_HEAD.
    fn fetch(&self, root: &Path, refspec: &str) -> Result<(), GitError> {
        self.git(root, "fetch", |git| {
            git.args([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                &self.url,
                refspec,
            ]);
        })
    }

    fn git(
        &self,
        root: &Path,
        action: &'static str,
        args: impl FnOnce(&mut std::process::Command),
    ) -> Result<(), GitError> {
        let mut git = git_remote(root);
        args(&mut git);
        run_said(git, None)
            .map(|_| ())
            .map_err(|failed| GitError::Remote {
                action,
                url: self.url.clone(),
                message: failed.to_string(),
            })
    }
}

/// `host:path` (git's scp-like ssh syntax): a colon before any slash.
fn is_scp_like(url: &str) -> bool {
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => colon < slash,
        (Some(_), None) => true,
        _ => false,
    }
}
