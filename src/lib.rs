//! crew: a terminal workbench for teams of coding agents.
//!
//! Layers, dependencies pointing down only (ARCHITECTURE.md at the repository's root has the
//! design and the numbered invariants the code cites):
//! `store`, `git` → `model` → `tools` → `agent` → `config` → `team` → `cli` / `tui`.
//! Only `cli` prints and only `tui` draws; the layers below return values and emit events.

pub mod agent;
pub mod cli;
pub mod config;
pub mod git;
pub mod model;
pub mod store;
pub mod team;
pub mod tools;
pub mod tui;
