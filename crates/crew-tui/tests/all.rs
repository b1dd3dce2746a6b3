//! crew-tui's integration tests — the screen, driven by keys against real workspaces — as one test
//! binary, a module per area.

mod tui_approval_views;
mod tui_behaviour;
mod tui_config;
mod tui_memories;
mod tui_review;
mod tui_snapshots;
mod tui_steering;
mod tui_store_feed;
