//! What one confined command may do: the folders it may write, the paths inside them that stay
//! read-only, whether it may use the network, and how many processes, how much memory and how
//! big a file it may have. Built by the parent, passed to `crew sandbox-exec` as JSON, enforced
//! there.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crew_protocol::{CONFIG_FILE, RUNTIME_FOLDERS};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    /// Folders the command may write below (the workspace when the agent writes, and its
    /// private temporary folder). Everything else is read-only.
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only (bind-mounted read-only over themselves):
    /// git's metadata and crew's own files.
    pub read_only: Vec<PathBuf>,
    /// Secrets a command must not read, hidden (an empty file or folder mounted over each):
    /// the team store's password file and client keys (on a host running several agents one
    /// agent's command could read another's database password there and act as it), and the
    /// person's keys and tokens in HOME (see [`secrets`]). Reading is otherwise allowed
    /// everywhere.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
    /// Whether Internet sockets (`AF_INET`, `AF_INET6`) may be opened; no other family ever
    /// may, Unix sockets included.
    pub network: bool,
    /// The resource limits the command runs under.
    #[serde(default)]
    pub limits: ResourceLimits,
}

/// Resource limits of a confined command (`[limits]` in crew.toml), each a `setrlimit` set
/// before the command runs; `None` leaves the limit crew itself runs with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// `RLIMIT_NPROC`: processes (and threads) of the command's user in its namespace.
    pub processes: Option<u64>,
    /// `RLIMIT_AS`: address space of each process, in bytes.
    pub memory_bytes: Option<u64>,
    /// `RLIMIT_FSIZE`: the largest file a process may write, in bytes.
    pub file_bytes: Option<u64>,
}

impl SandboxPolicy {
    /// The policy for a command run in `workspace` with `temp` as its private temporary folder.
    /// A workspace that is not writable (a teammate that does not write works in the repository
    /// itself) leaves only `temp` writable.
    /// `readable`: secrets of the person's that crew.toml lets commands read.
    pub fn new(
        workspace: &Path,
        workspace_writable: bool,
        temp: &Path,
        network: bool,
        limits: ResourceLimits,
        readable: &[PathBuf],
    ) -> Self {
        let mut writable = vec![temp.to_path_buf()];
        if workspace_writable {
            writable.push(canonical(workspace));
        }
        let read_only = writable
            .iter()
            .flat_map(|root| protected_inside(root, &writable))
            .collect();
        SandboxPolicy {
            writable,
            read_only,
            hidden: secrets(
                std::env::var_os("HOME").map(PathBuf::from).as_deref(),
                std::env::var_os("PGPASSFILE").map(PathBuf::from).as_deref(),
                readable,
            ),
            network,
            limits,
        }
    }
}

/// The person's keys and tokens, under HOME: what a command of an agent's has no business
/// reading (with the network, or through its commits, it could carry them off). Hidden unless
/// crew.toml's `[permissions] readable_secrets` names one.
pub const PERSONS_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".claude/.credentials.json",
    ".codex/auth.json",
];

/// What a command may not read, of what exists: where PostgreSQL clients keep credentials, as
/// libpq looks for them (`PGPASSFILE` or `~/.pgpass`, and `~/.postgresql`: crew's own, never
/// readable), and the person's secrets in HOME ([`PERSONS_SECRETS`]) but those in `readable`.
pub fn secrets(home: Option<&Path>, passfile: Option<&Path>, readable: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = passfile.map(Path::to_path_buf).into_iter().collect();
    let mut persons = Vec::new();
    if let Some(home) = home {
        found.push(home.join(".pgpass"));
        found.push(home.join(".postgresql"));
        persons.extend(PERSONS_SECRETS.iter().map(|p| home.join(p)));
    }
    let readable: Vec<PathBuf> = readable.iter().map(|p| canonical(p)).collect();
    let persons = persons
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| canonical(&p))
        .filter(|p| !readable.contains(p));
    let mut found: Vec<PathBuf> = found
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| canonical(&p))
        .chain(persons)
        .collect();
    found.sort();
    found.dedup();
    found
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What must stay read-only inside the writable `root`: `.git` (folder or pointer file), the
/// `gitdir:` a pointer file names when it lies inside a writable root too, and crew's own
/// files. Only paths that exist can be mounted over; see the README for what that leaves.
fn protected_inside(root: &Path, writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let dot_git = root.join(".git");
    if dot_git.is_file()
        && let Some(gitdir) = gitdir_of(&dot_git)
        && writable.iter().any(|w| gitdir.starts_with(w))
    {
        found.push(gitdir);
    }
    // Sorted, so the mounts come in the same order every time.
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| is_protected(root, path))
        .collect();
    entries.sort();
    found.extend(entries);
    found
}

/// crew's own files at a worktree's root: its configuration and runtime folders.
fn crew_files() -> impl Iterator<Item = &'static str> {
    RUNTIME_FOLDERS.iter().copied().chain([CONFIG_FILE])
}

/// Whether `path` is, or lies inside, something under `root` that only crew may change: `.git`
/// (folder or pointer file) or one of crew's files. The sandbox mounts these read-only for
/// commands; the write and edit tools, which run outside the sandbox, refuse them with this.
pub fn is_protected(root: &Path, path: &Path) -> bool {
    let Ok(inside) = path.strip_prefix(root) else {
        return false;
    };
    let Some(first) = inside.components().next() else {
        return false;
    };
    let first = first.as_os_str();
    first == ".git" || crew_files().any(|name| first == name)
}

/// The folder a `.git` pointer file (`gitdir: PATH`) names, resolved against its folder.
fn gitdir_of(pointer: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(pointer).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = pointer.parent()?;
    let resolved = base.join(target);
    resolved.canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stores_credentials_and_the_persons_secrets_that_exist_are_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        assert!(secrets(Some(&home), None, &[]).is_empty(), "none there");
        std::fs::write(home.join(".pgpass"), "h:*:*:r:pw\n").unwrap();
        std::fs::create_dir(home.join(".postgresql")).unwrap();
        let elsewhere = home.join("team.pgpass");
        std::fs::write(&elsewhere, "h:*:*:r:pw\n").unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join(".config/gh")).unwrap();
        std::fs::write(home.join(".netrc"), "machine x password y\n").unwrap();
        assert_eq!(
            secrets(Some(&home), Some(&elsewhere), &[]),
            [
                home.join(".config/gh"),
                home.join(".netrc"),
                home.join(".pgpass"),
                home.join(".postgresql"),
                home.join(".ssh"),
                elsewhere.clone(),
            ]
        );
        // The person may let commands read one of theirs; crew's own stay hidden.
        let readable = [home.join(".ssh"), home.join(".pgpass")];
        assert_eq!(
            secrets(Some(&home), Some(&elsewhere), &readable),
            [
                home.join(".config/gh"),
                home.join(".netrc"),
                home.join(".pgpass"),
                home.join(".postgresql"),
                elsewhere,
            ]
        );
    }

    #[test]
    fn git_metadata_and_crew_files_inside_the_workspace_stay_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("wt");
        let gitdir = ws.join("inner-gitdir");
        std::fs::create_dir_all(&gitdir).unwrap();
        std::fs::write(ws.join(".git"), "gitdir: inner-gitdir\n").unwrap();
        std::fs::write(ws.join("crew.toml"), "").unwrap();
        std::fs::create_dir(ws.join(".tasks")).unwrap();
        let temp = root.join("tmp");
        std::fs::create_dir(&temp).unwrap();

        let policy = SandboxPolicy::new(&ws, true, &temp, false, ResourceLimits::default(), &[]);
        assert_eq!(policy.writable, [temp.clone(), ws.clone()]);
        assert_eq!(
            policy.read_only,
            [
                gitdir,
                ws.join(".git"),
                ws.join(".tasks"),
                ws.join("crew.toml")
            ]
        );

        let reader = SandboxPolicy::new(&ws, false, &temp, true, ResourceLimits::default(), &[]);
        assert_eq!(reader.writable, [temp]);
        assert!(reader.read_only.is_empty());
        assert!(reader.network);
    }
}
