//! A crew worktree is what `git worktree add` gives (git CLI installed, so crew uses it): same
//! files, modes, symlinks and filtered content, a clean `git status`; and a merge from it (its
//! snapshot staged by the git CLI on a copy of the index) lands every kind of change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_git::{MergeOutcome, Worktrees};
use crew_test_support::git::{
    git_cli, git_path, rich_repo, rich_repo_with_checked_worktree, teammate,
};

#[test]
fn a_worktree_equals_git_worktree_add_and_merges_every_kind_of_change() {
    let Some(git) = git_path() else {
        eprintln!("git is not installed; tests/git_worktree_libgit2.rs covers this without it");
        return;
    };
    let (t, wts, wt) = rich_repo_with_checked_worktree(&git);

    // Edited, added in a new folder, deleted, made executable, relinked.
    use std::os::unix::fs::PermissionsExt;
    crew_test_support::git::write(&wt.path, "src/a/b/mid.rs", "fn mid() { edited() }\n");
    crew_test_support::git::write(&wt.path, "new/deeper/added.rs", "fn added() {}\n");
    std::fs::remove_file(wt.path.join("docs/with space.md")).unwrap();
    let readme = wt.path.join("README.md");
    std::fs::set_permissions(&readme, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(wt.path.join("link-to-file")).unwrap();
    std::os::unix::fs::symlink("src/a/b/c/d/deep.rs", wt.path.join("link-to-file")).unwrap();

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    assert!(
        matches!(outcome, MergeOutcome::FastForward { .. }),
        "{outcome:?}"
    );
    // The staged copy of the index was installed, not left beside it.
    let admin = t.path(".git/worktrees/alice");
    assert!(!admin.join("index.crew-snapshot").exists());
    assert_eq!(git_cli(&git, &wt.path, &["status", "--porcelain"]), "");
    assert_eq!(git_cli(&git, t.root(), &["status", "--porcelain"]), "");
    let changes = git_cli(&git, t.root(), &["diff", "--name-status", "HEAD~1", "HEAD"]);
    assert_eq!(
        changes,
        "M\tREADME.md\nD\tdocs/with space.md\nM\tlink-to-file\nA\tnew/deeper/added.rs\nM\tsrc/a/b/mid.rs\n"
    );
    let modes = git_cli(
        &git,
        t.root(),
        &["ls-tree", "HEAD", "README.md", "link-to-file"],
    );
    assert!(modes.contains("100755 blob"), "{modes}");
    assert!(modes.contains("120000 blob"), "{modes}");
    assert_eq!(
        std::fs::read_link(t.path("link-to-file")).unwrap(),
        std::path::Path::new("src/a/b/c/d/deep.rs")
    );
}

#[test]
fn a_refused_merge_leaves_the_worktree_index_as_it_was() {
    let Some(git) = git_path() else {
        return;
    };
    let t = rich_repo();
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    crew_test_support::git::write(&wt.path, "src/a/b/mid.rs", "fn mid() { theirs() }\n");
    // A local edit of the same file in the main checkout: the merge must refuse.
    t.write("src/a/b/mid.rs", "fn mid() { local() }\n");
    let index = t.path(".git/worktrees/alice/index");
    let before = std::fs::read(&index).unwrap();
    assert!(wts.merge("alice", "main", &teammate()).is_err());
    assert_eq!(std::fs::read(&index).unwrap(), before);
    assert!(!t.path(".git/worktrees/alice/index.crew-snapshot").exists());
    assert_eq!(
        git_cli(&git, &wt.path, &["status", "--porcelain"]),
        " M src/a/b/mid.rs\n"
    );
}
