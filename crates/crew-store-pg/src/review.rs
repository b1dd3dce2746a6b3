//! The review state on PostgreSQL, as crew-store's `review` keeps it on files: where a task's
//! commits start, a reviewer agent's verdict, and the person's merge, send-back or discard.
//! The database lets only the person (its owner) move a task out of review (schema 4).

use std::sync::atomic::{AtomicBool, Ordering};

use tokio_postgres::types::ToSql;

use crew_protocol::{AgentName, TaskId};
use crew_store::task::now_rfc3339;
use crew_store::{Refusal, ReviewerVerdict, Status, Task, TaskCommits};

use crate::json::to_json;
use crate::tasks::{TASK_COLUMNS, id_to_sql, read_task, task_from_row};
use crate::{PgStore, PgStoreError};

impl PgStore {
    /// Records where the task's commits start, the first time it starts on `branch` (a task
    /// sent back keeps its first start; one that changed hands starts afresh).
    pub async fn record_start(
        &self,
        id: TaskId,
        branch: &str,
        start: &str,
    ) -> Result<Task, PgStoreError> {
        let commits = to_json(
            "task commits",
            &id.to_string(),
            &TaskCommits {
                branch: branch.to_string(),
                start: start.to_string(),
                head: start.to_string(),
            },
        )?;
        let sql = format!(
            "UPDATE tasks SET updated_at = now(), commits = CASE
                 WHEN commits IS NULL OR commits->>'branch' IS DISTINCT FROM $2 THEN $3
                 ELSE commits END
             WHERE id = $1 RETURNING {TASK_COLUMNS}"
        );
        let id_sql = id_to_sql(id)?;
        self.retry(|| async {
            let client = self.client().await?;
            let params: [&(dyn ToSql + Sync); 3] = [&id_sql, &branch, &commits];
            match client.query_opt(&sql, &params).await? {
                Some(row) => task_from_row(&row),
                None => Err(PgStoreError::NoSuchTask(id)),
            }
        })
        .await
    }

    /// A reviewer agent's verdict on the task's commits, while it is in review.
    pub async fn record_verdict(
        &self,
        id: TaskId,
        verdict: ReviewerVerdict,
    ) -> Result<Task, PgStoreError> {
        let verdict = to_json("task review", &id.to_string(), &verdict)?;
        self.while_in_review(id, "review = $2::jsonb", &verdict, None)
            .await
    }

    /// The task's commits are in the base branch: it is `completed`.
    pub async fn mark_merged(
        &self,
        id: TaskId,
        by: &AgentName,
        how: &str,
    ) -> Result<Task, PgStoreError> {
        let note = format!("{}: merged by {by} ({how})", now_rfc3339());
        self.while_in_review(
            id,
            "status = 'completed', notes = notes || $2::text",
            &note,
            Some(Status::Completed),
        )
        .await
    }

    /// Back to the same teammate with `note`: pending and still assigned to it, so its next
    /// claim takes it again.
    pub async fn send_back(
        &self,
        id: TaskId,
        by: &AgentName,
        note: &str,
    ) -> Result<Task, PgStoreError> {
        let note = format!("{}: sent back by {by}: {note}", now_rfc3339());
        self.while_in_review(
            id,
            "status = 'pending', notes = notes || $2::text",
            &note,
            Some(Status::Pending),
        )
        .await
    }

    /// The task's commits were taken back out: `failed` with `reason`.
    pub async fn discard_review(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> Result<Task, PgStoreError> {
        let result = format!("discarded by {by}: {reason}");
        let note = format!("{}: {result}", now_rfc3339());
        let both = serde_json::json!([result, note]);
        self.while_in_review(
            id,
            "status = 'failed', result = $2::jsonb->>0, notes = notes || ($2::jsonb->>1)",
            &both,
            Some(Status::Failed),
        )
        .await
    }

    /// Applies `set` (its one parameter `$2` = `value`) to the task only while it is in
    /// review. `leaves_for`: the status `set` moves it to, so a retry after a lost reply
    /// knows the first try did it (a verdict stays in review and may simply apply again).
    async fn while_in_review<V: ToSql + Sync>(
        &self,
        id: TaskId,
        set: &str,
        value: &V,
        leaves_for: Option<Status>,
    ) -> Result<Task, PgStoreError> {
        let sql = format!(
            "UPDATE tasks SET {set}, updated_at = now()
             WHERE id = $1 AND status = 'review' RETURNING {TASK_COLUMNS}"
        );
        let id_sql = id_to_sql(id)?;
        let retried = AtomicBool::new(false);
        self.retry(|| async {
            let again = retried.swap(true, Ordering::Relaxed);
            let client = self.client().await?;
            let params: [&(dyn ToSql + Sync); 2] = [&id_sql, value];
            if let Some(row) = client.query_opt(&sql, &params).await? {
                return task_from_row(&row);
            }
            let task = read_task(&client, id).await?;
            if again && leaves_for.as_ref() == Some(&task.status) {
                return Ok(task);
            }
            Err(Refusal::NotInReview {
                id,
                status: task.status.to_string(),
            }
            .into())
        })
        .await
    }
}
