//! The team, by room: `work` (what runs a job: crew's own agent, Claude Code, Codex, any
//! command), `run` (the worker lifecycle, the supervisor, the daemon, a headless team), `review`,
//! `tools` (the team tools the agents call, which tools each role gets, the same tools over MCP),
//! `claude_team` (a Claude Code team mirrored into a crew workspace), and `demo`.

pub mod claude_team;
pub mod demo;
pub mod merge_queue;
pub mod review;
pub mod run;
pub mod tools;
// The rule for what a report counts as lives with the agent, whose `verify` subagents are judged by it too.
pub use crew_agent::verdict;
pub mod work;
