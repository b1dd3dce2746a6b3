//! The agent loop against a loopback server speaking the Anthropic Messages API: what a long
//! conversation sends (cache breakpoints, thinking blocks) and how it rides out overloads.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;

use crew_agent::{AgentEvent, RecoveryKind};
use crew_model::anthropic::AnthropicProvider;
use crew_model::{ApiKey, ModelProvider, ProviderSpec, provider_from_spec_with_env};
use crew_test_support::agent::{Build, Repo, assert_completed, drain, rendered, turn};
use crew_test_support::model::{
    Server, block, end, message_start, reply, text, tool_use, unmarked,
};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-0123456789";

fn thinking(index: u64, parts: &[&str], signature: &str) -> Vec<(&'static str, Value)> {
    let mut deltas: Vec<Value> = parts
        .iter()
        .map(|part| json!({"type": "thinking_delta", "thinking": part}))
        .collect();
    deltas.push(json!({"type": "signature_delta", "signature": signature}));
    block(
        index,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
        &deltas,
    )
}

fn redacted(index: u64, data: &str) -> Vec<(&'static str, Value)> {
    block(
        index,
        json!({"type": "redacted_thinking", "data": data}),
        &[],
    )
}

fn tool(index: u64, id: &str, input: &str) -> Vec<(&'static str, Value)> {
    tool_use(index, id, "read", input)
}

fn overloaded() -> Vec<(&'static str, Value)> {
    vec![(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )]
}

/// Indexes of the messages whose last block carries a breakpoint.
fn marked(body: &Value) -> Vec<usize> {
    let messages = body["messages"].as_array().unwrap();
    (0..messages.len())
        .filter(|&m| {
            let blocks = messages[m]["content"].as_array().unwrap();
            blocks.iter().any(|b| b.get("cache_control").is_some())
        })
        .collect()
}

#[tokio::test]
async fn each_call_reads_the_previous_prefix_and_thinking_goes_back_unchanged() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "alpha\n").unwrap();
    let server = Server::start(vec![
        reply(vec![
            vec![message_start(0, 900)],
            thinking(0, &["I should ", "read a.txt"], "sig-one"),
            redacted(1, "ENCRYPTED-1"),
            tool(2, "toolu_1", r#"{"path": "a.txt"}"#),
            end("tool_use"),
        ]),
        reply(vec![
            vec![message_start(900, 40)],
            thinking(0, &["Now a.txt again"], "sig-two"),
            tool(1, "toolu_2", r#"{"path": "a.txt"}"#),
            end("tool_use"),
        ]),
        reply(vec![
            vec![message_start(940, 30)],
            text(0, "It says alpha."),
            end("end_turn"),
        ]),
    ])
    .await;
    let provider = AnthropicProvider::new(&server.base_url, ApiKey::new(KEY), "claude-x")
        .unwrap()
        .with_thinking(2048);
    let (mut agent, mut rx) = Build::new("alice", Arc::new(provider)).agent(&repo);
    let result = turn(&mut agent, "What is in a.txt?").await;
    assert_completed(&result);

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        let breakpoints = body.to_string().matches("cache_control").count();
        assert!(breakpoints <= 4, "{breakpoints} breakpoints");
    }
    for pair in bodies.windows(2) {
        let (before, after) = (unmarked(&pair[0]), unmarked(&pair[1]));
        let last = before.len() - 1;
        // Everything the previous call sent is sent again byte for byte, and its last message
        // carries a breakpoint, so the call reads that prefix from the cache.
        assert_eq!(
            serde_json::to_string(&before).unwrap(),
            serde_json::to_string(&after[..before.len()]).unwrap()
        );
        assert_eq!(marked(&pair[1]), vec![last, after.len() - 1]);
    }
    assert_eq!(marked(&bodies[0]), vec![0]);

    // The first reply's thinking and redacted thinking go back exactly as they streamed.
    assert_eq!(
        bodies[1]["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "I should read a.txt", "signature": "sig-one"},
            {"type": "redacted_thinking", "data": "ENCRYPTED-1"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}}
        ])
    );
    assert_eq!(
        bodies[2]["messages"][3]["content"][0],
        json!({"type": "thinking", "thinking": "Now a.txt again", "signature": "sig-two"})
    );

    // Cache reads and writes are counted per call and for the turn.
    assert_eq!(result.usage.cache_read_input_tokens, 900 + 940);
    assert_eq!(result.usage.cache_creation_input_tokens, 900 + 40 + 30);
    let events = drain(&mut rx);
    let thoughts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Thinking { .. }))
        .count();
    assert_eq!(thoughts, 3);
    let shown = rendered(&agent);
    assert!(shown.contains("✻ thinking: I should read a.txt"), "{shown}");
    assert!(
        shown.contains("✻ thinking (redacted by the provider)"),
        "{shown}"
    );
    assert!(!shown.contains("ENCRYPTED-1"), "{shown}");
    assert!(
        shown.contains("(940 read from cache, 30 written)"),
        "{shown}"
    );
}

#[tokio::test]
async fn in_stream_overloads_are_retried_then_the_fallback_model_answers_and_it_is_said() {
    let repo = Repo::new();
    let server = Server::start(vec![
        // Overloaded right after message_start: retried without a trace in the reply.
        reply(vec![vec![message_start(0, 0)], overloaded()]),
        // Overloaded after some text: that text is voided, then the fallback takes over.
        reply(vec![
            vec![message_start(0, 0)],
            text(0, "Half an answ"),
            overloaded(),
        ]),
        reply(vec![
            vec![message_start(0, 0)],
            text(0, "The spare model answers."),
            end("end_turn"),
        ]),
    ])
    .await;
    let spec: ProviderSpec = toml::from_str(&format!(
        r#"kind = "anthropic"
model = "claude-main"
base_url = "{}"
fallback_model = "claude-spare"
fallback_after = 2"#,
        server.base_url
    ))
    .unwrap();
    let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| KEY.to_string());
    let provider: Arc<dyn ModelProvider> = provider_from_spec_with_env(&spec, &env).unwrap().into();
    let (mut agent, mut rx) = Build::new("alice", provider).agent(&repo);
    let result = turn(&mut agent, "Answer.").await;
    assert_completed(&result);

    let models: Vec<Value> = server
        .requests()
        .into_iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, ["claude-main", "claude-main", "claude-spare"]);
    assert_eq!(
        agent.history().last().unwrap().text(),
        "The spare model answers."
    );
    let events = drain(&mut rx);
    assert!(events.contains(&AgentEvent::ModelFallback {
        from: "claude-main".into(),
        to: "claude-spare".into(),
        reason: "overloaded 2 times in a row".into(),
    }));
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::Recovery { kind: RecoveryKind::ModelRetry | RecoveryKind::StreamError, reason, .. }
            if reason.contains("overloaded")
    )));
    let shown = rendered(&agent);
    assert!(
        shown.contains("⇄ model claude-main → claude-spare: overloaded 2 times in a row"),
        "{shown}"
    );
}
