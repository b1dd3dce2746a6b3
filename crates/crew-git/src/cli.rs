//! The git CLI, when it is installed, for the two steps where libgit2 is much slower on a big
//! tree: checking a whole tree out into a new worktree, and staging a worktree's every change.
//! libgit2 looks up attributes for every file it writes or hashes (resolving the path and walking
//! up its folders, twice per file) and re-hashes every racily clean file twice (`add_all`, then
//! `update_all`); git keeps an attribute stack per folder and refreshes the index once. On 20,000
//! files (`crew-bench git`) libgit2 took about twice git's time for each. git also runs the
//! repository's own filters (LFS among them) where libgit2 would write pointer files. libgit2
//! stays the fallback when git is missing or refuses.
//!
//! Every git crew runs is hardened ([`git`]): a worktree holds files an agent wrote, and git
//! runs programs its configuration names. No system or global configuration is read (its
//! filters and hooks are the person's, not this run's: `GIT_CONFIG_NOSYSTEM`,
//! `GIT_CONFIG_GLOBAL=/dev/null`), and `-c` settings, which beat every configuration file a
//! nested repository could bring, turn off the file-system monitor, hooks, `file://` transport
//! and submodule recursion. `safe.directory` is never widened.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use git2::Oid;

use tracing::{debug, warn};

/// `git worktree add <path> <branch>` for an existing branch, run in the main checkout at `root`.
/// Hooks are off: libgit2 runs none, and a teammate's worktree is crew's, not a person's checkout.
/// False when git is missing or refused (why is logged).
pub(crate) fn worktree_add(root: &Path, path: &Path, branch: &str) -> bool {
    let mut add = git(root);
    add.args(["worktree", "add", "--quiet"])
        .arg(path)
        .arg(branch);
    run(add, None).is_some()
}

/// Settings given on the command line, above any configuration file: nothing a repository's
/// files name runs.
const HARDENING: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "protocol.file.allow=never",
    "submodule.recurse=false",
    "diff.external=",
];

/// `git -C dir` with crew's hardening (see this module's notes).
fn git(dir: &Path) -> Command {
    let mut git = Command::new("git");
    git.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    for setting in HARDENING {
        git.args(["-c", setting]);
    }
    git.arg("-C").arg(dir);
    git
}

/// What `git status` lists as changed in the checkout at `workdir`: modified, deleted and
/// untracked paths (each file of an untracked folder on its own; a nested repository as its
/// folder, with a trailing `/`). `None` when git is missing or refused (why is logged).
pub(crate) fn changed_paths(workdir: &Path) -> Option<Vec<String>> {
    let mut status = git(workdir);
    status.args([
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
    ]);
    let out = run(status, None)?;
    // Each entry is `XY path`, NUL-terminated.
    Some(
        out.stdout
            .split(|b| *b == 0)
            .filter(|entry| entry.len() > 3)
            .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
            .collect(),
    )
}

/// A copy of a checkout's index with every change of its working directory staged, beside the
/// real index (which is untouched until `install`). Removed if never installed.
pub(crate) struct StagedIndex {
    path: PathBuf,
    installed: bool,
}

impl StagedIndex {
    /// Makes this the checkout's index (an atomic rename over `index`).
    pub(crate) fn install(mut self, index: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.path, index)?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for StagedIndex {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `git add -A` and `git write-tree` in the checkout at `workdir`, on a copy of its `index`:
/// the tree of everything there (untracked, not ignored files included) and the staged index.
/// `None` when git is missing or refused (why is logged).
pub(crate) fn stage_all(workdir: &Path, index: &Path) -> Option<(Oid, StagedIndex)> {
    let staged = StagedIndex {
        path: index.with_file_name("index.crew-snapshot"),
        installed: false,
    };
    let copied = match std::fs::copy(index, &staged.path) {
        Ok(_) => Ok(()),
        // A checkout with no index yet: git starts from an empty one.
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    };
    if let Err(e) = copied {
        warn!(error = %e, index = %index.display(), "could not copy the index; using libgit2");
        return None;
    }
    let git = |args: &[&str]| {
        let mut git = git(workdir);
        git.args(args);
        git
    };
    run(git(&["add", "-A"]), Some(&staged.path))?;
    let out = run(git(&["write-tree"]), Some(&staged.path))?;
    let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match Oid::from_str(&hex) {
        Ok(tree) => Some((tree, staged)),
        Err(e) => {
            warn!(hex, error = %e, "git write-tree gave no tree id; using libgit2");
            None
        }
    }
}

/// Runs git on the repository named by its `-C` (and on `index` when given), never on one
/// named by the environment.
fn run(git: Command, index: Option<&Path>) -> Option<Output> {
    match run_said(git, index) {
        Ok(out) => Some(out),
        Err(Failed::Refused(message)) => {
            warn!(message, "git CLI failed; using libgit2");
            None
        }
        Err(Failed::Missing) => {
            debug!("git CLI not installed; using libgit2");
            None
        }
        Err(Failed::NotRunnable(e)) => {
            warn!(error = %e, "git CLI not runnable; using libgit2");
            None
        }
    }
}

/// Why git gave no output.
pub(crate) enum Failed {
    /// It ran and said no: its standard error.
    Refused(String),
    Missing,
    NotRunnable(std::io::Error),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Refused(message) => f.write_str(message),
            Failed::Missing => f.write_str("git is not installed (crew needs it for a remote)"),
            Failed::NotRunnable(e) => write!(f, "git could not be run: {e}"),
        }
    }
}

/// `git -C dir` hardened as everywhere, for a command that talks to the team's remote: a
/// local path is a remote like any other there (the hardening refuses local transports so
/// that nothing a repository's files name is fetched; the team's remote is the person's).
pub(crate) fn git_remote(dir: &Path) -> Command {
    let mut git = git(dir);
    // After the hardening's own `-c`: the last setting of a name wins.
    // Never a prompt (the screen owns the terminal): ssh keys or an agent, as for any script.
    git.args(["-c", "protocol.file.allow=always"])
        .args(["-c", "core.sshCommand=ssh -o BatchMode=yes"])
        .env("GIT_TERMINAL_PROMPT", "0");
    git
}

/// Runs git as [`run`] does, saying why when it gives nothing.
pub(crate) fn run_said(mut git: Command, index: Option<&Path>) -> Result<Output, Failed> {
    // crew may itself run under git (a hook, `git rebase --exec`) that set these.
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_EXEC_PATH",
        "GIT_EXTERNAL_DIFF",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
    ] {
        git.env_remove(var);
    }
    if let Some(index) = index {
        git.env("GIT_INDEX_FILE", index);
    }
    git.stdin(Stdio::null());
    match git.output() {
        Ok(out) if out.status.success() => Ok(out),
        Ok(out) => {
            let message = String::from_utf8_lossy(&out.stderr).trim().to_string();
            debug!(?git, message, "git CLI failed");
            Err(Failed::Refused(message))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Err(Failed::Missing),
        Err(e) => Err(Failed::NotRunnable(e)),
    }
}
