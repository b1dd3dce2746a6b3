//! `grep`: lines matching a regex in the files under a path, honouring `.gitignore` and
//! skipping binary files.

use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    clip_line, display_path, file_glob, looks_binary, search_root, search_subject, visible_files,
};
use crate::context::ToolContext;
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};

const MAX_MATCHES: usize = 1_000;
const MAX_LINE_CHARS: usize = 500;

#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// Regular expression
    pub pattern: String,
    /// File or directory to search (default: the workspace)
    pub path: Option<String>,
    /// Only files matching this glob
    pub glob: Option<String>,
}

impl TypedTool for GrepTool {
    type Input = GrepInput;
    const NAME: &'static str = "grep";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "Search file contents with a regular expression (Rust regex syntax). Output lines are \
         path:line:text. Optional glob filters files (\"*.rs\"). Ignored, hidden and binary files \
         are skipped."
    }

    fn validate(&self, input: &GrepInput, ctx: &ToolContext) -> Result<(), String> {
        Regex::new(&input.pattern).map_err(|e| format!("bad regex: {e}"))?;
        if let Some(glob) = &input.glob {
            file_glob(glob)?;
        }
        search_root(ctx, input.path.as_deref())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn is_concurrency_safe(&self, _input: &GrepInput) -> bool {
        true
    }

    fn permission_subject(&self, input: &GrepInput) -> Subject {
        search_subject(input.path.as_deref())
    }

    fn run(&self, input: GrepInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let root = search_root(&ctx, input.path.as_deref())?;
            let regex = Regex::new(&input.pattern)
                .map_err(|e| ToolError::InvalidInput(format!("bad regex: {e}")))?;
            let glob = input
                .glob
                .as_deref()
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
