//! `crew demo --headless`: the scripted team plans, builds in parallel worktrees, asks for
//! permission to run the tests, documents, reviews and merges — with the permission policy
//! approving, and refusing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::process::Command;

use serde_json::Value;

use crate::support::{Run, crew_exe};

fn demo(dir: &std::path::Path, approve: &str) -> (Run, Value) {
    demo_merging(dir, approve, "auto")
}

fn demo_merging(dir: &std::path::Path, approve: &str, merge: &str) -> (Run, Value) {
    let run: Run = Command::new(crew_exe())
        .args([
            "demo",
            "--headless",
            "--approve",
            approve,
            "--merge",
            merge,
            "--dir",
        ])
        .arg(dir)
        .output()
        .unwrap()
        .into();
    let summary = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary ({e}): {}\n{}", run.stdout, run.stderr));
    (run, summary)
}

fn count(summary: &Value, table: &str, key: &str) -> u64 {
    summary[table][key].as_u64().unwrap_or(0)
}

fn assert_everyone_shut_down(summary: &Value) {
    let agents = summary["agents"].as_object().unwrap();
    assert_eq!(agents.len(), 4, "{summary}");
    for (name, usage) in agents {
        assert_eq!(usage["state"], "SHUTDOWN", "{name}: {summary}");
    }
}

#[test]
fn approved_demo_reaches_its_goal_with_three_permissions_and_three_merges() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("demo");
    let (run, summary) = demo(&dir, "allow");
    assert_eq!(run.code, 0, "{}\n{summary}", run.stderr);
    assert_eq!(summary["goal_reached"], true, "{summary}");
    assert_eq!(count(&summary, "tasks", "completed"), 4, "{summary}");
    assert_eq!(summary["tasks"].as_object().unwrap().len(), 1, "{summary}");
    assert_eq!(
        count(&summary, "requests", "permission_request approved"),
        3,
        "{summary}"
    );
    let merges = summary["merges"].as_array().unwrap();
    assert_eq!(merges.len(), 3, "{summary}");
    assert!(
        merges.iter().all(|m| m
            .as_str()
            .unwrap()
            .contains(" merged into main automatically")),
        "{summary}"
    );
    assert_everyone_shut_down(&summary);
    // The reviewer ran the tests on the merged code: all six, and said so explicitly.
    assert_eq!(summary["verdicts"]["task_4"], "pass", "{summary}");
    assert!(
        summary["tests"]
            .as_str()
            .unwrap()
            .contains("6 passed, 0 failed"),
        "{summary}"
    );
    // The merged code is really on main: sub and mul exist and the README lists them.
    assert!(dir.join("lib/sub.sh").exists() && dir.join("lib/mul.sh").exists());
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        readme.contains("`sub a b`") && readme.contains("`mul a b`"),
        "{readme}"
    );
}

#[test]
fn denied_demo_fails_the_review_says_why_and_leaves_passing_code() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("demo");
    let (run, summary) = demo(&dir, "deny");
    // A failed review and a failed task are not the goal reached, and the exit says so.
    assert_eq!(summary["goal_reached"], false, "{summary}");
    assert_eq!(run.code, 1, "{}\n{summary}", run.stderr);
    assert!(
        run.stderr.contains("did not reach its goal"),
        "{}",
        run.stderr
    );
    assert_eq!(summary["verdicts"]["task_4"], "fail", "{summary}");
    assert_eq!(summary["approve"], "deny");
    assert_eq!(summary["simulator"], true, "{summary}");
    assert_eq!(
        count(&summary, "requests", "permission_request approved"),
        0
    );
    assert!(
        count(&summary, "requests", "permission_request rejected") >= 1,
        "{summary}"
    );
    assert_eq!(count(&summary, "tasks", "failed"), 1, "{summary}");
    let tasks = std::fs::read_dir(dir.join(".tasks")).unwrap();
    let review: Value = tasks
        .filter_map(|e| {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(path).ok()?;
            serde_json::from_str::<Value>(&text).ok()
        })
        .find(|t| t["subject"].as_str().unwrap_or("").starts_with("Review"))
        .expect("a review task");
    assert_eq!(review["status"], "failed", "{review}");
    let result = review["result"].as_str().unwrap_or("");
    assert!(result.contains("VERDICT: FAIL"), "{review}");
    let notes = summary["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("was refused")),
        "{summary}"
    );
    assert_everyone_shut_down(&summary);
    let tests = Command::new("sh")
        .arg("test.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        tests.status.success(),
        "sh test.sh fails in the demo repository: {}",
        String::from_utf8_lossy(&tests.stdout)
    );
}

#[test]
fn queue_demo_tests_both_implementations_together_then_the_docs_task_follows() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("demo");
    let (run, summary) = demo_merging(&dir, "allow", "queue");
    assert_eq!(run.code, 0, "{}\n{summary}", run.stderr);
    assert_eq!(summary["goal_reached"], true, "{summary}");
    assert_eq!(count(&summary, "tasks", "completed"), 4, "{summary}");
    // Both implementation diffs in one green run, then the docs task on its own.
    let runs: Vec<&str> = summary["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str()?.strip_prefix("merge queue run: "))
        .collect();
    assert_eq!(runs.len(), 2, "{summary}");
    assert!(runs[0].starts_with("task_1, task_2 passed"), "{summary}");
    assert!(runs[1].starts_with("task_3 passed"), "{summary}");
    let merges = summary["merges"].as_array().unwrap();
    assert!(
        merges.iter().any(|m| m
            .as_str()
            .unwrap()
            .starts_with("task_1, task_2 merged into main (merge queue: tested together")),
        "{summary}"
    );
    assert!(dir.join("lib/sub.sh").exists() && dir.join("lib/mul.sh").exists());
}
