//! The team store on PostgreSQL, for a team whose teammates run on several machines: tasks as
//! rows claimed with `FOR UPDATE SKIP LOCKED` under a lease, inboxes as append-only rows read
//! through per-reader cursors, requests derived from them as in crew-store, and wake-ups through
//! `LISTEN/NOTIFY`. Same vocabulary as crew-store (its `Task`, `Message`, `Claimant`, ...);
//! nothing above it. Every operation survives a server restart: it reconnects with backoff and
//! retries, and each write carries a client-made key so a retry never does it twice.

pub mod agents;
pub mod backend;
pub mod conversations;
pub mod error;
pub mod handout;
pub mod inbox;
mod json;
pub mod memories;
mod passfile;
pub mod review;
pub mod roles;
pub mod schema;
pub mod store;
pub mod tasks;
pub mod team;
mod tls;
pub mod wakeups;

pub use agents::{AgentSeen, Lease};
pub use error::PgStoreError;
pub use inbox::Position;
pub use roles::{AgentRights, AgentRole};
pub use schema::{SCHEMA_VERSION, migrate};
pub use store::{AgentLogin, Connection, PgStore, StoreStatus};
pub use team::PublishedTeam;
pub use wakeups::Wakeups;
