//! The end of a run: `crew up --headless --until-done` stops the team through the shutdown
//! protocol as soon as its last task is done. The workers poll only once an hour and beat once an
//! hour here, so the run can only end promptly if every worker (the lead included) is woken by
//! the file event of its shutdown request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use serde_json::Value;

#[test]
fn a_one_task_run_ends_through_shutdown_requests_woken_by_file_events() {
    let toml = crew_toml(
        "",
        &[
            ("alice", "implementer", "writes = true"),
            ("bob", "implementer", ""),
            ("carol", "implementer", ""),
        ],
        "mode = \"ask\"",
        "idle_poll_secs = 3600\nidle_timeout_secs = 7200\nheartbeat_secs = 3600",
    );
    let team = Team::new(&toml, "echo.toml", &[]);
    team.repo.ok(&["task", "add", "say hello"]);

    let mut up = team.spawn(
        "up",
        &["up", "--headless", "--approve", "allow", "--until-done"],
    );
    // A guard against a hang, not a timing: a poll-bound exit would take an hour.
    assert_eq!(up.wait(Duration::from_secs(120)), Some(0));

    assert_eq!(team.task("task_1")["status"], "completed");
    for name in ["lead", "alice", "bob", "carol"] {
        let status = team.status(name);
        assert_eq!(status["state"], "SHUTDOWN", "{status}");
        // "stopped" or "idle for ..." would mean it left some other way than the request.
        assert!(
            status["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("shutdown approved (req_")),
            "{name}: {status}"
        );
    }

    // Every worker, the lead included, was asked and answered itself.
    let requests = team.requests();
    for name in ["lead", "alice", "bob", "carol"] {
        let asked = requests
            .iter()
            .find(|r| r["type"] == "shutdown_request" && r["to"] == name)
            .unwrap_or_else(|| panic!("no shutdown request to {name}: {requests:?}"));
        assert_eq!(asked["state"], "approved", "{asked}");
        assert_eq!(asked["answered_by"], name, "{asked}");
    }

    // In the lead's inbox: the task's report (its place among the answers is a race: the
    // task file is done before the report is sent, and an idle teammate may answer first), the
    // teammates' answers, and after them the person's request to the lead itself.
    let lead_inbox = team.inbox("lead");
    let position = |what: &str, pred: &dyn Fn(&Value) -> bool| {
        lead_inbox
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("no {what} in the lead's inbox: {lead_inbox:?}"))
    };
    let reported = position("task report", &|m| {
        m["type"] == "status_update" && m["text"].as_str().is_some_and(|t| t.contains("task_1"))
    });
    let first_answer = position("shutdown response", &|m| m["type"] == "shutdown_response");
    let lead_asked = position("request to the lead", &|m| {
        m["type"] == "shutdown_request" && m["from"] == "user"
    });
    assert!(reported < lead_asked, "{lead_inbox:?}");
    assert!(first_answer < lead_asked, "{lead_inbox:?}");
}
