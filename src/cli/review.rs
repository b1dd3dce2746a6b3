//! `crew review list|show|diff|merge|approve|send-back|discard`: the review queue from a terminal.
//! A task not in review, or commits that do not merge, exit 3 with the reason.

use serde_json::json;

use crate::cli::args::ReviewCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crate::cli::worktrees::print_diff;
use crew_protocol::joined;
use crew_store::TeamStore;
use crew_store::{TaskId, USER};
use crew_team::merge_queue::QueueFiles;
use crew_team::review::{Desk, Review, ReviewError};

pub fn run(project: &Project, cmd: ReviewCommand) -> anyhow::Result<()> {
    let (ws, config) = (&project.workspace, &project.config);
    let queue = Approvals {
        files: QueueFiles::of(ws),
        runs_it: "no team runs here: `crew up` starts the queue",
    };
    // The file store's operations are ready at once; a runtime only to wait on them.
    tokio::runtime::Builder::new_current_thread()
        .build()?
        .block_on(on_desk(&Desk::files(ws, config), &queue, cmd))
}

/// Where `crew review approve` puts a task: the queue's files, and what to say when no
/// process runs that queue (so nobody waits on nothing).
pub(crate) struct Approvals {
    pub files: QueueFiles,
    pub runs_it: &'static str,
}

/// `crew review …` answered on `desk`: the team's files, or its store on PostgreSQL
/// (`crew --store URL review …`, merging into this checkout).
pub(crate) async fn on_desk<S: TeamStore>(
    desk: &Desk<'_, S>,
    queue: &Approvals,
    cmd: ReviewCommand,
) -> anyhow::Result<()> {
    match cmd {
        ReviewCommand::List { json } => {
            let reviews = desk.list().await.map_err(refusal)?;
            if json {
                return output::json(&json!({ "reviews": reviews }));
            }
            if reviews.is_empty() {
                println!("nothing waits for review");
            }
            for r in &reviews {
                println!("{}", line(r));
            }
            Ok(())
        }
        ReviewCommand::Show { id, json } => {
            let r = desk.show(id).await.map_err(refusal)?;
            if json {
                return output::json(&r);
            }
            println!("{}", line(&r));
            println!("branch {} at {}", r.branch, r.head);
            for f in &r.files {
                println!("  {}", output::one_line(f));
            }
            if !r.summary.is_empty() {
                println!("\n{}", output::block(&r.summary));
            }
            if let Some(report) = &r.verdict_report {
                println!("\nreviewer's report:\n{}", output::block(report));
            }
            Ok(())
        }
        ReviewCommand::Diff { id, json } => {
            let diff = desk.diff(id).await.map_err(refusal)?;
            let protected = desk.show(id).await.map_err(refusal)?.protected;
            if json {
                let mut value = serde_json::to_value(&diff)?;
                value["protected"] = serde_json::to_value(&protected)?;
                return output::json(&value);
            }
            print_diff(&diff, &protected);
            Ok(())
        }
        ReviewCommand::Merge { id, json } => {
            let text = desk.merge(id, &USER).await.map_err(refusal)?;
            answer(json, id, "merged", &text)
        }
        ReviewCommand::Approve { id, json } => {
            let mut text = desk
                .approve(id, &USER, &queue.files.queue())
                .await
                .map_err(refusal)?;
            if !queue.files.running() {
                text.push_str(&format!(" ({})", queue.runs_it));
            }
            answer(json, id, "approved", &text)
        }
        ReviewCommand::SendBack { id, note, json } => {
            let task = desk.send_back(id, &USER, &note).await.map_err(refusal)?;
            let text = format!(
                "{} sent back to {}: {}",
                task.id,
                task.owner.as_deref().unwrap_or("nobody"),
                output::one_line(&note)
            );
            answer(json, task.id, "sent_back", &text)
        }
        ReviewCommand::Discard { id, reason, json } => {
            let task = desk.discard(id, &USER, &reason).await.map_err(refusal)?;
            let text = format!("{} discarded: {}", task.id, output::one_line(&reason));
            answer(json, task.id, "discarded", &text)
        }
    }
}

fn answer(json: bool, id: TaskId, outcome: &str, text: &str) -> anyhow::Result<()> {
    if json {
        return output::json(&json!({ "id": id, "outcome": outcome, "text": text }));
    }
    println!("{text}");
    Ok(())
}

/// One line per review: id, owner, subject, files and counts, then what needs attention.
fn line(r: &Review) -> String {
    // The subject and file names come from agents: escaped, on one line.
    let mut text = format!(
        "{:<8} {:<10} {}  {} files +{} -{}  {}",
        r.id,
        r.owner.as_deref().unwrap_or(""),
        output::one_line(&r.subject),
        r.files.len(),
        r.additions,
        r.deletions,
        output::age(r.age_secs)
    );
    if let Some(usage) = &r.usage {
        text.push_str(&format!("  ({})", usage.text()));
    }
    if let Some(verdict) = &r.verdict {
        text.push_str(&format!("  VERDICT {verdict}"));
    }
    if let Some(why) = &r.unavailable {
        text.push_str(&format!("  UNAVAILABLE: {}", output::one_line(why)));
    }
    if !r.also_brings.is_empty() {
        text.push_str(&format!(
            "  ALSO BRINGS (not in its commits): {}",
            output::one_line(&r.also_brings.join(", "))
        ));
    }
    if !r.conflicts.is_empty() {
        text.push_str(&format!(
            "  CONFLICTS: {}",
            output::one_line(&r.conflicts.join(", "))
        ));
    }
    if !r.protected.is_empty() {
        text.push_str(&format!(
            "  WARNING changes {} (never merged automatically)",
            output::one_line(&joined(&r.protected, ", "))
        ));
    }
    text
}

/// A refusal of the protocol (not in review, conflicts) is exit 3; the rest keep their codes.
pub(crate) fn refusal(e: ReviewError) -> anyhow::Error {
    match e {
        e if e.is_refusal() && !matches!(e, ReviewError::Store(_)) => {
            CliError::Refused(e.to_string()).into()
        }
        ReviewError::Store(e) => e.into(),
        ReviewError::Git(e) => e.into(),
        e => e.into(),
    }
}
