//! The hook events outside tool calls, through the loop: SessionStart and UserPromptSubmit
//! (input, context, blocking), PreCompact, and `continue: false` ending the turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::{AgentEvent, StopReason};
use crew_test_support::agent::{
    Build, Repo, assert_completed, chatter, drain, scenario, texts, thresholds, turn,
};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::{HookEvent, HookSpec, Hooks, Note, Pipeline, ToolRegistry};
use serde_json::Value;

fn with_hooks(specs: Vec<(HookEvent, Option<&str>, String)>) -> Pipeline {
    let specs = specs
        .into_iter()
        .map(|(event, matcher, command)| HookSpec {
            event,
            matcher: matcher.map(String::from),
            command,
            timeout_secs: 30,
        })
        .collect();
    Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    )
    .with_hooks(Hooks::new(specs).unwrap())
}

/// Every JSON line a hook appended to `path`.
fn payloads(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn session_start_and_user_prompt_submit_add_context_to_the_input() {
    let repo = Repo::new();
    let log = repo.root.join("hooks.log");
    // SessionStart answers in JSON, UserPromptSubmit in plain text (both are context).
    let start = repo.hook(
        "start.sh",
        &format!(
            "cat >> {0}; echo >> {0}; echo '{{\"hookSpecificOutput\": {{\"additionalContext\": \"branch is main\"}}}}'",
            log.display()
        ),
    );
    let prompt = repo.hook(
        "prompt.sh",
        &format!(
            "cat >> {0}; echo >> {0}; echo 'today is release day'",
            log.display()
        ),
    );
    let pipeline = with_hooks(vec![
        (HookEvent::SessionStart, Some("startup"), start),
        (HookEvent::UserPromptSubmit, None, prompt),
    ]);
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(pipeline)
        .agent(&repo);
    assert_completed(&turn(&mut agent, "ping").await);
    assert_eq!(
        texts(&agent.history()[0]),
        [
            "ping",
            "[hook context] branch is main",
            "[hook context] today is release day"
        ]
    );
    assert_completed(&turn(&mut agent, "ping again").await);
    assert_eq!(
        texts(&agent.history()[2]),
        ["ping again", "[hook context] today is release day"],
        "SessionStart fires once per session"
    );

    let runs = payloads(&log);
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[0]["hook_event_name"], "SessionStart");
    assert_eq!(runs[0]["source"], "startup");
    assert_eq!(runs[0]["agent"], "alice");
    assert_eq!(runs[0]["session_id"], agent.session());
    assert_eq!(runs[0]["cwd"], serde_json::json!(repo.root));
    assert_eq!(
        runs[0]["transcript_path"],
        serde_json::json!(agent.transcript_path())
    );
    assert_eq!(runs[1]["hook_event_name"], "UserPromptSubmit");
    assert_eq!(runs[1]["prompt"], "ping");
    assert_eq!(runs[2]["prompt"], "ping again");
}

#[tokio::test]
async fn a_blocked_prompt_never_reaches_the_model_or_the_history() {
    let repo = Repo::new();
    let json_block = repo.hook(
        "block.sh",
        r#"cat >/dev/null; echo '{"decision": "block", "reason": "no secrets in prompts"}'"#,
    );
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(
            HookEvent::UserPromptSubmit,
            None,
            json_block,
        )]))
        .agent(&repo);
    let result = turn(&mut agent, "ping my password").await;
    assert_eq!(result.stop_reason, StopReason::HookStopped);
    assert_eq!(
        result.reason,
        "a UserPromptSubmit hook blocked the prompt: no secrets in prompts"
    );
    assert_eq!(result.turns, 0, "no model call");
    assert!(agent.history().is_empty());

    // Exit code 2 blocks the same way, its stderr the reason.
    let exit_2 = repo.hook("exit2.sh", "cat >/dev/null; echo 'not now' >&2; exit 2");
    let (mut agent, _rx) = Build::new("bob", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(
            HookEvent::UserPromptSubmit,
            None,
            exit_2,
        )]))
        .agent(&repo);
    let result = turn(&mut agent, "ping").await;
    assert_eq!(result.stop_reason, StopReason::HookStopped);
    assert!(result.reason.ends_with("not now"), "{}", result.reason);
    assert!(agent.history().is_empty());
}

#[tokio::test]
async fn continue_false_ends_the_turn_with_the_stop_reason() {
    let repo = Repo::new();
    let halt = |name: &str| {
        repo.hook(
            name,
            r#"cat >/dev/null; echo '{"continue": false, "stopReason": "out of hours", "systemMessage": "see you tomorrow"}'"#,
        )
    };
    // From SessionStart: before any model call.
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(
            HookEvent::SessionStart,
            None,
            halt("a.sh"),
        )]))
        .agent(&repo);
    let result = turn(&mut agent, "ping").await;
    assert_eq!(result.stop_reason, StopReason::HookStopped);
    assert_eq!(result.reason, "a hook stopped the agent: out of hours");
    assert_eq!(result.turns, 0);
    let shown: Vec<Note> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::HookNotes {
                event: HookEvent::SessionStart,
                notes,
            } => Some(notes),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        shown,
        [Note::SystemMessage {
            event: HookEvent::SessionStart,
            text: "see you tomorrow".into()
        }]
    );

    // From PostToolUse: the tool ran, its result is in the history, and no further call is made.
    let (mut agent, _rx) = Build::new("bob", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(
            HookEvent::PostToolUse,
            Some("glob"),
            halt("b.sh"),
        )]))
        .agent(&repo);
    let result = turn(&mut agent, "list the text files").await;
    assert_eq!(result.stop_reason, StopReason::HookStopped);
    assert_eq!(result.turns, 1);
    assert_eq!(result.tools_used.len(), 1);
    assert!(!result.tools_used[0].is_error);

    // From Stop: the turn ends as the hook's, not as completed.
    let (mut agent, _rx) = Build::new("carol", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(HookEvent::Stop, None, halt("c.sh"))]))
        .agent(&repo);
    let result = turn(&mut agent, "ping").await;
    assert_eq!(result.stop_reason, StopReason::HookStopped);
    assert_eq!(result.output, "pong");
}

#[tokio::test]
async fn pre_compact_runs_before_a_compaction_with_its_trigger() {
    let repo = Repo::new();
    let log = repo.root.join("compact.log");
    let pre = repo.hook("pre.sh", &format!("cat >> {0}; echo >> {0}", log.display()));
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(with_hooks(vec![(
            HookEvent::PreCompact,
            Some("proactive"),
            pre,
        )]))
        .compaction(thresholds(5_000, 2))
        .agent(&repo);
    assert_completed(&turn(&mut agent, "ping").await);
    assert!(payloads(&log).is_empty(), "nothing to compact yet");
    agent.load_history(&chatter(30));
    assert_completed(&turn(&mut agent, "ping").await);
    let runs = payloads(&log);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["hook_event_name"], "PreCompact");
    assert_eq!(runs[0]["trigger"], "proactive");
    assert_eq!(runs[0]["agent"], "alice");
}
