//! Without the git CLI on PATH crew falls back to libgit2 for worktree creation and the merge's
//! snapshot, with the same result as `git worktree add` (run here by its full path, found
//! before PATH is emptied for this test process).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_git::MergeOutcome;
use crew_test_support::git::{git_cli, git_path, rich_repo_with_checked_worktree, teammate};

#[test]
fn without_git_on_path_libgit2_makes_the_same_worktree_and_merges() {
    let Some(git) = git_path() else {
        eprintln!("git is not installed: nothing to compare with");
        return;
    };
    // SAFETY: the only test in this binary, so no other thread reads the environment.
    unsafe { std::env::set_var("PATH", "") };
    let (t, wts, wt) = rich_repo_with_checked_worktree(&git);

    crew_test_support::git::write(&wt.path, "src/a/b/mid.rs", "fn mid() { edited() }\n");
    crew_test_support::git::write(&wt.path, "new/added.rs", "fn added() {}\n");
    std::fs::remove_file(wt.path.join("empty.txt")).unwrap();
    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    assert!(
        matches!(outcome, MergeOutcome::FastForward { .. }),
        "{outcome:?}"
    );
    assert_eq!(git_cli(&git, &wt.path, &["status", "--porcelain"]), "");
    assert_eq!(
        git_cli(&git, t.root(), &["diff", "--name-status", "HEAD~1", "HEAD"]),
        "D\tempty.txt\nA\tnew/added.rs\nM\tsrc/a/b/mid.rs\n"
    );
}
