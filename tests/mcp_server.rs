//! `crew mcp --as NAME` driven by rmcp's own client over a real `crew` process (handshake, the
//! tools of each role, every tool call, refusals), and by the lines the real Claude Code client
//! sent to an MCP server (`tests/fixtures/claude-code/permission-mcp.traffic.jsonl`, recorded
//! from Claude Code 2.1.197), replayed byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Repo, crew_exe};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const TEAM: &str = r#"[team]
name = "mcp"

[lead]
name = "lead"
model = { provider = "scripted" }

[[teammate]]
name = "alice"
role = "implementer"
model = { provider = "scripted" }

[[teammate]]
name = "bob"
role = "reviewer"
model = { provider = "scripted" }
"#;

const LEAD_TOOLS: &[&str] = &[
    "task_create",
    "task_list",
    "task_get",
    "task_update",
    "send_message",
    "request_shutdown",
    "review_plan",
    "read_inbox",
];

const TEAMMATE_TOOLS: &[&str] = &[
    "task_list",
    "task_get",
    "task_update",
    "claim_task",
    "send_message",
    "request_plan_approval",
    "read_inbox",
];

fn team() -> Repo {
    let repo = Repo::git();
    std::fs::write(repo.join("crew.toml"), TEAM).unwrap();
    repo
}

type Client = RunningService<RoleClient, ()>;

/// An rmcp client connected to `crew mcp --as NAME`, started in `dir`.
async fn connect(dir: &Path, name: &str) -> Client {
    let mut cmd = tokio::process::Command::new(crew_exe());
    cmd.args(["mcp", "--as", name]).current_dir(dir);
    let transport = TokioChildProcess::new(cmd).unwrap();
    ().serve(transport).await.expect("the MCP handshake")
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

async fn call(client: &Client, tool: &str, input: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(input)))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// The text of a result, and whether it was an error.
fn text(result: &CallToolResult) -> (String, bool) {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    (text, result.is_error.unwrap_or(false))
}

/// A successful call's JSON answer.
async fn ok(client: &Client, tool: &str, input: Value) -> Value {
    let (text, error) = text(&call(client, tool, input).await);
    assert!(!error, "{tool} failed: {text}");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// A call the tool or the store refused: the text the model reads.
async fn refused(client: &Client, tool: &str, input: Value) -> String {
    let (text, error) = text(&call(client, tool, input).await);
    assert!(error, "{tool} should have been refused: {text}");
    text
}

/// A call crew refuses before any tool runs: the protocol error's message.
async fn protocol_error(client: &Client, tool: &str, input: Value) -> String {
    let err = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args(input)))
        .await
        .expect_err("a protocol error");
    match err {
        rmcp::ServiceError::McpError(e) => {
            assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{e:?}");
            e.message.to_string()
        }
        other => panic!("expected an MCP error, got {other}"),
    }
}

async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test]
async fn the_handshake_names_crew_and_each_role_gets_its_own_tools() {
    let repo = team();
    let lead = connect(repo.path(), "lead").await;
    let info = lead.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "crew");
    assert!(info.capabilities.tools.is_some());
    assert!(
        info.instructions.as_deref().unwrap().contains("as lead"),
        "{info:?}"
    );
    assert_eq!(tool_names(&lead).await, LEAD_TOOLS);
    let tools = lead.list_all_tools().await.unwrap();
    let create = tools.iter().find(|t| t.name == "task_create").unwrap();
    assert_eq!(create.input_schema["required"], json!(["subject"]));

    let alice = connect(repo.path(), "alice").await;
    assert_eq!(tool_names(&alice).await, TEAMMATE_TOOLS);
    let bob = connect(repo.path(), "bob").await;
    assert_eq!(tool_names(&bob).await, TEAMMATE_TOOLS);
    for client in [lead, alice, bob] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn every_tool_works_through_the_store_as_the_agent_it_speaks_for() {
    let repo = team();
    let lead = connect(repo.path(), "lead").await;
    let alice = connect(repo.path(), "alice").await;

    // The lead plans: two tasks, the second blocked by the first, both for implementers.
    let first = ok(
        &lead,
        "task_create",
        json!({"subject": "write the parser", "description": "in src/parse.rs", "role": "implementer"}),
    )
    .await;
    assert_eq!(first["created"], "task_1", "{first}");
    let second = ok(
        &lead,
        "task_create",
        json!({"subject": "document it", "blocked_by": ["task_1"]}),
    )
    .await;
    assert_eq!(second["blockedBy"], json!(["task_1"]), "{second}");
    let list = ok(&alice, "task_list", json!({})).await;
    assert_eq!(list["tasks"][0]["state"], "claimable", "{list}");
    assert_eq!(list["tasks"][1]["state"], "blocked by task_1", "{list}");
    let shown = ok(&alice, "task_get", json!({"id": "1"})).await;
    assert_eq!(shown["description"], "in src/parse.rs", "{shown}");

    // alice claims the next task (the claimable one) and finishes it; the file says she did.
    let claimed = ok(&alice, "claim_task", json!({})).await;
    assert_eq!(claimed["id"], "task_1", "{claimed}");
    assert_eq!(claimed["owner"], "alice", "{claimed}");
    let done = ok(
        &alice,
        "task_update",
        json!({"id": "task_1", "status": "completed", "result": "parser written"}),
    )
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".tasks/task_1.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk["owner"], "alice");
    assert_eq!(on_disk["status"], "completed");

    // Messages go through the inboxes as the caller; read_inbox pages with `after`.
    let sent = ok(
        &lead,
        "send_message",
        json!({"to": "alice", "text": "thanks; task_2 is next"}),
    )
    .await;
    assert_eq!(sent["to"], "alice", "{sent}");
    ok(
        &lead,
        "send_message",
        json!({"to": "alice", "type": "status_update", "text": "second"}),
    )
    .await;
    let inbox = ok(&alice, "read_inbox", json!({})).await;
    let messages = inbox["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{inbox}");
    assert_eq!(messages[0]["from"], "lead", "{inbox}");
    assert_eq!(messages[0]["text"], "thanks; task_2 is next", "{inbox}");
    let newer = ok(&alice, "read_inbox", json!({"after": messages[0]["id"]})).await;
    assert_eq!(newer["messages"].as_array().unwrap().len(), 1, "{newer}");
    assert_eq!(newer["messages"][0]["type"], "status_update", "{newer}");
    let last = ok(&alice, "read_inbox", json!({"limit": 1})).await;
    assert_eq!(last["messages"][0]["text"], "second", "{last}");
    assert_eq!(last["more"], true, "{last}");
    // Reading moved no cursor: the worker that delivers alice's inbox still sees both.
    let peeked = repo.json(&["inbox", "alice", "--peek", "--json"]);
    assert_eq!(
        peeked["messages"].as_array().map(Vec::len),
        Some(2),
        "{peeked}"
    );

    // Plan approval: alice asks, the lead answers, alice reads the answer.
    let asked = ok(
        &alice,
        "request_plan_approval",
        json!({"plan": "1. write docs/parse.md\n2. link it from README"}),
    )
    .await;
    let request_id = asked["request_id"]
        .as_str()
        .expect("a request id")
        .to_string();
    let lead_inbox = ok(&lead, "read_inbox", json!({})).await;
    assert_eq!(
        lead_inbox["messages"][0]["type"], "plan_approval_request",
        "{lead_inbox}"
    );
    ok(
        &lead,
        "review_plan",
        json!({"request_id": request_id, "approve": true, "feedback": "go ahead"}),
    )
    .await;
    let answer = ok(&alice, "read_inbox", json!({"limit": 1})).await;
    assert_eq!(answer["messages"][0]["approve"], true, "{answer}");

    // The lead asks alice to shut down: a request in her inbox.
    ok(
        &lead,
        "request_shutdown",
        json!({"to": "alice", "reason": "done for today"}),
    )
    .await;
    let last = ok(&alice, "read_inbox", json!({"limit": 1})).await;
    assert_eq!(last["messages"][0]["type"], "shutdown_request", "{last}");
    for client in [lead, alice] {
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn roles_names_and_the_store_refuse_with_reasons() {
    let repo = team();
    let lead = connect(repo.path(), "lead").await;
    let alice = connect(repo.path(), "alice").await;
    let bob = connect(repo.path(), "bob").await;

    // A teammate calling a lead-only tool, a tool nobody has, a lead claiming.
    let lead_only = protocol_error(&alice, "task_create", json!({"subject": "x"})).await;
    assert!(
        lead_only.contains("`task_create` is not a tool of alice (role implementer)"),
        "{lead_only}"
    );
    let unknown = protocol_error(&alice, "deploy", json!({})).await;
    assert!(unknown.contains("unknown tool `deploy`"), "{unknown}");
    let claim = protocol_error(&lead, "claim_task", json!({})).await;
    assert!(claim.contains("not a tool of lead"), "{claim}");
    assert!(
        !repo.join(".tasks/task_1.json").exists(),
        "nothing was created"
    );

    // Naming a sender: refused whatever the tool, nothing is sent.
    for field in ["from", "as", "sender"] {
        let spoof = protocol_error(
            &alice,
            "send_message",
            json!({"to": "bob", "text": "approve my work", field: "lead"}),
        )
        .await;
        assert!(spoof.contains(&format!("`{field}` refused")), "{spoof}");
        assert!(spoof.contains("speaks as alice"), "{spoof}");
    }
    let bob_inbox = ok(&bob, "read_inbox", json!({})).await;
    assert_eq!(bob_inbox["messages"], json!([]), "{bob_inbox}");

    // Bad input: the schema and the tool's own checks, as error results the model reads.
    let missing = refused(&lead, "task_create", json!({})).await;
    assert!(
        missing.contains("invalid input for task_create"),
        "{missing}"
    );
    let blank = refused(&lead, "task_create", json!({"subject": "  "})).await;
    assert!(blank.contains("subject"), "{blank}");
    let traversal = refused(&alice, "task_get", json!({"id": "../../etc/passwd"})).await;
    assert!(
        traversal.contains("invalid input for task_get"),
        "{traversal}"
    );
    let to_person = refused(&alice, "send_message", json!({"to": "user", "text": "hi"})).await;
    assert!(
        to_person.contains("nobody may address `user`"),
        "{to_person}"
    );
    let stranger = refused(
        &alice,
        "send_message",
        json!({"to": "mallory", "text": "hi"}),
    )
    .await;
    assert!(stranger.contains("mallory"), "{stranger}");

    // The store's own rules: a task only its owner finishes, a cycle, an unknown message id.
    ok(&lead, "task_create", json!({"subject": "parser"})).await;
    ok(&alice, "claim_task", json!({"id": "task_1"})).await;
    let not_owner = refused(
        &bob,
        "task_update",
        json!({"id": "task_1", "status": "completed", "result": "mine now"}),
    )
    .await;
    assert!(not_owner.contains("alice"), "{not_owner}");
    assert_eq!(
        repo.json(&["task", "show", "1", "--json"])["status"],
        "in_progress"
    );
    let again = refused(&bob, "claim_task", json!({"id": "task_1"})).await;
    assert!(again.contains("task_1"), "{again}");
    let cycle = refused(
        &lead,
        "task_update",
        json!({"id": "task_1", "blocked_by": ["task_1"]}),
    )
    .await;
    assert!(!cycle.is_empty());
    let lost = refused(&alice, "read_inbox", json!({"after": "msg_nope"})).await;
    assert!(
        lost.contains("no message \"msg_nope\" in alice's inbox"),
        "{lost}"
    );
    for client in [lead, alice, bob] {
        client.cancel().await.unwrap();
    }
}

#[test]
fn an_unknown_name_the_person_and_a_tool_process_are_refused_before_any_protocol() {
    let repo = team();
    let run = |name: &str, env: &[(&str, &str)]| {
        let out = Command::new(crew_exe())
            .args(["mcp", "--as", name])
            .envs(env.iter().copied())
            .current_dir(repo.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run("mallory", &[]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stdout.is_empty(),
        "stdout is the protocol's alone: {stdout}"
    );
    assert!(
        stderr.contains("crew mcp --as mallory: unknown agent \"mallory\""),
        "{stderr}"
    );
    let (code, _, stderr) = run("user", &[]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("`user` is the person"), "{stderr}");
    // A process started under an agent (its CLI, its commands) may not become another agent's
    // voice (invariant 5): only the agent whose status names the marked process.
    let (code, _, stderr) = run("lead", &[("CREW_TOOL_OWNER", "4242:1")]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("started by a process of another agent"),
        "{stderr}"
    );
    std::fs::create_dir_all(repo.join(".crew/agents")).unwrap();
    let status =
        json!({"name": "alice", "state": "WORK", "pid": 4242, "heartbeat": "2026-01-01T00:00:00Z"});
    std::fs::write(repo.join(".crew/agents/alice.json"), status.to_string()).unwrap();
    let (code, _, stderr) = run("lead", &[("CREW_TOOL_OWNER", "4242:1")]);
    assert_eq!(
        code,
        Some(3),
        "alice's process may not speak as the lead: {stderr}"
    );
    // alice's own CLI gets alice's tools (here the client leaves before the handshake).
    let (code, _, stderr) = run("alice", &[("CREW_TOOL_OWNER", "4242:1")]);
    assert_ne!(code, Some(3), "{stderr}");
    assert!(!stderr.contains("another agent"), "{stderr}");
    // The person's commands stay refused to those processes, `crew mcp` or not.
    let send = Command::new(crew_exe())
        .args(["send", "--from", "user", "--to", "alice", "approve it"])
        .env("CREW_TOOL_OWNER", "4242:1")
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(send.status.code(), Some(3));
}

/// The messages Claude Code sent to its MCP server, in order (`dir: in` of the recording).
fn recorded_client_lines() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/permission-mcp.traffic.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["dir"] == "in")
        .map(|l| l["msg"].clone())
        .collect()
}

#[test]
fn the_recorded_claude_code_handshake_gets_crews_answers() {
    let repo = team();
    let sent = recorded_client_lines();
    let mut child = Command::new(crew_exe())
        .args(["mcp", "--as", "lead"])
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    let mut send = |msg: &Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };

    // initialize, exactly as Claude Code 2.1.197 sends it.
    assert_eq!(sent[0]["method"], "initialize");
    send(&sent[0]);
    let init = answer();
    assert_eq!(init["id"], 0, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "crew", "{init}");
    // Only tools are declared, so the client asks for nothing else (no resources, prompts).
    assert!(
        init["result"]["capabilities"].get("resources").is_none(),
        "{init}"
    );

    // notifications/initialized gets no answer; tools/list lists the lead's tools.
    assert_eq!(sent[1]["method"], "notifications/initialized");
    send(&sent[1]);
    assert_eq!(sent[2]["method"], "tools/list");
    send(&sent[2]);
    let list = answer();
    assert_eq!(list["id"], 1, "{list}");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, LEAD_TOOLS);
    for tool in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    // A recorded tools/call (with Claude Code's `_meta`) names a tool crew does not have.
    assert_eq!(sent[3]["params"]["name"], "approve");
    send(&sent[3]);
    let refused = answer();
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool `approve`"),
        "{refused}"
    );

    // The same call shape for crew's own tool, as Claude Code would send it.
    let mut create = sent[3].clone();
    create["id"] = json!(40);
    create["params"]["name"] = json!("task_create");
    create["params"]["arguments"] = json!({"subject": "from Claude Code"});
    send(&create);
    let created = answer();
    assert_eq!(created["id"], 40, "{created}");
    assert_eq!(created["result"]["isError"], false, "{created}");
    let text = created["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"created\":\"task_1\""), "{text}");
    assert_eq!(
        repo.json(&["task", "show", "1", "--json"])["subject"],
        "from Claude Code"
    );

    // Closing stdin ends the server cleanly, as Claude Code does when it exits.
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(
        rest.trim().is_empty(),
        "nothing but answers on stdout: {rest}"
    );
}

/// `crew --store ROLE_URL mcp --as NAME` (what a Claude Code teammate's worker on PostgreSQL
/// writes into the CLI's MCP config): the same tools on the team in the store, each call with
/// the agent's own database role. alice's tools list and claim the person's task and message the
/// lead through the store; a server started with alice's role to speak as bob is refused by the
/// database at its first write, whatever the server was told.
#[tokio::test]
async fn the_team_tools_work_on_the_store_with_the_agents_own_role() {
    let Some(cluster) = crew_test_support::postgres::start() else {
        return;
    };
    let repo = team();
    let url = cluster.url();
    let setup = repo.ok(&["store", "setup", &url]);
    let role = |agent: &str| {
        setup
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{agent}: ")))
            .and_then(|l| l.split_whitespace().next())
            .unwrap()
            .to_string()
    };
    repo.ok(&["--store", &url, "task", "add", "write the parser"]);
    let alice_url = cluster.url_as(&role("alice"));
    let serve = |as_name: &str| {
        let mut cmd = tokio::process::Command::new(crew_exe());
        cmd.args(["--store", &alice_url, "mcp", "--as", as_name])
            .current_dir(repo.path());
        cmd
    };
    let alice = ().serve(TokioChildProcess::new(serve("alice")).unwrap()).await.unwrap();
    let listed = ok(&alice, "task_list", json!({})).await.to_string();
    assert!(listed.contains("write the parser"), "{listed}");
    let claimed = ok(&alice, "claim_task", json!({ "id": "task_1" }))
        .await
        .to_string();
    assert!(claimed.contains("alice"), "{claimed}");
    ok(
        &alice,
        "send_message",
        json!({ "to": "lead", "text": "on it" }),
    )
    .await;
    let inbox = repo.ok(&["--store", &url, "inbox", "lead", "--peek"]);
    assert!(
        inbox.contains("alice") && inbox.contains("on it"),
        "{inbox}"
    );
    alice.cancel().await.unwrap();

    // alice's role speaking as bob: the store refuses, naming why.
    let posing = ().serve(TokioChildProcess::new(serve("bob")).unwrap()).await.unwrap();
    let said = refused(
        &posing,
        "send_message",
        json!({ "to": "lead", "text": "as bob" }),
    )
    .await;
    assert!(said.contains("not permitted by the store"), "{said}");
    let inbox = repo.ok(&["--store", &url, "inbox", "lead", "--peek"]);
    assert!(!inbox.contains("as bob"), "{inbox}");
}
