//! A model entry in crew.toml: bad `thinking` and fallback values are refused naming the file,
//! line and field (the provider specs themselves are crew-model's `model_spec` tests).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::path::Path;

use crew_config::TeamConfig;

/// The error crew.toml gets for `model` on the lead's line.
fn crew_toml_error(model: &str) -> String {
    let text = format!("[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {model}\n");
    TeamConfig::parse(Path::new("/repo/crew.toml"), &text)
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_thinking_and_fallback_values_name_the_file_and_field() {
    let cases = [
        (
            r#"{ provider = "anthropic", thinking = { budget_tokens = 100 } }"#,
            "thinking.budget_tokens must be a whole number of tokens from 1024",
        ),
        (
            r#"{ provider = "anthropic", thinking = { budget_tokens = -5 } }"#,
            "not -5",
        ),
        (
            r#"{ provider = "anthropic", thinking = { budget = 2048 } }"#,
            "budget",
        ),
        (
            r#"{ provider = "openai", thinking = { budget_tokens = 2048 } }"#,
            "thinking is supported by provider \"anthropic\" only, not \"openai\"",
        ),
        (
            r#"{ provider = "anthropic", fallback_model = "" }"#,
            "fallback_model must name a model",
        ),
        (
            r#"{ provider = "anthropic", fallback_model = "b", fallback_after = 0 }"#,
            "fallback_after counts overloads in a row",
        ),
        (
            r#"{ provider = "scripted", fallback_model = "b" }"#,
            "fallback_model needs provider",
        ),
    ];
    for (model, expected) in cases {
        let message = crew_toml_error(model);
        assert!(
            message.starts_with("/repo/crew.toml:6:") && message.contains(expected),
            "{model}: {message}"
        );
    }
    let good = format!(
        "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {}\n",
        r#"{ provider = "anthropic", thinking = { budget_tokens = 2048 }, fallback_model = "b" }"#
    );
    TeamConfig::parse(Path::new("/repo/crew.toml"), &good).unwrap();
}

#[test]
fn a_team_is_simulated_when_any_agent_is_scripted() {
    let team = |lead: &str, mate: &str| {
        let text = format!(
            "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {lead}\n\n\
             [[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nmodel = {mate}\n"
        );
        TeamConfig::parse(Path::new("/repo/crew.toml"), &text).unwrap()
    };
    let real = r#"{ provider = "anthropic", model = "claude-sonnet-4-5" }"#;
    let sim = r#"{ provider = "scripted", scenario = "demo" }"#;
    assert!(!team(real, real).simulated());
    assert!(team(real, sim).simulated());
    assert_eq!(team(real, sim).simulated_agents(), ["alice"]);
    // A model entry without a provider is the simulator too (the default).
    assert!(team("{}", real).simulated());
}

#[test]
fn an_unknown_provider_or_scenario_names_what_is_accepted_with_file_and_line() {
    let message = crew_toml_error(r#"{ provider = "claude", model = "x" }"#);
    assert!(message.starts_with("/repo/crew.toml:6:22:"), "{message}");
    for provider in crew_config::PROVIDERS {
        assert!(message.contains(provider), "{provider}: {message}");
    }
    let message = crew_toml_error(r#"{ provider = "scripted", scenario = "calculator" }"#);
    assert!(message.starts_with("/repo/crew.toml:6:45:"), "{message}");
    assert!(
        message.contains("\"calculator\"") && message.contains("echo, demo"),
        "{message}"
    );
}

#[test]
fn output_limit_window_and_stream_are_checked_with_file_and_line() {
    let cases = [
        (
            r#"{ provider = "openai", max_output_tokens = 0 }"#,
            "max_output_tokens is the most tokens one reply may have: a whole number from 1",
        ),
        (
            r#"{ provider = "openai", max_output_tokens = -5 }"#,
            "not -5",
        ),
        (
            r#"{ provider = "openai", context_window = 512 }"#,
            "context_window is the model's context in tokens: a whole number from 1024",
        ),
        (
            r#"{ provider = "openai", context_window = "8k" }"#,
            "context_window",
        ),
        (
            r#"{ provider = "anthropic", stream = false }"#,
            "stream is a setting of provider \"openai\" only, not \"anthropic\"",
        ),
        (
            r#"{ provider = "openai", stream = "no" }"#,
            "expected a boolean",
        ),
    ];
    for (model, expected) in cases {
        let message = crew_toml_error(model);
        assert!(
            message.starts_with("/repo/crew.toml:6:") && message.contains(expected),
            "{model}: {message}"
        );
    }
    let good = format!(
        "[team]\nname = \"web\"\n\n[lead]\nname = \"lead\"\nmodel = {}\n",
        r#"{ provider = "openai", base_url = "http://127.0.0.1:8080/v1", context_window = 8192, max_output_tokens = 2048, stream = false }"#
    );
    let config = TeamConfig::parse(Path::new("/repo/crew.toml"), &good).unwrap();
    let model = &config.lead.model;
    assert_eq!(model.context_window.map(|w| w.0), Some(8192));
    assert_eq!(model.max_output_tokens.map(|n| n.0), Some(2048));
    assert_eq!(model.stream.as_ref().map(|s| *s.get_ref()), Some(false));
}
