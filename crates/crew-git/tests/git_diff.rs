//! The worktree diff: merge-base .. working directory, with uncommitted, untracked, deleted,
//! renamed and binary files, and exact +/- counts and line numbers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_git::{FileDiff, FileStatus, LineKind, Worktrees};
use crew_test_support::git::{TestRepo, commit_all, write, write_bytes};

fn file<'a>(files: &'a [FileDiff], path: &str) -> &'a FileDiff {
    files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("{path} not in diff: {files:#?}"))
}

const LONG: &str = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n";

#[test]
fn diff_covers_committed_uncommitted_untracked_deleted_renamed_and_binary_files() {
    let t = TestRepo::new(&[
        ("keep.txt", "a\nb\nc\n"),
        ("edit.txt", "one\ntwo\nthree\n"),
        ("gone.txt", "bye\n"),
        ("old_name.txt", LONG),
        (".gitignore", "*.log\n"),
    ]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    let root = &wt.path;

    // Committed on the branch.
    write(root, "committed.txt", "c1\nc2\n");
    commit_all(root, "committed work");
    // Moves on main after the fork must not show up.
    t.write("main_only.txt", "m\n");
    commit_all(t.root(), "main moves on");
    // Uncommitted edits, an untracked file, a deletion, a rename and a binary file.
    write(root, "edit.txt", "one\nTWO\nthree\nfour\n");
    write(root, "new/untracked.txt", "u1\nu2\nu3\n");
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    std::fs::remove_file(root.join("old_name.txt")).unwrap();
    write(root, "new_name.txt", &LONG.replace("line 8", "line eight"));
    write_bytes(root, "image.bin", &[0, 159, 146, 150, 0, 1, 2, 3]);
    write(root, "debug.log", "ignored\n");

    let diff = wts.diff("alice", "main").unwrap();
    let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(diff.files.len(), 6, "{paths:?}");
    assert!(!paths.contains(&"main_only.txt"));
    assert!(!paths.contains(&"debug.log"));
    assert!(!paths.contains(&"keep.txt"));

    let committed = file(&diff.files, "committed.txt");
    assert_eq!(committed.status, FileStatus::Added);
    assert_eq!((committed.additions, committed.deletions), (2, 0));

    let edit = file(&diff.files, "edit.txt");
    assert_eq!(edit.status, FileStatus::Modified);
    assert_eq!((edit.additions, edit.deletions), (2, 1));
    assert_eq!(edit.hunks.len(), 1);
    let hunk = &edit.hunks[0];
    assert!(
        hunk.header.starts_with("@@ -1,3 +1,4 @@"),
        "{}",
        hunk.header
    );
    assert_eq!(
        (
            hunk.old_start,
            hunk.old_lines,
            hunk.new_start,
            hunk.new_lines
        ),
        (1, 3, 1, 4)
    );
    let lines: Vec<(LineKind, Option<u32>, Option<u32>, &str)> = hunk
        .lines
        .iter()
        .map(|l| (l.kind, l.old_lineno, l.new_lineno, l.text.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (LineKind::Context, Some(1), Some(1), "one"),
            (LineKind::Del, Some(2), None, "two"),
            (LineKind::Add, None, Some(2), "TWO"),
            (LineKind::Context, Some(3), Some(3), "three"),
            (LineKind::Add, None, Some(4), "four"),
        ]
    );

    let untracked = file(&diff.files, "new/untracked.txt");
    assert_eq!(untracked.status, FileStatus::Added);
    assert_eq!((untracked.additions, untracked.deletions), (3, 0));
    assert_eq!(untracked.hunks[0].lines[2].text, "u3");

    let gone = file(&diff.files, "gone.txt");
    assert_eq!(gone.status, FileStatus::Deleted);
    assert_eq!((gone.additions, gone.deletions), (0, 1));

    let renamed = file(&diff.files, "new_name.txt");
    assert_eq!(renamed.status, FileStatus::Renamed);
    assert_eq!(renamed.old_path.as_deref(), Some("old_name.txt"));
    assert_eq!((renamed.additions, renamed.deletions), (1, 1));

    let binary = file(&diff.files, "image.bin");
    assert!(binary.binary);
    assert_eq!(binary.status, FileStatus::Added);
    assert!(binary.hunks.is_empty());
    assert_eq!((binary.additions, binary.deletions), (0, 0));

    assert_eq!(diff.totals.files, 6);
    assert_eq!(diff.totals.additions, 2 + 2 + 3 + 1);
    assert_eq!(diff.totals.deletions, 1 + 1 + 1);
}

#[test]
fn a_clean_worktree_has_an_empty_diff() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    wts.ensure("bob", "main", &[], &[]).unwrap();
    let diff = wts.diff("bob", "main").unwrap();
    assert!(diff.files.is_empty());
    assert_eq!(diff.totals.files, 0);
}

#[test]
fn diff_serializes_for_json_output() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("carol", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "b\n");
    let json = serde_json::to_value(wts.diff("carol", "main").unwrap()).unwrap();
    let f = &json["files"][0];
    assert_eq!(f["path"], "a.txt");
    assert_eq!(f["status"], "modified");
    assert_eq!(f["old_path"], serde_json::Value::Null);
    assert_eq!(f["hunks"][0]["lines"][0]["kind"], "del");
    assert_eq!(f["hunks"][0]["lines"][1]["kind"], "add");
    assert_eq!(json["totals"]["additions"], 1);
}

#[test]
fn diff_of_an_unknown_worktree_or_branch_names_it() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let err = wts.diff("nobody", "main").err().unwrap();
    assert!(err.to_string().contains("nobody"), "{err}");
    wts.ensure("dave", "main", &[], &[]).unwrap();
    let err = wts.diff("dave", "trunk").err().unwrap();
    assert!(err.to_string().contains("trunk"), "{err}");
}
