//! Built-in TOML presets overridden by user files in the config folder (the yazi model):
//! `$XDG_CONFIG_HOME/crew/<kind>/<name>.toml`, else `~/.config/crew/<kind>/<name>.toml`.

use std::path::PathBuf;

use serde::de::DeserializeOwned;

use crate::warning::{Warning, toml_error};

/// Where a preset's text came from, for warnings.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub file: String,
    pub text: String,
    pub builtin: bool,
}

/// Finds preset `name` of `kind` ("themes" or "keymaps"): the user's file first (unless
/// `builtin_only`, used when a user file inherits the built-in of its own name), then the built-in.
pub(crate) fn find(
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
pub(crate) fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("crew"))
}

/// How deep `inherits` chains may go before we call it a loop.
pub(crate) const MAX_INHERIT_DEPTH: usize = 8;

/// A TOML preset with `inherits` (themes, keymaps): how one file is applied on top of its parent.
pub(crate) trait Preset: Sized {
    /// The folder name and the word used in messages ("themes" / "theme").
    const KIND: &'static str;
    const WORD: &'static str;
    const BUILTIN: &'static [(&'static str, &'static str)];
    type File: DeserializeOwned;

    fn inherits(file: &Self::File) -> Option<&str>;
    /// What a file without `inherits` starts from.
    fn empty() -> Self;
    fn set_name(&mut self, name: &str);
    /// Applies the file's entries, warning about each bad one.
    fn apply(&mut self, file: Self::File, source: &Source, warnings: &mut Vec<Warning>);
}

/// Preset `name` (user file first, then built-in), with every warning met on the way.
pub(crate) fn load<P: Preset>(name: &str, config_dir: Option<&PathBuf>) -> (P, Vec<Warning>) {
    let mut warnings = Vec::new();
    let mut preset = resolve::<P>(name, config_dir, false, 0, &mut warnings).unwrap_or_else(|| {
        warnings.push(Warning::new(
            format!("{} {name:?}", P::WORD),
            0,
            format!("no such {}; using the default", P::WORD),
        ));
        builtin_default()
    });
    preset.set_name(name);
    (preset, warnings)
}

/// The built-in `default` preset (a test checks every shipped preset parses cleanly).
pub(crate) fn builtin_default<P: Preset>() -> P {
    let mut ignored = Vec::new();
    resolve("default", None, true, 0, &mut ignored).unwrap_or_else(P::empty)
}

fn resolve<P: Preset>(
    name: &str,
    config_dir: Option<&PathBuf>,
    builtin_only: bool,
    depth: usize,
    warnings: &mut Vec<Warning>,
) -> Option<P> {
    let source = find(P::KIND, name, P::BUILTIN, config_dir, builtin_only)?;
    let file: P::File = match toml::from_str(&source.text) {
        Ok(file) => file,
        Err(e) => {
            warnings.push(toml_error(&source.file, &source.text, &e));
            // A broken built-in default has nothing under it to fall back to.
            return (name != "default" || !source.builtin).then(builtin_default);
        }
    };
    let mut preset = match P::inherits(&file) {
        Some(parent) if depth >= MAX_INHERIT_DEPTH => {
            warnings.push(Warning::new(
                &source.file,
                0,
                format!("inherits {parent:?} too deeply (a loop?)"),
            ));
            builtin_default()
        }
        Some(parent) => {
            // A user file inheriting its own name means the built-in of that name.
            let only_builtin = parent == name && !source.builtin;
            resolve(parent, config_dir, only_builtin, depth + 1, warnings).unwrap_or_else(|| {
                warnings.push(Warning::new(
                    &source.file,
                    0,
                    format!("inherits unknown {} {parent:?}", P::WORD),
                ));
                builtin_default()
            })
        }
        None => P::empty(),
    };
    preset.set_name(name);
    preset.apply(file, &source, warnings);
    Some(preset)
}
