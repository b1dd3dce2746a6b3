//! `provider = "command"`: any CLI agent as a teammate, here a small shell script, with real
//! `crew worker` processes. The job's text reaches the command (as `{prompt}` or on stdin), its
//! output streams into the transcript, exit 0 finishes the task (committed and sent to review),
//! another exit code fails it with the output, the person's interrupt kills the whole process
//! group and keeps the task, their next message continues it, the job's wall time kills a
//! command that runs too long, and a missing program is a clear failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{Team, crew_toml};
use crew_test_support::wait::eventually;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

/// A CLI agent: says what it got, fails on FAIL, runs (with a child) until killed on SLOW, and
/// otherwise records the first line of its job in work.txt.
const AGENT_SH: &str = r#"#!/bin/sh
if [ $# -gt 0 ]; then prompt="$1"; else prompt="$(cat)"; fi
first="$(printf '%s\n' "$prompt" | head -n 1)"
echo "agent got: $first"
case "$prompt" in
  *FAIL*) echo "it broke" >&2; exit 3 ;;
  *ESCAPE*) echo pwned > ../../escaped.txt || exit 4 ;;
  *SLOW*) echo $$ > slow.pid; sleep 300 & echo $! > child.pid; wait; exit 0 ;;
esac
printf '%s\n' "$first" >> work.txt
echo "agent done"
"#;

/// A team whose teammate alice (a writing implementer) runs `cmd`, with `extra` lines in her
/// entry and `permissions` lines.
fn command_team(cmd: &str, extra: &str, permissions: &str) -> Team {
    let mut toml = crew_toml(
        "",
        &[],
        &format!("mode = \"ask\"\n{permissions}"),
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 30",
    );
    toml.push_str(&format!(
        "\n[[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nwrites = true\n{extra}\nmodel = {{ provider = \"command\", cmd = {cmd} }}\n"
    ));
    let team = Team::new(&toml, "echo.toml", &[("agent.sh", AGENT_SH)]);
    let script = team.repo.join("agent.sh");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    crate::support::team::git(team.repo.path(), &["commit", "-qam", "executable agent"]);
    team
}

/// What the command printed, as the transcript streamed it.
fn streamed(team: &Team) -> String {
    team.transcript_events("alice")
        .iter()
        .filter(|e| e["type"] == "message_delta")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie is as good as gone: nothing of it runs.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim()
            .starts_with('Z')
    })
}

fn stop(team: &Team, mut worker: crate::support::team::Bg) {
    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(worker.wait(WAIT), Some(0));
}

#[test]
fn a_command_that_succeeds_is_committed_and_sent_to_review_and_one_that_fails_fails_the_task() {
    let team = command_team(r#"["./agent.sh", "{prompt}"]"#, "", "");
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "write the greeting"]);
    let task = team.wait_task("task_1", "review", WAIT);
    assert!(
        task["result"].as_str().unwrap().contains("agent done"),
        "the end of the output is the result: {task}"
    );
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s", "crew/alice", "-1", "--", "work.txt"])
        .current_dir(team.repo.path())
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&log.stdout).trim().is_empty(),
        "crew committed the command's work on alice's branch"
    );
    let work = std::fs::read_to_string(team.repo.join(".worktrees/alice/work.txt")).unwrap();
    assert_eq!(
        work, "Task task_1: write the greeting\n",
        "ran in the worktree"
    );

    team.repo.ok(&["task", "add", "FAIL on purpose"]);
    let failed = team.wait_task("task_2", "failed", WAIT);
    let why = failed["result"].as_str().unwrap();
    assert!(why.contains("exit status: 3"), "{why}");
    assert!(why.contains("it broke"), "stderr is in the reason: {why}");

    let out = streamed(&team);
    assert!(out.contains("agent got: Task task_1"), "{out}");
    assert!(
        out.contains("agent got: Task task_2: FAIL on purpose"),
        "{out}"
    );
    let events = team.transcript_events("alice");
    let ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(ends[0]["result"]["stop_reason"], "completed", "{ends:?}");
    assert_eq!(ends[1]["result"]["stop_reason"], "error", "{ends:?}");
    let used = events.iter().find(|e| e["type"] == "tool_use").unwrap();
    assert_eq!(used["input"]["cmd"][0], "./agent.sh", "{used}");
    // crew's sandbox by default: confined where the kernel allows, else said so.
    let sandbox = used["input"]["sandbox"].as_str().unwrap();
    assert!(
        sandbox == "confined" || sandbox.starts_with("unavailable"),
        "{used}"
    );
    if sandbox == "confined" {
        // Out of its worktree, into the repository: refused, the task fails.
        team.repo.ok(&["task", "add", "ESCAPE the worktree"]);
        let failed = team.wait_task("task_3", "failed", WAIT);
        assert!(!team.repo.join("escaped.txt").exists(), "{failed}");
    }
    stop(&team, alice);
}

#[test]
fn an_interrupt_kills_the_process_group_and_the_next_message_continues_the_task_on_stdin() {
    // The sandbox is off so the script's pids are this machine's (a confined command sees its
    // own pid namespace).
    let team = command_team(r#"["./agent.sh"]"#, "", "sandbox = \"off\"");
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "be SLOW about it"]);
    let wt = team.repo.join(".worktrees/alice");
    let pids: Vec<i32> = eventually("the command and its child to start", WAIT, || {
        let read = |f: &str| {
            std::fs::read_to_string(wt.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some(vec![read("slow.pid")?, read("child.pid")?])
    });
    assert!(pids.iter().all(|&p| alive(p)));

    team.repo.ok(&["interrupt", "alice"]);
    let status = eventually("alice idle with task_1 kept", WAIT, || {
        let s = team.status("alice");
        (s["state"] == "IDLE" && s["task"] == "task_1").then_some(s)
    });
    assert!(
        status["note"]
            .as_str()
            .unwrap()
            .contains("interrupted by the person"),
        "{status}"
    );
    eventually("the whole process group to be gone", WAIT, || {
        pids.iter().all(|&p| !alive(p)).then_some(())
    });
    assert_eq!(team.task("task_1")["status"], "in_progress");

    team.repo
        .ok(&["send", "--from", "user", "--to", "alice", "go on, quickly"]);
    team.wait_task("task_1", "review", WAIT);
    let work = std::fs::read_to_string(wt.join("work.txt")).unwrap();
    assert_eq!(work, "Message from user (message): go on, quickly\n");
    let ends: Vec<Value> = team
        .transcript_events("alice")
        .into_iter()
        .filter(|e| e["type"] == "turn_end")
        .collect();
    assert_eq!(ends[0]["result"]["stop_reason"], "interrupted", "{ends:?}");
    assert_eq!(ends[1]["result"]["stop_reason"], "completed", "{ends:?}");
    stop(&team, alice);
}

#[test]
fn a_command_over_its_wall_time_is_killed_and_a_missing_program_fails_clearly() {
    let team = command_team(
        r#"["./agent.sh", "{prompt}"]"#,
        "budget = { wall_secs = 1 }",
        "",
    );
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "be SLOW forever"]);
    let failed = team.wait_task("task_1", "failed", WAIT);
    let why = failed["result"].as_str().unwrap();
    assert!(why.contains("ran longer than 1 s"), "{why}");
    stop(&team, alice);

    let team = command_team(r#"["no-such-agent-cli", "{prompt}"]"#, "", "");
    let alice = team.worker("alice");
    team.repo.ok(&["task", "add", "anything"]);
    let failed = team.wait_task("task_1", "failed", WAIT);
    let why = failed["result"].as_str().unwrap();
    assert!(
        why.contains("cannot start `no-such-agent-cli`: not found on PATH"),
        "{why}"
    );
    stop(&team, alice);
}

#[test]
fn a_command_teammate_without_cmd_is_refused_naming_the_field() {
    let team = command_team(r#"[]"#, "", "");
    let run = team.repo.crew(&["worker", "--name", "alice"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("provider \"command\" needs `cmd`"),
        "{}",
        run.stderr
    );
}

#[test]
fn without_a_sandbox_the_person_decides_whether_the_command_runs_unconfined() {
    let team = command_team(r#"["./agent.sh", "{prompt}"]"#, "", "");
    let alice = team.spawn_with_env(
        "alice",
        &["worker", "--name", "alice"],
        &[(crew_sandbox::TEST_MISSING_ENV, "landlock")],
    );
    team.repo.ok(&["task", "add", "write it unconfined"]);
    let (first, asked) = team.waiting_request("alice", WAIT);
    assert_eq!(asked["tool"], "command", "{asked}");
    assert!(
        asked["reason"].as_str().unwrap().contains("unavailable"),
        "{asked}"
    );
    team.repo
        .ok(&["respond", &first, "--as", "user", "approve"]);
    team.wait_task("task_1", "review", WAIT);

    team.repo.ok(&["task", "add", "write it again"]);
    let (second, _) = eventually("a second request", WAIT, || {
        let (id, asked) = team.waiting_request("alice", WAIT);
        (id != first).then_some((id, asked))
    });
    team.repo.ok(&[
        "respond",
        &second,
        "--as",
        "user",
        "reject",
        "--note",
        "not today",
    ]);
    let failed = team.wait_task("task_2", "failed", WAIT);
    let why = failed["result"].as_str().unwrap();
    assert!(
        why.contains("not run unconfined: ") && why.contains("not today"),
        "{why}"
    );
    stop(&team, alice);
}
