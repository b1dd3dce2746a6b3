//! The scripted provider: rule matching, budgets, errors, templates and scenario errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;
use std::time::Duration;

use crew_model::scripted::{Scenario, ScenarioError, ScriptedProvider};
use crew_model::{
    ChatMessage, ContentBlock, FinishReason, ModelError, ModelProvider, ModelRequest, ProviderSpec,
    RequestContext, RetryPolicy, Retrying, Role, StreamEvent, SystemPrompt, provider_from_spec,
};
use futures::StreamExt;
use serde_json::{Value, json};

fn provider(toml: &str) -> ScriptedProvider {
    ScriptedProvider::new(Scenario::parse(toml, Path::new("test.toml")).unwrap())
}

fn request(
    agent: &str,
    role: &str,
    task: Option<&str>,
    messages: Vec<ChatMessage>,
) -> ModelRequest {
    ModelRequest {
        model: String::new(),
        system: SystemPrompt::default(),
        messages,
        tools: vec![],
        max_tokens: 100,
        context: RequestContext {
            agent: agent.into(),
            role: role.into(),
            task: task.map(str::to_string),
        },
    }
}

fn ask(text: &str) -> ModelRequest {
    request("alice", "coder", None, vec![ChatMessage::user_text(text)])
}

async fn items(
    provider: &dyn ModelProvider,
    req: ModelRequest,
) -> Vec<Result<StreamEvent, ModelError>> {
    provider.stream(req).collect().await
}

/// The text deltas among `items`.
fn deltas(items: &[Result<StreamEvent, ModelError>]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The reply's text, joined from its deltas.
async fn reply_text(provider: &dyn ModelProvider, req: ModelRequest) -> String {
    deltas(&items(provider, req).await).concat()
}

/// A conversation whose latest user message carries a result of `tool`.
fn after_tool(tool: &str, content: &str, is_error: bool) -> Vec<ChatMessage> {
    vec![
        ChatMessage::user_text("start"),
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: tool.into(),
                input: json!({}),
            }],
        },
        ChatMessage::user_tool_results(vec![ContentBlock::tool_result("t1", content, is_error)]),
    ]
}

#[tokio::test]
async fn each_condition_selects_its_rule() {
    let p = provider(
        r#"
        [[rule]]
        role = "lead"
        text = "by role"
        [[rule]]
        agent = "bob"
        text = "by agent"
        [[rule]]
        task_contains = "refactor"
        text = "by task"
        [[rule]]
        last_user_contains = "inbox: hello"
        text = "by user text"
        [[rule]]
        last_tool = "run_tests"
        last_result_is_error = true
        text = "by failed tool"
        [[rule]]
        last_tool = "run_tests"
        last_result_contains = "all passed"
        text = "by tool result"
        [[rule]]
        turn = 2
        text = "by turn"
        [[rule]]
        text = "default"
        "#,
    );
    let check = async |req, want: &str| assert_eq!(reply_text(&p, req).await, want);
    check(request("x", "lead", None, vec![]), "by role").await;
    check(request("bob", "coder", None, vec![]), "by agent").await;
    check(
        request("x", "coder", Some("please refactor io"), vec![]),
        "by task",
    )
    .await;
    check(ask("inbox: hello from lead"), "by user text").await;
    check(
        request(
            "x",
            "coder",
            None,
            after_tool("run_tests", "1 failed", true),
        ),
        "by failed tool",
    )
    .await;
    check(
        request(
            "x",
            "coder",
            None,
            after_tool("run_tests", "all passed", false),
        ),
        "by tool result",
    )
    .await;
    check(
        request(
            "x",
            "coder",
            None,
            after_tool("read_file", "all passed", false),
        ),
        "default",
    )
    .await;
    let two_turns = vec![
        ChatMessage::user_text("a"),
        ChatMessage::assistant_text("b"),
        ChatMessage::user_text("c"),
        ChatMessage::assistant_text("d"),
        ChatMessage::user_text("e"),
    ];
    check(request("x", "coder", None, two_turns), "by turn").await;
    check(ask("anything"), "default").await;
}

#[tokio::test]
async fn user_text_condition_only_sees_messages_since_the_last_reply() {
    let p = provider(
        r#"
        [[rule]]
        last_user_contains = "hello"
        text = "greeted"
        [[rule]]
        text = "other"
        "#,
    );
    let old = vec![
        ChatMessage::user_text("hello"),
        ChatMessage::assistant_text("hi"),
        ChatMessage::user_text("next"),
    ];
    assert_eq!(reply_text(&p, request("a", "r", None, old)).await, "other");
}

#[tokio::test]
async fn times_budget_is_used_up_then_the_next_rule_applies() {
    let p = provider(
        r#"
        [[rule]]
        times = 2
        text = "first"
        [[rule]]
        text = "after"
        "#,
    );
    let mut replies = Vec::new();
    for _ in 0..3 {
        replies.push(reply_text(&p, ask("x")).await);
    }
    assert_eq!(replies, ["first", "first", "after"]);
}

#[tokio::test]
async fn reply_streams_text_in_deltas_then_tool_calls_with_templates() {
    let p = provider(
        r#"
        [[rule]]
        text = "Working on task {task} as {agent}, step by step now."
        [[rule.tool_call]]
        name = "write_file"
        input = { path = "notes/{agent}.md", lines = ["task {task}", 3], nested = { who = "{agent}" } }
        [[rule.tool_call]]
        name = "list"
        "#,
    );
    let req = request(
        "alice",
        "coder",
        Some("7"),
        vec![ChatMessage::user_text("go")],
    );
    let items = items(&p, req).await;
    let deltas = deltas(&items);
    assert!(deltas.len() > 1, "{deltas:?}");
    assert_eq!(
        deltas.concat(),
        "Working on task 7 as alice, step by step now."
    );
    let calls: Vec<(&str, &str, &Value)> = items
        .iter()
        .filter_map(|i| match i {
            Ok(StreamEvent::ToolUse { id, name, input }) => {
                Some((id.as_str(), name.as_str(), input))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].0, calls[1].0, "ids are unique");
    assert_eq!(calls[0].1, "write_file");
    assert_eq!(
        calls[0].2,
        &json!({"path": "notes/alice.md", "lines": ["task 7", 3], "nested": {"who": "alice"}})
    );
    assert_eq!(calls[1].2, &json!({}));
    assert_eq!(items[0], Ok(StreamEvent::MessageStart));
    match items.last() {
        Some(Ok(StreamEvent::Stop { reason, usage })) => {
            assert_eq!(*reason, FinishReason::ToolUse);
            assert!(usage.input_tokens > 0 && usage.output_tokens > 0);
        }
        other => panic!("no stop: {other:?}"),
    }
}

#[tokio::test]
async fn stop_defaults_and_overrides() {
    let p = provider(
        r#"
        [[rule]]
        times = 1
        text = "plain"
        [[rule]]
        times = 1
        text = "cut"
        stop = "max_tokens"
        "#,
    );
    let stop = async || match items(&p, ask("x")).await.pop() {
        Some(Ok(StreamEvent::Stop { reason, .. })) => reason,
        other => panic!("no stop: {other:?}"),
    };
    assert_eq!(stop().await, FinishReason::EndTurn);
    assert_eq!(stop().await, FinishReason::MaxTokens);
}

#[tokio::test]
async fn simulated_errors() {
    let p = provider(
        r#"
        [[rule]]
        times = 1
        error = "overloaded"
        [[rule]]
        times = 1
        error = "rate_limited"
        [[rule]]
        times = 1
        error = "prompt_too_long"
        [[rule]]
        times = 1
        error = "disconnect"
        text = "one two three four five six seven eight nine ten"
        "#,
    );
    assert!(matches!(
        &items(&p, ask("x")).await[..],
        [Err(ModelError::Overloaded { .. })]
    ));
    assert!(matches!(
        &items(&p, ask("x")).await[..],
        [Err(ModelError::RateLimited { .. })]
    ));
    assert!(matches!(
        &items(&p, ask("x")).await[..],
        [Err(ModelError::PromptTooLong { .. })]
    ));
    let cut = items(&p, ask("x")).await;
    let text = deltas(&cut).concat();
    assert!(
        !text.is_empty() && text.len() < "one two three four five six seven eight nine ten".len()
    );
    assert!(matches!(cut.last(), Some(Err(ModelError::Stream { .. }))));
    assert!(
        !cut.iter()
            .any(|i| matches!(i, Ok(StreamEvent::Stop { .. })))
    );
}

#[tokio::test(start_paused = true)]
async fn a_simulated_overload_is_retried_by_retrying() {
    let p = provider(
        r#"
        [[rule]]
        times = 1
        error = "overloaded"
        [[rule]]
        text = "recovered"
        "#,
    );
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(4),
    };
    let retrying = Retrying::new(p, policy);
    assert!(retrying.is_simulated());
    assert_eq!(reply_text(&retrying, ask("x")).await, "recovered");
}

#[tokio::test]
async fn no_matching_rule_gives_a_clear_simulator_fallback() {
    let p = provider(
        r#"
        [[rule]]
        agent = "nobody"
        text = "never"
        "#,
    );
    assert!(p.is_simulated());
    assert_eq!(p.name(), "scripted");
    let items = items(&p, ask("x")).await;
    let text = deltas(&items).concat();
    assert!(text.contains("scripted simulator"), "{text}");
    assert!(
        text.contains("test.toml") && text.contains("no rule"),
        "{text}"
    );
    assert!(matches!(
        items.last(),
        Some(Ok(StreamEvent::Stop {
            reason: FinishReason::EndTurn,
            ..
        }))
    ));
}

#[test]
fn parse_errors_name_file_line_and_column() {
    let unknown_field = "description = \"x\"\n\n[[rule]]\ntext = \"a\"\n  colour = \"red\"\n";
    let error = Scenario::parse(unknown_field, Path::new("scen/bad.toml")).unwrap_err();
    match &error {
        ScenarioError::Parse { line, column, .. } => assert_eq!((*line, *column), (5, 3)),
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().starts_with("scen/bad.toml:5:3: "),
        "{error}"
    );
    assert!(error.to_string().contains("colour"), "{error}");

    let syntax = "[[rule]]\ntext = \"unterminated\n";
    let error = Scenario::parse(syntax, Path::new("s.toml")).unwrap_err();
    assert!(error.to_string().starts_with("s.toml:2:"), "{error}");

    let bad_value = "[[rule]]\nerror = \"meltdown\"\n";
    let error = Scenario::parse(bad_value, Path::new("s.toml")).unwrap_err();
    assert!(error.to_string().starts_with("s.toml:2:9: "), "{error}");
}

#[test]
fn missing_file_error_names_the_path() {
    let error =
        ScriptedProvider::from_file(Path::new("/nonexistent/crew/scenario.toml")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("/nonexistent/crew/scenario.toml")
    );
    let as_model_error: ModelError = error.into();
    assert!(matches!(as_model_error, ModelError::Config { .. }));
}

#[tokio::test]
async fn shipped_echo_scenario_works_from_file_and_as_the_default() {
    let from_file = provider_from_spec(&ProviderSpec {
        kind: "scripted".into(),
        model: String::new(),
        base_url: None,
        api_key_env: None,
        scenario: Some(crew_test_support::source_path("assets/scenarios/echo.toml")),
        ..ProviderSpec::default()
    })
    .unwrap();
    let builtin = provider_from_spec(&ProviderSpec {
        kind: "scripted".into(),
        model: String::new(),
        base_url: None,
        api_key_env: None,
        scenario: None,
        ..ProviderSpec::default()
    })
    .unwrap();
    for provider in [from_file, builtin] {
        assert!(provider.is_simulated());
        assert_eq!(reply_text(provider.as_ref(), ask("ping?")).await, "pong");
        assert_eq!(
            reply_text(provider.as_ref(), ask("hello there")).await,
            "[scripted echo for alice] hello there"
        );
    }
}

#[tokio::test]
async fn providers_compose_as_trait_objects() {
    let spec = ProviderSpec {
        kind: "scripted".into(),
        model: String::new(),
        base_url: None,
        api_key_env: None,
        scenario: None,
        ..ProviderSpec::default()
    };
    let boxed: Box<dyn ModelProvider> = provider_from_spec(&spec).unwrap();
    let shared: std::sync::Arc<dyn ModelProvider> =
        std::sync::Arc::new(Retrying::new(boxed, RetryPolicy::default()));
    let clone = std::sync::Arc::clone(&shared);
    let task = tokio::spawn(async move { reply_text(clone.as_ref(), ask("ping")).await });
    assert_eq!(task.await.unwrap(), "pong");
    assert_eq!(shared.name(), "scripted");
}
