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

use std::path::{Path, PathBuf};

use crew_store::{MergeQueue, Refusal, Status, StoreError, TeamStore, Workspace};

use crate::review::Desk;
pub use runner::{QueueError, QueueRunner};

/// Where a merge queue keeps its files: its state, the tree it tests and the test's output.
/// A team on files keeps them in its `.crew`; a team on PostgreSQL in `.crew/store` of the
/// person's checkout, where its merges land (the queue is the person's alone, and a file team
/// of the same checkout keeps its own).
#[derive(Debug, Clone)]
pub struct QueueFiles {
    dir: PathBuf,
}

impl QueueFiles {
    /// The queue of the team on files in `workspace`.
    pub fn of(workspace: &Workspace) -> QueueFiles {
        QueueFiles {
            dir: workspace.crew_dir(),
        }
    }

    /// The queue of a team on PostgreSQL merging into the checkout whose crew folder is
    /// `crew_dir` (made when missing).
    pub fn on_store(crew_dir: &Path) -> Result<QueueFiles, StoreError> {
        let dir = crew_dir.join("store");
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        Ok(QueueFiles { dir })
    }

    pub fn queue(&self) -> MergeQueue {
        MergeQueue::new(&self.dir)
    }

    /// The scratch folder the queue writes the tree to test into (replaced for each run).
    pub fn tree(&self) -> PathBuf {
        self.dir.join("merge-queue").join("tree")
    }

    /// The output of the queue's current (or last) test run, as it comes.
    pub fn output_log(&self) -> PathBuf {
        self.dir.join("merge-queue").join("output.log")
    }

    /// Held by the one process that runs this queue.
    fn runner_lock(&self) -> PathBuf {
        self.dir.join("merge-queue.runner.lock")
    }

    /// Whether a process runs this queue now.
    pub fn running(&self) -> bool {
        matches!(
            crew_store::lock::try_with_lock(&self.runner_lock(), || Ok(())),
            Ok(None)
        )
    }
}

/// The output of the current (or last) test run of the file team in `workspace`.
pub fn output_log(workspace: &Workspace) -> PathBuf {
    QueueFiles::of(workspace).output_log()
}

/// The person puts a failed task back into the queue at its place: only while the task is
/// still in review with the commits that were approved (a task sent back is approved again once
/// it returns).
pub fn retry(
    workspace: &Workspace,
    config: &crew_config::TeamConfig,
    id: crew_store::TaskId,
) -> Result<(), QueueError> {
    futures::executor::block_on(retry_on(
        &Desk::files(workspace, config),
        &workspace.merge_queue(),
        id,
    ))
}

/// [`retry`] for the queue `queue` of the team on `desk`.
pub async fn retry_on<S: TeamStore>(
    desk: &Desk<'_, S>,
    queue: &MergeQueue,
    id: crew_store::TaskId,
) -> Result<(), QueueError> {
    let task = desk.task(id).await?;
    let queued = queue.load()?;
    let same = queued
        .entry(id)
        .zip(task.commits.as_ref())
        .is_some_and(|(e, c)| e.head == c.head);
    if task.status != Status::Review || !same {
        return Err(StoreError::from(Refusal::NotInReview {
            id,
            status: task.status.to_string(),
        })
        .into());
    }
    Ok(queue.retry(id)?)
}
