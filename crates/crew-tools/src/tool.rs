//! The `Tool` trait the registry and the pipeline see (tools implement `TypedTool`, which
//! provides it), and the values a call takes and returns.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;

/// What a tool does to the world; the permission mode's default decision depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolKind {
    Read,
    Write,
    Exec,
    Other,
}

/// What permission rules are matched against for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", content = "value")]
pub enum Subject {
    /// Nothing but the tool name can be matched.
    None,
    /// A shell command line (split into its commands by the policy).
    Command(String),
    /// A file or directory path as the model wrote it (resolved against the workspace by the policy).
    Path(String),
}

/// The text the model sees as the tool's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// Why a tool call failed; the pipeline turns every one of these into an error `ToolOutput`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("{0}")]
    Path(#[from] crate::paths::PathError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Refused(String),
    #[error("timed out after {0} ms")]
    Timeout(u64),
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// The future a tool call returns.
pub type ToolFuture = BoxFuture<'static, Result<ToolOutput, ToolError>>;

/// A tool the model can call, as the registry and the pipeline see it. Dyn-compatible: the
/// registry holds `Arc<dyn Tool>`. Tools implement [`TypedTool`](crate::TypedTool),
/// which provides this.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the input, sent to the model and checked by the pipeline first.
    fn input_schema(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Result size in bytes above which the output is spilled to a file; `None` = never spilled.
    fn result_budget(&self) -> Option<usize>;
    /// Deserialises the model's JSON into the tool's input, once per call; the error names
    /// the field that does not fit.
    fn prepare<'a>(&'a self, input: &Value) -> Result<Box<dyn PreparedCall + 'a>, String>;
}

/// One call of a tool with its input deserialised: what every later step works on.
pub trait PreparedCall: Send {
    /// Semantic check after the schema check (paths inside the workspace, non-empty command…).
    fn validate(&self, ctx: &ToolContext) -> Result<(), String>;
    /// Whether this call may run in parallel with other safe calls.
    fn is_concurrency_safe(&self) -> bool;
    /// What permission rules match for this call.
    fn permission_subject(&self) -> Subject;
    fn call(self: Box<Self>, ctx: ToolContext) -> ToolFuture;
}

/// Default result budget for tools that produce unbounded text (bytes).
pub const DEFAULT_RESULT_BUDGET: usize = 30_000;

/// Calling a tool with the model's JSON directly, outside the pipeline (no schema check,
/// hooks, permission or result budget): for deciding concurrency, benchmarks and tests.
pub trait ToolJson: Tool {
    /// Deserialises `input` and runs the tool's own validation.
    fn validate_json(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        self.prepare(input)?.validate(ctx)
    }

    /// Whether a call with `input` may run beside other safe calls; an input that does not fit
    /// the tool cannot be understood, so it is not safe.
    fn is_concurrency_safe_json(&self, input: &Value) -> bool {
        self.prepare(input)
            .is_ok_and(|prepared| prepared.is_concurrency_safe())
    }

    /// Deserialises `input` and calls the tool, without validating it first.
    fn call_json(&self, input: &Value, ctx: ToolContext) -> ToolFuture {
        match self.prepare(input) {
            Ok(prepared) => prepared.call(ctx),
            Err(problem) => Box::pin(async move { Err(ToolError::InvalidInput(problem)) }),
        }
    }
}

impl<T: Tool + ?Sized> ToolJson for T {}
