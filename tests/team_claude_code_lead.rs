//! Claude Code as the lead: `crew up --headless` runs the lead's CLI (a fake `claude` that
//! speaks MCP as the real client does) with `--mcp-config` naming `crew mcp --as lead`. The
//! person's goal reaches it as a stream-json user line; it plans the DAG through crew's team
//! tools; crew's policy answers its `can_use_tool` requests for them (allowed as for crew's own
//! agents, a deny rule still denies); a crew teammate completes the tasks it created.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::crew_exe;
use crate::support::team::{Team, json_lines as logged, signal};
use crew_test_support::wait::eventually;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(40);

fn fake_claude() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/fake-claude")
}

/// A team whose lead is Claude Code (the fake) and whose teammate alice is crew's own runtime
/// (the echo scenario), in `ask` mode with a deny rule on `send_message`.
fn team() -> Team {
    let toml = format!(
        r#"[team]
name = "test"
base_branch = "main"

[lead]
name = "lead"
model = {{ provider = "claude-code", model = "claude-opus-4-8", bin = "{bin}" }}

[[teammate]]
name = "alice"
role = "implementer"
model = {{ provider = "scripted", scenario = "scenario.toml" }}

[permissions]
mode = "ask"
deny = ["send_message"]

[worker]
idle_poll_secs = 1
idle_timeout_secs = 120
heartbeat_secs = 1
request_timeout_secs = 30
"#,
        bin = fake_claude().display()
    );
    Team::new(&toml, "echo.toml", &[])
}

/// What the lead does: plan two tasks, try to message alice, then look at the graph.
fn script(team: &Team) -> PathBuf {
    let turns = json!([
        {
            "calls": [
                {"tool": "task_create", "arguments": {"subject": "say hello", "role": "implementer"}},
                {"tool": "task_create", "arguments": {"subject": "say goodbye", "blocked_by": ["task_1"]}},
                {"tool": "send_message", "arguments": {"to": "alice", "text": "two tasks for you"}},
            ],
            "text": "Planned: task_1 then task_2.",
        },
        {"calls": [{"tool": "task_list", "arguments": {}}], "text": "Following the plan."},
    ]);
    let path = team.repo.join(".crew/lead-script.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    path
}

#[test]
fn a_claude_code_lead_plans_through_crew_mcp_and_a_crew_teammate_does_the_work() {
    let team = team();
    let log = team.repo.join(".crew/fake-claude.log");
    let script = script(&team);
    let mut up = team.spawn_with_env(
        "up",
        &["up", "--headless", "--goal", "greet twice"],
        &[
            ("FAKE_CLAUDE_MCP_SCRIPT", script.to_str().unwrap()),
            ("FAKE_CLAUDE_LOG", log.to_str().unwrap()),
        ],
    );

    // The lead's tasks, done by crew's own teammate, in the order of the graph.
    eventually("the lead's plan", WAIT, || {
        team.repo.join(".tasks/task_2.json").exists().then_some(())
    });
    let first = team.wait_task("task_1", "completed", WAIT);
    let second = team.wait_task("task_2", "completed", WAIT);
    assert_eq!(first["subject"], "say hello");
    assert_eq!(first["owner"], "alice");
    assert_eq!(second["owner"], "alice");
    assert_eq!(second["blockedBy"], json!(["task_1"]));

    // The CLI was given crew's MCP server: this crew binary, as the lead, on this repository.
    let lines = logged(&log);
    let argv: Vec<String> = serde_json::from_value(lines[0]["argv"].clone()).unwrap();
    let at = argv
        .iter()
        .position(|a| a == "--mcp-config")
        .expect("--mcp-config");
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(&argv[at + 1]).unwrap()).unwrap();
    let server = &config["mcpServers"]["crew"];
    assert_eq!(server["command"], crew_exe(), "{config}");
    let root = team.repo.path().to_str().unwrap();
    assert_eq!(
        server["args"],
        json!(["-C", root, "mcp", "--as", "lead"]),
        "{config}"
    );
    assert!(
        argv.iter().any(|a| a.contains("mcp__crew__task_create")),
        "the role's instructions name the MCP tools: {argv:?}"
    );

    // The handshake listed the lead's tools.
    let listed = lines
        .iter()
        .find(|l| l["mcp_in"]["result"]["tools"].is_array())
        .expect("a tools/list answer");
    let names: Vec<&str> = listed["mcp_in"]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"task_create") && !names.contains(&"claim_task"),
        "{names:?}"
    );

    // The person's goal came in as a stream-json user line.
    let first_user = lines
        .iter()
        .find(|l| l["in"]["type"] == "user")
        .expect("a user line");
    let content = first_user["in"]["message"]["content"].as_str().unwrap();
    assert!(content.contains("greet twice"), "{content}");

    // crew's policy answered each can_use_tool: team tools allowed as for crew's own agents
    // (no one was asked, though the mode is `ask`), the deny rule denied send_message.
    let responses: Vec<&Value> = lines
        .iter()
        .filter(|l| l["in"]["type"] == "control_response")
        .map(|l| &l["in"]["response"]["response"])
        .collect();
    assert_eq!(responses[0]["behavior"], "allow", "{responses:?}");
    assert_eq!(responses[0]["updatedInput"]["subject"], "say hello");
    assert_eq!(responses[1]["behavior"], "allow", "{responses:?}");
    assert_eq!(responses[2]["behavior"], "deny", "{responses:?}");
    assert!(
        responses[2]["message"]
            .as_str()
            .unwrap()
            .contains("send_message"),
        "{responses:?}"
    );
    assert!(
        team.requests().is_empty(),
        "nobody was asked: {:?}",
        team.requests()
    );
    let alice_inbox = team.inbox("alice");
    assert!(
        alice_inbox.iter().all(|m| m["text"] != "two tasks for you"),
        "the denied message was not sent: {alice_inbox:?}"
    );

    // Its transcript is the lead's: the MCP tool calls and their results.
    let events = eventually("the lead's transcript", WAIT, || {
        let dir = team.repo.join(".crew/transcripts/lead");
        let mut events = Vec::new();
        for entry in std::fs::read_dir(dir).ok()? {
            let text = std::fs::read_to_string(entry.ok()?.path()).ok()?;
            events.extend(
                text.lines()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone()),
            );
        }
        let uses = events.iter().filter(|e| e["type"] == "tool_use").count();
        (uses >= 3).then_some(events)
    });
    let created = events
        .iter()
        .find(|e| {
            e["type"] == "tool_result"
                && e["content"].as_str().is_some_and(|c| c.contains("task_1"))
        })
        .expect("the task_create result in the transcript");
    assert_eq!(created["is_error"], false, "{created}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_use" && e["name"] == "mcp__crew__task_create"),
        "{events:?}"
    );

    signal(up.pid, libc::SIGTERM);
    assert_eq!(up.wait(WAIT), Some(0), "crew up ends cleanly");
    // The lead's CLI and its `crew mcp` ended with the team.
    eventually("crew mcp to end", WAIT, || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &format!("{root} mcp --as lead")])
            .output()
            .ok()?;
        out.stdout.is_empty().then_some(())
    });
}
