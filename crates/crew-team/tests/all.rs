//! crew-team's integration tests — the worker, the team tools and the tools' input schemas — as one
//! test binary, a module per area.

mod team_tools;
mod team_worker;
mod tool_inputs;
