//! The `agent` tool the caller's model sees.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::run::{Parent, run_subagent};
use super::{AGENT_TOOL, SubagentContext, SubagentRole};
use crate::model::ToolDefinition;
use crate::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// The input the model gives.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentInput {
    /// A few words for the person watching (shown nested under the caller).
    pub description: String,
    /// What the subagent must do; everything it needs to know when it starts fresh.
    pub prompt: String,
    pub role: SubagentRole,
    #[serde(default)]
    pub context: SubagentContext,
}

/// Starts a subagent and returns its final report.
pub struct AgentTool {
    pub(super) parent: Arc<Parent>,
}

impl Tool for AgentTool {
    fn name(&self) -> &str {
        AGENT_TOOL
    }

    fn description(&self) -> &str {
        "Start a subagent for one self-contained piece of work and get back only its final \
         report (its steps stay out of your context). Roles: explore (read-only look-ups), \
         verify (runs checks, ends with VERDICT: PASS|FAIL|PARTIAL), general. context `fresh` \
         (default) starts it knowing only your prompt, so say everything it needs; `fork` \
         starts it with your whole conversation so far. It cannot start subagents itself."
    }

    fn input_schema(&self) -> Value {
        let roles: Vec<&str> = self
            .parent
            .settings
            .roles
            .iter()
            .map(|r| r.as_str())
            .collect();
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "minLength": 1, "maxLength": 80},
                "prompt": {"type": "string", "minLength": 1},
                "role": {"enum": roles},
                "context": {"enum": ["fresh", "fork"]}
            },
            "required": ["description", "prompt", "role"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        // Starting one touches nothing: each of the subagent's own calls goes through the
        // caller's permission policy.
        ToolKind::Read
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let parent = Arc::clone(&self.parent);
        Box::pin(async move {
            let input: AgentInput = serde_json::from_value(input)
                .map_err(|e| ToolError::InvalidInput(e.to_string()))?;
            run_subagent(parent, input, ctx.cancel).await
        })
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

    fn validate(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        Err(self.why.clone())
    }

    fn call(
        &self,
        _input: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let why = self.why.clone();
        Box::pin(async move { Err(ToolError::Refused(why)) })
    }
}
