//! The real pinned Claude Code CLI (2.1.197, installed by tests/interop/claude-real.sh into
//! target/interop) as teammate alice, watched on the full screen (`crew up` in a pseudo-terminal,
//! read back with vt100), inside a private network namespace with only loopback where the
//! scripted mock Anthropic API answers: a streamed reply shows in alice's pane before it ends,
//! a Write approval shows the diff and the agent's words before the call, an interrupted reply is
//! marked interrupted, and tokens and cost after a restart are the sum of both lives. Skips,
//! saying why, where the CLI, python3 or `unshare --net` is not there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::pty::{DaemonGuard, Screen};
use crate::support::team::Team;
use crew_test_support::wait::{BUDGET, eventually};
use serde_json::{Value, json};

const VERSION: &str = "2.1.197";

/// The pinned CLI where claude-real.sh installs it, if it is there.
fn pinned_claude() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let bin =
        target.join("interop/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    bin.is_file().then_some(bin)
}

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if pinned_claude().is_none() {
        return Some(format!(
            "Claude Code {VERSION} is not installed (tests/interop/claude-real.sh installs it)"
        ));
    }
    let works = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works("python3", &["-c", "pass"]) {
        return Some("python3 is not installed".into());
    }
    if !works("unshare", &["--net", "true"]) {
        return Some("cannot make a private network namespace (unshare --net)".into());
    }
    None
}

/// The mock API's script: the first task writes greeting.txt (after saying so), then streams a
/// slow reply; "tell me a story" gets a slower one (to be interrupted); after the restart a
/// short answer.
fn mock_script(worktree: &Path) -> Value {
    let slow = |secs: u32| json!({"text": format!("Streaming slowly, word after word, {}", "and on and on ".repeat(12)), "slow": secs});
    json!({
        "agents": [
            {"name": "restart", "match": "after the restart", "steps": []},
            {"name": "story", "match": "tell me a story", "steps": vec![slow(60); 12]},
            {"name": "task", "steps": [
                {"blocks": [
                    {"text": "I'll write the greeting file."},
                    {"tool_use": {"name": "Write", "input": {
                        "file_path": worktree.join("greeting.txt").display().to_string(),
                        "content": "hello\ncrew\n"}}}
                ]},
                slow(8)
            ]}
        ],
        "fallback_text": "Back after the restart."
    })
}

/// `crew ARGS` inside a private network namespace whose loopback serves the mock API.
const IN_NAMESPACE: &str = r#"
set -eu
ip link set lo up
python3 "$MOCK" 8765 "$MOCK_LOG" "$MOCK_SCRIPT" >"$MOCK_LOG/mock.out" 2>&1 &
MOCK_PID=$!
trap 'kill $MOCK_PID 2>/dev/null' EXIT
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && break; sleep 0.1; done
"$@"
"#;

fn status(team: &Team, name: &str) -> Value {
    let text = std::fs::read_to_string(team.repo.join(&format!(".crew/agents/{name}.json")))
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

fn turn_ends(team: &Team) -> usize {
    team.transcript_events("alice")
        .iter()
        .filter(|e| e["type"] == "turn_end")
        .count()
}

#[test]
fn a_real_claude_code_teammate_streams_asks_with_a_diff_is_interrupted_and_keeps_its_spend() {
    if let Some(why) = missing() {
        eprintln!("SKIP tui_claude_code_live: {why}");
        return;
    }
    let claude = pinned_claude().unwrap();
    let toml = format!(
        "[team]\nname = \"live\"\nbase_branch = \"main\"\n\n[lead]\nname = \"lead\"\nmodel = {{ provider = \"scripted\", scenario = \"scenario.toml\" }}\n\n\
         [[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nwrites = true\nmodel = {{ provider = \"claude-code\", bin = \"{}\" }}\n\n\
         [permissions]\nmode = \"ask\"\n\n[worker]\nidle_poll_secs = 1\nidle_timeout_secs = 600\nheartbeat_secs = 1\nrequest_timeout_secs = 300\n",
        claude.display()
    );
    let team = Team::new(&toml, "echo.toml", &[]);
    let root = team.repo.path().to_path_buf();
    let _daemon = DaemonGuard { root: root.clone() };
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let log = work.path().join("mock");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&log).unwrap();
    let script = work.path().join("script.json");
    let worktree = std::fs::canonicalize(&root)
        .unwrap()
        .join(".worktrees/alice");
    std::fs::write(&script, mock_script(&worktree).to_string()).unwrap();
    let mock = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/mock_anthropic.py");
    let crew = env!("CARGO_BIN_EXE_crew");
    let env = [
        ("MOCK", mock.to_str().unwrap()),
        ("MOCK_LOG", log.to_str().unwrap()),
        ("MOCK_SCRIPT", script.to_str().unwrap()),
        ("HOME", home.to_str().unwrap()),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8765"),
        ("ANTHROPIC_API_KEY", "sk-test"),
        ("DISABLE_TELEMETRY", "1"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ];
    let mut screen = Screen::start_program(
        &root,
        "unshare",
        &["--net", "bash", "-c", IN_NAMESPACE, "ns", crew, "up"],
        &env,
        200,
        50,
    );
    screen.wait_for("teammates (1)");
    team.repo.ok(&["task", "add", "write the greeting"]);

    // The Write comes to the person as the diff it would make, with alice's words before it.
    screen.keys("\t");
    screen.wait_for("teammates · ? help");
    screen.keys("5");
    screen.wait_for("alice says: I'll write the greeting file.");
    screen.wait_for("new file greeting.txt");
    screen.wait_for("+crew");
    screen.keys("a");

    // The slow reply after it shows in alice's pane while it streams: before its turn ends.
    screen.keys("2");
    screen.wait_until("the first words of the slow reply", BUDGET, |t| {
        t.contains("Streaming slowly, word")
    });
    assert_eq!(
        turn_ends(&team),
        0,
        "the reply was shown only after it ended"
    );
    team.wait_task("task_1", "review", BUDGET);
    let queue = team.repo.ok(&["review", "list"]);
    assert!(queue.contains(" tokens, $"), "the task's cost: {queue}");

    // An interrupted reply is marked interrupted.
    team.repo
        .ok(&["send", "--from", "user", "--to", "alice", "tell me a story"]);
    screen.wait_until("the story streaming", BUDGET, |t| {
        t.matches("Streaming slowly, word").count() >= 2
    });
    team.repo.ok(&["interrupt", "alice"]);
    screen.wait_for("[model stopped: Interrupted");
    screen.wait_for("=== end: Interrupted");
    eventually("alice idle again", BUDGET, || {
        (status(&team, "alice")["state"] == "IDLE").then_some(())
    });

    // Restarted, alice keeps what her first life spent, and the next job adds to it.
    let first = status(&team, "alice");
    let (tokens, cost) = (
        first["tokens"].as_u64().unwrap(),
        first["cost_micros"].as_u64().unwrap(),
    );
    assert!(tokens > 0 && cost > 0, "{first}");
    let pid = first["pid"].as_u64().unwrap();
    // Killed, found dead, started again (the person's `R`).
    crate::support::team::signal(u32::try_from(pid).unwrap(), libc::SIGKILL);
    eventually("alice found dead", BUDGET, || {
        (status(&team, "alice")["state"] == "DEAD").then_some(())
    });
    team.repo.ok(&["worker", "restart", "alice"]);
    eventually("alice's second life", BUDGET, || {
        let s = status(&team, "alice");
        (s["pid"].as_u64() != Some(pid) && s["state"] == "IDLE").then_some(())
    });
    let ends = turn_ends(&team);
    team.repo.ok(&[
        "send",
        "--from",
        "user",
        "--to",
        "alice",
        "say hello after the restart",
    ]);
    eventually("the answer after the restart", BUDGET, || {
        (turn_ends(&team) > ends && status(&team, "alice")["state"] == "IDLE").then_some(())
    });
    let second = status(&team, "alice");
    let end = team
        .transcript_events("alice")
        .into_iter()
        .find(|e| {
            e["type"] == "turn_end"
                && e["result"]["input"]
                    .as_str()
                    .is_some_and(|i| i.contains("after the restart"))
        })
        .unwrap();
    let usage = &end["result"]["usage"];
    let job_tokens =
        usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap();
    assert_eq!(
        second["tokens"].as_u64().unwrap(),
        tokens + job_tokens,
        "both lives: {first} then {second}"
    );
    assert!(second["cost_micros"].as_u64().unwrap() > cost, "{second}");
    let shown = crew_store::dollars(second["cost_micros"].as_u64().unwrap());
    screen.wait_for(&shown);

    let down = team.repo.crew(&["down", "--timeout", "20"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    screen.wait_exit();
}
