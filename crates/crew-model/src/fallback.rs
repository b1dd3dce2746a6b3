//! Handing a provider's calls over to a fallback model once the configured one keeps being
//! overloaded.

use std::sync::{Arc, Mutex};

use futures::stream::{self, BoxStream, StreamExt};

use super::ModelProvider;
use super::error::ModelError;
use super::event::StreamEvent;
use super::types::ModelRequest;

/// Overloads in a row before the fallback takes over, when the configuration does not say.
pub const DEFAULT_FALLBACK_AFTER: u32 = 3;

/// A provider whose calls go to `fallback` after `after` consecutive overloads of the primary
/// model (counted across calls and retries; a complete reply resets the count). The fallback
/// then answers for the life of this provider: the primary's outage is likely to last, and
/// switching back and forth would throw the prompt cache away each time. The first call
/// answered by the fallback begins with a [`StreamEvent::Fallback`] saying so.
pub struct FallingBack<P> {
    inner: Arc<P>,
    primary: String,
    fallback: String,
    after: u32,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    overloads: u32,
    switched: bool,
    announced: bool,
}

impl<P: ModelProvider + 'static> FallingBack<P> {
    /// `primary` names the model a request with no `model` of its own goes to (for messages).
    pub fn new(inner: P, primary: &str, fallback: &str, after: u32) -> Self {
        Self {
            inner: Arc::new(inner),
            primary: primary.to_string(),
            fallback: fallback.to_string(),
            after: after.max(1),
            state: Arc::default(),
        }
    }
}

impl<P: ModelProvider + 'static> ModelProvider for FallingBack<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn context_window(&self) -> futures::future::BoxFuture<'static, Option<u64>> {
        self.inner.context_window()
    }

    fn stream(&self, mut req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let from = if req.model.is_empty() {
            self.primary.clone()
        } else {
            req.model.clone()
        };
        let (switched, announce) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let announce = state.switched && !state.announced;
            state.announced |= announce;
            (state.switched, announce)
        };
        if switched {
            req.model = self.fallback.clone();
            let notice = announce.then(|| {
                Ok(StreamEvent::Fallback {
                    from,
                    to: self.fallback.clone(),
                    reason: format!("overloaded {} times in a row", self.after),
                })
            });
            return stream::iter(notice).chain(self.inner.stream(req)).boxed();
        }
        let (state, after) = (Arc::clone(&self.state), self.after);
        self.inner
            .stream(req)
            .inspect(move |item| {
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                match item {
                    Err(ModelError::Overloaded { .. }) => {
                        state.overloads += 1;
                        if state.overloads >= after {
                            tracing::warn!(
                                overloads = state.overloads,
                                "switching to the fallback model"
                            );
                            state.switched = true;
                        }
                    }
                    Ok(StreamEvent::Stop { .. }) | Err(_) => state.overloads = 0,
                    Ok(_) => {}
                }
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FinishReason, RequestContext, SystemPrompt, Usage};
    use std::sync::Mutex as StdMutex;

    /// Overloads the model named "main", answers any other, and records the models asked.
    struct Busy {
        asked: StdMutex<Vec<String>>,
    }

    impl ModelProvider for Busy {
        fn name(&self) -> &str {
            "busy"
        }
        fn is_simulated(&self) -> bool {
            true
        }
        fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
            self.asked.lock().unwrap().push(req.model.clone());
            let item = if req.model == "main" || req.model.is_empty() {
                Err(ModelError::Overloaded {
                    message: "busy".into(),
                })
            } else {
                Ok(StreamEvent::Stop {
                    reason: FinishReason::EndTurn,
                    usage: Usage::default(),
                })
            };
            stream::iter([item]).boxed()
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            model: String::new(),
            system: SystemPrompt::default(),
            messages: vec![],
            tools: vec![],
            max_tokens: 10,
            context: RequestContext::default(),
        }
    }

    #[tokio::test]
    async fn the_fallback_answers_after_the_configured_overloads_and_says_so_once() {
        let provider = FallingBack::new(
            Busy {
                asked: StdMutex::default(),
            },
            "main",
            "spare",
            2,
        );
        for _ in 0..2 {
            let items: Vec<_> = provider.stream(request()).collect().await;
            assert!(matches!(items[..], [Err(ModelError::Overloaded { .. })]));
        }
        let items: Vec<_> = provider.stream(request()).collect().await;
        assert_eq!(
            items[0],
            Ok(StreamEvent::Fallback {
                from: "main".into(),
                to: "spare".into(),
                reason: "overloaded 2 times in a row".into(),
            })
        );
        assert!(matches!(items[1], Ok(StreamEvent::Stop { .. })));
        let items: Vec<_> = provider.stream(request()).collect().await;
        assert!(matches!(items[..], [Ok(StreamEvent::Stop { .. })]));
        assert_eq!(
            *provider.inner.asked.lock().unwrap(),
            vec!["", "", "spare", "spare"]
        );
    }
}
