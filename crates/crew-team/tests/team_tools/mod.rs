//! The team tools and role toolsets, against a temporary repository made with `store::Workspace`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

mod messages;
mod roles;
mod support;
mod tasks;
