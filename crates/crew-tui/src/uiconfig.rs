//! crew.toml as the screen needs it: the team (via `config`), an optional `[ui]` table that only
//! the screen reads, and adding an allow rule with every comment kept (toml_edit).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml_edit::{Array, DocumentMut, Item, Table, value};

use crew_config::{ConfigError, FILE_NAME, TeamConfig};
use crew_store::atomic::write_atomic;

/// `[ui]` in crew.toml. Absent means defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiConfig {
    /// Run (through `sh -c`) when a new request needs a person; the request is in
    /// `CREW_REQUEST_ID`, `CREW_REQUEST_FROM`, `CREW_REQUEST_TYPE`, `CREW_REQUEST_TEXT`.
    pub notify_command: Option<String>,
    /// Ring the terminal bell on a new request or review (default true).
    pub bell: Option<bool>,
    /// Send a desktop notification (OSC 9 / OSC 777) on a new request or review (default true).
    pub desktop_notifications: Option<bool>,
}

#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: {message}")]
    Edit { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Reads `root/crew.toml`: the team, and its `[ui]` table (absent means defaults).
pub fn load(root: &Path) -> Result<(TeamConfig, UiConfig), UiError> {
    let path = root.join(FILE_NAME);
    let team = TeamConfig::load(&path)?;
    let ui = ui_of(&team, path)?;
    Ok((team, ui))
}

/// The team's `[ui]` table, read from crew.toml at `path` (absent means defaults).
pub(crate) fn ui_of(team: &TeamConfig, path: PathBuf) -> Result<UiConfig, UiError> {
    Ok(match &team.ui {
        Some(table) => toml::Value::Table(table.clone())
            .try_into::<UiConfig>()
            .map_err(|e| UiError::Edit {
                path,
                message: format!("[ui]: {}", e.message().trim()),
            })?,
        None => UiConfig::default(),
    })
}

/// Adds `rule` to `[permissions] allow` in `root/crew.toml`, keeping comments and layout.
/// Returns false when the rule was already there.
pub(crate) fn add_allow_rule(root: &Path, rule: &str) -> Result<bool, UiError> {
    let path = root.join(FILE_NAME);
    let edit_error = |message: String| UiError::Edit {
        path: path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&path).map_err(|source| UiError::Io {
        path: path.clone(),
        source,
    })?;
    let mut doc: DocumentMut = text.parse().map_err(|e| edit_error(format!("{e}")))?;
    let permissions = doc
        .entry("permissions")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| edit_error("[permissions] is not a table".into()))?;
    let allow = permissions
        .entry("allow")
        .or_insert(value(Array::new()))
        .as_array_mut()
        .ok_or_else(|| edit_error("[permissions] allow is not a list".into()))?;
    if allow.iter().any(|v| v.as_str() == Some(rule)) {
        return Ok(false);
    }
    allow.push(rule);
    write_atomic(&path, doc.to_string().as_bytes()).map_err(|source| UiError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crew_config::init_template;

    #[test]
    fn a_ui_table_is_read_and_does_not_upset_the_team_parser() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "{}\n[ui]\n# run me\nnotify_command = \"true\"\n",
            init_template("t", "main", &Default::default())
        );
        std::fs::write(dir.path().join(FILE_NAME), text).unwrap();
        let (team, ui) = load(dir.path()).unwrap();
        assert_eq!(team.lead_name(), "lead");
        assert_eq!(ui.notify_command.as_deref(), Some("true"));
    }

    #[test]
    fn a_rule_is_added_once_and_comments_survive() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            init_template("t", "main", &Default::default()),
        )
        .unwrap();
        assert!(add_allow_rule(dir.path(), "bash(cargo test)").unwrap());
        assert!(!add_allow_rule(dir.path(), "bash(cargo test)").unwrap());
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(text.contains("# Deny beats everything"));
        let (team, _) = load(dir.path()).unwrap();
        assert!(
            team.permissions
                .allow
                .contains(&"bash(cargo test)".to_string())
        );
    }
}
