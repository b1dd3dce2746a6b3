//! The sandbox's cost per command: the bash tool running `true` N times confined (through
//! `crew sandbox-exec`) and N times unconfined, in a scratch git worktree-like folder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, anyhow};
use crew_sandbox::{Readiness, Sandbox, SandboxMode, readiness};
use crew_tools::builtin::BashTool;
use crew_tools::builtin::bash::BashInput;
use crew_tools::{ToolContext, TypedTool};
use serde_json::json;

use crate::stats::{percentile, round3};

pub fn run(runs: usize, as_json: bool) -> anyhow::Result<()> {
    let helper = std::env::current_exe()
        .context("locating crew-bench")?
        .with_file_name("crew");
    if let Readiness::Missing(missing) = readiness(&helper) {
        return Err(anyhow!("the sandbox is unavailable here: {missing}"));
    }
    let dir = tempfile::tempdir().context("creating a scratch workspace")?;
    std::fs::create_dir(dir.path().join(".git")).context("creating .git")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let confined = Sandbox {
        mode: SandboxMode::Auto,
        network: false,
        workspace_writable: true,
        helper,
        ..Sandbox::off()
    };
    let sandboxed = runtime.block_on(measure(dir.path().into(), confined, runs))?;
    let bare = runtime.block_on(measure(dir.path().into(), Sandbox::off(), runs))?;
    let (s50, s90) = (percentile(&sandboxed, 0.5), percentile(&sandboxed, 0.9));
    let (b50, b90) = (percentile(&bare, 0.5), percentile(&bare, 0.9));
    if as_json {
        let report = json!({
            "runs": runs,
            "sandboxed_p50_ms": round3(s50),
            "sandboxed_p90_ms": round3(s90),
            "unsandboxed_p50_ms": round3(b50),
            "unsandboxed_p90_ms": round3(b90),
            "cost_p50_ms": round3(s50 - b50),
        });
        println!("{report}");
    } else {
        println!(
            "bash `true` x{runs}: sandboxed p50 {s50:.2} ms (p90 {s90:.2}), unsandboxed p50 \
             {b50:.2} ms (p90 {b90:.2}); the sandbox costs {:.2} ms per command",
            s50 - b50
        );
    }
    Ok(())
}

/// Milliseconds per call, sorted.
async fn measure(workspace: PathBuf, sandbox: Sandbox, runs: usize) -> anyhow::Result<Vec<f64>> {
    let mut ctx = ToolContext::new(&workspace, workspace.join(".crew/tool-results"));
    ctx.sandbox = sandbox;
    let bash = BashTool::default();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let input = BashInput {
            command: "true".to_string(),
            timeout_ms: None,
        };
        let out = bash.run(input, ctx.clone()).await?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        if out.is_error {
            return Err(anyhow!("`true` failed: {}", out.content));
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}
