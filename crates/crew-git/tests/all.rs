//! crew-git's integration tests — worktrees, diffs and merges on real repositories — as one test
//! binary, a module per area.

mod git_diff;
mod git_merge;
mod git_queue;
mod git_remote;
mod git_worktree;
mod git_worktree_checkout;
mod git_worktree_libgit2;
