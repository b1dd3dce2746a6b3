//! `crew down`: idle workers accept the shutdown request and end SHUTDOWN; a worker holding a
//! task refuses (the refusal is a visible answer) and is ended after `--timeout`, its task
//! given back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

mod common;
mod team_support;

use std::time::Duration;

use common::wait::BUDGET;
use team_support::{slow_step_holder, slow_team};

#[test]
fn down_shuts_idle_workers_and_ends_a_busy_one_after_the_timeout() {
    let team = slow_team();
    let alice = team.worker("alice");
    let bob = team.worker("bob");
    team.repo.ok(&["task", "add", "a slow task"]);
    let busy = slow_step_holder(&team, "task_1");
    let (idle, mut idle_proc, mut busy_proc) = if busy == "alice" {
        ("bob", bob, alice)
    } else {
        ("alice", alice, bob)
    };
    team.wait_state(idle, "IDLE", BUDGET);

    let down = team.repo.crew(&["down", "--timeout", "3"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(
        down.stdout
            .contains(&format!("{busy} died (did not stop within 3s)")),
        "{}",
        down.stdout
    );

    // The idle worker is not crew down's child: it is reported stopped, not "no worker".
    assert!(
        down.stdout.contains(&format!("{idle} shut down")),
        "{}",
        down.stdout
    );
    assert_eq!(idle_proc.wait(Duration::from_secs(10)), Some(0));
    assert_eq!(team.state(idle), "SHUTDOWN");
    // Ended by a signal, not of its own accord.
    assert_eq!(busy_proc.wait(Duration::from_secs(10)), None);
    assert_eq!(team.state(&busy), "DEAD");

    let requests = team.requests();
    let shutdown_to = |name: &str| {
        requests
            .iter()
            .find(|r| r["type"] == "shutdown_request" && r["to"] == name)
            .unwrap_or_else(|| panic!("no shutdown request to {name}: {requests:?}"))
            .clone()
    };
    let refused = shutdown_to(&busy);
    assert_eq!(refused["state"], "rejected", "{refused}");
    assert_eq!(refused["answered_by"], busy.as_str(), "{refused}");
    assert!(
        refused["note"]
            .as_str()
            .is_some_and(|n| n.contains("busy with task_1")),
        "{refused}"
    );
    assert_eq!(shutdown_to(idle)["state"], "approved");

    let task = team.task("task_1");
    assert_eq!(task["status"], "pending", "{task}");
    assert!(task["owner"].is_null(), "{task}");
    assert!(
        task["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains(&format!("released: {busy} died")))),
        "{task}"
    );
}
