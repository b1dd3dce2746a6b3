//! `TypedTool`: a tool written against its own input struct. The struct's derived schema is
//! what the model is sent, the pipeline deserialises the model's JSON into it once, and the
//! tool only ever sees the struct — so the schema and what the tool reads cannot drift apart.
//! Every `TypedTool` is a [`Tool`] through the adapter below. A new tool:
//!
//! ```
//! # use crew_tools::{ToolContext, ToolFuture, ToolKind, ToolOutput, TypedTool};
//! # use schemars::JsonSchema;
//! # use serde::Deserialize;
//! # struct Recall;
//! #[derive(Debug, Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)] // an unknown field is refused, naming it
//! pub struct RecallInput {
//!     /// What to look for            <- doc comments are the model's field descriptions
//!     pub query: String,
//!     /// How many hits (default 5)   <- `Option`: may be left out (not `null`)
//!     #[schemars(range(min = 1, max = 50))] // checked by the pipeline's schema step
//!     pub limit: Option<usize>,
//! }
//!
//! impl TypedTool for Recall {
//!     type Input = RecallInput;
//!     const NAME: &'static str = "recall";
//!     const KIND: ToolKind = ToolKind::Read;
//!     fn description(&self) -> &str { "Search the memory." }
//!     fn run(&self, input: RecallInput, ctx: ToolContext) -> ToolFuture {
//!         Box::pin(async move { Ok(ToolOutput::ok(input.query)) })
//!     }
//! }
//! # let schema = crew_tools::Tool::input_schema(&Recall);
//! # assert_eq!(schema["properties"]["limit"]["maximum"], 50);
//! ```
//!
//! Enums (`#[serde(rename_all = "snake_case")]`) become string enums; `#[serde(default)]`
//! fields are optional. `validate`, `is_concurrency_safe` and `permission_subject` default to
//! "fine", "no" and "the tool name only". `tests/tool_inputs.rs` snapshots every schema and
//! sends every field a misfit.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolContext;
use crate::schema::{derived_schema, parse_input};
use crate::tool::{DEFAULT_RESULT_BUDGET, PreparedCall, Subject, Tool, ToolFuture, ToolKind};

/// The input of a tool that takes none: an empty object.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

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
