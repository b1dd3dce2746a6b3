//! `crew worktree list|diff|merge|discard`: each writing teammate's git worktree.

use std::io::{BufRead, Write};

use serde_json::json;

use crate::cli::args::WorktreeCommand;
use crate::cli::exit::CliError;
use crate::cli::output;
use crate::cli::project::Project;
use crew_git::{Author, FileStatus, LineKind, MergeOutcome, WorktreeDiff, Worktrees};
use crew_team::review::ProtectedChange;

pub fn run(project: &Project, cmd: WorktreeCommand) -> anyhow::Result<()> {
    let trees = Worktrees::open(project.workspace.root())?
        .with_max_task_bytes(project.config.limits.max_task_bytes);
    let base = project.config.team.base_branch.clone();
    match cmd {
        WorktreeCommand::List { json } => {
            let list = trees.list(&base)?;
            if json {
                return output::json(&json!({ "worktrees": list }));
            }
            if list.is_empty() {
                println!("no worktrees yet (a writing teammate gets one when it first writes)");
            }
            for w in list {
                println!(
                    "{:<12} {:<16} ahead {} behind {} dirty {}  {}",
                    w.name,
                    w.branch,
                    w.ahead,
                    w.behind,
                    w.dirty_files,
                    w.path.display()
                );
            }
            Ok(())
        }
        WorktreeCommand::Diff { name, json } => {
            // An unknown name is refused as `crew inbox NAME` refuses it (same exit code).
            project
                .roster
                .check("teammate", &name)
                .map_err(crew_store::StoreError::from)?;
            let diff = trees.diff(&name, &base)?;
            if json {
                return output::json(&diff);
            }
            print_diff(&diff, &[]);
            Ok(())
        }
        WorktreeCommand::Merge { name, json } => {
            project
                .roster
                .check("teammate", &name)
                .map_err(crew_store::StoreError::from)?;
            let outcome = trees.merge(&name, &base, &Author::crew(&name))?;
            if json {
                output::json(&outcome)?;
            } else {
                match &outcome {
                    MergeOutcome::FastForward { new_head } => {
                        println!("merged crew/{name} into {base} (fast-forward to {new_head})")
                    }
                    MergeOutcome::Merged { commit } => {
                        println!("merged crew/{name} into {base} (merge commit {commit})")
                    }
                    MergeOutcome::UpToDate => {
                        println!("{base} already has everything in crew/{name}")
                    }
                    MergeOutcome::Conflicts { files } => {
                        println!(
                            "not merged: conflicts in {}",
                            output::one_line(&files.join(", "))
                        )
                    }
                }
            }
            if let MergeOutcome::Conflicts { files } = outcome {
                return Err(CliError::Refused(format!(
                    "crew/{name} conflicts with {base} in {}; nothing was changed",
                    files.join(", ")
                ))
                .into());
            }
            Ok(())
        }
        WorktreeCommand::Discard { name, yes } => {
            if !yes
                && !confirm(&format!(
                    "discard {name}'s worktree and branch crew/{name}, with all its unmerged work? [y/N] "
                ))?
            {
                return Err(CliError::Refused("not discarded".into()).into());
            }
            trees.discard(&name)?;
            println!("discarded the worktree and branch crew/{name}");
            Ok(())
        }
    }
}

/// A diff as text: each file with its status and counts, then its hunks. Paths and lines come
/// from agents' work, so they are shown escaped (see `output::one_line`).
/// Each file's changes; a file among `protected` is headed by a warning with its reason.
pub fn print_diff(diff: &WorktreeDiff, protected: &[ProtectedChange]) {
    for file in &diff.files {
        if let Some(p) = protected.iter().find(|p| p.path == file.path) {
            println!(
                "WARNING {} (never merged automatically)",
                output::one_line(&p.to_string())
            );
        }
        let status = match file.status {
            FileStatus::Added => "added",
            FileStatus::Modified => "modified",
            FileStatus::Deleted => "deleted",
            FileStatus::Renamed => "renamed",
            FileStatus::Typechange => "type changed",
        };
        let from = file
            .old_path
            .as_deref()
            .map(|p| format!(" (from {})", output::one_line(p)))
            .unwrap_or_default();
        let path = output::one_line(&file.path);
        if file.binary {
            println!("{status} {path}{from}: binary file");
            continue;
        }
        println!(
            "{status} {path}{from} +{} -{}",
            file.additions, file.deletions
        );
        for hunk in &file.hunks {
            println!("{}", output::one_line(hunk.header.trim_end()));
            for line in &hunk.lines {
                let mark = match line.kind {
                    LineKind::Add => '+',
                    LineKind::Del => '-',
                    LineKind::Context => ' ',
                };
                println!(
                    "{mark}{}",
                    output::one_line(line.text.trim_end_matches('\n'))
                );
            }
        }
    }
    println!(
        "{} files, +{} -{}",
        diff.totals.files, diff.totals.additions, diff.totals.deletions
    );
}

/// Asks on the terminal; no answer (or no terminal) means no.
fn confirm(question: &str) -> anyhow::Result<bool> {
    eprint!("{question}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
