//! `crew queue list|pause|resume|remove|retry`: the merge queue from a terminal. The queue's
//! worker runs in the team's process (`crew up`); these only read or change the queue's file.
//! On PostgreSQL (`crew --store URL queue …`) the queue is the person's checkout's, run by the
//! screen there or by `crew --store URL queue run`.

use std::time::SystemTime;

use serde_json::json;

use crate::cli::args::QueueCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crew_store::{QueueRun, QueueState, StoreError, TaskId, TeamStore};
use crew_team::merge_queue::{self, QueueError, QueueFiles};
use crew_team::review::Desk;

pub fn run(project: &Project, cmd: QueueCommand) -> anyhow::Result<()> {
    if let QueueCommand::Run = cmd {
        return Err(CliError::Usage(
            "`crew queue run` runs the queue of a team on PostgreSQL (`crew --store URL queue \
             run`); a team here has its queue run by its own process (`crew up`)"
                .into(),
        )
        .into());
    }
    let desk = Desk::files(&project.workspace, &project.config);
    let files = QueueFiles::of(&project.workspace);
    // The file store's operations are ready at once; a runtime only to wait on them.
    tokio::runtime::Builder::new_current_thread()
        .build()?
        .block_on(on_queue(&desk, &files, cmd, "crew"))
}

/// `crew queue …` on the queue in `files` of the team on `desk`; `crew` is how the person
/// calls crew for it (`crew --store URL` on PostgreSQL), for the hints said.
pub(crate) async fn on_queue<S: TeamStore>(
    desk: &Desk<'_, S>,
    files: &QueueFiles,
    cmd: QueueCommand,
    crew: &str,
) -> anyhow::Result<()> {
    let queue = files.queue();
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
            let mut subjects = Vec::new();
            for entry in &state.entries {
                let subject = desk.task(entry.id).await.map(|t| t.subject);
                subjects.push(subject.unwrap_or_default());
            }
            print_list(&state, &subjects, crew);
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
            merge_queue::retry_on(desk, &queue, id)
                .await
                .map_err(|e| match e {
                    QueueError::Store(e) => refused(e),
                    QueueError::Review(e) if e.is_refusal() => {
                        CliError::Refused(e.to_string()).into()
                    }
                    e => e.into(),
                })?;
            let text = format!("{id} waits in the merge queue again");
            said(json, Some(id), "retried", &text)
        }
        QueueCommand::Run => Err(CliError::Usage(
            "`crew --store URL queue run` runs the queue in the foreground".into(),
        )
        .into()),
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

fn print_list(state: &QueueState, subjects: &[String], crew: &str) {
    if state.paused {
        println!("merge queue PAUSED (`{crew} queue resume` to go on)");
    }
    if state.entries.is_empty() {
        println!("nothing in the merge queue (`{crew} review approve ID` adds a task)");
    }
    for (entry, subject) in state.entries.iter().zip(subjects) {
        let mut line = format!(
            "{:<8} {:<8} {}  approved {} ago",
            entry.id,
            entry.state.as_str(),
            output::one_line(subject),
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
