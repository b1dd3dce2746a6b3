//! The OpenAI-compatible provider against loopback servers answering as llama.cpp's
//! llama-server, Ollama and vLLM do, with the answers small local models give: broken
//! arguments, calls written as text, replies cut by the output limit, empty replies. Each shape
//! is tried streamed and whole (`stream = false`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_model::openai::OpenAiProvider;
use crew_model::{FinishReason, ModelError, ModelProvider, StreamEvent};
use crew_test_support::model::{
    Reply, Server, collect, openai_call as call, openai_reply as reply, sample_request,
};
use serde_json::{Value, json};

fn provider(server: &Server, streaming: bool) -> OpenAiProvider {
    OpenAiProvider::new(&format!("{}/v1", server.base_url), None, "gemma")
        .unwrap()
        .with_streaming(streaming)
}

/// The events of one reply, each way; the stream never ends in an error.
async fn both_ways(message: Value, finish: &str) -> [Vec<StreamEvent>; 2] {
    let mut out = Vec::new();
    for streaming in [true, false] {
        let server = Server::start(vec![reply(message.clone(), finish, streaming)]).await;
        let items = collect(&provider(&server, streaming), sample_request()).await;
        let request = &server.requests()[0];
        assert_eq!(request.body["stream"], streaming, "{:?}", request.body);
        assert_eq!(
            request.body.get("stream_options").is_some(),
            streaming,
            "stream_options only when streaming"
        );
        out.push(
            items
                .into_iter()
                .map(|item| item.unwrap_or_else(|e| panic!("streaming={streaming}: {e}")))
                .collect(),
        );
    }
    [out.remove(0), out.remove(0)]
}

fn stop_of(events: &[StreamEvent]) -> FinishReason {
    match events.last() {
        Some(StreamEvent::Stop { reason, .. }) => reason.clone(),
        other => panic!("no stop: {other:?}"),
    }
}

fn bad_calls(events: &[StreamEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::BadToolUse { name, problem, .. } => Some((name.clone(), problem.clone())),
            _ => None,
        })
        .collect()
}

fn good_calls(events: &[StreamEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolUse { name, input, .. } => Some((name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn malformed_arguments_are_a_bad_call_not_a_stream_error() {
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        call("c1", "read_file", "{\"path\": src/main.rs}"),
        call("c2", "grep", "{\"pattern\": \"fn\"}"),
    ]});
    for events in both_ways(message, "tool_calls").await {
        let bad = bad_calls(&events);
        assert_eq!(bad.len(), 1, "{events:?}");
        assert_eq!(bad[0].0, "read_file");
        assert!(bad[0].1.contains("not valid JSON"), "{bad:?}");
        assert_eq!(
            good_calls(&events),
            [("grep".into(), json!({"pattern": "fn"}))]
        );
        // The raw arguments travel as a JSON string, valid to send back.
        assert!(events.iter().any(|e| matches!(e,
            StreamEvent::BadToolUse { input, .. } if input == &json!("{\"path\": src/main.rs}"))));
        assert_eq!(stop_of(&events), FinishReason::ToolUse);
    }
}

#[tokio::test]
async fn a_call_without_a_name_is_a_bad_call() {
    let message = json!({"role": "assistant", "content": null,
        "tool_calls": [call("c1", "", "{}")]});
    for events in both_ways(message, "tool_calls").await {
        let bad = bad_calls(&events);
        assert_eq!(bad.len(), 1, "{events:?}");
        assert!(bad[0].1.contains("no tool name"), "{bad:?}");
    }
}

#[tokio::test]
async fn an_unknown_tool_name_is_passed_on_for_the_agent_to_refuse() {
    let message = json!({"role": "assistant", "content": null,
        "tool_calls": [call("c1", "make_coffee", "{}")]});
    for events in both_ways(message, "tool_calls").await {
        assert_eq!(good_calls(&events), [("make_coffee".into(), json!({}))]);
    }
}

#[tokio::test]
async fn calls_written_as_tool_call_tags_become_calls() {
    let text = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n</tool_call>\n<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"a{1,2}\"}}</tool_call>";
    let message = json!({"role": "assistant", "content": text});
    // Ollama and llama.cpp say "stop" for such a reply.
    for events in both_ways(message, "stop").await {
        assert_eq!(
            good_calls(&events),
            [
                ("read_file".into(), json!({"path": "src/lib.rs"})),
                ("grep".into(), json!({"pattern": "a{1,2}"})),
            ]
        );
        assert_eq!(stop_of(&events), FinishReason::ToolUse);
        let ids: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolUse { id, .. } => Some(id),
                _ => None,
            })
            .collect();
        assert_ne!(ids[0], ids[1], "each call has its own id");
    }
}

#[tokio::test]
async fn a_call_in_a_json_block_becomes_a_call_only_when_it_names_a_tool() {
    let message = json!({"role": "assistant",
        "content": "```json\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}\n```"});
    for events in both_ways(message, "stop").await {
        assert_eq!(
            good_calls(&events),
            [("grep".into(), json!({"pattern": "x"}))]
        );
    }
    let message = json!({"role": "assistant",
        "content": "Here is the config:\n```json\n{\"name\": \"demo\", \"version\": 2}\n```"});
    for events in both_ways(message, "stop").await {
        assert!(good_calls(&events).is_empty() && bad_calls(&events).is_empty());
        assert_eq!(stop_of(&events), FinishReason::EndTurn);
    }
}

#[tokio::test]
async fn a_broken_tool_call_tag_is_a_bad_call() {
    let message = json!({"role": "assistant",
        "content": "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call>"});
    for events in both_ways(message, "stop").await {
        let bad = bad_calls(&events);
        assert_eq!(bad.len(), 1, "{events:?}");
        assert_eq!(bad[0].0, "read_file");
        assert!(bad[0].1.contains("tool-call interface"), "{bad:?}");
        assert_eq!(stop_of(&events), FinishReason::ToolUse);
    }
}

#[tokio::test]
async fn a_call_cut_by_the_output_limit_is_a_bad_call_and_the_reply_max_tokens() {
    let message = json!({"role": "assistant", "content": null,
        "tool_calls": [call("c1", "write_file", "{\"path\": \"a.txt\", \"content\": \"lorem ip")]});
    for events in both_ways(message, "length").await {
        let bad = bad_calls(&events);
        assert_eq!(bad.len(), 1, "{events:?}");
        assert!(bad[0].1.contains("cut off at the output limit"), "{bad:?}");
        assert_eq!(stop_of(&events), FinishReason::MaxTokens);
    }
    // Written as text and cut: the unterminated block is the cut call.
    let message = json!({"role": "assistant",
        "content": "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"content\": \"lor"});
    for events in both_ways(message, "length").await {
        assert!(bad_calls(&events)[0].1.contains("cut off"), "{events:?}");
        assert_eq!(stop_of(&events), FinishReason::MaxTokens);
    }
}

#[tokio::test]
async fn an_empty_reply_ends_with_no_text_and_no_calls() {
    for message in [
        json!({"role": "assistant", "content": ""}),
        json!({"role": "assistant", "content": null}),
        json!({"role": "assistant"}),
    ] {
        for events in both_ways(message.clone(), "stop").await {
            assert_eq!(events.first(), Some(&StreamEvent::MessageStart));
            assert!(!events.iter().any(|e| matches!(
                e,
                StreamEvent::TextDelta(_)
                    | StreamEvent::ToolUse { .. }
                    | StreamEvent::BadToolUse { .. }
            )));
            assert_eq!(stop_of(&events), FinishReason::EndTurn);
        }
    }
}

#[tokio::test]
async fn a_whole_reply_that_is_not_json_or_an_error_object_is_reported() {
    let server = Server::start(vec![
        Reply::json(200, json!("just a string")),
        Reply::json(
            200,
            json!({"error": {"message": "model crashed", "type": "server_error"}}),
        ),
    ])
    .await;
    let provider = provider(&server, false);
    let no_choices = collect(&provider, sample_request()).await;
    assert!(
        matches!(no_choices.last(), Some(Ok(StreamEvent::Stop { .. }))),
        "a body with no choices is an empty reply: {no_choices:?}"
    );
    let error = collect(&provider, sample_request()).await;
    assert!(matches!(error.last(), Some(Err(_))), "{error:?}");
}

#[tokio::test]
async fn a_llama_cpp_context_overflow_is_prompt_too_long_and_names_the_window() {
    // As llama-server answers (tools/server/server.cpp, format_error_response).
    for streaming in [true, false] {
        let server = Server::start(vec![
            Reply::error(400, json!({"error": {"code": 400,
                "message": "request (5012 tokens) exceeds the available context size (4096 tokens), try increasing it",
                "type": "exceed_context_size_error"}})),
        ])
        .await;
        let items = collect(&provider(&server, streaming), sample_request()).await;
        match &items[..] {
            [Err(error @ ModelError::PromptTooLong { .. })] => {
                assert_eq!(error.context_window(), Some(4096));
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A server answering each path as `answers` says, 404 elsewhere.
async fn server_answering(answers: Vec<(&'static str, Value)>) -> Server {
    Server::start_with(move |request, _| {
        answers
            .iter()
            .find(|(path, _)| *path == request.path)
            .map(|(_, body)| Reply::json(200, body.clone()))
            .unwrap_or_else(|| Reply::error(404, json!({"error": "not found"})))
    })
    .await
}

#[tokio::test]
async fn the_window_comes_from_llama_cpp_props() {
    let server = server_answering(vec![(
        "/props",
        json!({"default_generation_settings": {"n_ctx": 8192, "n_predict": -1},
            "total_slots": 1, "model_path": "gemma3-270m.gguf"}),
    )])
    .await;
    assert_eq!(provider(&server, true).context_window().await, Some(8192));
}

#[tokio::test]
async fn the_window_comes_from_ollama_show_its_num_ctx_first() {
    let show = |parameters: &str| {
        json!({"modelfile": "FROM gemma3", "parameters": parameters,
            "model_info": {"general.architecture": "gemma3", "gemma3.context_length": 32768}})
    };
    let server = server_answering(vec![("/api/show", show("stop \"<end>\""))]).await;
    assert_eq!(provider(&server, true).context_window().await, Some(32768));
    let request = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/show")
        .unwrap();
    assert_eq!(request.body, json!({"model": "gemma"}));
    let server = server_answering(vec![(
        "/api/show",
        show("num_ctx                        4096\nstop \"<end>\""),
    )])
    .await;
    assert_eq!(provider(&server, true).context_window().await, Some(4096));
}

#[tokio::test]
async fn the_window_comes_from_vllm_models() {
    let server = server_answering(vec![(
        "/v1/models",
        json!({"object": "list", "data": [
            {"id": "other", "object": "model", "max_model_len": 1000},
            {"id": "gemma", "object": "model", "owned_by": "vllm", "max_model_len": 16384},
        ]}),
    )])
    .await;
    assert_eq!(provider(&server, true).context_window().await, Some(16384));
}

#[tokio::test]
async fn no_window_when_the_server_says_none() {
    let server = server_answering(vec![(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "gemma", "object": "model"}]}),
    )])
    .await;
    assert_eq!(provider(&server, true).context_window().await, None);
    let nothing = server_answering(vec![("/props", json!({"n_ctx": "big"}))]).await;
    assert_eq!(provider(&nothing, true).context_window().await, None);
}
