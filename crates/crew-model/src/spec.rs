//! Building a provider from configuration (a `[model]`-style table in crew.toml).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ModelProvider;
use super::anthropic::{self, AnthropicProvider};
use super::error::ModelError;
use super::fallback::{DEFAULT_FALLBACK_AFTER, FallingBack};
use super::openai::{self, OpenAiProvider};
use super::scripted::ScriptedProvider;
use super::secret::ApiKey;

/// Which provider to use and how to reach it. Holds no secret: keys come from the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSpec {
    /// `"scripted"`, `"anthropic"` or `"openai"`.
    pub kind: String,
    /// Model name sent when a request names none.
    #[serde(default)]
    pub model: String,
    /// Overrides `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` and the public default.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Environment variable holding the key, instead of `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Scenario file for `scripted`; the built-in echo scenario when absent.
    #[serde(default)]
    pub scenario: Option<PathBuf>,
    /// Extended thinking (`anthropic` only).
    #[serde(default)]
    pub thinking: Option<ThinkingSpec>,
    /// The model that answers once `model` has been overloaded `fallback_after` times in a row.
    #[serde(default)]
    pub fallback_model: Option<ModelName>,
    /// Consecutive overloads before `fallback_model` takes over (default 3).
    #[serde(default)]
    pub fallback_after: Option<OverloadCount>,
    /// `false`: ask `openai` servers for whole replies instead of streamed ones (default true).
    #[serde(default)]
    pub stream: Option<bool>,
}

/// `thinking = { budget_tokens = N }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingSpec {
    pub budget_tokens: ThinkingBudget,
}

/// The API's least thinking budget.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// Tokens of reasoning per call: at least [`MIN_THINKING_BUDGET`] (checked when read, so a
/// configuration error can point at the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThinkingBudget(pub u32);

impl<'de> Deserialize<'de> for ThinkingBudget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_number_from(d, MIN_THINKING_BUDGET, |value| {
            format!(
                "thinking.budget_tokens must be a whole number of tokens from {MIN_THINKING_BUDGET} to {}, not {value}",
                u32::MAX
            )
        })
        .map(Self)
    }
}

/// The least context window crew accepts: below it not even the system prompt fits.
pub const MIN_CONTEXT_WINDOW: u32 = 1024;

/// `context_window`: the model's context in tokens, at least [`MIN_CONTEXT_WINDOW`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ContextWindow(pub u32);

impl<'de> Deserialize<'de> for ContextWindow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_number_from(d, MIN_CONTEXT_WINDOW, |value| {
            format!(
                "context_window is the model's context in tokens: a whole number from {MIN_CONTEXT_WINDOW} to {}, not {value}",
                u32::MAX
            )
        })
        .map(Self)
    }
}

/// `max_output_tokens`: the most tokens one reply may have, 1 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OutputTokens(pub u32);

impl<'de> Deserialize<'de> for OutputTokens {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_number_from(d, 1, |value| {
            format!(
                "max_output_tokens is the most tokens one reply may have: a whole number from 1 to {}, not {value}",
                u32::MAX
            )
        })
        .map(Self)
    }
}

/// A whole number of at least `min` that fits a `u32`, else the error `explain` words (also
/// for a value that is no number, so the message names the setting).
fn whole_number_from<'de, D: serde::Deserializer<'de>>(
    d: D,
    min: u32,
    explain: impl FnOnce(String) -> String,
) -> Result<u32, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= min)
        .ok_or_else(|| serde::de::Error::custom(explain(value.to_string())))
}

/// A model name that is not blank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelName(pub String);

impl<'de> Deserialize<'de> for ModelName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = String::deserialize(d)?;
        if value.trim().is_empty() || value.trim() != value {
            return Err(serde::de::Error::custom(format!(
                "fallback_model must name a model (such as \"claude-sonnet-4-5\"), not {value:?}"
            )));
        }
        Ok(Self(value))
    }
}

/// How many overloads in a row: 1 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OverloadCount(pub u32);

impl<'de> Deserialize<'de> for OverloadCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole_number_from(d, 1, |value| {
            format!(
                "fallback_after counts overloads in a row before fallback_model takes over: 1 or more, not {value}"
            )
        })
        .map(Self)
    }
}

/// The environment variable that holds the key for a provider of `kind`: the one the
/// configuration names, or the provider's usual one; `None` for a provider without keys.
pub fn key_variable(kind: &str, api_key_env: Option<&str>) -> Option<String> {
    let default = match kind {
        "anthropic" => "ANTHROPIC_API_KEY",
        "openai" => "OPENAI_API_KEY",
        _ => return api_key_env.map(str::to_string),
    };
    Some(api_key_env.unwrap_or(default).to_string())
}

/// Builds the provider `spec` describes, reading keys and base URLs from the process
/// environment (its sealed credentials first, see `secret::seal_process`).
pub fn provider_from_spec(spec: &ProviderSpec) -> Result<Box<dyn ModelProvider>, ModelError> {
    provider_from_spec_with_env(spec, &super::secret::env_var)
}

/// As [`provider_from_spec`], with the environment given as a lookup function.
pub fn provider_from_spec_with_env(
    spec: &ProviderSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn ModelProvider>, ModelError> {
    let var = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    let key_var = || key_variable(&spec.kind, spec.api_key_env.as_deref()).unwrap_or_default();
    let base_url = |base_var: &str, default: &str| {
        spec.base_url
            .clone()
            .or_else(|| var(base_var))
            .unwrap_or_else(|| default.to_string())
    };
    if spec.stream == Some(false) && spec.kind != "openai" {
        return Err(ModelError::config(format!(
            "stream = false is supported by provider \"openai\" only, not {:?}",
            spec.kind
        )));
    }
    if spec.thinking.is_some() && spec.kind != "anthropic" {
        return Err(ModelError::config(format!(
            "thinking is supported by provider \"anthropic\" only, not {:?}",
            spec.kind
        )));
    }
    match spec.kind.as_str() {
        "scripted" => {
            let provider = match &spec.scenario {
                Some(path) => ScriptedProvider::from_file(path)?,
                None => ScriptedProvider::echo()?,
            };
            Ok(Box::new(provider))
        }
        "anthropic" => {
            let key_var = key_var();
            let key = var(&key_var).ok_or_else(|| missing_key(&key_var))?;
            let base = base_url("ANTHROPIC_BASE_URL", anthropic::DEFAULT_BASE_URL);
            let mut provider = AnthropicProvider::new(&base, ApiKey::new(key), spec.model.clone())?;
            if let Some(thinking) = spec.thinking {
                provider = provider.with_thinking(thinking.budget_tokens.0);
            }
            Ok(with_fallback(provider, spec))
        }
        "openai" => {
            let key_var = key_var();
            let base = base_url("OPENAI_BASE_URL", openai::DEFAULT_BASE_URL);
            let key = var(&key_var).map(ApiKey::new);
            // Local servers (Ollama, vLLM, llama.cpp) need no key; the public API and a key
            // variable named explicitly do.
            let needs_key = spec.api_key_env.is_some() || base.contains("api.openai.com");
            if key.is_none() && needs_key {
                return Err(missing_key(&key_var));
            }
            Ok(with_fallback(
                OpenAiProvider::new(&base, key, spec.model.clone())?
                    .with_streaming(spec.stream.unwrap_or(true)),
                spec,
            ))
        }
        other => Err(ModelError::config(format!(
            "unknown provider kind {other:?}: expected \"scripted\", \"anthropic\" or \"openai\""
        ))),
    }
}

/// `provider`, handing over to the spec's `fallback_model` when it has one.
fn with_fallback<P: ModelProvider + 'static>(
    provider: P,
    spec: &ProviderSpec,
) -> Box<dyn ModelProvider> {
    match &spec.fallback_model {
        Some(fallback) => Box::new(FallingBack::new(
            provider,
            &spec.model,
            &fallback.0,
            spec.fallback_after
                .map_or(DEFAULT_FALLBACK_AFTER, |count| count.0),
        )),
        None => Box::new(provider),
    }
}

fn missing_key(var: &str) -> ModelError {
    ModelError::config(format!("no API key: set the environment variable {var}"))
}
