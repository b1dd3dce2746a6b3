//! The `review` state: a writing teammate's finished task whose commits are not yet in the base
//! branch. It leaves review by being merged (`completed`), sent back to the same teammate with a
//! note (`pending`, assigned to it, which picks it up again at once), or discarded (`failed`).

use crate::task::{ReviewerVerdict, Status, Task, TaskCommits, now_rfc3339};
use crate::tasks::TaskStore;
use crate::{Refusal, StoreError};
use crew_protocol::AgentName;
use crew_protocol::TaskId;

impl TaskStore {
    /// The owner finished the task and its commits wait for review.
    pub fn submit_for_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: String,
        commits: TaskCommits,
    ) -> Result<Task, StoreError> {
        self.finish(id, who, "submitted for review", |task| {
            task.status = Status::Review;
            task.result = Some(result);
            task.commits = Some(Box::new(commits));
            Ok(())
        })
    }

    /// Records where the task's commits start, the first time it starts on `branch` (a task
    /// sent back keeps its first start, so its review shows all its commits; a task that
    /// changed hands starts afresh, since the old start is not on the new branch).
    pub fn record_start(&self, id: TaskId, branch: &str, start: &str) -> Result<Task, StoreError> {
        self.modify(id, |task| {
            if task.commits.as_ref().is_none_or(|c| c.branch != branch) {
                task.commits = Some(Box::new(TaskCommits {
                    branch: branch.to_string(),
                    start: start.to_string(),
                    head: start.to_string(),
                }));
            }
            Ok(())
        })
    }

    /// A reviewer agent's verdict on the task's commits (while it is still in review).
    pub fn record_verdict(&self, id: TaskId, verdict: ReviewerVerdict) -> Result<Task, StoreError> {
        self.while_in_review(id, |task| task.review = Some(Box::new(verdict)))
    }

    /// The task's commits are in the base branch: it is `completed`.
    pub fn mark_merged(&self, id: TaskId, by: &AgentName, how: &str) -> Result<Task, StoreError> {
        self.while_in_review(id, |task| {
            task.status = Status::Completed;
            task.notes
                .push(format!("{}: merged by {by} ({how})", now_rfc3339()));
        })
    }

    /// Back to the same teammate with `note`: pending and assigned to it, so it takes it again.
    pub fn send_back(&self, id: TaskId, by: &AgentName, note: &str) -> Result<Task, StoreError> {
        self.while_in_review(id, |task| {
            task.status = Status::Pending;
            task.notes
                .push(format!("{}: sent back by {by}: {note}", now_rfc3339()));
        })
    }

    /// The task's commits were taken back out: `failed` with `reason`.
    pub fn discard_review(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> Result<Task, StoreError> {
        self.while_in_review(id, |task| {
            task.status = Status::Failed;
            task.result = Some(format!("discarded by {by}: {reason}"));
            task.notes
                .push(format!("{}: discarded by {by}: {reason}", now_rfc3339()));
        })
    }

    /// Changes the task only while it is in review.
    fn while_in_review(
        &self,
        id: TaskId,
        apply: impl FnOnce(&mut Task),
    ) -> Result<Task, StoreError> {
        self.modify(id, |task| {
            if task.status != Status::Review {
                return Err(Refusal::NotInReview {
                    id: task.id,
                    status: task.status.to_string(),
                }
                .into());
            }
            apply(task);
            Ok(())
        })
    }
}

/// The review notes a teammate should read when a task comes back to it, newest last.
pub fn review_notes(task: &Task) -> Vec<&str> {
    task.notes
        .iter()
        .filter_map(|n| n.split_once(": sent back by ").map(|(_, rest)| rest))
        .collect()
}

/// Whether the task ended by the person's discard (its commits taken back out), as both
/// backends record it: failed, its last note the store's discard note. Not the result, which
/// its owner writes.
pub fn was_discarded(task: &Task) -> bool {
    task.status == Status::Failed
        && task.notes.last().is_some_and(|n| {
            n.split_once(": ")
                .is_some_and(|(_, rest)| rest.starts_with("discarded by "))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::USER;
    use crate::{Claimant, NewTask};

    #[test]
    fn a_task_that_changes_hands_records_the_new_branch_and_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        store
            .create(NewTask {
                subject: "code".into(),
                ..NewTask::default()
            })
            .unwrap();
        store.record_start(TaskId(1), "crew/alice", "a0").unwrap();
        // Alice's second start (a send-back) keeps her first.
        store.record_start(TaskId(1), "crew/alice", "a1").unwrap();
        let task = store.record_start(TaskId(1), "crew/bob", "b0").unwrap();
        let commits = task.commits.unwrap();
        assert_eq!(
            (commits.branch.as_str(), commits.start.as_str()),
            ("crew/bob", "b0")
        );
    }

    #[test]
    fn a_task_in_review_blocks_its_dependents_until_merged_and_send_back_returns_it_to_its_owner() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        for (subject, blocked_by) in [("code", vec![]), ("docs", vec![TaskId(1)])] {
            store
                .create(NewTask {
                    subject: subject.into(),
                    blocked_by,
                    ..NewTask::default()
                })
                .unwrap();
        }
        let (alice_name, bob_name) = ("alice".parse().unwrap(), "bob".parse().unwrap());
        let alice = Claimant {
            name: &alice_name,
            role: None,
        };
        let bob = Claimant {
            name: &bob_name,
            role: None,
        };
        store.claim(TaskId(1), alice).unwrap();
        store.record_start(TaskId(1), "crew/alice", "a0").unwrap();
        let commits = TaskCommits {
            branch: "crew/alice".into(),
            start: "a0".into(),
            head: "a1".into(),
        };
        store
            .submit_for_review(TaskId(1), &alice_name, "did it".into(), commits.clone())
            .unwrap();
        assert_eq!(store.read(TaskId(1)).unwrap().status, Status::Review);
        assert!(
            store.claim(TaskId(2), bob).is_err(),
            "docs wait for the merge"
        );

        store.send_back(TaskId(1), &USER, "add a test").unwrap();
        let back = store.read(TaskId(1)).unwrap();
        assert_eq!(
            (back.status, back.owner.as_deref()),
            (Status::Pending, Some("alice"))
        );
        assert_eq!(review_notes(&back), ["user: add a test"]);
        assert!(
            store.claim(TaskId(1), bob).is_err(),
            "only alice takes it back"
        );
        store.claim(TaskId(1), alice).unwrap();
        store.record_start(TaskId(1), "crew/alice", "a1").unwrap();
        assert_eq!(store.read(TaskId(1)).unwrap().commits.unwrap().start, "a0");
        store
            .submit_for_review(TaskId(1), &alice_name, "did it again".into(), commits)
            .unwrap();
        assert!(store.send_back(TaskId(2), &USER, "x").is_err());
        let refused = store
            .assign(TaskId(1), Some(bob), crate::Actor::Person)
            .unwrap_err();
        assert!(
            refused.to_string().contains("task_1 is in review"),
            "{refused}"
        );
        store.mark_merged(TaskId(1), &USER, "fast-forward").unwrap();
        assert!(store.mark_merged(TaskId(1), &USER, "again").is_err());
        store.claim(TaskId(2), bob).unwrap();
    }

    #[test]
    fn a_discard_is_known_by_the_stores_note_not_by_what_the_owner_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        for subject in ["code", "docs"] {
            store
                .create(NewTask {
                    subject: subject.into(),
                    ..NewTask::default()
                })
                .unwrap();
        }
        let alice_name: AgentName = "alice".parse().unwrap();
        let alice = Claimant {
            name: &alice_name,
            role: None,
        };
        store.claim(TaskId(1), alice).unwrap();
        store.record_start(TaskId(1), "crew/alice", "a0").unwrap();
        let commits = TaskCommits {
            branch: "crew/alice".into(),
            start: "a0".into(),
            head: "a1".into(),
        };
        store
            .submit_for_review(TaskId(1), &alice_name, "did it".into(), commits)
            .unwrap();
        let discarded = store.discard_review(TaskId(1), &USER, "wrong").unwrap();
        assert!(was_discarded(&discarded));
        store.claim(TaskId(2), alice).unwrap();
        let failed = store
            .fail(TaskId(2), &alice_name, "discarded by user: so I say".into())
            .unwrap();
        assert!(!was_discarded(&failed), "{failed:?}");
    }
}
