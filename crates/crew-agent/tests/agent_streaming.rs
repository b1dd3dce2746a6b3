//! Streaming tool execution: a call that is safe for its input starts while the reply is
//! still streaming; anything behind an unsafe call waits for the reply and for that call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crew_agent::{Agent, AgentEvent};
use crew_model::{ModelError, ModelProvider, ModelRequest, StreamEvent};
use crew_test_support::agent::{Build, Repo, assert_completed, drain, scenario, turn};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::tool::{ToolKind, ToolOutput};
use crew_tools::{Pipeline, ToolContext, ToolFuture, ToolRegistry, TypedTool};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;

/// A concurrency-safe tool that records that it ran (and whether `first.txt` existed then)
/// and wakes whoever waits for it.
#[derive(Default)]
struct ProbeLog {
    ran: AtomicUsize,
    saw_first_file: AtomicBool,
    notify: Notify,
}

struct Probe(Arc<ProbeLog>);

/// Takes any object.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ProbeInput {}

impl TypedTool for Probe {
    type Input = ProbeInput;
    const NAME: &'static str = "probe";
    const KIND: ToolKind = ToolKind::Read;
    const RESULT_BUDGET: Option<usize> = None;

    fn description(&self) -> &str {
        "Records that it ran."
    }
    fn is_concurrency_safe(&self, _: &ProbeInput) -> bool {
        true
    }
    fn run(&self, _: ProbeInput, ctx: ToolContext) -> ToolFuture {
        let log = &self.0;
        if ctx.workspace.join("first.txt").exists() {
            log.saw_first_file.store(true, Ordering::SeqCst);
        }
        log.ran.fetch_add(1, Ordering::SeqCst);
        log.notify.notify_waiters();
        Box::pin(async { Ok(ToolOutput::ok("probed")) })
    }
}

/// Holds the first reply's `Stop` back until a probe has run (or 20 s passed), and records
/// whether one had run by then.
struct HoldFirstStop {
    inner: Arc<dyn ModelProvider>,
    log: Arc<ProbeLog>,
    held: Arc<AtomicBool>,
    ran_before_stop: Arc<AtomicBool>,
}

impl ModelProvider for HoldFirstStop {
    fn name(&self) -> &str {
        "hold-first-stop"
    }
    fn is_simulated(&self) -> bool {
        true
    }
    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let (log, held, flag) = (
            Arc::clone(&self.log),
            Arc::clone(&self.held),
            Arc::clone(&self.ran_before_stop),
        );
        self.inner
            .stream(req)
            .then(move |item| {
                let (log, held, flag) = (Arc::clone(&log), Arc::clone(&held), Arc::clone(&flag));
                async move {
                    let stop = matches!(item, Ok(StreamEvent::Stop { .. }));
                    if stop && !held.swap(true, Ordering::SeqCst) {
                        let waited = tokio::time::timeout(Duration::from_secs(20), async {
                            loop {
                                let notified = log.notify.notified();
                                if log.ran.load(Ordering::SeqCst) > 0 {
                                    return;
                                }
                                notified.await;
                            }
                        })
                        .await;
                        flag.store(waited.is_ok(), Ordering::SeqCst);
                    }
                    item
                }
            })
            .boxed()
    }
}

/// An agent with the probe tool; with `hold`, the first reply's end waits for a probe.
fn probe_agent(
    repo: &Repo,
    hold: bool,
) -> (
    Agent,
    UnboundedReceiver<AgentEvent>,
    Arc<ProbeLog>,
    Arc<AtomicBool>,
) {
    let log = Arc::new(ProbeLog::default());
    let ran_before_stop = Arc::new(AtomicBool::new(false));
    let mut registry = ToolRegistry::core_tools().unwrap();
    registry
        .register(Arc::new(Probe(Arc::clone(&log))))
        .unwrap();
    let model: Arc<dyn ModelProvider> = if hold {
        Arc::new(HoldFirstStop {
            inner: scenario("agent_tools"),
            log: Arc::clone(&log),
            held: Arc::new(AtomicBool::new(false)),
            ran_before_stop: Arc::clone(&ran_before_stop),
        })
    } else {
        scenario("agent_tools")
    };
    let pipeline = Pipeline::new(
        registry,
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    );
    let (agent, rx) = Build::new("alice", model).pipeline(pipeline).agent(repo);
    (agent, rx, log, ran_before_stop)
}

fn early_flags(events: &[AgentEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolUse { name, early, .. } => Some((name.clone(), *early)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_safe_tool_starts_before_the_reply_ends_and_unsafe_ones_wait() {
    let repo = Repo::new();
    let (mut agent, mut rx, log, ran_before_stop) = probe_agent(&repo, true);
    let result = turn(&mut agent, "probe now").await;
    assert_completed(&result);
    assert!(
        ran_before_stop.load(Ordering::SeqCst),
        "the probe must run while the reply streams"
    );
    assert_eq!(log.ran.load(Ordering::SeqCst), 2);
    let flags = early_flags(&drain(&mut rx));
    assert_eq!(
        flags,
        [
            ("probe".into(), true),
            ("write".into(), false),
            ("probe".into(), false)
        ],
        "a safe call after an unsafe one waits for it"
    );
    let history = agent.history();
    let ids: Vec<&str> = history[2].tool_results().iter().map(|r| r.0).collect();
    let calls: Vec<&str> = history[1].tool_uses().iter().map(|c| c.0).collect();
    assert_eq!(ids, calls, "results come back in call order");
    assert!(repo.root.join("out.txt").exists());
}

#[tokio::test]
async fn nothing_starts_early_behind_an_unsafe_call() {
    let repo = Repo::new();
    let (mut agent, mut rx, log, _) = probe_agent(&repo, false);
    let result = turn(&mut agent, "write then probe").await;
    assert_completed(&result);
    assert_eq!(log.ran.load(Ordering::SeqCst), 1);
    assert!(
        log.saw_first_file.load(Ordering::SeqCst),
        "the probe ran after the write before it"
    );
    let flags = early_flags(&drain(&mut rx));
    assert_eq!(flags, [("write".into(), false), ("probe".into(), false)]);
}
