//! OpenAI-compatible chat completions, streamed or not (OpenAI, Ollama, vLLM, llama.cpp, LM
//! Studio), and the context window where the server tells it.

mod decode;
mod request;
mod text_calls;

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::HeaderValue;
use reqwest::{Client, RequestBuilder, Url};
use serde_json::{Value, json};

use super::ModelProvider;
use super::error::ModelError;
use super::event::StreamEvent;
use super::http;
use super::secret::ApiKey;
use super::sse::SseEvent;
use super::streaming::{Decoder, sse_stream};
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
    /// The base URL without a trailing `/v1`, where llama.cpp and Ollama answer about the model.
    root: String,
    /// `false`: ask for the whole reply at once (`stream: false`), for servers whose streaming
    /// of tool calls is broken.
    streaming: bool,
}

/// How long each question about the context window may take: a local server answers at once.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

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
            root: base_url
                .trim_end_matches('/')
                .trim_end_matches("/v1")
                .to_string(),
            streaming: true,
        })
    }

    /// Streamed replies (the default) or whole ones.
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        if !streaming {
            // Built like the first one, so this cannot fail where that did not; if it did, the
            // shorter read timeout is what remains.
            if let Ok(client) = http::whole_reply_client() {
                self.client = client;
            }
        }
        self
    }

    fn authorised(&self, builder: RequestBuilder) -> RequestBuilder {
        match &self.auth {
            Some(auth) => builder.header("authorization", auth.clone()),
            None => builder,
        }
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
        let tools = req.tools.iter().map(|tool| tool.name.clone()).collect();
        let decoder = decode::OpenAiDecoder::new(tools);
        let mut body = request::body(&req, &self.model);
        if !self.streaming {
            body["stream"] = json!(false);
            if let Some(fields) = body.as_object_mut() {
                fields.remove("stream_options");
            }
            let builder = self.authorised(self.client.post(self.url.clone()).json(&body));
            return whole_reply(builder, self.key.clone(), decoder);
        }
        let builder = self.authorised(
            self.client
                .post(self.url.clone())
                .header("accept", "text/event-stream")
                .json(&body),
        );
        sse_stream(builder, self.key.clone(), decoder)
    }

    /// llama.cpp's `GET /props`, Ollama's `POST /api/show`, then `GET /v1/models` (vLLM's
    /// `max_model_len`, others' `context_length`); the first that says wins.
    fn context_window(&self) -> BoxFuture<'static, Option<u64>> {
        let props = self.authorised(self.client.get(format!("{}/props", self.root)));
        let show = self.authorised(
            self.client
                .post(format!("{}/api/show", self.root))
                .json(&json!({"model": self.model})),
        );
        let models = http::endpoint(&self.root, "models")
            .ok()
            .map(|url| self.authorised(self.client.get(url)));
        let (key, model) = (self.key.clone(), self.model.clone());
        Box::pin(async move {
            let ask = |builder: RequestBuilder| {
                let key = key.clone();
                async move {
                    let response = http::send(builder.timeout(PROBE_TIMEOUT), key.as_ref())
                        .await
                        .ok()?;
                    response.json::<Value>().await.ok()
                }
            };
            if let Some(n) = ask(props).await.as_ref().and_then(llama_cpp_window) {
                return Some(n);
            }
            if let Some(n) = ask(show).await.as_ref().and_then(ollama_window) {
                return Some(n);
            }
            let models = ask(models?).await?;
            listed_window(&models, &model)
        })
    }
}

/// llama.cpp's `/props`: the context the server was started with.
fn llama_cpp_window(props: &Value) -> Option<u64> {
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .or_else(|| props["n_ctx"].as_u64())
        .filter(|n| *n > 0)
}

/// Ollama's `/api/show`: a `num_ctx` the model was set up with is the window it runs with;
/// else the model's own `<family>.context_length`.
fn ollama_window(show: &Value) -> Option<u64> {
    let configured = show["parameters"].as_str().and_then(|parameters| {
        parameters.lines().find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("num_ctx")).then(|| words.next()?.parse().ok())?
        })
    });
    configured
        .or_else(|| {
            show["model_info"]
                .as_object()?
                .iter()
                .find_map(|(key, value)| {
                    key.ends_with(".context_length")
                        .then(|| value.as_u64())
                        .flatten()
                })
        })
        .filter(|n| *n > 0)
}

/// `/v1/models`: the entry for `model` (or the only one) when it carries its window.
fn listed_window(models: &Value, model: &str) -> Option<u64> {
    let entries = models["data"].as_array()?;
    let entry = entries
        .iter()
        .find(|entry| entry["id"].as_str() == Some(model))
        .or_else(|| (entries.len() == 1).then(|| &entries[0]))?;
    ["max_model_len", "context_length", "context_window"]
        .iter()
        .find_map(|field| entry[*field].as_u64())
        .filter(|n| *n > 0)
}

/// A reply asked for with `stream: false`: the whole `chat.completion` is read, then decoded as
/// the one chunk it amounts to, so both ways give the same events.
fn whole_reply(
    builder: RequestBuilder,
    key: Option<ApiKey>,
    mut decoder: decode::OpenAiDecoder,
) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
    let reply = async move {
        let response = http::send(builder, key.as_ref()).await?;
        let body = response.text().await.map_err(|e| {
            ModelError::stream(format!(
                "connection lost reading the reply: {}",
                http::chain(&e)
            ))
        })?;
        let completion: Value = serde_json::from_str(&body).map_err(|e| {
            ModelError::stream(format!("the reply is not a JSON chat completion: {e}"))
        })?;
        let mut out = Vec::new();
        for data in [as_chunk(completion).to_string(), "[DONE]".to_string()] {
            decoder.on_event(SseEvent { event: None, data }, &mut out)?;
        }
        Ok(out)
    };
    stream::once(reply)
        .flat_map(
            |result: Result<Vec<StreamEvent>, ModelError>| match result {
                Ok(events) => stream::iter(events.into_iter().map(Ok).collect::<Vec<_>>()),
                Err(error) => stream::iter(vec![Err(error)]),
            },
        )
        .boxed()
}

/// `choices[].message` becomes `choices[].delta`, its calls numbered as fragments are. (Only
/// objects are indexed mutably: serde_json panics on a mutable index into anything else.)
fn as_chunk(mut completion: Value) -> Value {
    let choices = completion
        .get_mut("choices")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten();
    for choice in choices.filter_map(Value::as_object_mut) {
        let mut message = choice.remove("message").unwrap_or(Value::Null);
        let calls = message
            .get_mut("tool_calls")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten();
        for (index, call) in calls.enumerate() {
            if let Some(call) = call.as_object_mut() {
                call.insert("index".to_string(), json!(index));
            }
        }
        choice.insert("delta".to_string(), message);
    }
    completion
}
