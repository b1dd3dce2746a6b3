//! The team: worker lifecycle (WORK / WAITING / IDLE / SHUTDOWN), the supervisor, the team tools
//! the agents call, and which tools each role gets.

pub mod agent_work;
pub mod budget;
pub mod claude_code;
pub mod claude_team;
mod cli_agent;
mod cli_process;
pub mod codex;
pub mod command_work;
pub mod daemon;
pub mod demo;
pub mod headless;
pub mod interrupt;
pub mod mcp;
pub mod review;
pub mod role_prompt;
pub mod roles;
pub mod status;
pub mod supervisor;
mod task_branch;
pub mod teammate_work;
pub mod tools;
// The rule for what a report counts as lives with the agent, whose `verify` subagents are judged by it too.
pub use crew_agent::verdict;
pub mod worker;
