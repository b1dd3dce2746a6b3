//! Who holds a task and what it says: a claim by id, a release by its owner or of a gone
//! agent's tasks, an assignment by the lead or the person, an edit. Each locks the task's row
//! (`FOR UPDATE`) and judges it with the file store's own rules (`claim::check_claim`,
//! `claim::assignment`, `tasks::check_may_edit`, `dag::find_cycle`), so both backends refuse
//! the same things in the same words.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::types::ToSql;

use crew_protocol::{AgentName, TaskId};
use crew_store::claim::{assignment, check_claim};
use crew_store::dag::find_cycle;
use crew_store::secrets::redact;
use crew_store::tasks::{check_may_edit, checked_subject, without_duplicates};
use crew_store::{Actor, Claimant, Limits, Refusal, Status, StoreError, Task, TaskPatch};

use crate::store::token;
use crate::tasks::{
    TASK_COLUMN_COUNT, TASK_COLUMNS, id_from_sql, id_to_sql, ids_to_sql, millis, notify_tasks,
    task_from_row,
};
use crate::{PgStore, PgStoreError};

/// A shared rule's refusal (they refuse, never fail otherwise) as this store's error.
fn ruled(e: StoreError) -> PgStoreError {
    match e {
        StoreError::Refused(r) => PgStoreError::Refused(r),
        StoreError::NoSuchTask(id) => PgStoreError::NoSuchTask(id),
        other => PgStoreError::BadRow {
            what: "task",
            value: String::new(),
            reason: other.to_string(),
        },
    }
}

/// Serialises edits of blockers: a cycle is found on the graph as it stands, so two edits
/// that each close half of one must not both pass (the file store takes a lock for it).
const STRUCTURE_LOCK: i64 = 0x6372_6577_7461_736b; // "crewtask"

impl PgStore {
    /// Claims task `id` for `who`, for `lease`. A task whose owner's lease passed counts as
    /// pending and unowned, as in `claim_next`.
    pub async fn claim(
        &self,
        id: TaskId,
        who: Claimant<'_>,
        lease: Duration,
    ) -> Result<Task, PgStoreError> {
        let id_sql = id_to_sql(id)?;
        let key = token();
        let lease_ms = millis(lease);
        let retried = AtomicBool::new(false);
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let row = tx
                .query_opt(
                    &format!(
                        "SELECT {TASK_COLUMNS}, (status = 'in_progress' AND lease_until < now()),
                             claim_token
                         FROM tasks WHERE id = $1 FOR UPDATE"
                    ),
                    &[&id_sql],
                )
                .await?
                .ok_or(PgStoreError::NoSuchTask(id))?;
            let mut task = task_from_row(&row)?;
            let lapsed: bool = row.try_get(TASK_COLUMN_COUNT)?;
            let token_now: Option<String> = row.try_get(TASK_COLUMN_COUNT + 1)?;
            // A retry after a lost reply: the first try's claim committed.
            if retried.swap(true, Ordering::Relaxed) && token_now.as_deref() == Some(&key) {
                return Ok(task);
            }
            let lapsed_owner = if lapsed { task.owner.take() } else { None };
            if lapsed {
                task.status = Status::Pending;
            }
            check_claim(&task, who).map_err(ruled)?;
            let open: Vec<i64> = tx
                .query(
                    "SELECT b.id FROM unnest($1::bigint[]) AS b(id) LEFT JOIN tasks d ON d.id = b.id
                     WHERE d.status IS DISTINCT FROM 'completed' ORDER BY b.id",
                    &[&ids_to_sql(&task.blocked_by)?],
                )
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if !open.is_empty() {
                return Err(Refusal::Blocked {
                    id,
                    by: open
                        .into_iter()
                        .map(id_from_sql)
                        .collect::<Result<_, _>>()?,
                }
                .into());
            }
            let note =
                lapsed_owner.map(|old| format!("lease of {old} expired; claimed by {}", who.name));
            let params: [&(dyn ToSql + Sync); 5] =
                [&id_sql, &who.name.as_str(), &key, &lease_ms, &note];
            let row = tx
                .query_one(
                    &format!(
                        "UPDATE tasks SET status = 'in_progress', owner = $2, claim_token = $3,
                             lease_until = now() + $4 * interval '1 millisecond',
                             updated_at = now(),
                             notes = CASE WHEN $5::text IS NULL THEN notes ELSE notes || $5 END
                         WHERE id = $1 RETURNING {TASK_COLUMNS}"
                    ),
                    &params,
                )
                .await?;
            let task = task_from_row(&row)?;
            tx.commit().await?;
            Ok(task)
        })
        .await
    }

    /// The owner gives its in-progress task back: `pending`, no owner, no lease.
    pub async fn release(&self, id: TaskId, who: &AgentName) -> Result<Task, PgStoreError> {
        let id_sql = id_to_sql(id)?;
        let retried = AtomicBool::new(false);
        self.retry(|| async {
            let again = retried.swap(true, Ordering::Relaxed);
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let released = tx
                .query_opt(
                    &format!(
                        "UPDATE tasks SET status = 'pending', owner = NULL, lease_until = NULL,
                             claim_token = NULL, updated_at = now()
                         WHERE id = $1 AND owner = $2 AND status = 'in_progress'
                         RETURNING {TASK_COLUMNS}"
                    ),
                    &[&id_sql, &who.as_str()],
                )
                .await?;
            if let Some(row) = released {
                notify_tasks(&tx).await?;
                let task = task_from_row(&row)?;
                tx.commit().await?;
                return Ok(task);
            }
            let task = locked(&tx, id).await?;
            if again && task.status == Status::Pending && task.owner.is_none() {
                return Ok(task);
            }
            Err(if task.status != Status::InProgress {
                Refusal::NotInProgress {
                    id,
                    status: task.status.to_string(),
                    action: "released",
                }
            } else {
                Refusal::NotOwner {
                    id,
                    owner: task.owner,
                    who: who.clone(),
                }
            }
            .into())
        })
        .await
    }

    /// Every task `owner` holds (in progress, or assigned and pending) back to `pending` with
    /// no owner and `note` (stamped as the file store stamps it).
    pub async fn release_orphaned(
        &self,
        owner: &AgentName,
        note: &str,
    ) -> Result<Vec<Task>, PgStoreError> {
        let note = redact(note).into_owned();
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let rows = tx
                .query(
                    &format!(
                        "UPDATE tasks SET status = 'pending', owner = NULL, lease_until = NULL,
                             claim_token = NULL, updated_at = now(),
                             notes = notes || (crew_ts(now()) || ': ' || $2)
                         WHERE owner = $1 AND status IN ('in_progress', 'pending')
                         RETURNING {TASK_COLUMNS}"
                    ),
                    &[&owner.as_str(), &note],
                )
                .await?;
            if !rows.is_empty() {
                notify_tasks(&tx).await?;
            }
            let mut tasks = rows
                .iter()
                .map(task_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            tx.commit().await?;
            tasks.sort_by_key(|t| t.id);
            Ok(tasks)
        })
        .await
    }

    /// Hands task `id` to `to`, or to nobody, as `by` (the lead or the person).
    pub async fn assign(
        &self,
        id: TaskId,
        to: Option<Claimant<'_>>,
        by: Actor<'_>,
    ) -> Result<Task, PgStoreError> {
        let id_sql = id_to_sql(id)?;
        let owner = to.map(|w| w.name.as_str());
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let task = locked(&tx, id).await?;
            let Some(note) = assignment(&task, to, by).map_err(ruled)? else {
                return Ok(task);
            };
            let row = tx
                .query_one(
                    &format!(
                        "UPDATE tasks SET status = 'pending', owner = $2, lease_until = NULL,
                             claim_token = NULL, updated_at = now(),
                             notes = notes || (crew_ts(now()) || ': ' || $3)
                         WHERE id = $1 RETURNING {TASK_COLUMNS}"
                    ),
                    &[&id_sql, &owner, &note],
                )
                .await?;
            notify_tasks(&tx).await?;
            let task = task_from_row(&row)?;
            tx.commit().await?;
            Ok(task)
        })
        .await
    }

    /// Edits task `id` as `by` may: its subject and description within the team's `[limits]`,
    /// its blockers (each must exist; no cycle).
    pub async fn update(
        &self,
        id: TaskId,
        patch: TaskPatch,
        by: Actor<'_>,
    ) -> Result<Task, PgStoreError> {
        let limits = self
            .team()
            .await?
            .map_or_else(Limits::default, |t| t.limits);
        let subject = patch
            .subject
            .as_deref()
            .map(|s| checked_subject::<PgStoreError>(s, &limits))
            .transpose()?;
        if let Some(description) = &patch.description {
            limits.check_description(description)?;
        }
        let blockers = patch.blocked_by.as_deref().map(without_duplicates);
        let id_sql = id_to_sql(id)?;
        let subject = subject.map(|s| redact(&s).into_owned());
        let description = patch.description.as_deref().map(|d| redact(d).into_owned());
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            if blockers.is_some() {
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&STRUCTURE_LOCK])
                    .await?;
            }
            let task = locked(&tx, id).await?;
            check_may_edit(&task, &patch, by).map_err(ruled)?;
            if let Some(blockers) = &blockers {
                let all = all_in(&tx).await?;
                if let Some(&unknown) = blockers.iter().find(|b| !all.iter().any(|t| t.id == **b)) {
                    return Err(Refusal::UnknownBlocker { id, unknown }.into());
                }
                if let Some(cycle) = find_cycle(&all, id, blockers) {
                    return Err(Refusal::WouldCycle { cycle }.into());
                }
            }
            let blockers_sql = blockers.as_deref().map(ids_to_sql).transpose()?;
            let params: [&(dyn ToSql + Sync); 4] = [&id_sql, &subject, &description, &blockers_sql];
            let row = tx
                .query_one(
                    &format!(
                        "UPDATE tasks SET subject = coalesce($2, subject),
                             description = coalesce($3, description),
                             blocked_by = coalesce($4, blocked_by), updated_at = now()
                         WHERE id = $1 RETURNING {TASK_COLUMNS}"
                    ),
                    &params,
                )
                .await?;
            if blockers.is_some() {
                // Fewer blockers may make it claimable now.
                notify_tasks(&tx).await?;
            }
            let task = task_from_row(&row)?;
            tx.commit().await?;
            Ok(task)
        })
        .await
    }
}

/// Task `id`, its row locked until the transaction ends.
async fn locked(tx: &deadpool_postgres::Transaction<'_>, id: TaskId) -> Result<Task, PgStoreError> {
    let row = tx
        .query_opt(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1 FOR UPDATE"),
            &[&id_to_sql(id)?],
        )
        .await?
        .ok_or(PgStoreError::NoSuchTask(id))?;
    task_from_row(&row)
}

/// Every task, as this transaction sees them.
async fn all_in(tx: &deadpool_postgres::Transaction<'_>) -> Result<Vec<Task>, PgStoreError> {
    tx.query(
        &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY id"),
        &[],
    )
    .await?
    .iter()
    .map(task_from_row)
    .collect()
}
