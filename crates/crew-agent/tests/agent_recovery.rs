//! Recovery paths through the loop, each bounded, and a proof that two of them cannot keep
//! triggering each other.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::{
    AgentEvent, CONTINUE_PROMPT, CompactionStep, CompactionThresholds, CompactionTrigger,
    RecoveryKind, StopReason,
};
use crew_test_support::agent::{
    Build, Repo, assert_completed, assert_normalised, drain, scenario, tool_turns, turn,
};

fn recoveries(events: &[AgentEvent]) -> Vec<RecoveryKind> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Recovery { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect()
}

fn compactions(events: &[AgentEvent]) -> Vec<(CompactionStep, CompactionTrigger)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Compaction { step, trigger, .. } => Some((*step, *trigger)),
            _ => None,
        })
        .collect()
}

fn small_window() -> CompactionThresholds {
    CompactionThresholds {
        keep_recent_messages: 2,
        ..CompactionThresholds::default()
    }
}

#[tokio::test]
async fn retryable_model_errors_are_retried_by_the_provider_wrapper() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("retry", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "hello").await;
    assert_completed(&result);
    assert_eq!(result.output, "served after retries");
    assert_eq!(result.turns, 1);
    // Each retry is told as it happens (the person sees a failing model, not a silent wait).
    let retries = recoveries(&drain(&mut rx));
    assert!(!retries.is_empty());
    assert!(
        retries.iter().all(|k| *k == RecoveryKind::ModelRetry),
        "{retries:?}"
    );

    let (mut agent, _rx) = Build::new("giveup", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "hello").await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(result.reason.contains("overloaded"), "{}", result.reason);
    assert_eq!(result.turns, 0);
    assert_normalised(agent.history());
}

#[tokio::test]
async fn a_reply_broken_mid_stream_is_discarded_and_retried() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("flaky", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "hello").await;
    assert_completed(&result);
    assert_eq!(result.output, "complete reply");
    assert_eq!(result.turns, 1);
    assert_eq!(
        recoveries(&drain(&mut rx)),
        [RecoveryKind::StreamError, RecoveryKind::StreamError]
    );
    let history = agent.history();
    assert_eq!(history.len(), 2);
    assert!(history.iter().all(|m| !m.text().contains("half finished")));
}

#[tokio::test]
async fn a_stream_that_keeps_breaking_ends_the_turn_with_an_error() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("broken", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "hello").await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(result.reason.contains("kept breaking"), "{}", result.reason);
    assert_eq!(recoveries(&drain(&mut rx)).len(), 2);
    assert_eq!(
        agent.history().len(),
        1,
        "no partial reply entered the history"
    );
    assert_normalised(agent.history());
}

#[tokio::test]
async fn a_reply_cut_at_max_tokens_is_continued() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("story", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "tell me").await;
    assert_completed(&result);
    assert_eq!(result.output, "Once upon a time it ended.");
    assert_eq!(result.turns, 3);
    assert_eq!(
        recoveries(&drain(&mut rx)),
        [RecoveryKind::MaxTokens, RecoveryKind::MaxTokens]
    );
    let prompts = agent
        .history()
        .iter()
        .filter(|m| m.text() == CONTINUE_PROMPT)
        .count();
    assert_eq!(prompts, 2);
}

#[tokio::test]
async fn continuing_after_max_tokens_is_bounded() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("endless", scenario("agent_recovery")).agent(&repo);
    let result = turn(&mut agent, "tell me").await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(result.reason.contains("max_tokens"), "{}", result.reason);
    assert_eq!(result.turns, 4, "the first reply and three continuations");
    assert_eq!(recoveries(&drain(&mut rx)).len(), 3);
    assert_normalised(agent.history());
}

#[tokio::test]
async fn prompt_too_long_compacts_reactively_and_retries_once() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("squeezed", scenario("agent_recovery"))
        .compaction(small_window())
        .agent(&repo);
    agent.load_history(&tool_turns("grep", 4_800, 4));
    let fingerprint = agent.prefix_fingerprint().to_string();
    let result = turn(&mut agent, "go on").await;
    assert_completed(&result);
    assert_eq!(result.output, "fits now");
    let events = drain(&mut rx);
    assert_eq!(recoveries(&events), [RecoveryKind::PromptTooLong]);
    let steps = compactions(&events);
    assert!(!steps.is_empty());
    assert!(steps.iter().all(|(_, t)| *t == CompactionTrigger::Reactive));
    assert_ne!(
        result.prefix_fingerprint, fingerprint,
        "compaction starts a new prefix"
    );
    assert_normalised(agent.history());
}

#[tokio::test]
async fn compaction_and_max_tokens_recovery_cannot_trigger_each_other_forever() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("pingpong", scenario("agent_recovery"))
        .compaction(small_window())
        .agent(&repo);
    agent.load_history(&tool_turns("grep", 4_800, 4));
    let result = turn(&mut agent, "go on").await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(
        result.reason.contains("reactive compaction"),
        "{}",
        result.reason
    );
    assert_eq!(result.turns, 1);
    assert_eq!(
        recoveries(&drain(&mut rx)),
        [RecoveryKind::PromptTooLong, RecoveryKind::MaxTokens]
    );
    assert_normalised(agent.history());

    // Each later turn is bounded the same way.
    for _ in 0..3 {
        let again = turn(&mut agent, "go on").await;
        assert_eq!(again.stop_reason, StopReason::Error, "{}", again.reason);
        assert!(recoveries(&drain(&mut rx)).len() <= 2);
    }
}

#[tokio::test]
async fn three_failed_compactions_in_a_row_stop_further_attempts() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("stuck", scenario("agent_recovery")).agent(&repo);
    for n in 0..3 {
        let result = turn(&mut agent, "hello").await;
        assert_eq!(result.stop_reason, StopReason::Error);
        assert!(
            result.reason.contains("nothing is left to compact"),
            "turn {n}: {}",
            result.reason
        );
        assert_eq!(recoveries(&drain(&mut rx)), [RecoveryKind::PromptTooLong]);
    }
    let result = turn(&mut agent, "hello").await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(
        result.reason.contains("3 times in a row"),
        "{}",
        result.reason
    );
    let events = drain(&mut rx);
    assert!(recoveries(&events).is_empty() && compactions(&events).is_empty());
}
