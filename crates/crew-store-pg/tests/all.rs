//! crew-store-pg's tests, each against a real throwaway PostgreSQL server (no mocks), as one
//! test binary with a module per area. Without the server binaries each test skips, saying so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failure is the report

mod claims;
mod common;
mod conformance;
mod inbox;
mod restart;
mod roles;
mod schema;
mod team;
mod tls;
mod wakeups;
