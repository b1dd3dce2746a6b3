//! The OpenAI-compatible provider against a loopback server speaking chat-completions chunks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crew_model::openai::OpenAiProvider;
use crew_model::{
    ApiKey, FinishReason, ModelError, ModelProvider, ProviderSpec, RetryPolicy, Retrying,
    StreamEvent, Usage, provider_from_spec_with_env,
};
use crew_test_support::model::{Reply, Server, collect, sample_request, sse_data};
use futures::StreamExt;
use serde_json::{Value, json};

const KEY: &str = "sk-openai-test-987654321";

fn provider(server: &Server) -> OpenAiProvider {
    OpenAiProvider::new(&server.base_url, Some(ApiKey::new(KEY)), "gpt-default").unwrap()
}

/// A chunk with the full envelope.
fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
        "model": "gpt-x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// A chunk as some local servers send it: no id, created or model.
fn bare_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage_chunk() -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 500, "completion_tokens": 40, "total_tokens": 540,
            "prompt_tokens_details": {"cached_tokens": 300}}})
}

fn call_start(index: u64, id: &str, name: &str) -> Value {
    json!({"tool_calls": [{"index": index, "id": id, "type": "function",
        "function": {"name": name, "arguments": ""}}]})
}

fn call_args(index: u64, arguments: &str) -> Value {
    json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})
}

/// Text, then two tool calls streamed as fragments, finish, usage, `[DONE]`.
fn full_reply() -> Vec<Value> {
    vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Let me"}), None),
        bare_chunk(json!({"content": " look."}), None),
        chunk(call_start(0, "call_A", "read_file"), None),
        chunk(call_args(0, "{\"path\": \"src/"), None),
        bare_chunk(call_args(0, "main.rs\"}"), None),
        chunk(call_start(1, "call_B", "grep"), None),
        chunk(call_args(1, "{\"pattern\": \"fn main\"}"), None),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(),
    ]
}

fn tool_use(id: &str, name: &str, input: Value) -> Result<StreamEvent, ModelError> {
    Ok(StreamEvent::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn final_usage() -> Usage {
    Usage {
        input_tokens: 200,
        output_tokens: 40,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 300,
        cost_micros: None,
    }
}

#[tokio::test]
async fn streams_text_tool_calls_and_usage() {
    let text = sse_data(&full_reply());
    let pieces: Vec<&[u8]> = text.as_bytes().chunks(29).collect();
    let server = Server::start(vec![Reply::sse(&pieces)]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(
        items,
        vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::TextDelta("Let me".into())),
            Ok(StreamEvent::TextDelta(" look.".into())),
            tool_use("call_A", "read_file", json!({"path": "src/main.rs"})),
            tool_use("call_B", "grep", json!({"pattern": "fn main"})),
            Ok(StreamEvent::Usage(final_usage())),
            Ok(StreamEvent::Stop {
                reason: FinishReason::ToolUse,
                usage: final_usage()
            }),
        ]
    );
}

#[tokio::test]
async fn a_call_is_emitted_once_the_next_call_starts_before_the_stream_ends() {
    let reply = full_reply();
    // Held back: everything after call_B's first fragment.
    let head: String = reply[..7]
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect();
    let tail: String = sse_data(&reply[7..]);
    let (reply, release) = Reply::sse(&[head, tail]).gated(1);
    let server = Server::start(vec![reply]).await;
    let provider = provider(&server);
    let mut stream = provider.stream(sample_request());
    let mut first_call = None;
    while let Some(item) = stream.next().await {
        if let StreamEvent::ToolUse { id, .. } = item.unwrap() {
            first_call = Some(id);
            break;
        }
    }
    assert_eq!(first_call.as_deref(), Some("call_A"));
    release.send(()).unwrap();
    let rest: Vec<_> = stream.collect().await;
    assert!(rest.contains(&tool_use("call_B", "grep", json!({"pattern": "fn main"}))));
}

#[tokio::test]
async fn parallel_calls_reusing_index_zero_are_told_apart_by_id() {
    let reply = vec![
        bare_chunk(call_start(0, "call_1", "read_file"), None),
        bare_chunk(call_args(0, "{\"path\": \"a\"}"), None),
        bare_chunk(call_start(0, "call_2", "read_file"), None),
        bare_chunk(call_args(0, "{\"path\": \"b\"}"), None),
        // A server that repeats the id on every fragment of the same call.
        bare_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_3", "function": {"name": "grep", "arguments": "{\"pattern\":"}}]}),
            None,
        ),
        bare_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_3", "function": {"arguments": " \"x\"}"}}]}),
            None,
        ),
        bare_chunk(json!({}), Some("tool_calls")),
    ];
    let server = Server::start(vec![Reply::sse(&[sse_data(&reply)])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    let calls: Vec<_> = items
        .into_iter()
        .filter(|i| matches!(i, Ok(StreamEvent::ToolUse { .. })))
        .collect();
    assert_eq!(
        calls,
        vec![
            tool_use("call_1", "read_file", json!({"path": "a"})),
            tool_use("call_2", "read_file", json!({"path": "b"})),
            tool_use("call_3", "grep", json!({"pattern": "x"})),
        ]
    );
}

#[tokio::test]
async fn request_converts_messages_tools_and_sends_the_bearer_key() {
    let server = Server::start(vec![Reply::sse(&[sse_data(&full_reply())])]).await;
    collect(&provider(&server), sample_request()).await;
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &request.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are a crew teammate.\n\nCurrent task: 3"},
            {"role": "user", "content": "Fix the bug"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [{"id": "toolu_1",
                "type": "function", "function": {"name": "read_file",
                "arguments": "{\"path\":\"src/lib.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: no such file"},
        ])
    );
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "read_file", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                "required": ["path"]}}})
    );
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    let text_then = |finish: &str| {
        sse_data(&[
            chunk(json!({"content": "x"}), None),
            chunk(json!({}), Some(finish)),
        ])
    };
    // Ollama says "stop" even when the reply is a tool call.
    let ollama_call = sse_data(&[
        bare_chunk(call_start(0, "call_1", "grep"), None),
        bare_chunk(call_args(0, "{}"), Some("stop")),
    ]);
    let server = Server::start(vec![
        Reply::sse(&[text_then("stop")]),
        Reply::sse(&[text_then("length")]),
        Reply::sse(&[text_then("content_filter")]),
        Reply::sse(&[text_then("something_new")]),
        Reply::sse(&[ollama_call]),
    ])
    .await;
    let provider = provider(&server);
    let mut reasons = Vec::new();
    for _ in 0..5 {
        match collect(&provider, sample_request()).await.pop() {
            Some(Ok(StreamEvent::Stop { reason, .. })) => reasons.push(reason),
            other => panic!("no stop: {other:?}"),
        }
    }
    assert_eq!(
        reasons,
        vec![
            FinishReason::EndTurn,
            FinishReason::MaxTokens,
            FinishReason::Refusal,
            FinishReason::Other("something_new".into()),
            FinishReason::ToolUse,
        ]
    );
}

#[tokio::test]
async fn disconnect_mid_tool_call_emits_no_partial_tool_use() {
    let reply = [
        chunk(json!({"content": "Reading"}), None),
        chunk(call_start(0, "call_A", "read_file"), None),
        chunk(call_args(0, "{\"path\": "), None),
    ];
    let text: String = reply.iter().map(|c| format!("data: {c}\n\n")).collect();
    let server = Server::start(vec![Reply::sse(&[text]).aborted()]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert!(
        !items
            .iter()
            .any(|i| matches!(i, Ok(StreamEvent::ToolUse { .. })))
    );
    assert!(matches!(items.last(), Some(Err(ModelError::Stream { .. }))));
}

#[tokio::test]
async fn end_without_done_is_complete_only_after_a_finish_reason() {
    let finished: String = [
        chunk(json!({"content": "ok"}), None),
        chunk(json!({}), Some("stop")),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect();
    let unfinished = format!("data: {}\n\n", chunk(json!({"content": "ok"}), None));
    let server = Server::start(vec![Reply::sse(&[finished]), Reply::sse(&[unfinished])]).await;
    let provider = provider(&server);
    let complete = collect(&provider, sample_request()).await;
    assert!(matches!(
        complete.last(),
        Some(Ok(StreamEvent::Stop {
            reason: FinishReason::EndTurn,
            ..
        }))
    ));
    let cut = collect(&provider, sample_request()).await;
    assert!(matches!(cut.last(), Some(Err(ModelError::Stream { .. }))));
}

#[tokio::test]
async fn malformed_chunk_is_a_stream_error() {
    let text = format!(
        "data: {}\n\ndata: {{\"choices\": [{{\"delta\": \n\n",
        chunk(json!({"content": "ok"}), None)
    );
    let server = Server::start(vec![Reply::sse(&[text])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(items[1], Ok(StreamEvent::TextDelta("ok".into())));
    assert!(
        matches!(items.last(), Some(Err(ModelError::Stream { message })) if message.contains("malformed"))
    );
}

#[tokio::test]
async fn in_stream_error_chunk_is_mapped() {
    let text = format!(
        "data: {}\n\ndata: {}\n\n",
        chunk(json!({"content": "ok"}), None),
        json!({"error": {"message": "server overloaded", "type": "overloaded_error"}})
    );
    let server = Server::start(vec![Reply::sse(&[text])]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert_eq!(
        items.last(),
        Some(&Err(ModelError::Overloaded {
            message: "server overloaded".into()
        }))
    );
}

#[tokio::test]
async fn rate_limit_then_success_through_retrying() {
    let limited = Reply::error(
        429,
        json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
    )
    .header("retry-after-ms", "5");
    let server = Server::start(vec![limited, Reply::sse(&[sse_data(&full_reply())])]).await;
    let policy = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    };
    let items = collect(&Retrying::new(provider(&server), policy), sample_request()).await;
    assert!(matches!(items.last(), Some(Ok(StreamEvent::Stop { .. }))));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn context_length_error_is_prompt_too_long() {
    let too_long = Reply::error(
        400,
        json!({"error": {"message": "This model's maximum context length is 8192 tokens",
            "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    );
    let server = Server::start(vec![too_long]).await;
    let items = collect(&provider(&server), sample_request()).await;
    assert!(matches!(
        &items[..],
        [Err(ModelError::PromptTooLong { .. })]
    ));
}

#[tokio::test]
async fn local_server_needs_no_key_and_gets_no_authorization_header() {
    let server = Server::start(vec![Reply::sse(&[sse_data(&full_reply())])]).await;
    let spec = ProviderSpec {
        kind: "openai".into(),
        model: "llama3".into(),
        base_url: Some(format!("{}/v1", server.base_url)),
        api_key_env: None,
        scenario: None,
        ..ProviderSpec::default()
    };
    let provider = provider_from_spec_with_env(&spec, &|_| None).unwrap();
    let mut req = sample_request();
    req.model = String::new();
    let items = collect(provider.as_ref(), req).await;
    assert!(matches!(items.last(), Some(Ok(StreamEvent::Stop { .. }))));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["model"], "llama3");
}

#[tokio::test]
async fn the_key_never_shows_in_debug_or_errors() {
    let echoing = Reply::error(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"),
            "type": "invalid_request_error", "code": "invalid_api_key"}}),
    );
    let server = Server::start(vec![echoing]).await;
    let provider = provider(&server);
    assert!(!format!("{provider:?}").contains(KEY));
    let error = collect(&provider, sample_request()).await[0]
        .clone()
        .unwrap_err();
    assert!(matches!(error, ModelError::Auth { status: 401, .. }));
    for text in [format!("{error}"), format!("{error:?}")] {
        assert!(!text.contains(KEY), "{text}");
    }
}
