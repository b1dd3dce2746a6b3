//! Tasks as rows. A claim is one call of the schema's `crew_claim`, one round trip: pick a task
//! this claimant may take whose blockers are all completed, lock it with `FOR UPDATE SKIP
//! LOCKED` (a row another claimer holds is passed over, a row another claimer just took fails
//! the re-check), and set owner, `in_progress` and a lease. The lease is renewed by the owner's heartbeat; once it passes,
//! the task is claimable again, by anyone it fits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crew_protocol::{AgentName, TaskId};
use crew_store::secrets::redact;
use crew_store::{
    Claimant, Limits, NewTask, Refusal, ReviewerVerdict, Status, Task, TaskCommits, TaskUsage,
};

use crate::json::{from_json, to_json};
use crate::store::token;
use crate::wakeups::notify_after;
use crate::{PgStore, PgStoreError};

/// The columns `task_from_row` reads, in its order.
pub(crate) const TASK_COLUMNS: &str = "id, subject, description, status, owner, role, blocked_by, \
     result, notes, crew_ts(created_at), crew_ts(updated_at), commits, review, usage";

/// How many columns `TASK_COLUMNS` names: what a query selects after them starts there.
pub(crate) const TASK_COLUMN_COUNT: usize = 14;

/// Wakes the `LISTEN`ers when a task may have become claimable (sent on commit).
pub(crate) const TASKS_CHANNEL: &str = "crew_tasks";

impl PgStore {
    /// Adds a pending task, its fields checked as on files (`NewTask::checked`, with the
    /// published team's `[limits]`, the defaults before one is published); every blocker must
    /// exist.
    pub async fn create_task(&self, new: NewTask) -> Result<Task, PgStoreError> {
        let limits = self
            .team()
            .await?
            .map_or_else(Limits::default, |t| t.limits);
        let new = new.checked::<PgStoreError>(&limits)?;
        // A key this process read is stored redacted, as every task file is.
        let (subject, description) = (redact(&new.subject), redact(&new.description));
        let key = token();
        let blockers = ids_to_sql(&new.blocked_by)?;
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // A retry after a lost reply: the first try committed.
            let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE token = $1");
            if let Some(row) = tx.query_opt(&sql, &[&key]).await? {
                return task_from_row(&row);
            }
            let known: Vec<i64> = tx
                .query("SELECT id FROM tasks WHERE id = ANY($1)", &[&blockers])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            if let Some(unknown) = blockers.iter().find(|b| !known.contains(b)) {
                return Err(Refusal::UnknownBlocker {
                    id: TaskId(next_id(&tx).await?),
                    unknown: id_from_sql(*unknown)?,
                }
                .into());
            }
            let sql = format!(
                "INSERT INTO tasks (token, subject, description, role, blocked_by)
                 VALUES ($1, $2, $3, $4, $5) RETURNING {TASK_COLUMNS}"
            );
            let row = tx
                .query_one(&sql, &[&key, &subject, &description, &new.role, &blockers])
                .await?;
            notify_tasks(&tx).await?;
            tx.commit().await?;
            task_from_row(&row)
        })
        .await
    }

    pub async fn task(&self, id: TaskId) -> Result<Task, PgStoreError> {
        self.retry(|| async { read_task(&self.client().await?, id).await })
            .await
    }

    /// Every task, by id.
    pub async fn tasks(&self) -> Result<Vec<Task>, PgStoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY id");
        self.retry(|| async {
            let rows = self.client().await?.query(&sql, &[]).await?;
            rows.iter().map(task_from_row).collect()
        })
        .await
    }

    /// Claims a task assigned to `who` if one is ready, else the oldest claimable one that
    /// fits its role, for `lease`. Never one with an unfinished blocker, never one another
    /// claimer holds; a task whose owner's lease passed counts as claimable.
    pub async fn claim_next(
        &self,
        who: Claimant<'_>,
        lease: Duration,
    ) -> Result<Task, PgStoreError> {
        let key = token();
        let name = who.name.as_str();
        let lease_ms = millis(lease);
        let claim = format!("SELECT {TASK_COLUMNS} FROM crew_claim($1, $2, $3, $4)");
        let mine = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE claim_token = $1");
        let retried = AtomicBool::new(false);
        self.retry(|| async {
            let client = self.client().await?;
            // A retry after a lost reply: the first try's claim may have committed.
            if retried.swap(true, Ordering::Relaxed)
                && let Some(row) = client
                    .query_opt(&client.prepare_cached(&mine).await?, &[&key])
                    .await?
            {
                return task_from_row(&row);
            }
            let params: [&(dyn ToSql + Sync); 4] = [&name, &who.role, &key, &lease_ms];
            let claim = client.prepare_cached(&claim).await?;
            match client.query_opt(&claim, &params).await? {
                Some(row) => task_from_row(&row),
                None => Err(Refusal::NothingClaimable {
                    who: who.name.clone(),
                }
                .into()),
            }
        })
        .await
    }

    /// Renews the lease on every task `who` has in progress; returns how many it holds.
    pub async fn heartbeat(&self, who: &AgentName, lease: Duration) -> Result<u64, PgStoreError> {
        let lease_ms = millis(lease);
        self.retry(|| async {
            Ok(self
                .client()
                .await?
                .execute(
                    "UPDATE tasks SET lease_until = now() + $2 * interval '1 millisecond'
                     WHERE owner = $1 AND status = 'in_progress'",
                    &[&who.as_str(), &lease_ms],
                )
                .await?)
        })
        .await
    }

    /// The owner finishes its task. Refused unless `who` holds it in progress (a host whose
    /// lease passed and whose task went to another cannot complete it). A result of `None`
    /// keeps the one the task had.
    pub async fn complete(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> Result<Task, PgStoreError> {
        self.finish(id, who, Status::Completed, result, None, false)
            .await
    }

    /// The owner's task of which nothing waits for review: `completed`. With its own role a
    /// writing teammate is refused even so (only the person's merge completes its tasks, and
    /// "nothing changed" would be its host's word alone).
    pub async fn complete_with_nothing_to_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> Result<Task, PgStoreError> {
        self.finish(id, who, Status::Completed, result, None, false)
            .await
    }

    /// Adds one job's tokens and cost to what task `id` used, once: a retry after a lost reply
    /// adds nothing again.
    pub async fn add_usage(
        &self,
        id: TaskId,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> Result<Task, PgStoreError> {
        self.add_usage_once(id, uuid::Uuid::now_v7(), tokens, cost_micros)
            .await
    }

    /// `add_usage` under the caller's `key`: for a caller that retries on its own, past the
    /// store's retries, the same key adds the job's usage only once.
    pub async fn add_usage_once(
        &self,
        id: TaskId,
        key: uuid::Uuid,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> Result<Task, PgStoreError> {
        let id_sql = id_to_sql(id)?;
        let key = key.simple().to_string();
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let row = tx
                .query_opt(
                    "SELECT usage, $2 = ANY(usage_keys) FROM tasks WHERE id = $1 FOR UPDATE",
                    &[&id_sql, &key],
                )
                .await?
                .ok_or(PgStoreError::NoSuchTask(id))?;
            if row.try_get::<_, bool>(1)? {
                // The first try committed and its reply was lost.
                let row = tx
                    .query_one(
                        &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
                        &[&id_sql],
                    )
                    .await?;
                return task_from_row(&row);
            }
            let before: Option<TaskUsage> = row
                .try_get::<_, Option<serde_json::Value>>(0)?
                .map(|u| from_json("task usage", u))
                .transpose()?;
            let usage = to_json(
                "task usage",
                &id.to_string(),
                &TaskUsage::added(before, tokens, cost_micros),
            )?;
            let row = tx
                .query_one(
                    &format!(
                        "UPDATE tasks SET usage = $2, usage_keys = usage_keys || $3::text,
                             updated_at = now()
                         WHERE id = $1
                         RETURNING {TASK_COLUMNS}"
                    ),
                    &[&id_sql, &usage, &key],
                )
                .await?;
            let task = task_from_row(&row)?;
            tx.commit().await?;
            Ok(task)
        })
        .await
    }

    /// The owner gives up on its task: `failed`, with `reason` as its result.
    pub async fn fail(
        &self,
        id: TaskId,
        who: &AgentName,
        reason: String,
    ) -> Result<Task, PgStoreError> {
        self.finish(id, who, Status::Failed, Some(reason), None, false)
            .await
    }

    /// The owner finished its task and its commits wait for review.
    pub async fn submit_for_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: String,
        commits: TaskCommits,
    ) -> Result<Task, PgStoreError> {
        self.finish(id, who, Status::Review, Some(result), Some(commits), false)
            .await
    }

    /// Moves `who`'s in-progress task to `to` (dropping its lease) in one statement, so one
    /// round trip; a completion notifies on its commit (its dependents may be claimable now).
    /// Refused as the file store refuses (`TaskStore::finish`), in its order: not in progress,
    /// not the owner's, then (`needs_review`: a writing teammate completing) not without review.
    pub(crate) async fn finish(
        &self,
        id: TaskId,
        who: &AgentName,
        to: Status,
        result: Option<String>,
        commits: Option<TaskCommits>,
        needs_review: bool,
    ) -> Result<Task, PgStoreError> {
        let id_sql = id_to_sql(id)?;
        let result = result.map(|r| redact(&r).into_owned());
        let commits = commits
            .map(|c| to_json("task commits", &id.to_string(), &c))
            .transpose()?;
        let sql = format!(
            "UPDATE tasks SET status = $3, result = coalesce($4, result),
                 commits = coalesce($5, commits), lease_until = NULL, updated_at = now()
             WHERE id = $1 AND owner = $2 AND status = 'in_progress' AND NOT $6
             RETURNING {TASK_COLUMNS}"
        );
        let action = match to {
            Status::Completed => "completed",
            Status::Failed => "failed",
            _ => "submitted for review",
        };
        let retried = AtomicBool::new(false);
        self.retry(|| async {
            let again = retried.swap(true, Ordering::Relaxed);
            let client = self.client().await?;
            let update = client.prepare_cached(&sql).await?;
            let params: [&(dyn ToSql + Sync); 6] = [
                &id_sql,
                &who.as_str(),
                &to.as_str(),
                &result,
                &commits,
                &needs_review,
            ];
            loop {
                let updated = client.query_opt(&update, &params);
                // A completion may unblock tasks: waiters are woken.
                let updated = if to == Status::Completed {
                    let (updated, woke) = notify_after(&client, TASKS_CHANNEL, "", updated).await;
                    let updated = updated?;
                    woke?;
                    updated
                } else {
                    updated.await?
                };
                if let Some(row) = updated {
                    return task_from_row(&row);
                }
                let task = read_task(&client, id).await?;
                // A retry after a lost reply: the first try did it. Only then: a second
                // finish of a finished task is refused, as on files.
                if again && task.status == to && task.owner.as_ref() == Some(who) {
                    return Ok(task);
                }
                if task.status != Status::InProgress {
                    return Err(Refusal::NotInProgress {
                        id,
                        status: task.status.to_string(),
                        action,
                    }
                    .into());
                }
                if task.owner.as_ref() != Some(who) {
                    return Err(Refusal::NotOwner {
                        id,
                        owner: task.owner,
                        who: who.clone(),
                    }
                    .into());
                }
                if needs_review {
                    return Err(Refusal::NeedsReview { id }.into());
                }
                // It became `who`'s in progress between the update and the read: try again.
            }
        })
        .await
    }

    /// Puts every task whose lease passed back in the queue, unowned, with a note; returns
    /// their ids. Claims already treat such tasks as claimable: this makes it visible.
    pub async fn release_expired(&self) -> Result<Vec<TaskId>, PgStoreError> {
        self.retry(|| async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let rows = tx
                .query(
                    "UPDATE tasks SET status = 'pending', owner = NULL, lease_until = NULL,
                         updated_at = now(),
                         notes = notes || ('lease of ' || owner || ' expired; released')
                     WHERE status = 'in_progress' AND lease_until < now()
                     RETURNING id",
                    &[],
                )
                .await?;
            if !rows.is_empty() {
                notify_tasks(&tx).await?;
            }
            tx.commit().await?;
            rows.iter().map(|r| id_from_sql(r.get(0))).collect()
        })
        .await
    }
}

/// Task `id`, read on a connection the caller already holds: an operation never waits for a
/// second connection while holding one (a pool of N shared by more than N callers would
/// deadlock, every caller holding one and waiting for another).
pub(crate) async fn read_task(
    client: &deadpool_postgres::Object,
    id: TaskId,
) -> Result<Task, PgStoreError> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1");
    let select = client.prepare_cached(&sql).await?;
    match client.query_opt(&select, &[&id_to_sql(id)?]).await? {
        Some(row) => task_from_row(&row),
        None => Err(PgStoreError::NoSuchTask(id)),
    }
}

pub(crate) async fn notify_tasks(
    tx: &deadpool_postgres::Transaction<'_>,
) -> Result<(), PgStoreError> {
    tx.execute("SELECT pg_notify($1, '')", &[&TASKS_CHANNEL])
        .await?;
    Ok(())
}

/// The id the next task would get, to name a refused one.
async fn next_id(tx: &deadpool_postgres::Transaction<'_>) -> Result<u64, PgStoreError> {
    let row = tx
        .query_one("SELECT coalesce(max(id), 0) + 1 FROM tasks", &[])
        .await?;
    id_from_sql(row.get(0)).map(|id| id.0)
}

pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn id_to_sql(id: TaskId) -> Result<i64, PgStoreError> {
    i64::try_from(id.0).map_err(|e| PgStoreError::BadRow {
        what: "task id",
        value: id.to_string(),
        reason: e.to_string(),
    })
}

pub(crate) fn ids_to_sql(ids: &[TaskId]) -> Result<Vec<i64>, PgStoreError> {
    ids.iter().map(|id| id_to_sql(*id)).collect()
}

pub(crate) fn id_from_sql(id: i64) -> Result<TaskId, PgStoreError> {
    u64::try_from(id)
        .map(TaskId)
        .map_err(|e| PgStoreError::BadRow {
            what: "task id",
            value: id.to_string(),
            reason: e.to_string(),
        })
}

pub(crate) fn name_from_sql(what: &'static str, name: &str) -> Result<AgentName, PgStoreError> {
    AgentName::parse(name).map_err(|e| PgStoreError::BadRow {
        what,
        value: name.to_string(),
        reason: e.to_string(),
    })
}

pub(crate) fn task_from_row(row: &Row) -> Result<Task, PgStoreError> {
    let status: String = row.try_get(3)?;
    let status: Status = serde_json::from_value(serde_json::Value::String(status.clone()))
        .map_err(|e| PgStoreError::BadRow {
            what: "task status",
            value: status,
            reason: e.to_string(),
        })?;
    let owner: Option<String> = row.try_get(4)?;
    let commits: Option<TaskCommits> = row
        .try_get::<_, Option<serde_json::Value>>(11)?
        .map(|c| from_json("task commits", c))
        .transpose()?;
    let review: Option<ReviewerVerdict> = row
        .try_get::<_, Option<serde_json::Value>>(12)?
        .map(|v| from_json("task review", v))
        .transpose()?;
    let usage: Option<TaskUsage> = row
        .try_get::<_, Option<serde_json::Value>>(13)?
        .map(|u| from_json("task usage", u))
        .transpose()?;
    let blocked_by: Vec<i64> = row.try_get(6)?;
    Ok(Task {
        id: id_from_sql(row.try_get(0)?)?,
        subject: row.try_get(1)?,
        description: row.try_get(2)?,
        status,
        owner: owner.map(|o| name_from_sql("task owner", &o)).transpose()?,
        role: row.try_get(5)?,
        blocked_by: blocked_by
            .into_iter()
            .map(id_from_sql)
            .collect::<Result<_, _>>()?,
        result: row.try_get(7)?,
        notes: row.try_get(8)?,
        created_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
        worktree: None,
        commits: commits.map(Box::new),
        review: review.map(Box::new),
        usage,
        extra: serde_json::Map::new(),
    })
}
