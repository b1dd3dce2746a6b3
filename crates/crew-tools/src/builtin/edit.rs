//! `edit`: exact string replacement in a file the agent has read and that has not changed
//! since. Refusing stale edits keeps the model from overwriting changes it never saw.

use schemars::JsonSchema;
use serde::Deserialize;

use super::write::record_written;
use super::{display_path, ensure_fresh, writable_path};
use crate::context::ToolContext;
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};

#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// File path inside the workspace
    pub path: String,
    /// Exact text to replace
    pub old_string: String,
    /// Replacement text
    pub new_string: String,
    /// Replace every occurrence (default false)
    #[serde(default)]
    pub replace_all: bool,
}

impl TypedTool for EditTool {
    type Input = EditInput;
    const NAME: &'static str = "edit";
    const KIND: ToolKind = ToolKind::Write;

    fn description(&self) -> &str {
        "Replace old_string with new_string in a file, exactly (whitespace included). Read the file \
         first. old_string must occur once, unless replace_all is true."
    }

    fn validate(&self, input: &EditInput, ctx: &ToolContext) -> Result<(), String> {
        if input.old_string.is_empty() {
            return Err("old_string is empty; use write to create a file".to_string());
        }
        if input.old_string == input.new_string {
            return Err("old_string and new_string are the same".to_string());
        }
        let path = writable_path(ctx, &input.path).map_err(|e| e.to_string())?;
        let bytes =
            std::fs::read(&path).map_err(|e| format!("{}: {e}", display_path(ctx, &path)))?;
        ensure_fresh(ctx, &path, &bytes, "editing")
    }

    fn permission_subject(&self, input: &EditInput) -> Subject {
        Subject::Path(input.path.clone())
    }

    fn run(&self, input: EditInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let path = writable_path(&ctx, &input.path)?;
            let (old, new) = (input.old_string.as_str(), input.new_string.as_str());
            let replace_all = input.replace_all;

            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| ToolError::io(&path, e))?;
            // Checked again: time passes between validation and the call (hooks, a person deciding).
            ensure_fresh(&ctx, &path, &bytes, "editing").map_err(ToolError::Refused)?;
            let text = String::from_utf8(bytes).map_err(|_| {
                ToolError::Refused(format!("{} is not UTF-8 text", display_path(&ctx, &path)))
            })?;
            let count = text.matches(old).count();
            let shown = display_path(&ctx, &path);
            match count {
                0 => {
                    return Err(ToolError::Refused(format!(
                        "old_string was not found in {shown}"
                    )));
                }
                n if n > 1 && !replace_all => {
                    return Err(ToolError::Refused(format!(
                        "old_string occurs {n} times in {shown}; add surrounding context to make it unique, or set replace_all"
                    )));
                }
                _ => {}
            }
            let updated = if replace_all {
                text.replace(old, new)
            } else {
                text.replacen(old, new, 1)
            };
            super::write_in_workspace(&ctx, &path, updated.as_bytes())?;
            record_written(&ctx, &path, updated.as_bytes()).await?;
            let noun = if count == 1 {
                "replacement"
            } else {
                "replacements"
            };
            Ok(ToolOutput::ok(format!("edited {shown}: {count} {noun}")))
        })
    }
}
