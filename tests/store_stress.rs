//! Invariants 1 and 3 under real OS processes (not threads): claims and inbox appends racing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command};

use crate::support::{Repo, bench_exe, crew_exe};
use serde_json::Value;

fn bench(args: &[&str]) -> Value {
    let out = Command::new(bench_exe()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn eight_processes_claim_every_task_exactly_once() {
    let report = bench(&["claims", "--procs", "8", "--tasks", "400", "--json"]);
    assert_eq!(report["claimed"], 400, "{report}");
    assert_eq!(report["double_claims"], 0, "{report}");
    assert_eq!(report["unclaimed"], 0, "{report}");
}

#[test]
fn eight_processes_append_to_one_inbox_without_loss_duplication_or_tearing() {
    let report = bench(&["mailbox", "--procs", "8", "--messages", "4000", "--json"]);
    assert_eq!(report["received"], 4000, "{report}");
    assert_eq!(report["lost"], 0, "{report}");
    assert_eq!(report["duplicated"], 0, "{report}");
    assert_eq!(report["torn"], 0, "{report}");
}

fn spawn_all(repo: &Repo, arg_sets: Vec<Vec<String>>) -> Vec<Child> {
    arg_sets
        .into_iter()
        .map(|args| {
            Command::new(crew_exe())
                .args(&args)
                .current_dir(repo.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect()
}

#[test]
fn the_cli_claim_next_is_atomic_across_racing_processes() {
    let repo = Repo::init();
    for i in 0..24 {
        repo.ok(&["task", "add", &format!("t{i}")]);
    }
    let names = ["alice", "bob", "carol", "lead"];
    // 8 processes at a time, 4 rounds: 32 attempts for 24 tasks.
    let mut claims: HashMap<String, Vec<String>> = HashMap::new();
    for _round in 0..4 {
        let children = spawn_all(
            &repo,
            (0..8)
                .map(|k| {
                    ["task", "claim", "--next", "--as", names[k % 4], "--json"]
                        .map(String::from)
                        .to_vec()
                })
                .collect(),
        );
        for child in children {
            let out = child.wait_with_output().unwrap();
            match out.status.code() {
                Some(0) => {
                    let task: Value = serde_json::from_slice(&out.stdout).unwrap();
                    claims
                        .entry(task["id"].as_str().unwrap().to_string())
                        .or_default()
                        .push(task["owner"].as_str().unwrap().to_string());
                }
                Some(3) => {
                    assert!(String::from_utf8_lossy(&out.stderr).contains("no claimable task"))
                }
                other => panic!(
                    "claim exited {other:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
        }
    }
    assert_eq!(claims.len(), 24, "every task claimed");
    for (id, owners) in &claims {
        assert_eq!(owners.len(), 1, "{id} claimed by {owners:?}");
        let on_disk = repo.json(&["task", "show", id, "--json"]);
        assert_eq!(on_disk["owner"], owners[0].as_str());
    }
}

#[test]
fn the_cli_send_from_eight_processes_loses_nothing() {
    let repo = Repo::init();
    let children = spawn_all(
        &repo,
        (0..8)
            .map(|k| {
                vec![
                    "send".into(),
                    "--from".into(),
                    "lead".into(),
                    "--to".into(),
                    "bob".into(),
                    format!("{k} {}", "x".repeat(20_000 + k * 1000)),
                ]
            })
            .collect(),
    );
    for child in children {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let inbox = repo.json(&["inbox", "bob", "--json"]);
    let messages = inbox["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 8);
    let senders: HashSet<String> = messages
        .iter()
        .map(|m| {
            m["text"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(senders.len(), 8, "no message lost or duplicated");
    assert!(
        messages.iter().all(|m| m.get("broken").is_none()),
        "no torn line"
    );
}
