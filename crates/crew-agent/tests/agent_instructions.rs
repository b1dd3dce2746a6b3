//! Instruction files through the loop: a subfolder's `AGENTS.md` joins the prompt from the
//! call after the agent first reads under that folder, and stays, once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

use crew_test_support::agent::{Build, Recording, Repo, assert_completed, scenario, turn};

#[tokio::test]
async fn a_subfolder_agents_md_joins_after_the_first_read_there_and_only_once() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.root.join("sub/deep")).unwrap();
    std::fs::write(repo.root.join("AGENTS.md"), "ROOT RULES").unwrap();
    std::fs::write(repo.root.join("sub/AGENTS.md"), "SUB RULES").unwrap();
    std::fs::write(repo.root.join("sub/deep/x.txt"), "x").unwrap();
    let (model, prompts) = Recording::wrap(scenario("agent_basic"));
    let (mut agent, _rx) = Build::new("alice", model).agent(&repo);
    assert_completed(&turn(&mut agent, "read the nested file").await);
    assert_completed(&turn(&mut agent, "read the nested file").await);
    let seen: Vec<String> = prompts
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.1.clone())
        .collect();
    assert_eq!(seen.len(), 4, "two calls a turn");
    assert!(seen.iter().all(|s| s.matches("ROOT RULES").count() == 1));
    assert!(!seen[0].contains("SUB RULES"), "not before the read");
    for later in &seen[1..] {
        assert_eq!(later.matches("SUB RULES").count(), 1, "{later}");
    }
    assert!(seen[1].contains(&format!(
        "# Instructions from {}",
        repo.root.join("sub/AGENTS.md").display()
    )));
}
