//! The vocabulary crew's processes share through the store: the person, message kinds, how a
//! request pairs with its answer, agent states, task ids and agent names, and the names of
//! crew's files. Every other crate uses these types; the strings they stand for appear only here
//! and in their serde (ARCHITECTURE.md, "On disk"). A leaf: it depends on serde alone.

mod agent_state;
mod layout;
mod message_kind;
mod request_id;

pub use agent_state::AgentState;
pub use layout::{CONFIG_FILE, RUNTIME_FOLDERS};
pub use message_kind::MessageKind;
pub use request_id::RequestId;

/// The person at the screen: may always send and answer, never needs an entry in `crew.toml`.
pub const USER: &str = "user";
