//! crew-agent's integration tests — the agent loop on scripted models — as one test binary, a
//! module per area.

mod agent_compaction;
mod agent_hooks;
mod agent_instructions;
mod agent_local_model;
mod agent_loop;
mod agent_mailbox;
mod agent_memory;
mod agent_real_api;
mod agent_recovery;
mod agent_secrets;
mod agent_skills;
mod agent_streaming;
mod agent_subagents;
mod agent_todo;
mod agent_tools;
