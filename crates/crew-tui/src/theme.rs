//! Themes: semantic style keys in TOML with `inherits` (the helix model). A bad file gives
//! warnings naming file and line, and whatever it inherits (at worst the built-in default).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use toml::Spanned;

use crate::presets::{self, Preset, Source};
use crate::warning::Warning;

pub const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../../themes/default.toml")),
    ("light", include_str!("../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
];

/// Every style key a theme may set. A lookup of `a.b` falls back to `a`, then to `text`.
pub(crate) const KEYS: &[&str] = &[
    "text",
    "dim",
    "border",
    "border.focus",
    "title",
    "title.focus",
    "header",
    "selection",
    "status",
    "status.warning",
    "status.error",
    "tab",
    "tab.active",
    "badge",
    "badge.work",
    "badge.waiting",
    "badge.idle",
    "badge.shutdown",
    "badge.dead",
    "badge.unknown",
    "task.pending",
    "task.in_progress",
    "task.review",
    "task.completed",
    "task.failed",
    "task.claimable",
    "task.blocked",
    "task.owner",
    "msg.message",
    "msg.request",
    "msg.response",
    "msg.status",
    "msg.unknown",
    "msg.broken",
    "msg.pending",
    "approval.tool",
    "call",
    "call.detail",
    "approval.command",
    "approval.key",
    "diff.add",
    "diff.del",
    "diff.add.word",
    "diff.del.word",
    "diff.hunk",
    "diff.file",
    "popup",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    styles: HashMap<String, Style>,
    /// The syntect theme used for code in diffs and commands.
    pub syntax: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThemeFile {
    inherits: Option<String>,
    syntax: Option<String>,
    #[serde(default)]
    styles: BTreeMap<String, Spanned<toml::Value>>,
}

impl Theme {
    /// Theme `name` from the user's config folder or the built-ins, with its warnings.
    pub(crate) fn load(name: &str) -> (Theme, Vec<Warning>) {
        Self::load_from(name, presets::config_dir().as_ref())
    }

    pub fn load_from(name: &str, config_dir: Option<&PathBuf>) -> (Theme, Vec<Warning>) {
        presets::load(name, config_dir)
    }

    /// The built-in dark theme.
    pub fn builtin_default() -> Theme {
        presets::builtin_default()
    }

    pub fn style(&self, key: &str) -> Style {
        let mut key = key;
        loop {
            if let Some(style) = self.styles.get(key) {
                return *style;
            }
            match key.rfind('.') {
                Some(dot) => key = &key[..dot],
                None => return self.styles.get("text").copied().unwrap_or_default(),
            }
        }
    }
}

impl Preset for Theme {
    const KIND: &'static str = "themes";
    const WORD: &'static str = "theme";
    const BUILTIN: &'static [(&'static str, &'static str)] = BUILTIN;
    type File = ThemeFile;

    fn inherits(file: &ThemeFile) -> Option<&str> {
        file.inherits.as_deref()
    }

    fn empty() -> Theme {
        Theme {
            name: "default".into(),
            styles: HashMap::new(),
            syntax: "base16-ocean.dark".into(),
        }
    }

    fn set_name(&mut self, name: &str) {
        self.name = name.to_string();
    }

    fn apply(&mut self, file: ThemeFile, source: &Source, warnings: &mut Vec<Warning>) {
        if let Some(syntax) = file.syntax {
            self.syntax = syntax;
        }
        for (key, value) in &file.styles {
            let offset = value.span().start;
            if !KEYS.contains(&key.as_str()) {
                warnings.push(Warning::at(
                    &source.file,
                    &source.text,
                    offset,
                    format!("unknown style key {key:?}"),
                ));
                continue;
            }
            match parse_style(value.get_ref()) {
                Ok(style) => {
                    self.styles.insert(key.clone(), style);
                }
                Err(message) => warnings.push(Warning::at(
                    &source.file,
                    &source.text,
                    offset,
                    format!("{key}: {message}"),
                )),
            }
        }
    }
}

/// `"red"` (a foreground) or `{ fg = "...", bg = "...", modifiers = ["bold", ...] }`.
fn parse_style(value: &toml::Value) -> Result<Style, String> {
    match value {
        toml::Value::String(fg) => Ok(Style::default().fg(parse_color(fg)?)),
        toml::Value::Table(table) => {
            let mut style = Style::default();
            for (k, v) in table {
                match (k.as_str(), v) {
                    ("fg", toml::Value::String(c)) => style = style.fg(parse_color(c)?),
                    ("bg", toml::Value::String(c)) => style = style.bg(parse_color(c)?),
                    ("modifiers", toml::Value::Array(mods)) => {
                        for m in mods {
                            let m = m.as_str().ok_or("modifiers are strings")?;
                            style = style.add_modifier(parse_modifier(m)?);
                        }
                    }
                    (other, _) => {
                        return Err(format!(
                            "unexpected {other:?}; a style has fg, bg (colour strings) and modifiers (a list)"
                        ));
                    }
                }
            }
            Ok(style)
        }
        _ => Err("a style is a colour string or a table { fg, bg, modifiers }".into()),
    }
}

fn parse_color(text: &str) -> Result<Color, String> {
    Color::from_str(text).map_err(|_| {
        format!("unknown colour {text:?} (use a name like \"red\", \"#rrggbb\" or 0-255)")
    })
}

fn parse_modifier(text: &str) -> Result<Modifier, String> {
    Ok(match text {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        "crossed_out" => Modifier::CROSSED_OUT,
        "slow_blink" => Modifier::SLOW_BLINK,
        other => return Err(format!("unknown modifier {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_fall_back_to_the_parent_key_then_text() {
        let theme = Theme::builtin_default();
        assert_eq!(theme.style("badge.nonsense"), theme.style("badge"));
        assert_eq!(theme.style("zzz"), theme.style("text"));
    }
}
