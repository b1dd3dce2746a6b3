//! `read`: a file's lines with numbers, recording what was read so `edit` can check it.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{clip_line, display_path, looks_binary, readable_path, usize_field};
use crate::tools::context::{FileStamp, ToolContext};
use crate::tools::tool::{Subject, Tool, ToolError, ToolKind, ToolOutput, required_str, str_field};

const DEFAULT_LIMIT: usize = 2_000;
const MAX_LINE_CHARS: usize = 2_000;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read a text file. Lines come numbered (cat -n style). Use offset (1-based line) and limit \
         (lines, default 2000) for large files. A file must be read before it can be edited."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace or absolute inside it"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to show"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        let path = readable_path(ctx, str_field(input, "path").unwrap_or_default())
            .map_err(|e| e.to_string())?;
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => Err(format!(
                "{} is a directory; use glob to list files",
                display_path(ctx, &path)
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("{}: {e}", display_path(ctx, &path))),
        }
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn result_budget(&self) -> Option<usize> {
        // Exempt: a spilled result is read back with this tool, which must never spill again.
        // The line limit and line clipping bound the output instead.
        None
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
            let path = readable_path(&ctx, required_str(&input, "path")?)?;
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| ToolError::io(&path, e))?;
            let meta = tokio::fs::metadata(&path)
                .await
                .map_err(|e| ToolError::io(&path, e))?;
            if looks_binary(&bytes) {
                return Err(ToolError::Refused(format!(
                    "{} looks like a binary file ({} bytes); not shown",
                    display_path(&ctx, &path),
                    bytes.len()
                )));
            }
            ctx.read_state.record(&path, FileStamp::of(&bytes, &meta));
            let offset = usize_field(&input, "offset").unwrap_or(1).max(1);
            let limit = usize_field(&input, "limit").unwrap_or(DEFAULT_LIMIT).max(1);
            Ok(ToolOutput::ok(numbered(
                &String::from_utf8_lossy(&bytes),
                offset,
                limit,
            )))
        })
    }
}

fn numbered(text: &str, offset: usize, limit: usize) -> String {
    if text.is_empty() {
        return "(empty file)".to_string();
    }
    let total = text.lines().count();
    if offset > total {
        return format!("(the file has {total} lines; offset {offset} is past the end)");
    }
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        out.push_str(&format!(
            "{:>6}\t{}\n",
            i + 1,
            clip_line(line, MAX_LINE_CHARS)
        ));
    }
    let shown_to = (offset - 1 + limit).min(total);
    if shown_to < total {
        out.push_str(&format!(
            "… {} more lines; continue with offset {}\n",
            total - shown_to,
            shown_to + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_offset_and_limit() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            numbered(text, 1, 2),
            "     1\ta\n     2\tb\n… 2 more lines; continue with offset 3\n"
        );
        assert_eq!(numbered(text, 4, 10), "     4\td\n");
        assert!(numbered(text, 9, 1).contains("past the end"));
        assert_eq!(numbered("", 1, 1), "(empty file)");
    }
}
