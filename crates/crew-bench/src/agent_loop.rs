//! `crew-bench loop`: the agent runtime's own cost per turn — prompt assembly, normalisation,
//! compaction checks, event and transcript dispatch — with a fixed-size history and the
//! scripted provider. Time spent inside the provider is measured and subtracted.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use anyhow::Context as _;
use futures::stream::{BoxStream, Stream, StreamExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crew_agent::conversation::KeptConversation;
use crew_agent::{Agent, AgentConfig, CompactionThresholds, EventSink, Limits};
use crew_model::scripted::ScriptedProvider;
use crew_model::{
    ChatMessage, ContentBlock, ModelError, ModelProvider, ModelRequest, RetryPolicy, Role,
    StreamEvent,
};
use crew_store::AgentName;
use crew_tools::permissions::{BypassSwitches, PermissionMode, PermissionPolicy, RuleSet};
use crew_tools::{Pipeline, Sandbox, ToolRegistry};

use crate::stats::{percentile, round3};

/// Untimed turns first, so one-off costs (first file creation, lazy statics) are not counted.
const WARMUP: usize = 20;

pub fn run(turns: usize, history: usize, resumed: bool, as_json: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let Measured {
        mut overhead_us,
        mut resume_us,
    } = runtime.block_on(measure(turns, history, resumed))?;
    overhead_us.sort_by(f64::total_cmp);
    resume_us.sort_by(f64::total_cmp);
    let (p50, p99) = (
        percentile(&overhead_us, 0.50),
        percentile(&overhead_us, 0.99),
    );
    let resume = (!resume_us.is_empty())
        .then(|| (percentile(&resume_us, 0.50), percentile(&resume_us, 0.99)));
    if as_json {
        let mut report = json!({
            "turns": turns,
            "history": history,
            "resumed": resumed,
            "p50_us": round3(p50),
            "p99_us": round3(p99),
        });
        if let Some((r50, r99)) = resume {
            report["resume_p50_us"] = json!(round3(r50));
            report["resume_p99_us"] = json!(round3(r99));
        }
        println!("{report}");
    } else {
        println!(
            "{turns} turns over a {history}-message history: runtime overhead p50 {p50:.1} µs, p99 {p99:.1} µs per turn"
        );
        if let Some((r50, r99)) = resume {
            println!("resuming the conversation from its file: p50 {r50:.1} µs, p99 {r99:.1} µs");
        }
    }
    Ok(())
}

struct Measured {
    overhead_us: Vec<f64>,
    resume_us: Vec<f64>,
}

/// Per-turn overhead in microseconds, provider time excluded; with `resumed`, also the time to
/// resume the conversation from its file before each turn.
async fn measure(turns: usize, history: usize, resumed: bool) -> anyhow::Result<Measured> {
    let dir = tempfile::tempdir().context("creating a scratch repository")?;
    let provider_nanos = Arc::new(AtomicU64::new(0));
    let model = Timed {
        inner: Arc::new(ScriptedProvider::echo()?),
        nanos: Arc::clone(&provider_nanos),
    };
    let mut agent = bench_agent(dir.path(), Arc::new(model), EventSink::discard())?;
    let seed = seed_history(history);
    // The seed as a conversation file, copied fresh before each turn so its size stays fixed.
    let seed_file = dir.path().join("seed.jsonl");
    let conversation = dir.path().join("conversation.jsonl");
    if resumed {
        KeptConversation::open(seed_file.clone())?.0.save(&seed)?;
    }
    let mut overhead = Vec::with_capacity(turns);
    let mut resume = Vec::with_capacity(turns);
    for turn in 0..WARMUP + turns {
        if resumed {
            std::fs::copy(&seed_file, &conversation).context("copying the seed conversation")?;
            let start = Instant::now();
            agent.resume_from(conversation.clone())?;
            if turn >= WARMUP {
                resume.push(start.elapsed().as_nanos() as f64 / 1_000.0);
            }
        } else {
            agent.load_history(&seed);
        }
        let provider_before = provider_nanos.load(Ordering::Relaxed);
        let start = Instant::now();
        agent
            .run_turn(format!("ping {turn}"), CancellationToken::new())
            .await;
        let total = nanos(start.elapsed());
        let provider = provider_nanos.load(Ordering::Relaxed) - provider_before;
        if turn >= WARMUP {
            overhead.push(total.saturating_sub(provider) as f64 / 1_000.0);
        }
    }
    Ok(Measured {
        overhead_us: overhead,
        resume_us: resume,
    })
}

/// The agent benchmarks run: `bench`, core tools, workspace-write, no sandbox, working in `dir`.
pub(crate) fn bench_agent(
    dir: &std::path::Path,
    model: Arc<dyn ModelProvider>,
    sink: EventSink,
) -> anyhow::Result<Agent> {
    let policy = PermissionPolicy::new(
        PermissionMode::WorkspaceWrite,
        &RuleSet::default(),
        BypassSwitches::default(),
    )?;
    Ok(Agent::new(
        AgentConfig {
            name: AgentName::parse("bench")?,
            role: "coder".into(),
            model,
            model_name: String::new(),
            pipeline: Pipeline::new(ToolRegistry::core_tools()?, policy),
            workspace: dir.to_path_buf(),
            repo_root: dir.to_path_buf(),
            limits: Limits::default(),
            retry: RetryPolicy::default(),
            compaction: CompactionThresholds::default(),
            sandbox: Sandbox::off(),
        },
        sink,
    )?)
}

/// A history of `len` messages: chat turns with a tool round trip every other turn.
pub(crate) fn seed_history(len: usize) -> Vec<ChatMessage> {
    let mut messages = Vec::with_capacity(len + 3);
    let mut n = 0;
    while messages.len() < len {
        messages.push(ChatMessage::user_text(format!(
            "request {n}: {}",
            "please look ".repeat(10)
        )));
        if n % 2 == 0 {
            let id = format!("toolu_seed_{n}");
            messages.push(ChatMessage {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: id.clone(),
                    name: "grep".into(),
                    input: json!({"pattern": format!("fn item_{n}")}),
                }],
            });
            messages.push(ChatMessage::user_tool_results(vec![
                ContentBlock::tool_result(id, "src/lib.rs:10: fn item() {}\n".repeat(20), false),
            ]));
        }
        messages.push(ChatMessage::assistant_text(format!(
            "done with {n}. {}",
            "ok ".repeat(30)
        )));
        n += 1;
    }
    messages.truncate(len);
    messages
}

/// Adds the time spent inside the wrapped provider (creating and polling its stream) to
/// `nanos`.
struct Timed {
    inner: Arc<dyn ModelProvider>,
    nanos: Arc<AtomicU64>,
}

impl ModelProvider for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let start = Instant::now();
        let inner = self.inner.stream(req);
        self.nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        TimedStream {
            inner,
            nanos: Arc::clone(&self.nanos),
        }
        .boxed()
    }
}

struct TimedStream {
    inner: BoxStream<'static, Result<StreamEvent, ModelError>>,
    nanos: Arc<AtomicU64>,
}

impl Stream for TimedStream {
    type Item = Result<StreamEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let start = Instant::now();
        let polled = self.inner.poll_next_unpin(cx);
        self.nanos
            .fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        polled
    }
}

/// A duration in nanoseconds; saturates after 584 years.
fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
