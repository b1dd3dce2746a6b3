//! `claim_task` as the seed defines it: take the lock, re-read, check, write owner +
//! `in_progress`, release (invariant 1). Also the owner's transitions out of `in_progress`.

use std::collections::VecDeque;

use crate::dag::Graph;
use crate::lock::{try_with_lock, with_lock};
use crate::task::{Status, Task};
use crate::tasks::TaskStore;
use crate::{Actor, Refusal, StoreError, Teammate};
use crew_protocol::AgentName;
use crew_protocol::TaskId;

/// Who is claiming, and in which role (a task with a `role` only goes to that role).
#[derive(Debug, Clone, Copy)]
pub struct Claimant<'a> {
    pub name: &'a AgentName,
    pub role: Option<&'a str>,
}

impl<'a> Claimant<'a> {
    /// The teammate called `name` among `team` (names with their roles), or the refusal that
    /// names the team.
    pub fn teammate(team: &'a [Teammate], name: &str) -> Result<Self, Refusal> {
        match team.iter().find(|t| t.name == name) {
            Some(t) => Ok(Claimant {
                name: &t.name,
                role: t.role.as_deref(),
            }),
            None => Err(Refusal::UnknownAgent {
                role: "teammate",
                name: name.to_string(),
                valid: team.iter().map(|t| t.name.clone()).collect(),
            }),
        }
    }

    /// Whether `task` is one this claimant may get once its blockers are done: pending, of a
    /// role that fits, unowned or assigned to it.
    pub fn may_get(&self, task: &Task) -> bool {
        task.status == Status::Pending
            && role_fits(task, *self)
            && task.owner.as_ref().is_none_or(|o| o == self.name)
    }
}

impl TaskStore {
    /// Claims one task by id, waiting for its lock.
    pub fn claim(&self, id: TaskId, who: Claimant<'_>) -> Result<Task, StoreError> {
        self.modify(id, |task| self.take(task, who))
    }

    /// Claims a task assigned to `who` if one is ready, else the oldest claimable task that fits.
    pub fn claim_next(&self, who: Claimant<'_>) -> Result<Task, StoreError> {
        loop {
            let loaded = self.load_all()?;
            let graph = Graph::new(&loaded.tasks);
            let mut queue: VecDeque<TaskId> = graph
                .ready_for(who.name)
                .into_iter()
                .chain(graph.claimable())
                .filter(|t| role_fits(t, who))
                .map(|t| t.id)
                .collect();
            match self.claim_from(&mut queue, who)? {
                Attempt::Claimed(task) => return Ok(*task),
                Attempt::NoneLeft => {
                    return Err(Refusal::NothingClaimable {
                        who: who.name.clone(),
                    }
                    .into());
                }
                // Someone held a lock we skipped: wait for them to finish with it (in the
                // kernel, not spinning — sixteen workers re-reading every task while the one
                // holder waits for a core was what made a contended claim take seconds), then
                // look again with fresh state.
                Attempt::Contended => {
                    if let Some(&busy) = queue.front() {
                        with_lock(&self.lock_path(busy), || Ok(()))?;
                    }
                }
            }
        }
    }

    /// Tries the candidates in `queue` in order without waiting on a busy lock. Candidates that
    /// turn out unclaimable are dropped; busy ones stay queued for the next call. A long-running
    /// worker keeps its queue between calls, so a claim does not re-read the whole store.
    pub fn claim_from(
        &self,
        queue: &mut VecDeque<TaskId>,
        who: Claimant<'_>,
    ) -> Result<Attempt, StoreError> {
        let mut busy = Vec::new();
        let mut claimed = None;
        while let Some(id) = queue.pop_front() {
            let outcome = try_with_lock(&self.lock_path(id), || {
                let mut task = match self.read(id) {
                    Ok(task) => task,
                    Err(StoreError::NoSuchTask(_)) => return Ok(None),
                    Err(e) => return Err(e),
                };
                if self.take(&mut task, who).is_err() {
                    return Ok(None);
                }
                task.updated_at = crate::task::now_rfc3339();
                self.write(&task)?;
                Ok(Some(task))
            });
            match outcome {
                Ok(Some(Some(task))) => {
                    claimed = Some(Box::new(task));
                    break;
                }
                Ok(Some(None)) => {}
                Ok(None) => busy.push(id),
                Err(e) => {
                    busy.push(id);
                    requeue(queue, busy);
                    return Err(e);
                }
            }
        }
        let contended = !busy.is_empty();
        requeue(queue, busy);
        Ok(match claimed {
            Some(task) => Attempt::Claimed(task),
            None if contended => Attempt::Contended,
            None => Attempt::NoneLeft,
        })
    }

    /// The check-and-set at the heart of a claim; runs on freshly read state under the lock.
    /// A pending task may carry an owner: it was assigned, and only that owner may take it.
    fn take(&self, task: &mut Task, who: Claimant<'_>) -> Result<(), StoreError> {
        check_claim(task, who)?;
        let open = self.open_blockers(task)?;
        if !open.is_empty() {
            return Err(Refusal::Blocked {
                id: task.id,
                by: open,
            }
            .into());
        }
        task.owner = Some(who.name.clone());
        task.status = Status::InProgress;
        Ok(())
    }

    /// Blockers not completed, read from disk now (completion is final, so no lock is needed).
    fn open_blockers(&self, task: &Task) -> Result<Vec<TaskId>, StoreError> {
        let mut open = Vec::new();
        for &b in &task.blocked_by {
            let done = match self.read(b) {
                Ok(blocker) => blocker.status == Status::Completed,
                Err(StoreError::NoSuchTask(_)) => false,
                Err(e) => return Err(e),
            };
            if !done {
                open.push(b);
            }
        }
        Ok(open)
    }

    /// The owner gives the task back: `pending`, no owner.
    pub fn release(&self, id: TaskId, who: &AgentName) -> Result<Task, StoreError> {
        self.finish(id, who, "released", |task| {
            task.status = Status::Pending;
            task.owner = None;
            Ok(())
        })
    }

    /// Gives the task to `to`, or to nobody: it becomes `pending` with `to` as its owner, and
    /// only `to` may claim it (when its blockers are done). Taking a task from a worker still
    /// on it is allowed (the person decides); that worker's finish is then refused. A failed
    /// task can be handed out again; a completed one cannot.
    /// Only the lead and the person hand tasks out.
    pub fn assign(
        &self,
        id: TaskId,
        to: Option<Claimant<'_>>,
        by: Actor<'_>,
    ) -> Result<Task, StoreError> {
        self.modify(id, |task| {
            let Some(note) = assignment(task, to, by)? else {
                return Ok(());
            };
            task.status = Status::Pending;
            task.owner = to.map(|w| w.name.clone());
            task.notes
                .push(format!("{}: {note}", crate::task::now_rfc3339()));
            Ok(())
        })
    }

    /// Gives every task `owner` holds (in progress, or assigned and pending) back to `pending`
    /// with no owner and a note: for a worker that died, so nothing stays claimed by a ghost
    /// (invariant 4).
    pub fn release_orphaned(&self, owner: &AgentName, note: &str) -> Result<Vec<Task>, StoreError> {
        let mut released = Vec::new();
        for task in self.load_all()?.tasks {
            if !held_by(&task, owner) {
                continue;
            }
            let result = self.modify(task.id, |task| {
                // Re-checked under the lock: it may have moved on since the listing.
                if !held_by(task, owner) {
                    return Err(Refusal::NotOwner {
                        id: task.id,
                        owner: task.owner.clone(),
                        who: owner.clone(),
                    }
                    .into());
                }
                task.status = Status::Pending;
                task.owner = None;
                task.notes
                    .push(format!("{}: {note}", crate::task::now_rfc3339()));
                Ok(())
            });
            match result {
                Ok(task) => released.push(task),
                Err(StoreError::Refused(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(released)
    }

    /// The owner `by` finished its task. A writing teammate's own finish is refused: its
    /// commits wait for review, and only their merge completes it (invariant 8).
    pub fn complete(
        &self,
        id: TaskId,
        by: Actor<'_>,
        result: Option<String>,
    ) -> Result<Task, StoreError> {
        let writes = matches!(by, Actor::Teammate { writes: true, .. });
        self.finish(id, by.name(), "completed", |task| {
            if writes {
                return Err(Refusal::NeedsReview { id: task.id }.into());
            }
            task.status = Status::Completed;
            if result.is_some() {
                task.result = result;
            }
            Ok(())
        })
    }

    /// A task of which nothing waits for review (its work added no commit, or was merged at
    /// once): crew's worker (never a tool) completes it as its owner after committing.
    pub fn complete_with_nothing_to_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> Result<Task, StoreError> {
        self.finish(id, who, "completed", |task| {
            task.status = Status::Completed;
            if result.is_some() {
                task.result = result;
            }
            Ok(())
        })
    }

    pub fn fail(&self, id: TaskId, who: &AgentName, reason: String) -> Result<Task, StoreError> {
        self.finish(id, who, "failed", |task| {
            task.status = Status::Failed;
            task.result = Some(reason);
            Ok(())
        })
    }

    pub(crate) fn finish(
        &self,
        id: TaskId,
        who: &AgentName,
        action: &'static str,
        apply: impl FnOnce(&mut Task) -> Result<(), StoreError>,
    ) -> Result<Task, StoreError> {
        self.modify(id, |task| {
            if task.status != Status::InProgress {
                return Err(Refusal::NotInProgress {
                    id: task.id,
                    status: task.status.to_string(),
                    action,
                }
                .into());
            }
            if task.owner.as_ref() != Some(who) {
                return Err(Refusal::NotOwner {
                    id: task.id,
                    owner: task.owner.clone(),
                    who: who.clone(),
                }
                .into());
            }
            apply(task)
        })
    }
}

/// What a non-waiting claim pass found.
#[derive(Debug)]
pub enum Attempt {
    Claimed(Box<Task>),
    /// Every candidate was checked and none could be claimed; the queue is empty.
    NoneLeft,
    /// Nothing claimed, but some candidates were locked by another claimer and are still queued.
    Contended,
}

/// Puts skipped ids back at the front, in their original order.
fn requeue(queue: &mut VecDeque<TaskId>, busy: Vec<TaskId>) {
    for id in busy.into_iter().rev() {
        queue.push_front(id);
    }
}

/// Whether `who` may take `task` as it stands, its blockers aside (checked by the store, which
/// knows them): not another's, pending, of a role that fits. Both backends' claims by id.
pub fn check_claim(task: &Task, who: Claimant<'_>) -> Result<(), StoreError> {
    if let Some(owner) = task.owner.as_ref().filter(|o| *o != who.name) {
        return Err(Refusal::AlreadyClaimed {
            id: task.id,
            owner: owner.clone(),
        }
        .into());
    }
    if task.status != Status::Pending {
        return Err(Refusal::NotPending {
            id: task.id,
            status: task.status.to_string(),
        }
        .into());
    }
    check_role(task, who)
}

/// What handing `task` to `to` (or to nobody) by `by` does: refused unless `by` steers, for a
/// completed task or one in review (its commits are on its teammate's branch: reassigning
/// would strand them), or for a role that does not fit; else the note it leaves, `None` when
/// nothing changes. Both backends' `assign`.
pub fn assignment(
    task: &Task,
    to: Option<Claimant<'_>>,
    by: Actor<'_>,
) -> Result<Option<String>, StoreError> {
    let by = by
        .steers()
        .then(|| by.name())
        .ok_or_else(|| Refusal::NotAllowed {
            id: task.id,
            who: by.name().clone(),
            field: "owner",
            rule: "only the lead or the person assigns tasks; claim_task takes one for yourself",
        })?;
    if task.status == Status::Completed {
        return Err(Refusal::AlreadyCompleted { id: task.id }.into());
    }
    if task.status == Status::Review {
        return Err(Refusal::InReview { id: task.id }.into());
    }
    if let Some(who) = to {
        check_role(task, who)?;
    }
    let new = to.map(|w| w.name);
    Ok(match (task.owner.as_ref(), new) {
        (old, new) if old == new && task.status != Status::Failed => None,
        (Some(old), Some(new)) if old != new => {
            Some(format!("reassigned from {old} to {new} by {by}"))
        }
        (_, Some(new)) => Some(format!("assigned to {new} by {by}")),
        (Some(old), None) => Some(format!("taken back from {old} by {by}")),
        (None, None) => Some(format!("put back to pending by {by}")),
    })
}

/// Claimed by `owner`, or assigned to it and not started.
fn held_by(task: &Task, owner: &AgentName) -> bool {
    matches!(task.status, Status::InProgress | Status::Pending)
        && task.owner.as_ref() == Some(owner)
}

/// A task with a `role` only goes to that role: refused with both roles named otherwise.
fn check_role(task: &Task, who: Claimant<'_>) -> Result<(), StoreError> {
    if role_fits(task, who) {
        return Ok(());
    }
    Err(Refusal::RoleMismatch {
        id: task.id,
        needed: task.role.clone().unwrap_or_default(),
        who: who.name.clone(),
        have: who.role.map(str::to_string),
    }
    .into())
}

fn role_fits(task: &Task, who: Claimant<'_>) -> bool {
    match &task.role {
        None => true,
        Some(role) => who.role == Some(role.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewTask;

    #[test]
    fn a_dead_workers_claimed_and_assigned_tasks_all_go_back_to_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::new(dir.path());
        for subject in ["claimed", "assigned", "someone else's"] {
            store
                .create(NewTask {
                    subject: subject.into(),
                    ..NewTask::default()
                })
                .unwrap();
        }
        let ghost_name: AgentName = "ghost".parse().unwrap();
        let ghost = Claimant {
            name: &ghost_name,
            role: None,
        };
        store.claim(TaskId(1), ghost).unwrap();
        store.assign(TaskId(2), Some(ghost), Actor::Person).unwrap();
        let bob = "bob".parse().unwrap();
        let other = Claimant {
            name: &bob,
            role: None,
        };
        store.claim(TaskId(3), other).unwrap();

        let released = store.release_orphaned(&ghost_name, "ghost died").unwrap();
        let ids: Vec<TaskId> = released.iter().map(|t| t.id).collect();
        assert_eq!(ids, [TaskId(1), TaskId(2)]);
        for id in [1, 2] {
            let task = store.read(TaskId(id)).unwrap();
            assert_eq!((task.status, task.owner), (Status::Pending, None));
            assert!(task.notes.last().unwrap().ends_with("ghost died"));
        }
        assert_eq!(store.read(TaskId(3)).unwrap().owner.as_deref(), Some("bob"));
    }
}
