//! Idle teammates, with real `crew worker` processes under `crew up --headless`: one whose task
//! waits in review does not idle out (a send-back may come), one with nothing in sight does, and
//! one that idled out is started again when a task it may claim appears.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::BUDGET;

/// alice writes a file for an implementer's task (it waits in review); bob explores.
const SCENARIO: &str = r#"
[[rule]]
agent = "alice"
last_tool = "write"
text = "Wrote it."

[[rule]]
agent = "alice"
text = "Writing it."
[[rule.tool_call]]
name = "write"
input = { path = "idle.txt", content = "written\n" }

[[rule]]
text = "Looked around: {task}"
"#;

#[test]
fn a_task_in_review_keeps_its_teammate_and_an_idled_out_one_comes_back_for_new_work() {
    let toml = crew_toml(
        "",
        &[
            ("alice", "implementer", "writes = true"),
            ("bob", "explorer", ""),
        ],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 2\nheartbeat_secs = 1",
    );
    let team = Team::new(&toml, "echo.toml", &[("scenario.toml", SCENARIO)]);
    let mut up = team.spawn("up", &["up", "--headless"]);
    team.repo
        .ok(&["task", "add", "write idle.txt", "--role", "implementer"]);
    team.wait_task("task_1", "review", BUDGET);
    // bob's task ends after alice's went to review, so his idle clock started later than hers.
    team.repo
        .ok(&["task", "add", "look around", "--role", "explorer"]);
    team.wait_task("task_2", "completed", BUDGET);
    let bob = team.wait_state("bob", "SHUTDOWN", BUDGET);
    assert!(
        bob["note"].as_str().unwrap().starts_with("idle for"),
        "{bob}"
    );
    let alice = team.status("alice");
    assert_eq!(
        alice["state"], "IDLE",
        "alice's task_1 waits in review: {alice}"
    );

    // A task only bob may claim: the team starts him again and he does it.
    team.repo
        .ok(&["task", "add", "look again", "--role", "explorer"]);
    let done = team.wait_task("task_3", "completed", BUDGET);
    assert_eq!(done["owner"], "bob", "{done}");
    let log = std::fs::read_to_string(team.repo.join(".crew/test-up.log")).unwrap();
    assert_eq!(log.matches("started bob").count(), 2, "{log}");

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    up.wait(BUDGET);
}
