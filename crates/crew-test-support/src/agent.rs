//! Helpers shared by the agent integration tests.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crew_agent::transcript::{TranscriptLine, render};
use crew_agent::{
    Agent, AgentConfig, AgentEvent, CompactionThresholds, EventSink, Limits, StopReason,
    TurnResult, normalize,
};
use crew_model::scripted::ScriptedProvider;
use crew_model::{
    ChatMessage, ContentBlock, ModelError, ModelProvider, ModelRequest, RetryPolicy, Role,
    StreamEvent,
};
use crew_tools::permissions::PermissionMode;
use crew_tools::{Pipeline, Sandbox, ToolRegistry};
use futures::stream::BoxStream;
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::tools::policy;

/// A temporary repository root; the agent works in it directly.
pub struct Repo {
    pub dir: TempDir,
    pub root: PathBuf,
}

impl Repo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        Self { dir, root }
    }

    /// Writes an executable hook script outside the workspace's visible files and returns the
    /// command that runs it.
    pub fn hook(&self, name: &str, body: &str) -> String {
        let path = self.root.join(".hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        format!("sh {}", path.display())
    }
}

/// The scripted provider playing `assets/scenarios/<name>.toml`.
pub fn scenario(name: &str) -> Arc<dyn ModelProvider> {
    let path = crate::source_path(&format!("assets/scenarios/{name}.toml"));
    Arc::new(ScriptedProvider::from_file(&path).unwrap())
}

/// Core tools, workspace-write mode, no hooks, no prompter.
pub fn core_pipeline() -> Pipeline {
    Pipeline::new(
        ToolRegistry::core_tools().unwrap(),
        policy(PermissionMode::WorkspaceWrite, &[], &[], &[]),
    )
}

/// No tools at all (keeps the prompt small for token-counting tests).
pub fn no_tools() -> Pipeline {
    Pipeline::new(
        ToolRegistry::new(),
        policy(PermissionMode::Ask, &[], &[], &[]),
    )
}

/// Retries quickly so tests do not wait for real backoff.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    }
}

pub struct Build {
    pub name: &'static str,
    pub model: Arc<dyn ModelProvider>,
    pub pipeline: Pipeline,
    pub limits: Limits,
    pub compaction: CompactionThresholds,
}

impl Build {
    pub fn new(name: &'static str, model: Arc<dyn ModelProvider>) -> Self {
        Self {
            name,
            model,
            pipeline: core_pipeline(),
            limits: Limits::default(),
            compaction: CompactionThresholds::default(),
        }
    }

    pub fn pipeline(mut self, pipeline: Pipeline) -> Self {
        self.pipeline = pipeline;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn compaction(mut self, compaction: CompactionThresholds) -> Self {
        self.compaction = compaction;
        self
    }

    /// The agent, working in `repo.root`, and the receiving end of its events.
    pub fn agent(self, repo: &Repo) -> (Agent, UnboundedReceiver<AgentEvent>) {
        let (sink, rx) = EventSink::channel();
        let agent = Agent::new(
            AgentConfig {
                name: self.name.parse().unwrap(),
                role: "coder".to_string(),
                model: self.model,
                model_name: String::new(),
                pipeline: self.pipeline,
                workspace: repo.root.clone(),
                repo_root: repo.root.clone(),
                limits: self.limits,
                retry: fast_retry(),
                compaction: self.compaction,
                sandbox: Sandbox::off(),
            },
            sink,
        )
        .unwrap();
        (agent, rx)
    }
}

/// The system prompt of each request a [`Recording`] model saw: (static prefix, dynamic suffix).
pub type Prompts = Arc<Mutex<Vec<(String, String)>>>;

/// A provider that remembers each request's system prompt and lets `inner` answer it.
pub struct Recording {
    pub inner: Arc<dyn ModelProvider>,
    pub prompts: Prompts,
}

impl Recording {
    /// `inner`, recording; the prompts seen so far are in the second value.
    pub fn wrap(inner: Arc<dyn ModelProvider>) -> (Arc<dyn ModelProvider>, Prompts) {
        let prompts = Prompts::default();
        let model = Arc::new(Recording {
            inner,
            prompts: Arc::clone(&prompts),
        });
        (model, prompts)
    }
}

impl ModelProvider for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn is_simulated(&self) -> bool {
        true
    }
    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        self.prompts.lock().unwrap().push((
            req.system.static_prefix.clone(),
            req.system.dynamic_suffix.clone(),
        ));
        self.inner.stream(req)
    }
}

/// Every event received so far.
pub fn drain(rx: &mut UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

/// Asserts the history is what normalisation would make of it: alternating, every call
/// answered, nothing empty.
pub fn assert_normalised(history: &[ChatMessage]) {
    assert_eq!(normalize(history), history, "history is not normalised");
    assert!(history.windows(2).all(|w| w[0].role != w[1].role));
}

/// The transcript's lines, each of which must parse.
pub fn transcript(agent: &Agent) -> Vec<TranscriptLine> {
    std::fs::read_to_string(agent.transcript_path())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The transcript rendered as text.
pub fn rendered(agent: &Agent) -> String {
    let file = std::fs::File::open(agent.transcript_path()).unwrap();
    render(std::io::BufReader::new(file)).unwrap()
}

/// One turn that nobody cancels.
pub async fn turn(agent: &mut Agent, input: &str) -> TurnResult {
    agent
        .run_turn(input.to_string(), CancellationToken::new())
        .await
}

pub fn assert_completed(result: &TurnResult) {
    assert_eq!(
        result.stop_reason,
        StopReason::Completed,
        "{}",
        result.reason
    );
}

/// Earlier turns in each of which `tool` returned `result_bytes` bytes.
pub fn tool_turns(tool: &str, result_bytes: usize, count: usize) -> Vec<ChatMessage> {
    (0..count)
        .flat_map(|n| {
            let id = format!("old_{n}");
            [
                ChatMessage::user_text(format!("look at part {n}")),
                ChatMessage {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: id.clone(),
                        name: tool.into(),
                        input: json!({"path": format!("part{n}.txt")}),
                    }],
                },
                ChatMessage::user_tool_results(vec![ContentBlock::tool_result(
                    id,
                    "z".repeat(result_bytes),
                    false,
                )]),
                ChatMessage::assistant_text(format!("part {n} seen")),
            ]
        })
        .collect()
}

/// Compaction thresholds for tests: compact over `compact_at_tokens`, keep the last
/// `keep_recent_messages` messages, spill results over 10 kB, summaries of 512 tokens.
pub fn thresholds(compact_at_tokens: u64, keep_recent_messages: usize) -> CompactionThresholds {
    CompactionThresholds {
        compact_at_tokens,
        spill_result_bytes: 10_000,
        keep_recent_messages,
        summary_max_tokens: 512,
        ..CompactionThresholds::default()
    }
}

/// `n` exchanges of a long user note and a short answer (about 500 tokens each).
pub fn chatter(n: usize) -> Vec<ChatMessage> {
    (0..n)
        .flat_map(|n| {
            [
                ChatMessage::user_text(format!("note {n}: {}", "blah ".repeat(400))),
                ChatMessage::assistant_text(format!("noted {n}")),
            ]
        })
        .collect()
}

/// The text blocks of `message`, in order.
pub fn texts(message: &ChatMessage) -> Vec<&str> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
