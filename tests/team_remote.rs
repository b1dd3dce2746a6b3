//! The team's git remote (`[team] remote`), the part of a team across machines that is git's: a
//! teammate's task commits reach the remote as `crew/<name>/task_N` when they are committed,
//! the person's review fetches a task made on another host (only at the head the store records),
//! and the person's merge pushes the base branch for every host to start from.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::eventually;

const WAIT: Duration = Duration::from_secs(60);

fn git(dir: &Path, args: &[&str]) -> String {
    crew_test_support::git::git_cli(Path::new("git"), dir, args)
        .trim()
        .to_string()
}

/// A team whose remote is a bare repository in `dir`, holding the person's main branch.
fn team_with_remote(dir: &Path, teammates: &[(&str, &str, &str)]) -> (Team, PathBuf) {
    let bare = dir.join("team.git");
    git(
        dir,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "team.git",
        ],
    );
    let toml = crew_toml(
        &format!("remote = \"{}\"", bare.display()),
        teammates,
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    let team = Team::new(&toml, "test_review.toml", &[]);
    git(
        team.repo.path(),
        &["push", "--quiet", bare.to_str().unwrap(), "main"],
    );
    (team, bare)
}

#[test]
fn a_task_reaches_the_remote_when_committed_and_the_persons_merge_pushes_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let (team, bare) = team_with_remote(dir.path(), &[("alice", "implementer", "writes = true")]);
    team.repo.ok(&["task", "add", "sub: write sub.txt"]);
    team.repo.ok(&["task", "assign", "task_1", "alice"]);
    let _alice = team.worker("alice");

    let task = eventually("task_1 in review", WAIT, || {
        let t = team.task("task_1");
        assert_ne!(t["status"], "failed", "{t}");
        (t["status"] == "review").then_some(t)
    });
    let head = task["commits"]["head"].as_str().unwrap();
    assert_eq!(
        git(&bare, &["rev-parse", "refs/heads/crew/alice/task_1"]),
        head
    );

    let said = team.repo.ok(&["review", "merge", "task_1"]);
    assert!(!said.contains("not pushed"), "{said}");
    assert_eq!(
        git(&bare, &["rev-parse", "main"]),
        git(team.repo.path(), &["rev-parse", "main"]),
        "the merged base is on the remote"
    );
    assert_eq!(git(&bare, &["show", "main:sub.txt"]), "alice wrote sub");
}

/// Another host's clone commits `file` on crew/bob and pushes it as `crew/bob/<task>`:
/// (start, head).
fn commit_elsewhere(host: &Path, bare: &Path, file: &str, task: &str) -> (String, String) {
    let start = git(host, &["rev-parse", "HEAD"]);
    std::fs::write(host.join(file), format!("{file}\n")).unwrap();
    git(host, &["add", file]);
    git(
        host,
        &["commit", "--quiet", "-m", &format!("{task}: write {file}")],
    );
    let head = git(host, &["rev-parse", "HEAD"]);
    git(
        host,
        &[
            "push",
            "--quiet",
            "--force",
            bare.to_str().unwrap(),
            &format!("HEAD:refs/heads/crew/bob/{task}"),
        ],
    );
    (start, head)
}

/// What the store holds once a teammate on another host sent `id` to review: its owner and
/// commits (the task file written as that host's `submit_for_review` leaves it).
fn in_review_from_elsewhere(team: &Team, id: &str, start: &str, head: &str) {
    let path = team.repo.join(&format!(".tasks/{id}.json"));
    let mut task: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    task["status"] = "review".into();
    task["owner"] = "bob".into();
    task["result"] = "wrote it on host2".into();
    task["commits"] = serde_json::json!({ "branch": "crew/bob", "start": start, "head": head });
    std::fs::write(&path, serde_json::to_string_pretty(&task).unwrap()).unwrap();
}

#[test]
fn a_task_made_on_another_host_is_fetched_for_review_only_at_its_recorded_head() {
    let dir = tempfile::tempdir().unwrap();
    let (team, bare) = team_with_remote(dir.path(), &[("bob", "implementer", "writes = true")]);
    let host2 = dir.path().join("host2");
    let host3 = dir.path().join("host3");
    for host in [&host2, &host3] {
        git(
            dir.path(),
            &[
                "clone",
                "--quiet",
                bare.to_str().unwrap(),
                host.to_str().unwrap(),
            ],
        );
    }
    team.repo.ok(&["task", "add", "b: write b.txt"]);
    team.repo.ok(&["task", "add", "c: write c.txt"]);
    let (start, head) = commit_elsewhere(&host2, &bare, "b.txt", "task_1");
    in_review_from_elsewhere(&team, "task_1", &start, &head);
    // task_2's branch is moved on the remote, by someone else who may push there, to a commit
    // that is not the one bob recorded.
    git(&host2, &["reset", "--quiet", "--hard", &start]);
    let (start2, head2) = commit_elsewhere(&host2, &bare, "c.txt", "task_2");
    in_review_from_elsewhere(&team, "task_2", &start2, &head2);
    commit_elsewhere(&host3, &bare, "evil.txt", "task_2");

    let diff = team.repo.json(&["review", "diff", "task_1", "--json"]);
    let files: Vec<&str> = diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["b.txt"], "{diff}");

    // The moved branch hides no other review: task_2 is listed, with why it cannot be shown.
    let list = team.repo.json(&["review", "list", "--json"]);
    let reviews = list["reviews"].as_array().unwrap();
    assert_eq!(reviews.len(), 2, "{list}");
    assert!(reviews[0]["unavailable"].is_null(), "{list}");
    let why = reviews[1]["unavailable"].as_str().unwrap();
    assert!(why.contains("crew/bob/task_2"), "{why}");
    let listed = team.repo.ok(&["review", "list"]);
    assert!(
        listed.contains("UNAVAILABLE: the team's remote"),
        "{listed}"
    );

    let refused = team.repo.crew(&["review", "diff", "task_2"]);
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("crew/bob/task_2") && refused.stderr.contains(&head2),
        "{}",
        refused.stderr
    );
    let refused = team.repo.crew(&["review", "merge", "task_2"]);
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert_eq!(team.task("task_2")["status"], "review");

    team.repo.ok(&["review", "merge", "task_1"]);
    assert_eq!(git(team.repo.path(), &["show", "main:b.txt"]), "b.txt");
    assert_eq!(
        git(&bare, &["rev-parse", "main"]),
        git(team.repo.path(), &["rev-parse", "main"])
    );
    assert!(
        git(team.repo.path(), &["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .all(|f| f != "evil.txt" && f != "c.txt")
    );
}
