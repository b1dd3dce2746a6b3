//! A real `crew worker` whose agent starts a subagent: the subagent runs in the worker's
//! process with its own transcript beside the worker's, only its report reaches the task's
//! result, and the worker's status (what the screen shows nested under it) lists it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};

#[test]
fn a_teammates_explore_subagent_reports_back_and_shows_in_its_status() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "")],
        "mode = \"accept-edits\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
    );
    let team = Team::new(&toml, "test_subagents.toml", &[("greeting.txt", "hello\n")]);
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "find the greeting"]);

    let done = team.wait_task("task_1", "completed", Duration::from_secs(30));
    let result = done["result"].as_str().unwrap();
    assert!(
        result.starts_with("Done. subagent sub1 (explore, fresh) finished"),
        "{done}"
    );
    assert!(
        result.contains("The word is") && result.ends_with("hello"),
        "{done}"
    );

    let status: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(team.repo.join(".crew/agents/alice.json")).unwrap(),
    )
    .unwrap();
    let line = &status["subagents"][0];
    assert_eq!(line["id"], "sub1", "{status}");
    assert_eq!(line["role"], "explore");
    assert_eq!(line["description"], "find the greeting");
    assert_eq!(line["tool"], "read");
    assert_eq!(line["outcome"], "completed");

    // The side transcript is under the worker's, in a folder named after its session; the
    // worker's own transcript is the only file in its folder.
    let transcripts = team.repo.join(".crew/transcripts/alice");
    let entries: Vec<std::path::PathBuf> = std::fs::read_dir(&transcripts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let own: Vec<_> = entries.iter().filter(|p| p.is_file()).collect();
    assert_eq!(own.len(), 1, "{entries:?}");
    let side = own[0].with_extension("").join("sub1.jsonl");
    let text = std::fs::read_to_string(&side).unwrap();
    assert!(text.contains("greeting.txt"));

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
