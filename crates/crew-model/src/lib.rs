//! Model providers behind one trait: scripted, anthropic, openai-compatible.
//!
//! This layer knows nothing above it. A provider turns a `ModelRequest` into a stream of
//! `StreamEvent`s; `Retrying` wraps any provider with bounded, jittered retries.

pub mod anthropic;
pub mod error;
pub mod event;
pub mod fallback;
mod http;
pub mod openai;
pub mod retry;
pub mod scripted;
pub mod secret;
pub mod spec;
pub mod sse;
mod streaming;
pub mod types;

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

pub use error::ModelError;
pub use event::StreamEvent;
pub use fallback::FallingBack;
pub use retry::{RetryPolicy, Retrying};
pub use secret::ApiKey;
pub use spec::{
    ContextWindow, ModelName, OutputTokens, OverloadCount, ProviderSpec, ThinkingBudget,
    ThinkingSpec, provider_from_spec, provider_from_spec_with_env,
};
pub use types::{
    ChatMessage, ContentBlock, FinishReason, ModelRequest, RequestContext, Role, SystemPrompt,
    ToolDefinition, Usage,
};

/// A source of model replies. Dyn-compatible: use it as `Box<dyn ModelProvider>` or
/// `Arc<dyn ModelProvider>`.
pub trait ModelProvider: Send + Sync {
    /// Short name for logs and the UI (`scripted`, `anthropic`, `openai`).
    fn name(&self) -> &str;

    /// True for a simulator whose replies come from a script, not a model.
    fn is_simulated(&self) -> bool;

    /// Streams the reply to `req`. Nothing happens until the stream is polled; a failure to
    /// connect is the stream's first item.
    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>>;

    /// The model's context window in tokens, where the server says it (asked each call:
    /// callers ask once); `None` when it does not.
    fn context_window(&self) -> BoxFuture<'static, Option<u64>> {
        Box::pin(async { None })
    }
}

/// Smart pointers to a provider are providers, so `Box<dyn ModelProvider>` and
/// `Arc<dyn ModelProvider>` can be wrapped (e.g. by `Retrying`).
macro_rules! forward_provider {
    ($pointer:ident) => {
        impl<P: ModelProvider + ?Sized> ModelProvider for $pointer<P> {
            fn name(&self) -> &str {
                (**self).name()
            }

            fn is_simulated(&self) -> bool {
                (**self).is_simulated()
            }

            fn stream(
                &self,
                req: ModelRequest,
            ) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
                (**self).stream(req)
            }

            fn context_window(&self) -> BoxFuture<'static, Option<u64>> {
                (**self).context_window()
            }
        }
    };
}

forward_provider!(Box);
forward_provider!(Arc);
