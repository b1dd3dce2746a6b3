//! Building providers from a `ProviderSpec`: keys and base URLs from the environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::collections::HashMap;

use crew_model::{ModelError, ProviderSpec, StreamEvent, provider_from_spec_with_env};
use crew_test_support::model::{Reply, Server, collect, sample_request};
use serde_json::json;

const SECRET: &str = "sk-very-secret-value-42";

fn spec(kind: &str) -> ProviderSpec {
    ProviderSpec {
        kind: kind.into(),
        model: "m".into(),
        base_url: None,
        api_key_env: None,
        scenario: None,
        ..ProviderSpec::default()
    }
}

/// An environment lookup over fixed variables.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

fn config_error(result: Result<Box<dyn crew_model::ModelProvider>, ModelError>) -> String {
    match result {
        Err(ModelError::Config { message }) => message,
        Err(other) => panic!("not a config error: {other:?}"),
        Ok(provider) => panic!("built {}", provider.name()),
    }
}

#[test]
fn spec_reads_from_toml_and_rejects_unknown_fields() {
    let spec: ProviderSpec = toml::from_str(
        "kind = \"openai\"\nmodel = \"llama3\"\nbase_url = \"http://localhost:11434/v1\"\n",
    )
    .unwrap();
    assert_eq!(spec.kind, "openai");
    assert_eq!(spec.base_url.as_deref(), Some("http://localhost:11434/v1"));
    assert!(toml::from_str::<ProviderSpec>("kind = \"openai\"\napi_key = \"x\"\n").is_err());
}

#[test]
fn missing_keys_name_the_variable_to_set() {
    let message = config_error(provider_from_spec_with_env(&spec("anthropic"), &env(&[])));
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
    let message = config_error(provider_from_spec_with_env(&spec("openai"), &env(&[])));
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    let mut custom = spec("openai");
    custom.base_url = Some("http://localhost:8000/v1".into());
    custom.api_key_env = Some("VLLM_KEY".into());
    let message = config_error(provider_from_spec_with_env(&custom, &env(&[])));
    assert!(message.contains("VLLM_KEY"), "{message}");
}

#[test]
fn unknown_kind_and_bad_url_are_config_errors() {
    let message = config_error(provider_from_spec_with_env(&spec("gemini"), &env(&[])));
    assert!(message.contains("gemini"), "{message}");
    let mut bad = spec("anthropic");
    bad.base_url = Some("not a url".into());
    let message = config_error(provider_from_spec_with_env(
        &bad,
        &env(&[("ANTHROPIC_API_KEY", SECRET)]),
    ));
    assert!(
        message.contains("not a url") && !message.contains(SECRET),
        "{message}"
    );
}

#[tokio::test]
async fn base_url_comes_from_spec_then_environment() {
    let reply = || {
        let events = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n\
                      event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{}}\n\n\
                      event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        Reply::sse(&[events])
    };
    let server = Server::start(vec![reply(), reply()]).await;
    let dead = "http://127.0.0.1:9";

    let from_env = env(&[
        ("ANTHROPIC_API_KEY", SECRET),
        ("ANTHROPIC_BASE_URL", &server.base_url),
    ]);
    let provider = provider_from_spec_with_env(&spec("anthropic"), &from_env).unwrap();
    let items = collect(provider.as_ref(), sample_request()).await;
    assert!(
        matches!(items.last(), Some(Ok(StreamEvent::Stop { .. }))),
        "{items:?}"
    );

    let mut with_url = spec("anthropic");
    with_url.base_url = Some(server.base_url.clone());
    with_url.api_key_env = Some("MY_KEY".into());
    let spec_wins = env(&[("MY_KEY", SECRET), ("ANTHROPIC_BASE_URL", dead)]);
    let provider = provider_from_spec_with_env(&with_url, &spec_wins).unwrap();
    let items = collect(provider.as_ref(), sample_request()).await;
    assert!(
        matches!(items.last(), Some(Ok(StreamEvent::Stop { .. }))),
        "{items:?}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-api-key") == Some(SECRET))
    );
}

#[tokio::test]
async fn openai_key_from_a_named_variable_is_sent_but_never_shown() {
    let server = Server::start(vec![Reply::error(
        401,
        json!({"error": {"message": format!("bad key {SECRET}"), "type": "invalid_request_error"}}),
    )])
    .await;
    let mut custom = spec("openai");
    custom.base_url = Some(server.base_url.clone());
    custom.api_key_env = Some("TEAM_OPENAI".into());
    let provider = provider_from_spec_with_env(&custom, &env(&[("TEAM_OPENAI", SECRET)])).unwrap();
    let items = collect(provider.as_ref(), sample_request()).await;
    let error = items[0].clone().unwrap_err();
    assert!(!format!("{error} {error:?}").contains(SECRET));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
}

#[test]
fn thinking_and_fallback_read_from_a_spec() {
    let read: ProviderSpec = toml::from_str(
        "kind = \"anthropic\"\nthinking = { budget_tokens = 4096 }\nfallback_model = \"claude-b\"\nfallback_after = 5\n",
    )
    .unwrap();
    assert_eq!(read.thinking.unwrap().budget_tokens.0, 4096);
    assert_eq!(read.fallback_model.unwrap().0, "claude-b");
    assert_eq!(read.fallback_after.unwrap().0, 5);
    let mut thinking_openai = spec("openai");
    thinking_openai.base_url = Some("http://localhost:11434/v1".into());
    thinking_openai.thinking = read.thinking;
    let message = config_error(provider_from_spec_with_env(&thinking_openai, &env(&[])));
    assert!(
        message.contains("thinking") && message.contains("anthropic"),
        "{message}"
    );
}
