//! `write`: create or overwrite a file inside the workspace, creating its directories. An
//! existing file is overwritten only when the agent read it and it has not changed since, as
//! `edit` requires.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{display_path, ensure_fresh, writable_path};
use crate::context::{FileStamp, ToolContext};
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};

#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// File path inside the workspace
    pub path: String,
    /// The complete new content
    pub content: String,
}

impl TypedTool for WriteTool {
    type Input = WriteInput;
    const NAME: &'static str = "write";
    const KIND: ToolKind = ToolKind::Write;

    fn description(&self) -> &str {
        "Write a file (created or overwritten), creating missing directories. An existing file \
         must be read first. Prefer edit for changes to an existing file."
    }

    fn validate(&self, input: &WriteInput, ctx: &ToolContext) -> Result<(), String> {
        let path = writable_path(ctx, &input.path).map_err(|e| e.to_string())?;
        if path.is_dir() {
            return Err(format!("{} is a directory", display_path(ctx, &path)));
        }
        existing_is_fresh(ctx, &path)
    }

    fn permission_subject(&self, input: &WriteInput) -> Subject {
        Subject::Path(input.path.clone())
    }

    fn run(&self, input: WriteInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let path = writable_path(&ctx, &input.path)?;
            let content = input.content;
            // Checked again: time passes between validation and the call (hooks, a person deciding).
            existing_is_fresh(&ctx, &path).map_err(ToolError::Refused)?;
            super::write_in_workspace(&ctx, &path, content.as_bytes())?;
            record_written(&ctx, &path, content.as_bytes()).await?;
            Ok(ToolOutput::ok(format!(
                "wrote {} bytes to {}",
                content.len(),
                display_path(&ctx, &path)
            )))
        })
    }
}

/// A new file needs no read; an existing one must have been read and be unchanged since.
fn existing_is_fresh(ctx: &ToolContext, path: &Path) -> Result<(), String> {
    match std::fs::read(path) {
        Ok(bytes) => ensure_fresh(ctx, path, &bytes, "overwriting it"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", display_path(ctx, path))),
    }
}

/// After a tool wrote `bytes` to `path`, the agent knows the file: later edits need no re-read.
pub(super) async fn record_written(
    ctx: &ToolContext,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ToolError> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| ToolError::io(path, e))?;
    ctx.read_state.record(path, FileStamp::of(bytes, &meta));
    Ok(())
}
