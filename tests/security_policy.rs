//! Hostile teammates (real `crew worker` processes playing scripted attacks) against crew's
//! policies above the sandbox: the store's rules on who may change a task, and what a merge
//! lets in. Each attempt must fail, and the teammate's report (the task's result) or the review
//! must say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::BUDGET;

/// alice, a writing implementer, works task_2 ("forge") and tries to bend the graph around it:
/// unblock task_3 (which waits for her reviewed work), rewrite bob's task_1, assign task_3 to
/// herself, and mark her own task completed so its commits skip review. Only editing her own
/// task's description (her notes) is hers to do.
#[test]
fn a_teammate_cannot_rewrite_the_graph_or_complete_its_work_past_review() {
    let toml = crew_toml(
        "",
        &[
            ("alice", "implementer", "writes = true"),
            ("bob", "implementer", ""),
        ],
        "mode = \"accept-edits\"\nallow = [\"task_update\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1",
    );
    let team = Team::new(&toml, "test_store_attack.toml", &[]);
    team.repo.ok(&["task", "add", "bob's work", "--desc", "careful"]);
    team.repo.ok(&["task", "assign", "task_1", "bob"]);
    team.repo.ok(&["task", "add", "forge"]);
    team.repo
        .ok(&["task", "add", "ship it", "--blocked-by", "task_2"]);
    let mut alice = team.worker("alice");

    let task = team.wait_task("task_2", "review", BUDGET);
    let report = task["result"].as_str().unwrap();
    for refusal in [
        "alice may not change task_3's blockedBy: only the lead or the person changes a task's \
         subject and blockers",
        "alice may not change task_1's subject",
        "alice may not change task_3's owner: only the lead or the person assigns tasks",
        "task_2 is a writing teammate's task: it is completed only when review merges its commits",
    ] {
        assert!(report.contains(refusal), "{refusal:?} in {report}");
    }
    assert_eq!(task["description"], "my notes: forged.txt written", "{task}");
    assert_eq!(task["commits"]["branch"], "crew/alice", "{task}");

    let bobs = team.task("task_1");
    assert_eq!(
        (&bobs["subject"], &bobs["description"], &bobs["owner"]),
        (&"bob's work".into(), &"careful".into(), &"bob".into()),
        "{bobs}"
    );
    let waiting = team.task("task_3");
    assert_eq!(waiting["blockedBy"], serde_json::json!(["task_2"]), "{waiting}");
    assert_eq!(
        (&waiting["status"], &waiting["owner"]),
        (&"pending".into(), &serde_json::Value::Null),
        "{waiting}"
    );

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
