//! `crew-bench queue`: the merge queue's test runs and wall time for N approved tasks of which
//! some break the tests, batched and bisected against one test run per task.
//!
//! A scratch repository holds N tasks in review, each one commit adding its own file on its own
//! branch; the bad ones add a `bad_<n>.txt`, which the test command (`sleep S`, then fail if a
//! `bad_*` file is there) rejects. Every task is approved in order, then the queue runs in this
//! process until nothing waits: once with `[merge_queue] batch = B`, once with batch 1 (the
//! one-at-a-time merging the queue replaces), each on a fresh copy. The sandbox is off here:
//! its helper is the `crew` executable, and what is measured is the queue's scheduling.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crew_config::TeamConfig;
use crew_git::{Author, init_with_files};
use crew_store::{Claimant, NewTask, RunOutcome, TaskCommits, Workspace};
use crew_team::merge_queue::QueueRunner;

/// What `crew-bench queue` is asked to measure.
#[derive(clap::Args)]
pub struct QueueBench {
    #[arg(long, default_value_t = 32)]
    tasks: usize,
    /// How many of them break the tests.
    #[arg(long, default_value_t = 2)]
    bad: usize,
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// How long the test command sleeps.
    #[arg(long, default_value_t = 1000)]
    sleep_ms: u64,
    /// Only the batched queue (no one-at-a-time run to compare with).
    #[arg(long)]
    no_serial: bool,
    #[arg(long)]
    json: bool,
}

/// How long one queue may take before the bench gives up.
const LIMIT: Duration = Duration::from_secs(1800);

pub fn run(bench: QueueBench) -> anyhow::Result<()> {
    if bench.bad > bench.tasks {
        bail!("--bad {} is more than --tasks {}", bench.bad, bench.tasks);
    }
    let batched = measure(&bench, bench.batch)?;
    let serial = if bench.no_serial {
        None
    } else {
        Some(measure(&bench, 1)?)
    };
    let report = json!({
        "tasks": bench.tasks,
        "bad": bench.bad,
        "batch": bench.batch,
        "sleepMs": bench.sleep_ms,
        "queue": batched,
        "oneAtATime": serial,
    });
    if bench.json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

/// The queue with `batch` over a fresh repository: runs, wall time, merged and sent back.
fn measure(bench: &QueueBench, batch: usize) -> anyhow::Result<serde_json::Value> {
    let dir = tempfile::tempdir()?;
    let config = Arc::new(setup(dir.path(), bench, batch)?);
    let ws = Workspace::new(dir.path());
    let started = Instant::now();
    let runner = QueueRunner::start(ws.clone(), config);
    loop {
        let state = ws.merge_queue().load()?;
        if state.active().next().is_none() {
            break;
        }
        if started.elapsed() > LIMIT {
            bail!("the queue did not settle in {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = started.elapsed();
    drop(runner);
    let state = ws.merge_queue().load()?;
    let count = |s: crew_store::EntryState| state.entries.iter().filter(|e| e.state == s).count();
    let tested: Vec<u64> = state
        .runs
        .iter()
        .filter(|r| matches!(r.outcome, RunOutcome::Passed | RunOutcome::Failed))
        .map(|r| r.millis)
        .collect();
    Ok(json!({
        "batch": batch,
        "testRuns": state.runs.len(),
        "wallSecs": wall.as_secs_f64(),
        "testSecs": tested.iter().sum::<u64>() as f64 / 1000.0,
        "merged": count(crew_store::EntryState::Merged),
        "sentBack": count(crew_store::EntryState::Failed),
        "throughputPerHour": state.throughput_per_hour(),
    }))
}

/// The repository: crew.toml, N tasks in review (each its own branch and commit), all
/// approved in order.
fn setup(root: &Path, bench: &QueueBench, batch: usize) -> anyhow::Result<TeamConfig> {
    let secs = bench.sleep_ms as f64 / 1000.0;
    let toml = format!(
        "[team]\nname = \"bench\"\nbase_branch = \"main\"\n\
         test_command = \"sleep {secs}; ! ls bad_*.txt >/dev/null 2>&1\"\n\n\
         [merge_queue]\nbatch = {batch}\n\n\
         [lead]\nname = \"lead\"\nmodel = {{ provider = \"scripted\" }}\n\n\
         [[teammate]]\nname = \"alice\"\nrole = \"implementer\"\nwrites = true\n\
         model = {{ provider = \"scripted\" }}\n\n\
         [permissions]\nsandbox = \"off\"\n"
    );
    let person = Author::new("person", "person@crew.invalid");
    init_with_files(
        root,
        "main",
        &[("crew.toml", &toml), ("README.md", "# bench\n")],
        &person,
        "start",
    )?;
    crew_git::exclude_from_git(root, crew_store::workspace::RUNTIME_FOLDERS)?;
    let config = TeamConfig::parse(&root.join("crew.toml"), &toml)?;
    let repo = git2::Repository::open(root)?;
    let base = repo.head()?.peel_to_commit()?;
    let ws = Workspace::new(root);
    let alice = "alice".parse()?;
    let user = crew_store::USER;
    // Evenly spread, so the culprits fall in different batches.
    let bad: Vec<usize> = (0..bench.bad)
        .map(|k| (k + 1) * bench.tasks / (bench.bad + 1))
        .collect();
    for n in 0..bench.tasks {
        let file = if bad.contains(&n) {
            format!("bad_{n}.txt")
        } else {
            format!("task_{n}.txt")
        };
        let branch = format!("crew/t{n}");
        let head = commit_file(&repo, &base, &branch, &file)?;
        let task = ws.tasks().create(NewTask {
            subject: format!("add {file}"),
            ..NewTask::default()
        })?;
        ws.tasks().claim(
            task.id,
            Claimant {
                name: &alice,
                role: Some("implementer"),
            },
        )?;
        let commits = TaskCommits {
            branch,
            start: base.id().to_string(),
            head,
        };
        ws.tasks()
            .submit_for_review(task.id, &alice, format!("added {file}"), commits)?;
        crew_team::review::approve(&ws, &config, task.id, &user)
            .with_context(|| format!("approving {}", task.id))?;
    }
    Ok(config)
}

/// A commit on a new `branch` from `base` adding `file`; its id.
fn commit_file(
    repo: &git2::Repository,
    base: &git2::Commit<'_>,
    branch: &str,
    file: &str,
) -> anyhow::Result<String> {
    let blob = repo.blob(format!("{file}\n").as_bytes())?;
    let mut tree = repo.treebuilder(Some(&base.tree()?))?;
    tree.insert(file, blob, 0o100_644)?;
    let tree = repo.find_tree(tree.write()?)?;
    let sig = git2::Signature::now("alice", "alice@crew.invalid")?;
    let id = repo.commit(None, &sig, &sig, &format!("add {file}"), &tree, &[base])?;
    repo.branch(branch, &repo.find_commit(id)?, false)?;
    Ok(id.to_string())
}
