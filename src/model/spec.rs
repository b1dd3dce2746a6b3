//! Building a provider from configuration (a `[model]`-style table in crew.toml).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ModelProvider;
use super::anthropic::{self, AnthropicProvider};
use super::error::ModelError;
use super::openai::{self, OpenAiProvider};
use super::scripted::ScriptedProvider;
use super::secret::ApiKey;

/// Which provider to use and how to reach it. Holds no secret: keys come from the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
/// environment.
pub fn provider_from_spec(spec: &ProviderSpec) -> Result<Box<dyn ModelProvider>, ModelError> {
    provider_from_spec_with_env(spec, &|name| std::env::var(name).ok())
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
            Ok(Box::new(AnthropicProvider::new(
                &base,
                ApiKey::new(key),
                spec.model.clone(),
            )?))
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
            Ok(Box::new(OpenAiProvider::new(
                &base,
                key,
                spec.model.clone(),
            )?))
        }
        other => Err(ModelError::config(format!(
            "unknown provider kind {other:?}: expected \"scripted\", \"anthropic\" or \"openai\""
        ))),
    }
}

fn missing_key(var: &str) -> ModelError {
    ModelError::config(format!("no API key: set the environment variable {var}"))
}
