//! The merge queue's commit: built in memory from the approved heads in order (a conflict names
//! the head, nothing written), and landed only from the base it was built on (invariant 10).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_git::{Landing, QueueTree, QueuedHead, Worktrees};
use crew_test_support::git::{TestRepo, commit_all, dirty_paths, teammate, write};

/// A worktree for `name` with `file` written and committed; its head.
fn head_writing(wts: &Worktrees, name: &str, file: &str, text: &str) -> QueuedHead {
    let wt = wts.ensure(name, "main", &[], &[]).unwrap();
    write(&wt.path, file, text);
    let head = wts
        .commit_work(name, &format!("{name}: {file}"), &teammate())
        .unwrap();
    QueuedHead {
        label: name.to_string(),
        head,
        author: teammate(),
    }
}

#[test]
fn the_tested_commit_holds_every_head_and_lands_only_on_the_base_it_was_built_on() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let heads = [
        head_writing(&wts, "alice", "one.txt", "1\n"),
        head_writing(&wts, "bob", "two.txt", "2\n"),
    ];
    let before = t.branch_tip("main");
    let QueueTree::Built { base, commit } = wts.build_queue_tree("main", &heads).unwrap() else {
        panic!("expected a commit");
    };
    assert_eq!(base, before.to_string());
    assert_eq!(t.branch_tip("main"), before, "building moves nothing");
    let dir = tempfile::tempdir().unwrap();
    wts.export_commit(&commit, dir.path()).unwrap();
    for (file, text) in [("a.txt", "a\n"), ("one.txt", "1\n"), ("two.txt", "2\n")] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(file)).unwrap(),
            text
        );
    }

    // The person commits meanwhile: the tested commit does not land on that base.
    t.write("person.txt", "mine\n");
    let moved = commit_all(t.root(), "person's commit");
    let landing = wts.land("main", &base, &commit, "queue").unwrap();
    assert_eq!(
        landing,
        Landing::BaseMoved {
            now: moved.to_string()
        }
    );
    assert_eq!(t.branch_tip("main"), moved);

    let QueueTree::Built { base, commit } = wts.build_queue_tree("main", &heads).unwrap() else {
        panic!("expected a commit");
    };
    assert_eq!(
        wts.land("main", &base, &commit, "queue").unwrap(),
        Landing::Landed
    );
    assert_eq!(t.branch_tip("main").to_string(), commit);
    assert_eq!(t.read("two.txt"), "2\n", "the main checkout is in step");
    assert_eq!(dirty_paths(t.root()), Vec::<String>::new());
}

#[test]
fn a_conflicting_head_is_named_and_nothing_is_written() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let heads = [
        head_writing(&wts, "alice", "shared.txt", "alice\n"),
        head_writing(&wts, "bob", "shared.txt", "bob\n"),
    ];
    let before = t.branch_tip("main");
    let tree = wts.build_queue_tree("main", &heads).unwrap();
    assert_eq!(
        tree,
        QueueTree::Conflict {
            index: 1,
            files: vec!["shared.txt".to_string()]
        }
    );
    assert_eq!(t.branch_tip("main"), before);
    assert_eq!(dirty_paths(t.root()), Vec::<String>::new());
}
