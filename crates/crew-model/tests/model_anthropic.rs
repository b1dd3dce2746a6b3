//! The Anthropic provider against a loopback server speaking the Messages API stream format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crew_model::anthropic::AnthropicProvider;
use crew_model::{
    ApiKey, FinishReason, ModelError, ModelProvider, RetryPolicy, Retrying, StreamEvent, Usage,
};
use crew_test_support::model::{Reply, Server, collect, sample_request, sse_events};
use futures::StreamExt;
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-0123456789";

fn provider(server: &Server) -> AnthropicProvider {
    AnthropicProvider::new(&server.base_url, ApiKey::new(KEY), "claude-default").unwrap()
}

fn message_start() -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "content": [], "model": "claude-x", "stop_reason": null,
            "usage": {"input_tokens": 472, "output_tokens": 2,
                "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000}}}),
    )
}

fn text_block(index: u64, parts: &[&str]) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
    )];
    for part in parts {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": part}}),
        ));
    }
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    events
}

fn tool_block(index: u64, id: &str, name: &str, fragments: &[&str]) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )];
    for fragment in fragments {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}),
        ));
    }
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    events
}

fn message_end(reason: &str, output_tokens: u64) -> Vec<(&'static str, Value)> {
    vec![
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

/// A recorded-format reply: text, two tool calls (input split into fragments), pings, usage.
fn full_reply() -> Vec<(&'static str, Value)> {
    let mut events = vec![message_start(), ("ping", json!({"type": "ping"}))];
    events.extend(text_block(0, &["Let me look", " at both files."]));
    events.extend(tool_block(
        1,
        "toolu_A",
        "read_file",
        &["", "{\"path\": \"src/", "main.rs\"}"],
    ));
    events.extend(tool_block(
        2,
        "toolu_B",
        "grep",
        &["{\"pattern\":", " \"fn main\"}"],
    ));
    events.extend(message_end("tool_use", 89));
    events
}

fn expected_full_reply() -> Vec<Result<StreamEvent, ModelError>> {
    let start_usage = Usage {
        input_tokens: 472,
        output_tokens: 2,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 2000,
        cost_micros: None,
    };
    let final_usage = Usage {
        output_tokens: 89,
        ..start_usage
    };
    vec![
        Ok(StreamEvent::MessageStart),
        Ok(StreamEvent::Usage(start_usage)),
        Ok(StreamEvent::TextDelta("Let me look".into())),
        Ok(StreamEvent::TextDelta(" at both files.".into())),
        Ok(StreamEvent::ToolUse {
            id: "toolu_A".into(),
            name: "read_file".into(),
            input: json!({"path": "src/main.rs"}),
        }),
        Ok(StreamEvent::ToolUse {
            id: "toolu_B".into(),
            name: "grep".into(),
            input: json!({"pattern": "fn main"}),
        }),
        Ok(StreamEvent::Usage(final_usage)),
        Ok(StreamEvent::Stop {
            reason: FinishReason::ToolUse,
            usage: final_usage,
        }),
    ]
}

/// The SSE text cut into pieces of `size` bytes, so events straddle reads.
fn pieces(text: &str, size: usize) -> Vec<Vec<u8>> {
    text.as_bytes().chunks(size).map(<[u8]>::to_vec).collect()
}

#[tokio::test]
async fn streams_text_tool_calls_and_usage() {
    let server = Server::start(vec![Reply::sse(&pieces(&sse_events(&full_reply()), 37))]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(items, expected_full_reply());
}

#[tokio::test]
async fn tool_use_is_emitted_before_the_stream_ends() {
    let events = full_reply();
    // Everything up to and including the first tool block's stop, then the rest held back.
    let first_tool_stop = 2 + 4 + 5;
    let head = sse_events(&events[..first_tool_stop]);
    let tail = sse_events(&events[first_tool_stop..]);
    let (reply, release) = Reply::sse(&[head, tail]).gated(1);
    let server = Server::start(vec![reply]).await;
    let provider = provider(&server);
    let mut stream = provider.stream(sample_request());
    let mut seen = Vec::new();
    while let Some(item) = stream.next().await {
        let event = item.unwrap();
        let is_tool = matches!(event, StreamEvent::ToolUse { .. });
        seen.push(event);
        if is_tool {
            break;
        }
    }
    assert!(matches!(&seen[4], StreamEvent::ToolUse { id, .. } if id == "toolu_A"));
    release.send(()).unwrap();
    let rest: Vec<_> = stream.collect().await;
    assert!(matches!(
        rest.last(),
        Some(Ok(StreamEvent::Stop {
            reason: FinishReason::ToolUse,
            ..
        }))
    ));
}

#[tokio::test]
async fn request_carries_headers_cache_control_tools_and_tool_results() {
    let server = Server::start(vec![Reply::sse(&[sse_events(&full_reply())])]).await;
    collect(&provider(&server), sample_request()).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let body = &request.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"],
        json!([
            {"type": "text", "text": "You are a crew teammate.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Current task: 3"}
        ])
    );
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "read_file");
    assert_eq!(tools[0]["input_schema"]["required"], json!(["path"]));
    assert!(tools[0].get("cache_control").is_none());
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/lib.rs"}})
    );
    // Breakpoints on the last message and on the one the previous call ended with.
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "no such file", "is_error": true, "cache_control": {"type": "ephemeral"}}]})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        body["messages"][1]["content"][1]
            .get("cache_control")
            .is_none()
    );
}

#[tokio::test]
async fn rate_limit_then_success_through_retrying() {
    let limited = Reply::error(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    )
    .header("retry-after", "1");
    let server = Server::start(vec![limited, Reply::sse(&[sse_events(&full_reply())])]).await;
    // max_delay caps the server's one second, keeping the test quick.
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    };
    let retrying = Retrying::new(provider(&server), policy);
    let mut items = collect(&retrying, sample_request()).await;
    // The retry is announced first, with the next attempt and its wait (the cap).
    assert!(
        matches!(items.remove(0), Ok(StreamEvent::Restart { attempt: 1, reason })
            if reason.ends_with("slow down; attempt 2 of 3 in 0.0s")),
    );
    assert_eq!(items, expected_full_reply());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn rate_limit_error_carries_retry_after() {
    let limited = Reply::error(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
    )
    .header("retry-after", "12");
    let server = Server::start(vec![limited]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(
        items,
        vec![Err(ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(12)),
            message: "slow down".into()
        })]
    );
}

#[tokio::test]
async fn http_statuses_map_to_errors() {
    let body = |kind: &str, message: &str| json!({"type": "error", "error": {"type": kind, "message": message}});
    let server = Server::start(vec![
        Reply::error(529, body("overloaded_error", "Overloaded")),
        Reply::error(
            400,
            body(
                "invalid_request_error",
                "prompt is too long: 250000 tokens > 200000 maximum",
            ),
        ),
        Reply::error(
            413,
            body("request_too_large", "Request exceeds the maximum size"),
        ),
        Reply::error(
            400,
            body("invalid_request_error", "messages: field required"),
        ),
        Reply::error(500, body("api_error", "Internal server error")),
        Reply::error(403, body("permission_error", "no access")),
    ])
    .await;
    let provider = provider(&server);
    let mut errors = Vec::new();
    for _ in 0..6 {
        let items = collect(&provider, sample_request()).await;
        assert_eq!(items.len(), 1, "an HTTP error is the only item");
        errors.push(items.into_iter().next().unwrap().unwrap_err());
    }
    assert!(matches!(&errors[0], ModelError::Overloaded { message } if message == "Overloaded"));
    assert!(matches!(&errors[1], ModelError::PromptTooLong { .. }));
    assert!(matches!(&errors[2], ModelError::PromptTooLong { .. }));
    assert!(
        matches!(&errors[3], ModelError::InvalidRequest { message } if message.contains("field required"))
    );
    assert!(matches!(&errors[4], ModelError::Server { status: 500, .. }));
    assert!(matches!(&errors[5], ModelError::Auth { status: 403, .. }));
}

fn stream_error(kind: &str) -> (&'static str, Value) {
    (
        "error",
        json!({"type": "error", "error": {"type": kind, "message": kind}}),
    )
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    }
}

#[tokio::test]
async fn in_stream_errors_are_retried_while_no_tool_call_has_come() {
    let mut after_text = vec![message_start()];
    after_text.extend(text_block(0, &["Par"]));
    after_text.push(stream_error("api_error"));
    let server = Server::start(vec![
        Reply::sse(&[sse_events(&[
            message_start(),
            stream_error("overloaded_error"),
        ])]),
        Reply::sse(&[sse_events(&[
            message_start(),
            stream_error("rate_limit_error"),
        ])]),
        Reply::sse(&[sse_events(&after_text)]),
        Reply::sse(&[sse_events(&full_reply())]),
    ])
    .await;
    let retrying = Retrying::new(provider(&server), quick_retries());
    let items = collect(&retrying, sample_request()).await;
    assert_eq!(server.requests().len(), 4);
    let restart = items
        .iter()
        .position(|item| matches!(item, Ok(StreamEvent::Restart { attempt: 3, reason }) if reason.contains("api_error")))
        .expect("the streamed text is voided");
    assert_eq!(items[restart - 1], Ok(StreamEvent::TextDelta("Par".into())));
    assert_eq!(items[restart + 1..], expected_full_reply()[..]);
}

#[tokio::test]
async fn an_in_stream_error_after_a_tool_call_is_passed_on_and_not_retried() {
    let mut events = vec![message_start()];
    events.extend(tool_block(0, "toolu_A", "read_file", &["{}"]));
    events.push(stream_error("overloaded_error"));
    let server = Server::start(vec![
        Reply::sse(&[sse_events(&events)]),
        Reply::sse(&[sse_events(&full_reply())]),
    ])
    .await;
    let retrying = Retrying::new(provider(&server), quick_retries());
    let items = collect(&retrying, sample_request()).await;
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolUse { .. })))
    );
    assert_eq!(
        items.last(),
        Some(&Err(ModelError::Overloaded {
            message: "overloaded_error".into()
        }))
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a tool call had come, so no retry"
    );
}

#[tokio::test]
async fn malformed_chunk_is_a_stream_error() {
    let mut text = sse_events(&[message_start()]);
    text.push_str("event: content_block_start\ndata: {\"type\": \"content_block_start\", \n\n");
    let server = Server::start(vec![Reply::sse(&[text])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(items.len(), 3);
    assert!(
        matches!(&items[2], Err(ModelError::Stream { message }) if message.contains("malformed"))
    );
}

#[tokio::test]
async fn disconnect_mid_tool_call_emits_no_partial_tool_use() {
    let mut events = vec![message_start()];
    events.extend(text_block(0, &["Reading"]));
    let tool = tool_block(
        1,
        "toolu_A",
        "read_file",
        &["{\"path\": ", "\"src/main.rs\"}"],
    );
    // The tool block's start and first fragment arrive; its second fragment and stop never do.
    events.extend(tool.into_iter().take(2));
    let server = Server::start(vec![Reply::sse(&[sse_events(&events)]).aborted()]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert!(
        !items
            .iter()
            .any(|item| matches!(item, Ok(StreamEvent::ToolUse { .. }))),
        "{items:?}"
    );
    assert!(matches!(items.last(), Some(Err(ModelError::Stream { .. }))));
}

#[tokio::test]
async fn clean_end_before_message_stop_is_a_stream_error() {
    let mut events = vec![message_start()];
    events.extend(text_block(0, &["Half a reply"]));
    let server = Server::start(vec![Reply::sse(&[sse_events(&events)])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert!(
        matches!(items.last(), Some(Err(ModelError::Stream { message })) if message.contains("message_stop"))
    );
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::Stop { .. })))
    );
}

#[tokio::test]
async fn invalid_tool_input_json_is_a_stream_error() {
    let mut events = vec![message_start()];
    events.extend(tool_block(
        0,
        "toolu_A",
        "read_file",
        &["{\"path\": ", "src/main.rs}"],
    ));
    events.extend(message_end("tool_use", 5));
    let server = Server::start(vec![Reply::sse(&[sse_events(&events)])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolUse { .. })))
    );
    assert!(
        matches!(items.last(), Some(Err(ModelError::Stream { message })) if message.contains("toolu_A"))
    );
}

#[tokio::test]
async fn unknown_events_deltas_and_block_types_are_ignored() {
    let mut events = vec![
        message_start(),
        (
            "brand_new_event",
            json!({"type": "brand_new_event", "x": 1}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "brand_new_block", "x": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "brand_new_delta", "x": "hmm"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    let shifted = |mut pair: (&'static str, Value)| {
        if let Some(index) = pair.1["index"].as_u64() {
            pair.1["index"] = json!(index + 1);
        }
        pair
    };
    let mut rest: Vec<_> = full_reply().into_iter().skip(1).map(shifted).collect();
    rest.insert(
        3,
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "citations_delta", "citation": {}}}),
        ),
    );
    events.extend(rest);
    let mut text = sse_events(&events);
    text.insert_str(0, ": a comment line\n\n");
    let server = Server::start(vec![Reply::sse(&[text])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(items, expected_full_reply());
}

#[tokio::test]
async fn unreachable_server_is_a_retryable_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = AnthropicProvider::new(&base, ApiKey::new(KEY), "m").unwrap();
    let items = collect(&provider, sample_request()).await;
    assert_eq!(items.len(), 1);
    let error = items[0].clone().unwrap_err();
    assert!(matches!(error, ModelError::Connect { .. }), "{error:?}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn the_key_never_shows_in_debug_or_errors() {
    let echoing = Reply::error(
        401,
        json!({"type": "error", "error": {"type": "authentication_error",
            "message": format!("invalid x-api-key {KEY}")}}),
    );
    let server = Server::start(vec![echoing]).await;
    let provider = provider(&server);
    assert!(!format!("{provider:?}").contains(KEY));
    let items = collect(&provider, sample_request()).await;
    let error = items[0].clone().unwrap_err();
    assert!(matches!(error, ModelError::Auth { status: 401, .. }));
    for text in [format!("{error}"), format!("{error:?}")] {
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
