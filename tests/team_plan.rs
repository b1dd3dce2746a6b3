//! Plan mode: a teammate with plan_mode_required sends its plan to the lead and gets no write
//! tool until a plan of its is approved. The test answers as the lead (`crew respond --as
//! lead`); only `crew worker --name alice` runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use serde_json::Value;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::{BUDGET, eventually};

const REJECTION: &str = "rejected: write second, not first";

/// alice in plan mode, either by her own `plan_mode_required` (`teammate_extra`) or by the
/// team's `mode = "plan"` (`mode`).
fn plan_team(teammate_extra: &str, mode: &str) -> (Team, crate::support::team::Bg) {
    let toml = crew_toml(
        "",
        &[(
            "alice",
            "implementer",
            &format!("writes = true\n{teammate_extra}"),
        )],
        &format!("mode = \"{mode}\""),
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 120",
    );
    let team = Team::new(&toml, "test_plan.toml", &[]);
    let alice = team.worker("alice");
    (team, alice)
}

/// The `n`th (1-based) plan approval request alice sent.
fn plan_request(team: &Team, n: usize) -> Value {
    eventually(&format!("plan request {n}"), BUDGET, || {
        team.requests()
            .into_iter()
            .filter(|r| r["type"] == "plan_approval_request" && r["from"] == "alice")
            .nth(n - 1)
    })
}

fn id(request: &Value) -> String {
    request["request_id"].as_str().unwrap().to_string()
}

/// The first message alice sent the lead whose text starts with `prefix`.
fn told_lead(team: &Team, prefix: &str) -> String {
    eventually(
        &format!("alice to tell the lead {prefix:?}"),
        BUDGET,
        || {
            team.inbox("lead").into_iter().find_map(|m| {
                let text = m["text"].as_str()?;
                (m["from"] == "alice" && text.starts_with(prefix)).then(|| text.to_string())
            })
        },
    )
}

fn tell_alice(team: &Team, text: &str) {
    team.repo
        .ok(&["send", "--from", "lead", "--to", "alice", text]);
}

#[test]
fn a_plan_mode_teammate_writes_only_after_a_plan_of_its_is_approved() {
    plan_then_write(plan_team("plan_mode_required = true", "accept-edits"));
}

/// The team-wide `plan` mode asks the same of every teammate; after the approval alice works
/// under `accept-edits`, so her write needs no request.
#[test]
fn the_plan_mode_holds_every_teammate_to_an_approved_plan() {
    plan_then_write(plan_team("", "plan"));
}

fn plan_then_write((team, mut alice): (Team, crate::support::team::Bg)) {
    team.repo.ok(&["task", "add", "Write plan.txt"]);
    let first = plan_request(&team, 1);
    assert_eq!(first["state"], "pending", "{first}");
    assert!(
        first["text"].as_str().unwrap().ends_with("first"),
        "{first}"
    );
    team.wait_task("task_1", "completed", BUDGET);

    // Before any approval there is no write tool at all.
    tell_alice(&team, "go ahead and write");
    let refused = told_lead(&team, "write refused:");
    assert!(refused.contains("unknown tool `write`"), "{refused}");
    let written = team.repo.join(".worktrees/alice/plan.txt");
    assert!(!written.exists());

    let run = team.repo.crew(&[
        "respond",
        &id(&first),
        "--as",
        "lead",
        "reject",
        "--note",
        REJECTION,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The rejection itself (a plan_approval_response) reaches alice's agent, which plans again.
    let second = plan_request(&team, 2);
    assert!(
        second["text"].as_str().unwrap().ends_with("second"),
        "{second}"
    );
    assert_eq!(plan_request(&team, 1)["state"], "rejected");

    let run = team
        .repo
        .crew(&["respond", &id(&second), "--as", "lead", "approve"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    tell_alice(&team, "approved, go ahead and write");
    assert_eq!(told_lead(&team, "wrote"), "wrote plan.txt");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "second\n");

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
