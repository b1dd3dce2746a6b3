//! Memory in a real team: a `crew worker` teammate keeps a memory under `ask` without asking
//! anyone, finds it in its next task's conversation, stale because the file it names is gone;
//! crew.toml's `[limits] memory_bytes` bounds it, and a `[[hooks]]` Stop hook keeps a team
//! memory after each turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_teammate_keeps_a_memory_and_finds_it_in_its_next_task() {
    let hook = r#"[[hooks]]
event = "Stop"
command = "cat >/dev/null; echo '{\"hookSpecificOutput\": {\"memory\": {\"name\": \"last-stop\", \"type\": \"project\", \"description\": \"an agent finished a turn\", \"body\": \"Stopped.\", \"scope\": \"team\"}}}'"
"#;
    let toml = crew_toml(
        &format!("\n[limits]\nmemory_bytes = 32\n\n{hook}"),
        &[("alice", "implementer", "writes = false")],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 5",
    );
    let team = Team::new(&toml, "test_memory.toml", &[]);
    let mut alice = team.worker("alice");

    team.repo
        .ok(&["task", "add", "remember the deploy command"]);
    let done = team.wait_task("task_1", "completed", WAIT);
    let result = done["result"].as_str().unwrap();
    assert!(
        result.contains("memory body is 39 bytes; the limit is 32 ([limits] memory_bytes"),
        "{done}"
    );
    assert!(!team.repo.join(".crew/memory/alice/deploy-cmd.md").exists());

    // Within the limit.
    std::fs::write(
        team.repo.join("crew.toml"),
        toml.replace("memory_bytes = 32", "memory_bytes = 4096"),
    )
    .unwrap();
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(WAIT), Some(0));
    let mut alice = team.worker("alice");
    team.repo
        .ok(&["task", "add", "remember the deploy command again"]);
    let done = team.wait_task("task_2", "completed", WAIT);
    assert_eq!(
        done["result"], "Wrote: kept memory `deploy-cmd` in alice's memory",
        "{done}"
    );
    let asked: Vec<_> = team
        .requests()
        .into_iter()
        .filter(|r| r["type"] == "permission_request")
        .collect();
    assert!(asked.is_empty(), "memory needs no permission: {asked:?}");

    team.repo.ok(&["task", "add", "recall what you know"]);
    let done = team.wait_task("task_3", "completed", WAIT);
    let result = done["result"].as_str().unwrap();
    assert!(
        result.contains("- deploy-cmd (feedback): how we deploy [STALE: names `scripts/deploy.sh`"),
        "{done}"
    );
    assert!(
        result.contains("- last-stop (project): an agent finished a turn"),
        "{done}"
    );

    let listed = team.repo.ok(&["memory", "list", "--agent", "alice"]);
    assert!(
        listed.contains("deploy-cmd") && listed.contains("last-stop"),
        "{listed}"
    );

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(WAIT), Some(0));
}
