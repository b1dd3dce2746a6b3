//! The `Tool` trait every tool implements, and the values a call takes and returns.

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::context::ToolContext;

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
    Path(#[from] crate::tools::paths::PathError),
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

/// A tool the model can call. Dyn-compatible: the registry holds `Arc<dyn Tool>`.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the input; checked by the pipeline before `validate`.
    fn input_schema(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Semantic check after the schema check (paths inside the workspace, non-empty command…).
    fn validate(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), String> {
        Ok(())
    }
    /// Whether this particular call may run in parallel with other safe calls.
    /// Anything that cannot be understood must answer `false`, hence the default.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    /// Result size in bytes above which the output is spilled to a file; `None` = never spilled.
    fn result_budget(&self) -> Option<usize> {
        Some(DEFAULT_RESULT_BUDGET)
    }
    /// What permission rules match for this call; by default only the tool name.
    fn permission_subject(&self, _input: &Value) -> Subject {
        Subject::None
    }
    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// Default result budget for tools that produce unbounded text (bytes).
pub const DEFAULT_RESULT_BUDGET: usize = 30_000;

/// The input as the tool's typed struct; serde's message names the field that is wrong.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|e| ToolError::InvalidInput(e.to_string()))
}

/// Reads an optional string field of a tool input.
pub fn str_field<'a>(input: &'a Value, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str)
}

/// Reads a required string field; the schema check normally guarantees it exists.
pub fn required_str<'a>(input: &'a Value, field: &str) -> Result<&'a str, ToolError> {
    str_field(input, field)
        .ok_or_else(|| ToolError::InvalidInput(format!("missing string field `{field}`")))
}
