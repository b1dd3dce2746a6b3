//! The sandbox end to end: a real `crew worker` whose scripted teammate, with every command
//! allowed (`bypass` mode), tries the escapes issue 9 found from its worktree. Each attempt
//! fails, the transcript says why, and nothing outside the worktree changed. Where the kernel
//! lacks a piece (forced here through the probe's test switch), every command asks instead,
//! bypass or not. Needs Landlock and user namespaces: without them the first test fails and
//! says which piece is missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_sandbox::{Readiness, TEST_MISSING_ENV, readiness};
use crew_test_support::wait::BUDGET;

const CANARY: &str = "sk-canary-0123456789";

fn bypass_team(scenario: &str, files: &[(&str, &str)]) -> Team {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"bypass\"\nallow_bypass = true",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 2",
    );
    Team::new(&toml, scenario, files)
}

/// Every string in alice's transcripts, one per line.
fn transcript(team: &Team) -> String {
    fn strings(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let dir = team.repo.join(".crew/transcripts/alice");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in file.lines() {
            strings(&serde_json::from_str(line).unwrap(), &mut text);
        }
    }
    text
}

#[test]
fn a_hostile_teammate_cannot_escape_its_worktree() {
    if let Readiness::Missing(missing) = readiness(std::path::Path::new(crate::support::crew_exe()))
    {
        println!("this machine cannot run the sandbox test: {missing}");
        panic!("sandbox unavailable: {missing}");
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let team = bypass_team("test_sandbox.toml", &[("port.txt", &port)]);
    let readme = std::fs::read(team.repo.join("README.md")).unwrap();
    let crew_toml = std::fs::read(team.repo.join("crew.toml")).unwrap();
    let git_config = std::fs::read(team.repo.join(".git/config")).unwrap();

    let mut alice = team.spawn_with_env(
        "alice",
        &["worker", "--name", "alice", "--dangerously-bypass"],
        &[("ANTHROPIC_API_KEY", CANARY)],
    );
    team.repo.ok(&["task", "add", "attack the team"]);
    // What it wrote inside its worktree is its task's commit, waiting for review.
    let done = team.wait_task("task_1", "review", Duration::from_secs(60));
    assert!(
        done["result"]
            .as_str()
            .unwrap()
            .starts_with("Attempts done"),
        "{done}"
    );
    let transcript = transcript(&team);

    // Each attempt failed, with the kernel's reason, in the transcript.
    for expected in [
        "../../README.md: Permission denied",
        "../../crew.toml: Permission denied",
        "../../.mailboxes/lead.jsonl: Permission denied",
        "../../.tasks/task_99.json: Permission denied",
        ".git: Read-only file system",
        "../../.git/config: Permission denied",
        "crew.toml: Read-only file system",
        "Operation not permitted",
        "/environ: No such file or directory",
        "/mem' for reading: No such file or directory",
        "wrote-inside",
        "0\n0\nscanned",
    ] {
        assert!(
            transcript.contains(expected),
            "missing {expected:?} in {transcript}"
        );
    }
    // And says the sandbox refused them.
    assert!(
        transcript.matches("ran in the sandbox").count() >= 10,
        "{transcript}"
    );
    assert!(
        !transcript.contains(CANARY),
        "the key reached the transcript"
    );

    // Nothing outside the worktree changed; inside it did.
    assert_eq!(std::fs::read(team.repo.join("README.md")).unwrap(), readme);
    assert_eq!(
        std::fs::read(team.repo.join("crew.toml")).unwrap(),
        crew_toml
    );
    assert_eq!(
        std::fs::read(team.repo.join(".git/config")).unwrap(),
        git_config
    );
    assert!(!team.repo.join(".tasks/task_99.json").exists());
    let mailbox =
        std::fs::read_to_string(team.repo.join(".mailboxes/lead.jsonl")).unwrap_or_default();
    assert!(!mailbox.contains("\"approved\""), "{mailbox}");
    let pointer = std::fs::read_to_string(team.repo.join(".worktrees/alice/.git")).unwrap();
    assert!(
        pointer.starts_with("gitdir: ") && !pointer.contains("fake"),
        "{pointer}"
    );
    let wt_toml = std::fs::read(team.repo.join(".worktrees/alice/crew.toml")).unwrap();
    assert_eq!(wt_toml, crew_toml);
    assert!(team.repo.join(".worktrees/alice/inside.txt").exists());
    assert_eq!(
        listener.accept().map_err(|e| e.kind()).err(),
        Some(ErrorKind::WouldBlock),
        "a connection reached the listener"
    );
    // crew worktree commands still understand the worktree afterwards.
    team.repo.ok(&["worktree", "diff", "alice"]);

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

#[test]
fn without_a_full_sandbox_every_command_asks_even_in_bypass_mode() {
    let team = bypass_team("test_ask.toml", &[]);
    let mut alice = team.spawn_with_env(
        "alice",
        &["worker", "--name", "alice", "--dangerously-bypass"],
        &[(TEST_MISSING_ENV, "landlock")],
    );
    team.repo.ok(&["task", "add", "touch a file"]);
    let (_, asked) = team.waiting_request("alice", BUDGET);
    let text = asked.to_string();
    assert!(text.contains("the sandbox is unavailable here"), "{text}");
    assert!(text.contains("Landlock"), "names the missing piece: {text}");

    // Nobody answers: the request expires into a denial and the command never ran.
    let done = team.wait_task("task_1", "completed", BUDGET);
    assert!(
        done["result"]
            .as_str()
            .unwrap()
            .starts_with("Could not create it"),
        "{done}"
    );
    assert!(!team.repo.join(".worktrees/alice/asked.txt").exists());
    let log = std::fs::read_to_string(team.repo.join(".crew/test-alice.log")).unwrap_or_default();
    let logs = std::fs::read_dir(team.repo.join(".crew/logs"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
                .collect::<String>()
        })
        .unwrap_or_default();
    assert!(
        format!("{log}{logs}").contains("sandbox unavailable"),
        "the worker's log says so: {log}{logs}"
    );

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
