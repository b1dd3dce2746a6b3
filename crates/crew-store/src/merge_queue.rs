//! The merge queue on disk: the tasks the person approved for merging, in approval order, each
//! with its state, whether the queue is paused, and the test runs it made. One file,
//! `.crew/merge-queue.json`, changed only under its lock and replaced atomically (invariant 2),
//! so a crash at any instant leaves the queue as it was before or after one change.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::lock::with_lock;
use crate::task::now_rfc3339;
use crate::{Refusal, StoreError};
use crew_protocol::{AgentName, TaskId};

/// Where a queued task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Approved, not being tested.
    Waiting,
    /// In the test run going on now.
    Testing,
    /// Tested green, being landed.
    Passed,
    /// Sent back or refused by the queue; its note says why.
    Failed,
    /// In the base branch.
    Merged,
}

impl EntryState {
    /// Still to be merged by the queue.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            EntryState::Waiting | EntryState::Testing | EntryState::Passed
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Waiting => "waiting",
            EntryState::Testing => "testing",
            EntryState::Passed => "passed",
            EntryState::Failed => "failed",
            EntryState::Merged => "merged",
        }
    }
}

/// One approved task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEntry {
    pub id: TaskId,
    /// The task's last commit when it was approved: what the person approved.
    pub head: String,
    pub approved_by: AgentName,
    pub approved_at: String,
    pub state: EntryState,
    pub updated_at: String,
    /// Why it failed, or how it was merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a test run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Passed,
    Failed,
    /// The base branch moved during the run: its result counts for nothing.
    BaseMoved,
    /// crew stopped (or a task was removed) during the run.
    Interrupted,
    /// The test could not run (no sandbox, could not start).
    NotRun,
}

/// One test run of the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueRun {
    /// The tasks tested together, in merge order.
    pub tasks: Vec<TaskId>,
    /// The base commit they were merged onto.
    pub base: String,
    pub started_at: String,
    pub millis: u64,
    pub outcome: RunOutcome,
}

/// The whole queue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueState {
    #[serde(default)]
    pub paused: bool,
    #[serde(default)]
    pub entries: Vec<QueueEntry>,
    #[serde(default)]
    pub runs: Vec<QueueRun>,
}

/// Finished entries and runs kept for the record; older ones are dropped.
const KEEP_FINISHED: usize = 50;
const KEEP_RUNS: usize = 200;

impl QueueState {
    pub fn entry(&self, id: TaskId) -> Option<&QueueEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    fn entry_mut(&mut self, id: TaskId) -> Option<&mut QueueEntry> {
        self.entries.iter_mut().find(|e| e.id == id)
    }

    /// The tasks still to merge, in approval order.
    pub fn active(&self) -> impl Iterator<Item = &QueueEntry> {
        self.entries.iter().filter(|e| e.state.is_active())
    }

    /// Sets the state (and note, when given) of each of `ids` that is queued.
    pub fn set_state(&mut self, ids: &[TaskId], state: EntryState, note: Option<&str>) {
        let now = now_rfc3339();
        for id in ids {
            if let Some(entry) = self.entry_mut(*id) {
                entry.state = state;
                entry.updated_at.clone_from(&now);
                if let Some(note) = note {
                    entry.note = Some(note.to_string());
                }
            }
        }
        self.prune();
    }

    pub fn record_run(&mut self, run: QueueRun) {
        self.runs.push(run);
        let extra = self.runs.len().saturating_sub(KEEP_RUNS);
        self.runs.drain(..extra);
    }

    /// Tasks merged per hour over the runs kept, when any ran.
    pub fn throughput_per_hour(&self) -> Option<f64> {
        let (merged, millis) = self.merged_and_testing();
        (millis > 0).then(|| merged as f64 * 3_600_000.0 / millis as f64)
    }

    /// Tasks merged, and the milliseconds of testing in the runs kept.
    fn merged_and_testing(&self) -> (usize, u64) {
        let merged = self
            .entries
            .iter()
            .filter(|e| e.state == EntryState::Merged)
            .count();
        (merged, self.runs.iter().map(|r| r.millis).sum())
    }

    /// The throughput for a person: what merged for how much testing, and the hourly rate once
    /// there has been a minute of testing (a rate from a few quick runs means nothing).
    pub fn throughput_text(&self) -> Option<String> {
        let (merged, millis) = self.merged_and_testing();
        if self.runs.is_empty() {
            return None;
        }
        let mut text = format!(
            "{merged} merged for {:.1} s of testing",
            millis as f64 / 1000.0
        );
        if millis >= 60_000
            && let Some(rate) = self.throughput_per_hour()
        {
            text.push_str(&format!(" ({rate:.1} per hour)"));
        }
        Some(text)
    }

    fn prune(&mut self) {
        let finished = self.entries.iter().filter(|e| !e.state.is_active()).count();
        let mut extra = finished.saturating_sub(KEEP_FINISHED);
        self.entries.retain(|e| {
            if extra > 0 && !e.state.is_active() {
                extra -= 1;
                return false;
            }
            true
        });
    }
}

/// The queue's file and lock.
#[derive(Debug, Clone)]
pub struct MergeQueue {
    path: PathBuf,
    lock: PathBuf,
}

impl MergeQueue {
    /// The queue kept in crew's folder `crew_dir` (`.crew`).
    pub fn new(crew_dir: &Path) -> Self {
        MergeQueue {
            path: crew_dir.join("merge-queue.json"),
            lock: crew_dir.join("merge-queue.lock"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The queue as it is now (empty when there is no file yet).
    pub fn load(&self) -> Result<QueueState, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| StoreError::malformed(&self.path, e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(QueueState::default()),
            Err(e) => Err(StoreError::io(&self.path, e)),
        }
    }

    /// Changes the queue under its lock: read, `change`, write back (not when it fails, nor
    /// when nothing changed: the worker looks often).
    pub fn update<T>(
        &self,
        change: impl FnOnce(&mut QueueState) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        with_lock(&self.lock, || {
            let mut state = self.load()?;
            let before = state.clone();
            let out = change(&mut state)?;
            if state == before {
                return Ok(out);
            }
            let bytes = serde_json::to_vec_pretty(&state)
                .map_err(|e| StoreError::malformed(&self.path, e.to_string()))?;
            write_atomic(&self.path, &bytes).map_err(|e| StoreError::io(&self.path, e))?;
            Ok(out)
        })
    }

    /// Adds `id` (at commit `head`) at the end of the queue; an old finished entry of the
    /// same task is replaced.
    pub fn approve(&self, id: TaskId, head: &str, by: &AgentName) -> Result<(), StoreError> {
        self.update(|state| {
            if state.entry(id).is_some_and(|e| e.state.is_active()) {
                return Err(Refusal::AlreadyQueued { id }.into());
            }
            state.entries.retain(|e| e.id != id);
            let now = now_rfc3339();
            state.entries.push(QueueEntry {
                id,
                head: head.to_string(),
                approved_by: by.clone(),
                approved_at: now.clone(),
                state: EntryState::Waiting,
                updated_at: now,
                note: None,
            });
            Ok(())
        })
    }

    /// Takes `id` out of the queue (its task stays in review).
    pub fn remove(&self, id: TaskId) -> Result<QueueEntry, StoreError> {
        self.update(|state| {
            let at = state
                .entries
                .iter()
                .position(|e| e.id == id && e.state.is_active())
                .ok_or(Refusal::NotQueued { id })?;
            Ok(state.entries.remove(at))
        })
    }

    /// A failed entry waits again, at its place in the queue.
    pub fn retry(&self, id: TaskId) -> Result<(), StoreError> {
        self.update(|state| {
            let entry = state.entry_mut(id).ok_or(Refusal::NotQueued { id })?;
            if entry.state != EntryState::Failed {
                return Err(Refusal::NotFailedInQueue {
                    id,
                    state: entry.state.as_str(),
                }
                .into());
            }
            entry.state = EntryState::Waiting;
            entry.updated_at = now_rfc3339();
            Ok(())
        })
    }

    pub fn set_paused(&self, paused: bool) -> Result<(), StoreError> {
        self.update(|state| {
            state.paused = paused;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> TaskId {
        TaskId::parse(&format!("task_{n}")).unwrap()
    }

    #[test]
    fn approvals_keep_their_order_survive_a_reload_and_refuse_a_second_approval() {
        let dir = tempfile::tempdir().unwrap();
        let queue = MergeQueue::new(dir.path());
        let user: AgentName = "user".parse().unwrap();
        for n in [3, 1, 2] {
            queue.approve(id(n), "abc", &user).unwrap();
        }
        let again = queue.approve(id(1), "abc", &user).unwrap_err();
        assert!(
            again
                .to_string()
                .contains("task_1 is already in the merge queue")
        );
        let order: Vec<TaskId> = MergeQueue::new(dir.path())
            .load()
            .unwrap()
            .active()
            .map(|e| e.id)
            .collect();
        assert_eq!(order, [id(3), id(1), id(2)]);

        queue.remove(id(1)).unwrap();
        assert!(queue.remove(id(1)).is_err());
        queue
            .update(|s| {
                s.set_state(&[id(3)], EntryState::Failed, Some("red"));
                Ok(())
            })
            .unwrap();
        assert!(
            queue.retry(id(2)).is_err(),
            "only a failed entry is retried"
        );
        queue.retry(id(3)).unwrap();
        let state = queue.load().unwrap();
        assert_eq!(state.entry(id(3)).unwrap().state, EntryState::Waiting);
        assert_eq!(state.entry(id(3)).unwrap().note.as_deref(), Some("red"));
    }

    #[test]
    fn a_broken_queue_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let queue = MergeQueue::new(dir.path());
        std::fs::write(queue.path(), "{ not json").unwrap();
        let err = queue.load().unwrap_err().to_string();
        assert!(err.contains("merge-queue.json"), "{err}");
    }
}
