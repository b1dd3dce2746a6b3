//! The bounded agent loop, context assembly, compaction and transcripts.
//!
//! An [`Agent`] keeps one conversation across many turns. [`Agent::run_turn`] drives the
//! query loop — normalise, compact if needed, stream the reply (safe tools start before it
//! ends), recover from errors within bounds, run the tools — and always returns a
//! [`TurnResult`]. Everything that happens is an [`AgentEvent`], sent to the caller's
//! [`EventSink`] and appended to the session transcript. Nothing here prints.

mod carry_over;
pub mod compaction;
pub mod config;
pub mod context;
pub mod conversation;
pub mod emitter;
pub mod error;
pub mod event;
mod hook_events;
pub mod instructions;
pub mod mailbox_prompter;
pub mod normalize;
mod observed;
pub mod recovery;
mod repeat;
pub mod result;
mod runtime;
mod stream;
pub mod subagent;
pub mod transcript;
pub mod transcript_follower;
mod turn;
pub mod verdict;
mod window;

pub use carry_over::{FILES_HEADER, TODOS_HEADER};
pub use config::{AgentConfig, CompactionThresholds, Limits};
pub use error::AgentError;
pub use event::{AgentEvent, CompactionStep, CompactionTrigger, EventSink, RecoveryKind};
pub use mailbox_prompter::{
    AnswerChannel, MailboxPrompter, ask_on_thread, permission_request, wait_for_answer,
};
pub use normalize::normalize;
pub use result::{PermissionDenial, StopReason, ToolUseRecord, TurnResult};
pub use runtime::Agent;
pub use subagent::{SubagentContext, SubagentRole, SubagentSettings};
pub use turn::{CONTINUE_PROMPT, EMPTY_REPLY_PROMPT};
