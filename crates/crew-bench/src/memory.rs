//! `crew-bench memory`: what long-term memory costs an agent. The index of both scopes is
//! rebuilt for every model call (each memory file read, the paths it names checked for
//! staleness), and a `memory_write` rewrites the scope's `MEMORY.md`: both timed with full
//! scopes of memories that each name a few paths, some of them gone.

use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use crew_agent::context::memory_index;
use crew_store::{AgentName, Limits, MemoryBook, MemoryDraft, MemoryScope, MemoryType};

use crate::stats::{percentile, round3};

pub fn run(memories: usize, body_bytes: usize, rounds: usize, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).context("creating src/")?;
    std::fs::write(root.join("src/present.rs"), "").context("writing src/present.rs")?;
    let limits = Limits {
        memory_bytes: body_bytes + 256,
        memories_per_scope: memories,
        ..Limits::default()
    };
    let book =
        MemoryBook::new(&root.join(".crew"), &AgentName::parse("alice")?).with_limits(limits);
    let filler = "x".repeat(body_bytes.saturating_sub(64));
    for i in 0..memories {
        for scope in [MemoryScope::Agent, MemoryScope::Team] {
            book.write(&draft(i, scope, &filler))?;
        }
    }
    let mut index_ms = Vec::with_capacity(rounds);
    let mut index_bytes = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        index_bytes = memory_index(&book, root).len();
        index_ms.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let mut write_ms = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let start = Instant::now();
        book.write(&draft(round % memories.max(1), MemoryScope::Agent, &filler))?;
        write_ms.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    index_ms.sort_by(f64::total_cmp);
    write_ms.sort_by(f64::total_cmp);
    let p = |v: &[f64], q| round3(percentile(v, q));
    if as_json {
        println!(
            "{}",
            json!({
                "memories_per_scope": memories,
                "body_bytes": body_bytes,
                "rounds": rounds,
                "index_bytes": index_bytes,
                "index_p50_ms": p(&index_ms, 0.5),
                "index_p99_ms": p(&index_ms, 0.99),
                "write_p50_ms": p(&write_ms, 0.5),
                "write_p99_ms": p(&write_ms, 0.99),
            })
        );
    } else {
        println!(
            "{memories} memories of {body_bytes} bytes in each scope: the prompt's index ({index_bytes} bytes) p50 {:.2} ms, p99 {:.2} ms; a memory_write p50 {:.2} ms, p99 {:.2} ms",
            p(&index_ms, 0.5),
            p(&index_ms, 0.99),
            p(&write_ms, 0.5),
            p(&write_ms, 0.99)
        );
    }
    Ok(())
}

fn draft(i: usize, scope: MemoryScope, filler: &str) -> MemoryDraft {
    MemoryDraft {
        name: format!("memory-{i}"),
        kind: MemoryType::Project,
        description: format!("memory number {i}, about the parser"),
        body: format!(
            "See `src/present.rs` and `src/gone-{i}.rs`, and docs/notes-{i}.md.\n{filler}"
        ),
        scope,
    }
}
