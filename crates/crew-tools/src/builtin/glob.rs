//! `glob`: files matching a pattern, honouring `.gitignore`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{display_path, file_glob, search_root, search_subject, visible_files};
use crate::context::ToolContext;
use crate::tool::{Subject, ToolError, ToolKind, ToolOutput};
use crate::{ToolFuture, TypedTool};

const MAX_RESULTS: usize = 1_000;

#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// Glob pattern, relative to path
    pub pattern: String,
    /// Directory to search (default: the workspace)
    pub path: Option<String>,
}

impl TypedTool for GlobTool {
    type Input = GlobInput;
    const NAME: &'static str = "glob";
    const KIND: ToolKind = ToolKind::Read;

    fn description(&self) -> &str {
        "List files matching a glob pattern (e.g. \"**/*.rs\", \"src/*.toml\"; a pattern without / \
         matches file names at any depth), sorted by path. Files ignored by .gitignore and hidden \
         files are left out."
    }

    fn validate(&self, input: &GlobInput, ctx: &ToolContext) -> Result<(), String> {
        file_glob(&input.pattern)?;
        search_root(ctx, input.path.as_deref())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn is_concurrency_safe(&self, _input: &GlobInput) -> bool {
        true
    }

    fn permission_subject(&self, input: &GlobInput) -> Subject {
        search_subject(input.path.as_deref())
    }

    fn run(&self, input: GlobInput, ctx: ToolContext) -> ToolFuture {
        Box::pin(async move {
            let root = search_root(&ctx, input.path.as_deref())?;
            let glob = file_glob(&input.pattern).map_err(ToolError::InvalidInput)?;
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
