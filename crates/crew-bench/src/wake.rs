//! `crew-bench wake`: how fast an idle team wakes for new work. N idle `crew worker`s; one
//! task is created at a time; claimable → claimed latency per round (p50, p99, max), then the
//! CPU the idle workers use.
//!
//! Each round waits for every worker to be IDLE again before the next task, so every round
//! measures a wake-up from idle, not a worker already awake from the previous task.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crew_store::{AgentName, DirWatcher, NewTask, Status, TaskId, Workspace};

use crate::stats::{percentile, round3};
use crate::team::{idle_cpu, make_repo, start_workers, wait_all_idle};

/// Longest one task may stay unclaimed before the bench gives up on the run.
const UNCLAIMED: Duration = Duration::from_secs(30);

pub fn run(teammates: usize, rounds: usize, idle_secs: u64, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let root = dir.path();
    let config = make_repo(root, teammates, idle_secs)?;
    let workspace = Workspace::new(root);
    let (mut supervisor, names, started) = start_workers(&workspace, &config)?;
    let measured = started.and_then(|pids| measure(&workspace, &names, &pids, rounds, idle_secs));
    // Always through the protocol, even when the measurement failed: no worker is left behind.
    supervisor.shut_down(&names, Duration::from_secs(15))?;
    let (mut claim_ms, idle_cpu_percent) = measured?;
    claim_ms.sort_by(f64::total_cmp);
    let report = json!({
        "teammates": teammates,
        "rounds": claim_ms.len(),
        "p50_ms": round3(percentile(&claim_ms, 0.50)),
        "p99_ms": round3(percentile(&claim_ms, 0.99)),
        "max_ms": round3(percentile(&claim_ms, 1.0)),
        "idle_cpu_percent": round3(idle_cpu_percent),
        "idle_window_secs": idle_secs,
    });
    if as_json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

/// Per round, the claim latency in ms; then the idle workers' CPU in percent of one core.
fn measure(
    workspace: &Workspace,
    names: &[AgentName],
    pids: &[u32],
    rounds: usize,
    idle_secs: u64,
) -> anyhow::Result<(Vec<f64>, f64)> {
    let store = workspace.tasks();
    let watcher = DirWatcher::new(&[&workspace.tasks_dir()])?;
    let mut claim_ms = Vec::with_capacity(rounds);
    for round in 0..rounds {
        wait_all_idle(workspace, names, pids)?;
        // Taken before the task's write, so the latency includes that write.
        let created = Instant::now();
        let task = store.create(NewTask {
            subject: format!("wake round {round}: say ping"),
            ..NewTask::default()
        })?;
        let id = task.id;
        loop {
            if store.read(id)?.status != Status::Pending {
                claim_ms.push(created.elapsed().as_secs_f64() * 1000.0);
                break;
            }
            if created.elapsed() > UNCLAIMED {
                bail!(
                    "round {round}: task {id} unclaimed after {}s",
                    UNCLAIMED.as_secs()
                );
            }
            // Short: the bench's own watcher must not be what is measured.
            watcher.wait(Duration::from_millis(2));
        }
        wait_finished(workspace, id)?;
    }
    wait_all_idle(workspace, names, pids)?;
    let (cpu, _) = idle_cpu(pids, Duration::from_secs(idle_secs))?;
    Ok((claim_ms, cpu))
}

fn wait_finished(workspace: &Workspace, id: TaskId) -> anyhow::Result<()> {
    let store = workspace.tasks();
    let deadline = Instant::now() + UNCLAIMED;
    while !matches!(store.read(id)?.status, Status::Completed | Status::Failed) {
        if Instant::now() > deadline {
            bail!("task {id} not finished after {}s", UNCLAIMED.as_secs());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
