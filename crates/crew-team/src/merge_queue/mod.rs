//! The merge queue behind the person's approval: the person approves a task's diff into the
//! queue (`A` in the review queue, `crew review approve`); the queue proves it. For the tasks at
//! its head it builds the exact commit merging them would make (base + the approved tasks, in
//! order), runs the team's `test_command` on it in the sandbox, and only then moves the base to
//! it, by compare-and-swap. Up to `[merge_queue] batch` tasks are tested together; a red batch
//! is bisected ([`bisect`]) to find the culprit, which goes back to its teammate with the
//! failing output. The queue lives in the store (`crew_store::MergeQueue`); its worker runs in
//! the team's process ([`QueueRunner`]).

pub mod bisect;
mod runner;
mod test_run;

use std::path::PathBuf;

use crew_store::{Refusal, StoreError, Workspace};

pub use runner::{QueueError, QueueRunner};

/// The scratch folder the queue writes the tree to test into (replaced for each run).
pub fn tree_dir(workspace: &Workspace) -> PathBuf {
    workspace.crew_dir().join("merge-queue").join("tree")
}

/// The output of the queue's current (or last) test run, as it comes.
pub fn output_log(workspace: &Workspace) -> PathBuf {
    workspace.crew_dir().join("merge-queue").join("output.log")
}

/// The person puts a failed task back into the queue at its place: only while the task is
/// still in review with the commits that were approved (a task sent back is approved again once
/// it returns).
pub fn retry(workspace: &Workspace, id: crew_store::TaskId) -> Result<(), QueueError> {
    let task = workspace.tasks().read(id)?;
    let queued = workspace.merge_queue().load()?;
    let same = queued
        .entry(id)
        .zip(task.commits.as_ref())
        .is_some_and(|(e, c)| e.head == c.head);
    if task.status != crew_store::Status::Review || !same {
        return Err(StoreError::from(Refusal::NotInReview {
            id,
            status: task.status.to_string(),
        })
        .into());
    }
    Ok(workspace.merge_queue().retry(id)?)
}
