//! crew-tools's integration tests — the tools, their pipeline, permissions and hooks — as one test
//! binary, a module per area.

mod tools_bash;
mod tools_batch;
mod tools_builtin;
mod tools_hooks;
mod tools_permissions;
mod tools_pipeline;
