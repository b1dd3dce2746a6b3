//! `crew queue list|pause|resume|remove|retry`: the merge queue from a terminal. The queue's
//! worker runs in the team's process (`crew up`); these only read or change the queue's file.

use std::time::SystemTime;

use serde_json::json;

use crate::cli::args::QueueCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crew_store::{QueueRun, QueueState, StoreError, TaskId};
use crew_team::merge_queue::{self, QueueError};

pub fn run(project: &Project, cmd: QueueCommand) -> anyhow::Result<()> {
    let ws = &project.workspace;
    let queue = ws.merge_queue();
    match cmd {
        QueueCommand::List { json } => {
            let state = queue.load()?;
            if json {
                return output::json(&json!({
                    "paused": state.paused,
                    "entries": state.entries,
                    "runs": state.runs,
                    "throughputPerHour": state.throughput_per_hour(),
                }));
            }
            print_list(project, &state);
            Ok(())
        }
        QueueCommand::Pause { json } => {
            queue.set_paused(true).map_err(refused)?;
            said(
                json,
                None,
                "paused",
                "merge queue paused: no new test run starts",
            )
        }
        QueueCommand::Resume { json } => {
            queue.set_paused(false).map_err(refused)?;
            said(json, None, "resumed", "merge queue resumed")
        }
        QueueCommand::Remove { id, json } => {
            queue.remove(id).map_err(refused)?;
            let text = format!("{id} taken out of the merge queue; it stays in review");
            said(json, Some(id), "removed", &text)
        }
        QueueCommand::Retry { id, json } => {
            merge_queue::retry(ws, id).map_err(|e| match e {
                QueueError::Store(e) => refused(e),
                e => e.into(),
            })?;
            let text = format!("{id} waits in the merge queue again");
            said(json, Some(id), "retried", &text)
        }
    }
}

fn said(json: bool, id: Option<TaskId>, outcome: &str, text: &str) -> anyhow::Result<()> {
    if json {
        return output::json(&json!({ "id": id, "outcome": outcome, "text": text }));
    }
    println!("{text}");
    Ok(())
}

/// The protocol saying no (not queued, not failed) is exit 3.
fn refused(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::Refused(r) => CliError::Refused(r.to_string()).into(),
        e => e.into(),
    }
}

/// Test runs `crew queue list` prints (all of them are in `--json`).
const RUNS_SHOWN: usize = 10;

fn print_list(project: &Project, state: &QueueState) {
    if state.paused {
        println!("merge queue PAUSED (`crew queue resume` to go on)");
    }
    if state.entries.is_empty() {
        println!("nothing in the merge queue (`crew review approve ID` adds a task)");
    }
    for entry in &state.entries {
        let subject = project
            .workspace
            .tasks()
            .read(entry.id)
            .map(|t| t.subject)
            .unwrap_or_default();
        let mut line = format!(
            "{:<8} {:<8} {}  approved {} ago",
            entry.id,
            entry.state.as_str(),
            output::one_line(&subject),
            output::age(age_secs(&entry.approved_at))
        );
        if let Some(note) = &entry.note {
            line.push_str(&format!("  {}", output::one_line(note)));
        }
        println!("{line}");
    }
    if !state.runs.is_empty() {
        println!("{} test runs; the last ones:", state.runs.len());
    }
    let shown = state.runs.len().saturating_sub(RUNS_SHOWN);
    for run in &state.runs[shown..] {
        println!("  {}", run_line(run));
    }
    if let Some(throughput) = state.throughput_text() {
        println!("throughput: {throughput}");
    }
}

/// `task_1, task_2 passed in 1.2 s`.
pub(crate) fn run_line(run: &QueueRun) -> String {
    let ids: Vec<String> = run.tasks.iter().map(ToString::to_string).collect();
    let outcome = serde_json::to_value(run.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "{} {outcome} in {:.1} s",
        ids.join(", "),
        run.millis as f64 / 1000.0
    )
}

fn age_secs(at: &str) -> u64 {
    humantime::parse_rfc3339_weak(at)
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .map_or(0, |d| d.as_secs())
}
