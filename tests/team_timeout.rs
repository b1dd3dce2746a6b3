//! A permission request nobody answers (no policy, no screen) expires, and an expired request
//! is a denial: the worker shows WAITING while it waits, then carries on without the command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::BUDGET;

#[test]
fn an_unanswered_permission_request_expires_into_a_denial() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 2",
    );
    let team = Team::new(&toml, "test_ask.toml", &[]);
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "touch a file"]);

    let (request_id, asked) = team.waiting_request("alice", BUDGET);
    assert_eq!(team.status("alice")["task"], "task_1");
    assert_eq!(asked["type"], "permission_request", "{asked}");
    assert_eq!(
        asked["purpose"], "Creating the file.",
        "crew's own agent's words before the call are its purpose: {asked}"
    );

    let done = team.wait_task("task_1", "completed", BUDGET);
    let result = done["result"].as_str().unwrap();
    // The tool result the agent saw: a denial naming the request that went unanswered.
    assert!(result.starts_with("Could not create it"), "{done}");
    assert!(
        result.contains(&format!(
            "no answer to permission request {request_id} within 2 s; denied"
        )),
        "{done}"
    );
    assert!(
        !team.repo.join(".worktrees/alice/asked.txt").exists(),
        "the command ran without a permission"
    );
    let requests = team.requests();
    let request = requests
        .iter()
        .find(|r| r["request_id"] == request_id.as_str())
        .unwrap();
    assert_eq!(request["state"], "expired", "{request}");
    assert!(request["answered_by"].is_null(), "{request}");
    team.wait_state("alice", "IDLE", BUDGET);

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

/// `dont-ask` (for unattended runs): the same command is denied at once by the mode, and no
/// request ever appears for anyone to answer.
#[test]
fn dont_ask_denies_without_making_a_request() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"dont-ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
    );
    let team = Team::new(&toml, "test_ask.toml", &[]);
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "touch a file"]);

    let done = team.wait_task("task_1", "completed", BUDGET);
    let result = done["result"].as_str().unwrap();
    assert!(result.starts_with("Could not create it"), "{done}");
    assert!(result.contains("dont-ask mode denies"), "{done}");
    assert!(team.requests().is_empty(), "{:?}", team.requests());
    let listed = team.repo.ok(&["requests"]);
    assert!(!listed.contains("permission_request"), "{listed}");
    assert!(!team.repo.join(".worktrees/alice/asked.txt").exists());

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
