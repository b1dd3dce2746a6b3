//! `crew down`: idle workers accept the shutdown request and end SHUTDOWN; a worker holding a
//! task refuses (the refusal is a visible answer) and is ended after `--timeout`, its task
//! given back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{slow_step_holder, slow_team};
use crew_test_support::wait::BUDGET;

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

/// A teammate that refuses while busy ("ask again when it is done") is asked again once it is
/// idle: it ends of its own accord, SHUTDOWN, long before the grace period — not killed at its
/// end, as a stop that came while it was finishing a task used to be.
#[test]
fn a_teammate_that_refused_while_busy_is_asked_again_once_idle() {
    let team = slow_team();
    let alice = team.worker("alice");
    let bob = team.worker("bob");
    team.repo.ok(&["task", "add", "a slow task"]);
    let busy = slow_step_holder(&team, "task_1");
    let mut busy_proc = if busy == "alice" { alice } else { bob };

    let mut down = team.spawn("down", &["down", "--timeout", "600"]);
    let refused =
        crew_test_support::wait::eventually("the busy teammate's refusal", BUDGET, || {
            team.requests()
                .into_iter()
                .find(|r| r["to"] == busy.as_str() && r["state"] == "rejected")
        });
    assert!(
        refused["note"]
            .as_str()
            .is_some_and(|n| n.contains("busy with task_1")),
        "{refused}"
    );
    // The slow step ends now: the task completes and the teammate goes idle.
    let sleeper = std::fs::read_to_string(team.repo.join(".crew/slow.pid")).unwrap();
    std::process::Command::new("kill")
        .arg(sleeper.trim())
        .status()
        .unwrap();

    // A guard against a hang, not a timing: without asking again this would take 600 s.
    assert_eq!(down.wait(BUDGET), Some(0));
    assert_eq!(busy_proc.wait(BUDGET), Some(0));
    let status = team.status(&busy);
    assert_eq!(status["state"], "SHUTDOWN", "{status}");
    assert_eq!(team.task("task_1")["status"], "completed");
    let asked: Vec<_> = team
        .requests()
        .into_iter()
        .filter(|r| r["type"] == "shutdown_request" && r["to"] == busy.as_str())
        .map(|r| r["state"].clone())
        .collect();
    assert_eq!(asked, ["rejected", "approved"], "{asked:?}");
}
