//! The Anthropic Messages API, streamed.

mod decode;
mod request;

use futures::stream::BoxStream;
use reqwest::header::HeaderValue;
use reqwest::{Client, Url};

use super::ModelProvider;
use super::error::ModelError;
use super::event::StreamEvent;
use super::http;
use super::secret::ApiKey;
use super::streaming::sse_stream;
use super::types::ModelRequest;

/// Where the public API lives; `ANTHROPIC_BASE_URL` or the spec may point elsewhere.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header this adapter speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Streams replies from `POST {base}/v1/messages`.
#[derive(Debug)]
pub struct AnthropicProvider {
    client: Client,
    url: Url,
    /// The `x-api-key` header, marked sensitive so it never prints.
    auth: HeaderValue,
    key: ApiKey,
    model: String,
    /// Extended thinking's budget in tokens, when enabled.
    thinking: Option<u32>,
}

impl AnthropicProvider {
    /// `model` is used when a request leaves its own `model` empty.
    pub fn new(base_url: &str, key: ApiKey, model: impl Into<String>) -> Result<Self, ModelError> {
        Ok(Self {
            client: http::client()?,
            url: http::endpoint(base_url, "messages")?,
            auth: http::secret_header(key.expose())?,
            key,
            model: model.into(),
            thinking: None,
        })
    }

    /// Enables extended thinking with up to `budget_tokens` of reasoning per call.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking = Some(budget_tokens);
        self
    }
}

impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn is_simulated(&self) -> bool {
        false
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let body = request::body(&req, &self.model, self.thinking);
        let builder = self
            .client
            .post(self.url.clone())
            .header("x-api-key", self.auth.clone())
            .header("anthropic-version", API_VERSION)
            .header("accept", "text/event-stream")
            .json(&body);
        sse_stream(
            builder,
            Some(self.key.clone()),
            decode::AnthropicDecoder::default(),
        )
    }
}
