//! Issue #12's "done when": a team whose lead is crew's own runtime (scripted) and whose
//! teammates are one Claude Code and one Codex process (the fakes replaying recorded sessions,
//! `tests/fixtures/*/demo.transcript.jsonl`) completes the demo goal. Each CLI's permission
//! prompts are answered through the store as the approvals pane does, both CLIs' diffs are
//! reviewed and merged, and crew's reviewer runs the project's tests on the merged code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;
use std::time::Duration;

use crate::support::team::{Team, json_lines};
use crew_test_support::wait::{eventually, eventually_showing};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

fn fixture(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
        .to_str()
        .unwrap()
        .to_string()
}

fn crew_toml() -> String {
    format!(
        r#"[team]
name = "mixed"
base_branch = "main"
test_command = "sh test.sh"

[lead]
name = "lead"
model = {{ provider = "scripted", scenario = "lead.toml" }}

[[teammate]]
name = "alice"
role = "implementer"
writes = true
model = {{ provider = "claude-code", model = "claude-opus-4-8", bin = "{claude}" }}

[[teammate]]
name = "bob"
role = "implementer"
writes = true
model = {{ provider = "codex", model = "gpt-5.5", bin = "{codex}" }}

[[teammate]]
name = "carol"
role = "reviewer"
model = {{ provider = "scripted", scenario = "demo" }}

[permissions]
mode = "accept-edits"

[worker]
idle_poll_secs = 1
idle_timeout_secs = 300
heartbeat_secs = 1
request_timeout_secs = 60
"#,
        claude = fixture("claude-code/fake-claude"),
        codex = fixture("codex/fake-codex"),
    )
}

/// The demo project (`crew demo`'s files) with the mixed team's crew.toml and lead script.
fn mixed_team() -> Team {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/project");
    let mut files = Vec::new();
    for path in ["README.md", "test.sh", "lib/add.sh", "tests/add_test.sh"] {
        files.push((path, std::fs::read_to_string(project.join(path)).unwrap()));
    }
    let lead = std::fs::read_to_string(fixture("codex/mixed-team-lead.toml")).unwrap();
    files.push(("lead.toml", lead));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    Team::new(&crew_toml(), "echo.toml", &refs)
}

fn pending_permission_requests(team: &Team) -> Vec<Value> {
    team.requests()
        .into_iter()
        .filter(|r| r["type"] == "permission_request" && r["state"] == "pending")
        .collect()
}

#[test]
fn a_lead_with_a_claude_code_and_a_codex_teammate_completes_the_demo_goal() {
    let team = mixed_team();
    let log = |name: &str| team.repo.join(&format!(".crew/fake-{name}.log"));
    let env = [
        (
            "FAKE_CLAUDE_SAMPLE",
            fixture("claude-code/demo.transcript.jsonl"),
        ),
        (
            "FAKE_CLAUDE_LOG",
            log("claude").to_str().unwrap().to_string(),
        ),
        ("FAKE_CODEX_SAMPLE", fixture("codex/demo.transcript.jsonl")),
        ("FAKE_CODEX_LOG", log("codex").to_str().unwrap().to_string()),
        // Each task is a new CLI conversation: each goes on where the last one stopped.
        (
            "FAKE_CLAUDE_CURSOR",
            log("claude-cursor").to_str().unwrap().to_string(),
        ),
        (
            "FAKE_CODEX_CURSOR",
            log("codex-cursor").to_str().unwrap().to_string(),
        ),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // The lead plans first (so the assignments are in place before anyone claims).
    team.repo.ok(&[
        "send",
        "--from",
        "user",
        "--to",
        "lead",
        &format!("Goal: {}", crew_team::demo::GOAL),
    ]);
    let _lead = team.spawn_with_env("lead", &["worker", "--name", "lead"], &env);
    eventually("the lead's plan", WAIT, || {
        let text = std::fs::read_to_string(team.repo.join(".tasks/task_3.json")).ok()?;
        let task: Value = serde_json::from_str(&text).ok()?;
        (task["owner"] == "alice").then_some(())
    });
    let _workers: Vec<_> = ["alice", "bob", "carol"]
        .iter()
        .map(|name| team.spawn_with_env(name, &["worker", "--name", name], &env))
        .collect();

    // The person at the approvals pane: approves what is asked, merges what waits for review.
    let mut approved: Vec<Value> = Vec::new();
    let mut merged: Vec<String> = Vec::new();
    eventually_showing("the team to finish", 3 * WAIT, || {
        if team.task("task_4")["status"] == "completed" {
            return Ok(());
        }
        for request in pending_permission_requests(&team) {
            let id = request["request_id"].as_str().unwrap();
            team.repo.ok(&["respond", id, "--as", "user", "approve"]);
            approved.push(request);
        }
        for n in 1..=3 {
            let id = format!("task_{n}");
            if team.task(&id)["status"] == "review" && !merged.contains(&id) {
                let diff = team.repo.ok(&["review", "diff", &id]);
                assert!(!diff.trim().is_empty(), "{id} has a diff to review");
                team.repo.ok(&["review", "merge", &id]);
                merged.push(id);
            }
        }
        Err(format!(
            "{:?}",
            (1..=4)
                .map(|n| team.task(&format!("task_{n}")))
                .collect::<Vec<_>>()
        ))
    });

    // Each CLI asked before running the tests, and the person's answer went back to it.
    let asker = |name: &str| approved.iter().filter(|r| r["from"] == name).count();
    assert_eq!(asker("alice"), 1, "Claude Code asked once: {approved:?}");
    assert_eq!(asker("bob"), 1, "Codex asked once: {approved:?}");
    assert_eq!(asker("carol"), 1, "the reviewer asked once: {approved:?}");
    let claude_answers: Vec<Value> = json_lines(&log("claude"))
        .into_iter()
        .filter(|l| l["in"]["type"] == "control_response")
        .collect();
    assert!(
        claude_answers
            .iter()
            .all(|a| a["in"]["response"]["response"]["behavior"] == "allow"),
        "{claude_answers:?}"
    );
    let codex_decisions: Vec<String> = json_lines(&log("codex"))
        .iter()
        .filter_map(|l| l["in"]["result"]["decision"].as_str().map(str::to_string))
        .collect();
    assert_eq!(codex_decisions, ["accept", "accept"]);

    // Both CLIs' work was reviewed and merged; the goal holds on main.
    merged.sort();
    assert_eq!(merged, ["task_1", "task_2", "task_3"]);
    for n in 1..=4 {
        assert_eq!(team.task(&format!("task_{n}"))["status"], "completed");
    }
    let root = team.repo.path();
    assert!(root.join("lib/sub.sh").exists() && root.join("lib/mul.sh").exists());
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("`sub a b`") && readme.contains("`mul a b`"),
        "{readme}"
    );
    let (pass, output) = crew_team::demo::tests_pass(root);
    assert!(pass, "{output}");
    assert!(output.ends_with(" 0 failed"), "{output}");
    let verdict = team.task("task_4")["result"].as_str().unwrap().to_string();
    assert!(verdict.contains("VERDICT: PASS"), "{verdict}");
    let authors = std::process::Command::new("git")
        .args(["log", "--format=%an", "main"])
        .current_dir(root)
        .output()
        .unwrap();
    let authors = String::from_utf8_lossy(&authors.stdout);
    assert!(
        authors.contains("alice") && authors.contains("bob"),
        "{authors}"
    );
}
