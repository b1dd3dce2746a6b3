//! `edit`: exact string replacement in a file the agent has read and that has not changed
//! since. Refusing stale edits keeps the model from overwriting changes it never saw.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::write::record_written;
use super::{display_path, ensure_fresh, path_subject, writable_arg};
use crate::tools::context::ToolContext;
use crate::tools::tool::{Subject, Tool, ToolError, ToolKind, ToolOutput, required_str, str_field};

#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Replace old_string with new_string in a file, exactly (whitespace included). Read the file \
         first. old_string must occur once, unless replace_all is true."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path inside the workspace"},
                "old_string": {"type": "string", "description": "Exact text to replace"},
                "new_string": {"type": "string", "description": "Replacement text"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Write
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let old = str_field(input, "old_string").unwrap_or_default();
        if old.is_empty() {
            return Err("old_string is empty; use write to create a file".to_string());
        }
        if Some(old) == str_field(input, "new_string") {
            return Err("old_string and new_string are the same".to_string());
        }
        let path = writable_arg(ctx, input).map_err(|e| e.to_string())?;
        let bytes =
            std::fs::read(&path).map_err(|e| format!("{}: {e}", display_path(ctx, &path)))?;
        ensure_fresh(ctx, &path, &bytes, "editing")
    }

    fn permission_subject(&self, input: &Value) -> Subject {
        path_subject(input, "")
    }

    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let path = writable_arg(&ctx, &input)?;
            let old = required_str(&input, "old_string")?;
            let new = required_str(&input, "new_string")?;
            let replace_all = input
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);

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
            tokio::fs::write(&path, &updated)
                .await
                .map_err(|e| ToolError::io(&path, e))?;
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
