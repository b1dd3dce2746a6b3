//! Which tools each role gets, decided when an agent starts: a role without a tool cannot call
//! it, so nothing has to be checked later. No role gets a tool that starts agents.

use std::sync::Arc;

use crate::run::link::LinkedStore;
use crate::tools::{ReadOnlyBash, TeamEnv, team_tools};
use crew_tools::builtin;
use crew_tools::registry::RegistryError;
use crew_tools::{Tool, ToolRegistry, memory_tools, skill_tools, todo_tools};

/// The lead plans and coordinates; it reads but does not change files itself.
const LEAD: &[&str] = &[
    "read",
    "glob",
    "grep",
    "task_create",
    "task_list",
    "task_get",
    "task_update",
    "send_message",
    "request_shutdown",
    "review_plan",
];

/// The team tools every teammate gets.
const TEAMMATE: &[&str] = &[
    "task_list",
    "task_get",
    "task_update",
    "claim_task",
    "send_message",
    "request_plan_approval",
];

const READING: &[&str] = &["read", "glob", "grep"];
const WRITING: &[&str] = &["read", "write", "edit", "glob", "grep", "bash"];

/// The tools for `role`. Only an implementer that `writes` and, if it needed a plan, has had it
/// approved (`plan_approved`) gets write, edit and a full bash; every other teammate gets the
/// read-only toolset, whose bash runs read-only commands and those starting with one of
/// `extra_bash_allow` (e.g. the project's test command). An unknown role gets the read-only
/// toolset too: the least a teammate can do.
pub fn toolset<S: LinkedStore>(
    role: &str,
    writes: bool,
    plan_approved: bool,
    env: Arc<TeamEnv<S>>,
    extra_bash_allow: &[String],
) -> Result<ToolRegistry, RegistryError> {
    // (file tools from the core set, whether a read-only bash is added, team tools)
    let (files, read_only_bash, team): (&[&str], bool, &[&str]) = match role {
        "lead" => (READING, false, LEAD),
        "implementer" if writes && plan_approved => (WRITING, false, TEAMMATE),
        "implementer" | "explorer" | "planner" | "reviewer" => (READING, true, TEAMMATE),
        other => {
            tracing::warn!(role = other, "unknown role gets the read-only toolset");
            (READING, true, TEAMMATE)
        }
    };
    let mut tools: Vec<Arc<dyn Tool>> = builtin::core_tools()
        .into_iter()
        .filter(|t| files.contains(&t.name()))
        .collect();
    if read_only_bash {
        tools.push(Arc::new(ReadOnlyBash::new(extra_bash_allow)));
    }
    // Every agent keeps its own checklist and memory, and may load skills.
    tools.extend(todo_tools());
    tools.extend(memory_tools());
    tools.extend(skill_tools());
    tools.extend(
        team_tools(env)
            .into_iter()
            .filter(|t| team.contains(&t.name())),
    );
    registry_of(tools)
}

/// The team tools of `role` alone, plus `read_inbox`: what `crew mcp` serves to an agent whose
/// own CLI brings the file tools and whose messages may not be pushed to it.
pub(crate) fn team_toolset<S: LinkedStore>(
    role: &str,
    env: Arc<TeamEnv<S>>,
) -> Result<ToolRegistry, RegistryError> {
    let team = if role == "lead" { LEAD } else { TEAMMATE };
    registry_of(
        team_tools(env)
            .into_iter()
            .filter(|t| team.contains(&t.name()) || t.name() == "read_inbox")
            .collect(),
    )
}

/// Names are distinct and schemas are constants, so this fails only on a programming slip,
/// which the role tests (they register every toolset) catch.
fn registry_of(tools: Vec<Arc<dyn Tool>>) -> Result<ToolRegistry, RegistryError> {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool)?;
    }
    Ok(registry)
}
