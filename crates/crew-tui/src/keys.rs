//! The key grammar used by keymap files, one rule for every binding:
//!
//! `[mod-]*key`, where mod is `ctrl`, `alt` or `shift` and key is a single character (`a`, `A`,
//! `?`, `1`) or a name: `enter esc tab space backspace delete insert up down left right home end
//! pageup pagedown f1`..`f12`. `shift-tab` is back-tab; `A` and `shift-a` are the same key.
//! A sequence is chords separated by spaces: `"g g"`.

use std::fmt;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key press, normalised so the same key always compares equal however it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Chord {
    code: Code,
    ctrl: bool,
    alt: bool,
    shift: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Code {
    Char(char),
    Named(&'static str),
    F(u8),
}

const NAMED: &[&str] = &[
    "enter",
    "esc",
    "tab",
    "space",
    "backspace",
    "delete",
    "insert",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pagedown",
];

impl Chord {
    /// Parses one chord of the grammar above.
    pub(crate) fn parse(text: &str) -> Result<Chord, String> {
        let mut chord = Chord {
            code: Code::Named("esc"),
            ctrl: false,
            alt: false,
            shift: false,
        };
        let mut rest = text;
        // A lone "-" is the minus key, not a separator.
        while let Some((m, tail)) = rest.split_once('-').filter(|(_, t)| !t.is_empty()) {
            match m {
                "ctrl" => chord.ctrl = true,
                "alt" => chord.alt = true,
                "shift" => chord.shift = true,
                _ => break,
            }
            rest = tail;
        }
        let mut chars = rest.chars();
        chord.code = match (chars.next(), chars.next()) {
            (Some(c), None) => Code::Char(c),
            _ => {
                let lower = rest.to_ascii_lowercase();
                if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    if !(1..=12).contains(&n) {
                        return Err(format!("no key named {rest:?}"));
                    }
                    Code::F(n)
                } else if let Some(name) = NAMED.iter().find(|n| **n == lower) {
                    Code::Named(name)
                } else {
                    return Err(format!(
                        "no key named {rest:?} (in {text:?}); keys are a character or one of: {}, f1-f12",
                        NAMED.join(" ")
                    ));
                }
            }
        };
        Ok(chord.normalised())
    }

    /// The chord a terminal key event stands for.
    pub(crate) fn from_event(key: &KeyEvent) -> Chord {
        let m = key.modifiers;
        let mut chord = Chord {
            code: Code::Named("esc"),
            ctrl: m.contains(KeyModifiers::CONTROL),
            alt: m.contains(KeyModifiers::ALT),
            shift: m.contains(KeyModifiers::SHIFT),
        };
        chord.code = match key.code {
            KeyCode::Char(' ') => Code::Named("space"),
            KeyCode::Char(c) => Code::Char(c),
            KeyCode::BackTab => {
                chord.shift = true;
                Code::Named("tab")
            }
            KeyCode::F(n) => Code::F(n),
            KeyCode::Enter => Code::Named("enter"),
            KeyCode::Esc => Code::Named("esc"),
            KeyCode::Tab => Code::Named("tab"),
            KeyCode::Backspace => Code::Named("backspace"),
            KeyCode::Delete => Code::Named("delete"),
            KeyCode::Insert => Code::Named("insert"),
            KeyCode::Up => Code::Named("up"),
            KeyCode::Down => Code::Named("down"),
            KeyCode::Left => Code::Named("left"),
            KeyCode::Right => Code::Named("right"),
            KeyCode::Home => Code::Named("home"),
            KeyCode::End => Code::Named("end"),
            KeyCode::PageUp => Code::Named("pageup"),
            KeyCode::PageDown => Code::Named("pagedown"),
            _ => Code::Named("unknown"),
        };
        chord.normalised()
    }

    /// Letters carry shift in their case; `space` written as `" "` is `space`.
    fn normalised(mut self) -> Chord {
        if let Code::Char(c) = self.code {
            if c == ' ' {
                self.code = Code::Named("space");
            } else if c.is_alphabetic() {
                if self.shift {
                    self.code = Code::Char(c.to_uppercase().next().unwrap_or(c));
                }
                self.shift = false;
            } else {
                // Punctuation: the terminal already applied shift ("?" not "shift-/").
                self.shift = false;
            }
        }
        self
    }

    /// A key that edits text (characters, arrows, enter, backspace...): in a text box it goes to
    /// the box unless the box's own mode binds it.
    pub(crate) fn edits_text(&self) -> bool {
        let editing = matches!(
            self.code,
            Code::Char(_)
                | Code::Named(
                    "space"
                        | "enter"
                        | "backspace"
                        | "delete"
                        | "up"
                        | "down"
                        | "left"
                        | "right"
                        | "home"
                        | "end"
                        | "pageup"
                        | "pagedown"
                )
        );
        editing && !self.ctrl && !self.alt
    }
}

impl fmt::Display for Chord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("ctrl-")?;
        }
        if self.alt {
            f.write_str("alt-")?;
        }
        if self.shift {
            f.write_str("shift-")?;
        }
        match self.code {
            Code::Char(c) => write!(f, "{c}"),
            Code::Named(n) => f.write_str(n),
            Code::F(n) => write!(f, "f{n}"),
        }
    }
}

/// Parses a binding: one chord or a space-separated sequence.
pub fn parse_sequence(text: &str) -> Result<Vec<Chord>, String> {
    if text == " " {
        return Ok(vec![Chord::parse("space")?]);
    }
    let chords: Vec<Chord> = text
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(Chord::parse)
        .collect::<Result<_, _>>()?;
    if chords.is_empty() {
        return Err("an empty key".into());
    }
    Ok(chords)
}

pub(crate) fn sequence_text(chords: &[Chord]) -> String {
    chords
        .iter()
        .map(Chord::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_key_compare_equal() {
        assert_eq!(Chord::parse("A").unwrap(), Chord::parse("shift-a").unwrap());
        let backtab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(
            Chord::from_event(&backtab),
            Chord::parse("shift-tab").unwrap()
        );
        let ctrl_s = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(Chord::from_event(&ctrl_s), Chord::parse("ctrl-s").unwrap());
        let question = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::SHIFT);
        assert_eq!(Chord::from_event(&question), Chord::parse("?").unwrap());
        assert_eq!(Chord::parse("-").unwrap().to_string(), "-");
        assert_eq!(Chord::parse("ctrl--").unwrap().to_string(), "ctrl--");
    }

    #[test]
    fn sequences_and_bad_names() {
        assert_eq!(sequence_text(&parse_sequence("g  g").unwrap()), "g g");
        assert!(Chord::parse("ctrl-bogus").unwrap_err().contains("bogus"));
        assert!(Chord::parse("f13").is_err());
    }
}
