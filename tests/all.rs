//! The end-to-end tests of the built binaries (`crew`, `crew-bench`): processes, the daemon,
//! terminals; one test binary, a module per area. `support` starts and drives them.

mod support;

mod bad_input;
mod bench_git;
mod bench_pg;
mod bench_team;
mod claude_team_attach;
mod cli_init;
mod cli_messages;
mod cli_skills_memory;
mod cli_tasks;
mod cli_untrusted_text;
mod mcp_server;
mod sandbox;
mod security_exec;
mod security_person;
mod store_crash;
mod store_stress;
mod team_bash_bypass;
mod team_budget;
mod team_claude_code;
mod team_claude_code_lead;
mod team_codex;
mod team_command;
mod team_crash;
mod team_daemon;
mod team_demo;
mod team_down;
mod team_headless;
mod team_memory;
mod team_mixed_cli;
mod team_plan;
mod team_race;
mod team_resume;
mod team_review;
mod team_sandbox;
mod team_subagents;
mod team_timeout;
mod team_until_done;
mod tui_demo_pty;
mod tui_pty;
mod tui_steering;
