//! Errors a provider reports, grouped by what the agent loop can do about them.

use std::time::Duration;

use thiserror::Error;

/// A failed model call. Messages never contain an API key (providers redact them).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    /// HTTP 429: wait (`retry_after` when the server said how long) and try again.
    #[error("rate limited: {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// HTTP 529 or an in-stream `overloaded_error`: the service is busy, try again later.
    #[error("model service overloaded: {message}")]
    Overloaded { message: String },
    /// The conversation no longer fits: compact before trying again.
    #[error("prompt too long: {message}")]
    PromptTooLong { message: String },
    /// HTTP 401/403: the key is missing, wrong or lacks permission.
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// The request itself is wrong (HTTP 400/404/422…); retrying the same request won't help.
    #[error("invalid request: {message}")]
    InvalidRequest { message: String },
    /// HTTP 5xx other than 529.
    #[error("server error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    /// The response stream broke: malformed chunk, disconnect or early end. Any partial message
    /// from this attempt is incomplete and must be discarded.
    #[error("stream error: {message}")]
    Stream { message: String },
    /// The server could not be reached at all.
    #[error("connection failed: {message}")]
    Connect { message: String },
    /// The provider is misconfigured: missing key, bad URL, unreadable scenario.
    #[error("provider configuration: {message}")]
    Config { message: String },
}

impl ModelError {
    /// Whether sending the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Connect { .. }
        )
    }

    /// The context window a prompt-too-long error names, learned from its message: llama.cpp's
    /// "exceeds the available context size (M tokens)", OpenAI's "maximum context length is M
    /// tokens".
    pub fn context_window(&self) -> Option<u64> {
        let Self::PromptTooLong { message } = self else {
            return None;
        };
        let lower = message.to_lowercase();
        ["available context size (", "maximum context length is "]
            .iter()
            .find_map(|marker| {
                let after = &lower[lower.find(marker)? + marker.len()..];
                let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok().filter(|n: &u64| *n > 0)
            })
    }

    /// Shorthand for a `Stream` error.
    pub fn stream(message: impl Into<String>) -> Self {
        Self::Stream {
            message: message.into(),
        }
    }

    /// Shorthand for a `Config` error.
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::Config {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_read_from_overflow_messages() {
        let too_long = |message: &str| ModelError::PromptTooLong {
            message: message.into(),
        };
        assert_eq!(
            too_long("request (5012 tokens) exceeds the available context size (4096 tokens), try increasing it").context_window(),
            Some(4096)
        );
        assert_eq!(
            too_long(
                "This model's maximum context length is 8192 tokens. However, you requested 9000"
            )
            .context_window(),
            Some(8192)
        );
        assert_eq!(too_long("prompt is too long").context_window(), None);
        assert_eq!(too_long("available context size (").context_window(), None);
        assert_eq!(
            ModelError::stream("maximum context length is 5").context_window(),
            None
        );
    }

    #[test]
    fn only_transient_errors_are_retryable() {
        let retryable = [
            ModelError::RateLimited {
                retry_after: None,
                message: String::new(),
            },
            ModelError::Overloaded {
                message: String::new(),
            },
            ModelError::Server {
                status: 500,
                message: String::new(),
            },
            ModelError::Connect {
                message: String::new(),
            },
        ];
        for err in retryable {
            assert!(err.is_retryable(), "{err:?}");
        }
        let final_errors = [
            ModelError::PromptTooLong {
                message: String::new(),
            },
            ModelError::Auth {
                status: 401,
                message: String::new(),
            },
            ModelError::InvalidRequest {
                message: String::new(),
            },
            ModelError::stream("x"),
            ModelError::config("x"),
        ];
        for err in final_errors {
            assert!(!err.is_retryable(), "{err:?}");
        }
    }
}
