//! A team budget in crew.toml: once the team has spent it, a worker takes no new work and asks
//! the person (a `budget_request`); approving raises it by its size once more, rejecting stops
//! the worker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::{BUDGET, eventually};
use serde_json::Value;

const WAIT: Duration = BUDGET;

fn budget_requests(team: &Team) -> Vec<Value> {
    team.requests()
        .into_iter()
        .filter(|r| r["type"] == "budget_request")
        .collect()
}

fn pending_budget_request(team: &Team, nth: usize) -> Value {
    eventually(&format!("budget request {nth}"), WAIT, || {
        budget_requests(team)
            .into_iter()
            .nth(nth - 1)
            .filter(|r| r["state"] == "pending")
    })
}

#[test]
fn a_reached_team_budget_pauses_work_and_the_person_raises_it_or_stops() {
    let mut toml = crew_toml(
        "",
        &[("alice", "implementer", "")],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 120",
    );
    toml.push_str("\n[budget]\nmax_turns = 1\n");
    let team = Team::new(&toml, "echo.toml", &[]);
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "first"]);
    team.wait_task("task_1", "completed", WAIT);

    // One model call spent: the budget is reached, so task_2 waits and the person is asked.
    team.repo.ok(&["task", "add", "second"]);
    let asked = pending_budget_request(&team, 1);
    assert_eq!(asked["from"], "alice", "{asked}");
    assert_eq!(asked["to"], "user", "{asked}");
    assert!(
        asked["text"]
            .as_str()
            .is_some_and(|t| t.contains("the team's budget is reached (1 of 1 model calls)")),
        "{asked}"
    );
    // Paused: while the request is pending the worker takes no task (it checks its budget
    // before every claim), so task_2 stays in the pool.
    let paused = eventually("alice paused at the budget", WAIT, || {
        let s = team.status("alice");
        s["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("paused: budget reached"))
            .then_some(s)
    });
    assert_eq!(paused["task"], serde_json::Value::Null, "{paused}");
    assert_eq!(team.task("task_2")["status"], "pending");
    assert_eq!(budget_requests(&team).len(), 1, "asked once");

    // Raised: task_2 is done, and the doubled budget is reached again.
    let id = asked["request_id"].as_str().unwrap();
    team.repo.ok(&["respond", id, "--as", "user", "approve"]);
    team.wait_task("task_2", "completed", WAIT);
    let again = pending_budget_request(&team, 2);
    assert!(
        again["text"]
            .as_str()
            .is_some_and(|t| t.contains("2 of 2 model calls")),
        "{again}"
    );

    // Stopped: alice shuts down and takes nothing more.
    team.repo.ok(&["task", "add", "third"]);
    let id = again["request_id"].as_str().unwrap();
    team.repo.ok(&["respond", id, "--as", "user", "reject"]);
    assert_eq!(alice.wait(WAIT), Some(0));
    let stopped = team.status("alice");
    assert_eq!(stopped["state"], "SHUTDOWN", "{stopped}");
    assert_eq!(team.task("task_3")["status"], "pending");
    // Each pause asked the person once.
    assert_eq!(budget_requests(&team).len(), 2, "asked once each time");
}

#[test]
fn a_bad_budget_is_refused_naming_where_it_is() {
    let mut toml = crew_toml("", &[], "mode = \"ask\"", "");
    toml.push_str("\n[budget]\nmax_usd = -1.0\n");
    let team = Team::new(&toml, "echo.toml", &[]);
    let run = team.repo.crew(&["status"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("[budget]: max_usd = -1 is not a dollar amount of 0 or more"),
        "{}",
        run.stderr
    );
}
