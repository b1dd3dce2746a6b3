//! Keys never reach the transcript: the agent's tools get only the allow-listed environment,
//! so even a model that prints the environment cannot copy a secret into the conversation.
//! (Its own test binary: it sets process environment variables.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::agent::{Build, Repo, assert_completed, scenario, turn};

const SECRET: &str = "sk-test-never-in-a-transcript-0123456789";

#[tokio::test]
async fn printing_the_environment_does_not_leak_keys_into_the_transcript() {
    // SAFETY: this binary's only test, and no other thread reads the environment yet.
    unsafe {
        std::env::set_var("ANTHROPIC_API_KEY", SECRET);
        std::env::set_var("CREW_TEST_VISIBLE", "plainly-visible");
    }
    let repo = Repo::new();
    let (mut agent, _rx) = Build::new("alice", scenario("agent_tools")).agent(&repo);
    let result = turn(&mut agent, "show the environment").await;
    assert_completed(&result);
    let transcript = std::fs::read_to_string(agent.transcript_path()).unwrap();
    assert!(transcript.contains("PATH="), "the command did run");
    assert!(
        !transcript.contains("plainly-visible"),
        "a variable off the allow-list stays out"
    );
    assert!(!transcript.contains(SECRET));
    let history = serde_json::to_string(agent.history()).unwrap();
    assert!(!history.contains(SECRET));
}
