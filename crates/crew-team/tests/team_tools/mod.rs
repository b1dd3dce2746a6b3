//! The team tools and role toolsets, against a temporary repository made with `store::Workspace`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

#[path = "team_tools/messages.rs"]
mod messages;
#[path = "team_tools/roles.rs"]
mod roles;
#[path = "team_tools/support.rs"]
mod support;
#[path = "team_tools/tasks.rs"]
mod tasks;
