//! The compaction ladder through the loop: cheapest rung first, and each rung only while the
//! context is still over the threshold.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

mod agent_support;

use agent_support::{
    Build, Repo, assert_completed, assert_normalised, chatter, core_pipeline, drain, no_tools,
    scenario, thresholds, tool_turns, turn,
};
use crew::agent::compaction::steps::{DROPPED, FOLD_HEADER};
use crew::agent::compaction::summary::SUMMARY_HEADER;
use crew::agent::{AgentEvent, CompactionStep, CompactionTrigger};
use crew::model::ChatMessage;
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
    agent.load_history(&history);
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
