//! Test repositories made with git2 in a tempdir (no network, no git binary).

use std::fs;
use std::path::{Path, PathBuf};

use crew_git::Author;
use git2::{IndexAddOption, Oid, Repository, RepositoryInitOptions, Signature};

pub struct TestRepo {
    pub dir: tempfile::TempDir,
}

impl TestRepo {
    /// A repository on branch `main` with one commit holding `files`, `.worktrees` excluded.
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = RepositoryInitOptions::new();
        opts.initial_head("main");
        Repository::init_opts(dir.path(), &opts).unwrap();
        // As `crew init` does, so the worktrees folder never shows as untracked.
        write(dir.path(), ".git/info/exclude", ".worktrees\n");
        let repo = Self { dir };
        for (path, text) in files {
            repo.write(path, text);
        }
        commit_all(repo.root(), "initial");
        repo
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn repo(&self) -> Repository {
        Repository::open(self.root()).unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        write(self.root(), rel, text);
    }

    pub fn read(&self, rel: &str) -> String {
        read(self.root(), rel)
    }

    /// The commit a local branch points at.
    pub fn branch_tip(&self, branch: &str) -> Oid {
        self.repo()
            .find_branch(branch, git2::BranchType::Local)
            .unwrap()
            .get()
            .target()
            .unwrap()
    }

    pub fn has_branch(&self, branch: &str) -> bool {
        self.repo()
            .find_branch(branch, git2::BranchType::Local)
            .is_ok()
    }
}

pub fn write(root: &Path, rel: &str, text: &str) {
    write_bytes(root, rel, text.as_bytes());
}

pub fn write_bytes(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

pub fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).unwrap()
}

pub fn teammate() -> Author {
    Author::new("Alice Agent", "alice@crew.invalid")
}

/// Commits everything in the checkout at `root` (like `git add -A && git commit`).
pub fn commit_all(root: &Path, message: &str) -> Oid {
    let repo = Repository::open(root).unwrap();
    let mut index = repo.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Person", "person@example.invalid").unwrap();
    let parents = match repo.head() {
        Ok(head) => vec![head.peel_to_commit().unwrap()],
        Err(_) => vec![],
    };
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap()
}

/// Paths with any status (modified, staged, untracked; not ignored) in the checkout at `root`.
pub fn dirty_paths(root: &Path) -> Vec<String> {
    let repo = Repository::open(root).unwrap();
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo.statuses(Some(&mut opts)).unwrap();
    let mut paths: Vec<String> = statuses
        .iter()
        .filter(|e| !e.status().contains(git2::Status::IGNORED))
        .map(|e| e.path().unwrap().to_string())
        .collect();
    paths.sort();
    paths
}

/// A repository with what a checkout must reproduce: nested folders, an executable script, a
/// symlink to a file and one to a folder, a binary file, an empty file, names with spaces and
/// non-ASCII letters, and a `.gitattributes` with text/eol and binary rules (no external filter).
pub fn rich_repo() -> TestRepo {
    use std::os::unix::fs::PermissionsExt;
    let t = TestRepo::new(&[
        ("README.md", "# rich\n"),
        (".gitattributes", "*.sh text eol=lf\n*.dat binary\n"),
        ("src/a/b/c/d/deep.rs", "fn deep() {}\n"),
        ("src/a/b/mid.rs", "fn mid() {}\n"),
        ("scripts/run.sh", "#!/bin/sh\necho run\n"),
        ("docs/with space.md", "spaces\n"),
        ("docs/ünïcode.txt", "letters\n"),
        ("empty.txt", ""),
    ]);
    write_bytes(t.root(), "data/blob.dat", &[0, 159, 146, 150, 255, 0, 1, 2]);
    let script = t.path("scripts/run.sh");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/a/b/mid.rs", t.path("link-to-file")).unwrap();
    std::os::unix::fs::symlink("src/a", t.path("link-to-dir")).unwrap();
    commit_all(t.root(), "rich tree");
    t
}

/// What a checkout holds, `.git` aside: each path with its kind (file, executable file,
/// symlink) and its content or link target.
pub fn checkout_listing(root: &Path) -> Vec<(String, &'static str, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.push((rel, "symlink", target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                let kind = if meta.permissions().mode() & 0o111 != 0 {
                    "executable"
                } else {
                    "file"
                };
                out.push((rel, kind, fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Runs the git CLI (`git` is its path) in `dir`; its stdout.
pub fn git_cli(git: &Path, dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(git)
        .args(["-c", "user.name=test", "-c", "user.email=test@crew.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The git CLI's path, if it is installed.
pub fn git_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())
}

/// `rich_repo` with crew's worktree `alice` made, checked against `git worktree add` of the same
/// commit (`git` is the CLI's path): same files, kinds and contents, `git status` clean in it, on
/// branch `crew/alice`.
pub fn rich_repo_with_checked_worktree(
    git: &Path,
) -> (TestRepo, crew_git::Worktrees, crew_git::Worktree) {
    let t = rich_repo();
    let wts = crew_git::Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    assert!(wt.created);
    assert_like_git_worktree_add(git, &t, "alice");
    (t, wts, wt)
}

fn assert_like_git_worktree_add(git: &Path, t: &TestRepo, name: &str) {
    let ours = t.path(&format!(".worktrees/{name}"));
    git_cli(
        git,
        t.root(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            ".worktrees/reference",
            "main",
        ],
    );
    let reference = t.path(".worktrees/reference");
    assert_eq!(checkout_listing(&ours), checkout_listing(&reference));
    assert_eq!(git_cli(git, &ours, &["status", "--porcelain"]), "");
    assert_eq!(
        git_cli(git, &ours, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        format!("crew/{name}")
    );
}
