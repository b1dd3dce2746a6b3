//! Tool registry, schema validation, the governed pipeline, permissions, hooks, sandbox,
//! the result budget, and the agent's own tools (checklist, memory, skills). Tools return values; nothing here prints or reads the terminal.

pub mod batch;
pub mod beneath;
pub mod builtin;
pub mod context;
pub mod hooks;
pub mod memory;
pub mod note;
pub mod orphans;
pub mod paths;
pub mod permissions;
pub mod pipeline;
pub mod process;
pub mod prompter;
pub mod registry;

pub mod schema;
pub mod skills;
pub mod spill;
pub mod todo;
pub mod tool;
pub mod typed;

pub use context::{ReadState, ToolContext, scrub_env};
pub use crew_sandbox::{ResourceLimits, Sandbox, SandboxMode};
pub use hooks::{HookEvent, HookRun, HookSpec, Hooks, StopDecision, StopGuard};
pub use memory::memory_tools;
pub use note::Note;
pub use permissions::{Decision, PermissionMode, PermissionOutcome, PermissionPolicy};
pub use pipeline::{Pipeline, ToolCall, ToolCallOutcome};
pub use prompter::{AllowWhatRulesAllow, DenyAll, PermissionAnswer, PermissionAsk, Prompter};
pub use registry::ToolRegistry;
pub use skills::{SkillCatalogue, skill_tools};
pub use todo::{TodoList, todo_tools};
pub use tool::{
    PreparedCall, Subject, Tool, ToolError, ToolFuture, ToolJson, ToolKind, ToolOutput,
};
pub use typed::{NoInput, TypedTool};
