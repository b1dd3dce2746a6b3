//! OpenAI-compatible chat completions, streamed (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

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

/// Where the public API lives; `OPENAI_BASE_URL` or the spec may point elsewhere.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Streams replies from `POST {base}/v1/chat/completions` (or `{base}/chat/completions` when
/// the base already ends in `/v1`).
#[derive(Debug)]
pub struct OpenAiProvider {
    client: Client,
    url: Url,
    /// `Authorization: Bearer …`, marked sensitive; local servers need none.
    auth: Option<HeaderValue>,
    key: Option<ApiKey>,
    model: String,
}

impl OpenAiProvider {
    /// `model` is used when a request leaves its own `model` empty.
    pub fn new(
        base_url: &str,
        key: Option<ApiKey>,
        model: impl Into<String>,
    ) -> Result<Self, ModelError> {
        let auth = key
            .as_ref()
            .map(|key| http::secret_header(&format!("Bearer {}", key.expose())))
            .transpose()?;
        Ok(Self {
            client: http::client()?,
            url: http::endpoint(base_url, "chat/completions")?,
            auth,
            key,
            model: model.into(),
        })
    }
}

impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn is_simulated(&self) -> bool {
        false
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let body = request::body(&req, &self.model);
        let mut builder = self
            .client
            .post(self.url.clone())
            .header("accept", "text/event-stream")
            .json(&body);
        if let Some(auth) = &self.auth {
            builder = builder.header("authorization", auth.clone());
        }
        sse_stream(builder, self.key.clone(), decode::OpenAiDecoder::default())
    }
}
