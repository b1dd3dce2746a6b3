//! crew: a terminal workbench for teams of coding agents.
//!
//! Layers, dependencies pointing down only (see DESIGN.md):
//! `cli` → `agent` → `tools` → `model`, and `cli` → `store` / `config`.
//! Only `cli` prints; `store`, `model`, `tools` and `agent` return values and emit events.

pub mod agent;
pub mod cli;
pub mod config;
pub mod git;
pub mod model;
pub mod store;
pub mod team;
pub mod tools;
pub mod tui;
