//! `crew-bench claims`: N processes race to claim all M tasks through the store's atomic claim.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use anyhow::Context;
use serde_json::json;

use crew_store::dag::Graph;
use crew_store::{
    Actor, AgentName, Attempt, Claimant, Draft, Mailboxes, NewTask, Roster, Status, Task, TaskId,
    TaskPatch, TaskStore, Workspace,
};

use crate::proc::{Workers, ready_and_wait};
use crate::stats::round3;
use crew_store::MessageKind;

pub fn run(procs: usize, tasks: usize, as_json: bool) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("creating a scratch folder")?;
    let workspace = Workspace::new(dir.path());
    let store = workspace.tasks();
    for i in 0..tasks {
        store.create(NewTask {
            subject: format!("bench task {i}"),
            ..NewTask::default()
        })?;
    }
    let workers = Workers::spawn(
        (0..procs)
            .map(|k| {
                vec![
                    "claim-worker".into(),
                    "--dir".into(),
                    dir.path().display().to_string(),
                    "--name".into(),
                    format!("w{k}"),
                ]
            })
            .collect(),
    )?;
    let (start, reports) = workers.go()?;
    let seconds = start.elapsed().as_secs_f64();

    let loaded = store.load_all()?;
    report("files", procs, &reports, &loaded.tasks, seconds, as_json)
}

/// Counts double claims from the workers' reports (each a JSON list of the ids it claimed)
/// against the tasks as the store has them, and prints the figures.
pub(crate) fn report(
    store: &str,
    procs: usize,
    reports: &[String],
    all: &[Task],
    seconds: f64,
    as_json: bool,
) -> anyhow::Result<()> {
    let tasks = all.len();
    let mut claims_by_task: HashMap<TaskId, Vec<String>> = HashMap::new();
    for (k, report) in reports.iter().enumerate() {
        let ids: Vec<TaskId> = serde_json::from_str(report.trim())
            .with_context(|| format!("worker w{k} report {report:?}"))?;
        for id in ids {
            claims_by_task.entry(id).or_default().push(format!("w{k}"));
        }
    }
    let mut double_claims = 0usize;
    for task in all {
        let claimers = claims_by_task.get(&task.id).map_or(0, Vec::len);
        let owner_agrees = claimers == 0
            || claims_by_task[&task.id].first().map(String::as_str) == task.owner.as_deref();
        if claimers > 1 || !owner_agrees {
            double_claims += claimers.saturating_sub(1).max(usize::from(!owner_agrees));
        }
    }
    let claimed = all
        .iter()
        .filter(|t| t.status == Status::InProgress && t.owner.is_some())
        .count();
    let unclaimed = all.iter().filter(|t| t.status == Status::Pending).count();
    let report = json!({
        "store": store,
        "procs": procs,
        "tasks": tasks,
        "claimed": claimed,
        "double_claims": double_claims,
        "unclaimed": unclaimed,
        "seconds": round3(seconds),
        "claims_per_sec": round3(claimed as f64 / seconds),
    });
    if as_json {
        println!("{report}");
    } else {
        println!(
            "{procs} processes claimed {claimed}/{tasks} tasks ({store}) in {:.3}s ({:.0} claims/s), {double_claims} double claims, {unclaimed} unclaimed",
            seconds,
            claimed as f64 / seconds
        );
    }
    Ok(())
}

/// One racing process: reads the claimable set once, then claims until nothing is left.
pub fn worker(dir: &Path, name: &AgentName) -> anyhow::Result<()> {
    let store = Workspace::new(dir).tasks();
    let loaded = store.load_all()?;
    let mut queue: VecDeque<TaskId> = Graph::new(&loaded.tasks)
        .claimable()
        .iter()
        .map(|t| t.id)
        .collect();
    let who = Claimant { name, role: None };
    ready_and_wait()?;
    let mut mine = Vec::new();
    loop {
        match store.claim_from(&mut queue, who)? {
            Attempt::Claimed(task) => mine.push(task.id),
            Attempt::Contended => std::thread::yield_now(),
            Attempt::NoneLeft => break,
        }
    }
    println!("{}", serde_json::to_string(&mine)?);
    Ok(())
}

/// Writes tasks and messages as fast as it can until it is killed: the crash test kills these
/// with SIGKILL at random instants and then checks that every file still parses.
pub fn churn(dir: &Path, name: &AgentName) -> anyhow::Result<()> {
    let workspace = Workspace::new(dir);
    let store: TaskStore = workspace.tasks();
    let boxes: Mailboxes = workspace.mailboxes();
    let lead = AgentName::parse("lead")?;
    let roster = Roster::new([name.clone(), lead.clone()]);
    let who = Claimant { name, role: None };
    let mut previous: Option<TaskId> = None;
    for i in 0u64.. {
        let task = store.create(NewTask {
            subject: format!("{name} churn {i}"),
            description: "x".repeat((i % 7) as usize * 300),
            blocked_by: previous.into_iter().collect(),
            role: None,
        })?;
        if i % 3 == 0 {
            let _ = store.update(
                task.id,
                TaskPatch {
                    subject: Some(format!("{name} churn {i} (renamed)")),
                    ..TaskPatch::default()
                },
                Actor::Lead(&lead),
            );
        }
        if let Ok(claimed) = store.claim_next(who) {
            let me = Actor::Teammate {
                name,
                writes: false,
            };
            store.complete(claimed.id, me, Some("done".into()))?;
        }
        boxes.send(
            &roster,
            Draft {
                from: name.clone(),
                to: lead.clone(),
                kind: MessageKind::StatusUpdate,
                text: Some(format!("{i} {}", "y".repeat((i % 5) as usize * 1000))),
                request: i % 4 == 0,
                extra: Default::default(),
            },
        )?;
        previous = Some(task.id);
    }
    Ok(())
}
