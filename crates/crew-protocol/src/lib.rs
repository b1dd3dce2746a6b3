//! The vocabulary crew's processes share through the store and the daemon's socket: the
//! person, message kinds, how a request pairs with its answer, agent states, task ids and agent
//! names, verdicts, the settings lower layers read from `crew.toml`, the names of crew's
//! files, and how agent-written text is shown on a terminal (`terminal_text`). Every other crate uses these types; the strings they stand for appear only here and in
//! their serde (ARCHITECTURE.md, "On disk"). A leaf: it depends on serde alone (and thiserror
//! for its errors).

mod agent_name;
mod agent_state;
pub mod control;
mod invalid_name;
mod layout;
mod message_kind;
mod permission_mode;
mod request_id;
mod sandbox_mode;
mod task_id;
pub mod terminal_text;
mod verdict;

pub use agent_name::{AgentName, USER};
pub use agent_state::AgentState;
pub use invalid_name::{InvalidName, name_from, validate_name};
pub use layout::{CONFIG_FILE, RUNTIME_FOLDERS};
pub use message_kind::MessageKind;
pub use permission_mode::{PermissionMode, UnknownMode};
pub use request_id::RequestId;
pub use sandbox_mode::SandboxMode;
pub use task_id::TaskId;
pub use verdict::Verdict;

/// Ids or names as one line of text: `task_1, task_2`.
pub fn joined(items: &[impl std::fmt::Display], separator: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}
