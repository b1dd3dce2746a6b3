//! Long-term memory through the loop: an agent keeps a memory with `memory_write` (no
//! permission asked), it is indexed in `MEMORY.md`, and the next conversation's prompt carries
//! the index; a memory naming a path that is gone is marked stale; `memory_forget` drops it;
//! Stop and PostToolUseFailure hooks can keep memories; broken memory files are named, not
//! trusted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use std::sync::Arc;

use crew_agent::{Agent, AgentEvent};
use crew_model::ModelProvider;
use crew_store::{MemoryScope, MemoryType};
use crew_test_support::agent::{
    Build, Prompts, Recording, Repo, assert_completed, drain, scenario, turn,
};
use crew_test_support::tools::policy;
use crew_tools::permissions::PermissionMode;
use crew_tools::{
    HookEvent, HookSpec, Hooks, Note, Pipeline, ToolRegistry, memory_tools, skill_tools,
};

fn recording() -> (Arc<dyn ModelProvider>, Prompts) {
    Recording::wrap(scenario("agent_memory"))
}

/// Agent `name` with the memory pipeline (no hooks), working in `repo`.
fn memory_agent(repo: &Repo, name: &'static str, model: Arc<dyn ModelProvider>) -> Agent {
    Build::new(name, model)
        .pipeline(pipeline(vec![]))
        .agent(repo)
        .0
}

/// Core tools plus memory and skills, under `ask` with nobody to ask: the memory tools must
/// not need a permission.
fn pipeline(hooks: Vec<HookSpec>) -> Pipeline {
    let mut registry = ToolRegistry::core_tools().unwrap();
    for tool in memory_tools().into_iter().chain(skill_tools()) {
        registry.register(tool).unwrap();
    }
    Pipeline::new(registry, policy(PermissionMode::Ask, &[], &[], &[]))
        .with_hooks(Hooks::new(hooks).unwrap())
}

fn last_result(agent: &Agent) -> (String, bool) {
    let history = agent.history();
    let results = history
        .iter()
        .rev()
        .find(|m| !m.tool_results().is_empty())
        .expect("a tool result")
        .tool_results();
    (results[0].1.to_string(), results[0].2)
}

#[tokio::test]
async fn a_memory_is_written_indexed_and_in_the_next_conversations_prompt() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.root.join("tests")).unwrap();
    std::fs::write(repo.root.join("tests/helper.rs"), "// helpers").unwrap();
    let mut agent = memory_agent(&repo, "alice", scenario("agent_memory"));
    let result = turn(&mut agent, "remember the test runner").await;
    assert_completed(&result);
    assert!(result.permission_denials.is_empty());
    let (content, is_error) = last_result(&agent);
    assert!(!is_error, "{content}");
    assert_eq!(content, "kept memory `test-runner` in alice's memory");

    let file = repo.root.join(".crew/memory/alice/test-runner.md");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(
            "---\nname: test-runner\ndescription: how to run the tests here\ntype: feedback\n---\n"
        ),
        "{text}"
    );
    let index = std::fs::read_to_string(repo.root.join(".crew/memory/alice/MEMORY.md")).unwrap();
    assert!(
        index.contains("- test-runner (feedback): how to run the tests here"),
        "{index}"
    );

    // A new conversation (a new agent, as a new process would be) sees the index, not the body.
    let (model, prompts) = recording();
    let mut next = memory_agent(&repo, "alice", model);
    assert_completed(&turn(&mut next, "hello").await);
    let (static_prefix, suffix) = prompts.lock().unwrap()[0].clone();
    assert!(static_prefix.contains("# Memory\n"), "{static_prefix}");
    assert!(static_prefix.contains("check that it still exists"));
    assert!(
        suffix.contains("# Memory index\n## Yours (alice)\n- test-runner (feedback): how to run the tests here\n## The team's\n(none)"),
        "{suffix}"
    );
    assert!(!suffix.contains("nextest"), "the body is read on demand");
    assert!(!suffix.contains("STALE"));

    // The body, on demand.
    assert_completed(&turn(&mut next, "recall the test runner").await);
    let (content, is_error) = last_result(&next);
    assert!(!is_error);
    assert!(content.contains("Run `cargo nextest run`"), "{content}");

    // Another agent does not see alice's own memories, only the team's.
    assert_completed(&turn(&mut next, "remember for the team").await);
    let (model, prompts) = recording();
    let mut bob = memory_agent(&repo, "bob", model);
    assert_completed(&turn(&mut bob, "hello").await);
    let (_, suffix) = prompts.lock().unwrap()[0].clone();
    assert!(suffix.contains("## Yours (bob)\n(none)"), "{suffix}");
    assert!(suffix.contains("- deadline (project): the release freeze"));
    assert!(!suffix.contains("test-runner"));
    assert!(repo.root.join(".crew/memory/team/deadline.md").is_file());
}

#[tokio::test]
async fn a_memory_naming_a_deleted_file_is_flagged_stale_and_forget_drops_it() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.root.join("tests")).unwrap();
    std::fs::write(repo.root.join("tests/helper.rs"), "// helpers").unwrap();
    let mut agent = memory_agent(&repo, "alice", scenario("agent_memory"));
    assert_completed(&turn(&mut agent, "remember the test runner").await);
    std::fs::remove_file(repo.root.join("tests/helper.rs")).unwrap();

    let (model, prompts) = recording();
    let mut next = memory_agent(&repo, "alice", model);
    assert_completed(&turn(&mut next, "recall the test runner").await);
    let (_, suffix) = prompts.lock().unwrap()[0].clone();
    assert!(
        suffix.contains(
            "- test-runner (feedback): how to run the tests here [STALE: names `tests/helper.rs` which no longer exists; verify before use]"
        ),
        "{suffix}"
    );
    let (content, _) = last_result(&next);
    assert!(
        content.contains("[STALE: tests/helper.rs no longer exists"),
        "{content}"
    );

    assert_completed(&turn(&mut next, "forget the test runner").await);
    let (content, is_error) = last_result(&next);
    assert!(!is_error, "{content}");
    assert!(!repo.root.join(".crew/memory/alice/test-runner.md").exists());
    let index = std::fs::read_to_string(repo.root.join(".crew/memory/alice/MEMORY.md")).unwrap();
    assert!(!index.contains("test-runner"), "{index}");
    // Forgetting again says what is missing.
    assert_completed(&turn(&mut next, "forget the test runner").await);
    let (content, is_error) = last_result(&next);
    assert!(is_error);
    assert!(
        content.contains("no memory named \"test-runner\" in alice's memory"),
        "{content}"
    );
}

#[tokio::test]
async fn names_that_escape_and_broken_files_are_refused_by_name() {
    let repo = Repo::new();
    let mut agent = memory_agent(&repo, "alice", scenario("agent_memory"));
    assert_completed(&turn(&mut agent, "escape memory").await);
    let (content, is_error) = last_result(&agent);
    assert!(is_error);
    assert!(
        content.contains("invalid memory name \"../../evil\""),
        "{content}"
    );
    assert!(!repo.root.join(".crew/evil.md").exists());

    // A hand-edited memory with a field missing, another with an unknown type.
    let dir = repo.root.join(".crew/memory/alice");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("test-runner.md"),
        "---\nname: test-runner\ndescription: d\n---\nbody",
    )
    .unwrap();
    std::fs::write(
        dir.join("odd.md"),
        "---\nname: odd\ndescription: d\ntype: gossip\n---\nbody",
    )
    .unwrap();
    let (model, prompts) = recording();
    let mut next = memory_agent(&repo, "alice", model);
    assert_completed(&turn(&mut next, "recall the test runner").await);
    let (_, suffix) = prompts.lock().unwrap()[0].clone();
    let odd = format!(
        "{}: front matter: type: unknown variant `gossip`",
        dir.join("odd.md").display()
    );
    assert!(
        suffix.contains(&format!("- (unreadable, ignored: {odd}")),
        "{suffix}"
    );
    let (content, is_error) = last_result(&next);
    assert!(is_error);
    assert!(
        content.contains("test-runner.md: front matter: missing field `type`"),
        "{content}"
    );
}

/// A hook that prints `output` as its JSON answer.
fn hook(repo: &Repo, event: HookEvent, name: &str, output: &str) -> HookSpec {
    HookSpec {
        event,
        matcher: None,
        command: repo.hook(name, &format!("cat >/dev/null; echo '{output}'")),
        timeout_secs: 10,
    }
}

#[tokio::test]
async fn stop_and_failure_hooks_keep_memories() {
    let repo = Repo::new();
    let stop = hook(
        &repo,
        HookEvent::Stop,
        "stop.sh",
        r#"{"hookSpecificOutput": {"hookEventName": "Stop", "memory": {"name": "session-end", "type": "project", "description": "what the last session did", "body": "It ended.", "scope": "team"}}}"#,
    );
    let failure = hook(
        &repo,
        HookEvent::PostToolUseFailure,
        "fail.sh",
        r#"{"memory": {"name": "missing-file", "type": "feedback", "description": "a tool that failed", "body": "There is no skill called nothing."}}"#,
    );
    let bad = hook(
        &repo,
        HookEvent::PreToolUse,
        "pre.sh",
        r#"{"memory": {"name": "nope", "type": "user", "description": "d", "body": "b"}}"#,
    );
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_memory"))
        .pipeline(pipeline(vec![stop, failure, bad]))
        .agent(&repo);
    assert_completed(&turn(&mut agent, "fail a tool").await);
    let events = drain(&mut rx);
    let team = repo.root.join(".crew/memory/team/session-end.md");
    assert!(team.exists(), "{events:#?}");
    assert!(
        std::fs::read_to_string(&team)
            .unwrap()
            .contains("It ended.")
    );
    let own = repo.root.join(".crew/memory/alice/missing-file.md");
    assert!(own.exists(), "{events:#?}");
    assert!(
        std::fs::read_to_string(&own)
            .unwrap()
            .contains("type: feedback")
    );
    assert!(!repo.root.join(".crew/memory/alice/nope.md").exists());

    let notes: Vec<Note> = events
        .into_iter()
        .flat_map(|e| match e {
            AgentEvent::HookNotes { notes, .. } => notes,
            AgentEvent::ToolResult { notes, .. } => notes,
            _ => Vec::new(),
        })
        .collect();
    let texts: Vec<String> = notes.iter().map(|n| format!("{n:?}")).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("a Stop hook kept memory `session-end` in the team's memory")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("a PostToolUseFailure hook kept memory `missing-file`"))
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("a PreToolUse hook cannot keep a memory"))
    );
    assert!(!notes.iter().any(|n| matches!(n, Note::Remember { .. })));

    // The store's view agrees.
    let book = agent.memory().unwrap();
    let memory = book.read(Some(MemoryScope::Team), "session-end").unwrap();
    assert_eq!(memory.kind, MemoryType::Project);
}

#[tokio::test]
async fn a_deny_rule_turns_memory_writing_off() {
    let repo = Repo::new();
    let mut registry = ToolRegistry::core_tools().unwrap();
    for tool in memory_tools() {
        registry.register(tool).unwrap();
    }
    let denying = Pipeline::new(
        registry,
        policy(PermissionMode::Ask, &[], &[], &["memory_write"]),
    );
    let (mut agent, _rx) = Build::new("alice", scenario("agent_memory"))
        .pipeline(denying)
        .agent(&repo);
    let result = turn(&mut agent, "remember the test runner").await;
    assert_eq!(result.permission_denials.len(), 1);
    assert!(!repo.root.join(".crew/memory/alice/test-runner.md").exists());
}
