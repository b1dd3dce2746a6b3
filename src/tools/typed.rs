//! `TypedTool`: a tool written against its own input struct. The struct's derived schema is
//! what the model is sent, the pipeline deserialises the model's JSON into it, and the tool
//! only ever sees the struct — so the schema and what the tool reads cannot drift apart.
//! Every `TypedTool` is a [`Tool`] through the adapter below; a new tool is an input struct
//! (`#[derive(Deserialize, JsonSchema)]`, `#[serde(deny_unknown_fields)]`, a doc comment per
//! field) plus an `impl TypedTool`.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tools::context::ToolContext;
use crate::tools::schema::{derived_schema, parse_input};
use crate::tools::tool::{
    DEFAULT_RESULT_BUDGET, PreparedCall, Subject, Tool, ToolError, ToolKind, ToolOutput,
};

/// The input of a tool that takes none: an empty object.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// The future a tool call returns.
pub type ToolFuture = BoxFuture<'static, Result<ToolOutput, ToolError>>;

pub trait TypedTool: Send + Sync {
    /// What the model sends; its JSON schema is derived from it.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    const NAME: &'static str;
    const KIND: ToolKind;
    /// Result size in bytes above which the output is spilled to a file; `None` = never spilled.
    const RESULT_BUDGET: Option<usize> = Some(DEFAULT_RESULT_BUDGET);

    fn description(&self) -> &str;
    /// Semantic check of a well-typed input (paths inside the workspace, non-empty command…).
    fn validate(&self, _input: &Self::Input, _ctx: &ToolContext) -> Result<(), String> {
        Ok(())
    }
    /// Whether this particular call may run in parallel with other safe calls.
    fn is_concurrency_safe(&self, _input: &Self::Input) -> bool {
        false
    }
    /// What permission rules match for this call; by default only the tool name.
    fn permission_subject(&self, _input: &Self::Input) -> Subject {
        Subject::None
    }
    fn run(&self, input: Self::Input, ctx: ToolContext) -> ToolFuture;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        TypedTool::description(self)
    }

    fn input_schema(&self) -> Value {
        derived_schema::<T::Input>()
    }

    fn kind(&self) -> ToolKind {
        T::KIND
    }

    fn result_budget(&self) -> Option<usize> {
        T::RESULT_BUDGET
    }

    fn prepare<'a>(&'a self, input: &Value) -> Result<Box<dyn PreparedCall + 'a>, String> {
        Ok(Box::new(Prepared {
            tool: self,
            input: parse_input(input)?,
        }))
    }
}

/// A `TypedTool` and its deserialised input.
struct Prepared<'a, T: TypedTool> {
    tool: &'a T,
    input: T::Input,
}

impl<T: TypedTool> PreparedCall for Prepared<'_, T> {
    fn validate(&self, ctx: &ToolContext) -> Result<(), String> {
        self.tool.validate(&self.input, ctx)
    }

    fn is_concurrency_safe(&self) -> bool {
        self.tool.is_concurrency_safe(&self.input)
    }

    fn permission_subject(&self) -> Subject {
        self.tool.permission_subject(&self.input)
    }

    fn call(self: Box<Self>, ctx: ToolContext) -> ToolFuture {
        self.tool.run(self.input, ctx)
    }
}
