//! Worktree lifecycle: ensure (create, reuse, repair), copy/link, list, discard, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::fs;

use crew_git::{Author, GitError, Worktrees};
use crew_test_support::git::{TestRepo, commit_all, read, write};

fn none() -> Vec<String> {
    Vec::new()
}

#[test]
fn ensure_creates_then_reuses() {
    let t = TestRepo::new(&[("a.txt", "one\n")]);
    let wts = Worktrees::open(t.root()).unwrap();

    let first = wts.ensure("alice", "main", &none(), &none()).unwrap();
    assert!(first.created);
    assert_eq!(first.branch, "crew/alice");
    assert_eq!(first.path, t.path(".worktrees/alice"));
    assert_eq!(read(&first.path, "a.txt"), "one\n");
    assert_eq!(t.branch_tip("crew/alice"), t.branch_tip("main"));

    write(&first.path, "work.txt", "in progress\n");
    let second = wts.ensure("alice", "main", &none(), &none()).unwrap();
    assert!(!second.created);
    assert_eq!(second.path, first.path);
    assert_eq!(read(&second.path, "work.txt"), "in progress\n");
}

#[test]
fn teammates_making_their_first_worktrees_at_once_each_get_one() {
    // The first worktree of a repository also makes .git/worktrees; two at once raced on it.
    // And git reads every worktree's admin folder as it adds one, failing on one half made.
    let files: Vec<(String, &str)> = (0..200).map(|i| (format!("f{i}.txt"), "x\n")).collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    for round in 0..20 {
        let t = TestRepo::new(&files);
        let start = std::sync::Barrier::new(3);
        let made: Vec<Result<_, GitError>> = std::thread::scope(|s| {
            let handles: Vec<_> = ["alice", "bob", "carol"]
                .map(|name| {
                    let (root, start) = (t.root(), &start);
                    s.spawn(move || {
                        let wts = Worktrees::open(root)?;
                        start.wait();
                        wts.ensure(name, "main", &none(), &none())
                    })
                })
                .into_iter()
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for result in made {
            let wt = result.unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert!(wt.created);
        }
    }
}

#[test]
fn committing_a_task_while_its_branch_is_merged_neither_fails_nor_loses_work() {
    // Both snapshot the same worktree through the same temporary index file.
    for round in 0..20 {
        let t = TestRepo::new(&[("a.txt", "one\n")]);
        let wts = Worktrees::open(t.root()).unwrap();
        let wt = wts.ensure("alice", "main", &none(), &none()).unwrap();
        for i in 0..50 {
            write(&wt.path, &format!("f{i}.txt"), "work\n");
        }
        let start = std::sync::Barrier::new(2);
        let author = Author::crew("alice");
        let (committed, merged) = std::thread::scope(|s| {
            let commit = s.spawn(|| {
                let wts = Worktrees::open(t.root())?;
                start.wait();
                wts.commit_work("alice", "task_1: work", &author)
            });
            let merge = s.spawn(|| {
                let wts = Worktrees::open(t.root())?;
                start.wait();
                wts.merge("alice", "main", &author)
            });
            (commit.join().unwrap(), merge.join().unwrap())
        });
        committed.unwrap_or_else(|e| panic!("round {round}: commit: {e}"));
        merged.unwrap_or_else(|e| panic!("round {round}: merge: {e}"));
        for i in 0..50 {
            assert_eq!(
                read(t.root(), &format!("f{i}.txt")),
                "work\n",
                "round {round}"
            );
        }
    }
}

#[test]
fn the_changes_a_merge_brings_in_come_from_every_unmerged_commit_renames_detected() {
    let t = TestRepo::new(&[
        ("crew.toml", "[team]\nname = \"web\"\n"),
        ("a.txt", "one\n"),
    ]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &none(), &none()).unwrap();
    let author = Author::crew("alice");
    fs::rename(wt.path.join("crew.toml"), wt.path.join("team.toml")).unwrap();
    wts.commit_work("alice", "task_1: rename", &author).unwrap();
    write(&wt.path, "b.txt", "two\n");
    let head = wts.commit_work("alice", "task_2: b", &author).unwrap();
    let merged = wts.merge_diff(&head, "main").unwrap();
    let paths: Vec<(&str, Option<&str>)> = merged
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.old_path.as_deref()))
        .collect();
    assert_eq!(paths, [("b.txt", None), ("team.toml", Some("crew.toml"))]);
}

#[test]
fn ensure_repairs_a_worktree_whose_folder_was_deleted() {
    let t = TestRepo::new(&[("a.txt", "one\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("bob", "main", &none(), &none()).unwrap();
    write(&wt.path, "b.txt", "committed\n");
    let committed = commit_all(&wt.path, "bob's work");
    fs::remove_dir_all(&wt.path).unwrap();

    let again = wts.ensure("bob", "main", &none(), &none()).unwrap();
    assert!(again.created);
    // The branch and its commits survive the repair.
    assert_eq!(t.branch_tip("crew/bob"), committed);
    assert_eq!(read(&again.path, "b.txt"), "committed\n");
}

#[test]
fn copy_and_link_bring_local_files_and_report_missing_ones() {
    let t = TestRepo::new(&[("a.txt", "one\n")]);
    t.write(".env", "SECRET=1\n");
    t.write("node_modules/pkg/index.js", "module.exports = 1;\n");
    let wts = Worktrees::open(t.root()).unwrap();
    let copy = vec![".env".to_string(), "missing.env".to_string()];
    let link = vec!["./node_modules/".to_string(), "vendor".to_string()];

    let wt = wts.ensure("carol", "main", &copy, &link).unwrap();
    assert_eq!(wt.copied, vec![".env"]);
    assert_eq!(wt.linked, vec!["node_modules"]);
    let skipped: Vec<&str> = wt.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, vec!["missing.env", "vendor"]);
    assert_eq!(read(&wt.path, ".env"), "SECRET=1\n");
    let linked = wt.path.join("node_modules");
    assert!(linked.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(fs::read_link(&linked).unwrap(), t.path("node_modules"));
    assert_eq!(
        read(&wt.path, "node_modules/pkg/index.js"),
        "module.exports = 1;\n"
    );

    // A second ensure keeps the teammate's edit of a copied file.
    write(&wt.path, ".env", "SECRET=2\n");
    let again = wts.ensure("carol", "main", &copy, &link).unwrap();
    assert!(again.copied.is_empty() && again.linked.is_empty());
    assert_eq!(read(&wt.path, ".env"), "SECRET=2\n");

    // Copied and linked entries never count as the teammate's work.
    let diff = wts.diff("carol", "main").unwrap();
    assert!(diff.files.is_empty(), "{:?}", diff.files);
    assert_eq!(wts.list("main").unwrap()[0].dirty_files, 0);
}

#[test]
fn list_reports_ahead_behind_and_dirty_files() {
    let t = TestRepo::new(&[("a.txt", "one\n"), ("b.txt", "two\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let alice = wts.ensure("alice", "main", &none(), &none()).unwrap();
    wts.ensure("bob", "main", &none(), &none()).unwrap();

    write(&alice.path, "c.txt", "c\n");
    commit_all(&alice.path, "first");
    write(&alice.path, "d.txt", "d\n");
    let head = commit_all(&alice.path, "second");
    t.write("main-only.txt", "m\n");
    commit_all(t.root(), "main moves on");
    write(&alice.path, "a.txt", "changed\n");
    write(&alice.path, "new/untracked.txt", "u\n");

    let list = wts.list("main").unwrap();
    assert_eq!(list.len(), 2);
    let a = &list[0];
    assert_eq!(a.name, "alice");
    assert_eq!(a.branch, "crew/alice");
    assert_eq!(a.path, alice.path);
    assert_eq!(a.head, head.to_string());
    assert_eq!((a.ahead, a.behind), (2, 1));
    assert_eq!(a.dirty_files, 2);
    let b = &list[1];
    assert_eq!(
        (b.name.as_str(), b.ahead, b.behind, b.dirty_files),
        ("bob", 0, 1, 0)
    );
}

#[test]
fn discard_removes_folder_registration_and_branch_but_not_linked_sources() {
    let t = TestRepo::new(&[("a.txt", "one\n")]);
    t.write("node_modules/keep.js", "keep\n");
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts
        .ensure("dave", "main", &none(), &["node_modules".to_string()])
        .unwrap();
    write(&wt.path, "scratch.txt", "x\n");

    wts.discard("dave").unwrap();
    assert!(!wt.path.exists());
    assert!(!t.has_branch("crew/dave"));
    assert!(t.repo().worktrees().unwrap().is_empty());
    assert!(wts.list("main").unwrap().is_empty());
    // The symlink went, not what it pointed at.
    assert_eq!(t.read("node_modules/keep.js"), "keep\n");

    assert!(matches!(
        wts.discard("dave"),
        Err(GitError::WorktreeNotFound { .. })
    ));
    // The name is free again.
    assert!(
        wts.ensure("dave", "main", &none(), &none())
            .unwrap()
            .created
    );
}

#[test]
fn a_non_git_dir_is_a_clear_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = Worktrees::open(dir.path()).err().unwrap();
    assert!(matches!(err, GitError::NotARepository { .. }));
    let message = err.to_string();
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );
    assert!(message.contains("not a git repository"), "{message}");
}

#[test]
fn bad_names_and_paths_are_refused_before_touching_disk() {
    let t = TestRepo::new(&[("a.txt", "one\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    for name in [
        "../evil",
        "Alice",
        "",
        "a/b",
        "1st",
        "way-too-long-name-for-a-teammate-x",
    ] {
        let err = wts.ensure(name, "main", &none(), &none()).err().unwrap();
        assert!(matches!(err, GitError::InvalidName { .. }), "{name}: {err}");
        assert!(matches!(
            wts.discard(name),
            Err(GitError::InvalidName { .. })
        ));
        assert!(matches!(
            wts.diff(name, "main"),
            Err(GitError::InvalidName { .. })
        ));
    }
    let err = wts
        .ensure("ok", "main", &["../outside".to_string()], &none())
        .err()
        .unwrap();
    assert!(matches!(err, GitError::InvalidPath { .. }), "{err}");
    let err = wts
        .ensure("ok", "main", &none(), &["/etc".to_string()])
        .err()
        .unwrap();
    assert!(matches!(err, GitError::InvalidPath { .. }), "{err}");
    assert!(matches!(
        wts.ensure("ok", "no-such-branch", &none(), &none()),
        Err(GitError::BranchNotFound { .. })
    ));
    assert!(!t.path(".worktrees").join("ok").exists());
    assert!(!t.has_branch("crew/ok"));
}
