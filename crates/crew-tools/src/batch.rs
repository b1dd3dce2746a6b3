//! Running the tool calls of one model turn: consecutive concurrency-safe calls run
//! together, the others one at a time, results in call order. A failure inside a parallel
//! group cancels its still-running siblings (a child scope: the batch goes on); cancelling
//! the batch itself still yields a result for every call.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::context::ToolContext;
use crate::pipeline::{Pipeline, ToolCall, ToolCallOutcome};
use crate::tool::ToolJson;

const INTERRUPTED: &str = "cancelled: the batch was interrupted";

impl Pipeline {
    pub async fn run_batch(&self, calls: Vec<ToolCall>, ctx: &ToolContext) -> Vec<ToolCallOutcome> {
        let mut outcomes = Vec::with_capacity(calls.len());
        let mut rest = calls.as_slice();
        while !rest.is_empty() {
            let safe = rest
                .iter()
                .take_while(|c| self.is_concurrency_safe(c))
                .count();
            let (group, tail) = rest.split_at(safe.max(1));
            if ctx.cancel.is_cancelled() {
                outcomes.extend(
                    group
                        .iter()
                        .map(|c| ToolCallOutcome::cancelled(c, INTERRUPTED)),
                );
            } else if safe == 0 {
                outcomes.push(self.run(group[0].clone(), ctx).await);
            } else {
                outcomes.extend(self.run_parallel(group, ctx).await);
            }
            rest = tail;
        }
        outcomes
    }

    /// Whether `call` may run beside other safe calls; an unknown tool's is not.
    pub fn is_concurrency_safe(&self, call: &ToolCall) -> bool {
        self.registry
            .get(&call.name)
            .is_some_and(|tool| tool.is_concurrency_safe_json(&call.input))
    }

    async fn run_parallel(&self, group: &[ToolCall], ctx: &ToolContext) -> Vec<ToolCallOutcome> {
        let scope = ctx.cancel.child_token();
        let group_ctx = ToolContext {
            cancel: scope.clone(),
            ..ctx.clone()
        };
        let failed: Arc<Mutex<Option<String>>> = Arc::default();
        let mut running: FuturesUnordered<_> = group
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let (scope, failed, ctx, group_ctx) = (&scope, &failed, ctx, &group_ctx);
                async move {
                    let outcome = tokio::select! {
                        biased;
                        _ = scope.cancelled() => {
                            let reason = if ctx.cancel.is_cancelled() {
                                INTERRUPTED.to_string()
                            } else {
                                let failed = failed.lock().unwrap_or_else(PoisonError::into_inner);
                                format!("cancelled: sibling {} failed", failed.as_deref().unwrap_or("call"))
                            };
                            ToolCallOutcome::cancelled(call, reason)
                        }
                        outcome = self.run(call.clone(), group_ctx) => outcome,
                    };
                    (index, outcome)
                }
            })
            .collect();
        let mut results: Vec<Option<ToolCallOutcome>> = vec![None; group.len()];
        while let Some((index, outcome)) = running.next().await {
            if outcome.output.is_error && !scope.is_cancelled() {
                *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome.id.clone());
                scope.cancel();
            }
            results[index] = Some(outcome);
        }
        results
            .into_iter()
            .zip(group)
            .map(|(outcome, call)| {
                outcome.unwrap_or_else(|| ToolCallOutcome::cancelled(call, INTERRUPTED))
            })
            .collect()
    }
}
