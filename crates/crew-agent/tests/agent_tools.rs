//! Tool calls through the loop: hooks against deny rules, rewritten input, cancellation
//! mid-tool, the wall-time limit and huge outputs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::time::Duration;

use crew_agent::{AgentEvent, Limits, StopReason};
use crew_test_support::agent::{
    Build, Repo, assert_completed, assert_normalised, drain, rendered, scenario, transcript, turn,
};
use crew_test_support::tools::policy;
use crew_test_support::wait::{BUDGET, eventually_async};
use crew_tools::permissions::PermissionMode;
use crew_tools::{HookEvent, HookSpec, Hooks, Pipeline, ToolRegistry};
use serde_json::json;
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
        ToolRegistry::core_tools().unwrap(),
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
        ToolRegistry::core_tools().unwrap(),
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
        ToolRegistry::core_tools().unwrap(),
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
            assert!(eventually_async(BUDGET, || started.exists()).await);
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

#[tokio::test]
async fn a_blocking_stop_hook_forces_one_continuation_only() {
    let repo = Repo::new();
    let hook = repo.hook(
        "stop.sh",
        r#"cat >/dev/null; echo '{"decision":"block","reason":"run the tests first"}'"#,
    );
    let hooks = Hooks::new(vec![HookSpec {
        event: HookEvent::Stop,
        matcher: None,
        command: hook,
        timeout_secs: 30,
    }])
    .unwrap();
    let pipeline = Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    )
    .with_hooks(hooks);
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(pipeline)
        .agent(&repo);
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(result.turns, 2);
    assert_eq!(
        result.output, "noted",
        "the answer after the forced continuation"
    );
    let continued: Vec<String> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Recovery { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(continued, ["run the tests first"]);
    assert!(agent.history()[2].text().contains("run the tests first"));
}
