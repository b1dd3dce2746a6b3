//! Instruction files through the loop: a subfolder's `AGENTS.md` joins the prompt from the
//! call after the agent first reads under that folder, and stays, once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

mod agent_support;

use std::sync::{Arc, Mutex};

use agent_support::{Build, Repo, assert_completed, scenario, turn};
use crew::model::{ModelError, ModelProvider, ModelRequest, StreamEvent};
use futures::stream::BoxStream;

/// The scripted model, remembering each request's dynamic system suffix.
struct Recording {
    inner: Arc<dyn ModelProvider>,
    suffixes: Arc<Mutex<Vec<String>>>,
}

impl ModelProvider for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn is_simulated(&self) -> bool {
        true
    }
    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        self.suffixes
            .lock()
            .unwrap()
            .push(req.system.dynamic_suffix.clone());
        self.inner.stream(req)
    }
}

#[tokio::test]
async fn a_subfolder_agents_md_joins_after_the_first_read_there_and_only_once() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.root.join("sub/deep")).unwrap();
    std::fs::write(repo.root.join("AGENTS.md"), "ROOT RULES").unwrap();
    std::fs::write(repo.root.join("sub/AGENTS.md"), "SUB RULES").unwrap();
    std::fs::write(repo.root.join("sub/deep/x.txt"), "x").unwrap();
    let suffixes = Arc::new(Mutex::new(Vec::new()));
    let model = Arc::new(Recording {
        inner: scenario("agent_basic"),
        suffixes: Arc::clone(&suffixes),
    });
    let (mut agent, _rx) = Build::new("alice", model).agent(&repo);
    assert_completed(&turn(&mut agent, "read the nested file").await);
    assert_completed(&turn(&mut agent, "read the nested file").await);
    let seen = suffixes.lock().unwrap().clone();
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
