//! The `.tasks` DAG with atomic claim, `.mailboxes` with typed messages and requests.
//! Knows nothing above it: no config, no terminal.

pub mod actor;
pub mod agents;
pub mod atomic;
pub mod backend;
pub mod claim;
pub mod conversation;
pub mod dag;
pub mod error;
pub mod front_matter;
pub mod limits;
pub mod lock;
pub mod mailbox;
pub mod memory;
pub mod merge_queue;
pub mod message;

pub mod requests;
pub mod review;
pub mod roster;
pub mod secrets;
pub mod task;
pub mod tasks;
pub mod todo;
pub mod watch;
pub mod workspace;

pub use actor::Actor;
pub use agents::{
    AgentStatus, AgentStatuses, CacheTokens, SUBAGENT_LINES, SubagentLine, dollars, pid_alive,
};
pub use backend::{BackendError, FileStore, TeamStore};
pub use claim::{Attempt, Claimant};
pub use crew_protocol::{AgentName, AgentState, MessageKind, RequestId, TaskId, USER};
pub use error::{Refusal, StoreError};
pub use limits::Limits;
pub use mailbox::{Batch, Entry, Mailboxes};
pub use memory::{
    AgentMemory, Memory, MemoryBook, MemoryDraft, MemoryScope, MemoryType, no_such_memory,
};
pub use merge_queue::{EntryState, MergeQueue, QueueEntry, QueueRun, QueueState, RunOutcome};
pub use message::{Draft, Message};
pub use requests::{RequestInfo, RequestState};
pub use roster::{Roster, Teammate};
pub use task::{ReviewerVerdict, Status, Task, TaskCommits, TaskUsage};
pub use tasks::{Loaded, NewTask, TaskPatch, TaskStore};
pub use todo::{TodoItem, TodoStatus, render_todos};
pub use watch::{DirWatcher, Waker};
pub use workspace::Workspace;
