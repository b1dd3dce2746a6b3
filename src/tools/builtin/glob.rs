//! `glob`: files matching a pattern, honouring `.gitignore`.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{display_path, file_glob, path_subject, search_root, visible_files};
use crate::tools::context::ToolContext;
use crate::tools::tool::{
    DEFAULT_RESULT_BUDGET, Subject, Tool, ToolError, ToolKind, ToolOutput, required_str, str_field,
};

const MAX_RESULTS: usize = 1_000;

#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "List files matching a glob pattern (e.g. \"**/*.rs\", \"src/*.toml\"; a pattern without / \
         matches file names at any depth), sorted by path. Files ignored by .gitignore and hidden \
         files are left out."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, relative to path"},
                "path": {"type": "string", "description": "Directory to search (default: the workspace)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        file_glob(str_field(input, "pattern").unwrap_or_default())?;
        search_root(ctx, input)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn result_budget(&self) -> Option<usize> {
        Some(DEFAULT_RESULT_BUDGET)
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        path_subject(input, ".")
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let root = search_root(&ctx, &input)?;
            let glob =
                file_glob(required_str(&input, "pattern")?).map_err(ToolError::InvalidInput)?;
            let cancel = ctx.cancel.clone();
            let walk_root = root.clone();
            let mut found = tokio::task::spawn_blocking(move || {
                visible_files(&walk_root)
                    .take_while(|_| !cancel.is_cancelled())
                    .filter(|file| glob.matches(&walk_root, file))
                    .collect::<Vec<_>>()
            })
            .await
            .map_err(|e| ToolError::Refused(format!("file walk failed: {e}")))?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            found.sort();
            if found.is_empty() {
                return Ok(ToolOutput::ok("no files matched"));
            }
            let total = found.len();
            let mut out: Vec<String> = found
                .iter()
                .take(MAX_RESULTS)
                .map(|p| display_path(&ctx, p))
                .collect();
            if total > MAX_RESULTS {
                out.push(format!(
                    "… {} more files; narrow the pattern",
                    total - MAX_RESULTS
                ));
            }
            Ok(ToolOutput::ok(out.join("\n")))
        })
    }
}
