//! Names of agents, teams and ids are checked before they ever reach a path (the rule and the
//! typed ids are crew-protocol's).

pub use crew_protocol::{TaskId, name_from, validate_name};
