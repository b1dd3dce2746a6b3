//! Lasting conversations with real `crew worker` processes: the lead answers a follow-up from
//! the plan it made earlier, also after the team is stopped and started again; a teammate killed with
//! SIGKILL mid-task and restarted continues that task's conversation (the cut call gets its
//! interrupted result).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crate::support::team::{SLOW_SH, Team, crew_toml, signal};
use crew_test_support::wait::{BUDGET, eventually};

/// The assistant texts of `agent`'s conversation `key`, as kept on disk.
fn said(team: &Team, agent: &str, key: &str) -> Vec<String> {
    let path = team
        .repo
        .join(&format!(".crew/conversations/{agent}/{key}.jsonl"));
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| {
            m["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|b| b["text"].as_str().map(str::to_string))
        })
        .collect()
}

fn wait_said(team: &Team, agent: &str, key: &str, needle: &str) -> String {
    eventually(&format!("{agent} to say {needle:?}"), BUDGET, || {
        said(team, agent, key)
            .into_iter()
            .find(|t| t.contains(needle))
    })
}

fn tell(team: &Team, to: &str, text: &str) {
    team.repo.ok(&["send", "--from", "user", "--to", to, text]);
}

#[test]
fn the_lead_answers_a_follow_up_from_its_plan_also_after_the_team_restarts() {
    let toml = crew_toml(
        "",
        &[],
        "mode = \"ask\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 5",
    );
    let team = Team::new(&toml, "test_resume.toml", &[]);
    let up = |label: &str| team.spawn(label, &["up", "--headless"]);
    let mut first = up("up-1");
    tell(&team, "lead", "make a plan for a calculator");
    wait_said(&team, "lead", "lead", "PLAN-7: add, then sub.");
    tell(&team, "lead", "now also add div");
    let answer = wait_said(&team, "lead", "lead", "Extending PLAN-7");
    assert!(answer.contains("now also add div"), "{answer}");

    // The person ends the team (SIGTERM, as ctrl-c in a headless run) and starts it again.
    signal(first.pid, libc::SIGTERM);
    assert_eq!(first.wait(Duration::from_secs(20)), Some(0));
    let _second = up("up-2");
    // A new process: the plan is only known from the conversation kept on disk.
    tell(&team, "lead", "and also add mul");
    let answer = wait_said(&team, "lead", "lead", "and also add mul");
    assert!(answer.starts_with("Extending PLAN-7"), "{answer}");
    assert!(
        !said(&team, "lead", "lead")
            .iter()
            .any(|t| t.starts_with("No plan")),
        "{:?}",
        said(&team, "lead", "lead")
    );
    // Every turn, in both processes, started from the same cacheable prefix.
    let fingerprints: std::collections::BTreeSet<String> =
        std::fs::read_dir(team.repo.join(".crew/transcripts/lead"))
            .unwrap()
            .flat_map(|e| {
                std::fs::read_to_string(e.unwrap().path())
                    .unwrap()
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .filter(|l| l["event"]["type"] == "turn_start")
                    .map(|l| {
                        l["event"]["prefix_fingerprint"]
                            .as_str()
                            .unwrap()
                            .to_string()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
    assert_eq!(fingerprints.len(), 1, "{fingerprints:?}");
}

/// alice alone (an implementer that does not write) playing test_resume.toml, with slow.sh.
fn slow_alice() -> Team {
    let toml = crew_toml(
        "test_command = \"sh slow.sh\"",
        &[("alice", "implementer", "")],
        "mode = \"ask\"\nallow = [\"bash(sh slow.sh)\"]\nsandbox = \"off\"",
        "idle_poll_secs = 1\nidle_timeout_secs = 120\nheartbeat_secs = 1\nrequest_timeout_secs = 60",
    );
    Team::new(&toml, "test_resume.toml", &[("slow.sh", SLOW_SH)])
}

#[test]
fn a_killed_teammate_restarted_continues_its_task_conversation() {
    let team = slow_alice();
    team.repo.ok(&["task", "add", "a slow task"]);
    let mut up = team.spawn(
        "up",
        &["up", "--headless", "--approve", "allow", "--until-done"],
    );
    eventually("the slow step to start", BUDGET, || {
        team.repo.join(".crew/slow-once").exists().then_some(())
    });
    let pid = u32::try_from(team.status("alice")["pid"].as_u64().unwrap()).unwrap();
    signal(pid, libc::SIGKILL);
    team.wait_state("alice", "DEAD", BUDGET);

    let run = team.repo.crew(&["worker", "restart", "alice"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done = team.wait_task("task_1", "completed", BUDGET);
    // The restarted worker's first reply saw the call the kill cut, with its interrupted result.
    assert_eq!(
        done["result"], "Resumed after: tool call interrupted",
        "{done}"
    );
    assert_eq!(
        said(&team, "alice", "task_1"),
        [
            "Running the slow step.",
            "Resumed after: tool call interrupted"
        ]
    );
    assert_eq!(up.wait(Duration::from_secs(30)), Some(0));
}

#[test]
fn crew_interrupt_stops_a_long_tool_keeps_the_task_and_a_message_resumes_it() {
    let team = slow_alice();
    let mut alice = team.worker("alice");
    team.repo.ok(&["task", "add", "a slow task"]);
    let slow: u32 = eventually("the slow step to start", BUDGET, || {
        std::fs::read_to_string(team.repo.join(".crew/slow.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    team.repo.ok(&["interrupt", "alice"]);
    let stopped = eventually("alice to stop", BUDGET, || {
        let s = team.status("alice");
        (s["state"] == "IDLE").then_some(s)
    });
    assert_eq!(stopped["task"], "task_1", "{stopped}");
    assert!(
        stopped["note"]
            .as_str()
            .is_some_and(|n| n.contains("interrupted by the person")),
        "{stopped}"
    );
    // The tool's whole process group is gone (sh and its sleep; killed ones may take a moment
    // to be reaped), ended rather than finished: the sleep did not run to its end.
    eventually("slow.sh and its sleep to end", BUDGET, || {
        // SAFETY: signal 0 only asks whether a process of the group exists.
        let group = unsafe { libc::kill(-(slow as libc::pid_t), 0) };
        (!crew_store::pid_alive(slow) && group == -1).then_some(())
    });
    assert!(
        !team.repo.join(".crew/slow-finished").exists(),
        "the interrupt ended the slow step"
    );
    let task = team.task("task_1");
    assert_eq!(task["status"], "in_progress", "{task}");
    assert_eq!(task["owner"], "alice", "{task}");
    let transcripts = team.repo.join(".crew/transcripts/alice");
    let replayed: String = std::fs::read_dir(&transcripts)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            team.repo.ok(&["replay", path.to_str().unwrap()])
        })
        .collect();
    assert!(
        replayed.contains("Interrupted after 1 model calls"),
        "{replayed}"
    );
    assert!(replayed.contains("interrupted by the person"), "{replayed}");

    // The next message continues the same conversation and finishes the task.
    tell(&team, "alice", "carry on");
    let done = team.wait_task("task_1", "completed", BUDGET);
    let result = done["result"].as_str().unwrap();
    assert!(result.starts_with("Resumed after:"), "{done}");
    let said = said(&team, "alice", "task_1");
    assert_eq!(said[0], "Running the slow step.", "{said:?}");
    assert_eq!(said.len(), 2, "{said:?}");

    let down = team.repo.crew(&["down", "--timeout", "10"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}

#[test]
fn a_teammates_first_job_can_be_a_message_and_the_next_one_continues_it() {
    let team = slow_alice();
    let mut alice = team.worker("alice");
    tell(&team, "alice", "hello there");
    wait_said(
        &team,
        "alice",
        "messages",
        "Noted: Message from user (message): hello there",
    );
    tell(&team, "alice", "and again");
    wait_said(&team, "alice", "messages", "and again");
    let status = team.status("alice");
    assert!(status["note"].is_null(), "{status}");

    assert_eq!(team.repo.crew(&["down", "--timeout", "10"]).code, 0);
    assert_eq!(alice.wait(Duration::from_secs(10)), Some(0));
}
