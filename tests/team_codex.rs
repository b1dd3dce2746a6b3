//! Codex as a teammate, against a fake `codex app-server` that replays transcripts recorded from
//! the real CLI 0.171.0 (`tests/fixtures/codex/`), with real `crew worker` processes: Codex's
//! approval requests go through crew's policy to the person and back (a file change shown as
//! the file it adds), a decline and a cancel reach Codex, a follow-up message is another turn on
//! the same thread, crew's interrupt is Codex's `turn/interrupt`, a restarted worker resumes the
//! thread, and a Codex that is missing, too old, speaking garbage or crashing fails the task
//! with the reason while the worker carries on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::team::{Team, crew_toml, json_lines};
use crew_test_support::wait::eventually;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);
const THREAD: &str = "01a2313f-d7bd-7323-8169-40145767995b";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex")
        .join(name)
}

/// A team whose teammate carol (a writing implementer) is Codex run from `bin`.
fn codex_team(bin: &str) -> Team {
    let mut toml = crew_toml(
        "",
        &[],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str(&format!(
        "\n[[teammate]]\nname = \"carol\"\nrole = \"implementer\"\nwrites = true\nmodel = {{ provider = \"codex\", model = \"gpt-5.5\", bin = \"{bin}\", args = [\"-c\", \"analytics.enabled=false\"] }}\n"
    ));
    Team::new(&toml, "echo.toml", &[])
}

fn fake_team() -> Team {
    codex_team(fixture("fake-codex").to_str().unwrap())
}

/// Starts carol with the fake replaying `sample`; the fake logs what it receives to the
/// returned path.
fn start_carol(
    team: &Team,
    sample: &str,
    env: &[(&str, &str)],
) -> (crate::support::team::Bg, PathBuf) {
    let log = team.repo.join(".crew/fake-codex.log");
    let sample = fixture(sample);
    let mut all = vec![
        ("FAKE_CODEX_SAMPLE", sample.to_str().unwrap().to_string()),
        ("FAKE_CODEX_LOG", log.to_str().unwrap().to_string()),
    ];
    all.extend(env.iter().map(|(k, v)| (*k, v.to_string())));
    let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let bg = team.spawn_with_env("carol", &["worker", "--name", "carol"], &refs);
    (bg, log)
}

/// What crew sent the fake, in order.
fn sent(log: &Path) -> Vec<Value> {
    json_lines(log)
        .into_iter()
        .filter_map(|l| l.get("in").cloned())
        .collect()
}

/// The requests of `method` crew sent.
fn sent_requests(log: &Path, method: &str) -> Vec<Value> {
    sent(log)
        .into_iter()
        .filter(|l| l["method"] == method)
        .collect()
}

/// crew's decisions on approval requests, in order.
fn decisions(log: &Path) -> Vec<String> {
    sent(log)
        .into_iter()
        .filter_map(|l| l["result"]["decision"].as_str().map(str::to_string))
        .collect()
}

/// Waits for carol's next request other than `answered`; its id and the request.
fn next_request(team: &Team, answered: &[String]) -> (String, Value) {
    let id = eventually("carol's next request", WAIT, || {
        let s = team.status("carol");
        let id = s["waiting_on"].as_str()?.to_string();
        (s["state"] == "WAITING" && !answered.contains(&id)).then_some(id)
    });
    let asked = team
        .inbox("lead")
        .into_iter()
        .find(|m| m["request_id"] == id.as_str())
        .expect("the request is in the lead's inbox");
    (id, asked)
}

/// Runs task_1 of the approvals recording, answering the command and the file change.
fn first_task(team: &Team, command: &str, file: &str) -> (String, String) {
    team.repo.ok(&["task", "add", "run a command and patch"]);
    let (first, _) = next_request(team, &[]);
    team.repo.ok(&["respond", &first, "--as", "user", command]);
    let (second, _) = next_request(team, std::slice::from_ref(&first));
    team.repo.ok(&["respond", &second, "--as", "user", file]);
    (first, second)
}

#[test]
fn an_approval_goes_to_the_person_and_back_and_a_decline_reaches_codex() {
    let team = fake_team();
    let (_carol, log) = start_carol(&team, "approvals-followup-interrupt.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "run a command and patch"]);

    // 1. A command outside Codex's sandbox: the mode asks; the person approves.
    let (first, asked) = next_request(&team, &[]);
    assert_eq!(asked["type"], "permission_request", "{asked}");
    assert_eq!(asked["tool"], "bash", "{asked}");
    assert_eq!(
        asked["input"]["command"],
        "/bin/bash -lc 'touch /tmp/x-outside.txt && echo wrote-outside'"
    );
    assert_eq!(
        asked["input"]["reason"],
        "Allow creating /tmp/x-outside.txt?"
    );
    team.repo
        .ok(&["respond", &first, "--as", "user", "approve"]);

    // 2. A new file: shown as the file it adds (from the item's `item/started`); rejected.
    let (second, asked) = next_request(&team, std::slice::from_ref(&first));
    assert_eq!(asked["tool"], "write", "{asked}");
    assert_eq!(asked["input"]["path"], "hello.txt", "{asked}");
    assert_eq!(asked["input"]["content"], "hello world\n", "{asked}");
    team.repo.ok(&[
        "respond",
        &second,
        "--as",
        "user",
        "reject",
        "--note",
        "not that file",
    ]);

    // The approved command changed the worktree: that is the task's commit, waiting for review.
    let done = team.wait_task("task_1", "review", WAIT);
    assert_eq!(done["result"], "Turn 1 done.", "{done}");
    let diff = team.repo.ok(&["review", "diff", "task_1"]);
    assert!(diff.contains("codex-did.txt"), "{diff}");
    assert!(
        !diff.contains("hello.txt"),
        "the declined file was not written: {diff}"
    );
    assert_eq!(decisions(&log), ["accept", "decline"]);

    // The app-server ran in carol's worktree with the configured arguments, and was asked for
    // a thread there that asks crew before what its read-only sandbox does not allow.
    let start = &json_lines(&log)[0];
    let argv: Vec<&str> = start["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(argv, ["app-server", "-c", "analytics.enabled=false"]);
    let worktree = std::fs::canonicalize(team.repo.join(".worktrees/carol")).unwrap();
    assert_eq!(
        std::fs::canonicalize(start["cwd"].as_str().unwrap()).unwrap(),
        worktree
    );
    let thread = &sent_requests(&log, "thread/start")[0]["params"];
    assert_eq!(
        std::fs::canonicalize(thread["cwd"].as_str().unwrap()).unwrap(),
        worktree
    );
    assert_eq!(thread["approvalPolicy"], "on-request");
    assert_eq!(thread["sandbox"], "read-only");
    assert_eq!(thread["model"], "gpt-5.5");
    let init = &sent_requests(&log, "initialize")[0];
    assert_eq!(init["params"]["clientInfo"]["name"], "crew");

    // The transcript holds Codex's work as crew events.
    let events = team.transcript_events("carol");
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in [
        "turn_start",
        "message_start",
        "message_delta",
        "tool_use",
        "permission_asked",
        "permission_answered",
        "tool_result",
        "turn_end",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let output = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "bash")
        .unwrap();
    assert_eq!(output["content"], "wrote-outside\n", "{output}");
    let declined = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "apply_patch")
        .unwrap();
    assert_eq!(declined["is_error"], true, "{declined}");
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["output"], "Turn 1 done.", "{end}");
    assert_eq!(end["result"]["usage"]["output_tokens"], 150, "{end}");

    // Tokens as for other agents: the thread's usage during the turn.
    let record = eventually("carol's usage", WAIT, || {
        let text = std::fs::read_to_string(team.repo.join(".crew/agents/carol.json")).ok()?;
        let record: Value = serde_json::from_str(&text).ok()?;
        (record["state"] == "IDLE").then_some(record)
    });
    assert_eq!(
        record["tokens"], 2550,
        "uncached input and output, as for crew's own agents: {record}"
    );

    team.repo.ok(&["review", "merge", "task_1"]);
    assert!(team.repo.join("codex-did.txt").exists());
}

#[test]
fn a_follow_up_is_a_turn_on_the_same_thread_and_an_interrupt_is_codexs_turn_interrupt() {
    let team = fake_team();
    // Each task is a new Codex thread: the recording goes on where the last process stopped.
    let cursor = team.repo.join(".crew/fake-codex.cursor");
    let (mut carol, log) = start_carol(
        &team,
        "approvals-followup-interrupt.transcript.jsonl",
        &[("FAKE_CODEX_CURSOR", cursor.to_str().unwrap())],
    );
    first_task(&team, "approve", "approve");
    team.wait_task("task_1", "review", WAIT);
    // The approved file change was applied by Codex in the worktree and committed.
    let diff = team.repo.ok(&["review", "diff", "task_1"]);
    assert!(diff.contains("hello.txt"), "{diff}");
    team.wait_state("carol", "IDLE", WAIT);

    team.repo.ok(&[
        "send",
        "--from",
        "lead",
        "--to",
        "carol",
        "follow-up question",
    ]);
    eventually("the second turn", WAIT, || {
        let ends = team
            .transcript_events("carol")
            .into_iter()
            .filter(|e| e["type"] == "turn_end")
            .count();
        (ends == 2).then_some(())
    });
    let turns = sent_requests(&log, "turn/start");
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(
        turns.iter().all(|t| t["params"]["threadId"] == THREAD),
        "{turns:?}"
    );
    let text = turns[1]["params"]["input"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("follow-up question") && text.contains("lead"),
        "{text}"
    );

    // The third turn runs `sleep 30`; the person interrupts it.
    team.wait_state("carol", "IDLE", WAIT);
    team.repo.ok(&["task", "add", "run something slow"]);
    team.wait_state("carol", "WORK", WAIT);
    eventually("the slow command to start", WAIT, || {
        team.transcript_events("carol")
            .iter()
            .any(|e| {
                e["type"] == "tool_use"
                    && e["input"]["command"]
                        .as_str()
                        .unwrap_or("")
                        .contains("sleep 30")
            })
            .then_some(())
    });
    team.repo.ok(&["interrupt", "carol"]);
    let status = eventually("carol idle with task_2 kept", WAIT, || {
        let s = team.status("carol");
        (s["state"] == "IDLE" && s["task"] == "task_2").then_some(s)
    });
    assert!(
        status["note"]
            .as_str()
            .unwrap()
            .contains("interrupted by the person"),
        "{status}"
    );
    assert_eq!(team.task("task_2")["status"], "in_progress");
    let interrupts = sent_requests(&log, "turn/interrupt");
    assert_eq!(interrupts.len(), 1, "{interrupts:?}");
    assert_eq!(interrupts[0]["params"]["threadId"], THREAD);
    assert_eq!(
        interrupts[0]["params"]["turnId"],
        "01a2313f-dd97-7422-a88b-704be6ec7c5d"
    );
    let events = team.transcript_events("carol");
    let closed = events.iter().rfind(|e| e["type"] == "tool_result").unwrap();
    assert!(
        closed["content"]
            .as_str()
            .unwrap()
            .starts_with("interrupted"),
        "the command Codex never completed is closed: {closed}"
    );
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["stop_reason"], "interrupted", "{end}");

    // The person's message continues the task on the same thread, and finishes it.
    team.repo.ok(&[
        "send",
        "--from",
        "user",
        "--to",
        "carol",
        "are you still there",
    ]);
    let done = team.wait_task("task_2", "completed", WAIT);
    assert_eq!(
        done["result"], "Yes, still here after the interrupt.",
        "{done}"
    );
    let starts = json_lines(&log)
        .iter()
        .filter(|l| l.get("argv").is_some())
        .count();
    assert_eq!(
        starts, 2,
        "an app-server (a thread) per task; the follow-up went on in task_1's"
    );

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(carol.wait(WAIT), Some(0));
    assert!(
        json_lines(&log).iter().any(|l| l["eof"] == true),
        "the app-server saw its stdin closed when the worker stopped"
    );
}

#[test]
fn crews_policy_declines_without_asking_and_an_interrupt_while_asked_is_a_cancel() {
    let mut toml = crew_toml(
        "",
        &[],
        "mode = \"ask\"\ndeny = [\"bash(touch:*)\"]",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str(&format!(
        "\n[[teammate]]\nname = \"carol\"\nrole = \"implementer\"\nwrites = true\nmodel = {{ provider = \"codex\", bin = \"{}\" }}\n",
        fixture("fake-codex").display()
    ));
    let team = Team::new(&toml, "echo.toml", &[]);
    let (_carol, log) = start_carol(&team, "decline-cancel.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "run a command and patch"]);

    // The command is refused by a deny rule: Codex hears `decline`, the person is not asked.
    // The file change asks; the person interrupts while it waits, then answers.
    let (asked, request) = next_request(&team, &[]);
    assert_eq!(request["tool"], "write", "{request}");
    team.repo.ok(&["interrupt", "carol"]);
    team.repo
        .ok(&["respond", &asked, "--as", "user", "approve"]);
    eventually("carol idle with task_1 kept", WAIT, || {
        let s = team.status("carol");
        (s["state"] == "IDLE" && s["task"] == "task_1").then_some(())
    });
    assert_eq!(decisions(&log), ["decline", "cancel"]);
    assert!(
        sent_requests(&log, "turn/interrupt").is_empty(),
        "cancel interrupts the turn itself"
    );
    let requests: Vec<Value> = team
        .requests()
        .into_iter()
        .filter(|r| r["type"] == "permission_request")
        .collect();
    assert_eq!(
        requests.len(),
        1,
        "the denied command never reached the person"
    );
    let events = team.transcript_events("carol");
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["stop_reason"], "interrupted", "{end}");
    let patch = events
        .iter()
        .rfind(|e| e["type"] == "tool_result" && e["name"] == "apply_patch")
        .unwrap();
    assert!(
        patch["content"]
            .as_str()
            .unwrap()
            .starts_with("interrupted"),
        "{patch}"
    );
}

#[test]
fn a_restarted_worker_resumes_the_thread() {
    let team = fake_team();
    let (mut carol, _) = start_carol(&team, "approvals-followup-interrupt.transcript.jsonl", &[]);
    first_task(&team, "approve", "reject");
    team.wait_task("task_1", "review", WAIT);
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(carol.wait(Duration::from_secs(15)), Some(0));
    let saved = team.repo.join(".crew/codex/carol.thread");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), THREAD);

    let log = team.repo.join(".crew/fake-codex.log");
    std::fs::remove_file(&log).unwrap();
    let (_carol, log) = start_carol(&team, "resume.transcript.jsonl", &[]);
    team.repo.ok(&[
        "send",
        "--from",
        "lead",
        "--to",
        "carol",
        "follow-up after resume",
    ]);
    eventually("the resumed turn", WAIT, || {
        team.transcript_events("carol")
            .iter()
            .any(|e| {
                e["type"] == "turn_end"
                    && e["result"]["output"] == "Yes, still here after the interrupt."
            })
            .then_some(())
    });
    let resumed = sent_requests(&log, "thread/resume");
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["params"]["threadId"], THREAD);
    assert!(sent_requests(&log, "thread/start").is_empty());
    assert_eq!(
        sent_requests(&log, "turn/start")[0]["params"]["threadId"],
        THREAD
    );
    // Only the resumed turn's tokens count, not the thread's history (6300 of 7350).
    let end = team
        .transcript_events("carol")
        .into_iter()
        .find(|e| {
            e["type"] == "turn_end"
                && e["result"]["input"]
                    .as_str()
                    .unwrap()
                    .contains("after resume")
        })
        .unwrap();
    let usage = &end["result"]["usage"];
    let total: u64 = ["input_tokens", "output_tokens", "cache_read_input_tokens"]
        .iter()
        .map(|k| usage[k].as_u64().unwrap())
        .sum();
    assert_eq!(total, 1050, "{usage}");
}

#[test]
fn a_crash_mid_stream_fails_the_task_and_the_next_task_gets_a_new_process() {
    let team = fake_team();
    let (_carol, log) = start_carol(
        &team,
        "approvals-followup-interrupt.transcript.jsonl",
        &[("FAKE_CODEX_CRASH_AFTER", "12")],
    );
    team.repo.ok(&["task", "add", "first"]);
    let reason = team.failure("task_1", WAIT);
    assert!(reason.contains("Codex exited"), "{reason}");
    assert!(reason.contains("crashed on purpose"), "{reason}");
    let status = team.wait_state("carol", "IDLE", WAIT);
    assert!(
        status["note"]
            .as_str()
            .unwrap_or_default()
            .contains("Codex exited"),
        "{status}"
    );
    let events = team.transcript_events("carol");
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["stop_reason"], "error", "{end}");

    team.repo.ok(&["task", "add", "again"]);
    team.wait_task("task_2", "failed", WAIT);
    let starts = json_lines(&log)
        .iter()
        .filter(|l| l.get("argv").is_some())
        .count();
    assert_eq!(starts, 2, "the dead process is not reused");
}

#[test]
fn a_missing_binary_an_old_version_and_a_line_that_is_not_json_each_fail_clearly() {
    let missing = codex_team("/nonexistent/codex");
    let (_carol, _) = start_carol(
        &missing,
        "approvals-followup-interrupt.transcript.jsonl",
        &[],
    );
    missing.repo.ok(&["task", "add", "anything"]);
    let reason = missing.failure("task_1", WAIT);
    assert!(
        reason.contains("cannot start Codex `/nonexistent/codex`"),
        "{reason}"
    );
    assert!(reason.contains("bin = "), "says how to fix it: {reason}");

    let old = fake_team();
    let (_carol, _) = start_carol(
        &old,
        "approvals-followup-interrupt.transcript.jsonl",
        &[("FAKE_CODEX_VERSION", "0.98.0")],
    );
    old.repo.ok(&["task", "add", "anything"]);
    let reason = old.failure("task_1", WAIT);
    assert!(reason.contains("Codex 0.98.0 is not supported"), "{reason}");

    let garbled = fake_team();
    let (_carol, _) = start_carol(
        &garbled,
        "approvals-followup-interrupt.transcript.jsonl",
        &[("FAKE_CODEX_GARBAGE_AFTER", "6")],
    );
    garbled.repo.ok(&["task", "add", "anything"]);
    let reason = garbled.failure("task_1", WAIT);
    assert!(reason.contains("not JSON-RPC"), "{reason}");
    assert!(reason.contains("this is not json"), "{reason}");
}

#[test]
fn crew_toml_takes_codex_for_teammates_only() {
    let parse = |text: &str| {
        crew_config::TeamConfig::parse(Path::new("/repo/crew.toml"), text)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let lead =
        "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = { provider = \"codex\" }\n";
    let message = parse(lead).unwrap_err();
    assert!(message.contains("teammates only"), "{message}");
    let teammate = format!(
        "{}\n[[teammate]]\nname = \"carol\"\nrole = \"implementer\"\nmodel = {{ provider = \"codex\", bin = \"/opt/codex\", args = [\"-c\", \"x=1\"] }}\n",
        lead.replace("codex", "scripted")
    );
    parse(&teammate).unwrap();
    let reviewer = teammate.clone() + "\n[worktree]\nreview_by = \"carol\"\n";
    let message = parse(&reviewer).unwrap_err();
    assert!(message.contains("is a codex teammate"), "{message}");
}

#[test]
fn the_headless_policy_answers_codex_and_the_run_ends_with_its_work_merged() {
    let team = fake_team();
    let log = team.repo.join(".crew/fake-codex.log");
    let sample = fixture("decline-cancel.transcript.jsonl");
    team.repo.ok(&["task", "add", "run a command and patch"]);
    let mut up = team.spawn_with_env(
        "up",
        &[
            "up",
            "--headless",
            "--approve",
            "allow",
            "--until-done",
            "--merge",
            "auto",
        ],
        &[
            ("FAKE_CODEX_SAMPLE", sample.to_str().unwrap()),
            ("FAKE_CODEX_LOG", log.to_str().unwrap()),
        ],
    );
    // A guard against a hang, not a timing.
    assert_eq!(up.wait(Duration::from_secs(120)), Some(0));
    assert_eq!(team.task("task_1")["status"], "completed");
    // The recording declined and cancelled; the headless policy accepted both, and Codex's
    // command and new file are on main.
    assert_eq!(decisions(&log), ["accept", "accept"]);
    assert!(team.repo.join("codex-did.txt").exists());
    assert_eq!(
        std::fs::read_to_string(team.repo.join("hello.txt")).unwrap(),
        "hello world\n"
    );
    let requests: Vec<Value> = team
        .requests()
        .into_iter()
        .filter(|r| r["type"] == "permission_request")
        .collect();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(
        requests.iter().all(|r| r["state"] == "approved"),
        "{requests:?}"
    );
    assert!(
        json_lines(&log).iter().any(|l| l["eof"] == true),
        "the app-server was closed when the team stopped"
    );
}

#[test]
fn a_thread_codex_no_longer_has_is_replaced_by_a_new_one() {
    let team = fake_team();
    let saved = team.repo.join(".crew/codex/carol.thread");
    std::fs::create_dir_all(saved.parent().unwrap()).unwrap();
    std::fs::write(&saved, "0190ffff-dead-7000-8000-000000000000").unwrap();
    // The kept thread was task_1's (only its own task resumes it).
    let kept_task = team.repo.join(".crew/conversation/carol.task");
    std::fs::create_dir_all(kept_task.parent().unwrap()).unwrap();
    std::fs::write(&kept_task, "task_1").unwrap();
    let (_carol, log) = start_carol(
        &team,
        "approvals-followup-interrupt.transcript.jsonl",
        &[("FAKE_CODEX_NO_THREADS", "1")],
    );
    first_task(&team, "approve", "reject");
    team.wait_task("task_1", "review", WAIT);
    let resumed = sent_requests(&log, "thread/resume");
    assert_eq!(
        resumed[0]["params"]["threadId"],
        "0190ffff-dead-7000-8000-000000000000"
    );
    assert_eq!(sent_requests(&log, "thread/start").len(), 1);
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), THREAD);
}
