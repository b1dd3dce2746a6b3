//! The core tools: read, write, edit, glob, grep, bash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::beneath::{BeneathError, write_beneath};
use crate::context::ToolContext;
use crate::paths::{relative_to, resolve_within};
use crate::tool::{Subject, Tool, ToolError};
use crew_sandbox::policy::is_protected;

pub mod bash;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod read;
pub mod write;

pub use bash::BashTool;
pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use read::ReadTool;
pub use write::WriteTool;

/// The core tools in their prompt order.
pub fn core_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(GlobTool),
        Arc::new(GrepTool),
        Arc::new(BashTool::default()),
    ]
}

/// A path a reading tool may use: inside the workspace or the spill directory.
fn readable_path(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    Ok(resolve_within(&ctx.read_roots(), raw)?)
}

/// A path a writing tool may use: inside the workspace, and not `.git` or crew's files there.
/// These tools run outside the sandbox, so they must refuse what it keeps read-only.
fn writable_path(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    let path = resolve_within(&ctx.write_roots(), raw)?;
    // Checked lexically and through symbolic links, so `link -> .git` is refused too.
    let resolved = resolve_existing(&path);
    let protected = ctx.write_roots().iter().any(|root| {
        is_protected(root, &path)
            || is_protected(
                &root.canonicalize().unwrap_or(root.to_path_buf()),
                &resolved,
            )
    });
    if protected {
        return Err(ToolError::Refused(format!(
            "{} is protected: .git and crew's own files are changed only by crew, not by tools",
            path.display()
        )));
    }
    Ok(path)
}

/// Writes `bytes` to `path` (from [`writable_path`]), its folders made as needed, every
/// component resolved by the kernel beneath the workspace (see `beneath`).
fn write_in_workspace(ctx: &ToolContext, path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    write_beneath(&ctx.workspace, path, bytes).map_err(|e| match e {
        BeneathError::Io { path, source } => ToolError::io(path, source),
        refused => ToolError::Refused(refused.to_string()),
    })
}

/// `path` with its longest existing prefix canonicalised.
fn resolve_existing(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(real) = ancestor.canonicalize() {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            };
        }
    }
    path.to_path_buf()
}

/// A search tool's optional `path`, or the workspace when it is absent.
fn search_root(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    readable_path(ctx, path.unwrap_or(SEARCH_ROOT))
}

/// What permission rules match for a search tool: its `path`, or the workspace.
fn search_subject(path: Option<&str>) -> Subject {
    Subject::Path(path.unwrap_or(SEARCH_ROOT).to_string())
}

/// Where the search tools look when no `path` is given: the workspace.
const SEARCH_ROOT: &str = ".";

/// How a path is shown to the model: relative to the workspace when inside it.
fn display_path(ctx: &ToolContext, path: &Path) -> String {
    relative_to(path, &ctx.workspace)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// A tool may change an existing file only after the agent read it in this session and while
/// it is unchanged since: the model must not overwrite what it never saw. `verb` names the change.
fn ensure_fresh(ctx: &ToolContext, path: &Path, bytes: &[u8], verb: &str) -> Result<(), String> {
    let shown = display_path(ctx, path);
    match ctx.read_state.get(path) {
        None => Err(format!(
            "{shown} has not been read in this session; read it before {verb}"
        )),
        Some(stamp) if !stamp.matches(bytes) => Err(format!(
            "{shown} changed since it was last read; read it again before {verb}"
        )),
        Some(_) => Ok(()),
    }
}

/// Text files have no NUL byte in their first 8 KiB (the heuristic git and grep use).
fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// Cuts `line` to `max` characters, marking the cut.
fn clip_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [line truncated]", &line[..at]),
        None => line.to_string(),
    }
}

/// Files under `root` that version control would see: `.gitignore`, `.ignore` and global
/// excludes are honoured (also outside a git repository) and hidden entries are skipped.
fn visible_files(root: &Path) -> impl Iterator<Item = PathBuf> {
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry),
            Err(e) => {
                tracing::debug!(error = %e, "skipped an entry while walking");
                None
            }
        })
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
}

/// Compiles a file glob: without a `/` it matches file names at any depth (`*.rs`),
/// with one it matches the path relative to the search root (`src/**/*.rs`).
fn file_glob(pattern: &str) -> Result<FileGlob, String> {
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("bad glob `{pattern}`: {e}"))?
        .compile_matcher();
    Ok(FileGlob {
        matcher,
        by_name: !pattern.contains('/'),
    })
}

struct FileGlob {
    matcher: globset::GlobMatcher,
    by_name: bool,
}

impl FileGlob {
    fn matches(&self, root: &Path, file: &Path) -> bool {
        if self.by_name {
            file.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            file.strip_prefix(root)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        }
    }
}
