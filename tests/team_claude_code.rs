//! Claude Code as a teammate, against a fake `claude` that replays transcripts recorded from the
//! real CLI (`tests/fixtures/claude-code/`), with real `crew worker` processes: the CLI's
//! permission requests go through crew's policy and to the person and back, a denial reaches
//! the CLI, a follow-up message is another line to the same process, the transcript holds the
//! CLI's events, and a CLI that is missing, of another version, speaking garbage or crashing
//! fails the task with the reason while the worker carries on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::team::{Team, crew_toml, json_lines};
use crew_test_support::wait::{BUDGET, eventually};
use serde_json::Value;

const WAIT: Duration = BUDGET;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(name)
}

/// A team whose teammate alice (a writing implementer) is Claude Code run from `bin`.
fn claude_team(bin: &str) -> Team {
    claude_team_in(bin, "ask")
}

/// The same, under permission mode `mode`.
fn claude_team_in(bin: &str, mode: &str) -> Team {
    let model = format!(
        "model = {{ provider = \"claude-code\", model = \"claude-opus-4-8\", bin = \"{bin}\", args = [\"--max-turns\", \"5\"] }}"
    );
    let mut toml = crew_toml(
        "",
        &[],
        &format!("mode = \"{mode}\""),
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str(&format!(
        "\n[[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nwrites = true\n{model}\n"
    ));
    Team::new(&toml, "echo.toml", &[])
}

fn fake_team() -> Team {
    claude_team(fixture("fake-claude").to_str().unwrap())
}

/// Starts alice with the fake replaying `sample`; the fake logs what it receives to the
/// returned path.
fn start_alice(
    team: &Team,
    sample: &str,
    env: &[(&str, &str)],
) -> (crate::support::team::Bg, PathBuf) {
    let log = team.repo.join(".crew/fake-claude.log");
    let sample = fixture(sample);
    let mut all = vec![
        ("FAKE_CLAUDE_SAMPLE", sample.to_str().unwrap()),
        ("FAKE_CLAUDE_LOG", log.to_str().unwrap()),
    ];
    all.extend_from_slice(env);
    let owned: Vec<(String, String)> = all
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let refs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let bg = team.spawn_with_env("alice", &["worker", "--name", "alice"], &refs);
    (bg, log)
}

/// The control responses crew sent, in order.
fn control_responses(log: &Path) -> Vec<Value> {
    json_lines(log)
        .into_iter()
        .filter(|l| l["in"]["type"] == "control_response")
        .map(|l| l["in"]["response"].clone())
        .collect()
}

#[test]
fn a_command_the_mode_allows_runs_without_asking_because_crew_confines_it() {
    // workspace-write allows commands in the worktree: crew runs Claude Code's Bash under its
    // own sandbox (updatedInput), so the mode's allow stands and nobody is asked.
    let team = claude_team_in(fixture("fake-claude").to_str().unwrap(), "workspace-write");
    let (_alice, log) = start_alice(&team, "partial.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "do the things"]);
    let responses = eventually("crew's answers to both calls", WAIT, || {
        let responses = control_responses(&log);
        (responses.len() >= 2).then_some(responses)
    });
    // The Write names a path outside the worktree: the boundary refuses it, without asking.
    assert_eq!(
        responses[0]["response"]["behavior"], "deny",
        "{responses:?}"
    );
    assert_eq!(
        responses[1]["response"]["behavior"], "allow",
        "{responses:?}"
    );
    let command = responses[1]["response"]["updatedInput"]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.contains("sandbox-exec") && command.contains("'echo done > done.txt'"),
        "{command}"
    );
    assert_eq!(
        responses[1]["response"]["updatedInput"]["description"],
        "Mark the work as done"
    );
    let requests = team.repo.ok(&["requests", "--json"]);
    assert!(!requests.contains("permission_request"), "{requests}");
}

#[test]
fn a_permission_goes_to_the_person_and_back_and_a_denial_reaches_the_cli() {
    let team = fake_team();
    let (mut alice, log) = start_alice(&team, "permission-stdio.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "do the things"]);

    // 1. `date > x1`: the mode asks; the person approves with `crew respond`.
    let (first, asked) = team.waiting_request("alice", WAIT);
    assert_eq!(asked["type"], "permission_request", "{asked}");
    assert_eq!(
        asked["tool"], "bash",
        "crew's name for Claude Code's Bash: {asked}"
    );
    assert_eq!(
        asked["input"]["command"], "date > /home/dev/project/x1",
        "{asked}"
    );
    team.repo
        .ok(&["respond", &first, "--as", "user", "approve"]);

    // 2. `date > x2`: the person rejects it, and says why.
    let second = eventually("the second request", WAIT, || {
        let s = team.status("alice");
        let id = s["waiting_on"].as_str()?.to_string();
        (s["state"] == "WAITING" && id != first).then_some(id)
    });
    team.repo.ok(&[
        "respond",
        &second,
        "--as",
        "user",
        "reject",
        "--note",
        "not that one",
    ]);

    // 3. Write outside the worktree: crew's workspace boundary refuses it without asking.
    // The allowed command changed the worktree: that is the task's commit, waiting for review.
    let done = team.wait_task("task_1", "review", WAIT);
    assert_eq!(done["result"], "Finished.", "{done}");
    let diff = team.repo.ok(&["review", "diff", "task_1"]);
    assert!(diff.contains("claude-did.txt"), "{diff}");
    assert!(diff.contains("x1"), "{diff}");

    let responses = control_responses(&log);
    assert_eq!(responses.len(), 3, "{responses:?}");
    assert_eq!(responses[0]["response"]["behavior"], "allow");
    // Allowed, the command comes back as updatedInput run by crew's sandbox helper.
    let command = responses[0]["response"]["updatedInput"]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.contains("sandbox-exec") && command.contains("'date > /home/dev/project/x1'"),
        "{command}"
    );
    assert_eq!(responses[1]["response"]["behavior"], "deny");
    assert_eq!(responses[1]["response"]["message"], "not that one");
    assert_eq!(responses[2]["response"]["behavior"], "deny");
    let boundary = responses[2]["response"]["message"].as_str().unwrap();
    assert!(boundary.contains("/home/dev/project/w.txt"), "{boundary}");
    let requests = team.requests();
    assert_eq!(
        requests.len(),
        2,
        "the refused write never reached the person: {requests:?}"
    );

    // The process ran with the protocol flags and the configured ones, in alice's worktree.
    let start = &json_lines(&log)[0];
    let argv: Vec<&str> = start["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    for flag in [
        "-p",
        "stream-json",
        "--verbose",
        "--permission-prompt-tool",
        "stdio",
        "claude-opus-4-8",
        "--max-turns",
    ] {
        assert!(argv.contains(&flag), "{flag} missing from {argv:?}");
    }
    // Not the worktree's `.claude/` settings, which alice could write.
    assert!(
        argv.windows(2).any(|w| w == ["--setting-sources", "user"]),
        "{argv:?}"
    );
    let cwd = std::fs::canonicalize(start["cwd"].as_str().unwrap()).unwrap();
    assert_eq!(
        cwd,
        std::fs::canonicalize(team.repo.join(".worktrees/alice")).unwrap()
    );

    // The transcript holds the CLI's work as crew events, the denial as the CLI reported it.
    let events = team.transcript_events("alice");
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for kind in [
        "turn_start",
        "message_start",
        "tool_use",
        "permission_asked",
        "permission_answered",
        "tool_result",
        "message_delta",
        "turn_end",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let denied = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["is_error"] == true)
        .expect("a denied tool result");
    assert_eq!(denied["content"], "not that one", "{denied}");
    assert_eq!(denied["name"], "Bash", "{denied}");
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["output"], "Finished.", "{end}");

    // Cost comes from the CLI's result (its `total_cost_usd`, $0.004).
    team.wait_state("alice", "IDLE", WAIT);
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(team.repo.join(".crew/agents/alice.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["cost_micros"], 4000, "{record}");
    // ... and is the task's, in the review queue and the team's status.
    assert_eq!(team.task("task_1")["usage"]["costMicros"], 4000);
    let queue = team.repo.ok(&["review", "list"]);
    assert!(queue.contains("$0.0040"), "{queue}");
    let status = team.repo.ok(&["status"]);
    assert!(
        status.contains("task_1 review: ") && status.contains("$0.0040"),
        "{status}"
    );

    let transcript = std::fs::read_dir(team.repo.join(".crew/transcripts/alice"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let replay = team.repo.ok(&["replay", transcript.to_str().unwrap()]);
    assert!(replay.contains("Finished."), "{replay}");
    assert!(replay.contains("not that one"), "{replay}");

    // The person merges the reviewed task: Claude Code's change is on main.
    team.repo.ok(&["review", "merge", "task_1"]);
    assert_eq!(team.task("task_1")["status"], "completed");
    assert!(team.repo.join("claude-did.txt").exists());

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(15)), Some(0));
    assert!(
        json_lines(&log).iter().any(|l| l["eof"] == true),
        "the CLI saw its stdin closed when the worker stopped"
    );
}

#[test]
fn a_follow_up_message_is_another_line_to_the_same_process() {
    let team = fake_team();
    let (_alice, log) = start_alice(&team, "run1.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "first message"]);
    let done = team.wait_task("task_1", "completed", WAIT);
    assert_eq!(done["result"], "Reply one.", "{done}");
    team.wait_state("alice", "IDLE", WAIT);

    team.repo
        .ok(&["send", "--from", "lead", "--to", "alice", "second message"]);
    eventually("the second turn's events", WAIT, || {
        let ends = team
            .transcript_events("alice")
            .into_iter()
            .filter(|e| e["type"] == "turn_end")
            .count();
        (ends == 2).then_some(())
    });
    let lines = json_lines(&log);
    let starts = lines.iter().filter(|l| l.get("argv").is_some()).count();
    assert_eq!(starts, 1, "one process for the conversation: {lines:?}");
    let users: Vec<&Value> = lines.iter().filter(|l| l["in"]["type"] == "user").collect();
    assert_eq!(users.len(), 2, "{users:?}");
    let second = users[1]["in"]["message"]["content"].as_str().unwrap();
    assert!(second.contains("second message"), "{second}");
    assert!(second.contains("lead"), "the sender is named: {second}");
    let events = team.transcript_events("alice");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_result" && e["content"] == "second"),
        "the second turn's tool result is in the transcript"
    );
    // The CLI's `total_cost_usd` counts the session ($0.001, then $0.003): each job adds only
    // its own share.
    let record = eventually("the second job's cost", WAIT, || {
        let text = std::fs::read_to_string(team.repo.join(".crew/agents/alice.json")).ok()?;
        let record: Value = serde_json::from_str(&text).ok()?;
        (record["state"] == "IDLE" && record["turns"] != 1).then_some(record)
    });
    assert_eq!(record["cost_micros"], 3000, "{record}");
}

#[test]
fn a_crash_mid_stream_fails_the_task_with_the_reason_and_the_next_task_gets_a_new_process() {
    let team = fake_team();
    let (_alice, log) = start_alice(
        &team,
        "run1.transcript.jsonl",
        &[("FAKE_CLAUDE_CRASH_AFTER", "1")],
    );
    team.repo.ok(&["task", "add", "first message"]);
    let reason = team.failure("task_1", WAIT);
    assert!(reason.contains("Claude Code exited mid-turn"), "{reason}");
    assert!(reason.contains("crashed on purpose"), "{reason}");
    let status = team.wait_state("alice", "IDLE", WAIT);
    assert!(
        status["note"]
            .as_str()
            .unwrap_or_default()
            .contains("exited mid-turn"),
        "{status}"
    );
    let events = team.transcript_events("alice");
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
fn a_missing_binary_a_wrong_version_and_a_line_that_is_not_json_each_fail_clearly() {
    let missing = claude_team("/nonexistent/claude");
    let (_alice, _) = start_alice(&missing, "run1.transcript.jsonl", &[]);
    missing.repo.ok(&["task", "add", "anything"]);
    let reason = missing.failure("task_1", WAIT);
    assert!(
        reason.contains("cannot start Claude Code `/nonexistent/claude`"),
        "{reason}"
    );
    assert!(reason.contains("bin = "), "says how to fix it: {reason}");

    let old = fake_team();
    let (_alice, _) = start_alice(
        &old,
        "run1.transcript.jsonl",
        &[("FAKE_CLAUDE_VERSION", "1.0.3")],
    );
    old.repo.ok(&["task", "add", "anything"]);
    let reason = old.failure("task_1", WAIT);
    assert!(
        reason.contains("Claude Code 1.0.3 is not supported"),
        "{reason}"
    );

    let garbled = fake_team();
    let (_alice, _) = start_alice(
        &garbled,
        "run1.transcript.jsonl",
        &[("FAKE_CLAUDE_GARBAGE_AFTER", "1")],
    );
    garbled.repo.ok(&["task", "add", "anything"]);
    let reason = garbled.failure("task_1", WAIT);
    assert!(reason.contains("not JSON"), "{reason}");
    assert!(reason.contains("this is not json"), "{reason}");
}

#[test]
fn crew_toml_says_where_claude_code_settings_do_not_belong() {
    let parse = |text: &str| {
        crew_config::TeamConfig::parse(Path::new("/repo/crew.toml"), text)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    // A Claude Code lead plans through `crew mcp`; one that would write files is refused.
    let lead = "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = { provider = \"claude-code\" }\n";
    parse(lead).unwrap();
    let writing_lead = lead.replace("[lead]\n", "[lead]\nwrites = true\n");
    let message = parse(&writing_lead).unwrap_err();
    assert!(
        message.starts_with("/repo/crew.toml:6:") && message.contains("does not change files"),
        "{message}"
    );
    let misplaced = "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = { provider = \"anthropic\", bin = \"claude\" }\n";
    let message = parse(misplaced).unwrap_err();
    assert!(
        message.contains(
            "`bin` and `args` are for provider \"claude-code\" or \"codex\", not \"anthropic\""
        ),
        "{message}"
    );
    let teammate = format!(
        "{}\n[[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nmodel = {{ provider = \"claude-code\", args = [\"--max-turns\", \"3\"] }}\n",
        lead.replace("claude-code", "scripted")
    );
    parse(&teammate).unwrap();
    let reviewer = teammate.clone() + "\n[worktree]\nreview_by = \"alice\"\n";
    let message = parse(&reviewer).unwrap_err();
    assert!(message.contains("is a claude-code teammate"), "{message}");
}

#[test]
fn the_headless_policy_answers_the_cli_and_the_run_ends_when_its_task_is_done() {
    let team = fake_team();
    let log = team.repo.join(".crew/fake-claude.log");
    let sample = fixture("permission-stdio.transcript.jsonl");
    team.repo.ok(&["task", "add", "do the things"]);
    let mut up = team.spawn_with_env(
        "up",
        &["up", "--headless", "--approve", "deny", "--until-done"],
        &[
            ("FAKE_CLAUDE_SAMPLE", sample.to_str().unwrap()),
            ("FAKE_CLAUDE_LOG", log.to_str().unwrap()),
        ],
    );
    // A guard against a hang, not a timing.
    assert_eq!(up.wait(Duration::from_secs(120)), Some(0));
    assert_eq!(team.task("task_1")["status"], "completed");
    let responses = control_responses(&log);
    let behaviours: Vec<&str> = responses
        .iter()
        .map(|r| r["response"]["behavior"].as_str().unwrap())
        .collect();
    assert_eq!(behaviours, ["deny", "deny", "deny"], "{responses:?}");
    let requests: Vec<Value> = team
        .requests()
        .into_iter()
        .filter(|r| r["type"] == "permission_request")
        .collect();
    assert_eq!(
        responses[0]["response"]["message"], "headless policy: --approve deny",
        "{responses:?}"
    );
    assert_eq!(
        requests.len(),
        2,
        "the two commands were asked: {requests:?}"
    );
    assert!(
        requests.iter().all(|r| r["state"] == "rejected"),
        "{requests:?}"
    );
    assert!(
        json_lines(&log).iter().any(|l| l["eof"] == true),
        "the CLI was closed when the team stopped"
    );
}

/// The argv of each process the fake was started as, in order.
fn starts(log: &Path) -> Vec<Vec<String>> {
    json_lines(log)
        .iter()
        .filter_map(|l| l["argv"].as_array().cloned())
        .map(|argv| {
            argv.iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// alice (replaying run1) completes task_1, then the team goes down; the fake's log.
fn first_task_then_down(team: &Team) -> PathBuf {
    let (mut alice, log) = start_alice(team, "run1.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "first message"]);
    team.wait_task("task_1", "completed", WAIT);
    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(15)), Some(0));
    log
}

/// A restarted worker resumes the kept session for what continues it (a message), forgets one
/// the CLI cannot resume, and never resumes it into another task.
#[test]
fn a_restarted_worker_resumes_the_cli_session_and_forgets_one_the_cli_cannot_resume() {
    let team = fake_team();
    let log = first_task_then_down(&team);
    let saved = team.repo.join(".crew/claude-code/alice.session");
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap(),
        "bad14e49-1db8-4a34-8cf2-e1005acda7a7"
    );

    // Started again, the CLI is asked to resume the recorded session; this one dies before it
    // says `init` (as a CLI refusing an unknown session would), so the id is forgotten.
    let (_alice, _) = start_alice(
        &team,
        "run1.transcript.jsonl",
        &[("FAKE_CLAUDE_CRASH_AFTER", "0")],
    );
    team.repo
        .ok(&["send", "--from", "user", "--to", "alice", "second"]);
    eventually("the resumed CLI's death in alice's note", WAIT, || {
        let note = team.status("alice")["note"].as_str()?.to_string();
        note.contains("exited mid-turn").then_some(())
    });
    team.repo.ok(&["task", "add", "third"]);
    team.wait_task("task_2", "failed", WAIT);

    let argvs = starts(&log);
    assert_eq!(argvs.len(), 3, "{argvs:?}");
    assert!(!argvs[0].contains(&"--resume".to_string()), "{argvs:?}");
    let resume = argvs[1].iter().position(|a| a == "--resume").unwrap();
    assert_eq!(argvs[1][resume + 1], "bad14e49-1db8-4a34-8cf2-e1005acda7a7");
    assert!(
        !argvs[2].contains(&"--resume".to_string()),
        "a session that could not be resumed is not tried again: {argvs:?}"
    );
    assert!(!saved.exists());
}

/// A restarted worker never resumes task_1's session into task_2: the CLI starts afresh.
#[test]
fn a_new_task_never_resumes_the_previous_tasks_session() {
    let team = fake_team();
    let log = first_task_then_down(&team);
    assert!(team.repo.join(".crew/claude-code/alice.session").exists());
    let (_alice, _) = start_alice(&team, "run1.transcript.jsonl", &[]);
    team.repo.ok(&["task", "add", "second"]);
    team.wait_task("task_2", "completed", WAIT);
    let argvs = starts(&log);
    assert_eq!(argvs.len(), 2, "{argvs:?}");
    assert!(
        argvs.iter().all(|a| !a.contains(&"--resume".to_string())),
        "{argvs:?}"
    );
}

#[test]
fn the_cli_gets_its_own_credentials_and_no_others() {
    let team = fake_team();
    let (_alice, log) = start_alice(
        &team,
        "run1.transcript.jsonl",
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-test-0123456789"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "oauth-test-0123456789"),
            ("OPENAI_API_KEY", "sk-openai-test-0123456789"),
            ("AWS_SECRET_ACCESS_KEY", "aws-test-0123456789"),
        ],
    );
    team.repo.ok(&["task", "add", "first message"]);
    team.wait_task("task_1", "completed", WAIT);
    let env = json_lines(&log)[0]["env"].clone();
    assert_eq!(env["ANTHROPIC_API_KEY"], "sk-ant-test-0123456789", "{env}");
    assert_eq!(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9", "{env}");
    assert_eq!(
        env["CLAUDE_CODE_OAUTH_TOKEN"], "oauth-test-0123456789",
        "{env}"
    );
    assert!(env.get("OPENAI_API_KEY").is_none(), "{env}");
    assert!(env.get("AWS_SECRET_ACCESS_KEY").is_none(), "{env}");
}

#[test]
fn crew_interrupt_sends_the_clis_interrupt_keeps_the_task_and_a_message_continues_it() {
    let team = fake_team();
    // The recording's third turn is the one its host interrupted; each task is a new CLI
    // conversation, which goes on in the recording where the last one stopped.
    let cursor = team.repo.join(".crew/fake-claude.cursor");
    let (mut alice, log) = start_alice(
        &team,
        "run1.transcript.jsonl",
        &[("FAKE_CLAUDE_CURSOR", cursor.to_str().unwrap())],
    );
    for subject in ["one", "two"] {
        team.repo.ok(&["task", "add", subject]);
    }
    team.wait_task("task_2", "completed", WAIT);
    team.repo.ok(&["task", "add", "three: please be slow"]);
    team.wait_state("alice", "WORK", WAIT);

    team.repo.ok(&["interrupt", "alice"]);
    let status = eventually("alice idle with task_3 kept", WAIT, || {
        let s = team.status("alice");
        (s["state"] == "IDLE" && s["task"] == "task_3").then_some(s)
    });
    assert!(
        status["note"]
            .as_str()
            .unwrap()
            .contains("interrupted by the person"),
        "{status}"
    );
    let task = team.task("task_3");
    assert_eq!(task["status"], "in_progress", "{task}");
    assert_eq!(task["owner"], "alice", "{task}");
    let sent: Vec<Value> = json_lines(&log)
        .into_iter()
        .filter(|l| l["in"]["type"] == "control_request")
        .collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["in"]["request"]["subtype"], "interrupt");
    let events = team.transcript_events("alice");
    let end = events.iter().rfind(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["result"]["stop_reason"], "interrupted", "{end}");
    assert_eq!(
        end["result"]["reason"], "interrupted by the person",
        "{end}"
    );

    // The person's next message continues the task in the same process, and finishes it.
    team.repo
        .ok(&["send", "--from", "user", "--to", "alice", "go on, quickly"]);
    team.wait_task("task_3", "completed", WAIT);
    let starts = json_lines(&log)
        .iter()
        .filter(|l| l.get("argv").is_some())
        .count();
    assert_eq!(
        starts, 3,
        "a CLI process (a conversation) per task; the message went on in task_3's"
    );

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(WAIT), Some(0));
}
