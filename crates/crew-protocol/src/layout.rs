//! The names of crew's files in the repository a team works on.

/// crew's runtime folders in a repository, never committed.
pub const RUNTIME_FOLDERS: &[&str] = &[".tasks", ".mailboxes", ".worktrees", ".crew"];

/// The team's configuration file at the repository root.
pub const CONFIG_FILE: &str = "crew.toml";
