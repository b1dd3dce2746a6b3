//! `crew up --headless`: a progress line per event a person cares about (or JSON lines), and an
//! `--until-done` that ends, with the reason and exit 4, when the team cannot reach its goal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::{BUDGET, eventually_showing};
use serde_json::Value;

/// A guard against a hang, not a timing.
const HANG: Duration = Duration::from_secs(120);

/// The lead plans one task (its subject carries an escape sequence); alice gives up on it.
const GIVES_UP: &str = r#"
[[rule]]
role = "lead"
turn = 0
text = "Planning."
[[rule.tool_call]]
name = "task_create"
input = { subject = "build \u001b[2J it" }

[[rule]]
agent = "alice"
turn = 0
text = "Giving up."
[[rule.tool_call]]
name = "task_update"
input = { id = "task_1", status = "failed", result = "the tool chain is missing" }

[[rule]]
text = "Noted: {last_user}"
"#;

fn team(scenario: &str) -> Team {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "")],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 300\nheartbeat_secs = 1",
    );
    Team::new(&toml, "echo.toml", &[("scenario.toml", scenario)])
}

fn log(team: &Team, label: &str) -> String {
    std::fs::read_to_string(team.repo.join(&format!(".crew/test-{label}.log"))).unwrap()
}

#[test]
fn a_lead_that_creates_no_task_ends_the_run_with_exit_4_and_the_reason() {
    // The echo lead answers the goal with text and no task: zero tasks is not "forever".
    let team = team("[[rule]]\ntext = \"I would rather chat: {last_user}\"\n");
    let mut up = team.spawn(
        "up",
        &[
            "up",
            "--headless",
            "--goal",
            "add a sub function",
            "--until-done",
        ],
    );
    assert_eq!(up.wait(HANG), Some(4), "{}", log(&team, "up"));
    let out = log(&team, "up");
    assert!(
        out.contains("the lead ended its turn without creating a task: I would rather chat"),
        "{out}"
    );
    assert!(out.contains("started alice"), "{out}");
    assert_eq!(team.status("alice")["state"], "SHUTDOWN");
}

#[test]
fn every_task_failed_exits_4_naming_each_failure_with_escaped_progress_lines() {
    let team = team(GIVES_UP);
    let mut up = team.spawn(
        "up",
        &["up", "--headless", "--goal", "build it", "--until-done"],
    );
    assert_eq!(up.wait(HANG), Some(4), "{}", log(&team, "up"));
    let out = log(&team, "up");
    assert!(
        !out.contains('\u{1b}'),
        "the subject reached the terminal raw: {out}"
    );
    for line in [
        "task_1 created: build \\u{1b}[2J it",
        "task_1 claimed by alice",
        "task_1 failed (alice): the tool chain is missing",
        "failed: task_1 (build \\u{1b}[2J it): the tool chain is missing",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
}

#[test]
fn json_progress_is_one_object_per_line_with_a_type() {
    let team = team(GIVES_UP);
    let mut up = team.spawn(
        "up",
        &[
            "up",
            "--headless",
            "--json",
            "--goal",
            "build it",
            "--until-done",
        ],
    );
    assert_eq!(up.wait(HANG), Some(4), "{}", log(&team, "up"));
    let out = log(&team, "up");
    let events: Vec<Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        events[0],
        serde_json::json!({"type": "team", "simulator": true})
    );
    for kind in ["agent", "task_created", "task_claimed", "task_failed"] {
        assert!(types.contains(&kind), "no {kind} in {types:?}\n{out}");
    }
    let failed = events.iter().find(|e| e["type"] == "task_failed").unwrap();
    assert_eq!(failed["reason"], "the tool chain is missing", "{failed}");
    let created = events.iter().find(|e| e["type"] == "task_created").unwrap();
    assert_eq!(created["subject"], "build \u{1b}[2J it", "{created}");
}

#[test]
fn a_waiting_permission_request_is_shown_with_its_answer_and_a_stop_ends_its_asker_at_once() {
    let toml = crew_toml(
        "",
        &[("alice", "implementer", "writes = true")],
        "mode = \"ask\"\nsandbox = \"off\"",
        // A grace period far longer than the test may wait: the stop must not sit through it.
        "idle_poll_secs = 1\nidle_timeout_secs = 300\nheartbeat_secs = 1\nrequest_timeout_secs = 600",
    );
    let team = Team::new(&toml, "test_ask.toml", &[]);
    team.repo.ok(&["task", "add", "touch asked.txt"]);
    let mut up = team.spawn("up", &["up", "--headless"]);
    let (id, _) = team.waiting_request("alice", BUDGET);
    eventually_showing("the request's progress line", BUDGET, || {
        let out = log(&team, "up");
        let found = out.lines().any(|l| {
            l.starts_with(&format!("waiting, {id} from alice: alice asks to use bash"))
                && l.ends_with(&format!(
                    "answer with `crew respond {id} --as user approve|reject`"
                ))
        });
        if found { Ok(()) } else { Err(out) }
    });
    let down = team.repo.crew(&["down", "--timeout", "600"]);
    assert_eq!(down.code, 0, "{}\n{}", down.stderr, down.stdout);
    assert_eq!(up.wait(HANG), Some(0), "{}", log(&team, "up"));
    let out = log(&team, "up");
    assert!(
        out.contains("alice died (ended at the stop while it only waited on a permission request)"),
        "{out}"
    );
}

/// A model server on loopback that answers every request with `reply`; its base URL.
fn model_server(reply: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(&mut stream, reply);
        }
    });
    url
}

fn anthropic_lead_team(url: &str) -> Team {
    let toml = format!(
        "[team]\nname = \"test\"\nbase_branch = \"main\"\n\n[lead]\nname = \"lead\"\nmodel = {{ provider = \"anthropic\", model = \"claude-test\", base_url = \"{url}\" }}\n\n[[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nmodel = {{ provider = \"scripted\", scenario = \"scenario.toml\" }}\n\n[permissions]\nmode = \"ask\"\n\n[worker]\nidle_poll_secs = 1\nidle_timeout_secs = 300\nheartbeat_secs = 1\n"
    );
    Team::new(&toml, "echo.toml", &[])
}

/// `crew up --headless --until-done` with the lead on the model at `url`, which must end it with
/// exit 4; what the run printed.
fn lead_gives_up(url: &str) -> String {
    let team = anthropic_lead_team(url);
    let mut up = team.spawn_with_env(
        "up",
        &["up", "--headless", "--goal", "plan it", "--until-done"],
        &[("ANTHROPIC_API_KEY", "sk-test-not-a-key")],
    );
    assert_eq!(up.wait(HANG), Some(4), "{}", log(&team, "up"));
    log(&team, "up")
}

#[test]
fn a_lead_whose_model_refuses_ends_the_run_with_exit_4_and_the_error() {
    // A 400 is not retried: the lead's turn fails for good at once.
    let url = model_server(
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 79\r\n\r\n{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad model\"}}",
    );
    let out = lead_gives_up(&url);
    assert!(out.contains("the lead's turn failed: "), "{out}");
    assert!(out.contains("bad model"), "{out}");
}

/// A model server on loopback that starts every answer and never finishes it: a slow model's
/// long reply. Returns its base URL.
fn never_finishing_model() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n",
            );
            held.push(stream);
        }
    });
    url
}

#[test]
fn a_stop_cancels_a_lead_inside_a_long_turn_after_the_grace_period() {
    let team = anthropic_lead_team(&never_finishing_model());
    let mut up = team.spawn_with_env(
        "up",
        &["up", "--headless", "--goal", "think long"],
        &[("ANTHROPIC_API_KEY", "sk-test-not-a-key")],
    );
    team.wait_state("lead", "WORK", BUDGET);
    let down = team.repo.crew(&["down", "--timeout", "5"]);
    assert_eq!(down.code, 0, "{}\n{}", down.stderr, down.stdout);
    // Before, the stop waited for the reply's end, which never comes.
    assert_eq!(up.wait(HANG), Some(0), "{}", log(&team, "up"));
    let lead = team.status("lead");
    assert_eq!(lead["state"], "SHUTDOWN", "{lead}");
}

#[test]
fn a_lead_model_that_keeps_failing_is_shown_retrying_before_the_run_ends() {
    // Rate limited on every call, retry at once: each retry is a progress line as it happens,
    // not only a log entry, and the lead's failed turn ends the run.
    let url = model_server(
        b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after-ms: 1\r\nconnection: close\r\ncontent-length: 74\r\n\r\n{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}",
    );
    let out = lead_gives_up(&url);
    for attempt in 2..=6 {
        let line = format!("; attempt {attempt} of 6 in 0.0s");
        assert!(
            out.lines()
                .any(|l| l.starts_with("lead: the model call failed, retrying: ")
                    && l.contains("slow down")
                    && l.ends_with(&line)),
            "no retry line for attempt {attempt}:\n{out}"
        );
    }
    let failed = out.find("the lead's turn failed: ").expect(&out);
    assert!(out.find("; attempt 6 of 6").unwrap() < failed, "{out}");

    let team = anthropic_lead_team(&url);
    let mut up = team.spawn_with_env(
        "json",
        &[
            "up",
            "--headless",
            "--json",
            "--goal",
            "plan it",
            "--until-done",
        ],
        &[("ANTHROPIC_API_KEY", "sk-test-not-a-key")],
    );
    assert_eq!(up.wait(HANG), Some(4), "{}", log(&team, "json"));
    let retries: Vec<Value> = log(&team, "json")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "recovery")
        .collect();
    // Five per failed turn (a notice that reaches the lead during the stop may start another).
    assert!(retries.len() >= 5, "{retries:?}");
    assert!(
        retries
            .iter()
            .all(|v| v["agent"] == "lead" && v["kind"] == "model_retry")
    );
}
