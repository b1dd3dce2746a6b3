//! `write`: create or overwrite a file inside the workspace, creating its directories.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{display_path, writable_path};
use crate::tools::context::{FileStamp, ToolContext};
use crate::tools::tool::{Subject, Tool, ToolError, ToolKind, ToolOutput, required_str, str_field};

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write a file (created or overwritten), creating missing directories. Prefer edit for \
         changes to an existing file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path inside the workspace"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Write
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let path = writable_path(ctx, str_field(input, "path").unwrap_or_default())
            .map_err(|e| e.to_string())?;
        if path.is_dir() {
            return Err(format!("{} is a directory", display_path(ctx, &path)));
        }
        Ok(())
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    fn result_budget(&self) -> Option<usize> {
        Some(crate::tools::tool::DEFAULT_RESULT_BUDGET)
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        Subject::Path(str_field(input, "path").unwrap_or_default().to_string())
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let path = writable_path(&ctx, required_str(&input, "path")?)?;
            let content = required_str(&input, "content")?;
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| ToolError::io(parent, e))?;
            }
            tokio::fs::write(&path, content)
                .await
                .map_err(|e| ToolError::io(&path, e))?;
            record_written(&ctx, &path, content.as_bytes()).await?;
            Ok(ToolOutput::ok(format!(
                "wrote {} bytes to {}",
                content.len(),
                display_path(&ctx, &path)
            )))
        })
    }
}

/// After a tool wrote `bytes` to `path`, the agent knows the file: later edits need no re-read.
pub(super) async fn record_written(
    ctx: &ToolContext,
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<(), ToolError> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| ToolError::io(path, e))?;
    ctx.read_state.record(path, FileStamp::of(bytes, &meta));
    Ok(())
}
