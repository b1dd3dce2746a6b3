//! What the coding-agent CLI teammates (Claude Code, Codex) share around their process: the
//! credentials only the CLI gets, and the id of the conversation a restarted worker resumes.

use std::path::Path;

/// The credentials crew took out of its environment (see `secret::seal_process`) whose names
/// start with one of `prefixes` (the CLI's own: `ANTHROPIC_`, `OPENAI_`, …). Only the CLI gets
/// them, not the commands of crew's own tools; their values are redacted from transcripts like
/// crew's own keys.
pub fn credentials(prefixes: &[&str]) -> Vec<(String, String)> {
    crate::model::secret::sealed_vars()
        .iter()
        .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
        .inspect(|(_, value)| crate::store::secrets::register(value))
        .cloned()
        .collect()
}

/// The conversation to resume: the last id the CLI reported (kept in `path`), if it looks like one.
pub fn saved_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let id = text.trim();
    let plausible = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    plausible.then(|| id.to_string())
}

/// Keeps the CLI's conversation id (a failure only costs the resume after a restart).
pub fn save_id(path: &Path, id: &str) {
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::store::atomic::write_atomic(path, id.as_bytes()));
    if let Err(e) = saved {
        tracing::warn!("conversation id not kept in {}: {e}", path.display());
    }
}
