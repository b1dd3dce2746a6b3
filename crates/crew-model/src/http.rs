//! What the HTTP providers share: the client, endpoint URLs, sending a request and turning an
//! HTTP or in-stream error into a `ModelError`.

use std::error::Error as StdError;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Client, RequestBuilder, Response, Url};
use serde_json::Value;

use super::error::ModelError;
use super::secret::ApiKey;

/// Long enough for a slow TLS handshake, short enough to surface a dead host.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// No bytes for this long means the stream stalled (Anthropic pings well within it).
const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Error messages quoted from a response body are cut to this many characters.
const MAX_MESSAGE_CHARS: usize = 1000;

/// A whole (unstreamed) reply sends no byte until it is done: a slow local model may think
/// this long. The turn's wall-time limit still bounds it.
const WHOLE_REPLY_READ_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The HTTP client every provider uses.
pub(crate) fn client() -> Result<Client, ModelError> {
    client_with(READ_TIMEOUT)
}

/// The client for replies asked for whole (`stream: false`).
pub(crate) fn whole_reply_client() -> Result<Client, ModelError> {
    client_with(WHOLE_REPLY_READ_TIMEOUT)
}

fn client_with(read_timeout: Duration) -> Result<Client, ModelError> {
    Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(read_timeout)
        .build()
        .map_err(|e| ModelError::config(format!("cannot build HTTP client: {}", chain(&e))))
}

/// `{base}/v1/{path}`, or `{base}/{path}` when the base already ends in `/v1` (as OpenAI-style
/// base URLs such as `http://localhost:11434/v1` do).
pub(crate) fn endpoint(base: &str, path: &str) -> Result<Url, ModelError> {
    let trimmed = base.trim_end_matches('/');
    let full = if trimmed.ends_with("/v1") {
        format!("{trimmed}/{path}")
    } else {
        format!("{trimmed}/v1/{path}")
    };
    let url =
        Url::parse(&full).map_err(|e| ModelError::config(format!("bad base URL {base:?}: {e}")))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(ModelError::config(format!(
            "bad base URL {base:?}: scheme {other:?} is not http or https"
        ))),
    }
}

/// A header value holding a secret, marked sensitive so it prints as `Sensitive`.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ModelError::config("the API key contains characters not allowed in a header")
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Sends the request; a non-success status becomes the matching `ModelError`.
pub(crate) async fn send(
    request: RequestBuilder,
    key: Option<&ApiKey>,
) -> Result<Response, ModelError> {
    let redact = |text: String| match key {
        Some(key) => key.redact(&text),
        None => text,
    };
    let response = request.send().await.map_err(|e| ModelError::Connect {
        message: redact(chain(&e)),
    })?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = response.text().await.unwrap_or_default();
    let (kind, message) = parse_error_body(&body);
    tracing::debug!(status, kind, "model API returned an error status");
    Err(classify(Some(status), &kind, redact(message), retry_after))
}

/// Reads `error.type`/`error.code` and `error.message` from an Anthropic or OpenAI style error
/// body (or `{"error": "text"}` as Ollama sends); falls back to the raw body.
pub(crate) fn parse_error_body(body: &str) -> (String, String) {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = &parsed["error"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    let (kind, message) = match error {
        Value::String(message) => (String::new(), Some(message.clone())),
        Value::Object(_) => {
            let kind = text(&error["type"]).unwrap_or_default();
            let code = text(&error["code"]).unwrap_or_default();
            // OpenAI puts the specific reason in `code` (e.g. context_length_exceeded).
            let kind = if code.is_empty() {
                kind
            } else {
                format!("{kind} {code}")
            };
            (kind, text(&error["message"]))
        }
        _ => (String::new(), None),
    };
    let message = message.unwrap_or_else(|| body.trim().to_string());
    (kind, truncate(message))
}

/// Maps an error, by HTTP status when there is one and by the error's type name otherwise
/// (in-stream errors have no status).
pub(crate) fn classify(
    status: Option<u16>,
    kind: &str,
    message: String,
    retry_after: Option<Duration>,
) -> ModelError {
    let has = |name: &str| kind.split_whitespace().any(|k| k == name);
    let lower = message.to_lowercase();
    // llama.cpp: `exceed_context_size_error`, "request (N tokens) exceeds the available
    // context size (M tokens)".
    let too_long = has("context_length_exceeded")
        || has("exceed_context_size_error")
        || lower.contains("prompt is too long")
        || lower.contains("maximum context length")
        || lower.contains("exceeds the available context size");
    match status {
        _ if status == Some(529) || has("overloaded_error") => ModelError::Overloaded { message },
        _ if status == Some(429) || has("rate_limit_error") => ModelError::RateLimited {
            retry_after,
            message,
        },
        _ if status == Some(413) || has("request_too_large") => {
            ModelError::PromptTooLong { message }
        }
        Some(400) | None if too_long => ModelError::PromptTooLong { message },
        Some(status @ (401 | 403)) => ModelError::Auth { status, message },
        None if has("authentication_error") || has("permission_error") => ModelError::Auth {
            status: if has("permission_error") { 403 } else { 401 },
            message,
        },
        Some(status @ 500..=599) => ModelError::Server { status, message },
        None if has("api_error") => ModelError::Server {
            status: 500,
            message,
        },
        Some(_) => ModelError::InvalidRequest { message },
        None if has("invalid_request_error") || has("not_found_error") => {
            ModelError::InvalidRequest { message }
        }
        None => ModelError::stream(format!("error event {kind:?}: {message}")),
    }
}

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds); HTTP dates are not honoured.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// An error with its sources, so "error sending request" also says why.
pub(crate) fn chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn truncate(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_adds_v1_unless_present_and_rejects_bad_urls() {
        let url = |base| endpoint(base, "messages").unwrap().to_string();
        assert_eq!(
            url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(url("http://h:1/v1/"), "http://h:1/v1/messages");
        assert_eq!(url("http://h/proxy/"), "http://h/proxy/v1/messages");
        assert!(matches!(
            endpoint("not a url", "x"),
            Err(ModelError::Config { .. })
        ));
        assert!(matches!(
            endpoint("ftp://h", "x"),
            Err(ModelError::Config { .. })
        ));
    }

    #[test]
    fn statuses_map_to_actionable_errors() {
        let map = |status, kind: &str, message: &str| {
            classify(Some(status), kind, message.to_string(), None)
        };
        assert!(matches!(
            map(529, "", "busy"),
            ModelError::Overloaded { .. }
        ));
        assert!(matches!(
            map(429, "", "slow"),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(
            map(413, "", "big"),
            ModelError::PromptTooLong { .. }
        ));
        assert!(matches!(
            map(
                400,
                "invalid_request_error",
                "prompt is too long: 210000 tokens"
            ),
            ModelError::PromptTooLong { .. }
        ));
        assert!(matches!(
            map(400, "invalid_request_error context_length_exceeded", "x"),
            ModelError::PromptTooLong { .. }
        ));
        assert!(matches!(
            map(400, "invalid_request_error", "bad"),
            ModelError::InvalidRequest { .. }
        ));
        assert!(matches!(
            map(404, "not_found_error", "no"),
            ModelError::InvalidRequest { .. }
        ));
        assert!(matches!(
            map(401, "", "no"),
            ModelError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            map(403, "", "no"),
            ModelError::Auth { status: 403, .. }
        ));
        assert!(matches!(
            map(503, "", "down"),
            ModelError::Server { status: 503, .. }
        ));
    }

    #[test]
    fn in_stream_error_types_map_without_a_status() {
        let map = |kind: &str| classify(None, kind, "m".to_string(), None);
        assert!(matches!(
            map("overloaded_error"),
            ModelError::Overloaded { .. }
        ));
        assert!(matches!(
            map("rate_limit_error"),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(
            map("api_error"),
            ModelError::Server { status: 500, .. }
        ));
        assert!(matches!(
            map("permission_error"),
            ModelError::Auth { status: 403, .. }
        ));
        assert!(matches!(
            map("invalid_request_error"),
            ModelError::InvalidRequest { .. }
        ));
        assert!(matches!(map("brand_new_error"), ModelError::Stream { .. }));
    }

    #[test]
    fn error_bodies_of_every_shape_are_read() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            parse_error_body(anthropic),
            ("overloaded_error".to_string(), "Overloaded".to_string())
        );
        let openai = r#"{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(
            parse_error_body(openai),
            (
                "invalid_request_error context_length_exceeded".to_string(),
                "too long".to_string()
            )
        );
        assert_eq!(
            parse_error_body(r#"{"error":"model not found"}"#),
            (String::new(), "model not found".to_string())
        );
        assert_eq!(
            parse_error_body(" gateway down \n"),
            (String::new(), "gateway down".to_string())
        );
        let long = "x".repeat(MAX_MESSAGE_CHARS + 5);
        assert_eq!(
            parse_error_body(&long).1.chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&date), None);
    }
}
