//! Keymaps: one TOML table per mode mapping keys (see `keys` for the grammar) to actions,
//! optional `inherits`, sequences looked up like a trie. Conflicts are reported at load.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::action::Action;
use crate::keys::{Chord, parse_sequence, sequence_text};
use crate::presets::{self, Preset, Source};
use crate::warning::Warning;

pub const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../../keymaps/default.toml")),
    ("vim", include_str!("../../../keymaps/vim.toml")),
];

/// Where keys are looked up: the focused pane or the open dialog, then `global`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    Global,
    Lead,
    Teammates,
    Tasks,
    Mailboxes,
    Approvals,
    Diff,
    Prompt,
    Confirm,
    Help,
    Memory,
    Queue,
}

pub(crate) const MODES: &[(&str, Mode)] = &[
    ("global", Mode::Global),
    ("lead", Mode::Lead),
    ("teammates", Mode::Teammates),
    ("tasks", Mode::Tasks),
    ("mailboxes", Mode::Mailboxes),
    ("approvals", Mode::Approvals),
    ("diff", Mode::Diff),
    ("prompt", Mode::Prompt),
    ("confirm", Mode::Confirm),
    ("help", Mode::Help),
    ("memory", Mode::Memory),
    ("queue", Mode::Queue),
];

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        MODES
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// Modes with a text box: printable keys type text instead of running global bindings.
    pub(crate) fn types_text(self) -> bool {
        matches!(self, Mode::Lead | Mode::Prompt)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub keys: Vec<Chord>,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    pub name: String,
    modes: BTreeMap<Mode, Vec<Binding>>,
}

/// What a key sequence typed so far means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Action(Action),
    /// The start of a longer binding: wait for the next key.
    Prefix,
    None,
}

type Table = Option<BTreeMap<Spanned<String>, Spanned<String>>>;

/// One field per mode (not a flattened map: spans do not survive flattening, and an unknown
/// mode is then a parse error with its line).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeymapFile {
    inherits: Option<String>,
    global: Table,
    lead: Table,
    teammates: Table,
    tasks: Table,
    mailboxes: Table,
    approvals: Table,
    diff: Table,
    prompt: Table,
    confirm: Table,
    help: Table,
    memory: Table,
    queue: Table,
}

impl KeymapFile {
    fn tables(&self) -> [(Mode, &Table); 12] {
        [
            (Mode::Global, &self.global),
            (Mode::Lead, &self.lead),
            (Mode::Teammates, &self.teammates),
            (Mode::Tasks, &self.tasks),
            (Mode::Mailboxes, &self.mailboxes),
            (Mode::Approvals, &self.approvals),
            (Mode::Diff, &self.diff),
            (Mode::Prompt, &self.prompt),
            (Mode::Confirm, &self.confirm),
            (Mode::Help, &self.help),
            (Mode::Memory, &self.memory),
            (Mode::Queue, &self.queue),
        ]
    }
}

impl Keymap {
    pub(crate) fn load(name: &str) -> (Keymap, Vec<Warning>) {
        Self::load_from(name, presets::config_dir().as_ref())
    }

    pub fn load_from(name: &str, config_dir: Option<&PathBuf>) -> (Keymap, Vec<Warning>) {
        let (keymap, mut warnings): (Keymap, _) = presets::load(name, config_dir);
        warnings.extend(keymap.conflicts());
        (keymap, warnings)
    }

    /// The bindings of one mode, in key order.
    pub fn bindings(&self, mode: Mode) -> &[Binding] {
        self.modes.get(&mode).map_or(&[], Vec::as_slice)
    }

    /// Looks `keys` up in `mode`, then in `global`. In a text mode, keys that edit text only
    /// match the mode's own table.
    pub fn lookup(&self, mode: Mode, keys: &[Chord]) -> Lookup {
        let own = lookup_in(self.bindings(mode), keys);
        if own != Lookup::None || mode == Mode::Global {
            return own;
        }
        if mode.types_text() && keys.first().is_some_and(Chord::edits_text) {
            return Lookup::None;
        }
        // Help, memories and dialogs are modal: only their own keys and quit-like globals apply.
        if matches!(
            mode,
            Mode::Prompt | Mode::Confirm | Mode::Help | Mode::Memory
        ) {
            return Lookup::None;
        }
        lookup_in(self.bindings(Mode::Global), keys)
    }

    /// The first key bound to `action` in `mode` (or global), for hints like "a approve"; a
    /// global key the mode binds to something else (ctrl-c interrupts in a pane) is passed over.
    pub(crate) fn key_for(&self, mode: Mode, action: Action) -> Option<String> {
        let own = self.bindings(mode);
        [mode, Mode::Global]
            .iter()
            .flat_map(|m| self.bindings(*m))
            .filter(|b| b.action == action)
            .find(|b| !own.iter().any(|o| o.keys == b.keys && o.action != action))
            .map(|b| sequence_text(&b.keys))
    }

    /// A binding that is a prefix of another one in the same lookup path can never both work.
    fn conflicts(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        let file = format!("keymap {:?}", self.name);
        for (mode, bindings) in &self.modes {
            let mut against: Vec<&Binding> = bindings.iter().collect();
            if !matches!(
                mode,
                Mode::Global | Mode::Prompt | Mode::Confirm | Mode::Help | Mode::Memory
            ) {
                against.extend(self.bindings(Mode::Global));
            }
            for (i, a) in bindings.iter().enumerate() {
                for (j, b) in against.iter().enumerate() {
                    let same_table = j < bindings.len();
                    if (same_table && j <= i) || a.keys == b.keys && !same_table {
                        continue;
                    }
                    let (short, long) = if a.keys.len() <= b.keys.len() {
                        (a, *b)
                    } else {
                        (*b, a)
                    };
                    if long.keys.starts_with(&short.keys) && short.action != long.action {
                        out.push(Warning::new(
                            &file,
                            0,
                            format!(
                                "[{}] {:?} ({}) hides {:?} ({})",
                                mode.name(),
                                sequence_text(&short.keys),
                                short.action.name(),
                                sequence_text(&long.keys),
                                long.action.name()
                            ),
                        ));
                    }
                }
            }
        }
        out
    }
}

fn lookup_in(bindings: &[Binding], keys: &[Chord]) -> Lookup {
    let mut prefix = false;
    for b in bindings {
        if b.keys == keys {
            return Lookup::Action(b.action);
        }
        if b.keys.starts_with(keys) {
            prefix = true;
        }
    }
    if prefix { Lookup::Prefix } else { Lookup::None }
}

impl Preset for Keymap {
    const KIND: &'static str = "keymaps";
    const WORD: &'static str = "keymap";
    const BUILTIN: &'static [(&'static str, &'static str)] = BUILTIN;
    type File = KeymapFile;

    fn inherits(file: &KeymapFile) -> Option<&str> {
        file.inherits.as_deref()
    }

    fn empty() -> Keymap {
        Keymap {
            name: "default".into(),
            modes: BTreeMap::new(),
        }
    }

    fn set_name(&mut self, name: &str) {
        self.name = name.to_string();
    }

    fn apply(&mut self, file: KeymapFile, source: &Source, warnings: &mut Vec<Warning>) {
        apply_tables(self, &file, source, warnings);
    }
}

fn apply_tables(
    keymap: &mut Keymap,
    file: &KeymapFile,
    source: &Source,
    warnings: &mut Vec<Warning>,
) {
    let at =
        |offset: usize, message: String| Warning::at(&source.file, &source.text, offset, message);
    for (mode, table) in file.tables() {
        let Some(table) = table else { continue };
        let mode_name = mode.name();
        let bindings = keymap.modes.entry(mode).or_default();
        let mut seen_here: Vec<Vec<Chord>> = Vec::new();
        for (key, action) in table {
            let keys = match parse_sequence(key.get_ref()) {
                Ok(keys) => keys,
                Err(e) => {
                    warnings.push(at(key.span().start, e));
                    continue;
                }
            };
            if seen_here.contains(&keys) {
                warnings.push(at(
                    key.span().start,
                    format!(
                        "[{mode_name}] {:?} is bound twice (written two ways)",
                        sequence_text(&keys)
                    ),
                ));
                continue;
            }
            seen_here.push(keys.clone());
            // "none" unbinds an inherited key.
            if action.get_ref() == "none" {
                bindings.retain(|b| b.keys != keys);
                continue;
            }
            let Some(act) = Action::from_name(action.get_ref()) else {
                warnings.push(at(
                    action.span().start,
                    format!("unknown action {:?}", action.get_ref()),
                ));
                continue;
            };
            if let Some(prev) = bindings.iter_mut().find(|b| b.keys == keys) {
                prev.action = act;
            } else {
                bindings.push(Binding { keys, action: act });
            }
        }
        bindings.sort_by(|a, b| a.keys.cmp(&b.keys));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_without_warnings() {
        for (name, _) in BUILTIN {
            let (map, warnings) = Keymap::load_from(name, None);
            assert!(warnings.is_empty(), "{name}: {warnings:?}");
            assert!(!map.bindings(Mode::Global).is_empty());
        }
    }
}
