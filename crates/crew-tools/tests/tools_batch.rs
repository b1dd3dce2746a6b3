//! Batches: consecutive safe calls in parallel, the rest one at a time, results in call order;
//! a failure cancels its parallel siblings without ending the batch; cancelling the batch
//! still gives every call a result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crew_test_support::tools::{Fixture, call, policy};
use crew_test_support::wait::{BUDGET, eventually_async};
use crew_tools::permissions::PermissionMode;
use crew_tools::{
    Pipeline, ToolContext, ToolError, ToolFuture, ToolKind, ToolOutput, ToolRegistry, TypedTool,
};
use serde_json::json;

/// A test tool. Input `{"mode": ...}`: "ok", "fail", "hang" (until cancelled),
/// "meet" (waits until `meet_target` calls are inside at once: proves parallelism),
/// "serial" (records the most calls ever inside at once). "safe": false makes a call unsafe.
#[derive(Default)]
struct ProbeState {
    inside: AtomicUsize,
    max_inside: AtomicUsize,
    started: AtomicUsize,
}

struct Probe(Arc<ProbeState>);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProbeInput {
    mode: String,
    safe: Option<bool>,
}

impl TypedTool for Probe {
    type Input = ProbeInput;
    const NAME: &'static str = "probe";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "test probe"
    }
    fn is_concurrency_safe(&self, input: &ProbeInput) -> bool {
        input.safe.unwrap_or(true)
    }
    fn run(&self, input: ProbeInput, ctx: ToolContext) -> ToolFuture {
        let probe = Arc::clone(&self.0);
        Box::pin(async move {
            probe.started.fetch_add(1, Ordering::SeqCst);
            let now = probe.inside.fetch_add(1, Ordering::SeqCst) + 1;
            probe.max_inside.fetch_max(now, Ordering::SeqCst);
            let result = match input.mode.as_str() {
                "fail" => Ok(ToolOutput::error("boom")),
                "hang" => {
                    ctx.cancel.cancelled().await;
                    Err(ToolError::Cancelled)
                }
                "meet" => {
                    let met =
                        eventually_async(BUDGET, || probe.max_inside.load(Ordering::SeqCst) >= 2)
                            .await;
                    Ok(if met {
                        ToolOutput::ok("met")
                    } else {
                        ToolOutput::error("ran alone")
                    })
                }
                "serial" => {
                    tokio::task::yield_now().await;
                    Ok(ToolOutput::ok("serial"))
                }
                _ => Ok(ToolOutput::ok("ok")),
            };
            probe.inside.fetch_sub(1, Ordering::SeqCst);
            result
        })
    }
}

fn setup() -> (Fixture, Arc<ProbeState>, Pipeline) {
    let probe = Arc::new(ProbeState::default());
    let mut registry = ToolRegistry::new();
    registry
        .register(Arc::new(Probe(Arc::clone(&probe))))
        .unwrap();
    let pipeline = Pipeline::new(registry, policy(PermissionMode::Ask, &[], &[], &[]));
    (Fixture::new(), probe, pipeline)
}

fn contents(outcomes: &[crew_tools::ToolCallOutcome]) -> Vec<(String, String, bool)> {
    outcomes
        .iter()
        .map(|o| (o.id.clone(), o.output.content.clone(), o.output.is_error))
        .collect()
}

#[tokio::test]
async fn safe_calls_run_together_and_results_keep_call_order() {
    let (fx, probe, p) = setup();
    let calls = vec![
        call("a", "probe", json!({"mode": "meet"})),
        call("b", "probe", json!({"mode": "meet"})),
        call("c", "probe", json!({"mode": "serial", "safe": false})),
        call("d", "probe", json!({"mode": "serial", "safe": false})),
        call("e", "probe", json!({"mode": "ok"})),
    ];
    let outcomes = p.run_batch(calls, &fx.ctx).await;
    let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"]);
    assert_eq!(outcomes[0].output.content, "met");
    assert_eq!(outcomes[1].output.content, "met");
    assert!(
        outcomes.iter().all(|o| !o.output.is_error),
        "{:?}",
        contents(&outcomes)
    );
    assert_eq!(
        probe.max_inside.load(Ordering::SeqCst),
        2,
        "unsafe calls ran alone"
    );
}

#[tokio::test]
async fn a_failure_cancels_running_siblings_but_not_the_batch() {
    let (fx, _probe, p) = setup();
    let calls = vec![
        call("hangs", "probe", json!({"mode": "hang"})),
        call("fails", "probe", json!({"mode": "fail"})),
        call("after", "probe", json!({"mode": "ok", "safe": false})),
    ];
    let outcomes = p.run_batch(calls, &fx.ctx).await;
    assert_eq!(
        contents(&outcomes),
        [
            (
                "hangs".to_string(),
                "cancelled: sibling fails failed".to_string(),
                true
            ),
            ("fails".to_string(), "boom".to_string(), true),
            ("after".to_string(), "ok".to_string(), false),
        ]
    );
    assert!(
        !fx.ctx.cancel.is_cancelled(),
        "the turn's token is untouched"
    );
}

#[tokio::test]
async fn cancelling_the_batch_answers_every_call() {
    let (fx, probe, p) = setup();
    let calls = vec![
        call("one", "probe", json!({"mode": "hang"})),
        call("two", "probe", json!({"mode": "hang"})),
        call("three", "probe", json!({"mode": "ok", "safe": false})),
        call("four", "probe", json!({"mode": "ok"})),
    ];
    let cancel = fx.ctx.cancel.clone();
    let watcher = {
        let probe = Arc::clone(&probe);
        tokio::spawn(async move {
            assert!(eventually_async(BUDGET, || probe.started.load(Ordering::SeqCst) == 2).await);
            cancel.cancel();
        })
    };
    let outcomes = p.run_batch(calls, &fx.ctx).await;
    watcher.await.unwrap();
    assert_eq!(outcomes.len(), 4);
    for outcome in &outcomes {
        assert!(outcome.output.is_error);
        assert_eq!(
            outcome.output.content, "cancelled: the batch was interrupted",
            "{}",
            outcome.id
        );
    }
    assert_eq!(
        probe.started.load(Ordering::SeqCst),
        2,
        "nothing started after the cancel"
    );
}

#[tokio::test]
async fn unknown_tools_run_alone_and_fail_in_place() {
    let (fx, _probe, p) = setup();
    let calls = vec![
        call("x", "probe", json!({"mode": "ok"})),
        call("y", "nope", json!({})),
        call("z", "probe", json!({"mode": "ok"})),
    ];
    let outcomes = p.run_batch(calls, &fx.ctx).await;
    assert!(!outcomes[0].output.is_error);
    assert!(outcomes[1].output.content.contains("unknown tool `nope`"));
    assert!(!outcomes[2].output.is_error);
}

#[tokio::test]
async fn batches_can_run_on_spawned_tasks() {
    let (fx, _probe, p) = setup();
    let p = Arc::new(p);
    let ctx = fx.ctx.clone();
    let handle = tokio::spawn(async move {
        p.run_batch(vec![call("s", "probe", json!({"mode": "ok"}))], &ctx)
            .await
    });
    let outcomes = handle.await.unwrap();
    assert_eq!(outcomes[0].output.content, "ok");
}
