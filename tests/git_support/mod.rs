//! Test repositories made with git2 in a tempdir (no network, no git binary).
#![allow(dead_code)] // each test file uses a different part of this support module

use std::fs;
use std::path::{Path, PathBuf};

use crew::git::Author;
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
