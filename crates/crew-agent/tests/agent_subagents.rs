//! Subagents against a loopback server speaking the Anthropic Messages API, which plays a prompt
//! cache: a fork's first request repeats the caller's last one byte for byte and reads it from
//! the cache; a fresh subagent has its own prompt and tools; neither can start a subagent; only
//! the report goes back; SubagentStop hooks see the subagent end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;

use crew_agent::transcript::TranscriptLine;
use crew_agent::{AgentEvent, SubagentSettings};
use crew_model::anthropic::AnthropicProvider;
use crew_model::{ApiKey, ChatMessage, ContentBlock};
use crew_test_support::agent::{Build, Repo, assert_completed, drain, turn};
use crew_test_support::model::{
    Recorded, Reply, Server, end, message_start, reply, text, tool_use, unmarked,
};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::{HookEvent, HookSpec, Hooks, Pipeline, ToolRegistry};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-0123456789";

/// The units a prompt cache matches on: tools and system together, then each message, all
/// without `cache_control` (a marker says where to cache, it is not cached content).
fn cache_units(body: &Value) -> Vec<String> {
    let mut tools = body["tools"].clone();
    for tool in tools.as_array_mut().into_iter().flatten() {
        tool.as_object_mut().unwrap().remove("cache_control");
    }
    let mut system = body["system"].clone();
    for block in system.as_array_mut().into_iter().flatten() {
        block.as_object_mut().unwrap().remove("cache_control");
    }
    let head = json!([body["model"], tools, system]).to_string();
    std::iter::once(head)
        .chain(unmarked(body).iter().map(Value::to_string))
        .collect()
}

/// Tokens (bytes / 4) of `body`'s longest prefix of whole units that an earlier request sent.
fn cached_tokens(body: &Value, earlier: &[Recorded]) -> u64 {
    let units = cache_units(body);
    let shared = earlier
        .iter()
        .map(|e| {
            let before = cache_units(&e.body);
            units
                .iter()
                .zip(&before)
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    units[..shared].iter().map(|u| u.len() as u64 / 4).sum()
}

/// A server that answers with `replies` in order (each a function of the cache read), reporting
/// what a prompt cache would have read.
async fn caching_server(replies: Vec<Vec<Vec<(&'static str, Value)>>>) -> Server {
    let mut replies = replies.into_iter();
    Server::start_with(move |request, earlier| {
        let read = cached_tokens(&request.body, earlier);
        let Some(parts) = replies.next() else {
            return Reply::error(500, json!({"error": {"message": "no more replies"}}));
        };
        let mut all = vec![vec![message_start(read, 0)]];
        all.extend(parts);
        reply(all)
    })
    .await
}

fn call(id: &str, name: &str, input: Value) -> Vec<Vec<(&'static str, Value)>> {
    vec![tool_use(0, id, name, &input.to_string()), end("tool_use")]
}

fn answer(words: &str) -> Vec<Vec<(&'static str, Value)>> {
    vec![text(0, words), end("end_turn")]
}

fn provider(server: &Server) -> Arc<AnthropicProvider> {
    Arc::new(AnthropicProvider::new(&server.base_url, ApiKey::new(KEY), "claude-x").unwrap())
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The text of the tool result answering `id` in the agent's history.
fn result_of<'a>(history: &'a [ChatMessage], id: &str) -> (&'a str, bool) {
    history
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if tool_use_id == id => Some((content.as_str(), *is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn results_in(body: &Value) -> Vec<(String, bool)> {
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["content"].as_str().unwrap_or_default().to_string(),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_fork_repeats_the_callers_last_request_byte_for_byte_and_reads_it_from_the_cache() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
    let server = caching_server(vec![
        // The caller reads a file, then forks an explorer.
        call("toolu_1", "read", json!({"path": "a.txt"})),
        call(
            "toolu_2",
            "agent",
            json!({"description": "find the greeting", "prompt": "Which word is in a.txt?",
                   "role": "explore", "context": "fork"}),
        ),
        // The fork tries to start a subagent and to write: both refused.
        vec![
            tool_use(
                0,
                "toolu_f1",
                "agent",
                r#"{"description": "x", "prompt": "y", "role": "general"}"#,
            ),
            tool_use(
                1,
                "toolu_f2",
                "write",
                r#"{"path": "b.txt", "content": "no"}"#,
            ),
            end("tool_use"),
        ],
        answer("The word is alpha (a.txt:1)."),
        // The caller finishes with the report in hand.
        answer("a.txt says alpha."),
        // Next turn: a fresh explorer for comparison.
        call(
            "toolu_3",
            "agent",
            json!({"description": "look again", "prompt": "Read a.txt and say its word.",
                   "role": "explore"}),
        ),
        answer("alpha"),
        answer("Still alpha."),
    ])
    .await;
    let (mut agent, mut rx) = Build::new("alice", provider(&server)).agent(&repo);
    agent.enable_subagents(SubagentSettings::default());
    let result = turn(&mut agent, "What is in a.txt?").await;
    assert_completed(&result);
    assert_eq!(result.output, "a.txt says alpha.");

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 5);
    let (parent_last, fork_first) = (&bodies[1], &bodies[2]);
    assert!(tool_names(parent_last).contains(&"agent".to_string()));

    // Byte for byte: with the cache markers taken out, the caller's last request is the
    // fork's first one up to the end of the caller's messages, and the same after them.
    let strip = |body: &Value| {
        let mut body = body.clone();
        body["messages"] = Value::Array(unmarked(&body));
        for key in ["tools", "system"] {
            for item in body[key].as_array_mut().unwrap() {
                item.as_object_mut().unwrap().remove("cache_control");
            }
        }
        body.to_string()
    };
    let (parent_bytes, fork_bytes) = (strip(parent_last), strip(fork_first));
    let cut = parent_bytes.find("],\"stream\"").unwrap();
    assert!(
        fork_bytes.starts_with(&parent_bytes[..cut]),
        "the fork's request does not start with the caller's"
    );
    assert!(fork_bytes.ends_with(&parent_bytes[cut + 1..]));
    assert!(fork_bytes.len() > parent_bytes.len());
    // The system prompt and tools are the caller's even with their markers (same prefix key).
    assert_eq!(parent_last["system"], fork_first["system"]);
    assert_eq!(parent_last["tools"], fork_first["tools"]);
    // What the fork adds: the caller's reply and, after placeholder results, its task.
    let added = &unmarked(fork_first)[unmarked(parent_last).len()..];
    assert_eq!(added.len(), 2);
    assert_eq!(added[0]["content"][0]["name"], "agent");
    assert!(added[1].to_string().contains("Which word is in a.txt?"));

    // Inside the fork: no subagent, and nothing an explorer may not do.
    let refused = results_in(&bodies[3]);
    assert_eq!(refused.len(), 2);
    assert!(refused[0].1 && refused[0].0.contains("subagents cannot start subagents"));
    assert!(
        refused[1].1
            && refused[1]
                .0
                .contains("not available to subagents of role explore")
    );
    assert!(!repo.root.join("b.txt").exists());

    // Only the report went back to the caller; the fork's steps stayed in its transcript.
    let (report, is_error) = result_of(agent.history(), "toolu_2");
    assert!(!is_error, "{report}");
    assert!(report.contains("The word is alpha (a.txt:1)."));
    assert!(report.contains("explore, fork"));
    let history = serde_json::to_string(agent.history()).unwrap();
    assert!(!history.contains("toolu_f1"));

    let events = drain(&mut rx);
    let (transcript, fork_usage) = subagent_events(&events, "sub1");
    assert!(transcript.exists());
    let side = std::fs::read_to_string(&transcript).unwrap();
    assert!(side.contains("subagents cannot start subagents"));
    assert_eq!(
        transcript,
        agent
            .transcript_path()
            .with_extension("")
            .join("sub1.jsonl")
    );
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::SubagentTool { id, tool } if id == "sub1" && tool == "write")
    ));

    // The cache: the fork's first call reads everything the caller sent last.
    let parent_prompt: u64 = cache_units(parent_last)
        .iter()
        .map(|u| u.len() as u64 / 4)
        .sum();
    // The caller's turn counts what its subagent spent (its budget bounds both).
    let requests = server.requests();
    let reported: u64 = (0..requests.len())
        .map(|i| cached_tokens(&requests[i].body, &requests[..i]))
        .sum();
    assert_eq!(result.usage.cache_read_input_tokens, reported);
    let fork_read = first_call_cache_read(&transcript);
    assert_eq!(fork_read, parent_prompt);
    assert!(
        fork_usage.cache_read_input_tokens > fork_read,
        "its second call reads more"
    );

    // A fresh explorer: its own prompt, read-only tools, no `agent`, and no cache hit.
    let result = turn(&mut agent, "And again, fresh?").await;
    assert_completed(&result);
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let fresh_first = &bodies[6];
    assert_eq!(tool_names(fresh_first), ["read", "glob", "grep"]);
    assert_ne!(fresh_first["system"], parent_last["system"]);
    let events = drain(&mut rx);
    let (fresh_transcript, _) = subagent_events(&events, "sub2");
    let fresh_read = first_call_cache_read(&fresh_transcript);
    assert_eq!(fresh_read, 0);
    let fresh_prompt: u64 = cache_units(fresh_first)
        .iter()
        .map(|u| u.len() as u64 / 4)
        .sum();
    println!(
        "first call of a subagent, tokens read from the cache / prompt tokens: \
         fork {fork_read}/{parent_prompt}, fresh {fresh_read}/{fresh_prompt}"
    );
}

/// What the first model call recorded in `transcript` read from the cache.
fn first_call_cache_read(transcript: &std::path::Path) -> u64 {
    std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<TranscriptLine>(l).unwrap().event)
        .find_map(|e| match e {
            AgentEvent::MessageStop { usage, .. } => Some(usage.cache_read_input_tokens),
            _ => None,
        })
        .expect("a model call")
}

/// The side transcript and the usage of subagent `id`, from the caller's events.
fn subagent_events(events: &[AgentEvent], id: &str) -> (std::path::PathBuf, crew_model::Usage) {
    let transcript = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SubagentStart {
                id: i, transcript, ..
            } if i == id => Some(transcript.clone()),
            _ => None,
        })
        .expect("SubagentStart");
    let usage = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::SubagentEnd { id: i, usage, .. } if i == id => Some(*usage),
            _ => None,
        })
        .expect("SubagentEnd");
    (transcript, usage)
}

#[tokio::test]
async fn a_general_subagent_is_under_the_callers_policy_and_is_not_offered_the_agent_tool() {
    let repo = Repo::new();
    let server = caching_server(vec![
        call(
            "toolu_1",
            "agent",
            json!({"description": "write it", "prompt": "Create b.txt saying hi.", "role": "general"}),
        ),
        vec![
            tool_use(0, "toolu_g1", "write", r#"{"path": "b.txt", "content": "hi"}"#),
            tool_use(1, "toolu_g2", "agent", r#"{"description": "x", "prompt": "y", "role": "general"}"#),
            end("tool_use"),
        ],
        answer("Could not write b.txt: permission denied."),
        answer("The subagent could not write."),
    ])
    .await;
    // The caller may only read: so may its subagent.
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(PermissionMode::ReadOnly, &[], &[], &[]),
    );
    let (mut agent, _rx) = Build::new("alice", provider(&server))
        .pipeline(pipeline)
        .agent(&repo);
    agent.enable_subagents(SubagentSettings::default());
    assert_completed(&turn(&mut agent, "Have b.txt created.").await);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let child_tools = tool_names(&bodies[1]);
    assert!(
        !child_tools.contains(&"agent".to_string()),
        "{child_tools:?}"
    );
    assert!(child_tools.contains(&"write".to_string()));
    let results = results_in(&bodies[2]);
    assert!(
        results[0].1 && results[0].0.contains("permission denied"),
        "{results:?}"
    );
    assert!(results[1].1 && results[1].0.contains("unknown tool `agent`"));
    assert!(!repo.root.join("b.txt").exists());
}

#[tokio::test]
async fn a_verify_subagent_is_judged_by_its_verdict_and_subagent_stop_hooks_see_it_end() {
    let repo = Repo::new();
    let log = repo.root.join("subagent-stop.jsonl");
    // Blocks the first stop (asking for a verdict), lets the second one through.
    let hook = repo.hook(
        "subagent_stop.sh",
        &format!(
            "payload=$(cat); echo \"$payload\" >> {log}\n\
             case \"$payload\" in *'\"stop_hook_active\":false'*) echo 'end with a VERDICT line' >&2; exit 2;; esac\n\
             exit 0",
            log = log.display()
        ),
    );
    let stop_log = repo.root.join("stop.jsonl");
    let stop_hook = repo.hook("stop.sh", &format!("cat >> {}", stop_log.display()));
    let server = caching_server(vec![
        call(
            "toolu_1",
            "agent",
            json!({"description": "check", "prompt": "Does a.txt exist?", "role": "verify"}),
        ),
        answer("It exists."),
        answer("$ test -f a.txt\n(exit 0)\nVERDICT: PASS"),
        answer("Verified."),
        call(
            "toolu_2",
            "agent",
            json!({"description": "check again", "prompt": "And b.txt?", "role": "verify"}),
        ),
        answer("Not sure."),
        answer("Still not sure."),
        answer("No verdict came back."),
    ])
    .await;
    let hooks = Hooks::new(vec![
        HookSpec {
            event: HookEvent::SubagentStop,
            matcher: Some("verify".into()),
            command: hook,
            timeout_secs: 10,
        },
        HookSpec {
            event: HookEvent::Stop,
            matcher: None,
            command: stop_hook,
            timeout_secs: 10,
        },
    ])
    .unwrap();
    let pipeline = crew_test_support::agent::core_pipeline().with_hooks(hooks);
    let (mut agent, _rx) = Build::new("alice", provider(&server))
        .pipeline(pipeline)
        .agent(&repo);
    agent.enable_subagents(SubagentSettings::default());
    assert_completed(&turn(&mut agent, "Check a.txt.").await);
    let (report, is_error) = result_of(agent.history(), "toolu_1");
    assert!(!is_error);
    assert!(report.contains("verdict: pass"), "{report}");
    assert!(
        !report.contains("It exists."),
        "only the final report goes back"
    );

    let payloads: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(payloads.len(), 2);
    let first = &payloads[0];
    assert_eq!(first["hook_event_name"], "SubagentStop");
    assert_eq!(first["agent_type"], "verify");
    assert_eq!(first["agent_id"], "sub1");
    assert_eq!(first["stop_hook_active"], false);
    assert_eq!(payloads[1]["stop_hook_active"], true);
    assert_eq!(
        first["parent_transcript_path"],
        json!(agent.transcript_path())
    );
    let side = std::path::PathBuf::from(first["transcript_path"].as_str().unwrap());
    assert!(
        std::fs::read_to_string(side)
            .unwrap()
            .contains("end with a VERDICT line")
    );
    // The subagent's end is not the caller's Stop: that ran once, for the caller.
    assert_eq!(
        std::fs::read_to_string(&stop_log).unwrap().lines().count(),
        1
    );

    // No VERDICT line: "no verdict", never a pass.
    assert_completed(&turn(&mut agent, "And b.txt?").await);
    let (report, _) = result_of(agent.history(), "toolu_2");
    assert!(report.contains("verdict: no verdict"), "{report}");
}

#[tokio::test]
async fn a_fork_knows_the_files_its_caller_read_and_a_fresh_subagent_does_not() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
    let edit = r#"{"path": "a.txt", "old_string": "alpha", "new_string": "beta"}"#;
    let server = caching_server(vec![
        call("toolu_1", "read", json!({"path": "a.txt"})),
        call(
            "toolu_2",
            "agent",
            json!({"description": "fresh edit", "prompt": "In a.txt replace alpha by beta.",
                   "role": "general"}),
        ),
        vec![tool_use(0, "toolu_s1", "edit", edit), end("tool_use")],
        answer("Could not edit."),
        call(
            "toolu_3",
            "agent",
            json!({"description": "forked edit", "prompt": "Now replace alpha by beta in a.txt.",
                   "role": "general", "context": "fork"}),
        ),
        vec![tool_use(0, "toolu_s2", "edit", edit), end("tool_use")],
        answer("Replaced."),
        answer("a.txt now says beta."),
    ])
    .await;
    let (mut agent, _rx) = Build::new("alice", provider(&server)).agent(&repo);
    agent.enable_subagents(SubagentSettings::default());
    assert_completed(&turn(&mut agent, "Change a.txt to beta.").await);
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let fresh = results_in(&bodies[3]);
    assert!(
        fresh[0].1 && fresh[0].0.contains("has not been read"),
        "{fresh:?}"
    );
    let forked = results_in(&bodies[6]);
    assert!(!forked[0].1, "{forked:?}");
    assert_eq!(
        std::fs::read_to_string(repo.root.join("a.txt")).unwrap(),
        "beta\n"
    );
}

#[tokio::test]
async fn a_subagent_stops_at_its_max_turns_and_the_caller_is_told() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
    let server = caching_server(vec![
        call(
            "toolu_1",
            "agent",
            json!({"description": "dig", "prompt": "Read a.txt forever.", "role": "explore"}),
        ),
        call("toolu_s1", "read", json!({"path": "a.txt"})),
        answer("The subagent ran out of turns."),
    ])
    .await;
    let (mut agent, _rx) = Build::new("alice", provider(&server)).agent(&repo);
    let settings = SubagentSettings {
        max_turns: std::num::NonZeroU32::new(1).unwrap(),
        ..SubagentSettings::default()
    };
    agent.enable_subagents(settings);
    assert_completed(&turn(&mut agent, "Dig.").await);
    assert_eq!(server.requests().len(), 3, "one call for the subagent");
    let (report, is_error) = result_of(agent.history(), "toolu_1");
    assert!(is_error, "{report}");
    assert!(
        report.contains("stopped (reached max_turns (1))"),
        "{report}"
    );
}
