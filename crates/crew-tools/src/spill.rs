//! The result budget: an output larger than its tool's budget is written in full to
//! `<spill_dir>/<tool_use_id>.txt` and replaced by a preview and the file's path. `read` has
//! no budget, so a spill file can always be read back without spilling again.

use std::path::{Path, PathBuf};

use crate::tool::ToolOutput;

/// Bytes of the original output kept in the preview.
pub const PREVIEW_BYTES: usize = 2_000;

/// Where the output of `tool_use_id` is spilled; characters that could leave the directory
/// or upset a file system are replaced.
pub fn spill_path(spill_dir: &Path, tool_use_id: &str) -> PathBuf {
    let safe: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if safe.is_empty() {
        "unnamed".to_string()
    } else {
        safe
    };
    spill_dir.join(format!("{name}.txt"))
}

/// Applies `budget` to `output`; returns the output the model sees and the spill file, if any.
pub async fn apply_budget(
    output: ToolOutput,
    budget: Option<usize>,
    spill_dir: &Path,
    tool_use_id: &str,
) -> (ToolOutput, Option<PathBuf>) {
    let Some(budget) = budget else {
        return (output, None);
    };
    if output.content.len() <= budget {
        return (output, None);
    }
    let total = output.content.len();
    let preview =
        &output.content[..floor_char_boundary(&output.content, PREVIEW_BYTES.min(budget))];
    let path = spill_path(spill_dir, tool_use_id);
    let written = async {
        tokio::fs::create_dir_all(spill_dir).await?;
        tokio::fs::write(
            &path,
            crew_store::secrets::redact(&output.content).as_bytes(),
        )
        .await
    }
    .await;
    match written {
        Ok(()) => {
            let content = format!(
                "{preview}\n\n[output too large: {total} bytes; the first {} are shown above. Full output saved to {}; read it with the read tool (offset/limit) or search it with grep]",
                preview.len(),
                path.display()
            );
            (
                ToolOutput {
                    content,
                    is_error: output.is_error,
                },
                Some(path),
            )
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not spill a tool result");
            let content = format!(
                "{preview}\n\n[output too large: {total} bytes; truncated to {} bytes (saving the full output failed: {e})]",
                preview.len()
            );
            (
                ToolOutput {
                    content,
                    is_error: output.is_error,
                },
                None,
            )
        }
    }
}

/// The largest index `<= at` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_leave_the_spill_dir() {
        let dir = Path::new("/repo/.crew/tool-results");
        assert_eq!(spill_path(dir, "toolu_01"), dir.join("toolu_01.txt"));
        assert_eq!(
            spill_path(dir, "../../etc/passwd"),
            dir.join("______etc_passwd.txt")
        );
        assert_eq!(spill_path(dir, ""), dir.join("unnamed.txt"));
    }

    #[test]
    fn char_boundaries_are_respected() {
        let s = "aé"; // é is two bytes
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(floor_char_boundary(s, 9), 3);
    }

    #[tokio::test]
    async fn under_budget_or_exempt_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let out = ToolOutput::ok("x".repeat(100));
        assert_eq!(
            apply_budget(out.clone(), Some(100), dir.path(), "a").await,
            (out.clone(), None)
        );
        assert_eq!(
            apply_budget(out.clone(), None, dir.path(), "a").await,
            (out, None)
        );
    }
}
