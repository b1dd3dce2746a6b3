//! The `agent` tool the caller's model sees, and the stand-in a fork is shown for each of the
//! caller's tools it may not use.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::run::{Parent, run_subagent};
use super::{AGENT_TOOL, SubagentContext, SubagentRole};
use crew_model::ToolDefinition;
use crew_tools::tool::PreparedCall;
use crew_tools::{Subject, Tool, ToolContext, ToolError, ToolFuture, ToolKind, TypedTool};

/// The input the model gives.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A few words for the person watching (shown nested under you)
    #[schemars(length(min = 1, max = 80))]
    pub description: String,
    /// What the subagent must do; a fresh one knows only this, so say everything it needs
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// explore: read-only look-ups; verify: runs checks, ends with VERDICT: PASS|FAIL|PARTIAL;
    /// general: your file and command tools
    pub role: SubagentRole,
    /// fresh (default): its own short prompt; fork: your whole conversation so far
    #[serde(default)]
    pub context: SubagentContext,
}

/// Starts a subagent and returns its final report.
pub struct AgentTool {
    pub(super) parent: Arc<Parent>,
}

impl TypedTool for AgentTool {
    type Input = AgentInput;
    const NAME: &'static str = AGENT_TOOL;
    // Starting one touches nothing: each of the subagent's own calls goes through the
    // caller's permission policy.
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Start a subagent for one self-contained piece of work and get back only its final \
         report (its steps stay out of your context). Roles: explore (read-only look-ups), \
         verify (runs checks, ends with VERDICT: PASS|FAIL|PARTIAL), general. context `fresh` \
         (default) starts it knowing only your prompt, so say everything it needs; `fork` \
         starts it with your whole conversation so far. It cannot start subagents itself."
    }

    fn validate(&self, input: &AgentInput, _ctx: &ToolContext) -> Result<(), String> {
        if self.parent.settings.roles.contains(&input.role) {
            return Ok(());
        }
        let enabled: Vec<&str> = self
            .parent
            .settings
            .roles
            .iter()
            .map(|r| r.as_str())
            .collect();
        Err(format!(
            "the {} role is not enabled here (enabled: {})",
            input.role,
            enabled.join(", ")
        ))
    }

    fn run(&self, input: AgentInput, ctx: ToolContext) -> ToolFuture {
        let parent = Arc::clone(&self.parent);
        Box::pin(async move { run_subagent(parent, input, ctx.cancel).await })
    }
}

/// One of the caller's tools a subagent is not given. A fork is still shown it (its tool list
/// must be the caller's, byte for byte, for the cache), but every call is refused.
pub(super) struct Withheld {
    pub definition: ToolDefinition,
    pub why: String,
}

impl Tool for Withheld {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn description(&self) -> &str {
        &self.definition.description
    }

    fn input_schema(&self) -> Value {
        self.definition.input_schema.clone()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn result_budget(&self) -> Option<usize> {
        None
    }

    fn prepare<'a>(&'a self, _input: &Value) -> Result<Box<dyn PreparedCall + 'a>, String> {
        Ok(Box::new(Refused(self.why.clone())))
    }
}

/// A call of a withheld tool: refused at validation, before hooks or permissions.
struct Refused(String);

impl PreparedCall for Refused {
    fn validate(&self, _ctx: &ToolContext) -> Result<(), String> {
        Err(self.0.clone())
    }

    fn is_concurrency_safe(&self) -> bool {
        false
    }

    fn permission_subject(&self) -> Subject {
        Subject::None
    }

    fn call(self: Box<Self>, _ctx: ToolContext) -> ToolFuture {
        Box::pin(async move { Err(ToolError::Refused(self.0)) })
    }
}
