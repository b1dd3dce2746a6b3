//! Worktrees, diff and safe merge (git2).
