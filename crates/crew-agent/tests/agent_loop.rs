//! The bounded loop end to end with the scripted provider: results, limits, repeated
//! actions, transcripts and the prefix fingerprint.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_agent::{AgentEvent, CompactionThresholds, Limits, StopReason, TurnResult};
use crew_model::{ContentBlock, Role};
use crew_test_support::agent::{
    Build, Repo, assert_completed, assert_normalised, drain, no_tools, rendered, scenario,
    transcript, turn,
};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn an_idle_turn_completes_and_is_recorded() {
    let repo = Repo::new();
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    let result = turn(&mut agent, "ping").await;
    assert_completed(&result);
    assert_eq!(result.output, "pong");
    assert_eq!(result.input, "ping");
    assert_eq!(result.turns, 1);
    assert!(result.usage.input_tokens > 0 && result.usage.output_tokens > 0);
    assert!(result.tools_used.is_empty() && result.permission_denials.is_empty());

    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["stop_reason"], "completed");
    let back: TurnResult = serde_json::from_value(json).unwrap();
    assert_eq!(back, result);

    let kinds: Vec<&'static str> = drain(&mut rx)
        .iter()
        .map(|e| match e {
            AgentEvent::TurnStart { .. } => "turn_start",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageDelta { .. } => "delta",
            AgentEvent::MessageStop { .. } => "message_stop",
            AgentEvent::TurnEnd { .. } => "turn_end",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "turn_start",
            "message_start",
            "delta",
            "message_stop",
            "turn_end"
        ]
    );

    let path = agent.transcript_path().to_path_buf();
    assert!(path.starts_with(repo.root.join(".crew/transcripts/alice")));
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        format!("{}.jsonl", agent.session())
    );
    let lines = transcript(&agent);
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l.turn == 1));
    assert!(matches!(&lines[4].event, AgentEvent::TurnEnd { result: r } if *r == result));
    let text = rendered(&agent);
    assert!(text.contains("user: ping"), "{text}");
    assert!(text.contains("assistant: pong"), "{text}");
    assert!(text.contains("Completed"), "{text}");
}

#[tokio::test]
async fn a_tool_round_trip_feeds_the_result_back_and_the_agent_keeps_its_history() {
    let repo = Repo::new();
    std::fs::write(repo.root.join("a.txt"), "x").unwrap();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    let result = turn(&mut agent, "list the text files").await;
    assert_completed(&result);
    assert_eq!(result.output, "Found them.");
    assert_eq!(result.turns, 2);
    assert_eq!(result.tools_used.len(), 1);
    assert_eq!(result.tools_used[0].name, "glob");
    let history = agent.history();
    assert_eq!(history.len(), 4);
    assert_eq!(history[1].tool_uses()[0].1, "glob");
    let (_, content, is_error) = history[2].tool_results()[0];
    assert!(content.contains("a.txt") && !is_error, "{content}");
    assert_normalised(history);

    // The conversation lives on in the agent: the next turn appends to it.
    let second = turn(&mut agent, "ping").await;
    assert_eq!(second.output, "pong");
    assert_eq!(agent.history().len(), 6);
    assert_eq!(transcript(&agent).last().unwrap().turn, 2);
}

#[tokio::test]
async fn a_model_repeating_a_failing_call_stops_with_repeated_action() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    let result = turn(&mut agent, "read the missing file").await;
    assert_eq!(
        result.stop_reason,
        StopReason::RepeatedAction,
        "{}",
        result.reason
    );
    assert!(result.reason.contains("3 times"), "{}", result.reason);
    assert_eq!(result.turns, 3);
    assert_eq!(result.tools_used.len(), 3);
    assert!(
        result
            .tools_used
            .iter()
            .all(|t| t.is_error && t.name == "read")
    );
    assert_normalised(agent.history());
}

#[tokio::test]
async fn max_turns_stops_the_loop() {
    let repo = Repo::new();
    let limits = Limits {
        max_turns: 2,
        ..Limits::default()
    };
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .limits(limits)
        .agent(&repo);
    let result = turn(&mut agent, "read the missing file").await;
    assert_eq!(result.stop_reason, StopReason::MaxTurnsReached);
    assert_eq!(result.turns, 2);
    assert!(result.reason.contains("max_turns (2)"), "{}", result.reason);
    assert_normalised(agent.history());
}

#[tokio::test]
async fn the_token_budget_stops_the_loop() {
    let repo = Repo::new();
    let limits = Limits {
        max_tokens_budget: 10,
        ..Limits::default()
    };
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic"))
        .limits(limits)
        .agent(&repo);
    let result = turn(&mut agent, "read the missing file").await;
    assert_eq!(result.stop_reason, StopReason::MaxBudgetReached);
    assert_eq!(result.turns, 1);
    assert!(result.usage.total() >= 10);
    assert!(result.reason.contains("token budget"), "{}", result.reason);
}

#[tokio::test]
async fn a_turn_cancelled_before_it_starts_is_interrupted_and_history_stays_valid() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = agent.run_turn("ping".into(), cancel).await;
    assert_eq!(result.stop_reason, StopReason::Interrupted);
    assert_eq!(result.turns, 0);
    // The unanswered input merges with the next one instead of breaking alternation.
    let next = turn(&mut agent, "ping again").await;
    assert_eq!(next.stop_reason, StopReason::Completed);
    assert_eq!(agent.history()[0].text(), "pingping again");
    assert_normalised(agent.history());
}

#[tokio::test]
async fn the_prefix_fingerprint_changes_only_on_compaction_or_an_explicit_change() {
    let repo = Repo::new();
    let compaction = CompactionThresholds {
        compact_at_tokens: 3_000,
        keep_recent_messages: 2,
        ..CompactionThresholds::default()
    };
    let (mut agent, mut rx) = Build::new("alice", scenario("agent_basic"))
        .pipeline(no_tools())
        .compaction(compaction)
        .agent(&repo);
    let long_note = format!("ping {}", "word ".repeat(4_000));
    let inputs = [
        "ping",
        "ping",
        "ping",
        long_note.as_str(),
        "ping",
        "ping",
        "ping",
    ];
    let mut fingerprints = vec![agent.prefix_fingerprint().to_string()];
    let mut compacted = Vec::new();
    for input in inputs {
        let result = turn(&mut agent, input).await;
        assert_completed(&result);
        fingerprints.push(result.prefix_fingerprint);
        compacted.push(
            drain(&mut rx)
                .iter()
                .any(|e| matches!(e, AgentEvent::Compaction { .. })),
        );
    }
    assert!(
        compacted.iter().any(|c| *c),
        "the long note must trigger compaction"
    );
    assert!(
        !compacted[0] && !compacted[6],
        "idle turns must not compact: {compacted:?}"
    );
    for (turn, was_compacted) in compacted.iter().enumerate() {
        let changed = fingerprints[turn] != fingerprints[turn + 1];
        assert_eq!(
            changed, *was_compacted,
            "turn {turn}: {fingerprints:?} {compacted:?}"
        );
    }
    assert_normalised(agent.history());

    let before = agent.prefix_fingerprint().to_string();
    agent.set_rules("# Rules\n- Be brief.");
    assert_ne!(agent.prefix_fingerprint(), before);
    let after_rules = turn(&mut agent, "ping").await;
    assert_eq!(after_rules.prefix_fingerprint, agent.prefix_fingerprint());
    assert_ne!(after_rules.prefix_fingerprint, before);
}

/// The name is typed: one that could escape `.crew/transcripts/` cannot be made, so no agent
/// (and no folder) is ever set up under it.
#[test]
fn names_that_could_escape_the_transcript_folder_are_refused() {
    let err = crew_store::AgentName::parse("../evil").unwrap_err();
    assert!(err.to_string().starts_with("invalid agent name"), "{err}");
}

#[tokio::test]
async fn the_history_only_ever_holds_complete_messages_with_the_models_text() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    turn(&mut agent, "ping").await;
    let reply = &agent.history()[1];
    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(
        reply.content,
        vec![ContentBlock::Text {
            text: "pong".into()
        }]
    );
}

#[tokio::test]
async fn an_agent_turn_can_run_on_another_task() {
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_basic")).agent(&repo);
    let handle = tokio::spawn(async move {
        let result = turn(&mut agent, "ping").await;
        (agent, result)
    });
    let (agent, result) = handle.await.unwrap();
    assert_completed(&result);
    assert_eq!(agent.history().len(), 2);
}
