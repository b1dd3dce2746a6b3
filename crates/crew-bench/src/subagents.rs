//! `crew-bench subagents`: what a forked subagent saves. A caller with a seeded history starts
//! a fork and a fresh explore subagent each round, against an in-process provider that plays a
//! prompt cache (a request reads the longest prefix of whole parts — model, tools and system,
//! then each message — that an earlier request sent). Each subagent gets its own question.
//! Reports, from the usage crew records for each subagent, the share of its first call's prompt
//! read from the cache (a fresh one can only share its own prompt and tools with earlier fresh
//! ones), and how long a subagent takes from the caller's reply to its own first request.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context as _;
use futures::stream::{self, BoxStream};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crew_agent::{AgentEvent, EventSink, SubagentContext, SubagentSettings};
use crew_model::{FinishReason, ModelError, ModelProvider, ModelRequest, StreamEvent, Usage};

use crate::agent_loop::{bench_agent, seed_history};
use crate::stats::{percentile, round3};

pub fn run(rounds: usize, history: usize, as_json: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let m = runtime.block_on(measure(rounds, history))?;
    let share = |(read, total): (u64, u64)| read as f64 / total.max(1) as f64;
    let mut start_us = m.start_us.clone();
    start_us.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&start_us, 0.50), percentile(&start_us, 0.99));
    if as_json {
        println!(
            "{}",
            json!({
                "rounds": rounds,
                "history": history,
                "fork_first_call_cache_read": m.fork.0,
                "fork_first_call_prompt": m.fork.1,
                "fresh_first_call_cache_read": m.fresh.0,
                "fresh_first_call_prompt": m.fresh.1,
                "start_p50_us": round3(p50),
                "start_p99_us": round3(p99),
            })
        );
    } else {
        println!(
            "{rounds} rounds, caller history {history} messages: a fork's first call read {} of {} \
             prompt tokens from the cache ({:.1}%); a fresh subagent's {} of {} ({:.1}%)",
            m.fork.0,
            m.fork.1,
            100.0 * share(m.fork),
            m.fresh.0,
            m.fresh.1,
            100.0 * share(m.fresh),
        );
        println!(
            "subagent start (caller's reply → its first request): p50 {p50:.1} µs, p99 {p99:.1} µs"
        );
    }
    Ok(())
}

struct Measured {
    /// Tokens read from the cache and prompt tokens, over the first calls of all forks…
    fork: (u64, u64),
    /// …and of all fresh subagents.
    fresh: (u64, u64),
    start_us: Vec<f64>,
}

async fn measure(rounds: usize, history: usize) -> anyhow::Result<Measured> {
    let dir = tempfile::tempdir().context("creating a scratch repository")?;
    let provider = Arc::new(CachePlayer::default());
    let (sink, mut events) = EventSink::channel();
    let mut agent = bench_agent(dir.path(), provider.clone(), sink)?;
    agent.enable_subagents(SubagentSettings::default());
    let seed = seed_history(history);
    let mut m = Measured {
        fork: (0, 0),
        fresh: (0, 0),
        start_us: Vec::new(),
    };
    for round in 0..rounds {
        agent.load_history(&seed);
        agent
            .run_turn(format!("delegate {round}"), CancellationToken::new())
            .await;
        let mut contexts = std::collections::HashMap::new();
        while let Ok(event) = events.try_recv() {
            match event {
                AgentEvent::SubagentStart { id, context, .. } => {
                    contexts.insert(id, context);
                }
                // Each subagent makes one call here: its usage is its first call's.
                AgentEvent::SubagentEnd { id, usage, .. } => {
                    let sum = match contexts.get(&id) {
                        Some(SubagentContext::Fork) => &mut m.fork,
                        _ => &mut m.fresh,
                    };
                    sum.0 += usage.cache_read_input_tokens;
                    sum.1 += usage.input_tokens + usage.cache_read_input_tokens;
                }
                _ => {}
            }
        }
    }
    m.start_us = provider
        .starts
        .lock()
        .map(|s| s.clone())
        .unwrap_or_default();
    Ok(m)
}

/// Plays the caller (a fork, then a fresh explorer, then an answer) and the subagents (one
/// answer each), and a prompt cache.
#[derive(Default)]
struct CachePlayer {
    cached: Mutex<HashSet<u64>>,
    /// When the caller's last reply asking for a subagent was handed over.
    asked: Mutex<Option<Instant>>,
    starts: Mutex<Vec<f64>>,
    /// Subagents asked for so far: each gets its own question, as real work would.
    count: std::sync::atomic::AtomicUsize,
}

impl CachePlayer {
    /// Prompt tokens (bytes / 4) of `req`, and how many of them the cache holds; then caches
    /// every prefix of it.
    fn cache(&self, req: &ModelRequest) -> (u64, u64) {
        let head = json!([
            req.model,
            req.tools,
            req.system.static_prefix,
            req.system.dynamic_suffix
        ]);
        let parts = std::iter::once(head.to_string()).chain(
            req.messages
                .iter()
                .map(|m| serde_json::to_string(m).unwrap_or_default()),
        );
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        let mut hasher = DefaultHasher::new();
        let (mut total, mut read, mut hit) = (0, 0, true);
        for part in parts {
            part.hash(&mut hasher);
            let tokens = part.len() as u64 / 4;
            total += tokens;
            hit &= !cached.insert(hasher.finish());
            if hit {
                read += tokens;
            }
        }
        (read, total)
    }

    fn reply(&self, req: &ModelRequest) -> Vec<StreamEvent> {
        let text = |t: &str| StreamEvent::TextDelta(t.to_string());
        if req.context.role.ends_with("subagent") {
            if let Some(asked) = self.asked.lock().ok().and_then(|mut a| a.take())
                && let Ok(mut starts) = self.starts.lock()
            {
                starts.push(asked.elapsed().as_nanos() as f64 / 1_000.0);
            }
            return vec![text("Found it in src/lib.rs:1.")];
        }
        // The caller: the subagent that last reported decides what comes next.
        let last = req
            .messages
            .last()
            .map(|m| m.tool_results())
            .unwrap_or_default();
        let reported = |kind: &str| last.iter().any(|(_, content, _)| content.contains(kind));
        let context = if reported("(explore, fresh)") {
            return vec![text("Both subagents reported.")];
        } else if reported("(explore, fork)") {
            "fresh"
        } else {
            "fork"
        };
        if let Ok(mut asked) = self.asked.lock() {
            *asked = Some(Instant::now());
        }
        let n = self
            .count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        vec![StreamEvent::ToolUse {
            id: format!("call_{}_{context}", req.messages.len()),
            name: "agent".into(),
            input: json!({"description": "find it", "prompt": format!("Where is item {n} defined?"),
                          "role": "explore", "context": context}),
        }]
    }
}

impl ModelProvider for CachePlayer {
    fn name(&self) -> &str {
        "bench-cache"
    }

    fn is_simulated(&self) -> bool {
        true
    }

    fn stream(&self, req: ModelRequest) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
        let (read, total) = self.cache(&req);
        let mut events = self.reply(&req);
        let reason = if matches!(events.last(), Some(StreamEvent::ToolUse { .. })) {
            FinishReason::ToolUse
        } else {
            FinishReason::EndTurn
        };
        events.insert(0, StreamEvent::MessageStart);
        events.push(StreamEvent::Stop {
            reason,
            usage: Usage {
                input_tokens: total - read,
                output_tokens: 10,
                cache_read_input_tokens: read,
                ..Usage::default()
            },
        });
        Box::pin(stream::iter(events.into_iter().map(Ok::<_, ModelError>)))
    }
}
