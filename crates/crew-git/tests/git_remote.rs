//! The team's remote: a teammate's task commits pushed as `crew/<name>/task_N`, fetched by the
//! person's checkout only when they hold the head the task records, and the base branch pushed
//! fast-forward only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;

use crew_git::{GitError, TeamRemote, Worktrees};
use crew_test_support::git::{TestRepo, commit_all, git_cli, git_path, teammate, write};

/// The person's repository and the team's remote, a bare repository holding its main branch,
/// both in a scratch folder; with the git CLI's path. None (said) without git.
struct Team {
    dir: tempfile::TempDir,
    person: TestRepo,
    git: std::path::PathBuf,
    remote: TeamRemote,
}

fn team() -> Option<Team> {
    let Some(git) = git_path() else {
        eprintln!("skipped: git is not installed");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let person = TestRepo::new(&[("a.txt", "a\n")]);
    let init = [
        "init",
        "--quiet",
        "--bare",
        "--initial-branch=main",
        "team.git",
    ];
    git_cli(&git, dir.path(), &init);
    let remote = TeamRemote::new(dir.path().join("team.git").to_str().unwrap(), person.root());
    remote.push_base(person.root(), "main").unwrap();
    Some(Team {
        dir,
        person,
        git,
        remote,
    })
}

/// A second host: its own clone of the remote.
fn clone_of(git: &Path, remote: &TeamRemote, dir: &Path, name: &str) -> std::path::PathBuf {
    git_cli(git, dir, &["clone", "--quiet", remote.url(), name]);
    dir.join(name)
}

/// alice's task_3 on host2: b.txt written and committed in her worktree there; its head.
fn alices_task_on(host2: &Path) -> String {
    let trees = Worktrees::open(host2).unwrap();
    let wt = trees.ensure("alice", "main", &[], &[]).unwrap();
    write(&wt.path, "b.txt", "b\n");
    trees
        .commit_work("alice", "task_3: add b", &teammate())
        .unwrap()
}

#[test]
fn a_task_pushed_from_one_host_is_fetched_for_review_on_another() {
    let Some(Team {
        dir,
        person,
        git,
        remote,
    }) = team()
    else {
        return;
    };
    let host2 = clone_of(&git, &remote, dir.path(), "host2");
    let head = alices_task_on(&host2);
    remote
        .push_task(&host2, "crew/alice", "task_3", &head)
        .unwrap();

    remote
        .fetch_task(
            &Worktrees::open(person.root()).unwrap(),
            "crew/alice",
            "task_3",
            &head,
        )
        .unwrap();
    let mine = Worktrees::open(person.root()).unwrap();
    let diff = mine.merge_diff(&head, "main").unwrap();
    assert_eq!(
        diff.files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["b.txt"]
    );
    assert!(
        !person.has_branch("crew/alice/task_3"),
        "a fetched task is no branch of the person's"
    );
}

#[test]
fn a_branch_moved_on_the_remote_off_the_recorded_head_is_refused() {
    let Some(Team {
        dir,
        person,
        git,
        remote,
    }) = team()
    else {
        return;
    };
    let host2 = clone_of(&git, &remote, dir.path(), "host2");
    let recorded = alices_task_on(&host2);
    // Someone else who may push moves alice's branch to their own commit before she pushes.
    let host3 = clone_of(&git, &remote, dir.path(), "host3");
    write(&host3, "evil.txt", "x\n");
    let other = commit_all(&host3, "not alice's").to_string();
    remote
        .push_task(&host3, "crew/alice", "task_3", &other)
        .unwrap();

    let err = remote
        .fetch_task(
            &Worktrees::open(person.root()).unwrap(),
            "crew/alice",
            "task_3",
            &recorded,
        )
        .unwrap_err();
    assert!(
        matches!(&err, GitError::RemoteLacks { reference, head, .. }
            if reference == "crew/alice/task_3" && *head == recorded),
        "{err}"
    );
    assert!(err.to_string().contains(&recorded), "{err}");
}

#[test]
fn the_base_is_pushed_fast_forward_only_and_a_missing_branch_is_named() {
    let Some(Team {
        dir,
        person,
        git,
        remote,
    }) = team()
    else {
        return;
    };
    person.write("c.txt", "c\n");
    let merged = commit_all(person.root(), "merged task_1");
    remote.push_base(person.root(), "main").unwrap();
    let host2 = clone_of(&git, &remote, dir.path(), "host2");
    assert_eq!(
        git_cli(&git, &host2, &["rev-parse", "HEAD"]).trim(),
        merged.to_string()
    );

    // The remote's main moves under the person (another pusher): not overwritten.
    write(&host2, "d.txt", "d\n");
    commit_all(&host2, "pushed by another");
    git_cli(&git, &host2, &["push", "--quiet", "origin", "main"]);
    person.write("e.txt", "e\n");
    commit_all(person.root(), "merged task_2");
    let err = remote.push_base(person.root(), "main").unwrap_err();
    assert!(
        matches!(&err, GitError::Remote { action: "push", .. }),
        "{err}"
    );

    let never = "0123456789abcdef0123456789abcdef01234567";
    let err = remote
        .fetch_task(
            &Worktrees::open(person.root()).unwrap(),
            "crew/bob",
            "task_9",
            never,
        )
        .unwrap_err();
    assert!(err.to_string().contains("crew/bob/task_9"), "{err}");
}

#[test]
fn a_relative_remote_is_taken_from_the_repository_and_urls_are_kept() {
    let root = Path::new("/srv/repo");
    assert_eq!(
        TeamRemote::new("../team.git", root).url(),
        "/srv/repo/../team.git"
    );
    assert!(TeamRemote::is_relative_path("../team.git"));
    assert!(TeamRemote::is_relative_path("team.git"));
    for url in ["ssh://host/team.git", "git@host:team.git", "/abs/team.git"] {
        assert_eq!(TeamRemote::new(url, root).url(), url);
        assert!(!TeamRemote::is_relative_path(url), "{url}");
    }
}
