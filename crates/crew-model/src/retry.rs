//! Retrying transient failures with jittered, bounded exponential backoff.
//!
//! A retry is safe while no tool call of the failed attempt has been passed on (a tool may
//! already be running). Every retry is announced with a [`StreamEvent::Restart`] before its
//! wait, so the person sees a failing model call as it happens (not only in a log), and text
//! or thinking already passed on is voided by it; errors that arrive inside the stream
//! (`overloaded_error` after `message_start`, say) are retried like those before it.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};

use super::ModelProvider;
use super::error::ModelError;
use super::event::StreamEvent;
use super::types::ModelRequest;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Delay cap after the first failure; it doubles with each further failure.
    pub base_delay: Duration,
    /// No single wait is longer, a server's `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(32),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based): the server's `retry-after` when
    /// it gave one, else a random point in the upper half of the exponential cap. Never above
    /// `max_delay`.
    pub fn delay(&self, attempt: u32, error: &ModelError) -> Duration {
        if let ModelError::RateLimited {
            retry_after: Some(wait),
            ..
        } = error
        {
            return (*wait).min(self.max_delay);
        }
        self.backoff(attempt, fastrand::f64())
    }

    /// The jittered backoff for `attempt` given a uniform sample `unit` in `[0, 1)`.
    fn backoff(&self, attempt: u32, unit: f64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        let cap = self
            .base_delay
            .saturating_mul(1u32 << doublings)
            .min(self.max_delay);
        cap.mul_f64(0.5 + unit.clamp(0.0, 1.0) / 2.0)
    }
}

/// A provider that retries another provider's retryable failures (rate limits, overload, 5xx,
/// connection failures) as long as the failed attempt passed on no tool call.
pub struct Retrying<P> {
    inner: Arc<P>,
    policy: RetryPolicy,
}

impl<P: ModelProvider + 'static> Retrying<P> {
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self {
            inner: Arc::new(inner),
            policy,
        }
    }

    pub fn policy(&self) -> RetryPolicy {
        self.policy
    }
}

impl<P: ModelProvider + 'static> ModelProvider for Retrying<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn context_window(&self) -> futures::future::BoxFuture<'static, Option<u64>> {
        self.inner.context_window()
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let attempts = Attempts {
            current: self.inner.stream(req.clone()),
            inner: Arc::clone(&self.inner),
            req,
            policy: self.policy,
            attempt: 1,
            emitted: Emitted::Nothing,
            pending: None,
            done: false,
        };
        stream::unfold(attempts, Attempts::next).boxed()
    }
}

struct Attempts<P> {
    inner: Arc<P>,
    req: ModelRequest,
    policy: RetryPolicy,
    /// 1-based number of the attempt `current` belongs to.
    attempt: u32,
    current: BoxStream<'static, Result<StreamEvent, ModelError>>,
    /// The most the current attempt has passed on.
    emitted: Emitted,
    /// A retry (and its wait) announced by a `Restart` notice, to run at the next poll.
    pending: Option<Duration>,
    done: bool,
}

/// What an attempt has passed on, in the order it matters for a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Emitted {
    /// Nothing, or only events that carry no part of the reply.
    Nothing,
    /// Text or thinking: void it with a `Restart` before retrying.
    Content,
    /// A tool call (it may be running): no retry.
    Tool,
}

impl Emitted {
    fn of(event: &StreamEvent) -> Self {
        match event {
            StreamEvent::ToolUse { .. } | StreamEvent::BadToolUse { .. } => Self::Tool,
            StreamEvent::TextDelta(_) | StreamEvent::Thinking(_) | StreamEvent::Stop { .. } => {
                Self::Content
            }
            StreamEvent::MessageStart
            | StreamEvent::Usage(_)
            | StreamEvent::Restart { .. }
            | StreamEvent::Fallback { .. } => Self::Nothing,
        }
    }
}

impl<P: ModelProvider> Attempts<P> {
    async fn next(mut self) -> Option<(Result<StreamEvent, ModelError>, Self)> {
        if self.done {
            return None;
        }
        if let Some(wait) = self.pending.take() {
            self.retry(wait).await;
        }
        match self.current.next().await? {
            Ok(event) => {
                self.emitted = self.emitted.max(Emitted::of(&event));
                Some((Ok(event), self))
            }
            Err(error)
                if self.emitted < Emitted::Tool
                    && error.is_retryable()
                    && self.attempt < self.policy.max_attempts =>
            {
                let wait = self.policy.delay(self.attempt, &error);
                tracing::warn!(
                    provider = self.inner.name(),
                    attempt = self.attempt,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    %error,
                    "model call failed, retrying"
                );
                let restart = StreamEvent::Restart {
                    attempt: self.attempt,
                    reason: format!(
                        "{error}; attempt {} of {} in {:.1}s",
                        self.attempt + 1,
                        self.policy.max_attempts,
                        wait.as_secs_f64()
                    ),
                };
                // The wait and the next attempt come at the next poll, after the notice.
                self.pending = Some(wait);
                Some((Ok(restart), self))
            }
            Err(error) => {
                self.done = true;
                Some((Err(error), self))
            }
        }
    }

    /// Waits out the backoff and starts the next attempt.
    async fn retry(&mut self, wait: Duration) {
        tokio::time::sleep(wait).await;
        self.attempt += 1;
        self.emitted = Emitted::Nothing;
        self.current = self.inner.stream(self.req.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FinishReason, RequestContext, SystemPrompt, Usage};
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    type Outcome = Vec<Result<StreamEvent, ModelError>>;

    /// Replays one canned outcome per call and counts the calls.
    struct Canned {
        outcomes: Mutex<VecDeque<Outcome>>,
        calls: AtomicU32,
    }

    impl Canned {
        fn new(outcomes: Vec<Outcome>) -> Arc<Self> {
            Arc::new(Self {
                outcomes: Mutex::new(outcomes.into()),
                calls: AtomicU32::new(0),
            })
        }
    }

    impl ModelProvider for Canned {
        fn name(&self) -> &str {
            "canned"
        }
        fn is_simulated(&self) -> bool {
            true
        }
        fn stream(&self, _: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let next = self
                .outcomes
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_default();
            stream::iter(next).boxed()
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: SystemPrompt::default(),
            messages: vec![],
            tools: vec![],
            max_tokens: 10,
            context: RequestContext::default(),
        }
    }

    fn success() -> Outcome {
        vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::TextDelta("hi".into())),
            Ok(StreamEvent::Stop {
                reason: FinishReason::EndTurn,
                usage: Usage::default(),
            }),
        ]
    }

    fn overloaded() -> ModelError {
        ModelError::Overloaded {
            message: "busy".into(),
        }
    }

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
        }
    }

    /// The items, each `Restart`'s reason cut to the error (its wait is random).
    async fn run(canned: &Arc<Canned>, policy: RetryPolicy) -> Outcome {
        let items: Outcome = Retrying::new(Arc::clone(canned), policy)
            .stream(request())
            .collect()
            .await;
        items
            .into_iter()
            .map(|item| match item {
                Ok(StreamEvent::Restart { attempt, reason }) => Ok(StreamEvent::Restart {
                    attempt,
                    reason: reason.split("; attempt").next().unwrap_or_default().into(),
                }),
                other => other,
            })
            .collect()
    }

    fn restart(attempt: u32, error: &ModelError) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::Restart {
            attempt,
            reason: error.to_string(),
        })
    }

    /// `success()` after one announced retry per error in `errors`.
    fn retried_then_success(errors: &[ModelError]) -> Outcome {
        let mut items: Outcome = (1u32..)
            .zip(errors)
            .map(|(attempt, e)| restart(attempt, e))
            .collect();
        items.extend(success());
        items
    }

    #[tokio::test(start_paused = true)]
    async fn every_retry_is_announced_with_the_next_attempt_and_its_wait() {
        let canned = Canned::new(vec![vec![Err(overloaded())], success()]);
        let items: Outcome = Retrying::new(Arc::clone(&canned), policy(3))
            .stream(request())
            .collect()
            .await;
        let Some(Ok(StreamEvent::Restart { attempt: 1, reason })) = items.first() else {
            panic!("no restart notice first: {items:?}");
        };
        assert!(
            reason.starts_with("model service overloaded: busy; "),
            "{reason}"
        );
        assert!(reason.contains("; attempt 2 of 3 in "), "{reason}");
        assert!(reason.ends_with('s'), "{reason}");
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limit_waits_for_retry_after_then_succeeds() {
        let limited = ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into(),
        };
        let canned = Canned::new(vec![vec![Err(limited.clone())], success()]);
        let start = tokio::time::Instant::now();
        let items = run(&canned, policy(3)).await;
        assert_eq!(items, retried_then_success(&[limited]));
        assert_eq!(canned.calls.load(Ordering::SeqCst), 2);
        assert!(start.elapsed() >= Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn overload_and_server_errors_back_off_exponentially() {
        let server = ModelError::Server {
            status: 502,
            message: "bad gateway".into(),
        };
        let canned = Canned::new(vec![
            vec![Err(overloaded())],
            vec![Err(server.clone())],
            success(),
        ]);
        let start = tokio::time::Instant::now();
        let items = run(&canned, policy(5)).await;
        assert_eq!(items, retried_then_success(&[overloaded(), server]));
        assert_eq!(canned.calls.load(Ordering::SeqCst), 3);
        // Waits of at least 0.5 s and 1 s (half of the 1 s and 2 s caps), at most 1 s + 2 s.
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(1500), "{waited:?}");
        assert!(waited <= Duration::from_secs(3), "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_after_message_start_is_retried_after_a_notice() {
        let started = vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::Usage(Usage::default())),
            Err(overloaded()),
        ];
        let canned = Canned::new(vec![started, success()]);
        let items = run(&canned, policy(5)).await;
        let mut expected = vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::Usage(Usage::default())),
            restart(1, &overloaded()),
        ];
        expected.extend(success());
        assert_eq!(items, expected);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_after_text_voids_it_with_a_restart_then_retries() {
        let half = vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::TextDelta("par".into())),
            Err(overloaded()),
        ];
        let canned = Canned::new(vec![half, success()]);
        let items = run(&canned, policy(5)).await;
        let mut expected = vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::TextDelta("par".into())),
            restart(1, &overloaded()),
        ];
        expected.extend(success());
        assert_eq!(items, expected);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_after_a_tool_call_is_passed_on_not_retried() {
        let half = vec![
            Ok(StreamEvent::MessageStart),
            Ok(StreamEvent::ToolUse {
                id: "t".into(),
                name: "read".into(),
                input: serde_json::json!({}),
            }),
            Err(overloaded()),
        ];
        let canned = Canned::new(vec![half.clone(), success()]);
        let items = run(&canned, policy(5)).await;
        assert_eq!(items, half);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn non_retryable_errors_are_passed_on_at_once() {
        let too_long = ModelError::PromptTooLong {
            message: "big".into(),
        };
        let canned = Canned::new(vec![vec![Err(too_long.clone())], success()]);
        assert_eq!(run(&canned, policy(5)).await, vec![Err(too_long)]);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts() {
        let canned = Canned::new((0..10).map(|_| vec![Err(overloaded())]).collect());
        let mut expected: Outcome = (1..4).map(|a| restart(a, &overloaded())).collect();
        expected.push(Err(overloaded()));
        assert_eq!(run(&canned, policy(4)).await, expected);
        assert_eq!(canned.calls.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn backoff_doubles_jitters_and_stays_bounded() {
        let p = policy(10);
        assert_eq!(p.backoff(1, 0.0), Duration::from_millis(500));
        assert_eq!(p.backoff(1, 0.999_999).as_millis(), 999);
        assert_eq!(p.backoff(3, 0.0), Duration::from_secs(2));
        assert_eq!(p.backoff(40, 0.999_999).as_secs(), 29);
        for attempt in 1..50 {
            let wait = p.delay(attempt, &overloaded());
            assert!(wait <= p.max_delay);
            assert!(wait >= p.base_delay / 2);
        }
        let huge = ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
            message: String::new(),
        };
        assert_eq!(p.delay(1, &huge), p.max_delay);
    }
}
