//! Merging a worktree never loses work (invariant 6): fast-forward, real 3-way merge, conflicts
//! that change nothing, dirty base checkouts, and the base branch checked out in a worktree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;

use crew_git::{GitError, MergeOutcome, Worktrees};
use crew_test_support::git::{TestRepo, commit_all, dirty_paths, read, teammate, write};
use git2::{Repository, WorktreeAddOptions};

fn commit_of(root: &Path, id: &str) -> (usize, String, String) {
    let repo = Repository::open(root).unwrap();
    let commit = repo.find_commit(git2::Oid::from_str(id).unwrap()).unwrap();
    let author = commit.author();
    (
        commit.parent_count(),
        author.name().unwrap().to_string(),
        author.email().unwrap().to_string(),
    )
}

#[test]
fn fast_forward_commits_uncommitted_work_and_updates_the_main_checkout() {
    let t = TestRepo::new(&[("a.txt", "a\n"), ("gone.txt", "bye\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "a changed\n");
    write(&wt.path, "dir/new.txt", "new\n");
    std::fs::remove_file(wt.path.join("gone.txt")).unwrap();
    let before = t.branch_tip("main");

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    let MergeOutcome::FastForward { new_head } = outcome else {
        panic!("expected a fast-forward, got {outcome:?}");
    };
    assert_eq!(t.branch_tip("main").to_string(), new_head);
    assert_eq!(t.branch_tip("crew/alice").to_string(), new_head);
    let (parents, name, email) = commit_of(t.root(), &new_head);
    assert_eq!(parents, 1);
    assert_eq!(
        (name.as_str(), email.as_str()),
        ("Alice Agent", "alice@crew.invalid")
    );
    let parent = t
        .repo()
        .find_commit(t.branch_tip("main"))
        .unwrap()
        .parent_id(0)
        .unwrap();
    assert_eq!(parent, before);

    // The main checkout (on main) now has the work, and is clean.
    assert_eq!(t.read("a.txt"), "a changed\n");
    assert_eq!(t.read("dir/new.txt"), "new\n");
    assert!(!t.path("gone.txt").exists());
    assert_eq!(dirty_paths(t.root()), Vec::<String>::new());
    // The worktree is clean too: its work is committed.
    assert_eq!(dirty_paths(&wt.path), Vec::<String>::new());

    assert_eq!(
        wts.merge("alice", "main", &teammate()).unwrap(),
        MergeOutcome::UpToDate
    );
}

#[test]
fn a_fresh_worktree_is_up_to_date() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    wts.ensure("bob", "main", &[], &[]).unwrap();
    let before = t.branch_tip("main");
    assert_eq!(
        wts.merge("bob", "main", &teammate()).unwrap(),
        MergeOutcome::UpToDate
    );
    assert_eq!(t.branch_tip("main"), before);
}

#[test]
fn three_way_merge_makes_a_merge_commit_with_both_sides() {
    let t = TestRepo::new(&[("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "1\n2\n3\n4\n5\n6\n7\n8\nnine\n");
    write(&wt.path, "theirs.txt", "from alice\n");
    commit_all(&wt.path, "alice's work");
    write(&wt.path, "uncommitted.txt", "also mine\n");
    t.write("a.txt", "one\n2\n3\n4\n5\n6\n7\n8\n9\n");
    t.write("ours.txt", "from main\n");
    let main_before = commit_all(t.root(), "main's work");

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    let MergeOutcome::Merged { commit } = outcome else {
        panic!("expected a merge, got {outcome:?}");
    };
    assert_eq!(t.branch_tip("main").to_string(), commit);
    let repo = t.repo();
    let merge = repo.find_commit(t.branch_tip("main")).unwrap();
    assert_eq!(merge.parent_count(), 2);
    assert_eq!(merge.parent_id(0).unwrap(), main_before);
    assert_eq!(merge.parent_id(1).unwrap(), t.branch_tip("crew/alice"));
    assert_eq!(merge.author().name().unwrap(), "Alice Agent");

    assert_eq!(t.read("a.txt"), "one\n2\n3\n4\n5\n6\n7\n8\nnine\n");
    assert_eq!(t.read("theirs.txt"), "from alice\n");
    assert_eq!(t.read("uncommitted.txt"), "also mine\n");
    assert_eq!(t.read("ours.txt"), "from main\n");
    assert_eq!(dirty_paths(t.root()), Vec::<String>::new());
    assert_eq!(dirty_paths(&wt.path), Vec::<String>::new());
}

#[test]
fn a_conflict_changes_nothing_anywhere_and_lists_the_files() {
    let t = TestRepo::new(&[("a.txt", "same\n"), ("b.txt", "b\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "alice's line\n");
    commit_all(&wt.path, "alice edits a");
    // Uncommitted work in the worktree must stay exactly as it is.
    write(&wt.path, "b.txt", "alice, uncommitted\n");
    write(&wt.path, "notes.txt", "untracked\n");
    t.write("a.txt", "main's line\n");
    commit_all(t.root(), "main edits a");
    t.write("b.txt", "person, uncommitted\n");

    let refs_before = (t.branch_tip("main"), t.branch_tip("crew/alice"));
    let main_dirty = dirty_paths(t.root());
    let wt_dirty = dirty_paths(&wt.path);

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    assert_eq!(
        outcome,
        MergeOutcome::Conflicts {
            files: vec!["a.txt".to_string()]
        }
    );
    assert_eq!(
        (t.branch_tip("main"), t.branch_tip("crew/alice")),
        refs_before
    );
    assert_eq!(t.read("a.txt"), "main's line\n");
    assert_eq!(t.read("b.txt"), "person, uncommitted\n");
    assert_eq!(read(&wt.path, "a.txt"), "alice's line\n");
    assert_eq!(read(&wt.path, "b.txt"), "alice, uncommitted\n");
    assert_eq!(read(&wt.path, "notes.txt"), "untracked\n");
    assert_eq!(dirty_paths(t.root()), main_dirty);
    assert_eq!(dirty_paths(&wt.path), wt_dirty);
    assert_eq!(wt_dirty, vec!["b.txt", "notes.txt"]);
}

#[test]
fn unrelated_local_edits_in_the_base_checkout_survive_the_merge() {
    let t = TestRepo::new(&[("a.txt", "a\n"), ("mine.txt", "mine\n"), ("c.txt", "c\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "a by alice\n");
    write(&wt.path, "added.txt", "added\n");
    // The person edits, stages and creates files the merge does not touch.
    t.write("mine.txt", "my edit\n");
    t.write("scratch.txt", "my notes\n");
    t.write("c.txt", "staged\n");
    let person = t.repo();
    let mut index = person.index().unwrap();
    index.add_path(Path::new("c.txt")).unwrap();
    index.write().unwrap();

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    assert!(
        matches!(outcome, MergeOutcome::FastForward { .. }),
        "{outcome:?}"
    );
    assert_eq!(t.read("a.txt"), "a by alice\n");
    assert_eq!(t.read("added.txt"), "added\n");
    assert_eq!(t.read("mine.txt"), "my edit\n");
    assert_eq!(t.read("scratch.txt"), "my notes\n");
    assert_eq!(t.read("c.txt"), "staged\n");
    assert_eq!(
        dirty_paths(t.root()),
        vec!["c.txt", "mine.txt", "scratch.txt"]
    );
    let status = t.repo().status_file(Path::new("c.txt")).unwrap();
    assert!(status.contains(git2::Status::INDEX_MODIFIED), "{status:?}");
}

#[test]
fn local_edits_on_a_file_the_merge_changes_refuse_it_and_change_nothing() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "a by alice\n");
    write(&wt.path, "new.txt", "alice's new file\n");
    let before = (t.branch_tip("main"), t.branch_tip("crew/alice"));

    // Modified locally.
    t.write("a.txt", "the person's edit\n");
    let err = wts.merge("alice", "main", &teammate()).err().unwrap();
    let GitError::CheckoutDirty {
        checkout,
        branch,
        files,
    } = &err
    else {
        panic!("expected CheckoutDirty, got {err}");
    };
    assert_eq!(branch, "main");
    assert_eq!(
        checkout.canonicalize().unwrap(),
        t.root().canonicalize().unwrap()
    );
    assert_eq!(files.0.len(), 1);
    assert_eq!(files.0[0].path, "a.txt");
    assert_eq!(files.0[0].reason, "modified locally");
    assert!(
        err.to_string().contains("a.txt (modified locally)"),
        "{err}"
    );

    // Untracked where the merge would write.
    t.write("a.txt", "a\n");
    t.write("new.txt", "the person's own new file\n");
    let err = wts.merge("alice", "main", &teammate()).err().unwrap();
    assert!(
        err.to_string()
            .contains("new.txt (untracked file would be overwritten)"),
        "{err}"
    );

    assert_eq!((t.branch_tip("main"), t.branch_tip("crew/alice")), before);
    assert_eq!(t.read("new.txt"), "the person's own new file\n");
    assert_eq!(read(&wt.path, "a.txt"), "a by alice\n");
    assert_eq!(dirty_paths(&wt.path), vec!["a.txt", "new.txt"]);
}

#[test]
fn the_base_branch_checked_out_in_another_worktree_is_updated_safely() {
    let t = TestRepo::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let repo = t.repo();
    // The main checkout moves to another branch; `main` is checked out in a plain worktree.
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    repo.branch("dev", &head, false).unwrap();
    repo.set_head("refs/heads/dev").unwrap();
    let other = t.dir.path().join("elsewhere");
    let main_ref = repo.find_reference("refs/heads/main").unwrap();
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&main_ref));
    repo.worktree("elsewhere", &other, Some(&opts)).unwrap();
    write(&other, "b.txt", "edited in elsewhere\n");

    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "a by alice\n");

    let outcome = wts.merge("alice", "main", &teammate()).unwrap();
    assert!(
        matches!(outcome, MergeOutcome::FastForward { .. }),
        "{outcome:?}"
    );
    assert_eq!(read(&other, "a.txt"), "a by alice\n");
    assert_eq!(read(&other, "b.txt"), "edited in elsewhere\n");
    assert_eq!(dirty_paths(&other), vec!["b.txt"]);
    let other_head = Repository::open(&other)
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap();
    assert_eq!(other_head, t.branch_tip("main"));
    // The main checkout, on dev, is untouched.
    assert_eq!(t.read("a.txt"), "a\n");

    // A dirty file there that the next merge touches refuses it, naming that checkout.
    write(&wt.path, "b.txt", "b by alice\n");
    let before = t.branch_tip("main");
    let err = wts.merge("alice", "main", &teammate()).err().unwrap();
    let GitError::CheckoutDirty {
        checkout, files, ..
    } = &err
    else {
        panic!("expected CheckoutDirty, got {err}");
    };
    assert_eq!(
        checkout.canonicalize().unwrap(),
        other.canonicalize().unwrap()
    );
    assert_eq!(files.0[0].path, "b.txt");
    assert_eq!(t.branch_tip("main"), before);
    assert_eq!(read(&other, "b.txt"), "edited in elsewhere\n");
}

#[test]
fn merging_an_unknown_worktree_names_it() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let err = wts.merge("ghost", "main", &teammate()).err().unwrap();
    assert!(matches!(err, GitError::WorktreeNotFound { .. }), "{err}");
    assert!(err.to_string().contains("ghost"), "{err}");
}

#[test]
fn a_base_checkout_in_the_middle_of_a_merge_refuses() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "a.txt", "a by alice\n");
    let before = t.branch_tip("main");
    t.write(".git/MERGE_HEAD", &format!("{before}\n"));

    let err = wts.merge("alice", "main", &teammate()).err().unwrap();
    assert!(matches!(err, GitError::CheckoutBusy { .. }), "{err}");
    assert!(err.to_string().contains("merge"), "{err}");
    assert_eq!(t.branch_tip("main"), before);
    assert_eq!(t.read("a.txt"), "a\n");
}

#[test]
fn concurrent_merges_into_one_base_all_land() {
    let t = TestRepo::new(&[("a.txt", "a\n")]);
    let names = ["ann", "ben", "cat", "dan"];
    let wts = Worktrees::open(t.root()).unwrap();
    for name in names {
        let wt = wts.ensure(name, "main", &[], &[]).unwrap();
        write(&wt.path, &format!("{name}.txt"), &format!("by {name}\n"));
    }
    let root = t.root().to_path_buf();
    let handles: Vec<_> = names
        .into_iter()
        .map(|name| {
            let root = root.clone();
            std::thread::spawn(move || {
                let wts = Worktrees::open(&root).unwrap();
                wts.merge(name, "main", &teammate())
            })
        })
        .collect();
    for handle in handles {
        let outcome = handle.join().unwrap().unwrap();
        assert!(
            matches!(
                outcome,
                MergeOutcome::FastForward { .. } | MergeOutcome::Merged { .. }
            ),
            "{outcome:?}"
        );
    }
    for name in names {
        assert_eq!(t.read(&format!("{name}.txt")), format!("by {name}\n"));
    }
    assert_eq!(dirty_paths(t.root()), Vec::<String>::new());
}

/// A symlink is resolved as the kernel will resolve it once checked out: through the tree's
/// other links and `..`. One that reaches crew's folders (directly, or through `here -> .`),
/// `.git`, or out of the checkout refuses the merge and changes nothing; an ordinary relative
/// link merges.
#[test]
fn a_merge_refuses_symlinks_into_crews_folders_git_or_out_of_the_checkout() {
    use std::os::unix::fs::symlink;
    let t = TestRepo::new(&[("README.md", "hi\n")]);
    let wts = Worktrees::open(t.root()).unwrap();
    let wt = wts.ensure("alice", "main", &[], &[]).unwrap();
    let before = t.branch_tip("main");
    for (links, refusal) in [
        (
            &[("inbox", ".mailboxes/lead.jsonl")][..],
            "the symlink inbox -> .mailboxes/lead.jsonl points into crew's folders",
        ),
        (
            &[("here", "."), ("store", "here/.tasks")][..],
            "the symlink store -> here/.tasks points into crew's folders",
        ),
        (
            &[("deep/hooks", "../.git/hooks")][..],
            "the symlink deep/hooks -> ../.git/hooks points into .git",
        ),
        (
            &[("out", "../../../etc/passwd")][..],
            "the symlink out -> ../../../etc/passwd leaves the checkout",
        ),
        (
            &[("abs", "/etc")][..],
            "the symlink abs -> /etc leaves the checkout",
        ),
    ] {
        for (link, target) in links {
            let at = wt.path.join(link);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            symlink(target, &at).unwrap();
        }
        let refused = wts.merge("alice", "main", &teammate()).unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with(&format!("refusing to merge: {refusal}")),
            "{refused}"
        );
        assert_eq!(t.branch_tip("main"), before, "{refusal}");
        assert!(t.path(links[0].0).symlink_metadata().is_err(), "{refusal}");
        for (link, _) in links {
            std::fs::remove_file(wt.path.join(link)).unwrap();
        }
        commit_all(&wt.path, "links gone");
    }
    std::fs::create_dir_all(wt.path.join("docs")).unwrap();
    symlink("../README.md", wt.path.join("docs/readme")).unwrap();
    wts.merge("alice", "main", &teammate()).unwrap();
    assert_eq!(t.read("docs/readme"), "hi\n");
}
