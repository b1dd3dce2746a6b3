//! The PostgreSQL backend of crew-store's `TeamStore`. A claim holds its task for the store's
//! lease (`PgStore::with_lease`); the inbox's cursor is its owner's (`reader` = `inbox`), as on
//! files, where each inbox has one cursor.

use std::time::Duration;

use crew_protocol::{AgentName, TaskId};
use crew_store::{
    Actor, AgentStatus, BackendError, Claimant, Draft, Memory, MemoryDraft, MemoryScope, Message,
    NewTask, Refusal, RequestInfo, ReviewerVerdict, Task, TaskCommits, TaskPatch, TeamStore,
};

use crate::{PgStore, PgStoreError, Position};

impl BackendError for PgStoreError {
    fn refusal(&self) -> Option<&Refusal> {
        match self {
            PgStoreError::Refused(r) => Some(r),
            _ => None,
        }
    }

    fn no_such_task(&self) -> Option<TaskId> {
        match self {
            PgStoreError::NoSuchTask(id) => Some(*id),
            _ => None,
        }
    }

    fn into_store_error(self) -> crew_store::StoreError {
        match self {
            PgStoreError::Refused(r) => crew_store::StoreError::Refused(r),
            PgStoreError::NoSuchTask(id) => crew_store::StoreError::NoSuchTask(id),
            // The database's own refusal is a refusal like the protocol's: the caller reports
            // it and goes on, as with any other.
            PgStoreError::NotPermitted(why) => {
                crew_store::StoreError::Refused(Refusal::NotPermitted(why))
            }
            other => crew_store::StoreError::Backend(Box::new(other)),
        }
    }
}

impl TeamStore for PgStore {
    type Error = PgStoreError;
    type Position = Position;

    async fn create_task(&self, new: NewTask) -> Result<Task, PgStoreError> {
        PgStore::create_task(self, new).await
    }

    async fn task(&self, id: TaskId) -> Result<Task, PgStoreError> {
        PgStore::task(self, id).await
    }

    async fn tasks(&self) -> Result<Vec<Task>, PgStoreError> {
        PgStore::tasks(self).await
    }

    async fn claim_next(&self, who: Claimant<'_>) -> Result<Task, PgStoreError> {
        PgStore::claim_next(self, who, self.lease()).await
    }

    async fn claim(&self, id: TaskId, who: Claimant<'_>) -> Result<Task, PgStoreError> {
        PgStore::claim(self, id, who, self.lease()).await
    }

    async fn complete_with_nothing_to_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> Result<Task, PgStoreError> {
        PgStore::complete_with_nothing_to_review(self, id, who, result).await
    }

    async fn add_usage(
        &self,
        id: TaskId,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> Result<Task, PgStoreError> {
        PgStore::add_usage(self, id, tokens, cost_micros).await
    }

    async fn release(&self, id: TaskId, who: &AgentName) -> Result<Task, PgStoreError> {
        PgStore::release(self, id, who).await
    }

    async fn release_orphaned(
        &self,
        owner: &AgentName,
        note: &str,
    ) -> Result<Vec<Task>, PgStoreError> {
        PgStore::release_orphaned(self, owner, note).await
    }

    async fn assign(
        &self,
        id: TaskId,
        to: Option<Claimant<'_>>,
        by: Actor<'_>,
    ) -> Result<Task, PgStoreError> {
        PgStore::assign(self, id, to, by).await
    }

    async fn update(
        &self,
        id: TaskId,
        patch: TaskPatch,
        by: Actor<'_>,
    ) -> Result<Task, PgStoreError> {
        PgStore::update(self, id, patch, by).await
    }

    async fn complete(
        &self,
        id: TaskId,
        by: Actor<'_>,
        result: Option<String>,
    ) -> Result<Task, PgStoreError> {
        // A writing teammate's task completes only through review (invariant 8).
        let writes = matches!(by, Actor::Teammate { writes: true, .. });
        self.finish(
            id,
            by.name(),
            crew_store::Status::Completed,
            result,
            None,
            writes,
        )
        .await
    }

    async fn fail(
        &self,
        id: TaskId,
        who: &AgentName,
        reason: String,
    ) -> Result<Task, PgStoreError> {
        PgStore::fail(self, id, who, reason).await
    }

    async fn submit_for_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: String,
        commits: TaskCommits,
    ) -> Result<Task, PgStoreError> {
        PgStore::submit_for_review(self, id, who, result, commits).await
    }

    async fn send(&self, draft: Draft) -> Result<Message, PgStoreError> {
        PgStore::send(self, draft).await
    }

    async fn inbox(&self, inbox: &AgentName) -> Result<Vec<Message>, PgStoreError> {
        PgStore::inbox(self, inbox).await
    }

    async fn unread(
        &self,
        inbox: &AgentName,
        limit: usize,
    ) -> Result<Vec<(Position, Message)>, PgStoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        PgStore::unread(self, inbox, inbox, limit).await
    }

    async fn mark_read(&self, inbox: &AgentName, upto: Position) -> Result<(), PgStoreError> {
        PgStore::mark_read(self, inbox, inbox, upto).await
    }

    async fn requests(&self, default_timeout: Duration) -> Result<Vec<RequestInfo>, PgStoreError> {
        PgStore::requests(self, default_timeout).await
    }

    async fn respond(
        &self,
        request_id: &str,
        who: &AgentName,
        approve: bool,
        note: Option<String>,
        default_timeout: Duration,
    ) -> Result<Message, PgStoreError> {
        PgStore::respond(self, request_id, who, approve, note, default_timeout).await
    }

    async fn write_status(&self, status: &AgentStatus) -> Result<(), PgStoreError> {
        PgStore::write_status(self, status).await
    }

    async fn agent_status(&self, name: &AgentName) -> Result<Option<AgentStatus>, PgStoreError> {
        PgStore::agent_status(self, name).await
    }

    async fn record_start(
        &self,
        id: TaskId,
        branch: &str,
        start: &str,
    ) -> Result<Task, PgStoreError> {
        PgStore::record_start(self, id, branch, start).await
    }

    async fn record_verdict(
        &self,
        id: TaskId,
        verdict: ReviewerVerdict,
    ) -> Result<Task, PgStoreError> {
        PgStore::record_verdict(self, id, verdict).await
    }

    async fn mark_merged(
        &self,
        id: TaskId,
        by: &AgentName,
        how: &str,
    ) -> Result<Task, PgStoreError> {
        PgStore::mark_merged(self, id, by, how).await
    }

    async fn send_back(
        &self,
        id: TaskId,
        by: &AgentName,
        note: &str,
    ) -> Result<Task, PgStoreError> {
        PgStore::send_back(self, id, by, note).await
    }

    async fn discard_review(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> Result<Task, PgStoreError> {
        PgStore::discard_review(self, id, by, reason).await
    }

    async fn write_memory(
        &self,
        who: &AgentName,
        draft: &MemoryDraft,
    ) -> Result<bool, PgStoreError> {
        PgStore::write_memory(self, who, draft).await
    }

    async fn memory(
        &self,
        who: &AgentName,
        scope: Option<MemoryScope>,
        name: &str,
    ) -> Result<Memory, PgStoreError> {
        PgStore::memory(self, who, scope, name).await
    }

    async fn forget_memory(
        &self,
        who: &AgentName,
        scope: MemoryScope,
        name: &str,
    ) -> Result<(), PgStoreError> {
        PgStore::forget_memory(self, who, scope, name).await
    }

    async fn memories(
        &self,
        who: &AgentName,
        scope: MemoryScope,
    ) -> Result<Vec<Memory>, PgStoreError> {
        PgStore::memories(self, who, scope).await
    }

    async fn keep_conversation(
        &self,
        who: &AgentName,
        key: &str,
        at: usize,
        messages: &[serde_json::Value],
    ) -> Result<(), PgStoreError> {
        PgStore::keep_conversation(self, who, key, at, messages).await
    }

    async fn conversation(
        &self,
        agent: &AgentName,
        key: &str,
    ) -> Result<Vec<serde_json::Value>, PgStoreError> {
        PgStore::conversation(self, agent, key).await
    }

    async fn latest_conversation(&self, agent: &AgentName) -> Result<Option<String>, PgStoreError> {
        PgStore::latest_conversation(self, agent).await
    }
}
