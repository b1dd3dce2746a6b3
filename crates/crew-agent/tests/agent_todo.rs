//! The agent's own checklist: `todo_write` / `todo_read` (typed input, one item in progress),
//! a watcher sees every change, and the list is put back after a compaction folds away the
//! turn that wrote it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::TODOS_HEADER;
use crew_model::ContentBlock;
use crew_store::{TodoItem, TodoStatus};
use crew_test_support::agent::{
    Build, Repo, assert_completed, chatter, scenario, thresholds, turn,
};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::{Pipeline, ToolRegistry, todo_tools};
use std::sync::{Arc, Mutex};

fn pipeline_with_todos(mode: PermissionMode) -> Pipeline {
    let mut registry = ToolRegistry::core_tools().unwrap();
    for tool in todo_tools() {
        registry.register(tool).unwrap();
    }
    Pipeline::new(registry, policy(mode, &[], &[], &[]))
}

#[tokio::test]
async fn todo_write_replaces_the_list_and_the_watcher_sees_it() {
    let repo = Repo::new();
    // Under `ask` with nobody to ask: the checklist needs no permission.
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(pipeline_with_todos(PermissionMode::Ask))
        .agent(&repo);
    let seen: Arc<Mutex<Vec<Vec<TodoItem>>>> = Arc::default();
    let log = Arc::clone(&seen);
    agent
        .todos()
        .watch(move |items| log.lock().unwrap().push(items.to_vec()));
    let result = turn(&mut agent, "make a checklist").await;
    assert_completed(&result);
    assert!(result.permission_denials.is_empty());
    let items = agent.todos().items();
    let statuses: Vec<TodoStatus> = items.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            TodoStatus::Completed,
            TodoStatus::InProgress,
            TodoStatus::Pending
        ]
    );
    assert_eq!(*seen.lock().unwrap(), [items]);
    let (_, content, is_error) = agent.history()[2].tool_results()[0];
    assert!(!is_error);
    assert!(
        content.contains("1 of 3 done") && content.contains("[~] Fix the bug"),
        "{content}"
    );
}

#[tokio::test]
async fn bad_checklists_are_refused_with_the_reason() {
    use crew_tools::ToolCall;
    use serde_json::json;
    let repo = Repo::new();
    let p = pipeline_with_todos(PermissionMode::WorkspaceWrite);
    let ctx = crew_tools::ToolContext::new(&repo.root, repo.root.join(".crew/tool-results"));
    let run = |input| {
        p.run(
            ToolCall {
                id: "t".into(),
                name: "todo_write".into(),
                input,
            },
            &ctx,
        )
    };
    let wrong_status = run(json!({"todos": [{"content": "x", "status": "doing"}]})).await;
    assert!(wrong_status.output.is_error);
    assert!(
        wrong_status.output.content.contains("status"),
        "{}",
        wrong_status.output.content
    );
    let two_at_once = run(json!({"todos": [
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "in_progress"}
    ]}))
    .await;
    assert!(
        two_at_once
            .output
            .content
            .contains("keep exactly one in progress"),
        "{}",
        two_at_once.output.content
    );
    assert!(
        ctx.todos.items().is_empty(),
        "a refused write changes nothing"
    );
    let read = p
        .run(
            ToolCall {
                id: "r".into(),
                name: "todo_read".into(),
                input: json!({}),
            },
            &ctx,
        )
        .await;
    assert!(
        read.output.content.contains("empty"),
        "{}",
        read.output.content
    );
}

#[tokio::test]
async fn the_checklist_survives_a_compaction_that_folds_its_turn_away() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(pipeline_with_todos(PermissionMode::WorkspaceWrite))
        .compaction(thresholds(5_000, 2))
        .agent(&repo);
    assert_completed(&turn(&mut agent, "make a checklist").await);
    // Long chatter after it pushes the checklist turn out of the kept window.
    let mut history = agent.history().to_vec();
    history.extend(chatter(30));
    agent.load_history(&history);
    assert_completed(&turn(&mut agent, "ping").await);
    let history = agent.history();
    assert!(
        !history
            .iter()
            .flat_map(|m| m.tool_uses())
            .any(|(_, name, _)| name == "todo_write"),
        "the turn that wrote the checklist was folded away"
    );
    let first: Vec<&str> = history[0]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let kept = first
        .iter()
        .find(|t| t.starts_with(TODOS_HEADER))
        .unwrap_or_else(|| panic!("no checklist in {first:?}"));
    assert!(
        kept.contains("[x] Read the parser\n[~] Fix the bug\n[ ] Run the tests"),
        "{kept}"
    );
}
