//! Built-in TOML presets overridden by user files in the config folder (the yazi model):
//! `$XDG_CONFIG_HOME/crew/<kind>/<name>.toml`, else `~/.config/crew/<kind>/<name>.toml`.

use std::path::PathBuf;

/// Where a preset's text came from, for warnings.
#[derive(Debug, Clone)]
pub struct Source {
    pub file: String,
    pub text: String,
    pub builtin: bool,
}

/// Finds preset `name` of `kind` ("themes" or "keymaps"): the user's file first (unless
/// `builtin_only`, used when a user file inherits the built-in of its own name), then the built-in.
pub fn find(
    kind: &str,
    name: &str,
    builtins: &[(&str, &str)],
    config_dir: Option<&PathBuf>,
    builtin_only: bool,
) -> Option<Source> {
    if !builtin_only && let Some(dir) = config_dir {
        let path = dir.join(kind).join(format!("{name}.toml"));
        if let Ok(text) = std::fs::read_to_string(&path) {
            return Some(Source {
                file: path.display().to_string(),
                text,
                builtin: false,
            });
        }
    }
    builtins
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| Source {
            file: format!("{kind}/{n}.toml (built in)"),
            text: (*text).to_string(),
            builtin: true,
        })
}

/// crew's folder in the user's config directory, if one can be named.
pub fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("crew"))
}

/// How deep `inherits` chains may go before we call it a loop.
pub const MAX_INHERIT_DEPTH: usize = 8;
