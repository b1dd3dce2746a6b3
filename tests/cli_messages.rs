//! `crew send`, `inbox`, `requests`, `respond` end to end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Repo, crew_exe};
use crew_test_support::wait::poll;
use serde_json::Value;

#[test]
fn inbox_shows_unread_once_and_peek_or_all_do_not_move_the_cursor() {
    let repo = Repo::init();
    repo.ok(&["send", "--from", "lead", "--to", "alice", "first"]);
    repo.ok(&["send", "--from", "user", "--to", "alice", "second"]);
    let peek = repo.json(&["inbox", "alice", "--peek", "--json"]);
    assert_eq!(peek["messages"].as_array().unwrap().len(), 2);
    let read = repo.json(&["inbox", "alice", "--json"]);
    let texts: Vec<&str> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "second"]);
    assert_eq!(read["messages"][1]["from"], "user");
    let again = repo.json(&["inbox", "alice", "--json"]);
    assert_eq!(
        again["messages"],
        serde_json::json!([]),
        "read messages are not unread"
    );
    repo.ok(&["send", "--from", "lead", "--to", "alice", "third"]);
    let all = repo.json(&["inbox", "alice", "--all", "--peek", "--json"]);
    assert_eq!(all["messages"].as_array().unwrap().len(), 3);
    let unread = repo.json(&["inbox", "alice", "--json"]);
    assert_eq!(unread["messages"][0]["text"], "third");
}

#[test]
fn a_misspelt_recipient_is_refused_with_the_team_and_no_inbox_appears() {
    let repo = Repo::init();
    let run = repo.crew(&["send", "--from", "lead", "--to", "alcie", "hi"]);
    assert_eq!(run.code, 3);
    assert_eq!(
        run.stderr.trim(),
        "crew: unknown recipient \"alcie\"; the team is: lead, alice, bob, carol, user"
    );
    assert!(!repo.join(".mailboxes/alcie.jsonl").exists());
    let sender = repo.crew(&["send", "--from", "eve", "--to", "alice", "hi"]);
    assert_eq!(sender.code, 3);
    let traversal = repo.crew(&["send", "--from", "lead", "--to", "../x", "hi"]);
    assert_eq!(traversal.code, 2);
    assert_eq!(
        traversal.stderr.trim(),
        "crew: invalid recipient \"../x\": it must start with a lowercase letter a-z"
    );
}

#[test]
fn unknown_types_and_broken_lines_are_kept_and_shown_in_place() {
    let repo = Repo::init();
    repo.ok(&[
        "send",
        "--from",
        "lead",
        "--to",
        "bob",
        "--type",
        "weather_report",
        "sunny",
    ]);
    let path = repo.join(".mailboxes/bob.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{not json\n");
    text.push_str(r#"{"id":"m1","ts":"2026-01-01T00:00:00Z","from":"lead","to":"bob","type":"message","text":"after","mood":"fine"}"#);
    text.push('\n');
    std::fs::write(&path, text).unwrap();
    let inbox = repo.json(&["inbox", "bob", "--json"]);
    let messages = inbox["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["type"], "weather_report");
    assert_eq!(messages[1]["broken"], true);
    assert_eq!(messages[1]["raw"], "{not json");
    assert!(
        messages[1]["error"]
            .as_str()
            .unwrap()
            .contains("bob.jsonl: byte ")
    );
    assert_eq!(messages[2]["mood"], "fine", "unknown fields survive");
    let human = repo.ok(&["inbox", "bob", "--all", "--peek"]);
    assert!(
        human.contains("weather_report (unknown type): sunny"),
        "{human}"
    );
    assert!(human.contains("!! unreadable line: "), "{human}");
}

#[test]
fn a_request_is_answered_once_by_its_addressee_and_the_state_is_derived() {
    let repo = Repo::init();
    let req = repo.ok(&[
        "send",
        "--from",
        "lead",
        "--to",
        "alice",
        "--type",
        "shutdown_request",
        "--request",
        "stop?",
    ]);
    let req = req.trim();
    assert!(req.starts_with("req_"), "{req}");
    let pending = repo.json(&["requests", "--pending", "--json"]);
    assert_eq!(pending["requests"][0]["state"], "pending");
    assert_eq!(pending["requests"][0]["type"], "shutdown_request");

    let wrong = repo.crew(&["respond", req, "--as", "bob", "approve"]);
    assert_eq!(wrong.code, 3);
    assert_eq!(
        wrong.stderr.trim(),
        format!("crew: request {req} is addressed to alice; bob cannot answer it")
    );

    let answer = repo.json(&[
        "respond", req, "--as", "alice", "reject", "--note", "mid-task", "--json",
    ]);
    assert_eq!(answer["type"], "shutdown_response");
    assert_eq!(answer["request_id"], req);
    assert_eq!(answer["approve"], false);
    assert_eq!(answer["to"], "lead");

    let twice = repo.crew(&["respond", req, "--as", "alice", "approve"]);
    assert_eq!(twice.code, 3);
    assert_eq!(
        twice.stderr.trim(),
        format!("crew: request {req} was already answered (rejected) by alice")
    );

    let all = repo.json(&["requests", "--json"]);
    assert_eq!(all["requests"][0]["state"], "rejected");
    assert_eq!(all["requests"][0]["note"], "mid-task");
    assert_eq!(
        repo.json(&["requests", "--pending", "--json"])["requests"],
        serde_json::json!([])
    );
    let lead = repo.json(&["inbox", "lead", "--json"]);
    assert_eq!(lead["messages"][0]["request_id"], req);

    let unknown = repo.crew(&["respond", "req_nope", "--as", "user", "approve"]);
    assert_eq!(unknown.code, 3);
    assert_eq!(unknown.stderr.trim(), "crew: no request with id req_nope");
}

#[test]
fn permission_requests_are_answered_by_the_person_only_and_expire() {
    let repo = Repo::init();
    let req = repo.ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "lead",
        "--type",
        "permission_request",
        "--request",
        "bash: cargo test",
    ]);
    let req = req.trim();
    let lead = repo.crew(&["respond", req, "--as", "lead", "approve"]);
    assert_eq!(lead.code, 3);
    assert_eq!(
        lead.stderr.trim(),
        format!("crew: request {req} is addressed to user; lead cannot answer it")
    );
    repo.ok(&["respond", req, "--as", "user", "approve"]);
    assert_eq!(
        repo.json(&["requests", "--json"])["requests"][0]["state"],
        "approved"
    );

    let quick = repo.ok(&[
        "send",
        "--from",
        "alice",
        "--to",
        "lead",
        "--type",
        "permission_request",
        "--request",
        "--timeout",
        "0",
        "rm",
    ]);
    let quick = quick.trim();
    // A zero-second timeout has passed as soon as the clock moves on.
    let state = poll("the request's state", || {
        let all = repo.json(&["requests", "--json"]);
        let r = all["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["request_id"] == quick)
            .cloned()
            .unwrap();
        (r["state"] == "expired").then_some(r)
    });
    assert_eq!(state["state"], "expired");
    let late = repo.crew(&["respond", quick, "--as", "user", "approve"]);
    assert_eq!(late.code, 3);
    assert!(late.stderr.contains("expired"), "{}", late.stderr);
}

#[test]
fn follow_streams_new_messages_as_they_arrive() {
    let repo = Repo::init();
    let mut child = Command::new(crew_exe())
        .args(["inbox", "carol", "--follow", "--json"])
        .current_dir(repo.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The follower may not be watching yet; keep sending until one arrives.
    let mut sent = 0;
    let line = poll("the follower to print a message", || {
        repo.ok(&[
            "send",
            "--from",
            "lead",
            "--to",
            "carol",
            &format!("ping {sent}"),
        ]);
        sent += 1;
        rx.recv_timeout(Duration::from_millis(200)).ok()
    });
    let message: Value = serde_json::from_str(&line).unwrap();
    assert!(message["text"].as_str().unwrap().starts_with("ping "));
    repo.ok(&["send", "--from", "lead", "--to", "carol", "last"]);
    poll("the message sent while following", || {
        rx.try_iter().find(|line| line.contains("\"last\""))
    });
    child.kill().unwrap();
    child.wait().unwrap();
}
