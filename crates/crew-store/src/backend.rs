//! One interface to the team store, with two backends: [`FileStore`] here (`.tasks`,
//! `.mailboxes`, the embedded default) and `crew_store_pg::PgStore` (a team across machines,
//! issue #24). Both give each operation the same meaning, and the conformance suite
//! (crew-store-pg's `tests/conformance.rs`) runs the same test bodies against both to keep it so.
//!
//! The methods return `impl Future + Send` rather than being `async fn`: a caller may spawn the
//! futures on a multi-threaded runtime, which needs the `Send` bound named in the trait. A
//! store is used generically (`S: TeamStore`), so no `dyn` is needed. The file store's
//! operations are synchronous (file locks, no waiting on the network): its futures are ready
//! at once.

use std::future::Future;
use std::time::Duration;

use crew_protocol::{AgentName, TaskId};

use crate::conversation;
use crate::{
    Actor, AgentStatus, Claimant, Draft, Entry, Memory, MemoryBook, MemoryDraft, MemoryScope,
    Message, NewTask, Refusal, RequestInfo, ReviewerVerdict, Roster, StoreError, Task, TaskCommits,
    TaskPatch, Workspace,
};

/// What a backend's errors say beyond their text: whether the protocol refused (and why), or
/// the task asked for does not exist. Callers decide on these, not on a message's wording.
pub trait BackendError: std::error::Error + Send + Sync + 'static {
    fn refusal(&self) -> Option<&Refusal>;
    fn no_such_task(&self) -> Option<TaskId>;

    /// This error as a [`StoreError`], for code that works on any backend: a refusal and a
    /// missing task keep their meaning, anything else is kept whole as the backend's own.
    fn into_store_error(self) -> StoreError
    where
        Self: Sized,
    {
        if let Some(refusal) = self.refusal() {
            return StoreError::Refused(refusal.clone());
        }
        if let Some(id) = self.no_such_task() {
            return StoreError::NoSuchTask(id);
        }
        StoreError::Backend(Box::new(self))
    }
}

impl BackendError for StoreError {
    fn refusal(&self) -> Option<&Refusal> {
        match self {
            StoreError::Refused(r) => Some(r),
            _ => None,
        }
    }

    fn no_such_task(&self) -> Option<TaskId> {
        match self {
            StoreError::NoSuchTask(id) => Some(*id),
            _ => None,
        }
    }

    fn into_store_error(self) -> StoreError {
        self
    }
}

/// The team's tasks, inboxes and requests, whatever keeps them.
pub trait TeamStore: Send + Sync {
    type Error: BackendError;
    /// Where the inbox's owner has read up to: just after the message it came with.
    type Position: Copy + Ord + std::fmt::Debug + Send + Sync;

    /// Adds a pending task, its fields as `NewTask::checked` leaves them; every blocker must
    /// exist.
    fn create_task(&self, new: NewTask) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    fn task(&self, id: TaskId) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Every task, by id.
    fn tasks(&self) -> impl Future<Output = Result<Vec<Task>, Self::Error>> + Send;

    /// Claims a ready task assigned to `who`, else the oldest ready unowned one of a role that
    /// fits: never one with a blocker not completed, never one another claimer holds.
    /// `NothingClaimable` when there is none.
    fn claim_next(
        &self,
        who: Claimant<'_>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Claims task `id` for `who`: refused when another holds it, it is not pending, its role
    /// does not fit or a blocker is not completed (on PostgreSQL a task whose owner's lease
    /// lapsed is claimable too, as in `claim_next`).
    fn claim(
        &self,
        id: TaskId,
        who: Claimant<'_>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The owner gives its in-progress task back: `pending`, no owner.
    fn release(
        &self,
        id: TaskId,
        who: &AgentName,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Every task `owner` holds (in progress, or assigned and pending) back to `pending` with
    /// no owner and `note`: its agent is gone, so nothing stays held by a ghost.
    fn release_orphaned(
        &self,
        owner: &AgentName,
        note: &str,
    ) -> impl Future<Output = Result<Vec<Task>, Self::Error>> + Send;

    /// Hands the task to `to` (only `to` may then claim it) or to nobody, by the lead or the
    /// person (`claim::assignment` says what is refused and the note it leaves).
    fn assign(
        &self,
        id: TaskId,
        to: Option<Claimant<'_>>,
        by: Actor<'_>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Edits a task's subject, description or blockers as `by` may (`tasks::check_may_edit`);
    /// an unknown blocker or a cycle is refused.
    fn update(
        &self,
        id: TaskId,
        patch: TaskPatch,
        by: Actor<'_>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The owner `by` finished its in-progress task (a writing teammate's only through review).
    /// A result of `None` keeps the one the task had.
    fn complete(
        &self,
        id: TaskId,
        by: Actor<'_>,
        result: Option<String>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The owner's task of which nothing waits for review (its work added no commit):
    /// `completed` by crew's worker, never a tool. A result of `None` keeps the task's.
    fn complete_with_nothing_to_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Adds one job's tokens and cost to what task `id` used (`TaskUsage::added`).
    fn add_usage(
        &self,
        id: TaskId,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The owner gives up on its in-progress task: `failed`, with `reason` as its result.
    fn fail(
        &self,
        id: TaskId,
        who: &AgentName,
        reason: String,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The owner finished its in-progress task and its commits wait for review.
    fn submit_for_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: String,
        commits: TaskCommits,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Appends a message to its recipient's inbox (a request, with a new request id, when
    /// `draft.request`).
    fn send(&self, draft: Draft) -> impl Future<Output = Result<Message, Self::Error>> + Send;

    /// Every message in `inbox`, in the order they were appended.
    fn inbox(
        &self,
        inbox: &AgentName,
    ) -> impl Future<Output = Result<Vec<Message>, Self::Error>> + Send;

    /// At most `limit` messages of `inbox` after its owner's cursor, oldest first. The cursor
    /// does not move: a reader that dies before handling them gets them again.
    fn unread(
        &self,
        inbox: &AgentName,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(Self::Position, Message)>, Self::Error>> + Send;

    /// Moves the owner's cursor in `inbox` to just after `upto`; never back.
    fn mark_read(
        &self,
        inbox: &AgentName,
        upto: Self::Position,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Every request with its state as of now (pending, approved, rejected, expired), oldest
    /// first; a request without its own `timeout_secs` expires after `default_timeout`.
    fn requests(
        &self,
        default_timeout: Duration,
    ) -> impl Future<Output = Result<Vec<RequestInfo>, Self::Error>> + Send;

    /// Answers a pending request (`requests::may_answer` says who may); the answer goes to the
    /// asker. Of two answers the first is kept, the second refused.
    fn respond(
        &self,
        request_id: &str,
        who: &AgentName,
        approve: bool,
        note: Option<String>,
        default_timeout: Duration,
    ) -> impl Future<Output = Result<Message, Self::Error>> + Send;

    /// Keeps `status` as its agent's latest word on itself (its state, task, heartbeat),
    /// replacing the one before.
    fn write_status(
        &self,
        status: &AgentStatus,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Agent `name`'s latest status; `None` before its first.
    fn agent_status(
        &self,
        name: &AgentName,
    ) -> impl Future<Output = Result<Option<AgentStatus>, Self::Error>> + Send;

    /// Records where the task's commits start on `branch`, the first time it starts there
    /// (a task sent back keeps its first start; one that changed hands starts afresh).
    fn record_start(
        &self,
        id: TaskId,
        branch: &str,
        start: &str,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// A reviewer agent's verdict on the task's commits; refused unless it is in review.
    fn record_verdict(
        &self,
        id: TaskId,
        verdict: ReviewerVerdict,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// The task's commits are in the base branch: from review to `completed`.
    fn mark_merged(
        &self,
        id: TaskId,
        by: &AgentName,
        how: &str,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// From review back to its teammate with `note`: pending, still assigned to it.
    fn send_back(
        &self,
        id: TaskId,
        by: &AgentName,
        note: &str,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// From review to `failed`: its commits were taken back out, for `reason`.
    fn discard_review(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> impl Future<Output = Result<Task, Self::Error>> + Send;

    /// Keeps `draft` in `who`'s own memory or the team's (`draft.scope`), replacing the one of
    /// its name there; whether one was replaced. Refused beyond `[limits]` (its body, its
    /// description, `memories_per_scope` memories in a scope).
    fn write_memory(
        &self,
        who: &AgentName,
        draft: &MemoryDraft,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Memory `name` as `who` sees it: from `scope`, else its own first, then the team's.
    fn memory(
        &self,
        who: &AgentName,
        scope: Option<MemoryScope>,
        name: &str,
    ) -> impl Future<Output = Result<Memory, Self::Error>> + Send;

    /// Forgets memory `name` of `who`'s `scope`.
    fn forget_memory(
        &self,
        who: &AgentName,
        scope: MemoryScope,
        name: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Every memory of `who`'s `scope`, by name (on files, one that does not parse is passed
    /// over: `MemoryBook::list` is where the screen reports it).
    fn memories(
        &self,
        who: &AgentName,
        scope: MemoryScope,
    ) -> impl Future<Output = Result<Vec<Memory>, Self::Error>> + Send;

    /// Keeps `who`'s conversation `key` as it now stands: `messages` from position `at` on,
    /// what it held from `at` dropped (`at` = what it holds: an append; 0: the history anew),
    /// and `key` becomes its latest. Keeping it again is harmless (a retry keeps the same);
    /// past its end is refused (`Refusal::ConversationGap`). The messages are the agent loop's,
    /// stored as JSON, a key this process read redacted.
    fn keep_conversation(
        &self,
        who: &AgentName,
        key: &str,
        at: usize,
        messages: &[serde_json::Value],
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// `agent`'s conversation `key` as kept, oldest first; empty if there is none (on files, a
    /// line torn by a crash is passed over).
    fn conversation(
        &self,
        agent: &AgentName,
        key: &str,
    ) -> impl Future<Output = Result<Vec<serde_json::Value>, Self::Error>> + Send;

    /// The key of the conversation `agent` kept last, so a teammate resumes it on any host.
    fn latest_conversation(
        &self,
        agent: &AgentName,
    ) -> impl Future<Output = Result<Option<String>, Self::Error>> + Send;
}

/// The file backend: a workspace's `.tasks` and `.mailboxes`, and the team's names (a message
/// to or from a name not on the team is refused, never a new inbox).
#[derive(Debug, Clone)]
pub struct FileStore {
    workspace: Workspace,
    roster: Roster,
}

impl FileStore {
    pub fn new(workspace: Workspace, roster: Roster) -> Self {
        FileStore { workspace, roster }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn roster(&self) -> &Roster {
        &self.roster
    }
}

impl TeamStore for FileStore {
    type Error = StoreError;
    /// The byte offset just past the message's line.
    type Position = u64;

    async fn create_task(&self, new: NewTask) -> Result<Task, StoreError> {
        self.workspace.tasks().create(new)
    }

    async fn task(&self, id: TaskId) -> Result<Task, StoreError> {
        self.workspace.tasks().read(id)
    }

    async fn tasks(&self) -> Result<Vec<Task>, StoreError> {
        // A broken task file is passed over and the rest still work (invariant 7);
        // `TaskStore::load_all` is where the screen and `crew task list` report it.
        Ok(self.workspace.tasks().load_all()?.tasks)
    }

    async fn claim_next(&self, who: Claimant<'_>) -> Result<Task, StoreError> {
        self.workspace.tasks().claim_next(who)
    }

    async fn claim(&self, id: TaskId, who: Claimant<'_>) -> Result<Task, StoreError> {
        self.workspace.tasks().claim(id, who)
    }

    async fn release(&self, id: TaskId, who: &AgentName) -> Result<Task, StoreError> {
        self.workspace.tasks().release(id, who)
    }

    async fn release_orphaned(
        &self,
        owner: &AgentName,
        note: &str,
    ) -> Result<Vec<Task>, StoreError> {
        self.workspace.tasks().release_orphaned(owner, note)
    }

    async fn assign(
        &self,
        id: TaskId,
        to: Option<Claimant<'_>>,
        by: Actor<'_>,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().assign(id, to, by)
    }

    async fn update(
        &self,
        id: TaskId,
        patch: TaskPatch,
        by: Actor<'_>,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().update(id, patch, by)
    }

    async fn complete(
        &self,
        id: TaskId,
        by: Actor<'_>,
        result: Option<String>,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().complete(id, by, result)
    }

    async fn complete_with_nothing_to_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: Option<String>,
    ) -> Result<Task, StoreError> {
        self.workspace
            .tasks()
            .complete_with_nothing_to_review(id, who, result)
    }

    async fn add_usage(
        &self,
        id: TaskId,
        tokens: u64,
        cost_micros: Option<u64>,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().add_usage(id, tokens, cost_micros)
    }

    async fn fail(&self, id: TaskId, who: &AgentName, reason: String) -> Result<Task, StoreError> {
        self.workspace.tasks().fail(id, who, reason)
    }

    async fn submit_for_review(
        &self,
        id: TaskId,
        who: &AgentName,
        result: String,
        commits: TaskCommits,
    ) -> Result<Task, StoreError> {
        self.workspace
            .tasks()
            .submit_for_review(id, who, result, commits)
    }

    async fn send(&self, draft: Draft) -> Result<Message, StoreError> {
        self.workspace.mailboxes().send(&self.roster, draft)
    }

    async fn inbox(&self, inbox: &AgentName) -> Result<Vec<Message>, StoreError> {
        Ok(messages(self.workspace.mailboxes().read_from(inbox, 0)?)
            .map(|(_, m)| m)
            .collect())
    }

    async fn unread(
        &self,
        inbox: &AgentName,
        limit: usize,
    ) -> Result<Vec<(u64, Message)>, StoreError> {
        let boxes = self.workspace.mailboxes();
        let batch = boxes.read_from(inbox, boxes.cursor(inbox)?)?;
        Ok(messages(batch).take(limit).collect())
    }

    async fn mark_read(&self, inbox: &AgentName, upto: u64) -> Result<(), StoreError> {
        self.workspace.mailboxes().advance_cursor(inbox, upto)
    }

    async fn requests(&self, default_timeout: Duration) -> Result<Vec<RequestInfo>, StoreError> {
        self.workspace.mailboxes().requests(default_timeout)
    }

    async fn respond(
        &self,
        request_id: &str,
        who: &AgentName,
        approve: bool,
        note: Option<String>,
        default_timeout: Duration,
    ) -> Result<Message, StoreError> {
        self.workspace.mailboxes().respond(
            &self.roster,
            request_id,
            who,
            approve,
            note,
            default_timeout,
        )
    }

    async fn write_status(&self, status: &AgentStatus) -> Result<(), StoreError> {
        self.workspace.agents().write(status)
    }

    async fn agent_status(&self, name: &AgentName) -> Result<Option<AgentStatus>, StoreError> {
        self.workspace.agents().read(name)
    }

    async fn record_start(
        &self,
        id: TaskId,
        branch: &str,
        start: &str,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().record_start(id, branch, start)
    }

    async fn record_verdict(
        &self,
        id: TaskId,
        verdict: ReviewerVerdict,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().record_verdict(id, verdict)
    }

    async fn mark_merged(&self, id: TaskId, by: &AgentName, how: &str) -> Result<Task, StoreError> {
        self.workspace.tasks().mark_merged(id, by, how)
    }

    async fn send_back(&self, id: TaskId, by: &AgentName, note: &str) -> Result<Task, StoreError> {
        self.workspace.tasks().send_back(id, by, note)
    }

    async fn discard_review(
        &self,
        id: TaskId,
        by: &AgentName,
        reason: &str,
    ) -> Result<Task, StoreError> {
        self.workspace.tasks().discard_review(id, by, reason)
    }

    async fn write_memory(&self, who: &AgentName, draft: &MemoryDraft) -> Result<bool, StoreError> {
        self.memory_book(who)?.write(draft)
    }

    async fn memory(
        &self,
        who: &AgentName,
        scope: Option<MemoryScope>,
        name: &str,
    ) -> Result<Memory, StoreError> {
        self.memory_book(who)?.read(scope, name)
    }

    async fn forget_memory(
        &self,
        who: &AgentName,
        scope: MemoryScope,
        name: &str,
    ) -> Result<(), StoreError> {
        self.memory_book(who)?.forget(scope, name)
    }

    async fn memories(
        &self,
        who: &AgentName,
        scope: MemoryScope,
    ) -> Result<Vec<Memory>, StoreError> {
        Ok(self.memory_book(who)?.list(scope).0)
    }

    async fn keep_conversation(
        &self,
        who: &AgentName,
        key: &str,
        at: usize,
        messages: &[serde_json::Value],
    ) -> Result<(), StoreError> {
        let path = self.conversation_file(who, key)?;
        let held = conversation::read_conversation::<serde_json::Value>(&path)?.messages;
        if at > held.len() {
            return Err(Refusal::ConversationGap {
                agent: who.clone(),
                key: key.to_string(),
                held: held.len(),
                at,
            }
            .into());
        }
        if at == held.len() {
            conversation::append_conversation(&path, messages)?;
        } else {
            let kept: Vec<_> = held[..at].iter().chain(messages).collect();
            conversation::replace_conversation(&path, &kept)?;
        }
        let root = self.workspace.root();
        if conversation::latest_key(root, who.as_str()).as_deref() != Some(key) {
            conversation::set_latest_key(root, who.as_str(), key)?;
        }
        Ok(())
    }

    async fn conversation(
        &self,
        agent: &AgentName,
        key: &str,
    ) -> Result<Vec<serde_json::Value>, StoreError> {
        Ok(conversation::read_conversation(&self.conversation_file(agent, key)?)?.messages)
    }

    async fn latest_conversation(&self, agent: &AgentName) -> Result<Option<String>, StoreError> {
        self.roster.check("conversation owner", agent)?;
        Ok(conversation::latest_key(
            self.workspace.root(),
            agent.as_str(),
        ))
    }
}

impl FileStore {
    /// The file of `agent`'s conversation `key`, for a name on the team only.
    fn conversation_file(
        &self,
        agent: &AgentName,
        key: &str,
    ) -> Result<std::path::PathBuf, StoreError> {
        self.roster.check("conversation owner", agent)?;
        Ok(conversation::conversation_path(
            self.workspace.root(),
            agent.as_str(),
            key,
        )?)
    }

    /// `who`'s memories, for a name on the team only (never a folder for a stranger).
    fn memory_book(&self, who: &AgentName) -> Result<MemoryBook, StoreError> {
        self.roster.check("memory owner", who)?;
        Ok(self.workspace.memories(who))
    }
}

/// The batch's messages, each with the offset just past its line (where the next line starts,
/// or the batch's end); lines that do not parse are passed over.
fn messages(batch: crate::Batch) -> impl Iterator<Item = (u64, Message)> {
    let ends: Vec<u64> = batch
        .entries
        .iter()
        .skip(1)
        .map(|e| match e {
            Entry::Message { offset, .. } | Entry::Broken { offset, .. } => *offset,
        })
        .chain([batch.end])
        .collect();
    batch
        .entries
        .into_iter()
        .zip(ends)
        .filter_map(|(entry, end)| match entry {
            Entry::Message { message, .. } => Some((end, message)),
            Entry::Broken { .. } => None,
        })
}
