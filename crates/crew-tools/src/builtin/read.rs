//! `read`: a file's lines with numbers, recording what was read so `edit` can check it.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{clip_line, display_path, looks_binary, readable_path};
use crate::context::{FileStamp, ToolContext};
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};

const DEFAULT_LIMIT: usize = 2_000;
const MAX_LINE_CHARS: usize = 2_000;
/// The most one read returns; long lines could otherwise make a 2,000-line page megabytes.
const MAX_OUTPUT_BYTES: usize = 100 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// File path, relative to the workspace or absolute inside it
    pub path: String,
    /// First line to show (1-based)
    #[schemars(range(min = 1))]
    pub offset: Option<usize>,
    /// Number of lines to show
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

impl TypedTool for ReadTool {
    type Input = ReadInput;
    const NAME: &'static str = "read";
    const KIND: ToolKind = ToolKind::Read;
    // Exempt: a spilled result is read back with this tool, which must never spill again.
    // The line limit and line clipping bound the output instead.
    const RESULT_BUDGET: Option<usize> = None;

    fn description(&self) -> &str {
        "Read a text file. Lines come numbered (cat -n style). Use offset (1-based line) and limit \
         (lines, default 2000) for large files; one read returns at most 100 KiB and says which \
         offset to continue from. A file must be read before it can be edited."
    }

    fn validate(&self, input: &ReadInput, ctx: &ToolContext) -> Result<(), String> {
        let path = readable_path(ctx, &input.path).map_err(|e| e.to_string())?;
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => Err(format!(
                "{} is a directory; use glob to list files",
                display_path(ctx, &path)
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("{}: {e}", display_path(ctx, &path))),
        }
    }

    fn is_concurrency_safe(&self, _input: &ReadInput) -> bool {
        true
    }

    fn permission_subject(&self, input: &ReadInput) -> Subject {
        Subject::Path(input.path.clone())
    }

    fn run(&self, input: ReadInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let path = readable_path(&ctx, &input.path)?;
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
            let offset = input.offset.unwrap_or(1).max(1);
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            Ok(ToolOutput::ok(numbered(
                &String::from_utf8_lossy(&bytes),
                offset,
                limit,
                MAX_OUTPUT_BYTES,
            )))
        })
    }
}

/// Lines `offset..offset+limit` numbered, stopping early once the page would pass `max_bytes`
/// (at least one line is shown); a page that stops early ends with the offset to continue from.
fn numbered(text: &str, offset: usize, limit: usize, max_bytes: usize) -> String {
    if text.is_empty() {
        return "(empty file)".to_string();
    }
    let total = text.lines().count();
    if offset > total {
        return format!("(the file has {total} lines; offset {offset} is past the end)");
    }
    let mut out = String::new();
    let mut shown_to = offset - 1;
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let numbered_line = format!("{:>6}\t{}\n", i + 1, clip_line(line, MAX_LINE_CHARS));
        if shown_to >= offset && out.len() + numbered_line.len() > max_bytes {
            out.push_str(&format!(
                "… output capped at {max_bytes} bytes; {} more lines; continue with offset {}\n",
                total - shown_to,
                shown_to + 1
            ));
            return out;
        }
        out.push_str(&numbered_line);
        shown_to = i + 1;
    }
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
            numbered(text, 1, 2, 1000),
            "     1\ta\n     2\tb\n… 2 more lines; continue with offset 3\n"
        );
        assert_eq!(numbered(text, 4, 10, 1000), "     4\td\n");
        assert!(numbered(text, 9, 1, 1000).contains("past the end"));
        assert_eq!(numbered("", 1, 1, 1000), "(empty file)");
    }

    #[test]
    fn a_page_stops_at_the_byte_cap_and_says_where_to_continue() {
        let text = "aaaa\nbbbb\ncccc\n";
        // Each numbered line is 12 bytes: two fit in 30.
        assert_eq!(
            numbered(text, 1, 10, 30),
            "     1\taaaa\n     2\tbbbb\n… output capped at 30 bytes; 1 more lines; continue with offset 3\n"
        );
        // One line is always shown, however small the cap.
        assert!(numbered(text, 2, 10, 1).starts_with("     2\tbbbb\n… output capped"));
    }
}
