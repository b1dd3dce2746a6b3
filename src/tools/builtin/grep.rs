//! `grep`: lines matching a regex in the files under a path, honouring `.gitignore` and
//! skipping binary files.

use futures::future::BoxFuture;
use regex::Regex;
use serde_json::{Value, json};

use super::{
    clip_line, display_path, file_glob, looks_binary, path_subject, search_root, visible_files,
};
use crate::tools::context::ToolContext;
use crate::tools::tool::{
    DEFAULT_RESULT_BUDGET, Subject, Tool, ToolError, ToolKind, ToolOutput, required_str, str_field,
};

const MAX_MATCHES: usize = 1_000;
const MAX_LINE_CHARS: usize = 500;

#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax). Output lines are \
         path:line:text. Optional glob filters files (\"*.rs\"). Ignored, hidden and binary files \
         are skipped."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "path": {"type": "string", "description": "File or directory to search (default: the workspace)"},
                "glob": {"type": "string", "description": "Only files matching this glob"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn validate(&self, input: &Value, ctx: &ToolContext) -> Result<(), String> {
        Regex::new(str_field(input, "pattern").unwrap_or_default())
            .map_err(|e| format!("bad regex: {e}"))?;
        if let Some(glob) = str_field(input, "glob") {
            file_glob(glob)?;
        }
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
            let regex = Regex::new(required_str(&input, "pattern")?)
                .map_err(|e| ToolError::InvalidInput(format!("bad regex: {e}")))?;
            let glob = str_field(&input, "glob")
                .map(file_glob)
                .transpose()
                .map_err(ToolError::InvalidInput)?;
            let search_ctx = ctx.clone();
            let (lines, total) = tokio::task::spawn_blocking(move || {
                let mut lines = Vec::new();
                let mut total = 0usize;
                let mut files: Vec<_> = visible_files(&root)
                    .filter(|f| glob.as_ref().is_none_or(|g| g.matches(&root, f)))
                    .collect();
                files.sort();
                for file in files {
                    if search_ctx.cancel.is_cancelled() {
                        break;
                    }
                    let Ok(bytes) = std::fs::read(&file) else {
                        continue;
                    };
                    if looks_binary(&bytes) {
                        continue;
                    }
                    let text = String::from_utf8_lossy(&bytes);
                    let shown = display_path(&search_ctx, &file);
                    for (number, line) in
                        text.lines().enumerate().filter(|(_, l)| regex.is_match(l))
                    {
                        total += 1;
                        if lines.len() < MAX_MATCHES {
                            lines.push(format!(
                                "{shown}:{}:{}",
                                number + 1,
                                clip_line(line, MAX_LINE_CHARS)
                            ));
                        }
                    }
                }
                (lines, total)
            })
            .await
            .map_err(|e| ToolError::Refused(format!("search failed: {e}")))?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            if lines.is_empty() {
                return Ok(ToolOutput::ok("no matches"));
            }
            let mut out = lines.join("\n");
            if total > MAX_MATCHES {
                out.push_str(&format!(
                    "\n… {} more matches; narrow the pattern or path",
                    total - MAX_MATCHES
                ));
            }
            Ok(ToolOutput::ok(out))
        })
    }
}
