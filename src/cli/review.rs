//! `crew review list|show|diff|merge|send-back|discard`: the review queue from a terminal.
//! A task not in review, or commits that do not merge, exit 3 with the reason.

use serde_json::json;

use crate::cli::args::ReviewCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crate::cli::worktrees::print_diff;
use crew_store::{TaskId, USER};
use crew_team::review::{self, Review, ReviewError};

pub fn run(project: &Project, cmd: ReviewCommand) -> anyhow::Result<()> {
    let (ws, config) = (&project.workspace, &project.config);
    match cmd {
        ReviewCommand::List { json } => {
            let reviews = review::list(ws, config).map_err(refusal)?;
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
            let r = review::show(ws, config, id).map_err(refusal)?;
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
            let diff = review::diff(ws, config, id).map_err(refusal)?;
            if json {
                return output::json(&diff);
            }
            print_diff(&diff);
            Ok(())
        }
        ReviewCommand::Merge { id, json } => {
            let text = review::merge(ws, config, id, &USER).map_err(refusal)?;
            answer(json, id, "merged", &text)
        }
        ReviewCommand::SendBack { id, note, json } => {
            let task = review::send_back(ws, config, id, &USER, &note).map_err(refusal)?;
            let text = format!(
                "{} sent back to {}: {}",
                task.id,
                task.owner.as_deref().unwrap_or("nobody"),
                output::one_line(&note)
            );
            answer(json, task.id, "sent_back", &text)
        }
        ReviewCommand::Discard { id, reason, json } => {
            let task = review::discard(ws, config, id, &USER, &reason).map_err(refusal)?;
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
    if !r.conflicts.is_empty() {
        text.push_str(&format!(
            "  CONFLICTS: {}",
            output::one_line(&r.conflicts.join(", "))
        ));
    }
    if !r.protected.is_empty() {
        text.push_str(&format!(
            "  WARNING changes {} (never merged automatically)",
            output::one_line(&r.protected.join(", "))
        ));
    }
    text
}

/// A refusal of the protocol (not in review, conflicts) is exit 3; the rest keep their codes.
fn refusal(e: ReviewError) -> anyhow::Error {
    match e {
        e if e.is_refusal() && !matches!(e, ReviewError::Store(_)) => {
            CliError::Refused(e.to_string()).into()
        }
        ReviewError::Store(e) => e.into(),
        ReviewError::Git(e) => e.into(),
        e => e.into(),
    }
}
