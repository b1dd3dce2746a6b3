//! The compaction ladder through the loop: cheapest rung first, and each rung only while the
//! context is still over the threshold.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::compaction::steps::{DROPPED, FOLD_HEADER};
use crew_agent::compaction::summary::SUMMARY_HEADER;
use crew_agent::{AgentEvent, CompactionStep, CompactionTrigger, FILES_HEADER, TODOS_HEADER};
use crew_model::{ChatMessage, ContentBlock, Role};
use crew_store::{TodoItem, TodoStatus};
use crew_test_support::agent::{
    Build, Repo, assert_completed, assert_normalised, chatter, core_pipeline, drain, no_tools,
    scenario, texts, thresholds, tool_turns, turn,
};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

fn steps(rx: &mut UnboundedReceiver<AgentEvent>) -> Vec<CompactionStep> {
    drain(rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Compaction {
                step,
                trigger,
                tokens_before,
                tokens_after,
            } => {
                assert_eq!(trigger, CompactionTrigger::Proactive);
                assert!(tokens_after < tokens_before);
                Some(step)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn spilling_alone_is_enough_when_big_results_are_the_problem() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(core_pipeline())
        .compaction(thresholds(20_000, 2))
        .agent(&repo);
    agent.load_history(&tool_turns("bash", 40_000, 4));
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(steps(&mut rx), [CompactionStep::Spill]);
    for n in 0..4 {
        let spilled = repo.root.join(format!(".crew/tool-results/old_{n}.txt"));
        assert_eq!(std::fs::metadata(spilled).unwrap().len(), 40_000);
    }
    let results: Vec<usize> = agent
        .history()
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|(_, content, _)| content.len())
        .collect();
    assert_eq!(results.len(), 4, "every call keeps its result");
    assert!(results.iter().all(|len| *len < 10_000));
}

#[tokio::test]
async fn read_results_are_not_spilled_so_stale_payloads_are_dropped_next() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(core_pipeline())
        .compaction(thresholds(20_000, 2))
        .agent(&repo);
    agent.load_history(&tool_turns("read", 40_000, 4));
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(steps(&mut rx), [CompactionStep::DropStale]);
    assert!(!repo.root.join(".crew/tool-results").exists());
    let history = agent.history();
    let results: Vec<(&str, &str)> = history
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|(id, content, _)| (id, content))
        .collect();
    assert_eq!(results.len(), 4, "call/result pairs are kept");
    assert!(results.iter().all(|(_, content)| *content == DROPPED));
    assert_normalised(history);
}

#[tokio::test]
async fn many_small_turns_are_folded_into_a_record() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(no_tools())
        .compaction(thresholds(5_000, 2))
        .agent(&repo);
    agent.load_history(&chatter(30));
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(steps(&mut rx), [CompactionStep::Fold]);
    let history = agent.history();
    assert!(history[0].text().starts_with(FOLD_HEADER));
    assert!(history[0].text().contains("Asked: note 0"));
    assert_eq!(history.last().unwrap().text(), "pong");
    assert!(history.len() < 8);
    assert_normalised(history);
}

#[tokio::test]
async fn the_model_summarises_only_when_folding_was_not_enough() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(no_tools())
        .compaction(thresholds(5_000, 6))
        .agent(&repo);
    agent.load_history(&small_talk_and_a_long_note());
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(
        steps(&mut rx),
        [CompactionStep::Fold, CompactionStep::Summarise]
    );
    let history = agent.history();
    assert_eq!(history.len(), 2);
    assert!(history[0].text().starts_with(SUMMARY_HEADER));
    assert!(history[0].text().contains("Summary: the user pinged"));
    assert!(
        history[0].text().ends_with("ping"),
        "the current input is kept"
    );
    assert_eq!(history[1].text(), "pong");
}

/// A history that only a summary brings under 5,000 tokens: a first turn that read
/// `src/parser.rs`, small talk, then a long note among the recent messages.
fn summarisable(repo: &Repo) -> Vec<ChatMessage> {
    std::fs::create_dir_all(repo.root.join("src")).unwrap();
    std::fs::write(repo.root.join("src/parser.rs"), "fn parse() {}\n").unwrap();
    let mut history = vec![
        ChatMessage::user_text("Fix the parser (task_3)."),
        ChatMessage {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: "r1".into(),
                name: "read".into(),
                input: json!({"path": "src/parser.rs"}),
            }],
        },
        ChatMessage::user_tool_results(vec![ContentBlock::tool_result(
            "r1",
            "fn parse() {}",
            false,
        )]),
        ChatMessage::assistant_text("Read it."),
    ];
    history.extend(small_talk_and_a_long_note());
    history
}

/// Six greetings, then a long note (about 10,000 tokens) and two short messages: folding the
/// greetings is not enough under 5,000 tokens, only a summary is.
fn small_talk_and_a_long_note() -> Vec<ChatMessage> {
    let mut history: Vec<ChatMessage> = (0..6)
        .flat_map(|n| {
            [
                ChatMessage::user_text(format!("hi {n}")),
                ChatMessage::assistant_text("hello"),
            ]
        })
        .collect();
    history.push(ChatMessage::user_text(format!(
        "a long note: {}",
        "word ".repeat(8_000)
    )));
    history.push(ChatMessage::assistant_text("ok"));
    history.push(ChatMessage::user_text("more"));
    history.push(ChatMessage::assistant_text("sure"));
    history
}

fn probes(events: &[AgentEvent]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CompactionProbe { passed, .. } => Some(*passed),
            _ => None,
        })
        .collect()
}

fn checklist(agent: &crew_agent::Agent) {
    agent.todos().replace(vec![
        TodoItem {
            content: "Fix the parser".into(),
            status: TodoStatus::InProgress,
        },
        TodoItem {
            content: "Run the tests".into(),
            status: TodoStatus::Pending,
        },
    ]);
}

#[tokio::test]
async fn after_a_summary_the_files_and_checklist_come_back_and_the_probe_finds_the_task() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("keeper", scenario("agent_compaction"))
        .compaction(thresholds(5_000, 6))
        .agent(&repo);
    agent.load_history(&summarisable(&repo));
    agent.set_task(Some(
        "task_3: Fix the parser\nIt drops the last token.".into(),
    ));
    checklist(&agent);
    assert_completed(&turn(&mut agent, "ping").await);
    let events = drain(&mut rx);
    assert_eq!(probes(&events), [true]);
    let history = agent.history();
    assert_eq!(
        history.len(),
        2,
        "summary + ping, pong; the probe left no trace"
    );
    let first = texts(&history[0]);
    assert!(first[0].starts_with(SUMMARY_HEADER));
    let files = first.iter().find(|t| t.starts_with(FILES_HEADER)).unwrap();
    assert!(
        files.contains("--- src/parser.rs (14 bytes) ---\nfn parse() {}"),
        "{files}"
    );
    let todos = first.iter().find(|t| t.starts_with(TODOS_HEADER)).unwrap();
    assert!(
        todos.contains("[~] Fix the parser\n[ ] Run the tests"),
        "{todos}"
    );
    assert_eq!(history[1].text(), "pong");
}

#[tokio::test]
async fn a_failed_probe_undoes_the_summary_for_the_folded_history_before_it() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("forgetter", scenario("agent_compaction"))
        .compaction(thresholds(5_000, 6))
        .agent(&repo);
    agent.load_history(&summarisable(&repo));
    agent.set_task(Some("task_3: Fix the parser".into()));
    checklist(&agent);
    assert_completed(&turn(&mut agent, "ping").await);
    let events = drain(&mut rx);
    assert_eq!(probes(&events), [false]);
    let history = agent.history();
    // The last good state: the fold's record of the old turns, files and checklist put back,
    // and the recent messages as they were (the long note included); no summary.
    let first = texts(&history[0]);
    assert!(first[0].starts_with(FOLD_HEADER), "{first:?}");
    assert!(first.iter().any(|t| t.starts_with(FILES_HEADER)));
    assert!(first.iter().any(|t| t.starts_with(TODOS_HEADER)));
    let all = serde_json::to_string(history).unwrap();
    assert!(!all.contains("Summary: earlier turns"));
    assert!(all.contains("a long note: word word"));
    assert_eq!(history.last().unwrap().text(), "pong");
}

#[tokio::test]
async fn files_put_back_are_bounded_in_count_and_bytes() {
    let repo = Repo::new();
    let mut compaction = thresholds(5_000, 6);
    compaction.reattach_files = 2;
    compaction.reattach_file_bytes = 100;
    compaction.reattach_total_bytes = 150;
    let (mut agent, _rx) = Build::new("keeper", scenario("agent_compaction"))
        .compaction(compaction)
        .agent(&repo);
    let mut history = summarisable(&repo);
    // Three more files read after the parser, the newest last.
    for (n, name) in ["a.txt", "b.txt", "c.txt"].iter().enumerate() {
        std::fs::write(repo.root.join(name), name.repeat(40)).unwrap();
        let id = format!("f{n}");
        history.insert(
            4 + 2 * n,
            ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "read".into(),
                    input: json!({"path": name}),
                }],
            },
        );
        history.insert(
            5 + 2 * n,
            ChatMessage::user_tool_results(vec![ContentBlock::tool_result(id, "…", false)]),
        );
    }
    agent.load_history(&history);
    agent.set_task(Some("task_3: Fix the parser".into()));
    assert_completed(&turn(&mut agent, "ping").await);
    let first = texts(&agent.history()[0]);
    let files = first.iter().find(|t| t.starts_with(FILES_HEADER)).unwrap();
    assert!(
        files.contains("--- c.txt (200 bytes, the first 100 shown"),
        "{files}"
    );
    assert!(
        files.contains("--- b.txt (200 bytes, the first 50 shown"),
        "{files}"
    );
    assert!(
        !files.contains("a.txt") && !files.contains("parser.rs"),
        "{files}"
    );
}
