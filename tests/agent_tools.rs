//! Tool calls through the loop: hooks against deny rules, rewritten input, cancellation
//! mid-tool, the wall-time limit, huge outputs, and safe tools starting before the reply ends.

mod agent_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agent_support::{
    Build, Repo, assert_completed, assert_normalised, drain, eventually, policy, rendered,
    scenario, transcript, turn,
};
use crew::agent::{AgentEvent, Limits, StopReason};
use crew::model::{ModelError, ModelProvider, ModelRequest, StreamEvent};
use crew::tools::permissions::PermissionMode;
use crew::tools::tool::{Subject, Tool, ToolError, ToolKind, ToolOutput};
use crew::tools::{HookEvent, HookSpec, Hooks, Pipeline, ToolContext, ToolRegistry};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn pre_tool_use_hook(command: String) -> Hooks {
    Hooks::new(vec![HookSpec {
        event: HookEvent::PreToolUse,
        matcher: Some("bash".into()),
        command,
        timeout_secs: 30,
    }])
    .unwrap()
}

#[tokio::test]
async fn a_hook_allow_loses_to_a_deny_rule() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("notes.txt"), "keep me").unwrap();
    let hook = repo.hook(
        "allow.sh",
        r#"cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#,
    );
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools(),
        policy(PermissionMode::Ask, &[], &[], &["bash(rm:*)"]),
    )
    .with_hooks(pre_tool_use_hook(hook.clone()));
    let (mut agent, _rx) = Build::new("alice", scenario("agent_tools"))
        .pipeline(pipeline)
        .agent(&repo);
    let result = turn(&mut agent, "remove the notes").await;
    assert_completed(&result);
    assert!(
        repo.root.join("notes.txt").exists(),
        "the deny rule must win"
    );
    assert_eq!(result.permission_denials.len(), 1);
    let denial = &result.permission_denials[0];
    assert_eq!(denial.tool, "bash");
    assert!(denial.reason.contains("bash(rm:*)"), "{}", denial.reason);
    assert!(result.tools_used[0].is_error);

    // Control: without the deny rule the same hook's allow does open the call (Ask mode would
    // otherwise refuse it, as nobody is there to ask).
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools(),
        policy(PermissionMode::Ask, &[], &[], &[]),
    )
    .with_hooks(pre_tool_use_hook(hook));
    let (mut agent, _rx) = Build::new("bob", scenario("agent_tools"))
        .pipeline(pipeline)
        .agent(&repo);
    let result = turn(&mut agent, "remove the notes").await;
    assert!(
        result.permission_denials.is_empty(),
        "{:?}",
        result.permission_denials
    );
    assert!(!repo.root.join("notes.txt").exists());
}

#[tokio::test]
async fn the_tool_gets_the_hooks_input_while_history_and_transcript_keep_the_models() {
    let repo = Repo::new();
    let hook = repo.hook(
        "rewrite.sh",
        r#"cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten"}}}'"#,
    );
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools(),
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    )
    .with_hooks(pre_tool_use_hook(hook));
    let (mut agent, _rx) = Build::new("alice", scenario("agent_tools"))
        .pipeline(pipeline)
        .agent(&repo);
    let result = turn(&mut agent, "say original").await;
    assert_completed(&result);
    let original = json!({"command": "echo original"});
    let history = agent.history();
    assert_eq!(history[1].tool_uses()[0].2, &original);
    let (_, content, _) = history[2].tool_results()[0];
    assert!(
        content.contains("rewritten") && !content.contains("original"),
        "{content}"
    );

    let lines = transcript(&agent);
    let used = lines.iter().find_map(|l| match &l.event {
        AgentEvent::ToolUse { input, .. } => Some(input.clone()),
        _ => None,
    });
    assert_eq!(used, Some(original));
    let rewritten = lines.iter().find_map(|l| match &l.event {
        AgentEvent::ToolResult {
            rewritten_input, ..
        } => rewritten_input.clone(),
        _ => None,
    });
    assert_eq!(rewritten, Some(json!({"command": "echo rewritten"})));
}

#[tokio::test]
async fn cancelling_mid_tool_leaves_a_valid_normalised_transcript() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_tools")).agent(&repo);
    let cancel = CancellationToken::new();
    let started = repo.root.join("started");
    let (result, ()) = tokio::join!(
        agent.run_turn("wait a while".into(), cancel.clone()),
        async {
            assert!(eventually(Duration::from_secs(20), || started.exists()).await);
            cancel.cancel();
        }
    );
    assert_eq!(
        result.stop_reason,
        StopReason::Interrupted,
        "{}",
        result.reason
    );
    assert_eq!(result.tools_used.len(), 1);
    assert!(result.tools_used[0].is_error);
    let history = agent.history();
    assert_normalised(history);
    assert_eq!(history.len(), 3);
    let (id, _, _) = history[1].tool_uses()[0];
    let (answered, _, is_error) = history[2].tool_results()[0];
    assert_eq!((answered, is_error), (id, true));
    let lines = transcript(&agent);
    assert!(matches!(
        &lines.last().unwrap().event,
        AgentEvent::TurnEnd { .. }
    ));
    assert!(rendered(&agent).contains("Interrupted"));

    // The agent carries on normally afterwards.
    let next = turn(&mut agent, "anything").await;
    assert_eq!(next.stop_reason, StopReason::Completed);
    assert_normalised(agent.history());
}

#[tokio::test]
async fn the_wall_time_limit_stops_a_slow_tool() {
    let repo = Repo::new();
    let limits = Limits {
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let (mut agent, _rx) = Build::new("alice", scenario("agent_tools"))
        .limits(limits)
        .agent(&repo);
    let result = turn(&mut agent, "wait a while").await;
    assert_eq!(result.stop_reason, StopReason::MaxBudgetReached);
    assert!(result.reason.contains("wall-time"), "{}", result.reason);
    assert_normalised(agent.history());
}

#[tokio::test]
async fn a_ten_megabyte_output_is_spilled_and_reading_the_spill_file_is_not() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_tools")).agent(&repo);
    let result = turn(&mut agent, "make a big output").await;
    assert_completed(&result);
    assert_eq!(result.output, "read it");
    let spill = repo.root.join(".crew/tool-results/toolu_scripted_1.txt");
    assert_eq!(std::fs::metadata(&spill).unwrap().len(), 10_000_000);
    let results: Vec<(String, usize, Option<std::path::PathBuf>)> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                name,
                content,
                spilled,
                ..
            } => Some((name, content.len(), spilled)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "bash");
    assert_eq!(results[0].2.as_deref(), Some(spill.as_path()));
    assert!(results[0].1 < 10_000, "the model sees a preview only");
    assert_eq!(results[1].0, "read");
    assert_eq!(
        results[1].2, None,
        "reading a spill file never spills again"
    );
    let history_bytes: usize = agent
        .history()
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|(_, c, _)| c.len())
        .sum();
    assert!(history_bytes < 20_000);
}

/// A concurrency-safe tool that records that it ran (and whether `first.txt` existed then)
/// and wakes whoever waits for it.
#[derive(Default)]
struct ProbeLog {
    ran: AtomicUsize,
    saw_first_file: AtomicBool,
    notify: Notify,
}

struct Probe(Arc<ProbeLog>);

impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn description(&self) -> &str {
        "Records that it ran."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn validate(&self, _: &Value, _: &ToolContext) -> Result<(), String> {
        Ok(())
    }
    fn is_concurrency_safe(&self, _: &Value) -> bool {
        true
    }
    fn result_budget(&self) -> Option<usize> {
        None
    }
    fn permission_subject(&self, _: &Value) -> Subject {
        Subject::None
    }
    fn call(
        &self,
        _: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
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
    crew::agent::Agent,
    tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    Arc<ProbeLog>,
    Arc<AtomicBool>,
) {
    let log = Arc::new(ProbeLog::default());
    let ran_before_stop = Arc::new(AtomicBool::new(false));
    let mut registry = ToolRegistry::core_tools();
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
