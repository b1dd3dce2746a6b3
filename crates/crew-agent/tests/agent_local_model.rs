//! The agent loop against a loopback OpenAI-compatible server answering as a small local model
//! on llama.cpp or Ollama does: broken calls, unknown tools, calls written as text, replies cut
//! by the output limit, empty replies, the same call again and again, a small context window.
//! Each becomes a tool error the model reads or a bounded stop with its reason, in the
//! transcript; each is tried streamed and whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crew_agent::{AgentEvent, EMPTY_REPLY_PROMPT, RecoveryKind, StopReason};
use crew_model::openai::OpenAiProvider;
use crew_test_support::agent::{Build, Repo, assert_completed, chatter, drain, rendered, turn};
use crew_test_support::model::{Recorded, Reply, Server, openai_call, openai_reply};
use serde_json::{Value, json};

fn provider(server: &Server, streaming: bool) -> Arc<OpenAiProvider> {
    Arc::new(
        OpenAiProvider::new(&format!("{}/v1", server.base_url), None, "gemma")
            .unwrap()
            .with_streaming(streaming),
    )
}

/// Chat requests only (the agent also asks the server about its context window).
fn chats(server: &Server) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/chat/completions")
        .collect()
}

/// A server answering chat requests with `replies` in turn (the last one again after that) and
/// every other path with 404, as a server that does not say its window.
async fn chat_server(replies: Vec<(Value, &'static str)>, streaming: bool) -> Server {
    let served = AtomicU32::new(0);
    Server::start_with(move |request, _| {
        if request.path != "/v1/chat/completions" {
            return Reply::error(404, json!({"error": "not found"}));
        }
        let n = served.fetch_add(1, Ordering::SeqCst) as usize;
        let (message, finish) = replies[n.min(replies.len() - 1)].clone();
        openai_reply(message, finish, streaming)
    })
    .await
}

fn calls(calls: Vec<Value>) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

fn text(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// The tool results the model was sent back, in order: (content, is it an error).
fn tool_results(agent: &crew_agent::Agent) -> Vec<(String, bool)> {
    agent
        .history()
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|(_, content, error)| (content.to_string(), error))
        .collect()
}

#[tokio::test]
async fn broken_unknown_and_text_calls_are_answered_and_the_turn_goes_on() {
    for streaming in [true, false] {
        let repo = Repo::new();
        std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
        let server = chat_server(
            vec![
                (calls(vec![openai_call("c1", "read", "{\"path\": a.txt}")]), "tool_calls"),
                (calls(vec![openai_call("c2", "make_coffee", "{}")]), "tool_calls"),
                (
                    text("<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>"),
                    "stop",
                ),
                (text("It says alpha."), "stop"),
            ],
            streaming,
        )
        .await;
        let (mut agent, _rx) = Build::new("alice", provider(&server, streaming)).agent(&repo);
        let result = turn(&mut agent, "What is in a.txt?").await;
        assert_completed(&result);
        assert_eq!(result.output, "It says alpha.");
        let results = tool_results(&agent);
        assert_eq!(results.len(), 3, "{results:?}");
        assert!(
            results[0].1 && results[0].0.contains("not valid JSON"),
            "{results:?}"
        );
        assert!(
            results[1].1 && results[1].0.contains("unknown tool `make_coffee`"),
            "{results:?}"
        );
        assert!(
            !results[2].1 && results[2].0.contains("alpha"),
            "{results:?}"
        );
        // What goes back to the server is valid: the broken arguments as a JSON string.
        let second = &chats(&server)[1].body;
        assert_eq!(
            second["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("\"{\\\"path\\\": a.txt}\"")
        );
        let shown = rendered(&agent);
        assert!(shown.contains("not valid JSON"), "{shown}");
        assert!(shown.contains("unknown tool `make_coffee`"), "{shown}");
    }
}

#[tokio::test]
async fn a_call_cut_by_the_output_limit_is_an_error_and_a_bounded_stop() {
    for streaming in [true, false] {
        let repo = Repo::new();
        // Each cut somewhere else (the same cut again would be the repeat guard's to stop).
        let cut = |n: usize| {
            let arguments = format!(
                "{{\"path\": \"big.txt\", \"content\": \"lorem {}",
                "ipsum ".repeat(n)
            );
            (
                calls(vec![openai_call(&format!("c{n}"), "write", &arguments)]),
                "length",
            )
        };
        let server = chat_server((1..=5).map(cut).collect(), streaming).await;
        let (mut agent, mut rx) = Build::new("alice", provider(&server, streaming)).agent(&repo);
        let result = turn(&mut agent, "Write big.txt").await;
        assert_eq!(result.stop_reason, StopReason::Error, "{}", result.reason);
        assert!(
            result.reason.contains("still cut at max_tokens"),
            "{}",
            result.reason
        );
        // Three cut replies were answered (not retried as broken streams), the fourth stopped.
        assert_eq!(chats(&server).len(), 4);
        let results = tool_results(&agent);
        // The fourth call, never answered, got its result when the history was normalised.
        assert_eq!(results.len(), 4, "{results:?}");
        assert!(results.iter().all(|(_, error)| *error), "{results:?}");
        assert!(
            results[..3]
                .iter()
                .all(|(content, _)| content.contains("cut off at the output limit"))
        );
        assert!(!repo.root.join("big.txt").exists(), "a cut call never runs");
        let events = drain(&mut rx);
        assert!(!events.iter().any(|e| matches!(
            e,
            AgentEvent::Recovery {
                kind: RecoveryKind::StreamError,
                ..
            }
        )));
        assert!(rendered(&agent).contains("cut off at the output limit"));
    }
}

#[tokio::test]
async fn empty_replies_are_nudged_then_stop_the_turn_with_the_reason() {
    for streaming in [true, false] {
        let repo = Repo::new();
        let server = chat_server(vec![(text(""), "stop")], streaming).await;
        let (mut agent, mut rx) = Build::new("alice", provider(&server, streaming)).agent(&repo);
        let result = turn(&mut agent, "Hello?").await;
        assert_eq!(result.stop_reason, StopReason::Error);
        assert!(
            result.reason.contains("empty 3 times in a row"),
            "{}",
            result.reason
        );
        let chats = chats(&server);
        assert_eq!(chats.len(), 3);
        assert!(chats[1].body.to_string().contains(EMPTY_REPLY_PROMPT));
        let nudges = drain(&mut rx)
            .into_iter()
            .filter(|e| {
                matches!(
                    e,
                    AgentEvent::Recovery {
                        kind: RecoveryKind::EmptyReply,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(nudges, 2);
        assert!(rendered(&agent).contains("reply was empty"));
    }
    // An empty reply then an answer completes.
    let repo = Repo::new();
    let server = chat_server(vec![(text(""), "stop"), (text("Hi."), "stop")], true).await;
    let (mut agent, _rx) = Build::new("alice", provider(&server, true)).agent(&repo);
    assert_completed(&turn(&mut agent, "Hello?").await);
}

#[tokio::test]
async fn the_same_call_again_is_warned_then_stopped_whatever_it_returns() {
    let repo = Repo::new();
    let file = repo.root.join("count.txt");
    std::fs::write(&file, "0").unwrap();
    let served = AtomicU32::new(0);
    let server = {
        let file = file.clone();
        Server::start_with(move |request, _| {
            if request.path != "/v1/chat/completions" {
                return Reply::error(404, json!({"error": "not found"}));
            }
            // Each read returns something new, as each task_create returns a new id.
            let n = served.fetch_add(1, Ordering::SeqCst);
            std::fs::write(&file, n.to_string()).unwrap();
            openai_reply(
                calls(vec![openai_call("c", "read", "{\"path\": \"count.txt\"}")]),
                "tool_calls",
                true,
            )
        })
        .await
    };
    let (mut agent, mut rx) = Build::new("lead", provider(&server, true)).agent(&repo);
    let result = turn(&mut agent, "Count").await;
    assert_eq!(result.stop_reason, StopReason::RepeatedAction);
    assert!(result.reason.contains("read"), "{}", result.reason);
    assert!(
        result.reason.contains("3 times in a row"),
        "{}",
        result.reason
    );
    let chats = chats(&server);
    assert_eq!(chats.len(), 3, "stopped at max_repeats, not max_turns");
    // The model was told before the stop.
    assert!(
        chats[2]
            .body
            .to_string()
            .contains("once more ends your turn")
    );
    let warned = drain(&mut rx).into_iter().any(|e| {
        matches!(
            e,
            AgentEvent::Recovery {
                kind: RecoveryKind::RepeatedCall,
                ..
            }
        )
    });
    assert!(warned);
    assert!(rendered(&agent).contains("once more ends your turn"));
}

#[tokio::test]
async fn the_window_llama_cpp_reports_sets_the_output_limit_and_compaction() {
    let repo = Repo::new();
    let server = Server::start_with(|request, _| match request.path.as_str() {
        "/props" => Reply::json(200, json!({"default_generation_settings": {"n_ctx": 8192}})),
        "/v1/chat/completions" => openai_reply(text("ok"), "stop", true),
        _ => Reply::error(404, json!({"error": "not found"})),
    })
    .await;
    let (mut agent, mut rx) = Build::new("alice", provider(&server, true)).agent(&repo);
    // About 20k tokens of history: nothing for a 200k model, too much for 8k.
    agent.load_history(&chatter(40));
    let result = turn(&mut agent, "Go on").await;
    assert_completed(&result);
    let chats = chats(&server);
    // The turn's call (the others summarise and check the summary, with less).
    let answer = &chats.last().unwrap().body;
    assert_eq!(answer["max_tokens"], json!(2048), "a quarter of the window");
    let compacted = drain(&mut rx)
        .into_iter()
        .any(|e| matches!(e, AgentEvent::Compaction { .. }));
    assert!(compacted, "compaction follows the window");
    let last = chats.last().unwrap().body.to_string();
    assert!(
        last.len() / 4 < 8192,
        "the prompt fits the window: {} bytes",
        last.len()
    );
}

#[tokio::test]
async fn a_llama_cpp_overflow_compacts_and_the_window_is_learned() {
    let repo = Repo::new();
    let served = AtomicU32::new(0);
    let server = Server::start_with(move |request, _| {
        if request.path != "/v1/chat/completions" {
            return Reply::error(404, json!({"error": "not found"}));
        }
        if served.fetch_add(1, Ordering::SeqCst) == 0 {
            return Reply::error(400, json!({"error": {"code": 400,
                "message": "request (21000 tokens) exceeds the available context size (4096 tokens), try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": 21000, "n_ctx": 4096}}));
        }
        openai_reply(text("ok"), "stop", false)
    })
    .await;
    let (mut agent, mut rx) = Build::new("alice", provider(&server, false)).agent(&repo);
    agent.load_history(&chatter(40));
    let result = turn(&mut agent, "Go on").await;
    assert_completed(&result);
    let events = drain(&mut rx);
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Recovery {
            kind: RecoveryKind::PromptTooLong,
            ..
        }
    )));
    let chats = chats(&server);
    let retried = &chats.last().unwrap().body;
    assert_eq!(retried["max_tokens"], json!(1024), "the window was learned");
    assert!(retried.to_string().len() < chats[0].body.to_string().len() / 2);
}

#[tokio::test]
async fn the_configured_window_counts_when_the_server_says_none() {
    let repo = Repo::new();
    let server = chat_server(vec![(text("ok"), "stop")], true).await;
    let compaction = crew_agent::CompactionThresholds {
        context_window: Some(16_384),
        ..Default::default()
    };
    let (mut agent, _rx) = Build::new("alice", provider(&server, true))
        .compaction(compaction)
        .agent(&repo);
    assert_completed(&turn(&mut agent, "Hi").await);
    assert_eq!(chats(&server)[0].body["max_tokens"], json!(4096));
    // It asked the server first, once.
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.path == "/props")
        .count();
    assert_eq!(asked, 1);
}

#[tokio::test]
async fn a_reply_cut_by_the_wall_time_limit_still_counts_what_it_spent() {
    // A slow local model: the reply streams for a while and the wall-time limit ends it. The
    // server reports usage only at the end, which never comes; the spend is estimated, not 0.
    // The call it wrote before the cut never runs, and the transcript says so.
    let repo = Repo::new();
    let mut gates = Vec::new();
    let server = Server::start_with(move |request, _| {
        if request.path != "/v1/chat/completions" {
            return Reply::error(404, json!({"error": "not found"}));
        }
        let start = json!({"id": "x", "object": "chat.completion.chunk", "created": 1,
            "model": "gemma", "choices": [{"index": 0,
            "delta": {"role": "assistant", "content": "thinking aloud ".repeat(40)},
            "finish_reason": null}]});
        // A second call's start completes the first, which the agent then holds to run.
        let call = |index: u64, id: &str, name: &str, arguments: &str| {
            json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "gemma",
                "choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id,
                "type": "function", "function": {"name": name, "arguments": arguments}}]},
                "finish_reason": null}]})
        };
        let first = call(
            0,
            "c1",
            "write",
            "{\"path\": \"b.txt\", \"content\": \"x\"}",
        );
        let second = call(1, "c2", "read", "{\"pa");
        let (reply, gate) = Reply::sse(&[
            format!("data: {start}\n\ndata: {first}\n\ndata: {second}\n\n"),
            "data: [DONE]\n\n".into(),
        ])
        .gated(1);
        gates.push(gate);
        reply
    })
    .await;
    let limits = crew_agent::Limits {
        wall_time: std::time::Duration::from_millis(1500),
        ..crew_agent::Limits::default()
    };
    let (mut agent, mut rx) = Build::new("alice", provider(&server, true))
        .limits(limits)
        .agent(&repo);
    let result = turn(&mut agent, "Plan the work.").await;
    let events = drain(&mut rx);
    let called = events
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolUse { name, .. } if name == "write"));
    let told = events.iter().any(|e| {
        matches!(e, AgentEvent::ToolResult { name, is_error: true, content, .. }
            if name == "write" && content.starts_with("not run: the reply was cut off"))
    });
    assert!(called && told, "{events:?}");
    assert!(!repo.root.join("b.txt").exists());
    assert_eq!(result.stop_reason, StopReason::MaxBudgetReached);
    assert_eq!(result.turns, 0, "no model call completed");
    // 600 bytes and more streamed ≈ 150 tokens; the prompt is the system prompt, tools and input.
    assert!(result.usage.output_tokens >= 150, "{:?}", result.usage);
    assert!(result.usage.input_tokens > 100, "{:?}", result.usage);
}

#[tokio::test]
async fn copies_of_one_call_in_one_reply_beyond_the_repeat_limit_are_not_run() {
    // A small model writing the same call a dozen times in one reply (seen with Gemma 3 270M:
    // `send_message` to "your_job_name" over and over): three run, the copies after them are
    // answered with an error and never run, and the repeat guard ends the turn.
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
    let dozen: Vec<Value> = (0..12)
        .map(|i| openai_call(&format!("c{i}"), "read", "{\"path\": \"a.txt\"}"))
        .collect();
    let server = chat_server(vec![(calls(dozen), "tool_calls")], true).await;
    let (mut agent, _rx) = Build::new("lead", provider(&server, true)).agent(&repo);
    let result = turn(&mut agent, "Read it").await;
    assert_eq!(result.stop_reason, StopReason::RepeatedAction);
    assert!(
        result
            .reason
            .starts_with("the same call (read) with the same input was made 12 times"),
        "{}",
        result.reason
    );
    assert_eq!(chats(&server).len(), 1);
    let results = tool_results(&agent);
    assert_eq!(results.len(), 12, "{results:?}");
    assert!(
        results[..3].iter().all(|(c, e)| !e && c.contains("alpha")),
        "{results:?}"
    );
    assert!(
        results[3..]
            .iter()
            .all(|(c, e)| *e && c.contains("copies are not run")),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_reply_that_keeps_echoing_its_prompt_is_cut_with_the_reason() {
    // Gemma 3 270M answered the lead's goal with 15,000 characters of its own system prompt,
    // again and again, until the wall-time limit. Now the echo is cut once it is plain.
    for streaming in [true, false] {
        let repo = Repo::new();
        let echo = "You are lead, a lead agent on a crew team: several coding agents working in one git repository, coordinated through shared task files and inboxes. Read a file before you change it. Prefer read, grep and glob over shell commands for looking. ".repeat(3);
        let server = chat_server(vec![(text(&echo.repeat(6)), "stop")], streaming).await;
        let (mut agent, _rx) = Build::new("lead", provider(&server, streaming)).agent(&repo);
        let result = turn(&mut agent, "Plan it").await;
        assert_eq!(result.stop_reason, StopReason::RepeatedAction);
        assert!(
            result
                .reason
                .starts_with("the reply kept writing the same text"),
            "{}",
            result.reason
        );
        assert!(result.usage.output_tokens > 0);
        assert!(result.usage.input_tokens > 0, "the prompt it read counts");
        assert_eq!(chats(&server).len(), 1);
        assert!(
            agent
                .history()
                .iter()
                .all(|m| !m.text().contains("several coding agents")),
            "the echo never enters the history"
        );
    }
}
